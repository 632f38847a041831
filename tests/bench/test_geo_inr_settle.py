"""bench/geo_inr_settle.py: resumed pre-training is one run, the stopping rule (validation
probe R^2 > 0 or the step cap), unusable encoders kept out of the correlation but listed,
the seed rule, and the figures rendered from the stored RESULT
(bench/out/geo_inr_settle.json)."""
import json
from pathlib import Path

import pytest
import torch

import sim
from bench import geo_inr_settle as gs
from models.geo_inr_id import data as geo_data
from models.geo_inr_id import model as M
from models.geo_inr_id.card import GeoIdConfig

ROOT = Path(__file__).resolve().parents[2]
TINY = {"n_pretrain": 200, "n_eval": 150, "probe_steps": 2, "batch_size": 64, "count": False}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny():
    cfg = GeoIdConfig(**TINY, family="grid", resolution=2.0, seed=3)
    return cfg, geo_data.load(cfg.n_pretrain, cfg.n_eval, cfg.seed)


def dev():
    return M.Uncounted(sim.device("a100"))


def test_resumed_pretraining_is_one_run(tiny):
    """advance(3) then advance(4) leaves the weights one advance(7) leaves (same batch
    stream, same optimizer state); advance(3) alone does not."""
    cfg, data = tiny
    nets = []
    for chunks in ((3, 4), (7,), (3,)):
        run = M.Pretraining(M.build_encoder(cfg), data, cfg, dev())
        for c in chunks:
            run.advance(c)
        nets.append(torch.cat([p.detach().flatten() for p in run.enc.parameters()]))
        assert len(run.losses) == sum(chunks)
    assert torch.equal(nets[0], nets[1]) and not torch.equal(nets[0], nets[2])


def test_validation_points_are_their_own(tiny):
    cfg, data = tiny
    lonlat, y = gs.validation_set(data, cfg.seed, 120)
    assert lonlat.shape == (120, 2) and y.shape == (120, 8)      # 8 held-out fields
    assert geo_data.is_land(data.earth, lonlat).all()
    # no validation point is an evaluation point (other stream): min distance > 0
    d = torch.cdist(torch.as_tensor(lonlat), torch.as_tensor(data.eval_lonlat))
    assert float(d.min()) > 0


@pytest.mark.parametrize("script, steps, usable, checks",
                         [((-0.2, -0.1, 0.3), 5 + 2 * 4, True, 3),
                          ((0.4,), 5, True, 1),
                          ((-0.2,) * 9, 15, False, 4)])   # 5, 9, 13, then the cap 15
def test_training_stops_at_the_first_positive_validation_or_the_cap(
        tiny, monkeypatch, script, steps, usable, checks):
    cfg, data = tiny
    calls = iter(script)
    monkeypatch.setattr(gs, "validation_r2", lambda *a: next(calls))
    out = gs.settle_encoder(cfg, data, None, dev(), first=5, chunk=4, cap=15)
    assert out["steps"] == steps and out["usable"] is usable
    assert [h["steps"] for h in out["val_history"]][-1] == steps
    assert len(out["val_history"]) == checks
    # the first checkpoint is measured whatever follows; a longer run is measured again
    assert (out["final"] is out["at_first"]) == (checks == 1)


def enc(fishers, r2, usable=True, first=None):
    m = {"fishers": fishers, "mlp_r2": r2, "ridge_r2": r2, "mle_k20": fishers}
    return {"usable": usable, "final": m, "at_first": first or m, "steps": 400}


def test_unusable_encoders_are_listed_and_left_out_of_rho():
    # usable: ID 1, 2, 3 with R^2 0.1, 0.2, 0.3 -> rho +1; the unusable one (ID 9, R^2 -1)
    # would pull it down if counted
    encs = {"a": enc(1, .1), "b": enc(2, .2), "c": enc(3, .3), "z": enc(9, -1.0, False)}
    c = gs.correlate(encs)
    assert c["n_usable"] == 3 and c["unusable"] == ["z"]
    assert c["rho_settled"] == pytest.approx(1.0)
    # at the first checkpoint every encoder counts: ranks (1,2,3,4) vs (2,3,4,1), d^2 sum
    # 1 + 1 + 1 + 9 = 12, rho = 1 - 6 * 12 / (4 * 15) = -0.2
    assert c["rho_first"] == pytest.approx(-0.2)


def test_seed_rule():
    assert gs.verdict([0.5, 0.1, -0.2]) == {"positive_seeds": 2, "seeds": 3, "needed": 2,
                                             "holds": True}
    assert not gs.verdict([0.5, float("nan"), -0.2])["holds"]   # nan is not > 0
    assert gs.verdict([0.1] * 5)["needed"] == 4                 # ceil(10 / 3)


@pytest.mark.skipif(not gs.RESULT_FILE.exists(), reason="no stored geo_inr_settle RESULT")
def test_figures_are_the_stored_run():
    """RESULTS.md, the room README and claims.md show what the stored RESULT renders, and
    the stored run kept the protocol."""
    result = json.loads(gs.RESULT_FILE.read_text())
    table = gs.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "geo_inr_id" / "README.md").read_text()
    assert gs.claim_text(result) in (ROOT / "docs" / "claims.md").read_text()
    assert len(result["seeds"]) >= 3
    for s in result["seeds"].values():
        assert len(s["encoders"]) == 16 == s["n_encoders"]
        for e in s["encoders"].values():
            last = e["val_history"][-1]
            assert e["usable"] == (last["val_r2"] > 0) and e["steps"] == last["steps"]
            assert result["first_steps"] <= e["steps"] <= result["step_cap"]
            # trained on only while the validation probe was not above 0
            assert all(h["val_r2"] <= 0 for h in e["val_history"][:-1])
            assert e["usable"] or e["steps"] == result["step_cap"]
        assert s == {**s, **gs.correlate(s["encoders"])}
    assert result["verdict"] == gs.verdict([s["rho_settled"] for s in result["seeds"].values()])
