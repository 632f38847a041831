"""How long the command line takes to answer, from the shell (issue 36: "a second to answer").

Each command runs in a fresh process, as a user types it (``neuroedge --help``,
``neuroedge models``, ``neuroedge estimate lenet5.py:make --input-shape 1,1,28,28
--profiles jetson-orin,cortex-m7,a100``), together with two floors: an empty
``python -c pass`` and ``python -c "import torch"`` (no torch command can start faster).
The commands take turns ``--runs`` times, so load on a shared machine hits all of them
alike; the figure of each is the median wall time (and the median CPU time of the process,
user + system, beside it). Every run's output is checked (the usage text, a model's name,
the three profiles' rows and the LeNet-5's MACs), so a command that failed fast cannot
pass for a quick one.

The machine's load (``os.getloadavg``) is printed before and after: the issue's target,
1.5 s for the estimate, is for a quiet machine, and on a loaded one the wall time grows
with the load while the CPU time grows far less. One more run of the estimate under
``python -X importtime`` gives where its imports go (self time summed per top-level
package) and which optional packages it loaded (it should load none of h5py, matplotlib,
numba, brian2, onnx, scipy, sklearn, transformers, nir).

The commands run this checkout's code: ``python -c "from deploy.cli import main; ..."``
(what the ``neuroedge`` console script runs) with the repository root on PYTHONPATH.
``--baseline-root DIR`` also times the estimate of another checkout (e.g. ``git archive``
of an older commit unpacked in DIR) in the same turns, as ``estimate_lenet_baseline``.

    .venv/bin/python bench/cli_latency.py [--runs 7] [--baseline-root DIR]

Last line: ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_ESTIMATE_S = 1.5
PROFILES = "jetson-orin,cortex-m7,a100"
OPTIONAL = ("h5py", "matplotlib", "numba", "brian2", "onnx", "onnxruntime", "scipy",
            "sklearn", "transformers", "nir", "nirtorch", "pandas", "sympy")

LENET5 = '''import torch.nn as nn


def make():
    """LeNet-5 (LeCun et al. 1998) with ReLU: 28 x 28 input padded to the paper's 32 x 32."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))
'''
# LeNet-5's MACs for one 28 x 28 sample: conv1 6 x 28 x 28 x 25 = 117,600; conv2 16 x 10 x 10
# x 150 = 240,000; fc 400 x 120 + 120 x 84 + 84 x 10 = 48,000 + 10,080 + 840 = 58,920;
# total 416,520 (the per-layer table's totals row prints it with thousands separators)
LENET5_MACS = "416,520"

CLI = "import sys; from deploy.cli import main; sys.exit(main())"


def _commands(model: str) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (argv, strings its stdout must hold)."""
    py = sys.executable
    return {
        "python": ([py, "-c", "pass"], []),
        "import_torch": ([py, "-c", "import torch"], []),
        "help": ([py, "-c", CLI, "--help"], ["usage:", "estimate"]),
        "models": ([py, "-c", CLI, "models"], ["diffpc"]),
        "estimate_lenet": ([py, "-c", CLI, "estimate", f"{model}:make", "--input-shape",
                            "1,1,28,28", "--profiles", PROFILES],
                           [*PROFILES.split(","), LENET5_MACS]),
    }


def _run(argv: list[str], cwd: Path, env: dict, expect: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run; fails when the output lacks ``expect``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0 or any(s not in out.stdout for s in expect):
        raise RuntimeError(f"bench: {' '.join(argv[2:])!r} failed (exit {out.returncode}) or "
                           f"printed none of {expect}: {out.stderr[-500:]}")
    return wall, cpu


def import_breakdown(argv: list[str], cwd: Path, env: dict, top: int = 8) -> dict:
    """Self import time (s) per top-level package of one run under ``-X importtime``, the
    ``top`` largest, and the optional packages it loaded."""
    out = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True)
    per: dict[str, float] = {}
    loaded = set()
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|")
        name = name.strip()
        root = name.split(".")[0]
        per[root] = per.get(root, 0.0) + int(self_us) / 1e6
        loaded.add(root)
    biggest = dict(sorted(per.items(), key=lambda kv: -kv[1])[:top])
    return {"self_s_by_package": {k: round(v, 3) for k, v in biggest.items()},
            "total_s": round(sum(per.values()), 3),
            "optional_loaded": sorted(loaded & set(OPTIONAL))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="turns of every command (default 7)")
    ap.add_argument("--baseline-root", type=Path,
                    help="another checkout whose estimate is timed in the same turns")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    envs = {}
    if args.baseline_root is not None:
        envs["estimate_lenet_baseline"] = dict(env, PYTHONPATH=str(args.baseline_root.resolve()))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "lenet5.py").write_text(LENET5)
        commands = _commands("lenet5.py")
        if envs:
            commands["estimate_lenet_baseline"] = commands["estimate_lenet"]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, expect) in commands.items():
                times[name].append(_run(cmd, tmp, envs.get(name, env), expect))
        breakdown = import_breakdown(commands["estimate_lenet"][0], tmp, env)
    load_after = os.getloadavg()
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; median of {args.runs} runs each, taking turns; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'command':16s} {'wall s':>7s} {'CPU s':>7s}")
    for name in commands:
        print(f"{name:16s} {wall[name]:7.3f} {cpu[name]:7.3f}")
    est = wall["estimate_lenet"]
    print(f"estimate: {est:.2f} s wall against the target {TARGET_ESTIMATE_S} s "
          f"({'met' if est <= TARGET_ESTIMATE_S else 'not met'} on this run's load); "
          f"{abs(est - wall['import_torch']):.2f} s "
          f"{'above' if est >= wall['import_torch'] else 'below'} importing torch alone")
    print("estimate's imports (self s by package, -X importtime): "
          + ", ".join(f"{k} {v:.3f}" for k, v in breakdown["self_s_by_package"].items())
          + f"; optional packages loaded: {breakdown['optional_loaded'] or 'none'}")
    result = {"help_s": wall["help"], "models_s": wall["models"],
              "estimate_lenet_s": est,
              "estimate_lenet_baseline_s": wall.get("estimate_lenet_baseline"),
              "import_torch_s": wall["import_torch"],
              "python_s": wall["python"], "cpu_s": cpu, "runs": args.runs,
              "target_estimate_s": TARGET_ESTIMATE_S, "met": est <= TARGET_ESTIMATE_S,
              "loadavg_before": load_before, "loadavg_after": load_after,
              "cpus": os.cpu_count(), "imports": breakdown}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
