"""Filter heads' card: the flat config and its sub-configs, presets (the old quick
configuration exactly), a reduced run through the runner with exact counts."""
import math

import pytest

from models import runner
from models.filter_heads.card import (
    CARD,
    DATASET,
    FilterHeadsConfig,
    FilterLMConfig,
    MaskSearchConfig,
)
from models.filter_heads.experiment import ROWS
from sim.errors import ModelError

NAME = "filter_heads"


def test_card():
    assert runner.method_of(NAME).card is CARD
    assert set(CARD.device_kinds) == {"gpu", "cpu"} and CARD.datasets == (DATASET,)
    assert CARD.exports == ()


def test_presets_are_the_old_configurations():
    quick = runner.make_config(NAME, "quick", DATASET, 3)
    # the former quick_config(seed): 300 training steps, a 256-pair mask search for 4
    # epochs, 64 held-out pairs, 5 random head sets; every part seeded with the one seed
    assert quick.model == FilterLMConfig(steps=300, seed=3)
    assert quick.search == MaskSearchConfig(n_pairs=256, epochs=4, seed=3)
    assert (quick.n_eval, quick.n_random, quick.seed) == (64, 5, 3)
    full = runner.make_config(NAME, "full", DATASET, 0)
    # the former ExperimentConfig() defaults (the bench)
    assert full.model == FilterLMConfig() and full.search == MaskSearchConfig()
    assert (full.n_eval, full.n_random) == (256, 20)


def test_bad_config():
    with pytest.raises(ModelError, match="d_model = 30 must split"):
        FilterHeadsConfig(d_model=30, n_head=4)
    with pytest.raises(ModelError, match="FilterLMConfig.steps = 0"):
        FilterHeadsConfig(steps=0)
    with pytest.raises(ModelError, match="MaskSearchConfig.epochs = 0"):
        FilterHeadsConfig(search_epochs=0)
    with pytest.raises(ModelError, match="question order 'middle'"):
        FilterHeadsConfig(orders=("after", "middle"))
    with pytest.raises(ModelError, match="n_random = 0"):
        FilterHeadsConfig(n_random=0)
    # a misspelled task passed the config and failed minutes in, at the mask search
    with pytest.raises(ModelError, match="MaskSearchConfig.task = 'itme': must be one of "
                                         "mcq, item; did you mean 'item'"):
        FilterHeadsConfig(search_task="itme")
    # max_len = 1 passed the config and crashed the first training batch (12 tokens); the
    # longest prompt is bullet with 7 options: <bos> Options : + 7 x (\\n - item) + . +
    # Which is <cat> ? + Answer = 1 + 2 + 21 + 1 + 4 + 1 = 30 tokens
    with pytest.raises(ModelError, match=r"FilterLMConfig.max_len = 29: the longest prompt of "
                                         r"formats comma, bullet, numbered has 30 tokens"):
        FilterHeadsConfig(max_len=29)
    assert FilterHeadsConfig(max_len=30).max_len == 30
    # comma alone: 1 + 2 + 7 items + 6 commas + 1 + 4 + 1 = 22 tokens; the search format
    # counts too (a bullet search needs 30)
    assert FilterHeadsConfig(max_len=22, formats=("comma",)).max_len == 22
    with pytest.raises(ModelError, match=r"FilterHeadsConfig.max_len = 22: the longest prompt "
                                         r"of formats comma, bullet has 30"):
        FilterHeadsConfig(max_len=22, formats=("comma",), search_fmt="bullet")
    with pytest.raises(ModelError, match="takes datasets synthetic-lists; got 'digits'"):
        runner.prepare(NAME, dataset="digits")


REDUCED = dict(n_layer=2, n_head=2, d_model=16, d_mlp=32, steps=4, batch_size=8, warmup=1,
               search_pairs=20, search_epochs=2, search_batch_size=8, n_eval=8, n_random=2)


def test_reduced_run_through_runner(toy_gpu_path):
    run = runner.run(NAME, profile=toy_gpu_path, overrides=REDUCED)
    # train: 4 steps x 8 prompts; each mask search: ceil(20 / 8) = 3 batches of 8 pairs,
    # re-used for 2 epochs = 48 (question after, then question before)
    assert run.ledger.samples() == {"train": 32, "locate": 48, "locate_before": 48}
    assert sorted({s.split("/")[0] for s in run.ledger.scopes()}) == [
        "ablate", "evaluate", "locate", "locate_before", "patch", "patch_before", "train"]
    assert run.ledger.uncounted() == {}
    m = run.metrics
    # parameters: embedding 130 x 16 = 2080; per block 2 LayerNorms 64 + qkv 768 + proj 256
    # + MLP (16 x 32 + 32) + (32 x 16 + 16) = 2160, x 2; final LayerNorm 32; head 2080
    assert m["parameters"] == 2080 + 2 * 2160 + 32 + 2080 == 8512
    assert m["head_fraction"] == m["n_heads"] / 4
    # 8 prompts per accuracy, 3 option counts averaged: multiples of 1/24
    assert (24 * m["accuracy_item_after_comma"]).is_integer()
    assert len(run.traces["train_loss"].data) == 4             # every max(1, 4 // 20) step
    assert run.traces["mask"].kind == "table" and run.traces["mask"].data.shape == (2, 2)
    assert run.traces["format_transfer"].columns == ("comma", "bullet", "numbered")
    assert len(run.traces["flag_rates_before"].data) == 2      # one rate per block
    assert [tuple(h) for h in run.facts["heads"]] == [
        (layer, h) for layer in range(2) for h in range(2)
        if run.traces["mask"].data[layer, h] > 0.5]
    assert math.isfinite(m["train_loss"])
    # every metric finite: when the search locates all 4 heads (this tiny model does) no
    # random set of the same size exists, and the random baseline was reported as NaN
    assert [k for k, v in m.items() if not math.isfinite(v)] == []
    every = len(run.facts["heads"]) == 4
    assert ("causality_random_mean" in m) == (not every)
    assert (run.facts["random_heads_from"] == "none") == every
    assert sum(a.size for a in run.trained.arrays.values()) == 8512


@pytest.mark.slow
def test_study_at_the_quick_preset(toy_gpu_path):
    """The paper's checks on the quick run (a minute): the summary holds each checked row."""
    study = runner.study(NAME, preset="quick", profiles={"gpu": toy_gpu_path})
    run = study.runs["filter_heads"]
    s = study.summary
    assert s["metrics"]["ablation_drop_heads"] == pytest.approx(
        run.metrics["accuracy_clean"] - run.metrics["accuracy_heads_ablated"])
    assert set(s["checks"]) <= {name for name, _, rule in ROWS if rule is not None}
    assert s["claim_met"] == all(s["checks"].values())


@pytest.mark.parametrize("name", ["orders", "formats", "task_kinds"])
def test_an_empty_tuple_setting_is_refused_in_one_line(name):
    # `--set formats=` parses to (): was a max() traceback in __post_init__ (formats) or a
    # ValueError seconds into training (orders, task_kinds)
    with pytest.raises(ModelError, match=rf"FilterLMConfig\.{name} is empty: give at least one"):
        FilterHeadsConfig(**{name: ()})
