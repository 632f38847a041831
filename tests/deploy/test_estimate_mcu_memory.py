"""estimate on microcontrollers: one inference's activation arena (TFLM's greedy plan) plus
its weights against SRAM and flash; ``dtype="int8"`` prices the model quantised."""
import pytest
import torch
import torch.nn as nn

from deploy.estimate import estimate
from sim.errors import ModelError
from sim.precision import INT8_CONVENTIONS


def wide_conv() -> nn.Module:
    # 64 x 3 x 3 x 3 + 64 = 1,792 weights (7,168 B fp32): the weights fit any MCU
    return nn.Conv2d(3, 64, 3, padding=1)


def test_activations_that_do_not_fit_are_refused_naming_the_bytes():
    # input 3 x 96 x 96 x 4 B = 110,592 B and output 64 x 96 x 96 x 4 B = 2,359,296 B are
    # alive together at the convolution: arena 2,469,888 B > 196,608 B (cortex-m4) and
    # > 327,680 B (cortex-m7); the a100 still prices it
    est = estimate(wide_conv(), (1, 3, 96, 96), profiles=["a100", "cortex-m4", "cortex-m7"])
    assert list(est.reports) == ["a100"]
    for name, cap in (("cortex-m4", 196_608), ("cortex-m7", 327_680)):
        why = est.skipped[name]
        assert "needs 2,469,888 B of writable memory (the activation arena" in why
        assert f"has {cap:,} B" in why and "\n" not in why


def test_a_model_that_fits_gets_its_plan_and_placement():
    # (1,3,32,32) -> Conv2d(3,8,3,pad 1): input 12,288 B + output 8 x 1024 x 4 = 32,768 B
    # -> arena 45,056 B; weights 8 x 27 + 8 = 224 values x 4 B = 896 B, in SRAM beside it
    est = estimate(nn.Conv2d(3, 8, 3, padding=1), (1, 3, 32, 32), profiles=["cortex-m4"])
    mem = est.memory["cortex-m4"]
    assert (mem["arena_bytes"], mem["peak_live_bytes"], mem["weight_bytes"]) == \
        (45_056, 45_056, 896)
    assert list(mem["placement"].values()) == [{"writable": 45_056, "read_only": 896}]
    assert any(n.startswith("cortex-m4 memory: activation arena 45,056 B") for n in est.notes)


def test_weights_spill_to_flash_when_sram_is_full():
    # Linear(300, 300): 90,300 weights x 4 B = 361,200 B > cortex-m4's 196,608 B SRAM.
    # arena: input 1,200 B + output 1,200 B = 2,400 B; SRAM left 194,208 B of weights,
    # the other 361,200 - 194,208 = 166,992 B in flash (1 MB)
    est = estimate(nn.Linear(300, 300), (1, 300), profiles=["cortex-m4"])
    placement = list(est.memory["cortex-m4"]["placement"].values())
    assert placement == [{"writable": 2_400, "read_only": 194_208},
                         {"writable": 0, "read_only": 166_992}]


def test_int8_prices_int8_macs_and_a_quarter_of_the_bytes():
    fp = estimate(nn.Conv2d(3, 8, 3, padding=1), (1, 3, 32, 32), profiles=["cortex-m4"])
    q = estimate(nn.Conv2d(3, 8, 3, padding=1), (1, 3, 32, 32), profiles=["cortex-m4"],
                 dtype="int8")
    macs = 8 * 27 * 32 * 32   # 221,184 MACs, as fp32 then as int8
    assert fp.ledgers["cortex-m4"].total_ops()["mac_fp32"] == macs
    assert q.ledgers["cortex-m4"].total_ops()["mac_int8"] == macs
    assert "mac_fp32" not in q.ledgers["cortex-m4"].total_ops()
    fp_bytes = sum(fp.ledgers["cortex-m4"].total_bytes().values())
    q_bytes = sum(q.ledgers["cortex-m4"].total_bytes().values())
    assert fp_bytes // 4 <= q_bytes <= fp_bytes // 4 + 4   # / 4, each count rounded up
    # arena at 1 B a value: 3,072 + 8,192 = 11,264 B; weights 216 x 1 B + 8 int32 biases
    # x 4 B = 248 B
    mem = q.memory["cortex-m4"]
    assert (mem["arena_bytes"], mem["weight_bytes"]) == (11_264, 248)
    assert q.dtype == "int8" and INT8_CONVENTIONS in q.notes
    # cortex-m4: an int8 MAC 392.7 pJ against 2,356.2 pJ for fp32: int8 is cheaper
    assert q.per_inference_j("cortex-m4") < fp.per_inference_j("cortex-m4")


def test_unknown_dtype_is_one_line():
    with pytest.raises(ModelError, match="dtype 'int4' is not known; give one of fp32, int8"):
        estimate(nn.Linear(2, 2), (1, 2), profiles=["a100"], dtype="int4")


def test_a_model_that_fits_only_at_int8_is_priced_at_int8():
    # 64-8192-10 MLP: 64 x 8192 + 8192 x 10 = 606,208 weights + 8,202 biases.
    # fp32: 614,410 x 4 B = 2,457,640 B > cortex-m4's SRAM + flash 1,245,184 B: refused.
    # int8: 606,208 x 1 B + 8,202 x 4 B = 639,016 B: fits (the fp32 size must not decide)
    def mlp():
        return nn.Sequential(nn.Linear(64, 8192), nn.ReLU(), nn.Linear(8192, 10))
    fp = estimate(mlp(), (1, 64), profiles=["a100", "cortex-m4"])
    assert "2457640 B exceeds" in fp.skipped["cortex-m4"]
    q = estimate(mlp(), (1, 64), profiles=["cortex-m4"], dtype="int8")
    assert list(q.reports) == ["cortex-m4"]
    assert q.memory["cortex-m4"]["weight_bytes"] == 639_016


def test_an_encoder_layer_is_planned_as_the_run_that_is_counted():
    # the count runs nn.TransformerEncoderLayer with PyTorch's fused fast path off, as its
    # linear, attention and norm ops; the arena is planned from that same run, not from the
    # one fused kernel (whose trace held 81,920 B: input and output). 160 tokens x 64: at
    # the feed-forward's ReLU, the first norm's output (kept for the residual, 160 x 64 x
    # 4 B = 40,960 B), linear1's output and the ReLU's (160 x 256 x 4 B = 163,840 B each)
    # are alive at once: 40,960 + 2 x 163,840 = 368,640 B > cortex-m7's 327,680 B of SRAM
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True)
    assert torch.backends.mha.get_fastpath_enabled()   # on, as torch's default
    est = estimate(layer, (1, 160, 64), profiles=["cortex-m7"])
    assert est.reports == {}
    why = est.skipped["cortex-m7"]
    assert "one inference needs 368,640 B of writable memory" in why
    assert "but cortex-m7 has 327,680 B" in why
    assert torch.backends.mha.get_fastpath_enabled()   # restored after the trace


def test_a_profile_skipped_for_training_keeps_no_inference_plan():
    """Linear(256, 256): 257 x 256 x 4 = 263,168 B of weights fit cortex-m7's flash for an
    inference, but a training step holds weights + gradients (526,336 B and more) in its
    327,680 B of SRAM: skipped. Its inference plan (note and ``memory`` entry) went with it;
    before, both stayed as if it ran."""
    est = estimate(torch.nn.Linear(256, 256), (1, 256), profiles=["cortex-m7", "a100"],
                   loss="mse")
    assert "cortex-m7" in est.skipped and "a100" in est.reports
    assert "cortex-m7" not in est.memory
    assert not any(n.startswith("cortex-m7 memory:") for n in est.notes)
    # inference alone: the plan is there
    est = estimate(torch.nn.Linear(256, 256), (1, 256), profiles=["cortex-m7"])
    assert "cortex-m7" in est.memory
    assert any(n.startswith("cortex-m7 memory:") for n in est.notes)


class _NoCopy(nn.Linear):
    def __deepcopy__(self, memo):
        raise AssertionError("copied")


def test_a_model_no_profile_holds_is_refused_without_copying_it():
    """1024 x 1024 + 1024 float32 = 4,198,400 B of weights, over cortex-m4's SRAM + flash:
    refused before the working copy is made (a 2 GiB Linear took 5 GB of memory and 18 s to
    be refused; before, this module's copy failed first). The message names both sizes."""
    est = estimate(_NoCopy(1024, 1024), (1, 1024), profiles=["cortex-m4"])
    assert not est.reports
    assert "_NoCopy parameters + buffers" in est.skipped["cortex-m4"]
    assert "4198400 B" in est.skipped["cortex-m4"]


def test_an_example_batch_is_named_when_its_arena_does_not_fit():
    """At a batch of 16 the traced arena is 16 samples': the refusal said "one inference
    needs" it and never named the batch. Conv2d(3,64,3,p=1) at int8 on 3 x 32 x 32: one
    sample's arena is 3,072 + 65,536 = 68,608 B (fits cortex-m4); 16 at once 1,097,728 B."""
    est = estimate(wide_conv(), (16, 3, 32, 32), profiles=["cortex-m4"], dtype="int8")
    why = est.skipped["cortex-m4"]
    assert "one inference of 16 samples at once" in why and "batch of 1" in why, why
    assert "needs 1,097,728 B of writable memory" in why
    one = estimate(wide_conv(), (1, 3, 32, 32), profiles=["cortex-m4"], dtype="int8")
    assert one.memory["cortex-m4"]["arena_bytes"] == 68_608
