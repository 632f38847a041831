"""The tsetlin card through the runner: priced training and inference with exact inference
counts, and ``artifact`` (target c) rebuilt from the arrays only, bit for bit the machine's."""
import json

import numpy as np
import pytest

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
    # the model: 10 x 40 clauses x 384 literals, 2 planes-worth of bits each (pos, neg masks)
    assert r.metrics["model_bytes"] == 2 * 10 * 40 * 384 / 8


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
