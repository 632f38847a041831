"""Issue 12 acceptance: `neuroedge export bep --target c` trains once, and the same export
`--from RUN.h5` trains not at all and writes the same project (the run file kept the state).

Both bitwise cards that export C are run for one epoch on digits (their export data set),
so each case takes a few seconds; the C project itself is checked against BitwiseDevice by
the rooms' own tests (tests/models/bep, tests/models/tsetlin).
"""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import models
from deploy.cli import main


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _counting(monkeypatch, name: str) -> list:
    """Wrap ``name``'s simulate so the test sees how often it trained."""
    calls: list = []
    method = models.REGISTRY[name]

    def simulate(*args, **kwargs):
        calls.append(1)
        return method.simulate(*args, **kwargs)
    monkeypatch.setitem(models.REGISTRY, name, dataclasses.replace(method, simulate=simulate))
    return calls


def _refusing(monkeypatch, name: str) -> None:
    method = models.REGISTRY[name]

    def trained(*args, **kwargs):
        raise AssertionError(f"{name} trained during an export --from a run file")
    monkeypatch.setitem(models.REGISTRY, name,
                        dataclasses.replace(method, simulate=trained, load_data=trained))


@pytest.mark.parametrize("name", ["bep", "tsetlin"])
def test_export_c_trains_once_and_from_the_run_file_not_at_all(name, tmp_path, monkeypatch,
                                                              capsys):
    calls = _counting(monkeypatch, name)
    fresh = tmp_path / "fresh"
    assert main(["export", name, "--target", "c", "--set", "epochs=1", "--out",
                 str(fresh)]) == 0
    assert calls == [1]                       # one training for one export
    run = tmp_path / "run.h5"
    assert main(["simulate", name, "--dataset", "digits", "--set", "epochs=1",
                 "--out", str(run), "--html", str(tmp_path / "run.html")]) == 0
    assert calls == [1, 1]
    _refusing(monkeypatch, name)
    again = tmp_path / "again"
    assert main(["export", "--target", "c", "--from", str(run), "--out", str(again)]) == 0
    # same card, data, seed and settings -> the same trained state -> byte-identical project
    assert _tree(fresh) == _tree(again) and any(p.endswith(".c") for p in _tree(fresh))


def test_export_snn_cuba_nir_from_the_run_file_is_the_run_network(tmp_path, monkeypatch,
                                                                  capsys):
    """The NIR export of a run file holds the run's own network: the same weights as an
    export that simulated it fresh (400 neurons, 10 ms: a fraction of a second each)."""
    nir = pytest.importorskip("nir")
    settings = ["--set", "n=400", "--set", "duration=0.01"]
    calls = _counting(monkeypatch, "snn_cuba")
    fresh = tmp_path / "fresh.nir"
    assert main(["export", "snn_cuba", "--target", "nir", *settings, "--out", str(fresh)]) == 0
    run = tmp_path / "run.h5"
    assert main(["simulate", "snn_cuba", *settings, "--out", str(run),
                 "--html", str(tmp_path / "run.html")]) == 0
    assert calls == [1, 1]
    _refusing(monkeypatch, "snn_cuba")
    again = tmp_path / "again.nir"
    assert main(["export", "--target", "nir", "--from", str(run), "--out", str(again)]) == 0
    # VA CUBA is self-sustained: its Input is a zero-weight placeholder for the type check
    a, b = nir.read(fresh), nir.read(again)
    assert sorted(a.nodes) == sorted(b.nodes) and sorted(a.edges) == sorted(b.edges)
    weights = [k for k, node in a.nodes.items() if hasattr(node, "weight")]
    assert weights       # the projections are there, and equal to the last bit
    for k in weights:
        np.testing.assert_array_equal(a.nodes[k].weight, b.nodes[k].weight)


def test_compare_on_a_chip_too_small_leaves_it_out_with_the_reason(tmp_path, capsys):
    """VA CUBA at 2000 neurons with p = 0.2 gives each neuron ~400 inputs (386 distinct for
    neuron 0), more than TrueNorth's 256-axon fan-in: that chip is left out of the comparison
    with one line, and the run (19 Loihi cores), its report and the other chip stay."""
    out = tmp_path / "run.h5"
    assert main(["simulate", "snn_cuba", "--set", "duration=0.005", "--set", "n=2000",
                 "--set", "p=0.2", "--profile", "loihi", "--compare", "truenorth,loihi2",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().err   # a status line, beside the progress bar
    assert ("not compared on truenorth: [NeuromorphicDevice.compile] population 'cuba' "
            "neuron 0: fan-in") in text
    html = out.with_suffix(".html").read_text()
    assert "loihi2" in html and "Energy on truenorth" not in html


def test_compare_on_a_microcontroller_too_small_leaves_it_out_with_the_reason(tmp_path, capsys):
    """A bitwise run whose training state does not fit cortex-m4's SRAM: the comparison
    leaves cortex-m4 out with one line (it exited 2 after writing the run file, and wrote
    no report). BEP with two hidden layers of 256 keeps int16 counters plus packed W and W^T,
    rows padded to whole 32-bit words: 2 x (256,000 + 65,536) + (256 x 32 + 1000 x 8 + 256 x 8
    + 256 x 8) x 4 = 724,224 B, against cortex-m4's 196,608 B of SRAM."""
    out = tmp_path / "run.h5"
    assert main(["simulate", "bep", "--profile", "stm32h7a3", "--set", "hidden=[256,256]",
                 "--set", "epochs=1", "--set", "limit_train=300", "--set", "limit_test=50",
                 "--compare", "cortex-m4,fpga-bnn", "--out", str(out)]) == 0
    text = capsys.readouterr().err
    assert ("not compared on cortex-m4: [price] cortex-m4: state of scope 'train' needs "
            "724,224 B") in text
    # fpga-bnn computes 64-bit words: the run's 32-bit word counts are not its own (they
    # were priced at its 64-bit energy, about twice its own run's figure)
    assert "not compared on fpga-bnn: the ledger's word ops were counted in 32-bit" in text
    assert out.exists() and out.with_suffix(".html").exists()


def test_a_run_its_own_device_cannot_hold_keeps_its_file_and_says_so(tmp_path, capsys,
                                                                      monkeypatch):
    """The fit of a torch run on a microcontroller is known when its ledger is priced, after
    training: the run file was left behind without a word. An MLP 64-2000-10 trained with
    Adam keeps 2,400,180 B writable, against cortex-m7's 327,680 B of SRAM."""
    out = tmp_path / "m7.h5"
    argv = ["simulate", "mlp", "--profile", "cortex-m7", "--set", "hidden=[2000]",
            "--set", "epochs=1", "--out", str(out)]
    # the MLP now refuses it before training: 64*2000 + 2000 + 2000*10 + 10 = 150,010
    # parameters x 16 B (weight, gradient, Adam's two moments) = 2,400,160 B; nothing written
    assert main(argv) == 2
    assert "needs 2,400,160 B of writable memory" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # a run whose ledger turns out too large when priced (the up-front check skipped): the
    # ledger holds those 2,400,160 B and 20 B more of the optimizer's bookkeeping
    monkeypatch.setattr("models.baselines.mlp.model.check_training_fits",
                        lambda *a, **k: None)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "needs 2,400,180 B of writable memory" in err
    assert f"the run file '{out}' is written and kept" in err
    assert out.exists() and not out.with_suffix(".html").exists()
    assert main(["report", str(out), "--profile", "stm32h7a3", "--html",
                 str(tmp_path / "r.html")]) == 2   # 1.25 MB of SRAM: still too small
    assert main(["report", str(out), "--profile", "a100", "--html",
                 str(tmp_path / "r.html")]) == 0
