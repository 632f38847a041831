"""DISCO against DBCV and Silhouette: correlation with ARI over clusterings, disagreements, cost.

The paper's claim (ICLR 2026, arXiv 2503.00127, Table 4 of the authors' repository): over the
clusterings of a data set, DISCO correlates with ARI (Pearson x 100: 3-spiral 89.16, complex8
95.71) where Silhouette does not (3-spiral -2.43) and DBCV is undefined or weaker. Here, in
miniature (``models/disco/data.py``): four procedural 2-D sets (moons, circles, blobs of
varied density, aniso) with 10% uniform background labelled noise, n points, 3 seeds, the
digest's clusterings (ground truth, truth with noise merged, DBSCAN at 5 eps, HDBSCAN,
KMeans, Ward, random) plus single linkage reported apart (``--no-single`` drops it).

Indices: DISCO (ours, counted on TorchDevice, mu = 5), DBCV (the ``hdbscan`` package's
``validity_index``; NaN where it raises, e.g. on singleton clusters), Silhouette (sklearn,
Euclidean, non-noise points). Per data set: PCC(index, ARI) mean +- std over seeds (an index
is left out on clusterings where it is undefined), the clustering each index ranks first,
pairwise concordance with ARI, and named disagreement cases. Cost: DISCO at 2K/5K/10K/20K
points (each size in its own process, one torch thread: wall seconds and peak RSS over the
process's baseline, glibc's mmap threshold fixed at 1 MiB so freed blocks leave the RSS),
the slope of log time against log n, the A100-priced seconds of its ledger; DBCV and
Silhouette timed up to 5K (DBCV's dense per-cluster matrices grow past that).
``clustpy`` (which ships a DISCO) is not used: the only offline version is 0.0.3, without it.

Writes ``bench/disco.png`` (PCC per set and index, time and memory against n, pointwise
DISCO scores of a moons ground truth) and ``bench/out/disco.json`` (the quality part also to
``bench/out/disco_quality.json``: ``--reuse-quality``, ``--replot``); last line
``RESULT {json}``.

    nice -n 5 python bench/disco.py                      # n = 1000, 3 seeds, 2K..20K (~6 min)
    python bench/disco.py --n 500 --seeds 1 --sizes 2000  # a smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
INDICES = ("disco", "dbcv", "silhouette")


def dbcv(x, labels) -> float:
    """hdbscan's DBCV; NaN where it is undefined (it raises on singleton clusters)."""
    from hdbscan.validity import validity_index
    if len(np.unique(labels[labels != -1])) < 2:
        return float("nan")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = float(validity_index(x.astype(np.float64), labels))
    except (ValueError, IndexError, ZeroDivisionError):
        return float("nan")
    return v if np.isfinite(v) else float("nan")


def concordance(index, ari, margin=0.2) -> tuple[float, int]:
    """Share of clustering pairs whose ARIs differ by > ``margin`` that the index orders the
    same way (pairs where the index is undefined are left out), and how many pairs."""
    index, ari = np.asarray(index, float), np.asarray(ari, float)
    good = total = 0
    for i in range(len(ari)):
        for j in range(i + 1, len(ari)):
            if abs(ari[i] - ari[j]) > margin and np.isfinite(index[i]) and np.isfinite(index[j]):
                total += 1
                good += np.sign(index[i] - index[j]) == np.sign(ari[i] - ari[j])
    return (good / total if total else float("nan")), total


def quality(n: int, seeds: int, single: bool) -> dict:
    from models.disco import data
    from models.disco.card import DiscoConfig
    from models.disco.model import pcc, protocol
    from sim.torch_engine.engine import TorchDevice
    per, cases, example = {}, {}, None
    for ds in data.DATASETS:
        rec = {f"pcc_{k}": [] for k in INDICES}
        rec.update({f"pcc_{k}_digest": [] for k in INDICES})
        rec.update({f"conc_{k}": [] for k in INDICES})
        rec.update({f"top_{k}": [] for k in INDICES})
        rows_all = []
        for seed in range(seeds):
            cfg = DiscoConfig(n=n, seed=seed)
            ps = data.make(ds, n, cfg.noise_frac, seed)
            labs = data.clusterings(ps, seed, extra=single)
            res = protocol(ps, TorchDevice("a100"), cfg, extra={"dbcv": dbcv}, labelings=labs)
            rows = res["rows"]
            rows_all.append(rows)
            ari = [r["ari"] for r in rows.values()]
            digest = [k for k in rows if k != "single"]
            for key in INDICES:
                vals = [r[key] for r in rows.values()]
                rec[f"pcc_{key}"].append(res[f"pcc_{key}"])
                rec[f"pcc_{key}_digest"].append(pcc([rows[k][key] for k in digest],
                                                    [rows[k]["ari"] for k in digest])[0])
                rec[f"conc_{key}"].append(concordance(vals, ari)[0])
                rec[f"top_{key}"].append(res[f"top_{key}"])
            if ds == "moons" and seed == 0:
                example = {"x": ps.x.tolist(), "score": res["pointwise"]["gt"].tolist(),
                           "kmeans": res["pointwise"]["kmeans"].tolist()}
        summ = {}
        for key, vals in rec.items():
            if key.startswith("top_"):
                summ[key] = vals
            else:
                summ[key] = {"mean": float(np.nanmean(vals)), "std": float(np.nanstd(vals))}
        per[ds] = summ
        names = list(rows_all[0])
        warnings.simplefilter("ignore", RuntimeWarning)   # nanmean of an index never defined
        cases[ds] = {name: {k: float(np.nanmean([r[name][k] for r in rows_all]))
                            for k in ("ari", *INDICES)} for name in names}
    return {"per_dataset": per, "cases": cases, "example": example}


def disagreements(cases: dict) -> list[dict]:
    """Named pairs (a, b) with a better by ARI: which indices order them the other way."""
    out = []
    for ds, rows in cases.items():
        for a, b in (("gt", "gt_noise_merged"), ("gt", "kmeans"), ("gt", "single"),
                     ("hdbscan", "kmeans"), ("gt", "dbscan_5")):
            if a not in rows or b not in rows:
                continue
            ra, rb = rows[a], rows[b]
            wrong = [k for k in INDICES if np.isfinite(ra[k]) and np.isfinite(rb[k])
                     and np.sign(ra[k] - rb[k]) != np.sign(ra["ari"] - rb["ari"])]
            out.append({"dataset": ds, "pair": f"{a} vs {b}", "ari": [ra["ari"], rb["ari"]],
                        **{k: [ra[k], rb[k]] for k in INDICES}, "reversed_by": wrong})
    return out


class PeakRSS:
    """Samples this process's resident set (``/proc/self/statm``) every 2 ms in a thread:
    ``peak`` is the largest seen since ``start``, ``base`` the size at ``start`` (torch's CPU
    allocator keeps no statistics, and ``ru_maxrss`` is the process's lifetime peak)."""

    def __init__(self):
        import os
        import threading
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.base = self.peak = self.now()

    def now(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self._page

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.now())
            self._stop.wait(0.002)

    def __enter__(self):
        self.base = self.peak = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())


def one_size(n: int, others: bool) -> dict:
    """Time and peak memory of DISCO (and DBCV/Silhouette if ``others``) at n points."""
    import torch

    from models.disco import data
    from models.disco.model import dc_structure, disco_samples
    from sim.torch_engine.engine import TorchDevice
    torch.set_num_threads(1)
    ps = data.make("moons", n, 0.1, 0)
    dev = TorchDevice("a100")
    dc_structure(ps.x[:50], 5, dev)                  # numba load / compile outside the clock
    dev = TorchDevice("a100")
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        dc = dc_structure(ps.x, 5, dev)
        t1 = time.perf_counter()
        disco_samples(ps.x, ps.y, dev, dc=dc)
        t2 = time.perf_counter()
    rep = dev.ledger.price(dev.profile)
    out = {"n": n, "disco_s": t2 - t0, "dc_s": t1 - t0, "index_s": t2 - t1,
           "disco_peak_bytes": mem.peak - mem.base, "dense_n2_bytes": 8 * n * n,
           "a100_priced_s": float(rep.total_latency_s), "a100_priced_j": float(rep.total_j)}
    if others:
        from models.disco.experiment import silhouette
        with PeakRSS() as mem:
            t = time.perf_counter()
            dbcv(ps.x, ps.y)
            out["dbcv_s"] = time.perf_counter() - t
        out["dbcv_peak_bytes"] = mem.peak - mem.base
        with PeakRSS() as mem:
            t = time.perf_counter()
            silhouette(ps.x, ps.y)
            out["silhouette_s"] = time.perf_counter() - t
        out["silhouette_peak_bytes"] = mem.peak - mem.base
    return out


def scaling(sizes, others_upto: int) -> dict:
    rows = []
    for n in sizes:
        cmd = [sys.executable, __file__, "--one", str(n)] + (["--others"] if n <= others_upto
                                                            else [])
        # glibc's dynamic mmap threshold keeps freed 16 MB blocks on the heap, so RSS would
        # grow towards n^2 bytes though at most a few blocks are alive; a fixed threshold
        # returns each block to the OS when torch frees it (the same for DBCV, Silhouette)
        env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}
        res = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
        print(f"  n={n}: {rows[-1]}", flush=True)
    ns = np.array([r["n"] for r in rows], float)
    out = {"rows": rows}
    if len(ns) >= 2:
        for key in ("disco_s", "dc_s", "index_s", "disco_peak_bytes"):
            v = np.array([max(r[key], 1e-9) for r in rows], float)
            out[f"slope_{key}"] = float(np.polyfit(np.log(ns), np.log(v), 1)[0])
    return out


def figure(q: dict, s: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(21, 4.6))
    ax = axes[0]
    dss = list(q["per_dataset"])
    w = 0.27
    for i, key in enumerate(INDICES):
        m = [q["per_dataset"][d][f"pcc_{key}_digest"]["mean"] for d in dss]
        e = [q["per_dataset"][d][f"pcc_{key}_digest"]["std"] for d in dss]
        ax.bar(np.arange(len(dss)) + (i - 1) * w, m, w, yerr=e, capsize=3, label=key)
    with_single = [q["per_dataset"][d]["pcc_disco"]["mean"] for d in dss]
    ax.plot(np.arange(len(dss)) - w, with_single, "kv", label="disco, single linkage added")
    ax.set_xticks(range(len(dss)), dss)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_ylabel("PCC(index, ARI) over clusterings")
    ax.set_title("correlation with ARI (mean +- std over seeds)")
    ax.legend(fontsize=8)
    ax = axes[1]
    ns = [r["n"] for r in s["rows"]]
    ax.loglog(ns, [r["disco_s"] for r in s["rows"]], "o-", label="DISCO s (1 thread)")
    ax.loglog(ns, [r["dc_s"] for r in s["rows"]], "s--", label="  of which dc structure")
    for key, lab in (("dbcv_s", "DBCV (hdbscan) s"), ("silhouette_s", "Silhouette s")):
        pts = [(r["n"], r[key]) for r in s["rows"] if key in r]
        if pts:
            ax.loglog(*zip(*pts, strict=True), "^:", label=lab)
    ax.set_xlabel("points n")
    ax.set_ylabel("seconds")
    ax.set_title(f"time: DISCO slope {s.get('slope_disco_s', float('nan')):.2f} (log-log)")
    ax.legend(loc="upper left", fontsize=8)
    ax = axes[2]
    ax.loglog(ns, [max(r["disco_peak_bytes"], 1) / 2**20 for r in s["rows"]], "o-",
              label=f"DISCO peak RSS (slope {s.get('slope_disco_peak_bytes', float('nan')):.2f})")
    ax.loglog(ns, [r["dense_n2_bytes"] / 2**20 for r in s["rows"]], "k--",
              label="one dense n x n float64 matrix")
    for key, lab in (("dbcv_peak_bytes", "DBCV peak RSS"),
                     ("silhouette_peak_bytes", "Silhouette peak RSS")):
        pts = [(r["n"], max(r[key], 1) / 2**20) for r in s["rows"] if key in r]
        if pts:
            ax.loglog(*zip(*pts, strict=True), "^:", label=lab)
    ax.set_xlabel("points n")
    ax.set_ylabel("MiB")
    ax.set_title("memory: chunked rows keep it flat")
    ax.legend(fontsize=8)
    ax = axes[3]
    ex = q["example"]
    x, sc = np.asarray(ex["x"]), np.asarray(ex["score"])
    lim = float(np.abs(sc).max())
    p = ax.scatter(x[:, 0], x[:, 1], c=sc, cmap="RdBu", vmin=-lim, vmax=lim, s=7)
    fig.colorbar(p, ax=ax, label="DISCO per point")
    ax.set_title(f"moons ground truth, pointwise DISCO (mean {sc.mean():.3f})")
    ax.set_aspect("equal", adjustable="datalim")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def summary(q: dict, s: dict, dis: list, n: int, seeds: int) -> dict:
    """The RESULT line: PCCs on the digest's clusterings (``_with_single``: single linkage
    added), concordance, cost per size, slopes, reversals among the named pairs."""
    result = {"n": n, "seeds": seeds}
    for ds, summ in q["per_dataset"].items():
        for key in INDICES:
            result[f"{ds}_pcc_{key}"] = round(summ[f"pcc_{key}_digest"]["mean"], 3)
            result[f"{ds}_pcc_{key}_std"] = round(summ[f"pcc_{key}_digest"]["std"], 3)
            result[f"{ds}_pcc_{key}_with_single"] = round(summ[f"pcc_{key}"]["mean"], 3)
            result[f"{ds}_conc_{key}"] = round(summ[f"conc_{key}"]["mean"], 3)
    for r in s["rows"]:
        result[f"disco_s_{r['n']}"] = round(r["disco_s"], 2)
        result[f"disco_mib_{r['n']}"] = round(r["disco_peak_bytes"] / 2**20, 1)
        result[f"disco_a100_priced_s_{r['n']}"] = round(r["a100_priced_s"], 4)
        for key in ("dbcv", "silhouette"):
            if f"{key}_s" in r:
                result[f"{key}_s_{r['n']}"] = round(r[f"{key}_s"], 2)
                result[f"{key}_mib_{r['n']}"] = round(r[f"{key}_peak_bytes"] / 2**20, 1)
    for key in ("slope_disco_s", "slope_dc_s", "slope_index_s", "slope_disco_peak_bytes"):
        if key in s:
            result[key] = round(s[key], 2)
    result["reversals"] = {k: sum(k in d["reversed_by"] for d in dis) for k in INDICES}
    result["reversals_without_single"] = {
        k: sum(k in d["reversed_by"] for d in dis if "single" not in d["pair"])
        for k in INDICES}
    result["pairs"] = len(dis)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sizes", default="2000,5000,10000,20000")
    ap.add_argument("--others-upto", type=int, default=5000)
    ap.add_argument("--no-single", action="store_true")
    ap.add_argument("--reuse-quality", action="store_true",
                    help="read the quality part from bench/out/disco_quality.json")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the picture from bench/out/disco_quality.json and disco.json")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--others", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--plot", default=str(Path(__file__).with_suffix(".png")))
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one_size(a.one, a.others)))
        return
    cache = OUT / "disco_quality.json"
    if a.replot:
        saved = json.loads((OUT / "disco.json").read_text())
        q = json.loads(cache.read_text())
        figure(q, saved["scaling"], Path(a.plot))
        print("RESULT " + json.dumps(summary(q, saved["scaling"], saved["disagreements"],
                                             saved["n"], saved["seeds"])))
        return
    t = time.time()
    if a.reuse_quality and cache.exists():
        q = json.loads(cache.read_text())
    else:
        q = quality(a.n, a.seeds, not a.no_single)
        OUT.mkdir(exist_ok=True)
        cache.write_text(json.dumps(q))
    print(f"quality: {time.time() - t:.0f} s", flush=True)
    s = scaling([int(v) for v in a.sizes.split(",") if v], a.others_upto)
    figure(q, s, Path(a.plot))
    dis = disagreements(q["cases"])
    for d in dis:
        print(f"  {d['dataset']:8s} {d['pair']:22s} ARI {d['ari'][0]:.2f}/{d['ari'][1]:.2f} "
              + " ".join(f"{k} {d[k][0]:.2f}/{d[k][1]:.2f}" for k in INDICES)
              + f"  reversed by: {', '.join(d['reversed_by']) or '-'}")
    OUT.mkdir(exist_ok=True)
    full = {"n": a.n, "seeds": a.seeds, "quality": {k: v for k, v in q.items() if k != "example"},
            "disagreements": dis, "scaling": s}
    (OUT / "disco.json").write_text(json.dumps(full, indent=1))
    print("RESULT " + json.dumps(summary(q, s, dis, a.n, a.seeds)))




if __name__ == "__main__":
    main()
