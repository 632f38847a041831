"""DAVE learns to parse at small scale (slow: ~15 s a seed)."""
import pytest

from models.dave import data as D
from models.dave import model as M
from models.dave import run as R
from models.dave.card import DaveConfig


@pytest.mark.slow
def test_a_stage2_copy_learns_to_parse_on_every_seed():
    """Encoder + decoder B (2-layer transformer), 150 teacher-forced steps from a fresh
    ViT on 512 labelled pages, greedy parses of 64 unseen test pages: box F1 (IoU 0.5)
    above 0.3 on each of 3 seeds. Measured 2026-12-01: 0.571, 0.586, 0.602 (0.0 on all
    three with the untrained decoder); loss 4.0-4.2 -> 0.51-0.58 nats."""
    import torch
    torch.set_num_threads(1)
    f1 = []
    for seed in range(3):
        cfg = DaveConfig(seed=seed, n_unlabeled=1, n_labeled=512, n_test=64,
                         n_generalist=1)
        data = D.load(cfg)
        enc = M.new_vit(cfg)
        dec, losses = R.train_parser(cfg, enc, "tf2", data.labeled, None, 150)
        f1.append(R.evaluate_parser(enc.eval(), dec, data.test)["box_f1"])
        assert losses[-1] < losses[0] / 3
    assert min(f1) > 0.3, f1
