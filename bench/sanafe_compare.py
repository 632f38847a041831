"""Neuroedge's `loihi` profile against SANA-FE's shipped Loihi architecture (issue 29, item 5).

PARTIAL: this first step compares the per-event prices only (energy and latency of one synaptic
op, neuron update, spike message, NoC hop, barrier), read from SANA-FE's own shipped
`loihi.yaml` (pip package `sanafe`, used as an oracle; nothing of it is copied) and from
`hw_profiles/data/loihi.toml`. Running the same networks (DVS gesture, VA CUBA, DiffPC) with
equal spike trains in both simulators is NOT done yet: `networks` is empty and the two
whole-network factors are null until it is.

Run: PYTHONPATH=. python bench/sanafe_compare.py
"""
from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

import yaml

LOIHI_TOML = Path(__file__).resolve().parents[1] / "hw_profiles" / "data" / "loihi.toml"


def sanafe_loihi_yaml() -> dict:
    """SANA-FE's shipped Loihi architecture description, parsed."""
    try:
        examples = resources.files("sanafe") / "examples" / "loihi.yaml"
    except ModuleNotFoundError as exc:
        raise SystemExit("sanafe_compare: the oracle `sanafe` is not installed; "
                         "pip install sanafe (the `dev` extra) and rerun") from exc
    return yaml.safe_load(examples.read_text())


def _unit(arch: dict, section: str, name: str) -> dict:
    """The attributes of one named pipeline unit of the first core of the first tile."""
    core = arch["architecture"]["tile"][0]["core"][0]
    for unit in core[section]:
        if unit["name"].split("[")[0] == name:
            return unit["attributes"]
    raise KeyError(f"SANA-FE loihi.yaml has no {section} unit {name!r}")


def price_pairs() -> list[dict]:
    """Per-event (energy pJ, latency ns) pairs: neuroedge `loihi` beside SANA-FE `loihi.yaml`.

    Pairs are matched by what the event does, not by name: SANA-FE splits a neuron update into
    an access (51.2 pJ) and an update (21.6 pJ), which together correspond to Davies 2018's
    'active neuron update'; its spike is priced as soma spike-out plus axon message-out.
    """
    arch = sanafe_loihi_yaml()
    ne = tomllib.loads(LOIHI_TOML.read_text())
    e, t = ne["energy_pj"], ne["core_op_ns"]
    tile = arch["architecture"]["tile"][0]["attributes"]
    syn = _unit(arch, "synapse", "loihi_dense_synapse")
    soma = _unit(arch, "soma", "loihi_lif")
    out = _unit(arch, "axon_out", "loihi_out")
    sync = arch["architecture"]["attributes"]["latency_sync"]
    pairs = [
        ("synaptic op (dense)", e["synop"]["value"], t["synop"]["value"],
         syn["energy_process_spike"] * 1e12, syn["latency_process_spike"] * 1e9),
        ("neuron update (active)", e["neuron_update_active"]["value"],
         t["neuron_update_active"]["value"],
         (soma["energy_access_neuron"] + soma["energy_update_neuron"]) * 1e12,
         (soma["latency_access_neuron"] + soma["latency_update_neuron"]) * 1e9),
        ("spike message out", e["spike"]["value"], t["spike"]["value"],
         (soma["energy_spike_out"] + out["energy_message_out"]) * 1e12,
         (soma["latency_spike_out"] + out["latency_message_out"]) * 1e9),
        ("NoC hop (mean E-W/N-S)", e["hop"]["value"], None,
         (tile["energy_east_hop"] + tile["energy_north_hop"]) / 2 * 1e12,
         (tile["latency_east_hop"] + tile["latency_north_hop"]) / 2 * 1e9),
        ("barrier, whole chip", None, ne["step_sync"]["barrier_ns"]["value"],
         None, max(sync.values()) * 1e9),
    ]
    rows = []
    for name, ne_e, ne_t, sf_e, sf_t in pairs:
        rows.append({"event": name, "neuroedge_pj": ne_e, "sanafe_pj": sf_e,
                     "energy_ratio": None if ne_e is None or sf_e is None else ne_e / sf_e,
                     "neuroedge_ns": ne_t, "sanafe_ns": sf_t,
                     "latency_ratio": None if ne_t is None or sf_t is None else ne_t / sf_t})
    return rows


def _factor(r: float | None) -> float | None:
    return None if r is None else max(r, 1.0 / r)


def main() -> None:
    rows = price_pairs()
    fmt = lambda v: "-" if v is None else f"{v:8.2f}"  # noqa: E731
    print(f"{'event':26s} {'NE pJ':>8s} {'SF pJ':>8s} {'ratio':>8s} "
          f"{'NE ns':>8s} {'SF ns':>8s} {'ratio':>8s}")
    for r in rows:
        print(f"{r['event']:26s} {fmt(r['neuroedge_pj'])} {fmt(r['sanafe_pj'])} "
              f"{fmt(r['energy_ratio'])} {fmt(r['neuroedge_ns'])} {fmt(r['sanafe_ns'])} "
              f"{fmt(r['latency_ratio'])}")
    e_f = [f for f in (_factor(r["energy_ratio"]) for r in rows) if f is not None]
    t_f = [f for f in (_factor(r["latency_ratio"]) for r in rows) if f is not None]
    print("RESULT " + json.dumps({
        "networks": [], "energy_factor_max": None, "latency_factor_max": None,
        "per_event": rows, "per_event_energy_factor_max": max(e_f),
        "per_event_latency_factor_max": max(t_f),
        "note": "per-event prices only; whole-network runs not done yet"}))


if __name__ == "__main__":
    main()
