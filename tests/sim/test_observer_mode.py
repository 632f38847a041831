"""The engine's op observers do not pull in torch._dynamo (issue 36: torch imports it on the
first op under a TorchDispatchMode whose class does not opt out, 1-3 s of a short command's
start-up). Checked in a fresh process: this one may have imported dynamo already."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import torch
from sim.arena import trace_lifetimes
from sim.torch_engine import TorchDevice
net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU())
dev = TorchDevice("x86-avx2")
dev.run(dev.compile(net), torch.zeros(1, 1, 6, 6))
trace_lifetimes(net, (torch.zeros(1, 1, 6, 6),))
# one conv of 2 x 4 x 4 outputs x 9 taps = 288 MACs: the mode did count
print(dev.ledger.total_ops()["mac_fp32"], "torch._dynamo" in sys.modules)
"""


def test_counting_and_tracing_do_not_import_dynamo():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["288", "False"]
