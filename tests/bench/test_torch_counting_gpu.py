"""bench/torch_counting_gpu.py runs from the repository root as documented and passes its
own checks (every side ran every step; replay's ops and bytes equal full counting's; the
timed replay turn replayed every step); on a machine without CUDA it says so and refuses to
store its figures as the GPU's."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _run(*args):
    return subprocess.run([sys.executable, "bench/torch_counting_gpu.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_quick_run_passes_its_checks():
    proc = _run("--quick", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1].removeprefix("RESULT "))
    assert result["cuda"] == torch.cuda.is_available()
    mlp, resnet = result["workloads"]["mlp"], result["workloads"]["resnet18"]
    # --quick: 512 MLP samples at batch 128 = 4 steps; 3 ResNet-18 steps of 64
    assert (mlp["steps"], resnet["steps"], resnet["batch"]) == (4, 3, 64)
    for wl in ("mlp", "resnet18"):
        r = result["workloads"][wl]
        assert result[f"overhead_{wl}"] == r["replay_s"] / r["bare_s"] > 0
        assert result[f"overhead_full_{wl}"] == r["full_s"] / r["bare_s"] > 0
    if not result["cuda"]:
        assert "no CUDA device: ran on the CPU" in proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU --write stores the figures")
def test_write_without_a_gpu_is_refused():
    proc = _run("--quick", "--write")
    assert proc.returncode == 2
    assert "--write stores the GPU's figures; this machine has no CUDA device" in proc.stderr
    assert not (ROOT / "bench/out/torch_counting_gpu.json").exists()
