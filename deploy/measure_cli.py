"""``neuroedge measure``: the command's arguments, for :mod:`deploy.measure` (run a model
here beside its price) and :mod:`deploy.calibrate` (``--calibrate``)."""
from __future__ import annotations

from deploy.calibrate import cmd_calibrate
from deploy.measure import format_measure, run_measure
from sim.errors import ModelError


def add_measure_parser(subparsers):
    """Add the ``measure`` command to ``subparsers``."""
    from deploy.cli_args import INPUT_DTYPES, parse_nonnegative, parse_positive, parse_seed
    p = subparsers.add_parser("measure", help="run your model for real here and print "
                              "predicted and measured latency/energy side by side")
    p.add_argument("model", metavar="FILE.py:factory", nargs="?",
                   help="a Python file and the function/class in it that builds the model "
                        "(as for 'neuroedge estimate'); not with --calibrate")
    p.add_argument("--profile", required=True, help="profile name or TOML path to price on "
                   "(with --calibrate: the profile the written one starts from)")
    p.add_argument("--input-shape", metavar="N,C,H,W", action="append",
                   help="shape of one inference batch, batch first; once per input of a "
                        "model that takes several, in forward's order")
    p.add_argument("--input-dtype", choices=INPUT_DTYPES, action="append",
                   help="float32 (default) or int64, token ids for a language model, drawn "
                        "uniformly below its input embedding's vocabulary; once for every "
                        "input, or once per --input-shape")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where to run (auto: cuda when present, else cpu)")
    p.add_argument("--warmup", type=parse_nonnegative, default=None,
                   help="untimed calls before timing (default 3)")
    p.add_argument("--repeats", type=parse_positive, default=20,
                   help="timed calls; the median and the spread are shown (default 20)")
    p.add_argument("--seed", type=parse_seed, default=None,
                   help="the module's initial weights and the random input (default 0)")
    p.add_argument("--calibrate", action="store_true",
                   help="fit dispatch overhead, GEMM throughput curve and idle power here "
                        "and write a profile of your own to --out")
    p.add_argument("--out", metavar="PATH.toml", help="--calibrate: where to write the profile")
    p.add_argument("--force", action="store_true",
                   help="--calibrate: replace --out even if this command did not write it")
    p.set_defaults(func=cmd_measure)
    return p


def cmd_measure(args) -> int:
    import torch

    from deploy.estimate_cli import input_shapes, load_model
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelError("--device cuda: no CUDA device here; use --device cpu")
    if args.calibrate:
        if args.model:
            raise ModelError(f"--calibrate runs microbenchmarks, not {args.model}: drop the "
                             "model, or drop --calibrate to measure it")
        ignored = [flag for flag, value in (("--input-shape", args.input_shape),
                                            ("--input-dtype", args.input_dtype),
                                            ("--warmup", args.warmup), ("--seed", args.seed))
                   if value is not None]
        if ignored:
            raise ModelError(f"{', '.join(ignored)}: not used by --calibrate (its "
                             "microbenchmarks have fixed inputs); drop them")
        return cmd_calibrate(args, device)
    given = [flag for flag, value in (("--out", args.out), ("--force", args.force)) if value]
    if given:
        raise ModelError(f"{', '.join(given)}: only for --calibrate (measuring a model writes "
                         "no file: redirect what it prints to keep it); drop them")
    if not args.model or not args.input_shape:
        raise ModelError("measure: give FILE.py:factory and --input-shape N,C,H,W (or "
                         "--calibrate --out PATH.toml)")
    shapes, dtypes = input_shapes(args.input_shape, args.input_dtype)
    seed = 0 if args.seed is None else args.seed
    warmup = 3 if args.warmup is None else args.warmup
    model = load_model(args.model, seed=seed)
    from deploy.estimate import drawn_examples
    example = drawn_examples(model, shapes, dtypes, seed)[0]
    r = run_measure(model, example, args.profile, device=device, warmup=warmup,
                    repeats=args.repeats, seed=seed)
    print(format_measure(r))
    return 0
