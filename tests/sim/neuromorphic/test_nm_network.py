"""Bad network input is refused before anything runs, with a message naming the input."""
import numpy as np
import pytest

from hw_profiles.errors import ModelError
from sim.neuromorphic import Network, NeuronKernel


def _net():
    net = Network(dt=1e-3)
    net.population("p", 3, "lif", tau_mem=0.01, v_threshold=1.0)
    net.spikes("s", 2, steps=[0], index=[1])
    return net


@pytest.mark.parametrize("call,match", [
    (lambda n: n.population("q", 2, "adex", tau_mem=0.01, v_threshold=1.0),
     r"q: neuron model 'adex' is unknown"),
    (lambda n: n.population("q", 2, "lif", tau_mem=0.01, v_threshold=1.0, tau_ref=1.0),
     r"q: unknown parameter\(s\) \['tau_ref'\] for model 'lif'"),
    (lambda n: n.population("q", 2, "lif", v_threshold=1.0),
     r"q: model 'lif' needs parameter\(s\) \['tau_mem'\]"),
    (lambda n: n.population("q", 2, "lif", tau_mem=-0.01, v_threshold=1.0),
     r"q.tau_mem has min -0.01; time constants must be > 0"),
    (lambda n: n.population("q", 2, "cuba_lif", tau_mem=0.01, tau_syn=(0.0, 0.1),
                            n_channels=2, v_threshold=1.0),
     r"q.tau_syn0 has min 0; time constants must be > 0"),
    (lambda n: n.population("q", 2, "lif", tau_mem=[0.01, np.nan], v_threshold=1.0),
     r"q.tau_mem has 1 non-finite value"),
    (lambda n: n.population("q", 2, "lif", tau_mem=[0.01] * 3, v_threshold=1.0),
     r"q.tau_mem has shape \(3,\); expected \(2,\)"),
    (lambda n: n.population("p", 2, "lif", tau_mem=0.01, v_threshold=1.0),
     r"name 'p' is already used"),
    (lambda n: n.connect("s", "p", weight=np.ones((2, 3))),
     r"s->p.weight has shape \(2, 3\); expected \(n_post, n_pre\) = \(3, 2\)"),
    (lambda n: n.connect("s", "p", weight=[[1.0, np.nan]] * 3),
     r"s->p.weight has 3 non-finite"),
    (lambda n: n.connect("s", "p", weight=np.ones((3, 2)), delay=0),
     r"s->p.delay must be integers >= 1 step"),
    (lambda n: n.connect("s", "p", pre_idx=[0, 2], post_idx=[0, 1], weight=1.0),
     r"s->p.pre_idx spans 0..2; expected 0..1"),
    (lambda n: n.connect("s", "zz", weight=1.0), r"no population or source named 'zz'"),
    (lambda n: n.connect("p", "s", weight=np.ones((2, 3))), r"post 's' is a source"),
    (lambda n: n.connect("s", "p", weight=np.ones((3, 2)), channel=1),
     r"channel = 1; p has channels 0..0"),
    (lambda n: n.spikes("t", 2, steps=[0, 1.5], index=[0, 1]), r"t.steps must be integers"),
    (lambda n: n.spikes("t", 2, steps=[0, 1], index=[0, 2]), r"t.index must be integers in 0..1"),
    (lambda n: n.spikes("t", 2, steps=[0, np.nan], index=[0, 1]), r"t.steps has 1 non-finite"),
    (lambda n: n.poisson("t", 2, rate_hz=2000.0), r"t.rate_hz must lie in 0..1/dt"),
    (lambda n: n.probe("p", "w"), r"p has no state 'w'"),
])
def test_bad_input_is_named(call, match):
    net = _net()
    before = (dict(net.populations), dict(net.projections), dict(net.sources))
    with pytest.raises(ModelError, match=match):
        call(net)
    # nothing half-added
    assert before == (dict(net.populations), dict(net.projections), dict(net.sources))


def test_bad_dt():
    with pytest.raises(ModelError, match="dt = -0.1"):
        Network(dt=-0.1)


def test_custom_kernel_params_checked():
    k = NeuronKernel("tern", lambda *a: None, state_names=("e",), param_names=("theta",))
    net = Network(dt=1e-3)
    with pytest.raises(ModelError, match=r"kernel 'tern' needs parameter\(s\) \['theta'\]"):
        net.population("q", 2, k)
    with pytest.raises(ModelError, match=r"unknown parameter\(s\) \['phi'\]"):
        net.population("q", 2, k, theta=1.0, phi=2.0)
    pop = net.population("q", 2, k, theta=1.0, e_init=[0.5, -0.5])
    np.testing.assert_array_equal(pop.state_init["e"], [0.5, -0.5])
