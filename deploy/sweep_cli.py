"""``neuroedge sweep SPEC.toml``: every run of a sweep spec (:mod:`deploy.sweep`), or the
trials of its ``[search]`` (:mod:`deploy.search`), on a Dask LocalCluster by default, serially
with ``--serial``, or on a running cluster with ``--scheduler tcp://HOST:8786``;
``--dry-run`` lists the runs (or the search's space) and exits."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploy.cli_args import parse_positive
from deploy.outputs import given_path

EXIT_FAILED = 1
"""The sweep finished, but some of its runs (or trials) failed: not EXIT_ERROR (2), which
is a sweep refused or stopped by an error (a script tells "rerun the failures" from "fix the
spec")."""


def add_sweep_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` command to ``subparsers`` (``deploy.cli.build_parser``)."""
    p = subparsers.add_parser(
        "sweep", help="run a sweep spec: models x datasets x settings x seeds, priced on "
                      "several profiles, on Dask (local processes or a cluster)",
        description="Expand a sweep spec (TOML) to runs, simulate each once into "
                    "OUT/runs/, re-price every stored ledger on the spec's profiles, and "
                    "write OUT/results.csv and OUT/summary.html. A spec with a [search] "
                    "table runs an Optuna study instead (TPE, NSGA-II or random; trials on "
                    "the same cluster; the study in OUT/study.db).")
    p.add_argument("spec", metavar="SPEC.toml",
                   help="the sweep spec: models, datasets, presets, seeds, [grid] of --set "
                        "values, profiles, or a [search] table (see docs/sweeps.md)")
    p.add_argument("--out", metavar="DIR",
                   help="the sweep's directory (default: sweeps/NAME, NAME the spec's name)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the runs, one line each, and exit (nothing runs)")
    p.add_argument("--workers", type=parse_positive, metavar="N",
                   help="worker processes of the local Dask cluster, one thread each "
                        "(default: one per core)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on the Dask cluster whose scheduler is at this address "
                        "(e.g. workers started by dask-jobqueue on Slurm) instead of a local one")
    p.add_argument("--serial", action="store_true",
                   help="run one run after another in this process (no Dask)")
    p.add_argument("--resume", action="store_true",
                   help="keep every run whose run file in DIR/runs reads back whole; run "
                        "the others (a search: continue the study in DIR/study.db)")
    p.add_argument("--force", action="store_true",
                   help="run every run again, replacing its run file")
    p.add_argument("--quiet", action="store_true",
                   help="print nothing but errors")
    p.set_defaults(func=cmd_sweep)
    return p


def cmd_sweep(args) -> int:
    from deploy import sweep
    from deploy.errors import SweepError
    spec = sweep.load_spec(args.spec)
    if args.serial and (args.workers or args.scheduler):
        raise SweepError("--serial runs in this process; drop --workers / --scheduler, or "
                         "--serial")
    if args.workers and args.scheduler:
        raise SweepError("--workers sizes a local cluster; a --scheduler cluster has its "
                         "own workers: give one of them")
    if args.resume and args.force:
        raise SweepError("--resume keeps finished runs and --force runs them again: give "
                         "one of them")
    sweep.check_scheduler(args.scheduler)   # a --dry-run is refused the same bad address
    if spec.search is not None:
        return _cmd_search(spec, args)
    if args.dry_run:
        lines = sweep.dry_run_lines(spec)
        print("\n".join(lines))
        if not args.quiet:
            print(f"{len(lines)} runs, priced on {', '.join(spec.profiles)}", file=sys.stderr)
        return 0
    out = given_path(args.out, Path("sweeps") / spec.name, "--out")

    def progress(done, total, key, how):
        if not args.quiet:
            print(f"[{done}/{total}] {how}: {key}", file=sys.stderr, flush=True)

    try:
        res = sweep.run_sweep(spec, out, workers=args.workers, scheduler=args.scheduler,
                              resume=args.resume, force=args.force, serial=args.serial,
                              progress=progress)
    except KeyboardInterrupt:
        print(f"neuroedge: interrupted; the complete run files are in {out / 'runs'}, "
              f"what finished is in {out / 'results.csv'}; --resume runs the rest",
              file=sys.stderr)
        raise
    if not args.quiet:
        print(f"{len(res.simulated)} simulated, {len(res.resumed)} resumed, "
              f"{len(res.failed)} failed\ntable:   {res.table_path}\nsummary: {res.html_path}")
    failures = [(key, next(r["error"] for r in res.rows if r["key"] == key))
                for key in res.failed]
    total = len(res.simulated) + len(res.resumed) + len(res.failed)
    # a failed run has no run file: --resume runs it again
    return _report_failures(failures, total, "runs", res.table_path,
                            "; fix the cause and rerun with --resume")


def _cmd_search(spec, args) -> int:
    """A spec with a ``[search]`` table: an Optuna study (:mod:`deploy.search`)."""
    from deploy import search
    if args.dry_run:
        print("\n".join(search.dry_run_lines(spec)))
        return 0
    out = given_path(args.out, Path("sweeps") / spec.name, "--out")

    def progress(done, total, number, line):
        if not args.quiet:
            print(f"[{done}/{total}] trial {number}: {line}", file=sys.stderr, flush=True)

    try:
        res = search.run_search(spec, out, workers=args.workers, scheduler=args.scheduler,
                                resume=args.resume, force=args.force, serial=args.serial,
                                progress=progress)
    except KeyboardInterrupt:
        print(f"neuroedge: interrupted; the finished trials are in {out / search.STUDY_FILE} "
              f"and their run files in {out / 'runs'}; --resume continues the study",
              file=sys.stderr)
        raise
    if not args.quiet:
        front = ", ".join(str(n) for n in res.pareto)
        # a trial a killed session left running whose run file is whole is told from that
        # file, not run again: kept, as the trials the study had finished
        n_file = len(res.resumed)
        recovered = (f" ({n_file} recovered from {'its' if n_file == 1 else 'their'} run "
                     f"file{'' if n_file == 1 else 's'})" if n_file else "")
        print(f"{len(res.ran)} trials run, {res.kept + n_file} kept from the study"
              f"{recovered}, "
              f"{len(res.failed)} failed; Pareto front: trial(s) {front or 'none'}\n"
              f"study:   {res.study_path}\ntable:   {res.table_path}\n"
              f"summary: {res.html_path}")
    failures = [(f"trial {n}", next(r["error"] for r in res.rows if r["trial"] == n))
                for n in res.failed]
    total = len(res.ran) + len(res.resumed) + res.kept + len(res.failed)
    # a failed trial is finished in the study: --resume does not run it again
    return _report_failures(failures, total, "trials", res.table_path, "")


def _report_failures(failures: list[tuple[str, str]], total: int, what: str,
                     table: Path, hint: str) -> int:
    """Each failed run (or trial) and its error on stderr, then how many failed, --quiet
    or not (a failure is an error); the exit status: EXIT_FAILED when any failed."""
    for name, err in failures:
        print(f"failed: {name}: {err}", file=sys.stderr)
    if not failures:
        return 0
    print(f"neuroedge: {len(failures)} of {total} {what} failed (their errors are in "
          f"{table}){hint}", file=sys.stderr)
    return EXIT_FAILED
