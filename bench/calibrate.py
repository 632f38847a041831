"""The fitted numbers of the microcontroller profiles, recomputed from the validation table's
calibration rows (issue 29 item 3): the energy per cycle of each part and the cycles per int8
MAC of each software stack (the method is in ``sim/stack_fit.py``). Held-out rows are never
read for a fit.

Usage: ``python bench/calibrate.py`` prints every fitted number with its row and arithmetic
and whether the shipped profile holds it; exits 1 when one differs (``--check`` prints only the
differences). The shipped values are what this prints: ``tests/sim/test_stack_fit.py`` checks
them. Ends with ``RESULT {json}``: the fits and the count of mismatches.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from sim.stack_fit import fit_all, shipped_value
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print only what differs")
    args = ap.parse_args(argv)
    fits = fit_all()
    bad = 0
    for f in fits:
        held = shipped_value(f)
        ok = held == f.value
        bad += not ok
        if not args.check or not ok:
            print(f"{f.profile:10} {f.key:40} {f.value:>9g}  shipped {held}  "
                  f"{'ok' if ok else 'DIFFERS'}\n    row {f.row}: {f.derivation}")
    print("RESULT " + json.dumps({"fits": [{"profile": f.profile, "key": f.key,
                                            "value": f.value, "row": f.row} for f in fits],
                                  "mismatches": bad}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
