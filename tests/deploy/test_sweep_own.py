"""A model of your own (``FILE.py:NAME``) in a sweep: profiles x batch x dtype, each run the
figures ``estimate`` gives, the profiles it cannot run on named in their rows, resume, and
bad specs in one line before anything runs."""
from __future__ import annotations

import pytest

from deploy import sweep
from deploy.errors import SweepError
from deploy.estimate import estimate
from deploy.estimate_cli import load_model
from deploy.headline import profile_row
from deploy.runfile import read_run

NET = '''import torch.nn as nn


def make_net():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def wide():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 8192), nn.ReLU(), nn.Linear(8192, 10))
'''
PROFILES = ["a100", "cortex-m4", "loihi2"]


def _spec(folder, model="net.py:make_net", **extra):
    (folder / "net.py").write_text(NET)
    return {"name": "own", "models": [model], "input_shape": [1, 1, 8, 8],
            "profiles": PROFILES, "grid": {"batch": [1, 4], "dtype": ["fp32", "int8"]},
            **extra}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own")
    spec = _spec(folder)
    path = folder / "own.toml"
    import tomli_w
    path.write_text(tomli_w.dumps(spec))   # FILE relative to the spec's folder
    out = folder / "out"
    return folder, path, out, sweep.run_sweep(path, out, serial=True)


def test_each_run_prices_as_estimate_does(swept):
    folder, _, out, res = swept
    assert len(res.simulated) == 4 and not res.failed   # 2 batches x 2 dtypes
    rows = sweep.read_table(out / "results.csv")
    assert len(rows) == 4 * 3                            # x 3 profiles
    module_file = f"{folder / 'net.py'}:make_net"
    for batch in (1, 4):
        for dtype in ("fp32", "int8"):
            est = estimate(load_model(module_file), (batch, 1, 8, 8), profiles=PROFILES,
                           dtype=dtype)
            mine = [r for r in rows if r["overrides"] == f"batch={batch} dtype={dtype}"]
            assert [r["profile"] for r in mine] == PROFILES
            for r in mine:
                if r["profile"] in est.reports:
                    want = profile_row(est.reports[r["profile"]], est.reports[r["profile"]])
                    assert r["status"] == "ok"
                    # the same ledger priced on the same profile: equal to the last digit
                    assert float(r["per_inference_j"]) == want["per_inference_j"]
                    assert float(r["energy_j"]) == want["total_j"]
                else:
                    assert r["status"] == "error"
                    assert r["error"] == f"pricing: {est.skipped[r['profile']]}"
            # 64*32 + 32 + 32*10 + 10 = 2,410 parameters
            assert {r["parameters"] for r in mine} == {"2410.0"}
    key = "net.make_net-a100-seed0-batch=4-dtype=int8"
    run = read_run(out / "runs" / f"{key}.h5")
    assert run.config["input_shape"] == [4, 1, 8, 8] and run.config["dtype"] == "int8"
    assert run.dataset == "random-normal"
    assert "neuromorphic chip" in run.facts["skipped"]["loihi2"]


def test_resume_reprices_the_same_rows(swept, tmp_path):
    import shutil
    _, path, out, _ = swept
    copy = tmp_path / "again"
    shutil.copytree(out, copy)
    res = sweep.run_sweep(path, copy, serial=True, resume=True)
    assert len(res.resumed) == 4 and not res.simulated
    assert (copy / "results.csv").read_text() == (out / "results.csv").read_text()


def test_a_model_too_large_for_a_chip_is_a_row_not_a_failure(tmp_path):
    # (64*8192 + 8192 + 8192*10 + 10) * 4 B = 2,457,640 B > cortex-m4's 1,245,184 B
    spec = _spec(tmp_path, f"{tmp_path / 'net.py'}:wide", grid={"batch": [1]})
    res = sweep.run_sweep(spec, tmp_path / "out", serial=True)
    assert not res.failed
    m4 = next(r for r in res.rows if r["profile"] == "cortex-m4")
    assert m4["status"] == "error" and "2457640 B exceeds cortex-m4" in m4["error"]
    assert next(r for r in res.rows if r["profile"] == "a100")["status"] == "ok"


def test_a_language_model_sweeps_on_token_ids(tmp_path):
    """``input_dtype = ["int64"]``: each run counts the model on token ids below its input
    embedding's vocabulary, as ``neuroedge estimate --input-dtype int64`` does."""
    from deploy.estimate import token_ids
    (tmp_path / "lm.py").write_text("import torch.nn as nn\n\n\ndef make():\n"
                                    "    return nn.Sequential(nn.Embedding(50, 8), "
                                    "nn.Linear(8, 50))\n")
    spec = {"name": "lm", "models": [f"{tmp_path / 'lm.py'}:make"], "input_shape": [2, 12],
            "profiles": ["a100"], "grid": {"input_dtype": ["int64"]}}
    res = sweep.run_sweep(spec, tmp_path / "out", serial=True)
    assert not res.failed and [r["status"] for r in res.rows] == ["ok"]
    module = load_model(f"{tmp_path / 'lm.py'}:make", seed=0)
    want = estimate(module, token_ids(module, (2, 12), 0)[0], profiles=["a100"])
    run = read_run(next((tmp_path / "out").rglob("*.h5")))
    assert run.ledger.total_ops() == want.ledgers["a100"].total_ops()
    assert run.config["input_dtype"] == "int64"


@pytest.mark.parametrize("change, message", [
    ({"input_shape": None}, "is a model of your own: give input_shape = [1, 1, 28, 28]"),
    ({"input_shape": [1, 0]}, "input_shape = [1, 0]; give the shape of one inference"),
    ({"grid": {"hidden": [8]}}, "grid.hidden: --set hidden: your own model net.py:make_net "
                                "takes batch, dtype, input_dtype"),
    ({"grid": {"dtype": ["fp16"]}}, "--set dtype=fp16: give one of fp32, int8"),
    ({"grid": {"input_dtype": ["int32"]}}, "--set input_dtype=int32: give one of float32, "
                                           "int64"),
    ({"grid": {"batch": [0]}}, "--set batch=0: give an integer >= 1"),
    ({"models": ["nope.py:make_net"]}, "nope.py' is not a file; give FILE.py:NAME"),
    ({"models": ["net.py:mkae_net"]}, "has no 'mkae_net'; it defines make_net, wide"),
    ({"profiles": ["loihi2"]}, "your own torch model runs on gpu, cpu, bitwise profiles"),
])
def test_bad_own_spec_is_one_line(tmp_path, change, message):
    import tomli_w
    spec = {k: v for k, v in {**_spec(tmp_path), **change}.items() if v is not None}
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(spec))
    with pytest.raises(SweepError) as info:
        sweep.run_sweep(path, tmp_path / "never", serial=True)
    text = str(info.value)
    assert "\n" not in text and message in text, text
    assert not (tmp_path / "never").exists()


def test_cards_take_no_input_shape_and_searches_take_no_own_model(tmp_path):
    with pytest.raises(SweepError, match="input_shape applies to models of your own"):
        sweep.load_spec({"models": ["mlp"], "profiles": ["a100"], "input_shape": [1, 64]})
    spec = _spec(tmp_path, f"{tmp_path / 'net.py'}:make_net", grid={},
                 search={"trials": 2, "objectives": ["energy_j:min"],
                         "space": {"batch": {"low": 1, "high": 8}}})
    with pytest.raises(SweepError, match=r"a search runs a card model .* with \[grid\]"):
        sweep.load_spec(spec)
