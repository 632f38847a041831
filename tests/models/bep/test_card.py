"""The bep card through the runner: presets, limits, BEP vs BEP-TT by dataset, the trained
state, and ``artifact`` (target c) rebuilt from the arrays only, bit for bit the model's."""
import json

import numpy as np
import pytest

import models
from models import runner
from models.bep import data as bep_data
from models.bep.card import TT_SETTING, artifact
from models.registry import Trained
from sim.artifacts import BitwiseArtifact
from sim.bitwise import BitwiseDevice
from sim.errors import ModelError

FLOAT_OPS = ("mac_fp", "flop_fp")


@pytest.fixture(scope="module")
def digits_run():
    """The quick digits run (the export's training set): 256-64-64-10, 10 epochs."""
    return runner.run("bep", dataset="digits", seed=0)


def test_card_presets_cover_both_networks():
    card = models.get("bep").card
    assert card.device_kinds == ("bitwise",) and card.exports == ("c",)
    assert card.trains_on == "digits" and card.default_dataset == "random-prototypes"
    for preset in ("quick", "full"):
        for name in bep_data.SEQUENCES:                      # BEP-TT: the paper's RNN values
            assert TT_SETTING.items() <= card.presets[preset][name].items()
    assert card.presets["quick"]["fashion-mnist"] == {"hidden": (256, 256), "epochs": 2,
                                                      "limit_train": 10000, "limit_test": 2000}


def test_quick_digits_run_is_integer_only_and_sized_by_hand(digits_run):
    run = digits_run
    # k of n run seeds (BEPConfig.seed): at least 4 of 5 above 85% test accuracy (10 classes:
    # chance is 0.1); measured seeds 0-4: 0.922, 0.929, 0.918, 0.929, 0.924 (seed 5: 0.936).
    # Seed 0 is the shared fixture; seeds 1-4 cost ~0.2 s each.
    accs = [run.metrics["test_accuracy"]] + [
        runner.run("bep", dataset="digits", seed=s).metrics["test_accuracy"] for s in range(1, 5)]
    assert sum(a > 0.85 for a in accs) >= 4, accs
    # 256 input bits (64 pixels x 4 thermometer levels) -> 64 -> 64: 256 x 64 + 64 x 64
    # = 20,480 weights, 18 bits each (int16 counter + a bit in W and in W^T) = 46,080 B
    # (every packed row is whole 32-bit words: no padding)
    assert run.metrics["weights"] == 20480 and run.metrics["state_bits_per_weight"] == 18
    assert run.metrics["state_bytes"] == 46080
    assert run.ledger.footprints()["train"]["writable"] == 46080
    assert not [op for op in run.ledger.total_ops() if op.startswith(FLOAT_OPS)]
    assert run.facts["network"] == "BEP" and run.facts["word_bits"] == 32
    assert run.config["epochs"] == 10 and run.traces["train_error"].data.shape == (10,)
    assert run.ledger.samples()["infer"] == 450            # digits' test split


def test_results_state_the_quick_runs_memory_figures():
    """bench/RESULTS.md's BEP memory figures are the quick default run's own ledger (the
    kernels' bytes included): bytes and energy per training sample, memory's share."""
    from pathlib import Path
    run = runner.run("bep", seed=0)                 # random-prototypes 1000-64-64, cortex-m4
    rep = run.ledger.price(run.profile)
    n = run.ledger.samples()["train"]
    per_sample = sum(run.ledger.total_bytes("train").values()) / n
    mem = sum(c.energy_j for c in rep.charges
              if c.scope.startswith("train") and c.category == "memory")
    text = " ".join((Path(__file__).parents[3] / "bench" / "RESULTS.md").read_text().split())
    assert (f"moves {per_sample:,.0f} B per training sample" in text
            and f"costs {rep.per_sample_j()['train'] * 1e6:.1f} uJ per training sample" in text
            and f"memory {100 * mem / rep.energy_within('train'):.0f}% of it" in text)


def test_runner_refuses_other_kinds_and_unknown_settings():
    with pytest.raises(ModelError, match="runs on bitwise profiles"):
        runner.prepare("bep", profile="a100")
    with pytest.raises(ModelError, match="no setting 'width'.*fields are hidden, epochs"):
        runner.prepare("bep", overrides=["width=3"])


def test_limits_keep_the_first_samples():
    plan = runner.prepare("bep", dataset="digits", overrides=["limit_train=100",
                                                              "limit_test=7"])
    data = models.get("bep").load_data(plan.dataset, plan.config)
    full = bep_data.digits_bits()
    assert data.x_train.shape == (100, 256) and data.x_test.shape == (7, 256)
    assert np.array_equal(data.x_train, full.x_train[:100])
    assert np.array_equal(data.y_test, full.y_test[:7])


def test_sequence_set_trains_bep_tt():
    run = runner.run("bep", dataset="synthetic-control", overrides={"epochs": 1})
    assert run.facts["network"] == "BEPTT" and run.config["hidden"] == (120, 64)
    # W_xs 8 x 120 (8 thermometer bits per step) + W_ss 120 x 120 + W_sy 120 x 64
    assert run.metrics["weights"] == 8 * 120 + 120 * 120 + 120 * 64
    assert run.trained.meta["recurrent"]
    with pytest.raises(ModelError, match="recurrent"):
        artifact(run.trained, "c")


def test_a_bep_tt_run_file_is_refused_for_what_it_is(tmp_path):
    """Exporting a (valid) BEP-TT run file said "does not rebuild a bep model ... rerun
    'neuroedge simulate bep' for a fresh run file": no fresh run would help."""
    from deploy.errors import ExportError
    from deploy.export import export_run
    from deploy.runfile import write_run
    run = runner.run("bep", dataset="synthetic-control", overrides={"epochs": 1})
    write_run(tmp_path / "tt.h5", run)
    with pytest.raises(ExportError) as info:
        export_run(tmp_path / "tt.h5", "c", tmp_path / "c")
    msg = str(info.value)
    assert "recurrent" in msg and "export a BEP MLP" in msg
    assert "rerun" not in msg and "does not rebuild" not in msg
    assert not (tmp_path / "c").exists()


def test_artifact_is_the_trained_network_bit_for_bit(digits_run):
    trained = digits_run.trained
    # as a run file gives it back: fresh arrays, meta through JSON, no model object
    again = Trained({k: np.array(v) for k, v in trained.arrays.items()},
                    json.loads(json.dumps(trained.meta)))
    art = artifact(again, "c")
    assert isinstance(art, BitwiseArtifact) and art.profile == "cortex-m4"
    assert art.inputs.shape == (16, 8)                     # 16 golden digits, 256 bits
    assert [lay.name for lay in art.layers] == ["bep0", "bep1", "scores"]
    out = BitwiseDevice(art.profile).run(art.layers, art.inputs)
    # the golden scores are the model's own logits on those test samples (predict_scores)
    assert np.array_equal(out.scores, trained.arrays["golden_scores"])
    assert np.array_equal(out.labels, trained.arrays["golden_labels"])
    with pytest.raises(ModelError, match="exports to 'c' only"):
        artifact(again, "onnx")


def test_exported_c_agrees_with_bitwise_device(tmp_path, digits_run):
    from deploy.c_export import CORTEX_M_BOARDS, check_c_project, export_c, missing_tools
    art = artifact(digits_run.trained, "c")
    want = BitwiseDevice(art.profile).run(art.layers, art.inputs)
    out = export_c(art.layers, art.inputs, tmp_path / "bep-c", profile=art.profile)
    targets = ["host"] + [m for m in sorted(CORTEX_M_BOARDS) if m == "cortex-m4"]
    ran = 0
    for target in targets:
        if missing_tools(target):
            continue
        run = check_c_project(out, want, target=target)
        assert run.all_match and np.array_equal(run.scores, want.scores), f"generated C in {out}"
        ran += 1
    if not ran:
        pytest.skip("no C compiler found")


def test_a_network_too_large_for_the_device_is_refused_before_its_data(monkeypatch):
    """The training state's size is known from the config and the data set's shape:
    256 -> 256 -> 256 on digits is 256 x 256 + 256 x 256 = 131,072 weights x 18 bits / 8
    = 294,912 B, more than cortex-m4's 196,608 B of SRAM: refused by runner.prepare, before
    the data are loaded (it was refused by simulate's reserve, after loading them)."""
    import dataclasses

    from sim.errors import HardwareLimitError
    method = models.REGISTRY["bep"]

    def loaded(*args, **kwargs):
        raise AssertionError("the data were loaded for a run the device cannot hold")
    monkeypatch.setitem(models.REGISTRY, "bep",
                        dataclasses.replace(method, load_data=loaded, simulate=loaded))
    with pytest.raises(HardwareLimitError, match="state of scope 'train' needs 294,912 B"):
        runner.prepare("bep", dataset="digits", profile="cortex-m4",
                       overrides={"hidden": (256, 256)})
    runner.prepare("bep", dataset="digits", profile="stm32h7a3",
                   overrides={"hidden": (256, 256)})        # 1.25 MB of SRAM: fits


@pytest.mark.parametrize("dataset", ["digits", "random-prototypes", "digits-rows",
                                     "cylinder-bell-funnel", "synthetic-control"])
@pytest.mark.parametrize("profile", ["cortex-m4", "fpga-bnn"])   # 32- and 64-bit words
def test_the_state_known_before_the_data_is_the_networks(dataset, profile):
    """The size runner.prepare checks is the state the network really keeps: its int16
    counters and packed W and W^T, each row padded to whole words (widths 24 and 16 fill no
    word; n_weights x 18 / 8 left the padding out)."""
    from models.bep.card import INPUT_BITS, BEPConfig, train_state_bytes
    from models.bep.run import build
    data = bep_data.for_config(dataset)
    assert INPUT_BITS[dataset] == (bep_data.bits_per_step(data), bep_data.is_sequence(data))
    cfg = BEPConfig(hidden=(24, 16))
    dev = BitwiseDevice(profile)
    net = build(data, cfg, dev)
    kept = sum(lay.h.nbytes + lay.w.nbytes + lay.wt.nbytes for lay in net.layers)
    assert train_state_bytes(cfg, dataset, dev.word_bits) == kept


def test_the_capacity_check_counts_word_padding_at_the_boundary(monkeypatch):
    """cortex-m4 has 196,608 B of SRAM; 1000 input bits (Random Prototypes), 32-bit words.
    hidden (86, 7): H 2 x (86,000 + 602) = 173,204; W_1 86 x 32 words x 4 = 11,008; W_1^T
    1000 x 3 words x 4 = 12,000; W_2 7 x 3 x 4 = 84; W_2^T 86 x 1 x 4 = 344: 196,640 B, 32 B
    too many (n_weights x 18 / 8 said 194,854 B and let it run). hidden (83, 41): 172,806 +
    10,624 + 12,000 + 492 + 664 = 196,586 B, 22 B to spare: fits, before the data and in
    simulate's reservation of the network built."""
    import dataclasses

    from models.bep.card import BEPConfig, train_state_bytes
    from sim.errors import HardwareLimitError
    method = models.REGISTRY["bep"]

    def loaded(*args, **kwargs):
        raise AssertionError("the data were loaded for a run the device cannot hold")
    monkeypatch.setitem(models.REGISTRY, "bep",
                        dataclasses.replace(method, load_data=loaded, simulate=loaded))
    with pytest.raises(HardwareLimitError, match="state of scope 'train' needs 196,640 B"):
        runner.prepare("bep", profile="cortex-m4", overrides={"hidden": (86, 7)})
    runner.prepare("bep", profile="cortex-m4", overrides={"hidden": (83, 41)})
    assert train_state_bytes(BEPConfig(hidden=(83, 41)), "random-prototypes", 32) == 196_586
    monkeypatch.setitem(models.REGISTRY, "bep", method)
    data = bep_data.for_config("random-prototypes", 200, 50)
    dev = BitwiseDevice("cortex-m4")
    run = method.simulate(BEPConfig(hidden=(83, 41), epochs=1), dev, data)
    assert run.metrics["state_bytes"] == 196_586
    assert dev.ledger.footprints()["train"]["writable"] == 196_586
    with pytest.raises(HardwareLimitError, match="needs 196,640 B"):
        method.simulate(BEPConfig(hidden=(86, 7), epochs=1), BitwiseDevice("cortex-m4"), data)


def test_the_fashion_mnist_bits_known_before_the_data_are_its_loaders(fashion_mnist):
    # 28 x 28 pixels, one bit each (the training median as threshold): 784 bits, no sequence
    from models.bep.card import INPUT_BITS
    data = bep_data.for_config("fashion-mnist", 300, 50)
    assert INPUT_BITS["fashion-mnist"] == (bep_data.bits_per_step(data),
                                           bep_data.is_sequence(data)) == (784, False)
