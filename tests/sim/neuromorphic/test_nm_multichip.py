"""Several chips joined into one mesh (compiler.MeshGeometry): placement, chip crossings counted
per spike and priced, on a toy version of the shipped loihi-pohoiki-beach profile."""
import numpy as np
import pytest

import hw_profiles
from hw_profiles.loader import DATA_DIR
from sim.neuromorphic import Network, NeuromorphicDevice
from sim.neuromorphic.compiler import mesh_geometry


def _toy(chips_x, chips_y, mesh_x, mesh_y):
    """Pohoiki Beach's numbers on a tiny system: 1 neuron per core, 1 core per router."""
    text = (DATA_DIR / "loihi-pohoiki-beach.toml").read_text()
    cores = chips_x * chips_y * mesh_x * mesh_y
    for key, val in (("mesh_x", mesh_x), ("mesh_y", mesh_y), ("chips_x", chips_x),
                     ("chips_y", chips_y), ("cores_per_router", 1), ("cores", cores),
                     ("neurons_per_core", 1)):
        start = text.index(f"\n{key} = {{ value = ") + len(f"\n{key} = {{ value = ")
        end = text.index(",", start)
        text = text[:start] + str(val) + text[end:]
    text = text.replace('name = "loihi-pohoiki-beach"', 'name = "toy-multichip"')
    return hw_profiles.loads(text, origin="toy-multichip.toml")


def _net(n, targets):
    """``n`` LIF neurons; an input spike at step 0 makes neuron 0 fire in step 1 (v = 0.1 x 20
    = 2 > 1); neuron 0 then reaches ``targets`` with weights too small to fire them."""
    net = Network(dt=1e-3)
    net.population("p", n, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("in", 1, steps=[0], index=[0])
    w_in = np.zeros((n, 1))
    w_in[0, 0] = 20.0
    net.connect("in", "p", weight=w_in)
    w = np.zeros((n, n))
    w[targets, 0] = 0.1
    net.connect("p", "p", weight=w)
    return net


def test_geometry_numbers_cores_chip_by_chip():
    geo = mesh_geometry(_toy(2, 2, 2, 1))
    x, y = geo.core_xy(8)
    # chip 0 = cores 0, 1 at x 0, 1; chip 1 = cores 2, 3 at x 2, 3 (same row); chips 2, 3
    # the row below
    assert x.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert y.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert geo.routers == 8 and geo.cores_per_chip == 2


def test_crossing_in_x_counted_and_priced():
    prof = _toy(2, 1, 2, 1)                  # 2 chips of 2 routers in one row: x = 0 1 | 2 3
    dev = NeuromorphicDevice(prof)
    c = dev.compile(_net(4, [1, 3]))
    # neuron 0's tree: X from 0 to 3 = 3 hops, one of them across the chip boundary (1 -> 2)
    assert c.hops[:4].tolist() == [3, 0, 0, 0]
    assert c.chip_hops[:4].tolist() == [1, 0, 0, 0]
    assert c.cores[3]["chip"] == 1
    dev.run(4)
    ops = dev.ledger.ops("run")
    # one spike of neuron 0 (the input enters at router (0, 0), where neuron 0 sits: 0 hops)
    assert ops["hop"] == 3 and ops["chip_hop"] == 1
    rep = dev.report()
    ch = [q for q in rep.charges if q.item == "chip_hop"]
    assert len(ch) == 1 and ch[0].count == 1
    assert ch[0].energy_j == pytest.approx(3.5e-12, rel=1e-12)   # 1 crossing x 3.5 pJ


def test_crossing_in_x_and_y():
    dev = NeuromorphicDevice(_toy(2, 2, 1, 1))   # one router per chip: cores at the corners
    c = dev.compile(_net(4, [3]))
    # neuron 0 at (0, 0) -> neuron 3 at (1, 1): X 1 hop then Y 1 hop, each crossing chips
    assert c.hops[0] == 2 and c.chip_hops[0] == 2
    dev.run(4)
    assert dev.ledger.ops("run")["chip_hop"] == 2


def test_one_chip_profiles_count_no_crossing():
    dev = NeuromorphicDevice("loihi")
    c = dev.compile(_net(4, [1, 3]))
    assert not c.chip_hops.any()
    dev.run(4)
    assert "chip_hop" not in dev.ledger.ops("run")
