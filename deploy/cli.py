"""The ``neuroedge`` command line: profiles, models, simulate, export, experiment, report,
compare, validate (and estimate, measure, sweep, completion from their own modules).

``simulate`` and ``export`` run a registered method through ``models.runner`` (the one
place that resolves the profile, checks the dataset and builds the config from a preset
plus ``--set KEY=VALUE`` overrides); ``export --from RUN.h5`` rebuilds the export from the
trained state a run file stored, training nothing. Modules are imported inside the
commands, so ``neuroedge models`` or ``--version`` load no torch.

Every expected failure (bad profile, unknown model, corrupt run file, ...) is a
NeuroedgeError and prints as one line, ``neuroedge: error: ...``, with exit status 2; so
does a bad argument (argparse's usage block is replaced by that one line).

Every command checks all it can before the work: its input files, profiles and profile
lists, seed, dataset files, export packages, and every output path (not a directory, not
an existing file unless ``--force``, not one of the command's inputs, not another output,
in a writable place). Outputs are written through :mod:`deploy.outputs`, so nothing that
exists is ever destroyed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from pathlib import Path

from deploy.cli_args import (
    PRESETS,
    SEED_MAX,
    add_report_options,
    add_training_options,
    add_width,
    check_realtime,
    load_profile,
    load_profiles,
    parse_run_file,
    parse_seed,
)
from deploy.cli_examples import add_examples, command_parsers
from deploy.cli_output import (
    CheckedStdout,
    CommandOutput,
    StdoutError,
    check_outputs,
    console,
    finite,
    print_report,
    progress_bar,
)
from deploy.completion import add_completion_parser
from deploy.errors import OutputError
from deploy.estimate_cli import add_estimate_parser
from deploy.measure_cli import add_measure_parser
from deploy.outputs import all_or_nothing, given_path
from deploy.sweep_cli import add_sweep_parser
from hw_profiles.errors import NeuroedgeError, suggestion
from hw_profiles.loader import clipped, shown

DEFAULT_MODEL = "diffpc"   # DiffPC quick on digits on loihi2 (25-50 s on 2 shared cores)
EXIT_ERROR = 2
EXIT_BROKEN_PIPE = 141     # 128 + SIGPIPE: what a shell reports for `cat big | head -1`


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as the one line every other neuroedge error is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # '--input-shape -1,4' or '--dt -1e-3' is a (bad) value for the option to refuse
        # with its own message, not an unknown option leaving --input-shape without one
        # (argparse's own pattern takes only '-1' and '-.5'; sub-parsers are this class)
        self._negative_number_matcher = re.compile(r"^-\.?\d[\d.,eE+-]*$")

    def error(self, message):
        self.exit(EXIT_ERROR, f"neuroedge: error: {message} (see '{self.prog} --help')\n")

    def parse_args(self, args=None, namespace=None):
        # argparse reports arguments no parser took from the top parser ("see 'neuroedge
        # --help'"), though they follow a command: the command's parser reports them, so
        # the hint names the help that lists what the command takes
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = command_parsers(self).get(getattr(parsed, "command", None), self)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _check_value(self, action, value):
        # argparse's "invalid choice: 'quik' (choose from ...)" with the closest choice named
        # (Python 3.14's suggest_on_error does this; 3.11 has no hook but this method)
        if action.choices is not None and value not in action.choices:
            own = getattr(action, "invalid_choice", None)   # the argument's own message
            if own is not None:
                raise argparse.ArgumentError(None, own(value))
            name = "/".join(action.option_strings) or action.dest   # "command": a subcommand
            hint = suggestion(value, action.choices) or \
                f"choose from {', '.join(map(repr, action.choices))}"
            raise argparse.ArgumentError(None, f"{name}: invalid choice {value!r}; {hint}")


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("neuroedge")
    except metadata.PackageNotFoundError:   # run from a source tree that was not installed
        return "(not installed)"


class _VersionAction(argparse.Action):
    """``--version``: prints ``neuroedge <version>`` and exits, as argparse's ``version``
    action, with the version looked up only then."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings=option_strings, dest=dest, default=default,
                         nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"neuroedge {_version()}")   # on stdout, as argparse's version action
        parser.exit()


def _plain(text):
    """A profile's text for a rich table or line: never markup, control characters escaped
    (a profile file is the user's; the loader refuses control characters, a snapshot
    read back from a run file is escaped all the same)."""
    from rich.text import Text

    from deploy.formatting import printable
    return Text(printable(text))


def _printable_row(*cells) -> tuple[str, ...]:
    """A listing row of a profile's text with control characters escaped (the listing prints
    its cells as plain text, never as markup)."""
    from deploy.formatting import printable
    return tuple(printable(str(c)) for c in cells)


def cmd_profiles(args) -> int:
    import hw_profiles
    from deploy.listing import print_listing
    con = console(args.width)
    if args.name:
        return _show_profile(args.name, con)
    rows = []
    for name in hw_profiles.available():
        p = hw_profiles.load(name)
        node = f"{p.technology_node_nm.value:g} nm" if p.technology_node_nm else "-"
        rows.append(_printable_row(p.name, p.kind, node, str(len(p.energy_pj)),
                                   ", ".join(p.memory),
                                   f"{p.static_power_w.value:g}", p.description))
    print_listing(con, "hardware profiles (neuroedge profiles show NAME for every number)",
                  ("name", "kind", "node", "ops priced", "memory levels", "static W",
                   "description"), rows, text_col=6,
                  record=lambda r: [f"{r[0]}: {r[1]}, {r[2]}, {r[3]} ops priced, memory "
                                    f"{r[4]}, static {r[5]} W", r[6]])
    return 0


def _show_profile(name: str, con) -> int:
    from deploy.listing import print_listing
    p = load_profile(name)
    title = _plain(p.name)
    title.stylize("bold")
    con.print(title + _plain(f" ({p.kind}): {p.description}"))
    if p.path:
        con.print(_plain(f"file: {p.path}"))
    rows = [_printable_row(key, f"{q.value:g}", q.unit, q.provenance, q.source,
                           q.derivation or q.note)
            for key, q in p.entries()]
    print_listing(con, "entries", ("entry", "value", "unit", "provenance", "source",
                                   "derivation / note"), rows, text_col=5,
                  record=lambda r: [f"{r[0]} = {r[1]} {r[2]} ({r[3]}; {r[4]})",
                                    *([r[5]] if r[5] else [])])
    con.print("[bold]sources[/bold]")
    for s in p.sources.values():
        # plain lines, so URLs are never folded and stay copyable
        con.print(_plain(f"  {s.key} ({s.kind}): {s.title}"), highlight=False)
        con.print(_plain(f"    {s.url}"), highlight=False, soft_wrap=True)
    return 0


def cmd_models(args) -> int:
    import models
    from deploy.listing import print_listing
    rows = [(m.card.name, m.card.title, ", ".join(m.card.device_kinds),
             ", ".join(m.card.datasets), m.card.default_profile,
             ", ".join(m.card.exports) or "-") for m in models.REGISTRY.values()]
    con = console(args.width)
    print_listing(con, "registered models (only what works is registered)",
                  ("name", "title", "device kinds", "datasets", "default profile", "exports"),
                  rows, text_col=1,
                  record=lambda r: [f"{r[0]}: {r[1]}", f"runs on {r[2]} (default {r[4]}); "
                                    f"datasets {r[3]}; exports {r[5]}"])
    # the claim and the settings read better as lines than as narrow columns
    for method in models.REGISTRY.values():
        card = method.card
        con.print(f"[bold]{card.name}[/bold]: {card.claim}", highlight=False)
        con.print(f"  settings (--set KEY=VALUE): "
                  f"{', '.join(f for f in card.fields if f != 'seed')}; presets: "
                  f"{', '.join(card.presets)}", highlight=False)
        for preset, note in card.preset_notes.items():
            con.print(_plain(f"  {preset} preset: {note}"), highlight=False)
    return 0


def _preset(args) -> str:
    """``--preset`` with ``--full`` as the old spelling of ``--preset full``."""
    if args.full and args.preset not in (None, "full"):
        raise NeuroedgeError(f"--full is --preset full; it contradicts --preset {args.preset}: "
                             "give one of them")
    return "full" if args.full else (args.preset or "quick")


def _value_text(v) -> str:
    """A setting as ``--set`` takes it: tuples as ``8,4``, booleans lower case."""
    if isinstance(v, (tuple, list)):
        return ",".join(_value_text(x) for x in v)
    return str(v).lower() if isinstance(v, bool) else str(v)


def _settings_text(plan) -> str:
    sets = ", ".join(f"{k}={_value_text(v)}" for k, v in sorted(plan.overrides.items()))
    return f"{plan.preset} preset, seed {plan.seed}" + (f", set {sets}" if sets else "")


def cmd_simulate(args) -> int:
    from deploy import report as rep
    from deploy.headline import summary
    from deploy.runfile import read_run, write_run
    from models import runner

    # -- everything that can fail without training, checked first (runner.prepare: model,
    # profile and its kind, dataset and its files, preset, --set keys and values)
    profile = load_profile(args.profile, "--profile") if args.profile else None
    plan = runner.prepare(args.model, profile=profile, dataset=args.dataset,
                          preset=_preset(args), seed=args.seed, overrides=args.set)
    method, profile = plan.method, plan.profile
    check_realtime(args.realtime, [profile])
    others = []
    if args.compare is not None:
        for p in load_profiles(args.compare, "--compare"):
            runner.check_kind(method, p, "--compare")
            if p.label != profile.label:  # the run's own is the first row
                others.append(p)
    out = given_path(args.out, runner.run_file_name(plan), "--out")
    html = given_path(args.html, out.with_suffix(".html"), "--html")
    inputs = [p.path for p in (profile, *others) if p.path]
    check_outputs({"--out": out, "--html": html, "--json": args.json}, force=args.force,
                   inputs=inputs)

    o = CommandOutput(args)
    o.say(f"simulating [bold]{method.name}[/bold] on {plan.dataset} with profile "
          f"{profile.label} ({_settings_text(plan)})")
    bar, progress = progress_bar(o.status, method.name)
    with bar:
        result = runner.execute(plan, progress)
    # the run records the profile object it ran on (RunResult refuses a name): a user's
    # file is never looked up again by its name (which may be unknown, or shadow a shipped
    # one)
    write_run(out, result, force=args.force, inputs=inputs, parents=True)
    run = read_run(out)
    try:
        energy = run.ledger.price(run.profile, realtime=args.realtime)
    except NeuroedgeError as exc:
        # the training was paid for: its run file stays, and the message says so (a state
        # the device cannot hold is found only when the run's ledger is priced)
        raise type(exc)(f"{exc}; the run file {str(out)!r} is written and kept (its counts: "
                        f"neuroedge report {str(out)!r} --profile ANOTHER)") from None
    # compared first: the headline carries the ratio to every compared profile
    reports = [energy] + _compare_reports(plan, run, others, args, o)
    print_report(o, args, run, reports)
    try:
        with all_or_nothing():   # the reports: both or neither
            rep.html_report(run, reports, html, force=args.force, inputs=inputs, parents=True)
            if args.json:
                o.json(args.json, summary(run, reports), force=args.force, inputs=inputs)
    except OutputError as exc:
        # the run file holds the training that was paid for: kept, and said so
        raise OutputError(f"{exc}; the run file {str(out)!r} is written and kept (neuroedge "
                          f"report {str(out)!r} --html PATH writes its report)") from None
    o.report(f"run file: {out}\nreport:   {html}")
    return 0


def _compare_reports(plan, run, others, args, o: CommandOutput) -> list:
    """The run priced on each ``--compare`` profile. A neuromorphic run is re-placed and
    re-simulated on each other neuromorphic chip (its step times depend on where every
    neuron sits: sim.execution.neuromorphic.reprice), with the same config and seed; any other
    kind re-prices the ledger. A chip the network does not fit on, or cannot run (the
    model refuses it: DiffPC on a chip of binary spikes), is left out of the
    comparison with one line saying why: the run itself is already written and priced."""
    import dataclasses

    from models import runner
    from sim.errors import HardwareLimitError, ModelError, PricingError
    from sim.execution.neuromorphic import reprice
    reports = []
    for p in others:
        if p.kind == "neuromorphic" and run.profile.kind == "neuromorphic":
            o.say(f"re-placing and re-running {plan.method.name} on {p.label} for the "
                  "comparison")
            try:
                reports += reprice(
                    lambda q: runner.execute(dataclasses.replace(plan, profile=q)),
                    [p], realtime=args.realtime and bool(p.core_op_ns))
            except (HardwareLimitError, ModelError) as exc:
                # a chip the network does not fit, or one the model cannot run on (DiffPC's
                # signed payloads on a binary-spike chip: its network refuses to build)
                o.say(f"not compared on {p.label}: {exc}", markup=False)
        else:
            try:   # a microcontroller whose memory cannot hold the run's state, another
                # word width than the run counted in: left out, saying why
                reports.append(run.ledger.price(p, realtime=args.realtime
                                                and bool(p.core_op_ns)))
            except (HardwareLimitError, PricingError) as exc:
                o.say(f"not compared on {p.label}: {exc}", markup=False)
    return reports


def cmd_experiment(args) -> int:
    """The method's own study (``runner.study``): its runs' metrics and the claim's summary
    as JSON on stdout."""
    from models import runner
    study = runner.study(args.model, preset=args.preset, seed=args.seed)
    doc = {"model": args.model, "preset": args.preset, "seed": args.seed,
           "summary": study.summary,
           "runs": {k: {"profile": r.profile.label, "dataset": r.dataset, "metrics": r.metrics}
                    for k, r in study.runs.items()}}
    print(json.dumps(finite(doc), indent=1, default=str, allow_nan=False))
    return 0


def cmd_validate(args) -> int:
    """Predicted against measured energy and latency for the published measurements."""
    from deploy import text_fit
    from deploy.formatting import validation_summary
    from sim.validation import format_rows, heldout_factors, load_table, summarise, validate
    only = {s.strip() for s in args.only.split(",") if s.strip()} \
        if args.only is not None else None
    if only is not None:
        known = {m.id for m in load_table()}
        if not only:   # '--only ,' or '--only ""' would otherwise run every row
            raise NeuroedgeError(f"--only {args.only!r}: expected comma-separated row ids, "
                                 "e.g. truenorth-rate-20hz; without --only every row runs")
        unknown = sorted(only - known)
        if unknown:
            hint = suggestion(unknown[0], known)
            raise NeuroedgeError(f"--only {', '.join(unknown)}: no such validation row"
                                 + (f"; {hint}" if hint else
                                    f"; rows are {', '.join(sorted(known))}"))
    check_outputs({"--json": args.json}, force=args.force, inputs=())
    o = CommandOutput(args)
    rows = validate(only=only)
    o.report(format_rows(rows))
    summary = summarise(rows)
    # the held-out factors max(r, 1/r) bench/validate.py reports, per device kind too
    held = heldout_factors(rows)
    summary["heldout"] = {k: v for k, v in held.items() if k != "stack_factors"}
    # a few lines people read; every figure (nulls too) is --json's
    o.report("\n".join(text_fit.fold(validation_summary(summary), o.width)))
    if args.json:
        o.json(args.json, {"rows": [r.to_dict() for r in rows], "summary": summary},
               force=args.force, inputs=())
    return 0


def cmd_report(args) -> int:
    from deploy import report as rep
    from deploy.headline import summary
    from deploy.runfile import read_run, stored_profile
    run = read_run(parse_run_file(args.run))
    profile = load_profile(args.profile, "--profile") if args.profile \
        else stored_profile(run)
    inputs = [args.run] + ([profile.path] if args.profile and profile.path else [])
    check_outputs({"--html": args.html, "--json": args.json}, force=args.force,
                   inputs=inputs)
    check_realtime(args.realtime, [profile])
    o = CommandOutput(args)
    energy = run.ledger.price(profile, realtime=args.realtime, stack=args.stack)
    print_report(o, args, run, [energy])
    with all_or_nothing():
        if args.html:
            path = rep.html_report(run, [energy], Path(args.html), force=args.force,
                                   inputs=inputs, parents=True)
            o.report(f"report: {path}")
        if args.json:
            # the summary, and the energy report itself (what --json wrote before the summary)
            doc = {**summary(run, [energy]), "energy_report": energy.to_dict()}
            o.json(args.json, doc, force=args.force, inputs=inputs)
    return 0


def cmd_export(args) -> int:
    from deploy.export import execute_export, prepare_export
    if args.target == "c-int8":   # a user's torch model as int8 C (deploy/c_int8)
        from deploy.c_int8.cli import cmd_export_int8
        return cmd_export_int8(args)
    if args.input_shape is not None or args.calibration is not None:
        raise NeuroedgeError("--input-shape and --calibration apply to --target c-int8 only")
    if args.model and ".py:" in args.model:
        raise NeuroedgeError(f"{args.model!r} is a model of your own: --target c-int8 exports "
                             f"it (int8 C for a microcontroller, docs/c_int8.md); --target "
                             f"{args.target} takes a registered model")
    if args.run_from is not None:
        given = [opt for opt, v in (("--preset", args.preset), ("--full", args.full or None),
                                    ("--set", args.set or None), ("--seed", args.seed),
                                    ("--profile", args.profile)) if v is not None]
        if given:
            raise NeuroedgeError(f"--from exports the trained state the run file stored; "
                                 f"{', '.join(given)} "
                                 f"{'apply' if len(given) > 1 else 'applies'} to training "
                                 f"only: leave {'them' if len(given) > 1 else 'it'} out")
        xplan = prepare_export(args.model, args.target, args.out,
                               run_file=parse_run_file(args.run_from), force=args.force,
                               option="--out")
    else:
        if args.model is None:
            raise NeuroedgeError("export: name the model to train and export (neuroedge "
                                 "export MODEL --target T), or give --from RUN.h5")
        profile = load_profile(args.profile, "--profile") if args.profile else None
        xplan = prepare_export(args.model, args.target, args.out, preset=_preset(args),
                               seed=args.seed or 0, overrides=args.set, profile=profile,
                               force=args.force, option="--out")
    con = console()
    if xplan.plan is None:
        con.print(f"exporting [bold]{xplan.method.name}[/bold] to {args.target} from "
                  f"{xplan.source} (its stored trained state; no training)", soft_wrap=True)
        path = execute_export(xplan, force=args.force)
    else:
        con.print(f"exporting [bold]{xplan.method.name}[/bold] to {args.target}: training "
                  f"once on {xplan.plan.dataset} with profile {xplan.plan.profile.label} "
                  f"({_settings_text(xplan.plan)})", soft_wrap=True)
        bar, progress = progress_bar(con, xplan.method.name)
        with bar:
            path = execute_export(xplan, progress, force=args.force)
    con.print(f"exported: {path}", soft_wrap=True, highlight=False)
    return 0


def cmd_compare(args) -> int:
    from deploy import report as rep
    from deploy.headline import summary
    from deploy.runfile import read_run
    run = read_run(parse_run_file(args.run))
    profiles = load_profiles(args.profiles, "--profiles")
    inputs = [args.run] + [p.path for p in profiles if p.path]
    check_outputs({"--html": args.html, "--json": args.json}, force=args.force,
                   inputs=inputs)
    # a stored ledger is re-priced, never re-simulated: a neuromorphic run priced on another
    # chip keeps its placement, and the report's time model says so (a lower bound);
    # `simulate --compare` re-places it on each chip
    reports = [run.ledger.price(p, realtime=args.realtime and bool(p.core_op_ns))
               for p in profiles]
    o = CommandOutput(args)
    # the first profile is the reference: the headline is its figures and every ratio
    print_report(o, args, run, reports)
    with all_or_nothing():
        if args.html:
            path = rep.html_report(run, reports, Path(args.html), force=args.force,
                                   inputs=inputs, parents=True)
            o.report(f"report: {path}")
        if args.json:
            o.json(args.json, summary(run, reports), force=args.force, inputs=inputs)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="neuroedge",
        description="Simulate ML methods on hardware profiles and report their cost.")
    # the version is looked up when asked for: importlib.metadata and the scan of the
    # installed distributions cost every command ~30 ms otherwise (issue 36)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("profiles", help="list hardware profiles, or show one with sources")
    action = p.add_argument("action", nargs="?", choices=["show"], help="show one profile")
    # 'profiles loihi': a profile named without 'show' (argparse took it for the action)
    action.invalid_choice = lambda value: (f"unexpected argument {shown(value)}: use "
                                           f"'neuroedge profiles show {clipped(value)}'")
    p.add_argument("name", nargs="?", help="profile name or TOML path (with 'show')")
    add_width(p)
    p.set_defaults(func=cmd_profiles)

    p = sub.add_parser("models", help="list registered models")
    add_width(p)
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("simulate", help="run a model on a profile; write a run file + report")
    p.add_argument("model", nargs="?", default=DEFAULT_MODEL,
                   help=f"registered model (default: {DEFAULT_MODEL})")
    p.add_argument("--profile", help="profile name or TOML path (default: the model's)")
    p.add_argument("--dataset", help="dataset (default: the model's)")
    add_training_options(p, seed_default=0)
    p.add_argument("--out", help="run file path (default: runs/MODEL-DATASET-PROFILE-PRESET-"
                                 "seedN[-KEY=VALUE...].h5)")
    p.add_argument("--html", help="HTML report path (default: next to the run file)")
    p.add_argument("--compare", metavar="PROFILES",
                   help="also price on these comma-separated profiles: ratios in the headline, "
                        "a comparison table in the terminal and the HTML")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (never a directory neuroedge did not write)")
    p.add_argument("--realtime", action="store_true",
                   help="neuromorphic profiles: pace every time step to the network's dt and "
                        "charge static power over that real-time duration")
    add_report_options(p, "write the headline figures, metrics with units and NeuroBench metrics "
                       "as JSON here")
    p.set_defaults(func=cmd_simulate)

    from deploy.export import TARGETS
    p = sub.add_parser("export", help="train a model once (or read a run file) and export it "
                                      "to an edge target")
    p.add_argument("model", nargs="?", help="registered model (optional with --from)")
    p.add_argument("--target", required=True, choices=(*TARGETS, "c-int8"),
                   help=f"what to write: {', '.join(TARGETS)}, or c-int8 (your own torch "
                        "model FILE.py:factory as int8 C for a microcontroller)")
    p.add_argument("--input-shape", help="c-int8: the model's input shape, batch first "
                   "(e.g. 1,1,28,28)")
    p.add_argument("--calibration", metavar="DATA", help="c-int8: calibration data, "
                   "digits, fashion-mnist or FILE.npy of inputs")
    p.add_argument("--from", dest="run_from", metavar="RUN.h5",
                   help="export the trained state this run file stored: no training")
    p.add_argument("--profile", help="profile to train on (default: the model's)")
    add_training_options(p, seed_default=None)
    p.add_argument("--out", help="output path (default: exports/MODEL-TARGET[.ext]); the C "
                   "target writes a new (or empty) directory there")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (never a directory neuroedge did not write)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("experiment", help="run a model's own study (the paper's comparison) "
                                          "and print its summary as JSON")
    p.add_argument("model", help="registered model")
    p.add_argument("--preset", choices=PRESETS, default="quick",
                   help="quick (default) or full, the paper's scale")
    p.add_argument("--seed", type=parse_seed, default=0, help=f"0..{SEED_MAX} (default 0)")
    p.set_defaults(func=cmd_experiment)

    p = sub.add_parser("report", help="print (and optionally write) a run file's report")
    p.add_argument("run", help="run file (.h5)")
    p.add_argument("--profile", help="price on this profile instead of the run's own")
    p.add_argument("--stack", default=None,
                   help="software stack to price for (gpu/cpu: eager (default), graph, fused; "
                        "bitwise: peak or the profile's kernel libraries; see "
                        "hw_profiles/SCHEMA.md)")
    p.add_argument("--html", help="write a self-contained HTML report here")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (never a directory neuroedge did not write)")
    p.add_argument("--realtime", action="store_true",
                   help="neuromorphic profiles: pace every time step to the network's dt and "
                        "charge static power over that real-time duration")
    add_report_options(p, "write the headline figures, metrics with units, NeuroBench metrics "
                       "and the energy report as JSON here")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="price one run on several profiles")
    p.add_argument("run", help="run file (.h5)")
    p.add_argument("--profiles", required=True,
                   help="comma-separated, e.g. a100,h100; the first is the reference of "
                        "every ratio")
    p.add_argument("--html", help="write a self-contained HTML comparison here")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (never a directory neuroedge did not write)")
    p.add_argument("--realtime", action="store_true",
                   help="neuromorphic profiles: pace every time step to the network's dt and "
                        "charge static power over that real-time duration")
    add_report_options(p, "write the headline figures, metrics with units, NeuroBench metrics "
                       "and one row of figures per profile as JSON here")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("validate", help="predicted against measured energy for published "
                                         "measurements of real chips")
    p.add_argument("--only", help="comma-separated row ids (default: every row)")
    p.add_argument("--json", metavar="PATH", help="also write the rows and summary as JSON "
                   "here; '-' writes it to stdout (the table then goes to stderr)")
    p.add_argument("--force", action="store_true", help="replace an existing --json file")
    p.set_defaults(func=cmd_validate)

    add_estimate_parser(sub)
    add_measure_parser(sub)
    add_sweep_parser(sub)
    add_completion_parser(sub, root=parser)
    add_examples(parser)   # 'examples:' at the end of every command's --help
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from deploy.formatting import printable

    # the message may quote a file's text
    print(f"neuroedge: warning: {printable(message)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    if args.command == "profiles" and args.action == "show" and not args.name:
        command_parsers(parser)["profiles"].error("profiles show NAME: give a profile name")
    stdout, sys.stdout = sys.stdout, CheckedStdout(sys.stdout)
    try:
        with warnings.catch_warnings():
            # an assumption neuroedge made (a NIR file that does not state its reset rule)
            # is one line on stderr, not Python's warning with its source line
            warnings.showwarning = _show_warning
            code = args.func(args)
        # a closed pipe or a full disk raises here, inside the handlers, not at exit
        sys.stdout.flush()
        return code
    except NeuroedgeError as exc:
        from deploy.formatting import printable

        # the message may quote a file's text
        print(f"neuroedge: error: {printable(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except StdoutError as exc:
        print(f"neuroedge: error: {exc}", file=sys.stderr)
        _drop_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("neuroedge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader left (`neuroedge report RUN.h5 | head -1`)
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        sys.stdout = stdout


def _drop_stdout() -> None:
    """What stdout still buffers goes nowhere: the Python docs' recipe for a closed pipe,
    stdout onto devnull, so the interpreter's final flush cannot fail again (a stdout
    without a file descriptor, as in a test, has no final flush to fail)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)


if __name__ == "__main__":
    sys.exit(main())
