"""Our own NIR export takes every stimulus form (issue 32, class 4). VA CUBA runs on its own
activity, so its export holds only a placeholder Input with zero weights, which the import
drops; ``estimate FILE.nir --stimulus`` refused it with "the network has 0 Input nodes".
A stimulus now drives a one-to-one input onto the population the placeholder feeds, each
synapse the population's own excitatory weight."""
import numpy as np
import pytest

from deploy.cli import main

N = 64        # digits' 8 x 8 pixels, so dataset:digits fits the input too


@pytest.fixture(scope="module")
def cuba_nir(tmp_path_factory):
    """A small VA CUBA network exported by `neuroedge export` (a 5 ms run of 64 neurons)."""
    out = tmp_path_factory.mktemp("export") / "cuba.nir"
    assert main(["export", "snn_cuba", "--target", "nir", "--out", str(out),
                 "--set", f"n={N}", "--set", "p=0.5", "--set", "duration=0.005"]) == 0
    return out


def _spikes(k):
    """A (20, N) stimulus with k spikes, on the first k neurons in step 0."""
    a = np.zeros((20, N), np.int8)
    a[0, :k] = 1
    return a


def _synops(path, stimulus, **kw):
    from deploy.nir_estimate import estimate_nir
    est = estimate_nir(path, stimulus=stimulus, profiles=["loihi"], **kw)
    return est.ledgers["loihi"].total_ops("").get("synop", 0)


@pytest.mark.parametrize("form", ["poisson", "array", "npy", "npz", "dataset"])
def test_every_stimulus_form_drives_our_export(cuba_nir, tmp_path, capsys, form):
    spikes = _spikes(10)
    np.save(tmp_path / "s.npy", spikes)
    np.savez(tmp_path / "s.npz", spikes=spikes)
    spec = {"poisson": "poisson:rate=100", "array": None, "npy": str(tmp_path / "s.npy"),
            "npz": str(tmp_path / "s.npz"), "dataset": "dataset:digits"}[form]
    if form == "array":
        assert _synops(cuba_nir, spikes) > 0
        return
    # without --steps a spike array's length is the run's (20 steps)
    steps = [] if form in ("npy", "npz") else ["--steps", "20"]
    assert main(["estimate", str(cuba_nir), "--stimulus", spec, *steps,
                 "--profiles", "loihi"]) == 0
    out = capsys.readouterr().out
    # dataset: presents 10 images in the 20 steps, one inference sample each
    samples = 10 if form == "dataset" else 1
    assert out.startswith(f"cuba.nir (nir): {samples} inference sample(s)") and "loihi" in out


def test_each_stimulus_spike_reaches_the_network_through_one_synapse(cuba_nir):
    # one-to-one: k input spikes are k more synaptic events at least (their own synapses;
    # the spikes they cause add more), each of the network's excitatory weight
    quiet, driven = _synops(cuba_nir, _spikes(0)), _synops(cuba_nir, _spikes(30))
    assert driven >= quiet + 30
    from deploy.nir_import import read_nir, stimulus
    net = read_nir(cuba_nir)
    stimulus(net, _spikes(1), 20)
    w = net.projections["input.stimulus"].weight
    exc = max(float(p.weight.max()) for p in net.projections.values()
              if p.name != "input.stimulus")
    assert w.shape == (N,) and np.all(w == exc) and exc > 0


def test_without_a_stimulus_our_export_runs_as_exported(cuba_nir):
    from deploy.nir_import import read_nir
    net = read_nir(cuba_nir)
    assert net.nir_inputs == () and "input" not in net.sources   # nothing added


def test_a_wrong_stimulus_size_names_the_input(cuba_nir, capsys):
    from deploy.nir_estimate import estimate_nir
    from hw_profiles.errors import NeuroedgeError
    with pytest.raises(NeuroedgeError) as info:
        estimate_nir(cuba_nir, stimulus=np.zeros((5, 3)), profiles=["loihi"])
    assert f"Input 'input' expects (T, {N})" in str(info.value)
