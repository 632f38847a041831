"""Int8 C export (issue 31): accuracy, predicted cost and instructions executed on QEMU.

For two CNNs of our own, trained here in fp32 (digits: a residual depthwise CNN on scikit-
learn's 8x8 digits; fashion: a small CNN on Fashion-MNIST 28x28, when the files are
installed), the script

1. exports each with ``deploy.c_int8.export.export_int8`` (calibration: 1,000 training
   samples; accuracy: the data set's test split, fp32 torch against the int8 reference);
2. checks the C bit-exact on host gcc and on QEMU's Cortex-M4 board (``mps2-an386``);
3. builds the model's objects for the Cortex-M4 and compares flash (text + data) and the
   arena (bss) with the export's prediction (``make size``);
4. counts the instructions each golden inference executes on QEMU (``make icount``:
   ``-icount shift=0`` and SysTick, calibrated on a loop of known length) and sets them
   beside the cycles the ``cortex-m4`` profile predicts (its peak cycle counts: an int8
   MAC at half a cycle, SMLAD) and the energy of those instructions at the profile's
   energy per cycle (a lower bound: a Cortex-M4 retires at most one instruction a cycle);
   for the digits model the count is checked a second way, instruction by instruction
   (``make icount`` image under ``qemu -singlestep -d exec``, lines inside the model's
   functions), and each layer's instructions (``make icount-layers``) are set beside its
   predicted cycles.

Options: ``--quick`` (digits only), ``--write`` (store the RESULT in
``bench/out/c_int8.json``, from which ``bench/RESULTS.md``'s table is rendered:
``render``). Ends with ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._results import store  # noqa: E402
from deploy.c_int8 import (  # noqa: E402
    check_project,
    measure_instructions,
    measure_size,
    tools_missing,
    trace_instructions,
)
from deploy.c_int8.export import export_int8  # noqa: E402
from hw_profiles import load  # noqa: E402

RESULT_FILE = ROOT / "bench" / "out" / "c_int8.json"
PROFILE = "cortex-m4"
TRACE_BELOW = 2_000_000
"""Models under this many instructions per inference are also counted instruction by
instruction (``trace_instructions``: QEMU -singlestep -d exec), checking the SysTick count."""


class DigitsNet(nn.Module):
    """8x8 digits: conv + ReLU, depthwise conv + ReLU6, pointwise conv, residual add +
    ReLU, max pool, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(y + self.pw(nn.functional.relu6(self.dw(y))))
        return self.fc(torch.flatten(self.pool(y), 1))


class FashionNet(nn.Module):
    """28x28 Fashion-MNIST: conv + ReLU, max pool, depthwise + pointwise conv, residual
    add, max pool, conv + ReLU6, average pool, linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.p1 = nn.MaxPool2d(2)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.p2 = nn.MaxPool2d(2)
        self.c3 = nn.Conv2d(16, 32, 3, padding=1)
        self.ap = nn.AvgPool2d(2)
        self.fc = nn.Linear(32 * 3 * 3, 10)

    def forward(self, x):
        y = self.p1(torch.relu(self.c1(x)))
        y = self.p2(torch.relu(y + self.pw(torch.relu(self.dw(y)))))
        y = nn.functional.relu6(self.c3(y))
        return self.fc(torch.flatten(self.ap(y), 1))


def _train(model, x, y, epochs: int, seed: int = 0) -> float:
    """Adam, batch 64, cross-entropy; returns the seconds it took."""
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    t0 = time.perf_counter()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            b = order[i:i + 64]
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[b]), yt[b]).backward()
            opt.step()
    model.eval()
    return time.perf_counter() - t0


def _cases(quick: bool):
    from models.shared.datasets import check_available, digits, fashion_mnist
    d = digits(flatten=False)
    yield "digits", DigitsNet, (1, 1, 8, 8), d, 30
    if quick:
        return
    try:
        check_available("fashion-mnist")
    except Exception as exc:   # the files are a Debian package, not always installed
        print(f"fashion-mnist skipped: {exc}")
        return
    yield "fashion", FashionNet, (1, 1, 28, 28), fashion_mnist(limit_train=20000, flatten=False), 3


def run_case(name, cls, shape, data, epochs, work: Path) -> dict:
    torch.manual_seed(0)
    model = cls()
    x_tr = data.x_train.reshape(-1, *shape[1:]).astype(np.float32)
    x_te = data.x_test.reshape(-1, *shape[1:]).astype(np.float32)
    seconds = _train(model, x_tr, data.y_train, epochs)
    result = export_int8(model, shape, (x_tr[:1000], x_te, data.y_test), work / name,
                         profile=PROFILE)
    rep = result.report
    cost = rep["predicted_per_inference"]
    row = {"model": name, "dataset": data.name, "input_shape": list(shape),
           "train_epochs": epochs, "train_s": round(seconds, 1),
           "layers": rep["layers"], "accuracy": rep["accuracy"],
           "macs": cost["ops"]["mac_int8"], "predicted_cycles": cost["cycles"],
           "predicted_energy_j": cost["energy_j"], "predicted_latency_s": cost["latency_s"],
           "sizes_predicted": rep["sizes"]}
    for target in ("host", "cortex-m4"):
        reason = tools_missing(target)
        row[f"bit_exact_{target}"] = (reason if reason else
                                      bool(check_project(result.path, result.golden_y,
                                                         target).all_match))
    if tools_missing("cortex-m4") is None:
        built = measure_size(result.path, "cortex-m4")
        row["sizes_built"] = {"text": built.text, "data": built.data, "bss": built.bss,
                              "stack": built.stack, "flash": built.flash}
        got = measure_instructions(result.path, "cortex-m4")
        insns = float(np.mean(got["per_inference"]))
        prof = load(PROFILE)
        pj_per_cycle = prof.energy_pj["int_add"].value   # one single-cycle instruction
        row["measured"] = {"instructions_per_inference": insns,
                           "instructions_per_tick": got["instructions_per_tick"],
                           "golden_inferences": len(got["per_inference"]),
                           "instructions_over_predicted_cycles": insns / cost["cycles"],
                           "instructions_per_mac": insns / cost["ops"]["mac_int8"],
                           "energy_lower_bound_j": insns * pj_per_cycle * 1e-12}
        per_layer = measure_instructions(result.path, "cortex-m4", layers=True)["per_layer"]
        row["layers_measured"] = [
            {**lay, "instructions": ins, "instructions_over_cycles": ins / lay["cycles"]}
            for lay, ins in zip(cost["layers"], per_layer, strict=True)]
        if insns < TRACE_BELOW:
            row["measured"]["traced_instructions_per_inference"] = \
                trace_instructions(result.path, "cortex-m4")["per_inference"]
    return row


def render(result: dict) -> str:
    """The table of bench/RESULTS.md, from a RESULT (tests/bench pins the two together)."""
    lines = ["| model | fp32 acc | int8 acc | same class | MACs | predicted cycles | "
             "QEMU instructions | instr. / pred. cycles | pred. energy | instr. x pJ/cycle | "
             "flash pred. / built | arena = bss | bit-exact host, M4 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        a, m = r["accuracy"], r.get("measured")
        sp, sb = r["sizes_predicted"], r.get("sizes_built")
        cells = [f"{r['model']} ({r['dataset']}, {'x'.join(map(str, r['input_shape'][1:]))})",
                 f"{a['fp32']:.2%}", f"{a['int8']:.2%}", f"{a['agreement']:.2%}",
                 f"{r['macs']:,}", f"{r['predicted_cycles']:,.0f}",
                 (f"{m['instructions_per_inference']:,.0f}"
                  + (f" (traced {m['traced_instructions_per_inference']:,.0f})"
                     if "traced_instructions_per_inference" in m else "")) if m else "-",
                 f"{m['instructions_over_predicted_cycles']:.1f}" if m else "-",
                 f"{r['predicted_energy_j'] * 1e6:.1f} uJ",
                 f"{m['energy_lower_bound_j'] * 1e6:.1f} uJ" if m else "-",
                 f"{sp['flash']:,} / {sb['flash']:,} B" if sb else f"{sp['flash']:,} / - B",
                 (f"{sp['arena']:,} B {'=' if sb['bss'] == sp['arena'] else '!='} "
                  f"{sb['bss']:,} B") if sb else f"{sp['arena']:,} B",
                 f"{r['bit_exact_host']}, {r['bit_exact_cortex-m4']}"]
        lines.append("| " + " | ".join(cells) + " |")
    for r in result["rows"]:
        if "layers_measured" not in r:
            continue
        lines += ["", f"Per layer, {r['model']} (`make icount-layers`):", "",
                  "| layer | kind | MACs | predicted cycles | QEMU instructions | "
                  "instr. / pred. cycles |", "|---|---|---|---|---|---|"]
        lines += [f"| {la['layer']} | {la['kind']} | {la['macs']:,} | {la['cycles']:,.0f} | "
                  f"{la['instructions']:,.0f} | {la['instructions_over_cycles']:.1f} |"
                  for la in r["layers_measured"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="digits only")
    ap.add_argument("--write", action="store_true", help=f"store the RESULT in {RESULT_FILE}")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in _cases(args.quick):
            rows.append(run_case(*case, Path(tmp)))
    result = {"profile": PROFILE, "rows": rows}
    print(render(result))
    if args.write:
        store(RESULT_FILE, result)
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
