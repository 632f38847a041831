"""DiffPC's comparison: both readings of the learning step priced, and a one-epoch study
through the runner with the three methods on the same settings."""
import pytest

from hw_profiles import load
from models import runner
from models.diffpc.experiment import GPU_PROFILES, compare, run
from models.registry import RunResult
from sim.ledger import Ledger


def test_comparison_prices_both_readings_of_the_learning_step():
    """train@loihi2 keeps the rule on the chip; train@loihi2+P swaps it for the host step."""
    chip, host, other = Ledger(), Ledger(), Ledger()
    chip.add("synop", 1000, scope="train")
    chip.add("syn_update", 300, scope="train/learn/rule")
    chip.add_samples(10, scope="train")
    host.add("mac_fp32", 200, scope="train")
    host.add("flop_fp32", 100, scope="train")
    host.add_samples(10, scope="train")
    other.add("mac_fp32", 50, scope="train")
    other.add_samples(10, scope="train")
    res = {"diffpc": RunResult("diffpc", load("loihi2"), "d", {},
                               {"bits_per_neuron_per_sample": 2.0}, chip,
                               facts={"host_ledger": host.to_dict()}),
           "pc": RunResult("pc", load("a100"), "d", {}, {"bits_per_neuron_per_sample": 960.0},
                           other),
           "mlp": RunResult("mlp", load("a100"), "d", {}, {}, other)}
    table = compare(res)
    d = table["diffpc"]
    rep = chip.price("loihi2")
    rule = rep.energy_within("train/learn/rule") / 10
    lo = load("loihi2")
    # 300 updates x syn_update pJ (+ static over its latency) per 10 samples
    assert rule >= 300 * lo.energy_pj["syn_update"].value * 1e-12 / 10
    assert d["learn_rule_j_per_sample@loihi2"] == pytest.approx(rule)
    for p in GPU_PROFILES:
        step = host.price(p).per_sample_j()["train"]
        assert d[f"learn_j_per_sample@{p}"] == pytest.approx(step)
        assert d[f"train_j_per_sample@loihi2+{p}"] == \
            pytest.approx(d["train_j_per_sample@loihi2"] - rule + step)
        assert table["pc"][f"train_j_per_sample@{p}"] == \
            pytest.approx(other.price(p).per_sample_j()["train"])
    # BP is charged the paper's 32 bits; float PC / DiffPC = 960 / 2
    assert table["mlp"]["bits_per_neuron_per_sample"] == 32.0
    assert table["comm_ratio_pc_over_diffpc"] == 480.0


PROTOCOL = {"epochs": 1, "lr": 2e-3, "lr_schedule": "cosine"}   # handed to PC and BP too


@pytest.fixture(scope="module")
def one_epoch_study():
    return run("digits", "quick", 0, {"neuromorphic": "loihi2"}, overrides=PROTOCOL)


def test_one_epoch_study_runs_the_three_on_the_same_settings(one_epoch_study):
    study = one_epoch_study
    assert list(study.runs) == ["diffpc", "pc", "mlp"]
    d, pc, bp = (study.runs[k] for k in ("diffpc", "pc", "mlp"))
    assert (d.profile.name, pc.profile.name, bp.profile.name) == ("loihi2", "a100", "a100")
    for r in (d, pc, bp):
        assert (r.dataset, r.preset, r.config["seed"]) == ("digits", "quick", 0)
        assert (r.config["hidden"], r.config["epochs"], r.config["batch_size"],
                r.config["lr_schedule"]) == ((32,), 1, 32, "cosine")
    # float PC takes DiffPC's AdamW step and decay; BP keeps its own Adam (1e-3, no decay)
    assert (pc.config["lr"], pc.config["weight_decay"]) == (2e-3, d.config["weight_decay"])
    assert (bp.config["lr"], bp.config["weight_decay"]) == (1e-3, 0.0)
    # DiffPC skips the last partial batch (1347 = 42 x 32 + 3); PC and BP train on all 1347
    assert d.ledger.samples()["train"] == 42 * 32
    assert pc.ledger.samples()["train"] == bp.ledger.samples()["train"] == 1347
    # the same run the runner gives for DiffPC alone (one code path)
    alone = runner.run("diffpc", overrides=PROTOCOL)
    assert alone.ledger.total_ops() == d.ledger.total_ops()
    assert alone.metrics == d.metrics


def test_one_epoch_study_summary(one_epoch_study):
    s, runs = one_epoch_study.summary, one_epoch_study.runs
    for name in ("diffpc", "pc", "mlp"):
        assert s[name]["test_accuracy"] == runs[name].metrics["test_accuracy"]
    assert s["pc"]["bits_per_neuron_per_sample"] == 64.0 * 15
    assert s["comm_ratio_pc_over_diffpc"] == \
        pytest.approx(960.0 / s["diffpc"]["bits_per_neuron_per_sample"])
    chip = runs["diffpc"].ledger.price("loihi2").per_sample_j()
    assert s["diffpc"]["train_j_per_sample@loihi2"] == chip["train"]
    assert s["diffpc"]["infer_j_per_sample@loihi2"] == chip["infer"]
    assert set(k for k in s["diffpc"] if "@loihi2+" in k) == \
        {f"train_j_per_sample@loihi2+{p}" for p in GPU_PROFILES}
