"""The digest's XOR protocol: can one layer separate XOR? (shared by the tests and the bench)."""
from __future__ import annotations

import torch
from torch import nn

XOR_X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
XOR_Y = torch.tensor([0, 1, 1, 0])


def fit_xor(layer: nn.Module, steps: int = 1000) -> tuple[float, float]:
    """Full-batch Adam 1e-2 on cross-entropy over the 4 XOR points; (accuracy, final loss)."""
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(layer(XOR_X), XOR_Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        out = layer(XOR_X)
        return (float((out.argmax(1) == XOR_Y).float().mean()),
                float(nn.functional.cross_entropy(out, XOR_Y)))
