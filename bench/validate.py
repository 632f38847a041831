"""Predicted against measured energy (and latency) for the published measurements in
hw_profiles/measured/validation.toml.

Every row is rebuilt with the project's engines and priced on its profile by
``sim.validation.validate()``; nothing is fitted to the table. Rows marked ``calibration``
measure what some profile number was derived from and are summarised apart from the
``held-out`` rows. Rows that cannot be predicted say why (``not rebuildable``: a published
number the workload needs is missing).

Usage: ``python bench/validate.py [--only ID,ID] [--json PATH]``. The last line is
``RESULT {json}``: row count, kinds, and median / max |log10(predicted / measured)| overall
and per group (a factor f off is log10 f: 3x = 0.477, 1.5x = 0.176), and over the held-out
rows ``heldout_rows``, ``kinds`` (their kinds), ``energy_median_factor``,
``energy_worst_factor``, ``latency_median_factor``, ``latency_worst_factor`` (factor =
max(r, 1/r) of predicted / measured), per device kind in ``heldout_by_kind``, per profile and
stack in ``heldout_by_stack``, per profile in ``heldout_by_profile``; the calibration rows
apart in ``calibration_rows`` and ``calibration_factors`` (they set fitted profile numbers:
bench/calibrate.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


HEADLINE = ("heldout_rows", "kinds", "calibration_rows", "energy_median_factor",
            "energy_worst_factor", "latency_median_factor", "latency_worst_factor")
"""The held-out figures the summary file keeps (README.md and docs quote them from it)."""


def main(argv=None) -> int:
    from sim.validation import format_rows, summarise, validate
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated row ids")
    ap.add_argument("--json", default="", help="also write the rows and summary here")
    ap.add_argument("--write-summary", action="store_true",
                    help="rewrite hw_profiles/measured/validation_summary.json (the per-kind "
                         "errors every report shows); needs all rows")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    # every refusal before the rows are computed (a full run takes a minute)
    if args.write_summary and only:
        raise SystemExit("--write-summary needs every row (leave out --only)")
    from deploy.errors import OutputError
    from deploy.outputs import check_output
    from hw_profiles.errors import NeuroedgeError
    from sim.validation import check_ids
    try:
        if only is not None:
            check_ids(only)
        if args.json:
            # replaced if it exists, as before; missing folders are made (store)
            check_output(args.json, force=True, option="--json")
    except (NeuroedgeError, OutputError) as exc:
        raise SystemExit(f"validate.py: {exc}") from None
    rows = validate(only=only)
    print(format_rows(rows))
    summary = summarise(rows)
    if args.write_summary:
        from deploy.outputs import write_text
        from hw_profiles.validation import SUMMARY_PATH
        from sim.validation import heldout_factors, kind_errors
        held = heldout_factors(rows)
        doc = {"heldout": {k: held[k] for k in HEADLINE}, "kinds": kind_errors(rows),
               "device_kinds": held["device_kind_factors"],
               "kind_factors": held["kind_factors"], "stacks": held["stack_factors"],
               "profiles": held["profile_factors"],
               "profile_device_kinds": held["profile_device_kinds"]}
        write_text(SUMMARY_PATH, json.dumps(doc, indent=1) + "\n", force=True)
        print(f"wrote {SUMMARY_PATH}")
    if args.json:
        # written to a sibling and renamed: never half a file
        from bench._results import store
        store(args.json, {"rows": [r.to_dict() for r in rows], "summary": summary})
    from sim.validation import factor_stats, heldout_factors
    held = heldout_factors(rows)
    summary.update({k: v for k, v in held.items()
                    if k not in ("kind_factors", "device_kind_factors", "stack_factors",
                                 "profile_factors", "profile_device_kinds")})
    # the profile kinds of summarise() give way to the device kinds of the held-out rows
    summary["heldout_by_kind"] = held["device_kind_factors"]
    summary["heldout_by_stack"] = held["stack_factors"]
    summary["heldout_by_profile"] = held["profile_factors"]
    summary["calibration_factors"] = factor_stats([r for r in rows if r.group == "calibration"])
    print("RESULT " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
