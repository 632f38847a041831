"""The same seed gives the same ledger, scope by scope, for every registered model.

Each run happens in its own Python process with its own string-hash seed
(``PYTHONHASHSEED`` 1 and 2): a scope name that depends on the iteration order of a set or
on an object's address then differs between the two runs, as tversky's did when torch's
ModuleTracker named backward scopes (51 to 71 scopes from one seed). Two runs inside one
process share the hash seed and would hide that.

The default run uses a reduced configuration (``REDUCED``: a few steps, small data) of the
models for which one is cheap; ``-m slow`` runs every registered model's quick preset (what
``neuroedge simulate MODEL`` runs), which takes minutes for klas, tversky, filter_heads and
chunk_sparse_attention. A model registered without an entry in ``REDUCED`` fails
``test_every_model_is_covered``: its author decides whether it has a cheap setting.

Run as a script, this file is the child process: ``python test_same_seed.py OUT PRESET``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# simulate() keyword arguments of the reduced run of each model in the default test run
# (CPU seconds per run measured on the shared 2-core machine); None: only the quick preset,
# under -m slow, because no reduced setting of its simulate() is cheap (its fixed costs:
# evaluation, mask search, orbit tables, take 10-30 CPU s whatever the training length)
REDUCED = {
    "mlp": {"epochs": 2},                                                     # ~4 s
    "bep": {},                                  # the quick preset itself,      ~2 s
    "tversky": {"train": 256, "test": 128, "epochs": 2, "batch_size": 128},   # ~3 s, visualise on
    "snn_cuba": {"n": 200, "duration": 0.02},                                 # < 1 s
    "chunk_sparse_attention": {"steps": 4, "batch": 2, "warmup": 1},          # ~8 s (evaluation)
    "tsetlin": {"epochs": 1},                                                 # ~2 s
    "diffpc": {"epochs": 1},                                                  # ~1 s
    "klas": None,            # reduced: ~9 s
    "fs-kan": None,          # reduced (steps=10): ~16 s
    "filter_heads": None,    # reduced (8 steps, 16 mask pairs): ~26 s
    "pc": None,              # reduced (epochs=1): ~11 s
}
SEED = 0


def _simulate_all(preset: str) -> dict:
    """{model: ledger dict} for every registered model, seed ``SEED``."""
    import models
    out = {}
    for name, card in models.REGISTRY.items():
        if preset == "quick":
            out[name] = card.simulate(seed=SEED, quick=True).ledger.to_dict()
        elif REDUCED[name] is not None:
            out[name] = card.simulate(seed=SEED, quick=True, **REDUCED[name]).ledger.to_dict()
    return out


def _runs(tmp_path_factory, preset: str) -> list[dict]:
    """The ledgers of two runs, each in a fresh process with its own string-hash seed."""
    base = tmp_path_factory.mktemp(f"same-seed-{preset}")
    runs = []
    for hash_seed in ("1", "2"):
        out = base / f"hash{hash_seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MPLBACKEND": "Agg",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run([sys.executable, __file__, str(out), preset], check=False, cwd=base, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:]
        runs.append(json.loads(out.read_text()))
    return runs


@pytest.fixture(scope="module")
def reduced_runs(tmp_path_factory, fashion_mnist):   # tversky's and klas's runs read it
    return _runs(tmp_path_factory, "reduced")


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory, fashion_mnist):
    return _runs(tmp_path_factory, "quick")


def _registered() -> list[str]:
    import models
    return list(models.REGISTRY)


def _assert_same(name: str, first: dict, second: dict) -> None:
    a = {s["scope"]: s for s in first[name]["scopes"]}
    b = {s["scope"]: s for s in second[name]["scopes"]}
    only = sorted(set(a) ^ set(b))
    assert not only, (f"{name}: {len(a)} vs {len(b)} scopes; in one run only: "
                      f"{only[:8]}{' ...' if len(only) > 8 else ''}")
    assert len(a) > 0, f"{name}: empty ledger"
    for scope, entry in a.items():
        for field in ("ops", "bytes", "uncounted", "samples"):
            assert entry.get(field) == b[scope].get(field), \
                f"{name} {scope} {field}: {entry.get(field)} vs {b[scope].get(field)}"


def test_every_model_is_covered():
    assert sorted(REDUCED) == sorted(_registered())


@pytest.mark.parametrize("name", [n for n in _registered() if REDUCED.get(n) is not None])
def test_same_seed_same_ledger_reduced(name, reduced_runs):
    _assert_same(name, *reduced_runs)


@pytest.mark.slow
@pytest.mark.parametrize("name", _registered())
def test_same_seed_same_ledger_quick_preset(name, quick_runs):
    _assert_same(name, *quick_runs)


if __name__ == "__main__":
    import time
    t0 = time.perf_counter()
    result = _simulate_all(sys.argv[2])
    Path(sys.argv[1]).write_text(json.dumps(result, sort_keys=True))
    print(f"{sys.argv[2]}: {len(result)} models in {time.perf_counter() - t0:.1f} s")
