"""The COLA card through the runner and the CLI: a short counted digits run, its counts,
the same seed twice, config errors, ``neuroedge simulate`` writing a run file and report."""
import dataclasses

import pytest
import torch
from conftest import TOY_GPU

import models
from models import runner
from models.conformal_hashing.card import ColaConfig
from sim.errors import ModelError

SHORT = {"epochs": 2}   # the quick digits preset (1257 source / 540 target), 2 epochs


@pytest.fixture(scope="module")
def short_run():
    torch.set_num_threads(1)
    return runner.run("conformal_hashing", profile=TOY_GPU, dataset="digits", overrides=SHORT)


def test_registered_card():
    card = models.get("conformal_hashing").card
    assert card.datasets == ("fashion-mnist", "fashion-mild", "digits")
    assert card.main_metric == "map"
    cfg = runner.make_config("conformal_hashing", "quick", "digits", seed=3)
    assert (cfg.n_source, cfg.n_target, cfg.epochs, cfg.bits, cfg.seed) == (1257, 540, 10, 32, 3)


def test_config_errors():
    with pytest.raises(ModelError, match="variant = 'half'"):
        ColaConfig(variant="half")
    with pytest.raises(ModelError, match="r_cal = 1.0: must lie strictly between 0 and 1"):
        ColaConfig(r_cal=1.0)
    with pytest.raises(ModelError, match="bits = 0"):
        ColaConfig(bits=0)
    with pytest.raises(ModelError, match="uwhd_kernel = 'gather': must be one of matmul, lut"):
        ColaConfig(uwhd_kernel="gather")
    # the retrieval's profile was loaded only after training (a typo failed 5-7 s in)
    from hw_profiles.errors import ProfileError
    with pytest.raises(ProfileError, match="'x86-avx3': did you mean 'x86-avx2'"):
        ColaConfig(hamming_profile="x86-avx3")
    with pytest.raises(ModelError, match="'a100' is a gpu profile"):
        ColaConfig(hamming_profile="a100")


def test_hamming_kinds_are_the_bitwise_engines():
    from models.conformal_hashing.card import HAMMING_KINDS
    from sim.bitwise import BitwiseDevice
    assert HAMMING_KINDS == BitwiseDevice.kinds


def test_source_only_never_sees_the_target():
    """The "before alignment" reference: with no target term in the loss, training on two
    different target sets gives the same network, bit for bit (the target is only looked
    at for the set-size trace and for calibration, which a source-only loss never uses)."""
    from models.conformal_hashing.data import load
    from models.conformal_hashing.model import VARIANTS, train
    from sim.torch_engine.engine import TorchDevice
    torch.set_num_threads(1)
    pair = load("digits", 400, 200, 0)
    other = dataclasses.replace(pair, x_target=pair.x_target[::-1].copy())
    cfg = ColaConfig(epochs=1, n_source=400, n_target=200, count=False)
    nets = [train(p, cfg, TorchDevice("a100"), VARIANTS["source_only"])["net"]
            for p in (pair, other)]
    for (name, a), b in zip(nets[0].state_dict().items(), nets[1].state_dict().values(),
                            strict=True):
        assert torch.equal(a, b), name
    # while the full model does see it
    full = train(other, cfg, TorchDevice("a100"), VARIANTS["full"])["net"]
    assert not torch.equal(full.state_dict()["hash.weight"], nets[1].state_dict()["hash.weight"])


def test_short_run_counts(short_run):
    m, led = short_run.metrics, short_run.ledger
    # 1257 source images, round(0.25 * 1257) = 314 held out: 943 train per epoch, 2 epochs;
    # database min(940, 943) = 940 training images, 540 queries
    assert led.samples() == {"train": 2 * 943, "encode": 940 + 540, "retrieve/uwhd": 540,
                             "retrieve/hamming_rank": 540}
    # plain Hamming on the x86 bitwise engine: 32 bits fit one 64-bit word, so one XOR and
    # one popcount per query/database pair: 540 * 940
    assert m["hamming_popcount_words"] == 540 * 940
    assert short_run.facts["hamming_ledger_ops"]["xor_word"] == 540 * 940
    assert m["uwhd_macs"] == 540 * 940 * 32
    # the UWHD matmul is in the ledger: at least its 540 x 32 x 940 MACs
    macs = sum(v for k, v in led.total_ops("retrieve/uwhd").items() if k.startswith("mac_"))
    assert macs >= 540 * 940 * 32
    # what is not counted: the RNG of the bit-stability noise and MAP's cumulative sum
    assert set(led.uncounted()) <= {"randn", "cumsum"}
    assert 0 <= m["map"] <= 1 and m["map"] == m["map_uwhd"]
    assert 0 <= m["target_coverage"] <= 1 and 1 <= m["first_epoch_set_size"] <= 10
    assert short_run.traces["alpha_t"].data.shape == (2,)
    # Thm 3.1's terms: the gap to 1 - alpha and the bound's slack, from the reported figures
    assert m["coverage_gap"] == pytest.approx(1 - m["alpha_final"] - m["target_coverage"])
    assert m["coverage_bound_margin"] == pytest.approx(m["target_coverage"] - (
        1 - m["alpha_final"] - m["tv_hat"]))
    tr = short_run.traces
    assert tr["coverage_gap"].data.tolist() == pytest.approx(
        (1 - tr["alpha_t"].data - tr["target_coverage"].data).tolist())
    assert tr["tv_hat"].data.shape == (2,) and ((0 <= tr["tv_hat"].data) & (
        tr["tv_hat"].data <= 1)).all()
    # epoch 1 calibrates the untrained network at alpha = 0.5 (reading 3): its sets are
    # larger than the argmax label alone
    assert tr["conformal_set_size"].data.shape == (2,) and tr["conformal_set_size"].data[0] > 1


def test_lookup_table_retrieval_option(short_run):
    """``uwhd_kernel=lut``: the same training (same seed), the same UWHD ranking up to float
    rounding, and the ledger's retrieval MACs are the tables' alone."""
    lut = runner.run("conformal_hashing", profile=TOY_GPU, dataset="digits",
                     overrides={**SHORT, "uwhd_kernel": "lut"})
    m = lut.metrics
    assert m["map_hamming"] == short_run.metrics["map_hamming"]
    assert m["map_uwhd"] == pytest.approx(short_run.metrics["map_uwhd"], abs=1e-3)
    # 540 queries x 32 / 8 = 4 bytes x 256 entries x 8 bits: 4,423,680 MACs; then one
    # lookup and add per query, database code and byte: 540 x 940 x 4
    macs = sum(v for k, v in lut.ledger.total_ops("retrieve/uwhd").items()
               if k.startswith("mac_"))
    assert macs == m["uwhd_macs"] == 540 * 4 * 256 * 8
    assert m["uwhd_lookups"] == 540 * 940 * 4
    assert set(lut.ledger.uncounted()) <= {"randn", "cumsum"}


def test_same_seed_same_run(short_run):
    again = runner.run("conformal_hashing", profile=TOY_GPU, dataset="digits", overrides=SHORT)
    for key in ("map", "map_hamming", "target_coverage", "final_train_loss"):
        assert again.metrics[key] == short_run.metrics[key], key
    assert again.ledger.total_ops() == short_run.ledger.total_ops()


def test_cli_simulate_writes_run_file_and_report(tmp_path):
    from deploy.cli import main
    out = tmp_path / "cola.h5"
    assert main(["simulate", "conformal_hashing", "--profile", str(TOY_GPU), "--dataset",
                 "digits", "--set", "epochs=1", "--set", "n_query=100", "--out", str(out),
                 "--quiet"]) == 0
    assert out.stat().st_size > 0
    assert list(tmp_path.glob("*.html"))
