"""The tsetlin card through the runner: priced training and inference with exact inference
counts, and ``artifact`` (target c) rebuilt from the arrays only, bit for bit the machine's."""
import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import models
from models import runner
from models.registry import Trained
from models.tsetlin.card import artifact
from sim.artifacts import BitwiseArtifact
from sim.bitwise import BitwiseDevice
from sim.errors import ModelError


@pytest.fixture(scope="module")
def digits_run():
    """The quick digits run (the export's training set): 100 clauses per class, 10 epochs."""
    return runner.run("tsetlin", dataset="digits", seed=0)


@pytest.mark.parametrize("profile", ["cortex-m4", "fpga-bnn"])
def test_simulate_digits_prices_training_and_inference(profile):
    # k of n run seeds (TsetlinConfig.seed): at least 4 of 5 above 80% test accuracy (10
    # classes: chance is 0.1); measured seeds 0-4 on cortex-m4: 0.887, 0.838, 0.878, 0.882,
    # 0.873; on fpga-bnn: 0.847, 0.833, 0.891, 0.858, 0.844 (seeds 0-19, both: 0.831-0.893).
    # ~0.05 s a seed once the first run has compiled.
    runs = [runner.run("tsetlin", profile=profile, dataset="digits", seed=s,
                       overrides={"epochs": 3, "clauses": 40}) for s in range(5)]
    accs = [run.metrics["test_accuracy"] for run in runs]
    assert sum(a > 0.8 for a in accs) >= 4, accs
    r = runs[0]                                          # the counts: seed 0's
    per_sample = r.ledger.price(r.profile).per_sample_j()
    assert r.metrics["energy_per_train_sample_j"] == per_sample["train"]
    assert r.metrics["energy_per_inference_j"] == per_sample["infer"]
    wb = 32 if profile == "cortex-m4" else 64
    assert r.facts["word_bits"] == wb
    # 1347 training digits x 3 epochs; 450 test digits
    assert r.ledger.samples() == {"train": 3 * 1347, "infer": 450}
    # inference (clause_votes): per digit and clause, W = ceil(192 / wb) words of
    # 2 and_word + 2 or_word, 1 int_cmp; 10 x 40 = 400 clauses; argmax: 9 int_cmp per digit
    w = -(-192 // wb)
    ops = r.ledger.total_ops("infer")
    assert ops["and_word"] == ops["or_word"] == 450 * 400 * w * 2
    assert ops["int_cmp"] == 450 * 400 + 450 * 9
    # the model as the C export stores it: per clause the include masks of the 192 plain
    # and the 192 negated literals, each in ceil(192 / wb) words of wb / 8 bytes (32-bit:
    # 6 x 4 B, 64-bit: 3 x 8 B, = 24 B either way), and an int32 class and an int32 weight:
    # 10 x 40 clauses x (2 x 24 + 2 x 4) B = 400 x 56 = 22,400 B, the run's Footprint too
    assert r.metrics["model_bytes"] == 10 * 40 * (2 * w * wb // 8 + 2 * 4) == 22400
    assert r.metrics["model_bytes"] == r.neurobench["Footprint"]


def test_runner_refuses_other_kinds():
    with pytest.raises(ModelError, match="runs on bitwise profiles"):
        runner.prepare("tsetlin", profile="a100")


def test_artifact_is_the_trained_machine_bit_for_bit(digits_run):
    trained = digits_run.trained
    assert trained.arrays["include"].shape == (10, 100, 384)    # C, m, 2o literals
    again = Trained({k: np.array(v) for k, v in trained.arrays.items()},
                    json.loads(json.dumps(trained.meta)))       # as a run file gives it back
    art = artifact(again, "c")
    assert isinstance(art, BitwiseArtifact) and art.profile == "stm32l4r5"   # the default
    assert art.inputs.shape == (16, 6)                          # 192 bits in 32-bit words
    out = BitwiseDevice(art.profile).run(art.layers, art.inputs)
    # golden scores: the machine's own class sums on those test digits (TsetlinMachine.scores)
    assert np.array_equal(out.scores, trained.arrays["golden_scores"])
    assert np.array_equal(out.labels, trained.arrays["golden_labels"])
    assert np.ptp(out.scores) > 0                               # clauses fire and differ
    with pytest.raises(ModelError, match="exports to 'c' only"):
        artifact(again, "nir")


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_c_export_is_bit_exact(tmp_path, target, digits_run):
    from deploy.c_export import check_c_project, export_c, missing_tools
    if missing_tools(target):
        pytest.skip(f"C target {target}: {missing_tools(target)}")
    art = artifact(digits_run.trained, "c")
    want = BitwiseDevice(art.profile).run(art.layers, art.inputs)
    out = export_c(art.layers, art.inputs, tmp_path / "tm", profile=art.profile)
    run = check_c_project(out, want, target=target)
    assert np.array_equal(run.labels, want.labels) and np.array_equal(run.scores, want.scores)


@pytest.mark.slow   # five quick runs; the first fpga-bnn run compiles its 64-bit kernels
def test_classification_table_is_the_quick_runs(fashion_mnist):     # (77 s at load ~9)
    """bench/RESULTS.md's classification table and the room README's sentence state these
    quick runs (seed 0) at the printed precision; the digits / stm32l4r5 row, the default
    run, is checked by ``test_contract.py::test_docs_state_the_quick_runs_figures``."""
    import doc_figures
    runs = {(ds, p): runner.run("tsetlin", dataset=ds, profile=p, seed=0).metrics
            for ds, p in [("digits", "stm32h7a3"), ("digits", "fpga-bnn"),
                          ("fashion-mnist", "fpga-bnn")]}
    pairs = [("bench/RESULTS.md", doc_figures.tsetlin_row(ds, p, m))
             for (ds, p), m in runs.items()]
    f, e = runs["fashion-mnist", "fpga-bnn"], doc_figures.format_energy
    # 0.742 -> "74.2%"; 115.2 uJ -> "115"; 20.66 uJ -> "20.7 uJ"; digits 2.564 uJ -> "2.56 uJ"
    pairs.append(("models/tsetlin/README.md",
                  f"Fashion-MNIST (5000 images, 2 epochs) {doc_figures.pct(f['test_accuracy'])} "
                  f"on fpga-bnn at {e(f['energy_per_train_sample_j']).removesuffix(' uJ')} / "
                  f"{e(f['energy_per_inference_j'])} (digits there: "
                  f"{e(runs['digits', 'fpga-bnn']['energy_per_inference_j'])} per inference)"))
    assert doc_figures.absent(pairs) == []


@pytest.mark.parametrize("dataset,profile,need", [("digits", "cortex-m4", "384,000 B"),
                                                  ("digits", "cortex-m7", "384,000 B")])
def test_training_state_that_does_not_fit_is_refused(dataset, profile, need):
    """The automata are written at every update: 10 classes x 100 clauses x 384 literals x
    8 bit-planes / 8 = 384,000 B of writable state, more than cortex-m4's 196,608 B and
    cortex-m7's 327,680 B of SRAM (it was trained and priced there without a check)."""
    from sim.errors import HardwareLimitError
    with pytest.raises(HardwareLimitError, match=f"state of scope 'train' needs {need}"):
        runner.run("tsetlin", dataset=dataset, profile=profile, seed=0)


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None
                    or shutil.which("arm-none-eabi-size") is None, reason="no arm toolchain")
def test_model_bytes_are_the_flash_the_exported_model_takes(tmp_path):
    """model_bytes was 2 x include bits / 8 (Noisy XOR: 2 x 2 x 10 x 24 / 8 = 120 B), but
    the exported model.c stores whole words and an int32 class and weight per clause:
    20 clauses x (2 masks x 1 word x 4 B + 2 x 4 B) = 320 B of .rodata on a Cortex-M4."""
    from deploy.c_export import export_c
    run = runner.run("tsetlin", dataset="noisy-xor", profile="cortex-m4", seed=0,
                     overrides={"epochs": 1})
    assert run.metrics["model_bytes"] == 20 * (2 * 1 * 4 + 2 * 4) == 320
    art = artifact(run.trained, "c")
    out = export_c(art.layers, art.inputs, tmp_path / "nx", profile=art.profile)
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb",
                    "-c", str(out / "model.c"), "-o", str(tmp_path / "model.o")], check=True)
    sizes = subprocess.run(["arm-none-eabi-size", "-A", str(tmp_path / "model.o")],
                           capture_output=True, text=True, check=True).stdout
    rodata = [int(line.split()[1]) for line in sizes.splitlines()
              if line.startswith(".rodata")]
    assert sum(rodata) == run.metrics["model_bytes"], f"{out}: {sizes}"


def test_a_machine_too_large_for_the_device_is_refused_before_its_data(monkeypatch):
    """``export tsetlin --profile cortex-m4`` trained once on digits (3-9 s) before the
    device refused the automata: runner.prepare knows their size from the config and the
    data set's shape (10 classes x 100 clauses x 8 planes x 6 words x 4 B = 384,000 B)."""
    from sim.errors import HardwareLimitError
    method = models.REGISTRY["tsetlin"]

    def loaded(*args, **kwargs):
        raise AssertionError("the data were loaded for a run the device cannot hold")
    monkeypatch.setitem(models.REGISTRY, "tsetlin",
                        dataclasses.replace(method, load_data=loaded, simulate=loaded))
    with pytest.raises(HardwareLimitError, match="state of scope 'train' needs 384,000 B"):
        runner.prepare("tsetlin", dataset="digits", profile="cortex-m4")
    runner.prepare("tsetlin", dataset="digits", profile="stm32l4r5")       # 640 KB: fits


def test_a_refusal_names_the_clauses_that_fit_and_the_profiles_that_hold_it():
    """The refusal said only "shrink the model". Fashion-MNIST quick: 10 classes x 200 clauses
    x 8 planes x 49 words (2 x 784 literals / 32) x 4 B = 3,136,000 B, 15,680 B per clause;
    stm32l4r5's 655,360 B hold 41.8 -> 40 (even: alternate polarity); cortex-m4's 196,608 B
    hold 12.5 -> 12; fpga-bnn is the shipped bitwise profile whose memory holds it."""
    from sim.errors import HardwareLimitError
    for profile, most in (("stm32l4r5", 40), ("cortex-m4", 12)):
        with pytest.raises(HardwareLimitError) as info:
            runner.prepare("tsetlin", dataset="fashion-mnist", profile=profile)
        message = str(info.value)
        assert f"at most {most} clauses per class fit on {profile} (--set clauses={most})" \
            in message
        assert message.endswith("or run it on fpga-bnn")
        # the setting it names passes the same check
        runner.prepare("tsetlin", dataset="fashion-mnist", profile=profile,
                       overrides={"clauses": str(most)})


def test_cli_export_too_large_is_refused_before_training(tmp_path, capsys):
    from deploy.cli import main
    assert main(["export", "tsetlin", "--target", "c", "--profile", "cortex-m4", "--out",
                 str(tmp_path / "late")]) == 2
    out, err = capsys.readouterr()
    assert "training once" not in out + err
    assert err.startswith("neuroedge: error:") and "needs 384,000 B" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("word_bits", [16, 48, 128])
def test_a_profile_of_another_word_width_is_refused_before_its_data(word_bits, tmp_path,
                                                                    monkeypatch):
    from hw_profiles import load
    method = models.REGISTRY["tsetlin"]

    def loaded(*args, **kwargs):
        raise AssertionError("the data were loaded for a device that cannot run")
    monkeypatch.setitem(models.REGISTRY, "tsetlin",
                        dataclasses.replace(method, load_data=loaded, simulate=loaded))
    text = Path(load("stm32l4r5").path).read_text()
    prof = tmp_path / "odd.toml"
    prof.write_text(text.replace('name = "stm32l4r5"', 'name = "odd"', 1)
                    .replace("word_bits = { value = 32,", f"word_bits = {{ value = {word_bits},",
                             1))
    assert f"value = {word_bits}," in prof.read_text()
    with pytest.raises(ModelError, match=f"word_bits = {word_bits}; the bitwise engine needs "
                                         "32 or 64"):
        runner.prepare("tsetlin", dataset="noisy-xor", profile=str(prof))


@pytest.mark.parametrize("dataset", ["digits", "noisy-xor"])
@pytest.mark.parametrize("profile", ["stm32l4r5", "fpga-bnn"])
def test_the_state_known_before_the_data_is_the_machines(dataset, profile):
    """The size the runner checks before loading anything is the machine's real state."""
    from models.tsetlin.card import TsetlinConfig, train_state_bytes
    from models.tsetlin.data import FEATURES
    from models.tsetlin.data import load as load_set
    from models.tsetlin.model import TsetlinMachine
    data = load_set(dataset)
    assert FEATURES[dataset] == (data.n_features, data.n_classes)
    cfg = TsetlinConfig(clauses=6, state_bits=5)
    dev = BitwiseDevice(profile)
    tm = TsetlinMachine(data.n_features, data.n_classes, cfg, dev)
    assert train_state_bytes(cfg, dataset, dev.word_bits) == tm.state.nbytes


def test_the_fashion_mnist_features_known_before_the_data_are_its_loaders(fashion_mnist):
    # 28 x 28 pixels thresholded at 75/255, one boolean each: 784 features, 10 classes
    from models.tsetlin.data import FEATURES
    from models.tsetlin.data import load as load_set
    data = load_set("fashion-mnist", limit_train=300, limit_test=50)
    assert FEATURES["fashion-mnist"] == (data.n_features, data.n_classes) == (784, 10)
