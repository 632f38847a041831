"""PPL's parts: renderer, prior, regressor init, memory, losses, metrics, data, config."""
import math

import numpy as np
import pytest
import torch

from models.ppl import data as D
from models.ppl import metrics as M
from models.ppl import model as P
from models.ppl.card import PPLConfig
from models.ppl.run import occlude
from sim.errors import ModelError


def test_render_is_the_max_of_weighted_segment_gaussians():
    # segment (-0.5, 0) - (0.5, 0), size 4: pixel centres at -0.75, -0.25, 0.25, 0.75.
    # pixel (x=0.25, y=0.25) is 0.25 from the segment: exp(-0.0625 / 0.1) = 0.5353;
    # pixel (x=0.75, y=0.25) is sqrt(0.25^2 + 0.25^2) from the end: exp(-0.125 / 0.1)
    pts = torch.tensor([[[-0.5, 0.0], [0.5, 0.0]]])
    w = torch.tensor([[0.0, 0.5], [0.5, 0.0]])
    s = P.render(pts, w, 4, 0.1)[0, 0]
    assert s.shape == (4, 4)
    assert s[2, 2].item() == pytest.approx(0.5 * math.exp(-0.625), rel=1e-6)
    assert s[2, 3].item() == pytest.approx(0.5 * math.exp(-1.25), rel=1e-6)
    assert torch.equal(s, s.flip(0))                     # symmetric about y = 0


def test_prior_links_are_symmetric_and_start_near_softplus_minus_4():
    w = P.Prior(12, seed=3).weights()
    assert torch.equal(w, w.T) and torch.all(w.diagonal() == 0)
    # S ~ (N(0,1) - 4) / 512, W = softplus(512 S) = softplus(N(0,1) - 4): mean over 66
    # links of softplus(z - 4) is ~0.029 (E = 0.0287 by quadrature); a loose band
    assert 0.015 < w[torch.triu_indices(12, 12, 1).unbind()].mean().item() < 0.05


def test_regressor_starts_at_the_template_moved_by_the_attention_centroid():
    # identity A and zero MLP output: P'_i = P_i + where_i, where_i the centroid of
    # attention map i over the 8 x 8 grid of cell centres
    reg = P.Regressor(12, 8)
    tpl = torch.rand(1, 12, 2) - 0.5
    x = torch.rand(3, 3, 32, 32)
    pts, theta = reg(x, tpl)
    a = reg.att(reg.cnn(x)).flatten(2).softmax(-1)                       # (3, 12, 64)
    c = (torch.arange(8) + 0.5) / 8 * 2 - 1
    where = torch.stack([(a * c.repeat(8)).sum(-1), (a * c.repeat_interleave(8)).sum(-1)], -1)
    assert torch.allclose(pts, tpl + where, atol=1e-6)
    assert torch.equal(theta[0, 0, :, :2], torch.eye(2))
    assert pts.std(0).mean() > 0                             # depends on the image
    cen = P.Regressor(12, 8, anchor="centroid")              # P'_i = where_i at the start
    cen.load_state_dict(reg.state_dict())
    assert torch.allclose(cen(x, tpl)[0], where, atol=1e-6)


def test_memory_quantises_to_the_nearest_code_and_reports_perplexity():
    mem = P.Memory(12, banks=2, codes=4, dim=8)
    g = mem.codebook[:, [1, 3]].permute(1, 0, 2) + 1e-3     # (2 samples, 2 banks, 8)
    q, idx = mem.quantise(g)
    assert idx.tolist() == [[1, 1], [3, 3]]
    assert torch.allclose(q, g - 1e-3)
    # codes used uniformly -> perplexity = number of codes; one code -> 1
    uniform = torch.arange(4).repeat(2, 1).T                 # (4, 2): codes 0..3 per bank
    assert torch.allclose(mem.perplexity(uniform), torch.tensor([4.0, 4.0]))
    assert torch.allclose(mem.perplexity(torch.zeros(5, 2, dtype=torch.long)),
                          torch.tensor([1.0, 1.0]))


def test_memory_ema_moves_a_used_code_toward_its_vectors():
    mem = P.Memory(4, banks=1, codes=2, dim=3, decay=0.9)
    mem.codebook.zero_()
    mem.ema_sum.zero_()
    mem.ema_count.fill_(1.0)
    g = torch.ones(2, 1, 3)                                  # two vectors on code 0
    mem.ema_update(g, torch.zeros(2, 1, dtype=torch.long))
    # count0 = 0.9 + 0.1 * 2 = 1.1, sum0 = 0.1 * 2 = 0.2; Laplace smoothing of the counts
    # (1.1 + e) / (2.1 + 2e) * 2.1 ~ 1.1: code0 = 0.2 / 1.1 = 0.1818; code1 stays 0
    assert mem.codebook[0, 0].tolist() == pytest.approx([0.2 / 1.1] * 3, rel=1e-4)
    assert mem.codebook[0, 1].abs().sum().item() == 0


def test_boundary_loss_sums_the_excess_over_one():
    p = torch.tensor([[[1.5, -0.2], [0.3, -2.0]]])
    assert P.boundary_loss(p).item() == pytest.approx(0.5 + 1.0)


def test_full_model_losses_are_finite_and_the_template_comes_from_the_memory():
    cfg = PPLConfig(width=8, thick=P.thick_for(32))
    net = P.PPL(cfg)
    x = torch.rand(4, 3, 32, 32)
    parts = net.losses(x, x)
    assert set(parts) == {"recon", "boundary", "memory", "commit"}
    assert all(torch.isfinite(v) for v in parts.values())
    assert torch.equal(net.template(), net.memory.template())
    raw, mem = net.iterate(x, x, 3)
    assert raw.shape == mem.shape == (3, 4, 12, 2)
    frozen = P.PPL(PPLConfig(width=8, prior="frozen_random"))
    assert frozen.memory is None and torch.equal(frozen.template(), frozen.fixed_template)


def test_regression_metric_recovers_an_exact_linear_map():
    rng = np.random.default_rng(0)
    det = rng.uniform(-1, 1, (200, 12, 2))
    gt = (det.reshape(200, -1) @ rng.normal(size=(24, 22)) * 0.1).reshape(200, 11, 2)
    err, _ = M.regression_error(det[:150], gt[:150], det[150:], gt[150:])
    assert err < 1e-3
    # a constant offset of 0.2 on every joint: L2 0.2 in [-1, 1] units = 10% of the image
    assert M.l2_error(gt + np.array([0.2, 0.0]), gt) == pytest.approx(10.0)


def test_matching_and_link_recall_on_a_relabelled_skeleton():
    rng = np.random.default_rng(1)
    gt = rng.uniform(-1, 1, (50, 11, 2))
    perm = rng.permutation(11)
    det = np.concatenate([gt[:, perm], np.full((50, 1, 2), 5.0)], 1)   # 12th keypoint far
    assert M.matching_error(det, gt, det, gt) == 0
    joint_of = M.nearest_joint(det[:, :11], gt)
    assert (joint_of == perm).all()
    w = np.zeros((12, 12))
    inv = np.argsort(perm)                                  # keypoint of each joint
    for a, b in D.EDGES:
        w[inv[a], inv[b]] = w[inv[b], inv[a]] = 1.0
    assert M.link_recall(w[:11, :11], joint_of, D.EDGES) == 1.0
    assert M.link_recall(np.eye(11) * 0 + 1 - np.eye(11), joint_of, D.EDGES) <= 0.5


def test_procrustes_ignores_similarity_transforms():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(11, 2))
    c, s = math.cos(0.7), math.sin(0.7)
    b = 2.5 * a @ np.array([[c, -s], [s, c]]) + 0.3
    assert M.procrustes(a, b) == pytest.approx(0.0, abs=1e-12)
    assert M.procrustes(a, rng.normal(size=(11, 2))) > 0.1


def test_figures_are_seeded_and_limbs_keep_their_proportions():
    f1, f2 = D.make(16, 32, 4), D.make(16, 32, 4)
    assert np.array_equal(f1.images, f2.images) and np.array_equal(f1.joints, f2.joints)
    assert f1.images.shape == (16, 3, 32, 32) and f1.joints.shape == (16, 11, 2)
    assert 0 <= f1.images.min() and f1.images.max() <= 1
    # every limb length / its base length is the figure's one scale (1.2 x U(0.6, 0.9))
    ratio = np.stack([np.linalg.norm(f1.joints[:, c] - f1.joints[:, p], axis=-1) / L
                      for (p, c), L in zip(D.EDGES, D.LENGTHS, strict=True)], 1)
    assert np.allclose(ratio, ratio[:, :1], rtol=1e-5)
    assert 0.72 - 1e-6 <= ratio.min() and ratio.max() <= 1.08 + 1e-6
    assert not np.array_equal(f1.images, f1.refs)           # another pose, same look


def test_center_occlusion_zeroes_a_quarter_of_the_image():
    x = np.ones((2, 3, 32, 32), np.float32)
    assert (occlude(x, "center", 0) == 0).mean() == pytest.approx(0.25)   # 16^2 / 32^2
    assert 0 < (occlude(x, "random", 0) == 0).mean() < 1


@pytest.mark.parametrize("field,value,match", [
    ("prior", "fixed", "PPLConfig.prior = 'fixed': must be one of"),
    ("size", 36, "PPLConfig.size = 36: must be a multiple of 8"),
    ("missing", 1.0, r"PPLConfig.missing = 1.0: must be in \[0, 1\)"),
    # fewer keypoints than the 11 joints: the Hungarian matching left joints unassigned
    ("keypoints", 10, "PPLConfig.keypoints = 10: the matching error pairs one keypoint "
                      "with each of the figures' 11 joints; give >= 11"),
    # accepted, then a scipy "matrix contains invalid numeric entries" traceback
    ("link_lr", -1.0, "PPLConfig.link_lr = -1.0: must be > 0"),
    ("restart", -0.1, "PPLConfig.restart = -0.1: must be >= 0"),
    ("limb_px", -2.0, "PPLConfig.limb_px = -2.0: must be >= 0"),
])
def test_config_refuses_bad_values(field, value, match):
    with pytest.raises(ModelError, match=match):
        PPLConfig(**{field: value})


def test_memory_codebook_starts_from_the_first_batch():
    mem = P.Memory(12, banks=3, codes=4, dim=8)
    pts = torch.rand(6, 12, 2)
    g = mem.encode(pts).detach()                            # (6, 3, 8)
    mem.start_from(g)
    # code c of bank b is vector c's bank-b vector; each of those picks its own code
    assert torch.equal(mem.codebook, g[:4].transpose(0, 1))
    assert mem.quantise(g[:4])[1].tolist() == [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
    assert bool(mem.started)
    mem2 = P.Memory(12, banks=3, codes=4, dim=8)
    mem2(pts, update=True)                                  # the first update starts it
    assert bool(mem2.started) and not bool(P.Memory(12).started)


def test_dead_code_restart_moves_an_unused_code_onto_a_batch_vector():
    # batch 8, codes 2, restart 0.5: a code is dead below 0.5 * 8 / 2 = 2 counts. Both
    # vectors pick code 0: code 1's count 1 * 0.9 = 0.9 < 2 -> restarted on a batch vector
    # (plus noise 0.1 x std, std 0 here), count reset to 1; code 0: 0.9 + 0.1 * 8 = 1.7
    # is also < 2 and restarts too, so the bank holds batch vectors only
    mem = P.Memory(4, banks=1, codes=2, dim=3, restart=0.5)
    g = torch.full((8, 1, 3), 2.0)
    mem.ema_update(g, torch.zeros(8, 1, dtype=torch.long))
    assert torch.equal(mem.codebook, torch.full((1, 2, 3), 2.0))
    assert torch.equal(mem.ema_count, torch.ones(1, 2))
    off = P.Memory(4, banks=1, codes=2, dim=3, restart=0.0)
    before = off.codebook[0, 1].clone()
    off.ema_update(g, torch.zeros(8, 1, dtype=torch.long))
    # unused code: sum and count both decay by 0.9 (Laplace smoothing moves it ~1e-5)
    assert torch.allclose(off.codebook[0, 1], before, rtol=1e-4)


def test_dead_code_restart_from_a_batch_of_one_stays_finite():
    # batch_size = 1: the batch has no spread (std of one vector is nan); the restarted
    # codes sit on the one vector, no noise. Before the fix the codebook went nan.
    # restart 5, codes 3: dead below 5 * 1 / 3 = 1.67 counts; every code is (0.9 unused,
    # 0.9 + 0.1 picked), so each bank's codes all restart on the bank's vector
    mem = P.Memory(4, banks=2, codes=3, dim=3, restart=5.0)
    g = torch.tensor([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]])
    mem.ema_update(g, torch.zeros(1, 2, dtype=torch.long))
    assert torch.equal(mem.codebook, g[0][:, None].expand(2, 3, 3))


def test_initial_template_is_centred_with_the_chosen_spread():
    mem = P.Memory(12, banks=4, codes=4, dim=16, spread=0.3)
    t = mem.template()[0]
    assert torch.allclose(t.mean(0), torch.zeros(2), atol=1e-5)
    assert torch.allclose(t.std(0), torch.full((2,), 0.3), atol=1e-5)


def test_pictures_draw_ground_truth_and_prediction_in_their_colours():
    from models.ppl import pictures as pics
    img = np.zeros((1, 3, 32, 32), np.float32)
    gt = np.zeros((1, 11, 2)) - 0.5                          # every joint at pixel 32 (x4)
    pred = np.zeros((1, 11, 2)) + 0.5                        # every joint at pixel 96
    out = pics.poses_over_images(img, gt, pred, D.EDGES)
    assert out.shape == (1, 128, 128, 3) and 0 <= out.min() and out.max() <= 1
    assert np.allclose(out[0, 32, 32], np.array(pics.GT) / 255)
    assert np.allclose(out[0, 96, 96], np.array(pics.PRED) / 255)
    assert out[0, 5, 5].sum() == 0                           # background left dark
    w = np.zeros((12, 12))
    w[0, 1] = w[1, 0] = 1.0
    assert pics.top_links(w, 1) == [(0, 1)]
    tpl = pics.template_with_links([np.random.default_rng(0).uniform(-1, 1, (12, 2))], w, 3)
    assert tpl.shape == (1, 128, 128, 3)


def test_summary_checks_use_the_digest_thresholds_and_count_seeds():
    from types import SimpleNamespace

    from models.ppl.experiment import summarize
    base = {"template_procrustes": 0.1, "template_procrustes_init": 0.4, "link_recall": 0.6,
            "iteration_gain": 0.9, "prototype_distance_shrinks": 1.0,
            "min_bank_perplexity": 3.0, "memory_gap": 0.04}
    runs = {}
    for s, (e_l, e_f) in enumerate([(8.0, 10.0), (9.5, 10.0), (7.0, 10.0)]):
        runs[f"learned/seed{s}"] = SimpleNamespace(metrics={**base, "keypoint_error": e_l})
        runs[f"frozen_random/seed{s}"] = SimpleNamespace(metrics={"keypoint_error": e_f})
    out = summarize(runs)
    a = out["checks"]["a_learned_prior_helps"]
    # mean 8.1667 vs 10: gain 0.1833 >= 0.10 holds; per seed 0.2, 0.05, 0.3 -> 2 of 3
    assert a["measured"] == pytest.approx(1 - 8.5 / 10 * (8.1666667 / 8.5))
    assert a["holds"] and a["seeds_holding"] == "2/3"
    assert out["checks"]["b_prior_emerges"]["measured"] == pytest.approx(0.25)
    assert all(c["holds"] for c in out["checks"].values()) and out["claim_met"]
    assert out["table"]["learned"]["keypoint_error"]["std"] == pytest.approx(
        np.std([8.0, 9.5, 7.0], ddof=1))
