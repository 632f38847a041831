"""bench/sanafe_compare.py reads the per-event prices it says it reads (issue 29, item 5)."""
import importlib.util
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("sanafe", reason="sanafe (dev extra) is the oracle this bench reads")

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    path = ROOT / "bench" / "sanafe_compare.py"
    spec = importlib.util.spec_from_file_location("sanafe_compare", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_price_pairs_match_both_sources():
    rows = {r["event"]: r for r in _bench().price_pairs()}
    ne = tomllib.loads((ROOT / "hw_profiles" / "data" / "loihi.toml").read_text())
    syn = rows["synaptic op (dense)"]
    assert syn["neuroedge_pj"] == ne["energy_pj"]["synop"]["value"]
    # SANA-FE 2.2.9 loihi.yaml: loihi_dense_synapse energy_process_spike 35.5e-12 J
    assert syn["sanafe_pj"] == pytest.approx(35.5)
    # neuron update = access 51.2 pJ + update 21.6 pJ = 72.8 pJ; 6.0 + 3.7 = 9.7 ns
    nu = rows["neuron update (active)"]
    assert nu["sanafe_pj"] == pytest.approx(72.8)
    assert nu["sanafe_ns"] == pytest.approx(9.7)
    # spike = soma spike_out 69.3 pJ + axon message_out 111.0 pJ = 180.3 pJ
    assert rows["spike message out"]["sanafe_pj"] == pytest.approx(180.3)
    # ratio is neuroedge / SANA-FE: 23.6 / 35.5 = 0.6648
    assert syn["energy_ratio"] == pytest.approx(23.6 / 35.5)
