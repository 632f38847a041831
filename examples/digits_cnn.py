"""A small CNN for scikit-learn's 8x8 digits, for `neuroedge export --target c-int8`.

    neuroedge export examples/digits_cnn.py:trained --target c-int8 --input-shape 1,1,8,8 \
        --calibration digits --out exports/digits-int8

`trained()` trains it for 5 epochs (Adam, a few seconds on one core) on the training split
of the same digits split `--calibration digits` calibrates on; `DigitsCNN()` is untrained.
Residual depthwise block: conv + ReLU, depthwise conv + ReLU6, pointwise conv, add + ReLU,
max pool, linear: every layer kind of the int8 export but average pooling.
"""
import torch
from torch import nn


class DigitsCNN(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.c1 = nn.Conv2d(1, width, 3, padding=1)
        self.dw = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.pw = nn.Conv2d(width, width, 1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(width * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(y + self.pw(nn.functional.relu6(self.dw(y))))
        return self.fc(torch.flatten(self.pool(y), 1))


def trained(epochs: int = 5) -> DigitsCNN:
    from models.shared.datasets import digits
    torch.manual_seed(0)
    data = digits(flatten=False)
    x = torch.from_numpy(data.x_train).unsqueeze(1)
    y = torch.from_numpy(data.y_train)
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        for i in range(0, len(x), 64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64]).backward()
            opt.step()
    return model.eval()
