"""GEB's loop: Lemma 3.1 (the exact KL prior bonus is constant and changes no training),
the single-sample prior bonus that is not, the prefix-tree enumeration, the reward, the
optimum's tiny reference probability, same seed -> same run."""
import dataclasses

import numpy as np
import pytest
import torch

import sim
from models.geb import losses
from models.geb.card import GebConfig
from models.geb.data import all_responses, make_task
from models.geb.model import (
    Policy,
    PrefixTree,
    pretrain_reference,
    run_comparison,
    run_loop,
    sign_p,
    wilcoxon_p,
)
from sim.neurobench import metrics

TINY = GebConfig(seeds=1, iterations=2, steps=4, sft_samples=256, sft_steps=20,
                 dtype="float64", count=False)
"""Two iterations of 4 steps from a reference trained 20 steps: enough to move the policy."""


@pytest.fixture(scope="module")
def setup():
    torch.set_num_threads(1)
    dev = sim.device("a100")
    task = make_task("toy", 0)
    return task, dev, pretrain_reference(task, TINY, dev, count=False)


def _params(pol):
    return torch.cat([p.detach().flatten() for p in pol.parameters()])


def test_prefix_tree_matches_the_direct_sequence_log_probabilities():
    pol = Policy(3, 4, 3, 8).double()
    tree = PrefixTree(3, 4, 3, "cpu")           # 1 + 4 + 16 = 21 prefixes per prompt
    assert tree.rows == 21 and tree.ys.shape == (64, 3)
    lp = tree.logp_all(pol)                                           # (3, 64)
    direct = pol(torch.arange(3).repeat_interleave(64), tree.ys.repeat(3, 1)).reshape(3, 64)
    torch.testing.assert_close(lp, direct, rtol=0, atol=1e-12)
    torch.testing.assert_close(torch.exp(lp).sum(1), torch.ones(3, dtype=torch.float64))


def test_reward_by_hand():
    task = make_task("toy", 0)
    y_star = task.target[0]
    common = np.flatnonzero(task.common[0, 0])[0]
    other = [v for v in range(6) if v != y_star[0] and not task.common[0, 0, v]][0]
    y = np.stack([y_star, np.r_[common, y_star[1:]], np.r_[other, y_star[1:]]])
    # match credit: 4/4 = 1; 3 matches + 0.5 x 1 common = 3.5 / 4; 3 matches = 0.75
    assert task.reward(np.zeros(3, int), y).tolist() == [1.0, 0.875, 0.75]
    prefix = dataclasses.replace(task, credit="prefix")
    # prefix credit: 4; a wrong first token ends the prefix: 0.5 x 1 / 4 = 0.125; 0
    assert prefix.reward(np.zeros(3, int), y).tolist() == [1.0, 0.125, 0.0]
    assert all_responses(task).shape == (1296, 4)


def test_the_optimum_is_rare_under_the_reference(setup):
    task, dev, _ = setup
    ref = pretrain_reference(task, GebConfig(count=False), dev, count=False)   # the card's SFT
    lp = ref(torch.arange(16), torch.as_tensor(task.target)).numpy()
    # q(y*) = 0.025^4 = 3.9e-7 (ln = -14.8); the digest asks pi_ref(y*) < 1e-3 (ln = -6.9)
    assert np.all(lp < np.log(1e-3))


def test_lemma_3_1_exact_kl_prior_bonus_is_constant_and_changes_no_training(setup):
    task, dev, ref = setup
    tree = PrefixTree(16, 6, 4, "cpu")
    ref_all = tree.logp_all(ref)
    pol = Policy(16, 6, 4, TINY.hidden).double()                      # any other policy
    lp_all = tree.logp_all(pol)
    bonus = losses.exact_prior_bonus("rkl", lp_all, ref_all, beta=0.1)   # sum_y pi = 1
    torch.testing.assert_close(bonus, torch.full((16,), 0.1, dtype=torch.float64))
    grads = torch.autograd.grad(bonus.sum(), list(pol.parameters()))
    assert max(float(g.abs().max()) for g in grads) < 1e-12
    # under forward KL the same exact bonus is not constant: sum_y pi_ref (ln(pi/pi_ref) - 1)
    assert float(losses.exact_prior_bonus("fkl", lp_all, ref_all).detach().std()) > 1e-3
    passive = run_loop(task, ref, TINY, dev, "none", 0.0, count=False)
    exact = run_loop(task, ref, TINY, dev, "prior", 1.0, count=False, exact_bonus=True)
    assert float((_params(passive["policy"]) - _params(exact["policy"])).abs().max()) < 1e-6
    # the trainer's single-sample version (y_l only) is not constant: training moves
    sampled = run_loop(task, ref, TINY, dev, "prior", 1.0, count=False)
    assert float((_params(passive["policy"]) - _params(sampled["policy"])).abs().max()) > 1e-3


def test_same_seed_same_history(setup):
    task, dev, ref = setup
    a = run_loop(task, ref, TINY, dev, "geb_p", 0.1, count=False)["history"]
    b = run_loop(task, ref, TINY, dev, "geb_p", 0.1, count=False)["history"]
    assert a == b and len(a) == 2


def test_config_refuses_unknown_choices():
    with pytest.raises(Exception, match=r"^GebConfig.f_div = 'kl': must be one of rkl, fkl, "
                                        r"hel$"):
        GebConfig(f_div="kl")
    with pytest.raises(Exception, match=r"^GebConfig.bonus = 'prior': must be one of geb_p, "
                                        r"geb_f, geb_tanh$"):
        GebConfig(bonus="prior")


def test_paired_tests_by_hand():
    # 8 seeds, all differences positive with distinct ranks: the exact two-sided Wilcoxon p
    # is 2 / 2^8 = 0.0078125 and the sign test's the same (8 of 8 wins)
    d = np.arange(1, 9) * 0.1
    assert wilcoxon_p(d) == pytest.approx(2 / 256)
    assert sign_p(d) == pytest.approx(2 / 256)
    # 5 seeds can never reach p < 0.05 two-sided: 2 / 2^5 = 0.0625
    assert wilcoxon_p(d[:5]) == pytest.approx(0.0625)
    assert wilcoxon_p(np.zeros(5)) == 1.0 and sign_p(np.zeros(5)) == 1.0


def test_neurobench_counts_the_deployed_policy_not_its_copies():
    # the ledger records pi_ref and every policy the arms deep-copy (the quick preset: 155,
    # ParameterCount 412,610); NeuroBench's model is one policy (the GEB arm's, marked)
    dev = sim.device("a100")
    cfg = dataclasses.replace(TINY, dtype="float32", count=True, sft_steps=2, steps=1)
    run_comparison(cfg, dev, [make_task("toy", 0)])
    # pi_ref + per arm its policy and the previous-iterate reference of iteration 2: 1 + 3 x 2
    # (before the mark: 7 x 2,662 = 18,634 parameters)
    assert len(dev.ledger.models()) == 7
    m = metrics(dev.ledger)
    # toy: 16 prompts, vocabulary 6, length 4, hidden 32: tok 4 x 6 x 32 = 768, ctx 16 x 32
    # = 512, pos 4 x 32 = 128, Linear 32 x 32 + 32 = 1,056, Linear 32 x 6 + 6 = 198
    assert m["ParameterCount"] == 768 + 512 + 128 + 1056 + 198 == 2662
    # fp32 parameters + buffers causal (4 x 4 fp32, 64 B) and offset (4 int64, 32 B)
    assert m["Footprint"] == 2662 * 4 + 64 + 32 == 10744
