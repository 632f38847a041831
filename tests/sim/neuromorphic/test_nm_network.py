"""Bad network input is refused before anything runs, with a message naming the input."""
import re

import numpy as np
import pytest

from sim.errors import ModelError
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


def _exact(msg: str) -> str:
    return "^" + re.escape(msg) + "$"


@pytest.mark.parametrize("delay,shape", [(np.arange(1, 10).reshape(3, 3), "(3, 3)"),
                                         (np.ones((1, 1)), "(1, 1)"),
                                         (np.ones(6), "(6,)")])
def test_dense_delay_of_the_wrong_shape_names_both_shapes(delay, shape):
    # smallest failing inputs: weight (3, 2) with delay (3, 3) silently took delays
    # [1, 2, 4, 5, 7, 8] of a matrix it does not match; delay (1, 1) raised a raw IndexError
    net = _net()
    with pytest.raises(ModelError, match=_exact(
            f"[Network.connect] s->p.delay has shape {shape}; expected a scalar or the "
            "weight's shape (n_post, n_pre) = (3, 2)")):
        net.connect("s", "p", weight=np.ones((3, 2)), delay=delay)
    proj = net.connect("s", "p", weight=np.ones((3, 2)), delay=[[1, 2], [3, 4], [5, 6]])
    assert proj.delay.tolist() == [1, 2, 3, 4, 5, 6]       # row-major (post, pre) order


def test_delay_too_large_for_int64_steps_is_refused():
    # smallest failing input: delay=1e20 became -2**63 steps in the int64 cast
    with pytest.raises(ModelError, match=_exact(
            "[Network.connect] s->p.delay has max 1e+20 steps; delays must be at most "
            "2147483647 steps")):
        _net().connect("s", "p", weight=np.ones((3, 2)), delay=1e20)


@pytest.mark.parametrize("payload,k,shown", [([1.5], 0, "1.5"), ([2, 0], 1, "0"),
                                             ([2**31], 0, "2.14748e+09")])
def test_non_integer_or_zero_payload_is_refused(payload, k, shown):
    # smallest failing input: payload 1.5 was truncated to 1; 0 is "no spike" to the kernels
    # and 2**31 wrapped to -2**31 in int32
    with pytest.raises(ModelError, match=_exact(
            f"[Network.spikes] t.payload[{k}] = {shown}: payloads must be non-zero integers "
            "in -2147483647..2147483647 (signed int32)")):
        _net().spikes("t", 2, steps=[0] * len(payload), index=range(len(payload)),
                      payload=payload)
    src = _net().spikes("t", 2, steps=[0, 0], index=[0, 1], payload=[-3.0, 5])
    assert src.payload.tolist() == [-3, 5] and src.payload.dtype == np.int32


@pytest.mark.parametrize("model,kw,key,tau", [
    ("lif", {"tau_mem": [0.01, 4e-4]}, "tau_mem[1]", "0.0004"),
    ("cuba_lif", {"tau_mem": 0.01, "tau_syn": (0.01, 1e-4), "n_channels": 2},
     "tau_syn1[0]", "0.0001"),
])
def test_unstable_explicit_euler_is_refused(model, kw, key, tau):
    # smallest failing input: lif tau_mem = 0.4 ms at dt = 1 ms -> a_v = 1 - 2.5 = -1.5,
    # |v| grew 1.5x per step (1.2e7 after 40 steps of one unit input)
    net = Network(dt=1e-3)
    with pytest.raises(ModelError, match=_exact(
            f"[Network.population] q.{key} = {tau} s with dt = 0.001 s: explicit Euler "
            "(method='euler') is unstable for dt > 2 tau; need tau >= dt/2 = 0.0005 s, a "
            "smaller dt, or method='exact'")):
        net.population("q", 2, model, v_threshold=1.0, **kw)
    assert "q" not in net.populations
    # the same constants integrate exactly, and tau = dt/2 (a = -1: bounded) is accepted
    net.population("q", 2, model, v_threshold=1.0, method="exact", **kw)
    net.population("r", 1, "lif", tau_mem=5e-4, v_threshold=1.0)
