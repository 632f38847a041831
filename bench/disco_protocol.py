"""DISCO under the paper's clustering protocol, and how much the card's figure owes its eps grid.

Issue 33: the room's headline (moons PCC(DISCO, ARI) 0.975 vs Silhouette -0.03) came from a
DBSCAN eps grid (deciles of the 5-NN distance) chosen after a first grid (quantiles 0.5 to
0.99, single linkage in the list) gave DISCO 0.19-0.36 against Silhouette 0.34-0.64, from an
uncommitted loop. This script scores, on the same points, with the same index code
(``models.disco.model.protocol``: DISCO counted on TorchDevice, mu = 5; Silhouette Euclidean
on the non-noise points; ARI with noise as one more class):

* ``paper``: the authors' clusterings (``models/disco/clusterers.py``): ground truth, DBSCAN
  with eps from the dc-tree for k = the true number of clusters, HDBSCAN (sklearn defaults),
  DPC, spectral, agglomerative (Ward), MeanShift, KMeans, random k, random 100;
* ``paper+single``: that list plus single linkage with k; ``paper+deciles`` /
  ``paper+first_grid``: plus DBSCAN at the five eps of each grid;
* ``card``: the card's 12 clusterings (``models/disco/data.clusterings``, deciles grid) and
  the variants ``card+single``, ``card_first_grid``, ``card_first_grid+single`` (the first
  look's list).

Per data set (moons, circles, blobs of varied density, aniso; n points + 10% uniform
background labelled -1) and list: PCC(index, ARI) per seed and mean +- std over seeds, and
on how many seeds DISCO's PCC exceeds Silhouette's. DBCV (``hdbscan`` package, extra
``bench``) is added when it is installed. Writes ``bench/out/disco_protocol.json``; last line
``RESULT {json}``.

    nice -n 10 python bench/disco_protocol.py               # n = 1000, 3 seeds (~6 CPU-min)
    python bench/disco_protocol.py --n 300 --seeds 1        # a smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
RESULT_FILE = OUT / "disco_protocol.json"
MARGIN = 0.05
"""The claim's rule per (data set, list): DISCO's PCC above Silhouette's on >= ceil(2n/3)
seeds and its mean PCC above Silhouette's by more than MARGIN."""
LABELS = {"paper": "paper's list (10)", "paper+single": "paper's + single linkage",
          "paper+deciles": "paper's + DBSCAN deciles grid",
          "paper+first_grid": "paper's + DBSCAN first grid",
          "card": "card's list (12, deciles grid)", "card+single": "card's + single linkage",
          "card_first_grid": "card's list, first grid",
          "card_first_grid+single": "card's list, first grid + single (the first look)"}


def lists(paper: dict, card: dict, first: dict) -> dict[str, list[str]]:
    """List name -> the (prefixed) clusterings it correlates over."""
    p = [f"paper/{k}" for k in paper]
    c = [f"card/{k}" for k in card if k != "single"]
    f = [f"first/{k}" for k in first if k != "single"]
    dec = [f"card/{k}" for k in card if k.startswith("dbscan_")]
    fdb = [f"first/{k}" for k in first if k.startswith("dbscan_")]
    return {"paper": p, "paper+single": p + ["card/single"], "paper+deciles": p + dec,
            "paper+first_grid": p + fdb, "card": c, "card+single": c + ["card/single"],
            "card_first_grid": f, "card_first_grid+single": f + ["card/single"]}


def one(ds: str, n: int, seed: int, with_dbcv: bool) -> dict:
    from models.disco import clusterers, data
    from models.disco.card import DiscoConfig
    from models.disco.model import pcc, protocol
    from sim.torch_engine.engine import TorchDevice
    cfg = DiscoConfig(n=n, seed=seed)
    ps = data.make(ds, n, cfg.noise_frac, seed)
    t0 = time.perf_counter()
    paper = clusterers.paper_clusterings(ps.x, ps.y, ps.k, seed, cfg.min_pts)
    card = data.clusterings(ps, seed, extra=True)
    first = data.clusterings(ps, seed, extra=True, eps_quantiles=data.FIRST_EPS_QUANTILES)
    t_cluster = time.perf_counter() - t0
    labs = {**{f"paper/{k}": v for k, v in paper.items()},
            **{f"card/{k}": v for k, v in card.items()},
            **{f"first/{k}": v for k, v in first.items() if k.startswith("dbscan_")}}
    extra = {}
    if with_dbcv:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from disco import dbcv
        extra["dbcv"] = dbcv
    res = protocol(ps, TorchDevice("a100"), cfg, extra=extra, labelings=labs)
    rows = res["rows"]
    # the first grid's list shares every clustering but DBSCAN with the card's
    for k in first:
        if not k.startswith("dbscan_"):
            rows[f"first/{k}"] = rows[f"card/{k}"]
    indices = ("disco", "silhouette", *extra)
    out = {"rows": {k: {m: v for m, v in r.items()} for k, r in rows.items()},
           "cluster_s": t_cluster, "pcc": {}}
    for name, members in lists(paper, card, first).items():
        ari = [rows[m]["ari"] for m in members]
        out["pcc"][name] = {i: pcc([rows[m][i] for m in members], ari)[0] for i in indices}
    return out


def holds(rec: dict) -> bool:
    """The rule (:data:`MARGIN`) on one (data set, list) record of the summary."""
    n = len(rec["disco"]["per_seed"])
    return bool(rec["disco_above_silhouette_seeds"] >= -(-2 * n // 3)
                and rec["disco"]["mean"] - rec["silhouette"]["mean"] > MARGIN)


def summarise(per: dict, indices) -> dict:
    """PCC mean, std, per seed, and DISCO-over-Silhouette seed count per (data set, list)."""
    out = {}
    for ds, seeds_out in per.items():
        out[ds] = {}
        for name in seeds_out[0]["pcc"]:
            rec = {}
            for i in indices:
                v = np.array([s["pcc"][name].get(i, np.nan) for s in seeds_out], float)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    rec[i] = {"mean": float(np.nanmean(v)), "std": float(np.nanstd(v)),
                              "per_seed": [round(float(a), 4) for a in v]}
            d = np.array(rec["disco"]["per_seed"])
            s = np.array(rec["silhouette"]["per_seed"])
            rec["disco_above_silhouette_seeds"] = int(np.sum(d > s))
            rec["holds"] = holds(rec)
            out[ds][name] = rec
    return out


def render(result: dict) -> str:
    """The markdown table the room README and bench/RESULTS.md show, from a results file:
    per list and data set PCC(DISCO, ARI) / PCC(Silhouette, ARI), mean over seeds, the
    seeds where DISCO's is higher, and the rule's verdict (+ holds, - does not)."""
    summ, n = result["summary"], result["seeds"]
    sets = list(summ)
    out = ["| clusterings | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for name, label in LABELS.items():
        cells = []
        for ds in sets:
            r = summ[ds][name]
            cells.append(f"{r['disco']['mean']:.3f} / {r['silhouette']['mean']:.3f} "
                         f"({r['disco_above_silhouette_seeds']}/{n} "
                         f"{'+' if holds(r) else '-'})")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def render_claim(result: dict) -> str:
    """The claims table's summary of the paper's list and the two sensitivities."""
    summ, n = result["summary"], result["seeds"]

    def pair(ds, name):
        r = summ[ds][name]
        return (f"{ds} {r['disco']['mean']:.2f} vs {r['silhouette']['mean']:.2f} "
                f"({r['disco_above_silhouette_seeds']}/{n})")
    return ("paper's clusterings: " + ", ".join(pair(ds, "paper") for ds in summ)
            + "; with single linkage added " + pair("moons", "paper+single")
            + "; the card's list with the first DBSCAN grid and single linkage "
            + pair("moons", "card_first_grid+single") + ", with the deciles grid "
            + pair("moons", "card"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--datasets", default="moons,circles,blobs,aniso")
    ap.add_argument("--out", type=Path, default=RESULT_FILE)
    ap.add_argument("--render", action="store_true",
                    help="print the tables of the results file --out and stop")
    args = ap.parse_args()
    if args.render:
        result = json.loads(args.out.read_text())
        print(render(result) + "\n\n" + render_claim(result))
        return
    import torch
    torch.set_num_threads(1)
    try:
        import hdbscan  # noqa: F401
        with_dbcv = True
    except ImportError:
        with_dbcv = False
    indices = ("disco", "silhouette", "dbcv") if with_dbcv else ("disco", "silhouette")
    t0 = time.perf_counter()
    per = {}
    for ds in args.datasets.split(","):
        per[ds] = []
        for seed in range(args.seeds):
            r = one(ds, args.n, seed, with_dbcv)
            per[ds].append(r)
            print(f"{ds} seed {seed}: " + ", ".join(
                f"{name} {v['disco']:.3f}/{v['silhouette']:.3f}" for name, v in r["pcc"].items()),
                flush=True)
    summ = summarise(per, indices)
    wall = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"n": args.n, "seeds": args.seeds, "indices": list(indices),
                               "summary": summ, "wall_s": wall,
                               "rows": {ds: [s["rows"] for s in v] for ds, v in per.items()}},
                              indent=1, default=float))
    tmp.replace(args.out)
    result = {"n": args.n, "seeds": args.seeds, "dbcv": with_dbcv, "wall_s": round(wall, 1)}
    for ds, by_list in summ.items():
        for name, rec in by_list.items():
            for i in indices:
                result[f"{ds}/{name}/{i}"] = round(rec[i]["mean"], 3)
            result[f"{ds}/{name}/disco_above_silhouette_seeds"] = \
                rec["disco_above_silhouette_seeds"]
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
