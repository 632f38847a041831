"""bench/torch_counting.py: each side does the work it is timed for (a small run passes the
bench's own checks: every batch run, MACs equal FlopCounterMode's, replay ledger equal to
full counting's), and the table in bench/RESULTS.md is the one rendered from the stored
RESULT (bench/out/torch_counting.json)."""
import json
import shutil
from pathlib import Path

import pytest

from bench import torch_counting as tc

ROOT = Path(__file__).resolve().parents[2]


def test_small_run_passes_the_checks_and_replays_its_last_epoch():
    r = tc.run_workload("small", samples=256, repeats=3, cpp_floor=False)   # 2 steps of 128
    # the replay side's last epoch replays both steps (the bench raises otherwise). Epoch 1
    # records step 1 and re-records step 2 (Adam's state was made in step 1), which ends
    # the block without the next batch's slicing; epoch 2's step 1 runs past that record's
    # end (the slicing: diverged, recorded again) and step 2 replays; epoch 3 replays both;
    # the untimed epoch the activity and footprint shares are measured on replays both too
    assert (r["steps_replayed"], r["steps_recorded"], r["steps_diverged"]) == (5, 3, 2)
    # that epoch spent CPU time in both (a timer that saw no call would read 0); no upper
    # bound: a share of a 2-step epoch's CPU time is a timing, 0.03-0.4 on a quiet machine
    # and above 1 on a loaded one (a full test run read 1.54 with other tests beside it)
    assert r["replay_activity_share"] > 0 and r["replay_footprint_share"] > 0
    # 2 epochs' worth counted: one epoch's MACs, forward 256 x (784 x 1000 + 1000 x 10)
    # and backward 2x that (weights and inputs; the first layer's input needs no gradient)
    assert r["macs"] == 256 * (784 * 1000 + 1000 * 10) * 2 + 256 * 1000 * 10


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ninja") is None,
                    reason="the C++ callback side needs g++ and ninja (Debian g++ ninja-build)")
def test_cpp_callback_side_records_every_priced_op():
    """The C++ side is built and timed, and the bench's check passed: it recorded at least
    as many calls of each priced op as the dispatch mode saw (the bench raises otherwise):
    22 priced calls a step of this MLP, 44 an epoch of 2 steps; the callback records more
    (the composite ops above them, views, autograd's node markers)."""
    r = tc.run_workload("small", samples=256, repeats=3)   # 3: see the test above
    assert r["cpp_floor_not_built"] is None
    assert r["cpp_floor_s"] > 0
    assert r["priced_calls"] == 44
    assert r["cpp_floor_ops"] > r["priced_calls"]
    # every priced call has a tensor input: at least one size and its dtype each
    assert r["cpp_floor_shape_words"] >= 2 * r["priced_calls"]


def test_results_table_is_rendered_from_the_stored_result():
    result = json.loads((ROOT / "bench" / "out" / "torch_counting.json").read_text())
    assert tc.summary_text(result) in (ROOT / "bench" / "RESULTS.md").read_text()


def test_readme_states_the_stored_overheads():
    """README's limits line quotes the stored run's ranges over the three workloads: with
    step replay (``overhead``), in full (``overhead_full``), the do-nothing dispatch mode
    (``floor_overhead``), the C++ callback that only records (``cpp_floor_overhead``),
    torch's profiler with its read-back (``profiler_overhead``), and the shares of bare time
    replay spends in the activity counts and the footprint bookkeeping."""
    result = json.loads((ROOT / "bench" / "out" / "torch_counting.json").read_text())
    w = result["workloads"].values()

    def span(key):
        xs = [r[key] for r in w]
        return f"{min(xs):.2f}-{max(xs):.2f}x"
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert (f"costs {span('overhead')} bare torch on a shared CPU with step replay, "
            f"{span('overhead_full')} without") in readme
    assert (f"a Python dispatch mode that does nothing costs {span('floor_overhead')}, "
            f"a C++ callback that records each op's shapes {span('cpp_floor_overhead')}, "
            f"torch's C++-side profiler with shapes {span('profiler_overhead')}") in readme
    assert (f"replay's NeuroBench activity alone takes {span('replay_activity_share')} "
            f"and its footprint bookkeeping {span('replay_footprint_share')}") in readme
