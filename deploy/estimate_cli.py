"""``neuroedge estimate``: a model of your own (a Python file's factory, or a ``.nir`` file)
priced on several profiles in one energy table.

``neuroedge estimate FILE.py:factory --input-shape 1,1,28,28 --profiles jetson-orin,cortex-m7``
imports FILE.py by path, calls ``factory`` (a function or class, with no arguments; an
``nn.Module`` instance attribute is taken as it is) and hands the module to
:func:`deploy.estimate.estimate` (public as ``neuroedge.estimate``); ``neuroedge estimate
net.nir --stimulus poisson:rate=50 --steps 1000 --profiles loihi,loihi2`` hands the file to
the same function, which reads it through :mod:`deploy.nir_estimate`. The numbers printed
(and written by ``--json``) are the API's: ``Estimate.rows()`` unchanged.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
from pathlib import Path

from deploy.cli_args import (
    INPUT_DTYPES,
    SEED_MAX,
    add_width,
    parse_positive,
    parse_positive_float,
    parse_seed,
)
from deploy.cli_output import STDOUT, finite
from deploy.estimate_text import table
from deploy.text_fit import output_width
from hw_profiles.errors import NeuroedgeError
from sim.errors import ModelError


def add_estimate_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``estimate`` command to ``subparsers`` (``deploy.cli.build_parser``)."""
    p = subparsers.add_parser(
        "estimate", help="price your own torch model (FILE.py:factory) or NIR file on "
                         "several profiles in one energy table",
        description="Count a model of your own once and price it on every profile asked: "
                    "GPUs, CPUs and microcontrollers for a torch module; neuromorphic chips "
                    "for a NIR file or a module with snnTorch neurons.")
    p.add_argument("model", metavar="FILE.py:factory | FILE.nir",
                   help="a Python file and the name in it that builds the model (a function "
                        "or class called with no arguments, or an nn.Module instance), or a "
                        ".nir file")
    p.add_argument("--profiles", required=True,
                   help="comma-separated profile names or TOML paths, e.g. "
                        "jetson-orin,cortex-m7,a100; profiles a model cannot run on are "
                        "listed below the table with the reason")
    p.add_argument("--input-shape", metavar="N,C,H,W", action="append",
                   help="FILE.py models: shape of one inference batch, batch first, e.g. "
                        "1,1,28,28 (filled with standard normal values drawn with --seed); "
                        "once per input of a model that takes several, in forward's order")
    p.add_argument("--input-dtype", choices=INPUT_DTYPES, action="append",
                   help="FILE.py models: float32 (default) or int64, token ids for a language "
                        "model, drawn uniformly below its input embedding's vocabulary; once "
                        "for every input, or once per --input-shape")
    p.add_argument("--batch", type=parse_positive, metavar="N",
                   help="samples per inference: replaces the first dimension of "
                        "--input-shape (default: that dimension)")
    p.add_argument("--train", action="store_true",
                   help="also count one training step (SGD, lr 0.01): cross-entropy on random "
                        "labels when the output is (batch, classes), else MSE against random "
                        "targets; the output says which")
    p.add_argument("--stimulus", metavar="SPEC",
                   help="NIR files and spiking modules: the input spikes, e.g. poisson:rate=50, "
                        "a .npy/.npz spike array of shape (steps, inputs), or dataset:NAME")
    p.add_argument("--steps", type=parse_positive, metavar="T",
                   help="NIR files and spiking modules: time steps to run")
    p.add_argument("--input-node", metavar="NAME",
                   help="NIR files with several Input nodes: the one the stimulus drives "
                        "(the others stay silent)")
    p.add_argument("--dt", type=parse_positive_float, metavar="SECONDS",
                   help="NIR files: the time step, when the graph's metadata does not give it")
    p.add_argument("--reset", choices=("value", "subtract", "snntorch"),
                   help="NIR files: the reset rule when the file does not state it (value: "
                        "v <- v_reset, NIR's; subtract: v <- v - threshold; snntorch: "
                        "snnTorch's subtract after the decay); without it a warning names "
                        "the rule assumed")
    p.add_argument("--seed", type=parse_seed, default=0,
                   help=f"0..{SEED_MAX} (default 0): the module's initial weights, the "
                        "example input, the random targets and stimulus")
    p.add_argument("--dtype", choices=("fp32", "int8"), default="fp32",
                   help="FILE.py models: the precision priced (default fp32); int8: "
                        "per-channel int8 weights, per-tensor int8 activations, int32 "
                        "accumulators (the notes state it)")
    p.add_argument("--stack", metavar="NAME | PROFILE=NAME,...",
                   help="FILE.py models: the software stack to price for (gpu/cpu: eager, "
                        "graph, fused; microcontrollers: peak or a kernel library of the "
                        "profile, e.g. xcube-ai-7.3; 'neuroedge profiles show P' lists them): "
                        "one name for every profile, or PROFILE=NAME pairs; default: each "
                        "profile's default stack (the error line of each profile says which)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a model in which any op ran uncounted (without it the table's "
                        "first line names them and marks every figure a lower bound)")
    p.add_argument("--all", action="store_true",
                   help="list every layer row (default: the first 30)")
    p.add_argument("--depth", type=parse_positive, metavar="N", default=None,
                   help="the per-layer table's module depth, as torchinfo's (default 3)")
    add_width(p)
    p.add_argument("--json", metavar="PATH|-",
                   help="write the table, skipped profiles and notes as JSON to PATH, or to "
                        "stdout with '-' (then nothing else is printed)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --json file")
    p.add_argument("--quiet", action="store_true",
                   help="print nothing but errors (and the JSON of '--json -')")
    p.set_defaults(func=cmd_estimate)
    return p


def input_shapes(shape_texts: list[str], dtypes: list[str] | None, batch: int | None = None
                 ) -> tuple[list[tuple[int, ...]], list[str]]:
    """The inputs ``--input-shape`` (given once per input) and ``--input-dtype`` (once for
    all, once per shape, or not at: float32) ask for, as (shapes, dtypes) in forward's
    order; ``batch`` replaces every shape's first dimension."""
    shapes = [parse_shape(text) for text in shape_texts]
    if batch is not None:
        shapes = [(batch,) + shape[1:] for shape in shapes]
    dtypes = list(dtypes or ["float32"])
    if len(dtypes) == 1:
        dtypes = dtypes * len(shapes)
    if len(dtypes) != len(shapes):
        raise ModelError(f"--input-dtype is given {len(dtypes)} times for {len(shapes)} "
                         "--input-shape; give it once (every input) or once per --input-shape, "
                         "in the same order")
    return shapes, dtypes


def parse_shape(text: str, option: str = "--input-shape") -> tuple[int, ...]:
    """``"1,1,28,28"`` -> ``(1, 1, 28, 28)``; every dimension an integer >= 1."""
    parts = [t.strip() for t in text.replace("x", ",").split(",")]
    try:
        shape = tuple(int(t) for t in parts)
    except ValueError:
        shape = ()
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"{option} {text!r}: expected comma-separated integers >= 1, batch "
                         "first, e.g. 1,1,28,28")
    return shape


def load_model(spec: str, seed: int = 0):
    """The object ``FILE.py:name`` names: ``name`` called with no arguments when it is a
    function or class, taken as it is when it is an ``nn.Module``.

    The torch seed is set before the file is imported and again before the call, so the
    initial weights depend on ``seed`` alone.
    """
    import torch
    file, sep, attr = spec.rpartition(":")
    if not sep or not file or not attr:
        raise ModelError(f"model {spec!r}: expected FILE.py:NAME (a function or class in the "
                         "file that builds the model, e.g. net.py:make_net) or a .nir file")
    path = Path(file)
    if path.suffix != ".py":
        raise ModelError(f"model {spec!r}: {file!r} is not a .py file; give FILE.py:NAME")
    if not path.is_file():
        from hw_profiles.errors import not_a_file
        raise ModelError(f"model {spec!r}: {file!r} {not_a_file(path)}; give the path of a "
                         "Python file")
    # unique per file: two net.py in different directories are two modules
    name = f"_neuroedge_user_{abs(hash(str(path.resolve())))}"
    mod_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(mod_spec)
    torch.manual_seed(seed)
    sys.path.insert(0, str(path.resolve().parent))   # the file may import its neighbours
    # registered before it runs, as importlib's recipe for importing a source file: code
    # that looks its own module up by name while it runs (dataclasses under
    # ``from __future__ import annotations``, pickle) finds it
    sys.modules[name] = module
    imported = False
    try:
        mod_spec.loader.exec_module(module)
        imported = True
    except NeuroedgeError:
        raise
    except SystemExit as exc:   # sys.exit() at import: no exit of ours, one line instead
        raise ModelError(f"model {spec!r}: importing {file} called sys.exit({exc.code!r}) "
                         f"({_where(exc, path)}); put the file's script part under "
                         "if __name__ == '__main__':") from None
    except Exception as exc:
        raise ModelError(f"model {spec!r}: importing {file} failed ({_where(exc, path)}); "
                         "fix the file so 'python FILE.py' runs") from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
        if not imported and sys.modules.get(name) is module:   # nothing half-registered
            del sys.modules[name]
    if not hasattr(module, attr):
        found = sorted(k for k, v in vars(module).items()
                       if not k.startswith("_") and (callable(v) or isinstance(v, torch.nn.Module))
                       and getattr(v, "__module__", name) == name)
        raise ModelError(f"model {spec!r}: {file} has no {attr!r}; it defines "
                         f"{', '.join(found) or 'no functions or classes'}")
    obj = getattr(module, attr)
    if isinstance(obj, torch.nn.Module):
        return obj
    if not callable(obj):
        raise ModelError(f"model {spec!r}: {attr} is of type {type(obj).__name__}; name a "
                         "function "
                         "or class that builds the model, or an nn.Module instance")
    torch.manual_seed(seed)
    try:
        built = obj()
    except NeuroedgeError:
        raise
    except SystemExit as exc:
        raise ModelError(f"model {spec!r}: {attr}() called sys.exit({exc.code!r}) "
                         f"({_where(exc, path)}); it must return a torch.nn.Module") from None
    except Exception as exc:
        from deploy.estimate import required_parameters
        needs = required_parameters(obj)
        fix = (f"it is called with no arguments: give defaults to its parameters "
               f"({', '.join(needs)})" if needs else
               f"it is called with no arguments and must build the model: fix it so "
               f"{attr}() runs")
        raise ModelError(f"model {spec!r}: {attr}() failed ({_where(exc, path)}); "
                         f"{fix}") from exc
    if not isinstance(built, torch.nn.Module):
        kind = type(built).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ModelError(f"model {spec!r}: {attr}() returned {article} {kind}; it "
                         "must return a torch.nn.Module")
    return built


def _where(exc: BaseException, path: Path) -> str:
    """``TypeError: ... (line 7)``: the exception and its deepest line in the user's file."""
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"{head}, line {line}" if line else head


def _options(args) -> dict:
    options = {k: getattr(args, k) for k in ("stimulus", "steps", "dt", "reset")
               if getattr(args, k) is not None}
    if args.input_node is not None:
        options["input"] = args.input_node
    return options


def start_torch() -> None:
    """Import torch for one short command, the cheap way (issue 36: an answer in a second).

    - Importing torch makes about a million long-lived objects and no garbage; the cyclic
      collector would scan them hundreds of times on the way (0.1-0.3 s) and again in every
      full collection after. It is paused for the import and the objects are frozen
      (``gc.freeze``: moved where collections never look); the collector runs as usual
      for everything made later.
    - One intra-op thread: the command runs one example batch (and one training step),
      where the per-op counting in Python dominates; starting OpenMP's pool and its
      spinning cost more than the threads save (LeNet-5 on 2 cores: 0.5 s of CPU against
      0.1 s). Counts do not depend on the number of threads.
    """
    import gc
    if "torch" not in sys.modules:
        gc.disable()
        try:
            import torch
        finally:
            gc.enable()
        gc.freeze()
    import torch
    torch.set_num_threads(1)


def run_estimate(args):
    """The :class:`~deploy.estimate_result.Estimate` the command's arguments ask for."""
    from deploy.estimate import drawn_examples, estimate
    from deploy.estimate_result import profile_list
    if not profile_list(args.profiles):
        raise ModelError(f"--profiles {args.profiles!r} names no profile; give one or more "
                         "profile names or TOML paths, comma-separated, e.g. --profiles "
                         "jetson-orin,cortex-m7,a100")
    start_torch()
    if args.model.endswith(".nir"):
        for flag, value in (("--input-shape", args.input_shape), ("--batch", args.batch),
                            ("--input-dtype", args.input_dtype),
                            ("--train", args.train), ("--dtype int8", args.dtype == "int8"),
                            ("--stack", args.stack)):
            if value:
                raise ModelError(f"{flag} applies to FILE.py models; {args.model} is a NIR "
                                 "file: give --stimulus and --steps")
        return estimate(args.model, profiles=args.profiles, seed=args.seed,
                        strict=args.strict, **_options(args))
    if args.input_shape is None:
        raise ModelError(f"{args.model}: --input-shape is required for a torch model, e.g. "
                         "--input-shape 1,1,28,28 (batch first)")
    shapes, dtypes = input_shapes(args.input_shape, args.input_dtype, args.batch)
    model = load_model(args.model, seed=args.seed)
    example, notes = drawn_examples(model, shapes, dtypes, args.seed)
    est = estimate(model, example, profiles=args.profiles, seed=args.seed, strict=args.strict,
                   dtype=args.dtype, loss="auto" if args.train else None, stack=args.stack,
                   **_options(args))
    est.notes = (*est.notes, *notes)
    return est


def to_json(est) -> dict:
    """The command's JSON: ``Estimate.rows()`` (NaN as null), skipped profiles, notes, the
    NeuroBench metrics of the inference and the per-layer rows on the first profile."""
    from dataclasses import asdict

    from sim import neurobench
    from sim.layers import layer_rows
    first = next(iter(est.reports), None)
    ledger = est.ledgers[first] if first is not None else None
    return finite({"model": est.model, "source": est.source,
                    "lower_bound": est.lower_bound, "uncounted": est.uncounted,
                    "dtype": est.dtype, "memory": dict(est.memory),
                    "inference_samples": est.inference_samples,
                    "train_samples": est.train_samples, "rows": est.rows(),
                    "skipped": dict(est.skipped), "notes": list(getattr(est, "notes", ())),
                    "neurobench": neurobench.metrics(ledger, est.inference_scope)
                    if ledger is not None else None,
                    "layer_table": [asdict(r) for r in est.layers],
                    "layers_profile": first,
                    "layers": [asdict(r) for r in layer_rows(ledger, est.reports[first])]
                    if ledger is not None else []})


def _inputs(args) -> list:
    """Every file the command reads, which its output may be none of: the model file, the
    profile files (shipped or the user's TOML, as loaded) and a spike-array stimulus."""
    from deploy.estimate_result import profile_list
    from hw_profiles import load_many
    profiles = [p.path for p in load_many(profile_list(args.profiles)) if p.path]
    return [args.model.rpartition(":")[0] or args.model, *profiles,
            *([args.stimulus] if args.stimulus else [])]


def cmd_estimate(args) -> int:
    """``neuroedge estimate``: print the table (or JSON); exit 2 when no profile priced it."""
    to_stdout = args.json == STDOUT
    inputs = []
    if args.json and not to_stdout:
        from deploy.outputs import check_output
        inputs = _inputs(args)
        check_output(args.json, force=args.force, inputs=inputs, option="--json")
    # stdout holds the JSON alone: what the user's code prints (import, factory, forward)
    # goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
        est = run_estimate(args)
    if not est.reports:
        why = "; ".join(f"{k}: {v}" for k, v in est.skipped.items())
        raise NeuroedgeError(f"estimate: no profile in {args.profiles!r} can run "
                             f"{est.model}: {why}")
    doc = json.dumps(to_json(est), indent=1, allow_nan=False)
    if to_stdout:
        print(doc)
        return 0
    if args.json:
        from deploy.outputs import write_text
        write_text(args.json, doc + "\n", force=args.force, inputs=inputs, parents=True,
                   option="--json")
    if not args.quiet:
        from deploy.formatting import printable
        # fields from files are escaped in the table; this pass catches any other
        print(printable(table(est, all_layers=args.all, depth=args.depth,
                              width=args.width or output_width()), lines=True))
        if args.json:
            print(f"json: {args.json}")
    return 0
