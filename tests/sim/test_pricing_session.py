"""The tf1-session stack (issue 29 item 2): eager per-op dispatch plus one TensorFlow 1.x
session.run per counted block, priced only on profiles that state its per-call time."""
import pytest

from hw_profiles import load
from hw_profiles.errors import NeuroedgeError
from sim.ledger import Ledger
from sim.pricing import price


def _ledger(blocks=("infer",)):
    led = Ledger()
    for b in blocks:
        led.add("mac_fp32", 172_800, scope=f"{b}/0/forward")
        led.add("kernel_launch", 5, scope=f"{b}/0/forward")
        led.add_samples(1, scope=b)
    return led


def test_one_session_call_per_counted_block_at_idle_power():
    prof = load("xeon-e5-2630")
    eager = price(_ledger(), prof, stack="eager")
    sess = price(_ledger(), prof, stack="tf1-session")
    call = prof.execution["session_call_s"].value
    assert call == 130e-6
    # latency: eager's + 130 us (one block); energy: + 17.01 W idle x 130 us = 2.211 mJ
    assert sess.total_latency_s - eager.total_latency_s == pytest.approx(call)
    assert sess.total_j - eager.total_j == pytest.approx(17.01 * call)
    (line,) = [c for c in sess.charges if c.item == "session_call"]
    assert (line.category, line.scope, line.entry) == ("overhead", "infer",
                                                       "execution.session_call_s")
    two = price(_ledger(("infer", "train")), prof, stack="tf1-session")
    assert len([c for c in two.charges if c.item == "session_call"]) == 2


def test_a_profile_without_a_session_time_has_no_such_stack():
    with pytest.raises(NeuroedgeError, match=r"stack 'tf1-session' is not a software stack of "
                                             r"profile 'a100' \(gpu\).*its stacks are eager, "
                                             r"graph, fused$"):
        price(_ledger(), "a100", stack="tf1-session")
