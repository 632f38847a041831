"""A 16-run sweep (mlp on digits: 2 hidden sizes x 2 learning rates x 4 seeds, priced on
a100 and jetson-orin) run serially, then on a Dask LocalCluster of 2 worker processes (one
thread each), in one run: the wall-time ratio, and whether the two tables are identical.

The cluster's wall time includes starting the cluster (its processes import torch); the
start alone is printed too. Serial runs also use one torch thread (as the workers do), so
the ratio is the gain from running two runs at once.

    PYTHONPATH=. .venv/bin/python bench/sweep.py [--workers 2] [--epochs 10]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# the repository root first, so `bench`, `sim`, `models` import from this checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deploy import sweep  # noqa: E402


def spec(epochs: int) -> dict:
    return {"name": "bench-sweep", "models": ["mlp"], "seeds": [0, 1, 2, 3],
            "profiles": ["a100", "jetson-orin"],
            "grid": {"epochs": [epochs], "hidden": [32, 64], "lr": [0.001, 0.003]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--epochs", type=int, default=10, help="epochs per run (default 10)")
    args = ap.parse_args()
    s = spec(args.epochs)
    runs = len(sweep.expand(s))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ser = sweep.run_sweep(s, Path(tmp) / "serial", serial=True)
        t_serial = time.perf_counter() - t0

        from distributed import Client, LocalCluster
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, env=dict(sweep.THREAD_ENV))
        with Client(cluster) as client:
            client.run(lambda: __import__("torch"))   # started = ready to train
        t_start = time.perf_counter() - t0
        par = sweep.run_sweep(s, Path(tmp) / "cluster", scheduler=cluster.scheduler_address)
        t_cluster = time.perf_counter() - t0
        cluster.close()
        same = (Path(tmp) / "serial" / "results.csv").read_text() == \
            (Path(tmp) / "cluster" / "results.csv").read_text()
    ok = sum(r["status"] == "ok" for r in ser.rows)
    print(f"{runs} runs x {len(s['profiles'])} profiles ({ok} ok rows serial, "
          f"{sum(r['status'] == 'ok' for r in par.rows)} on the cluster)")
    print(f"serial:              {t_serial:7.2f} s")
    print(f"{args.workers} workers (with start): {t_cluster:7.2f} s  "
          f"(cluster start {t_start:.2f} s)")
    print(f"speed-up:            {t_serial / t_cluster:7.2f}x  "
          f"(without the start {t_serial / (t_cluster - t_start):.2f}x)")
    print(f"tables identical:    {same}")
    res = {"runs": runs, "workers": args.workers, "epochs": args.epochs,
           "serial_s": round(t_serial, 3), "cluster_s": round(t_cluster, 3),
           "cluster_start_s": round(t_start, 3), "speedup": round(t_serial / t_cluster, 3),
           "speedup_without_start": round(t_serial / (t_cluster - t_start), 3),
           "tables_identical": same, "cores": os.cpu_count(), "load_avg_1m":
           round(os.getloadavg()[0], 2), "machine": platform.machine()}
    print("RESULT " + json.dumps(res))


if __name__ == "__main__":
    main()
