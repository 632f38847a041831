"""QAT baseline of BEP: its forward is BEP's binary network, and STE training learns."""
import numpy as np
import torch

import sim
from models.baselines.qat.model import QAT, QATConfig
from models.bep import data as bep_data
from models.bep.card import BEPConfig
from models.bep.model import BEP
from sim.bitwise import BitwiseDevice


def test_qat_forward_is_the_same_binary_network():
    protos = bep_data.random_prototypes(n_samples=600, n_features=256, flip=0.4, seed=3)
    model = BEP(256, 10, BEPConfig(hidden=(64, 32), seed=1), BitwiseDevice("cortex-m4"))
    qat = QAT(256, 10, QATConfig(hidden=(64, 32), seed=1), sim.device("x86-avx2"))
    with torch.no_grad():
        for lat, lay in zip(qat.net.layers, model.layers, strict=True):
            lat.weight.copy_(torch.as_tensor(lay.signs() * 0.5, dtype=torch.float32))
    x = protos.x_test[:50]
    want = model.logits(model.forward(x)[2][-1])                     # int32 (50, 10)
    got = qat.net(qat._x(x)) * np.sqrt(32)                           # logits / sqrt(K_L)
    assert np.array_equal(np.rint(got.detach().numpy()).astype(np.int32), want)


def test_qat_learns_prototypes_and_counts_float_ops():
    protos = bep_data.random_prototypes(n_samples=1200, n_features=128, flip=0.2, seed=4)
    # k of n seeds (QATConfig.seed): at least 4 of 5 above 70% test accuracy (chance is 0.1);
    # measured seeds 0-4: 0.825, 0.810, 0.815, 0.870, 0.845 (seed 5: 0.855)
    def fit(seed):
        dev = sim.device("x86-avx2")
        qat = QAT(128, 10, QATConfig(hidden=(32, 32), epochs=5, lr=1e-2, seed=seed), dev)
        qat.fit(protos.x_train, protos.y_train, count=seed == 0)   # seed 0's counts below
        return qat, dev, qat.evaluate(protos.x_test, protos.y_test)["accuracy"]
    runs = [fit(seed) for seed in range(5)]
    accs = [acc for _, _, acc in runs]
    assert sum(a > 0.7 for a in accs) >= 4, accs
    qat, dev, _ = runs[0]
    assert qat.n_weights == 128 * 32 + 32 * 32
    # one fp32 MAC per weight per sample in the inference forward: 200 test samples
    assert dev.ledger.total_ops("infer")["mac_fp32"] == 200 * (128 * 32 + 32 * 32 + 32 * 10)
