"""Convergence of Tsetlin machines vs the ICLR 2026 theorems: fraction absorbed and updates needed.

For each setting (operator, k bits, irrelevant bits q, clauses m, target T, label noise) the
single-output positive-clause TM trains on uniform draws of the operator's patterns until
its state is absorbing (checked exactly every 100 updates) or the budget runs out, over many
seeds. Prints the table (paper's prediction vs simulation), writes a plot and the JSON.

    python bench/tsetlin_convergence.py [--full] [--out bench/tsetlin_convergence.png]

The table is the card's experiment (``models.runner.study("tsetlin")``), which also runs
Noisy XOR over a few seeds. Its seed loops are not a sweep (``deploy.sweep``): each seed of
a setting is a short training of the bare convergence machine inside the study, not a
runner call of the card, so there is no run to sweep, and the study reports the spread
over seeds itself (fraction absorbed, median updates); the Noisy XOR seeds are card runs,
but they belong to the study (``neuroedge experiment tsetlin``), which this bench prints.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import runner  # noqa: E402


def _fmt(v, pct=False):
    if v is None:
        return "-"
    return f"{100 * v:.0f}%" if pct else f"{v:.0f}"


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['op']} k={r['k']} q={r['irrelevant']} m={r['m']} T={r['T']}"
              + (f" noise={r['noise']}" if r["noise"] else "") for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 0.35 * len(rows) + 1.5), sharey=True)
    y = range(len(rows))
    colors = ["tab:green" if r["predicted"] == "absorb" else "tab:red" for r in rows]
    a1.barh(y, [r["absorbed"] for r in rows], color=colors)
    a1.set_yticks(list(y), labels, fontsize=8)
    a1.invert_yaxis()
    a1.set_xlabel("fraction of seeds absorbed (green: theorem says absorb, red: not)")
    a2.barh(y, [r["median_updates"] or 0 for r in rows], color=colors)
    a2.set_xscale("symlog", linthresh=100)
    a2.set_xlabel("median updates to the absorbing state (absorbed seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="40 seeds, 400k updates, more settings")
    ap.add_argument("--out", default=str(Path(__file__).with_name("tsetlin_convergence.png")))
    args = ap.parse_args()
    t0 = time.time()
    st = runner.study("tsetlin", preset="full" if args.full else "quick")
    res = st.summary
    rows = res["rows"]
    print(f"budget {res['budget_updates']} updates, {res['seeds']} seeds per setting, "
          f"s = 3.9, N = 128, positive clauses only; {time.time() - t0:.1f} s")
    head = ("op", "k", "q", "m", "T", "noise", "paper", "absorbed", "median upd", "computes op",
            "exact form", "agrees")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([r["op"], str(r["k"]), str(r["irrelevant"]), str(r["m"]), str(r["T"]),
                          str(r["noise"]), r["predicted"], _fmt(r["absorbed"], True),
                          _fmt(r["median_updates"]), _fmt(r["computes_op"], True),
                          _fmt(r["exact_form"], True), "yes" if r["agrees"] else "NO"]))
    plot(rows, args.out)
    print(f"plot: {args.out}")
    print(f"Noisy XOR: {res['noisy_xor_seeds_at_100']} of {len(res['noisy_xor_accuracy'])} "
          f"seeds at 100% (mean {100 * res['noisy_xor_mean']:.1f}%)")
    agree = sum(r["agrees"] for r in rows)
    print("RESULT " + json.dumps({"bench": "tsetlin_convergence", "settings": len(rows),
                                  "agree_with_paper": agree, "budget": res["budget_updates"],
                                  "seeds": res["seeds"], "rows": rows,
                                  "noisy_xor_accuracy": res["noisy_xor_accuracy"]}))


if __name__ == "__main__":
    main()
