"""Predicted against measured latency and energy of nine workloads on this machine
(issue 29 item 4): MLP at batch 1 and 1024, LeNet-5, ResNet-18 at batch 1 and 64, a
transformer encoder layer, a large fp32 GEMM and one Adam training step.

Made for a lent NVIDIA GPU priced on the ``h100`` profile (CUDA events through
``torch.cuda.synchronize`` around ``time.perf_counter``, NVML energy through pynvml); on a
machine without one it measures on CPU, says so, uses a smaller GEMM (``--gemm``) and smaller
ResNet images, and reports energy as not measurable unless RAPL is readable.

    python bench/gpu_measure.py                          # GPU: h100 profile, 8192^3 GEMM
    python bench/gpu_measure.py --profile x86-avx2 --repeats 3   # CPU

Ends with ``RESULT {json}``: one row per workload (predicted/measured latency and energy,
their ratios) and the median latency ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a shortcut (He et al. 2016, Fig. 2)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + self.short(x))


def resnet18(classes: int = 1000) -> nn.Module:
    """ResNet-18 (He et al. 2016, Table 1): [2, 2, 2, 2] basic blocks, 64-512 channels."""
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def lenet5() -> nn.Module:
    """LeNet-5 (LeCun et al. 1998) on 1x32x32 inputs, ReLU and max pooling."""
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120),
                         nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def workloads(gemm: int, image: int):
    """(name, factory, input shape)."""
    return [("mlp_b1", mlp, (1, 784)), ("mlp_b1024", mlp, (1024, 784)),
            ("lenet5_b1", lenet5, (1, 1, 32, 32)),
            ("resnet18_b1", resnet18, (1, 3, image, image)),
            ("resnet18_b64", resnet18, (64, 3, image, image)),
            # sequence first (batch_first=False): in eval mode a batch-first layer takes
            # torch's fused fast path, one op the torch engine does not count
            ("encoder_layer", lambda: nn.TransformerEncoderLayer(512, 8, 2048),
             (128, 1, 512)),
            (f"gemm_{gemm}", lambda: nn.Linear(gemm, gemm, bias=False), (gemm, gemm))]


def adam_step(profile: str, device: str, warmup: int, repeats: int) -> dict:
    """One Adam step of the MLP at batch 64, cross-entropy on random labels: predicted as
    the estimate's training scope (total minus the inference-only estimate)."""
    from deploy.estimate import estimate
    from deploy.measure import energy_meter, measure_energy, time_calls
    torch.manual_seed(0)
    net = mlp()
    shape = (64, 784)
    with_train = estimate(net, shape, profiles=profile, loss="auto",
                          optimizer=torch.optim.Adam).rows()[0]
    infer = estimate(net, shape, profiles=profile).rows()[0]
    net = net.to(device)
    opt = torch.optim.Adam(net.parameters())
    x = torch.randn(shape, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    sync = torch.cuda.synchronize if device == "cuda" else None

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()

    t = time_calls(step, warmup=warmup, repeats=repeats, sync=sync)
    meter, why = energy_meter(device)
    return {"workload": "adam_step_mlp_b64",
            "predicted_latency_s": with_train["latency_s"] - infer["latency_s"],
            "predicted_energy_j": with_train["total_j"] - infer["total_j"],
            "measured_latency_s": t.median_s, "latency_min_s": t.min_s,
            "latency_max_s": t.max_s,
            "measured_energy_j": measure_energy(step, meter, repeats=repeats, sync=sync)
            if meter else None,
            "energy_note": "" if meter else f"energy is not measurable here: {why}"}


def main() -> None:
    from deploy.measure import run_measure
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h100")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gemm", type=int, help="GEMM size (default 8192 on CUDA, 1024 on CPU)")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gemm = args.gemm or (8192 if device == "cuda" else 1024)
    image = 224 if device == "cuda" else 64
    print(f"device {device} ({torch.cuda.get_device_name() if device == 'cuda' else 'CPU'}); "
          f"profile {args.profile}; {args.warmup} warm-up, {args.repeats} repeats, median")
    if device == "cpu":
        print(f"no CUDA device: measured on CPU, GEMM {gemm}^3 instead of 8192^3, ResNet-18 "
              f"on {image}x{image} images instead of 224x224")
    rows = []
    for name, factory, shape in workloads(gemm, image):
        torch.manual_seed(0)
        r = run_measure(factory(), shape, args.profile, device=device, warmup=args.warmup,
                        repeats=args.repeats)
        rows.append({"workload": name, **{k: r[k] for k in (
            "predicted_latency_s", "predicted_energy_j", "measured_latency_s",
            "latency_min_s", "latency_max_s", "measured_energy_j", "energy_note")}})
    rows.append(adam_step(args.profile, device, args.warmup, args.repeats))
    print(f"{'workload':20} {'pred s':>10} {'meas s':>10} {'ratio':>7} {'pred J':>10} "
          f"{'meas J':>10} {'ratio':>7}")
    for r in rows:
        r["latency_ratio"] = r["predicted_latency_s"] / r["measured_latency_s"]
        e = r["measured_energy_j"]
        r["energy_ratio"] = r["predicted_energy_j"] / e if e else None
        print(f"{r['workload']:20} {r['predicted_latency_s']:10.3g} "
              f"{r['measured_latency_s']:10.3g} {r['latency_ratio']:7.3g} "
              f"{r['predicted_energy_j']:10.3g} {e if e else float('nan'):10.3g} "
              f"{r['energy_ratio'] if e else float('nan'):7.3g}")
    notes = {r["energy_note"] for r in rows if r["energy_note"]}
    for n in sorted(notes):
        print(n)
    print("RESULT " + json.dumps({
        "device": device, "profile": args.profile, "gemm": gemm, "image": image,
        "repeats": args.repeats, "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "latency_ratio_median": statistics.median(r["latency_ratio"] for r in rows),
        "rows": rows}))


if __name__ == "__main__":
    main()
