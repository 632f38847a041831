"""KLAS scores and selections: KL probes, the stitch score, buckets, anchors, frontier, CKA."""
import numpy as np
import pytest
import torch

from models.klas import scores as sc
from sim.errors import ModelError


def test_kl_of_identical_probe_outputs_is_zero_and_matches_the_definition():
    g = torch.Generator().manual_seed(2)
    lp = torch.log_softmax(torch.randn(3, 50, 10, generator=g), -1)
    assert sc.mean_kl(lp[0], lp[0]) == 0.0
    th = sc.theta_matrix(lp, lp)
    assert np.allclose(np.diag(th), 0.0, atol=1e-12) and (th[~np.eye(3, dtype=bool)] > 0).all()
    p, q = lp[0].double().exp().numpy(), lp[1].double().exp().numpy()
    naive = np.mean([np.sum(p[n] * np.log(p[n] / q[n])) for n in range(50)])
    assert th[0, 1] == pytest.approx(naive, rel=1e-9)
    assert sc.mean_kl(lp[0], lp[1]) == pytest.approx(naive, rel=1e-5)


def test_stitch_score_divides_by_the_next_block_change():
    theta_fg = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])      # (n_f=2, n_g=3)
    theta_gg = np.array([[0.0, 0.5, 9.0], [9.0, 0.0, 0.25], [9.0, 9.0, 0.0]])
    gam = sc.stitch_scores(theta_fg, theta_gg)                     # j = 1, 2 only
    assert np.allclose(gam, [[1.0 / 0.5, 2.0 / 0.25], [4.0 / 0.5, 5.0 / 0.25]])


def test_bucket_selection_keeps_each_argmin_and_the_tau_band():
    S = [sc.Stitch(0, 1, i, 1) for i in range(1, 6)]
    flops = dict(zip(S, [1.0, 1.5, 2.0, 3.2, 3.9], strict=True))
    gamma = dict(zip(S, [2.0, 2.08, 3.0, 5.0, 9.0], strict=True))
    edges = sc.bucket_edges(1.0, 4.0, 2)                          # [1, 2.5), [2.5, 4]
    chosen = sc.select_klas(S, gamma, flops, edges, tau=0.05)
    assert chosen == [S[0], S[1], S[3]]                           # 2.08 <= 1.05 * 2.0; 3.0 not
    assert sc.select_klas(S, gamma, flops, edges, tau=0.0) == [S[0], S[3]]
    assert sc.bucket_of(4.0, edges) == 1 and sc.bucket_of(4.01, edges) == -1


def test_anchor_selection_snnet_heuristic_and_frontier():
    assert sc.select_anchor_pairs({(0, 1): .1, (1, 2): .1, (0, 2): .05}, 3) == [(0, 2)]
    assert sc.select_anchor_pairs({(0, 1): .1, (1, 2): .2, (0, 2): .3}, 3) == [(0, 1), (1, 2)]
    sn = sc.snnet_stitches([4, 4, 4])
    # per nearest pair: i=1: j=1; i=2: 1,2; i=3: 1,2,3; i=4: 2,3 -> 8; pairs (0,1), (1,2)
    assert len(sn) == 16 and {(s.front, s.back) for s in sn} == {(0, 1), (1, 2)}
    assert all(s.i - 2 <= s.j <= s.i for s in sn)
    # best accuracy at budget F: 0.5 on [1, 2), 0.7 on [2, 3), 0.8 on [3, 4]
    auc = sc.frontier_auc([(1, .5), (2, .7), (2.5, .6), (3, .8), (5, .99)], 1, 4)
    assert auc == pytest.approx((0.5 + 0.7 + 0.8) / 3)


def test_linear_cka_is_one_for_identical_and_invariant_to_rotation():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(200, 6, generator=g)
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g))
    assert sc.linear_cka(x, x) == pytest.approx(1.0)
    assert sc.linear_cka(x, 3 * x @ q) == pytest.approx(1.0)
    assert sc.linear_cka(x, torch.randn(200, 6, generator=g)) < 0.2


def test_bad_score_inputs_are_named():
    lp = torch.log_softmax(torch.zeros(4, 10), -1)
    with pytest.raises(ModelError, match="expected the same"):
        sc.mean_kl(lp, lp[:, :5])
    with pytest.raises(ModelError, match="not log-distributions"):
        sc.mean_kl(lp, torch.zeros(4, 10))
    with pytest.raises(ModelError, match="equal depths"):
        sc.snnet_stitches([3, 4])
