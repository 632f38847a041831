"""The ``neuroedge`` command line: profiles, models, simulate, export, report, compare.

Every expected failure (bad profile, unknown model, corrupt run file, ...) is a
NeuroedgeError and prints as one line, ``neuroedge: error: ...``, with exit status 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hw_profiles.errors import NeuroedgeError

DEFAULT_MODEL = "diffpc"   # DiffPC quick on digits on loihi2 (25-50 s on 2 shared cores)
EXIT_ERROR = 2


def _console():
    from rich.console import Console
    return Console()


def cmd_profiles(args) -> int:
    import hw_profiles
    from rich.table import Table
    if args.name:
        return _show_profile(args.name)
    table = Table(title="hardware profiles (neuroedge profiles show NAME for every number)")
    table.add_column("name", no_wrap=True)
    for col in ("kind", "node", "ops priced", "memory levels", "static W"):
        table.add_column(col)
    table.add_column("description", overflow="fold")
    for name in hw_profiles.available():
        p = hw_profiles.load(name)
        node = f"{p.technology_node_nm.value:g} nm" if p.technology_node_nm else "-"
        table.add_row(p.name, p.kind, node, str(len(p.energy_pj)), ", ".join(p.memory),
                      f"{p.static_power_w.value:g}", p.description)
    _console().print(table)
    return 0


def _show_profile(name: str) -> int:
    import hw_profiles
    from rich.table import Table
    p = hw_profiles.load(name)
    con = _console()
    con.print(f"[bold]{p.name}[/bold] ({p.kind}): {p.description}")
    if p.path:
        con.print(f"file: {p.path}")
    table = Table(show_lines=False)
    for col in ("entry", "value", "unit", "provenance", "source"):
        table.add_column(col, no_wrap=True)
    table.add_column("derivation / note", overflow="fold", min_width=20)
    for key, q in p.entries():
        table.add_row(key, f"{q.value:g}", q.unit, q.provenance, q.source,
                      q.derivation or q.note)
    con.print(table)
    con.print("[bold]sources[/bold]")
    for s in p.sources.values():
        # plain lines, so URLs are never folded and stay copyable
        con.print(f"  {s.key} ({s.kind}): {s.title}", markup=False, highlight=False)
        con.print(f"    {s.url}", markup=False, highlight=False, soft_wrap=True)
    return 0


def cmd_models(args) -> int:
    import models
    from rich.table import Table
    table = Table(title="registered models (only what works is registered)")
    for col in ("name", "title", "device kinds", "datasets", "default profile", "claim"):
        table.add_column(col, overflow="fold")
    for card in models.REGISTRY.values():
        table.add_row(card.name, card.title, ", ".join(card.device_kinds),
                      ", ".join(card.datasets), card.default_profile, card.claim)
    _console().print(table)
    return 0


def cmd_simulate(args) -> int:
    import hw_profiles
    import models
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from deploy import report as rep
    from deploy.runfile import read_run, write_result

    card = models.get(args.model)
    profile = hw_profiles.load(args.profile or card.default_profile)
    if profile.kind not in card.device_kinds:
        raise NeuroedgeError(f"model {card.name!r} runs on {', '.join(card.device_kinds)} "
                             f"profiles; {profile.name!r} is {profile.kind!r}")
    dataset = args.dataset or card.default_dataset
    if dataset not in card.datasets:
        raise NeuroedgeError(f"model {card.name!r} takes datasets {', '.join(card.datasets)}; "
                             f"got {dataset!r}")
    out = Path(args.out or f"runs/{card.name}-{dataset}-{profile.name}.h5")
    out.parent.mkdir(parents=True, exist_ok=True)
    con = _console()
    con.print(f"simulating [bold]{card.name}[/bold] on {dataset} with profile "
              f"{profile.name} ({'quick' if not args.full else 'full'} setting, seed {args.seed})")
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), console=con, transient=False) as bar:
        task = bar.add_task(card.name, total=None, info="")

        def progress(step, total, metrics):
            info = "  ".join(f"{k} {v:.4g}" for k, v in metrics.items()
                             if isinstance(v, float))
            bar.update(task, completed=step, total=total, info=info)

        result = card.simulate(profile=profile, dataset=dataset, seed=args.seed,
                               quick=not args.full, progress=progress)
    write_result(out, result)
    run = read_run(out)
    energy = run.ledger.price(run.profile)
    print(rep.terminal_report(run, energy))
    html = Path(args.html) if args.html else out.with_suffix(".html")
    others = [p for p in _profile_list(args.compare) if p != profile.name] if args.compare else []
    reports = [energy] + [run.ledger.price(p) for p in others]
    rep.html_report(run, reports, html)
    con.print(f"run file: {out}\nreport:   {html}")
    return 0


def cmd_report(args) -> int:
    from deploy import report as rep
    from deploy.runfile import read_run
    run = read_run(args.run)
    profile = args.profile or run.profile
    energy = run.ledger.price(profile)
    print(rep.terminal_report(run, energy))
    if args.html:
        path = rep.html_report(run, [energy], Path(args.html))
        print(f"report: {path}")
    if args.json:
        Path(args.json).write_text(json.dumps(energy.to_dict(), indent=1))
    return 0


def cmd_export(args) -> int:
    from deploy.export import export_model
    con = _console()
    con.print(f"exporting [bold]{args.model}[/bold] to {args.target} "
              f"({'quick' if not args.full else 'full'} training, seed {args.seed})")

    def progress(step, total, metrics):
        info = "  ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, float))
        con.print(f"  {step}/{total} {info}", highlight=False)

    path = export_model(args.model, args.target, args.out, seed=args.seed,
                        quick=not args.full, progress=progress)
    con.print(f"exported: {path}")
    return 0


def _profile_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise NeuroedgeError(f"--profiles {text!r}: expected a comma-separated list of "
                             "profile names or paths, e.g. a100,h100,x86-avx2")
    return names


def cmd_compare(args) -> int:
    from deploy import report as rep
    from deploy.runfile import read_run
    run = read_run(args.run)
    reports = [run.ledger.price(p) for p in _profile_list(args.profiles)]
    print(rep.comparison_table(reports))
    if args.html:
        print(f"report: {rep.html_report(run, reports, Path(args.html))}")
    if args.json:
        rows = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                for r in rep.comparison_rows(reports)]  # NaN (scope absent) -> null: strict JSON
        Path(args.json).write_text(json.dumps(rows, indent=1, allow_nan=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuroedge",
        description="Simulate ML methods on hardware profiles and report their cost.")
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("profiles", help="list hardware profiles, or show one with sources")
    p.add_argument("action", nargs="?", choices=["show"], help="show one profile")
    p.add_argument("name", nargs="?", help="profile name or TOML path (with 'show')")
    p.set_defaults(func=cmd_profiles)

    p = sub.add_parser("models", help="list registered models")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("simulate", help="run a model on a profile; write a run file + report")
    p.add_argument("model", nargs="?", default=DEFAULT_MODEL,
                   help=f"registered model (default: {DEFAULT_MODEL})")
    p.add_argument("--profile", help="profile name or TOML path (default: the model's)")
    p.add_argument("--dataset", help="dataset (default: the model's)")
    p.add_argument("--out", help="run file path (default: runs/MODEL-DATASET-PROFILE.h5)")
    p.add_argument("--html", help="HTML report path (default: next to the run file)")
    p.add_argument("--compare", help="also price on these profiles in the HTML report")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--full", action="store_true",
                   help="the full experiment instead of the quick setting")
    p.set_defaults(func=cmd_simulate)

    from deploy.export import TARGETS
    p = sub.add_parser("export", help="train a model and export it to an edge target")
    p.add_argument("model", help="registered model")
    p.add_argument("--target", required=True, choices=TARGETS)
    p.add_argument("--out", help="output path (default: exports/MODEL-TARGET[.ext])")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--full", action="store_true", help="train the full setting first")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", help="print (and optionally write) a run file's report")
    p.add_argument("run", help="run file (.h5)")
    p.add_argument("--profile", help="price on this profile instead of the run's own")
    p.add_argument("--html", help="write a self-contained HTML report here")
    p.add_argument("--json", help="write the energy report as JSON here")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="price one run on several profiles")
    p.add_argument("run", help="run file (.h5)")
    p.add_argument("--profiles", required=True, help="comma-separated, e.g. a100,h100")
    p.add_argument("--html", help="write a self-contained HTML comparison here")
    p.add_argument("--json", help="write the comparison rows as JSON here")
    p.set_defaults(func=cmd_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    if args.command == "profiles":
        if args.action == "show" and not args.name:
            parser.error("profiles show NAME: give a profile name")
        if args.action is None and args.name:
            parser.error(f"unexpected argument {args.name!r}: use 'profiles show NAME'")
    try:
        return args.func(args)
    except NeuroedgeError as exc:
        print(f"neuroedge: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("neuroedge: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
