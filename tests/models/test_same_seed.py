"""The same seed gives the same metrics and the same ledger, scope by scope, for every
registered card, run through ``models.runner``.

Each run happens in its own Python process with its own string-hash seed
(``PYTHONHASHSEED`` 1 and 2): a scope name that depends on the iteration order of a set or
on an object's address then differs between the two runs, as tversky's did when torch's
ModuleTracker named backward scopes (51 to 71 scopes from one seed). Two runs inside one
process share the hash seed and would hide that.

The default test run covers every card whose quick preset is cheap, with the overrides in
``REDUCED`` where a card has a cheaper setting still (a few steps); a card in
``card_runs.SLOW`` without a ``REDUCED`` entry runs only under ``-m slow``, which runs
every card's quick preset as ``neuroedge simulate NAME`` does. A card not named anywhere
runs its quick preset in the default run.

Run as a script, this file is the child process: ``python test_same_seed.py OUT MODE``
(MODE ``reduced`` or ``quick``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))   # card_runs, as a child process

from card_runs import SLOW, missing_data, toy_profile  # noqa: E402

# overrides of a card's quick preset for the default (reduced) run; CPU seconds per run on
# the shared 2-core machine
REDUCED = {
    "apple": {"iterations": 2, "seeds": 2, "n_envs": 8, "batch": 8,             # ~2 s
              "eval_episodes": 16, "n_train": 200, "n_test": 50},
    "mlp": {"epochs": 2},                                                        # ~1 s
    "pc": {"epochs": 1},                                                         # ~1 s
    "diffpc": {"epochs": 1},                                                     # ~1 s
    "chunk_sparse_attention": {"steps": 4, "batch": 2, "warmup": 1,              # ~3 s
                               "eval_samples": (2, 2, 2)},
    "filter_heads": {"n_layer": 2, "n_head": 2, "d_model": 16, "d_mlp": 32,      # ~9 s
                     "steps": 4, "batch_size": 8, "warmup": 1, "search_pairs": 20,
                     "search_epochs": 2, "search_batch_size": 8, "n_eval": 8,
                     "n_random": 2},
    "conformal_hashing": {"epochs": 1, "n_source": 400, "n_target": 200,         # ~3 s
                          "n_database": 200, "n_query": 100},
    "geo_inr_id": {"steps": 20, "n_pretrain": 500, "n_eval": 400,                # ~2 s
                   "probe_steps": 10},
}
SEED = 0


def _names(mode: str) -> list[str]:
    import models
    if mode == "quick":
        return list(models.REGISTRY)
    return [n for n in models.REGISTRY if n in REDUCED or n not in SLOW]


def _simulate_all(mode: str) -> dict:
    """{card: {"metrics": text, "ledger": dict} or {"skip": reason}}, seed ``SEED``."""
    import models
    from models import runner
    out = {}
    for name in _names(mode):
        card = models.REGISTRY[name].card
        reason = missing_data(card)
        if reason:
            out[name] = {"skip": reason}
            continue
        over = REDUCED.get(name, {}) if mode == "reduced" else {}
        run = runner.run(name, profile=toy_profile(card), preset="quick", seed=SEED,
                         overrides=over)
        # as JSON text: NaN metrics compare equal as text (NaN != NaN as floats)
        out[name] = {"metrics": json.dumps(run.metrics, sort_keys=True),
                     "ledger": run.ledger.to_dict()}
    return out


def _runs(tmp_path_factory, mode: str) -> list[dict]:
    """The results of two runs, each in a fresh process with its own string-hash seed."""
    base = tmp_path_factory.mktemp(f"same-seed-{mode}")
    runs = []
    for hash_seed in ("1", "2"):
        out = base / f"hash{hash_seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MPLBACKEND": "Agg",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run([sys.executable, __file__, str(out), mode], check=False,
                              cwd=base, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:]
        runs.append(json.loads(out.read_text()))
    return runs


@pytest.fixture(scope="module")
def reduced_runs(tmp_path_factory):
    return _runs(tmp_path_factory, "reduced")


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    return _runs(tmp_path_factory, "quick")


def _assert_same(name: str, first: dict, second: dict) -> None:
    if "skip" in first[name]:
        pytest.skip(first[name]["skip"])
    assert first[name]["metrics"] == second[name]["metrics"], name
    a = {s["scope"]: s for s in first[name]["ledger"]["scopes"]}
    b = {s["scope"]: s for s in second[name]["ledger"]["scopes"]}
    only = sorted(set(a) ^ set(b))
    assert not only, (f"{name}: {len(a)} vs {len(b)} scopes; in one run only: "
                      f"{only[:8]}{' ...' if len(only) > 8 else ''}")
    assert len(a) > 0, f"{name}: empty ledger"
    for scope, entry in a.items():
        for field in ("ops", "bytes", "uncounted", "samples"):
            assert entry.get(field) == b[scope].get(field), \
                f"{name} {scope} {field}: {entry.get(field)} vs {b[scope].get(field)}"


def test_reduced_overrides_are_settings_of_their_cards():
    import models
    from models import runner
    for name, over in REDUCED.items():
        if name in models.REGISTRY:
            assert runner.parse_overrides(name, over) == over


@pytest.mark.parametrize("name", _names("reduced"))
def test_same_seed_same_run_reduced(name, reduced_runs):
    _assert_same(name, *reduced_runs)


@pytest.mark.slow
@pytest.mark.parametrize("name", _names("quick"))
def test_same_seed_same_run_quick_preset(name, quick_runs):
    _assert_same(name, *quick_runs)


if __name__ == "__main__":
    import time
    t0 = time.perf_counter()
    result = _simulate_all(sys.argv[2])
    Path(sys.argv[1]).write_text(json.dumps(result, sort_keys=True))
    print(f"{sys.argv[2]}: {len(result)} models in {time.perf_counter() - t0:.1f} s")
