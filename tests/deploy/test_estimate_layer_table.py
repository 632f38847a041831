"""The estimate's per-layer table, torchinfo-like: output shapes, parameters, MACs and
energy per module, inference and training apart, output bytes, totals, --depth, --all,
print(estimate), est.layers and est.neurobench."""
import math

import torch
import torch.nn as nn

from deploy.cli import main
from deploy.estimate import estimate


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(x))


def net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), Block(), nn.Linear(8, 2))


def test_rows_in_call_order_with_shapes_params_macs_and_training_apart():
    est = estimate(net(), (2, 4), profiles=["cortex-m7"], loss="auto")
    rows = {r.name: r for r in est.layers}
    # parent before children; the loss and the optimizer step last, in the root's row
    assert list(rows) == ["", "0", "1", "1.fc", "1.act", "2", "(root)"]
    # batch 2: Linear(4,8) 2x4x8 = 64 MACs forward; training: forward 64 + the weight
    # gradient 64 (no input gradient for the first layer) = 128
    assert (rows["0"].infer_macs, rows["0"].train_macs) == (64, 128)
    # Linear(8,8) 2x8x8 = 128 forward; training 128 + weight grad 128 + input grad 128
    assert (rows["1.fc"].infer_macs, rows["1.fc"].train_macs) == (128, 384)
    # the block sums its children: params 8x8 + 8 = 72, MACs of fc
    assert (rows["1"].parameters, rows["1"].infer_macs, rows["1"].depth) == (72, 128, 1)
    assert rows["1.act"].output_shape == (2, 8) and rows["1.act"].output_bytes == 2 * 8 * 4
    # the model row: 40 + 72 + 18 = 130 params, 64 + 128 + 32 = 224 MACs
    assert (rows[""].parameters, rows[""].infer_macs) == (130, 224)
    # energy: the blocks' rows with the model's own scope sum to the inference total
    rep = est.reports["cortex-m7"]
    led = est.ledgers["cortex-m7"]
    # (the block's row holds its own add, in scope infer/1/forward, beside its children's)
    outside = sum(c.energy_j for c in rep.charges if c.scope == "infer")
    top = sum(rows[k].infer_energy_j for k in ("0", "1", "2"))
    assert rows[""].infer_energy_j == rep.energy_within("infer") > 0
    assert abs(top + outside - rows[""].infer_energy_j) <= 1e-9 * rows[""].infer_energy_j
    assert rows["(root)"].infer_energy_j == outside and rows["(root)"].train_energy_j > 0
    assert led.samples()["infer"] == 2
    assert est.neurobench["ParameterCount"] == 130


def test_depth_cuts_and_sums_and_print_shows_the_table():
    est = estimate(net(), (2, 4), profiles=["a100"])
    assert [r.name for r in est.layer_rows(depth=1)] == ["", "0", "1", "2", "(root)"]
    text = str(est)
    assert "Layers on a100 (batch of 2; depth 3; act. = output bytes)" in text
    assert "  fc (Linear)" in text   # depth 2, indented under its block
    total = next(ln for ln in text.splitlines() if ln.startswith("Total (Sequential)"))
    # output [2, 2], 130 params, 224 MACs; activations: leaves 64 + 64 + 64 + 16 B = 208 B
    assert total.split()[2:6] == ["[2,", "2]", "130", "224"] and total.endswith("208 B")
    width = max(len(ln) for ln in text.splitlines()
                if ln.startswith(("layer (type)", "Total", "0 (", "  fc")))
    assert width <= 80


def test_cli_depth_and_all(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text("import torch.nn as nn\n\n\nclass B(nn.Module):\n"
                    "    def __init__(self):\n        super().__init__()\n"
                    "        self.fc = nn.Linear(4, 4)\n\n"
                    "    def forward(self, x):\n        return self.fc(x)\n\n\n"
                    "def make():\n    return nn.Sequential(*[B() for _ in range(20)])\n")
    args = ["estimate", f"{path}:make", "--input-shape", "1,4", "--profiles", "a100"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # depth 3: 20 blocks + 20 Linear + the root's (static power) = 41 rows, 30 shown
    assert "... 11 more layers (--all)" in out
    assert main(args + ["--all"]) == 0
    out = capsys.readouterr().out
    assert "more layers" not in out and out.count("fc (Linear)") == 20
    assert main(args + ["--depth", "1"]) == 0
    out = capsys.readouterr().out
    assert "fc (Linear)" not in out and out.count("(B)") == 20 and "depth 1" in out


class Stack(nn.Module):
    """Blocks in an nn.ModuleList, which the forward never calls itself (as a transformer's
    layers)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.blocks = nn.ModuleList([nn.Linear(32, 32) for _ in range(3)])
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x).relu()
        return self.out(x)


def test_a_module_list_the_forward_never_calls_has_its_row():
    """Cut at depth 1, the blocks fell out of the table (inp 512 + out 128 MACs shown of
    3,712); at depth 2 they were drawn under `out`'s predecessor as its children. Now the
    list has a row before its blocks, summing them: 3 x 32 x 32 = 3,072 MACs, 3 x (1,024 +
    32) = 3,168 parameters."""
    est = estimate(Stack(), (1, 16), profiles=["a100"])
    rows = {r.name: r for r in est.layers}
    assert list(rows) == ["", "inp", "blocks", "blocks.0", "blocks.1", "blocks.2", "out",
                          "(root)"]
    blocks = rows["blocks"]
    assert (blocks.type, blocks.depth, blocks.infer_macs, blocks.parameters) == \
        ("ModuleList", 1, 3_072, 3_168)
    from deploy.layer_table import rows as table_rows
    cut = table_rows(est, depth=1)
    # the rows at depth 1 sum to the model's 16 x 32 + 3,072 + 32 x 4 = 3,712 MACs
    assert sum(r.infer_macs for r in cut if r.depth == 1) == rows[""].infer_macs == 3_712


def test_rows_add_up_to_the_total_for_a_sequential_with_no_ops_of_its_own():
    """The root's row was left out unless the model held MACs or parameters of its own, and
    with it the energy pricing charges the inference as a whole: the weights read from DRAM
    once and the static power over the run (46% of this model's energy on a100)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    est = estimate(model, (1, 2048), profiles=["a100"])
    rows = est.layer_rows(depth=1)
    total, body = rows[0], rows[1:]
    assert [r.name for r in body] == ["0", "1", "2", "(root)"]
    root = body[-1]
    assert (root.parameters, root.infer_macs) == (0, 0)
    rep = est.reports["a100"]
    whole = {c.item: c for c in rep.charges if c.scope == "infer"}
    assert set(whole) == {"offchip:read", "offchip:write", "static"}
    # 16,875,600 B read once (16,867,368 B of them the 4,216,842 fp32 parameters) x 31.76
    # pJ/B = 536 uJ; 40 B written x 31.76 pJ/B = 1.27 nJ; static 61 W x 10.85 us = 662 uJ;
    # together 1.198 mJ, in no module's row
    assert whole["offchip:read"].count == 16_875_600
    assert math.isclose(whole["offchip:read"].energy_j, 16_875_600 * 31.76e-12, rel_tol=1e-9)
    assert math.isclose(whole["static"].energy_j, 61 * whole["static"].count, rel_tol=1e-9)
    assert root.infer_energy_j == sum(c.energy_j for c in whole.values())
    assert 1.19e-3 < root.infer_energy_j < 1.21e-3
    # 782 + 305 + 307 uJ (the modules) + 1,198 uJ (the root) = 2,593 uJ, the total
    assert math.isclose(sum(r.infer_energy_j for r in body), total.infer_energy_j,
                        rel_tol=1e-12)
    assert "(root: run-wide charges)" in str(est)
