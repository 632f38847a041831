"""Defects a probe of the neuromorphic engine reproduced, each pinned by its smallest input."""
import re

import numpy as np
import pytest

from sim.errors import ModelError
from sim.neuromorphic import Network, NeuromorphicDevice, NeuronKernel


def _exact(msg: str) -> str:
    return "^" + re.escape(msg) + "$"


def _integrate(inp, state, params, payload):   # v += the step's input (channel 0)
    state[0] += inp[:, 0]


ACC = NeuronKernel("acc", _integrate, ("v",))


# -- 1: custom kernels and i_inj_start, method, reset, n_channels ----------------------------
def test_custom_kernel_injected_current_starts_at_i_inj_start():
    # i_inj = 1 from step 5 into v += input: v = 0 in steps 0..4, then 1, 2, 3 (5, 6, 7).
    # Before: the kernel population dropped i_inj_start, v = [1, 2, ..., 8]
    net = Network(dt=1e-3)
    pop = net.population("P", 1, ACC, i_inj=[1.0], i_inj_start=5)
    net.probe("P", "v")
    dev = NeuromorphicDevice("loihi")
    dev.compile(net)
    assert pop.i_inj_start == 5
    assert dev.run(8).states["P.v"].ravel().tolist() == [0, 0, 0, 0, 0, 1, 2, 3]


@pytest.mark.parametrize("kw,msg", [
    (dict(method="exact"), "P: method = 'exact' does not apply to custom kernel 'acc', which "
                           "integrates its own state; omit method"),
    (dict(reset="subtract"), "P: reset = 'subtract' does not apply to custom kernel 'acc', "
                             "which resets its own state; omit reset"),
    (dict(n_channels=2), "P: n_channels = 2; custom kernel 'acc' has n_channels = 1 (omit "
                         "n_channels, or set it on the NeuronKernel)"),
])
def test_custom_kernel_refuses_what_cannot_apply(kw, msg):
    # before: method='exact', reset='subtract' and n_channels=2 were dropped without a word
    net = Network(dt=1e-3)
    with pytest.raises(ModelError, match=_exact(f"[Network.population] {msg}")):
        net.population("P", 1, ACC, **kw)
    assert net.population("P", 1, ACC, n_channels=1).n_channels == 1   # the kernel's: fine


# -- 2: refractory periods beyond MAX_STEPS --------------------------------------------------
@pytest.mark.parametrize("refr,steps", [(1e17, "1e+20"), (1e30, "1e+33")])
def test_refractory_beyond_max_steps_is_refused(refr, steps):
    # 1e17 s / 1e-3 s = 1e20 steps > 2**31 - 1; before: the int64 cast gave -2**63 steps,
    # refractoriness off (a spike every step under i_inj = 100)
    with pytest.raises(ModelError, match=_exact(
            f"[Network.population] A.refractory has max {refr:g} s = {steps} steps of dt = "
            "0.001 s; refractory periods must be at most 2147483647 steps (2.14748e+06 s)")):
        Network(dt=1e-3).population("A", 1, "lif", tau_mem=0.02, v_threshold=1.0,
                                    refractory=refr)



# -- 4: sparse indices and complex weights ---------------------------------------------------
def _two_four():
    net = Network(dt=1e-3)
    net.population("A", 4, "lif", tau_mem=0.02, v_threshold=1.0)
    net.spikes("s", 2, steps=[0], index=[0])
    return net


@pytest.mark.parametrize("kw,msg", [
    # before: 0.7 -> 0 and 2.9 -> 2 by truncation
    (dict(pre_idx=[0.7, 1.0], post_idx=[2, 0], weight=[1.0, 1.0]),
     "s->A.pre_idx[0] = 0.7; indices must be integers in 0..1"),
    (dict(pre_idx=[0, 1], post_idx=[2.9, 0], weight=[1.0, 1.0]),
     "s->A.post_idx[0] = 2.9; indices must be integers in 0..3"),
    # before: a mask [True, False] became the indices [1, 0]
    (dict(pre_idx=np.array([True, False]), post_idx=[0, 1], weight=[1.0, 1.0]),
     "s->A.pre_idx is a boolean mask; expected integer indices in 0..1 "
     "(np.flatnonzero(mask) gives them)"),
    # before: 1+2j became 1.0 (numpy's float cast drops the imaginary part)
    (dict(pre_idx=[0, 1], post_idx=[0, 1], weight=[1 + 2j, 1.0]),
     "s->A.weight is complex (complex128); expected real numbers"),
    (dict(weight=np.full((4, 2), 1 + 2j)),
     "s->A.weight is complex (complex128); expected real numbers"),
])
def test_sparse_indices_must_be_integers_and_weights_real(kw, msg):
    net = _two_four()
    with pytest.raises(ModelError, match=_exact(f"[Network.connect] {msg}")):
        net.connect("s", "A", **kw)
    assert not net.projections


def test_event_index_mask_is_refused():
    # before: index=[True, False] was read as channels [1, 0]
    with pytest.raises(ModelError, match=_exact(
            "[Network.spikes] t.index is a boolean mask; expected integer channel indices in "
            "0..1 (np.flatnonzero(mask) gives them)")):
        _two_four().spikes("t", 2, steps=[0, 1], index=np.array([True, False]))


# -- 5: duplicate (step, index) events -------------------------------------------------------
@pytest.mark.parametrize("payload", [None, [2, 3]])
def test_duplicate_events_are_refused(payload):
    # before: two events of step 3, index 1 merged into one spike (v = 0.001, not 0.002),
    # the last payload winning (3, not 2 + 3 = 5)
    with pytest.raises(ModelError, match=_exact(
            "[Network.spikes] s: events 1 and 2 are both step 3, index 1; a channel sends at "
            "most one spike per step (give one event, with the payload to send)")):
        Network(dt=1e-3).spikes("s", 2, steps=[0, 3, 3], index=[1, 1, 1],
                                payload=None if payload is None else [1, *payload])


# -- 6: Poisson sources of one seed ----------------------------------------------------------
def test_poisson_sources_of_one_seed_draw_from_their_own_streams():
    # before: every source seeded SeedSequence(seed) alone, so two default-seeded sources
    # put their spikes on the same steps (2439 of 2439 coincident in poisson_corr.py)
    net = Network(dt=1e-3)
    a = net.poisson("a", 50, rate_hz=20.0)
    net.spikes("e", 1, steps=[0], index=[0])          # events take no stream
    b = net.poisson("b", 50, rate_hz=10.0)
    assert (a.stream, b.stream) == (0, 1)
    # the first source keeps the stream every source had (stored results unchanged)
    np.testing.assert_array_equal(a.channel_seeds(),
                                  np.random.SeedSequence(0).generate_state(50, np.uint64))
    assert not set(a.channel_seeds().tolist()) & set(b.channel_seeds().tolist())
    again = Network(dt=1e-3)
    again.poisson("x", 50, rate_hz=20.0)
    np.testing.assert_array_equal(again.poisson("y", 50, 10.0).channel_seeds(),
                                  b.channel_seeds())          # reproducible


# -- 7: fractional refractory periods as Brian2 counts them ----------------------------------
@pytest.mark.parametrize("refr_ms,steps,spikes", [
    (1.5, 1, list(range(12))), (2.5, 2, list(range(0, 12, 2))), (3.5, 3, [0, 3, 6, 9])])
def test_fractional_refractory_truncates_as_brian2(refr_ms, steps, spikes):
    # Brian2: not refractory when timestep(t - lastspike) >= timestep(refractory) with
    # timestep(x) = int((x + 1e-3 dt) / dt): 1.5 ms -> int(1.501) = 1, 2.5 -> 2, 3.5 -> 3
    # (Brian2's spikes from repro_refractory_round.py: [0..11], [0, 2, ..], [0, 3, 6, 9]).
    # Before: np.round, half to even: 2, 2, 4 steps. i_inj = 100 fires in every step the
    # neuron integrates (v = 0.05 x 100 = 5 > 1), so spikes are r steps apart
    net = Network(dt=1e-3)
    net.population("A", 1, "lif", tau_mem=0.02, v_threshold=1.0, refractory=refr_ms * 1e-3,
                   i_inj=[100.0])
    net.probe("A")
    dev = NeuromorphicDevice("loihi")
    dev.compile(net)
    assert int(dev.compiled.coeff["refsteps"][0]) == steps
    assert dev.run(12).spikes["A"][0].tolist() == spikes


def test_whole_refractory_steps_unchanged():
    # VA CUBA: 5 ms at dt 0.1 ms is 50 steps (5e-3 / 1e-4 = 50.000000000000007 in float64;
    # + 1e-3 keeps a whole number from dropping a step when it lands just below)
    from sim.neuromorphic.network import refractory_steps
    assert refractory_steps(5e-3, 1e-4) == 50
    assert refractory_steps([0.0, 2e-3, 6e-4, 3 * 1e-4], 1e-4).tolist() == [0, 20, 6, 3]


# -- 8: bad arguments refused where they are given -------------------------------------------
@pytest.mark.parametrize("seed", [-1, None, "x", 1.7, True])
def test_poisson_seed_must_be_a_non_negative_integer(seed):
    # before: -1 raised numpy's ValueError at compile, None a bare TypeError, 1.7 became 1
    with pytest.raises(ModelError, match=_exact(
            f"[Network.poisson] p: seed = {seed!r}; expected an integer >= 0")):
        Network(dt=1e-3).poisson("p", 1, 1.0, seed=seed)


@pytest.mark.parametrize("k", [-100, 0, "x", 2.0, True])
def test_kernel_weights_must_be_a_positive_integer(k):
    # before: -100 gave a chip synapse memory of -200 B, 'x' a bare ValueError of int()
    with pytest.raises(ModelError, match=_exact(
            f"[Network.connect] s->A: kernel_weights = {k!r}; expected an integer >= 1 (the "
            "weights the shared kernel holds) or None")):
        _two_four().connect("s", "A", weight=np.ones((4, 2)), kernel_weights=k)


def test_kernel_channels_must_be_an_integer():
    # before: 2.0 passed 1 <= 2.0 <= 4 and compile failed in numpy with a bare TypeError
    with pytest.raises(ModelError, match=_exact(
            "[Network.kernel] NeuronKernel 'k': n_channels = 2.0; expected an integer 1..4")):
        NeuronKernel("k", _integrate, ("v",), n_channels=2.0)


def test_population_added_after_compile_is_named_at_run():
    # before: run() raised a bare KeyError: 'B' (the compiled offsets lack it)
    net = Network(dt=1e-3)
    net.population("A", 2, "lif", tau_mem=0.02, v_threshold=1.0)
    dev = NeuromorphicDevice("loihi")
    dev.compile(net)
    net.population("B", 2, "lif", tau_mem=0.02, v_threshold=1.0)
    net.probe("B", "v")
    with pytest.raises(ModelError, match=_exact(
            "[NeuromorphicDevice] 'B' was added to the network after compile(): the network "
            "changed since compile; call compile(network) again before run()")):
        dev.run(3)
    dev.compile(net)
    assert dev.run(3).states["B.v"].shape == (3, 2)
    # a projection added after compile was silently left out of the run
    net.connect("A", "B", weight=np.ones((2, 2)), name="AB")
    with pytest.raises(ModelError, match="'AB' was added to the network after compile"):
        dev.run(3)


# -- 9: NeuroBench activity after update_weights ---------------------------------------------
def test_update_weights_refreshes_the_activity_and_facts():
    # s0 -> A0 and s1 -> A1, weight 1 each, one spike per step alternating: 2 steps reach
    # 2 non-zero synapses. update_weights zeroes synapse 0: the next 2 steps reach 1
    # (before: still 2, the table built at compile). Then it is set back to 1: 2 again.
    net = Network(dt=1e-3)
    net.population("A", 2, "if", v_threshold=100.0)
    net.spikes("s", 2, steps=[0, 1, 2, 3, 4, 5], index=[0, 1, 0, 1, 0, 1])
    net.connect("s", "A", pre_idx=[0, 1], post_idx=[0, 1], weight=[1.0, 1.0], name="p")
    dev = NeuromorphicDevice("loihi")
    dev.compile(net)
    facts = dev.ledger.models()["network"]
    assert facts["connection_zero_weights"] == 0
    dev.run(2, scope="before")
    dev.update_weights("p", [-1.0, 0.0])
    assert dev.ledger.models()["network"]["connection_zero_weights"] == 1
    dev.run(2, scope="after")
    dev.update_weights("p", [1.0, 0.0])
    assert dev.ledger.models()["network"]["connection_zero_weights"] == 0
    dev.run(2, scope="back")
    acs = [dev.ledger.activity(s)["effective_acs"] for s in ("before", "after", "back")]
    assert acs == [2, 1, 2]
