"""``neuroedge export FILE.py:factory --target c-int8``: a user's torch model as int8 C.

``--input-shape`` (batch first) and ``--calibration`` (a bundled data set name or an
``.npy`` file) are required; ``--profile`` is the microcontroller to check the sizes
against and price the inference on (default ``cortex-m4``); ``--out`` the new directory.
"""
from __future__ import annotations

from deploy.errors import ExportError

TARGET = "c-int8"
TRAINING_ONLY = (("--from", "run_from"), ("--preset", "preset"), ("--full", "full"),
                 ("--set", "set"))


def cmd_export_int8(args) -> int:
    from deploy.c_int8.export import export_int8, summary_lines
    from deploy.cli_output import console
    from deploy.estimate_cli import load_model, parse_shape
    given = [opt for opt, attr in TRAINING_ONLY if getattr(args, attr, None)]
    if given:
        raise ExportError(f"--target {TARGET} exports your own model (FILE.py:factory) as it "
                          f"is; {', '.join(given)} "
                          f"{'apply' if len(given) > 1 else 'applies'} to registered models "
                          f"only: leave {'them' if len(given) > 1 else 'it'} out")
    if not args.model or ":" not in args.model:
        raise ExportError(f"--target {TARGET}: give your model as FILE.py:factory (a function "
                          "or class in the file that builds the trained torch model)")
    if args.input_shape is None or args.calibration is None:
        raise ExportError(f"--target {TARGET} needs --input-shape N,C,H,W (or N,F) and "
                          "--calibration DATA (digits, fashion-mnist, or FILE.npy)")
    if args.out is None:
        raise ExportError(f"--target {TARGET} needs --out DIR (a new or empty directory)")
    shape = parse_shape(args.input_shape)
    model = load_model(args.model, seed=args.seed or 0)
    result = export_int8(model, shape, args.calibration, args.out,
                         profile=args.profile or "cortex-m4", force=args.force,
                         seed=args.seed or 0)
    con = console()
    for line in summary_lines(result):
        con.print(line, soft_wrap=True, highlight=False)
    con.print(f"exported: {result.path} (make -C {result.path} host; make cortex-m runs it "
              "on QEMU)",
              soft_wrap=True, highlight=False)
    return 0
