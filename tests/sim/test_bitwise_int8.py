"""The int8 arithmetic of sim/bitwise/int8.py against numbers worked out by hand (TFLite's
QuantizeMultiplier, SaturatingRoundingDoublingHighMul, RoundingDivideByPOT), and the numpy
reference against float convolution and its op counts."""
import numpy as np
import pytest

from sim.bitwise import BitwiseDevice
from sim.bitwise import int8 as q8
from sim.errors import ModelError


@pytest.mark.parametrize("real, mult, shift", [
    (0.5, 2**30, 0),              # frexp(0.5) = (0.5, 0): 0.5 * 2**31 = 2**30
    (0.75, 1610612736, 0),        # 0.75 * 2**31
    (0.1, 1717986918, -3),        # frexp(0.1) = (0.8, -3): round(0.8 * 2**31 = 1717986918.4)
    (1.5, 1610612736, 1),         # frexp(1.5) = (0.75, 1)
    (1 - 2.0**-40, 2**30, 1),     # frac * 2**31 rounds to 2**31: halved, shift + 1
    (2.0**-40, 0, 0),             # frexp = (0.5, -39): shift < -31 leaves nothing
    (0.0, 0, 0),
])
def test_quantize_multiplier(real, mult, shift):
    m, s = q8.quantize_multiplier(real)
    assert (int(m[0]), int(s[0])) == (mult, shift)
    if mult:   # real = mult * 2**(shift - 31) to 31 bits
        assert abs(mult * 2.0**(int(s[0]) - 31) - real) <= 2.0**(int(s[0]) - 32)


def test_quantize_multiplier_refuses_negative_and_nan():
    with pytest.raises(ModelError, match="finite and >= 0"):
        q8.quantize_multiplier([0.5, -0.1])
    with pytest.raises(ModelError, match="finite"):
        q8.quantize_multiplier(float("nan"))


@pytest.mark.parametrize("x, expected", [
    (100, 50),     # (100 * 2**30 + 2**30) / 2**31 = 50.5, truncated: 50
    (101, 51),     # (101 + 1) / 2 = 51: 50.5 rounds up
    (-101, -50),   # (-101 * 2**30 + 1 - 2**30) / 2**31 = -51 + 2**-31, truncated: -50
    (-100, -50),   # -50.5 + tiny -> -50
])
def test_doubling_high_mul_by_one_half(x, expected):
    assert int(q8.saturating_rounding_doubling_high_mul(x, 2**30)) == expected


def test_doubling_high_mul_saturates():
    # INT32_MIN * INT32_MIN * 2 / 2**32 = 2**31: one past INT32_MAX, saturated
    assert int(q8.saturating_rounding_doubling_high_mul(q8.INT32_MIN, q8.INT32_MIN)) \
        == q8.INT32_MAX


@pytest.mark.parametrize("x, e, expected", [
    (5, 1, 3),      # 2.5 -> 3 (half away from zero)
    (-3, 1, -2),    # -1.5 -> -2: -3 >> 1 = -2, remainder 1 not above threshold 0 + 1
    (-5, 2, -1),    # -1.25 -> -1: -5 >> 2 = -2, remainder 3 > threshold 1 + 1
    (7, 2, 2),      # 1.75 -> 2
    (6, 2, 2),      # 1.5 -> 2
    (-6, 2, -2),    # -1.5 -> -2
    (12345, 0, 12345),
])
def test_rounding_divide_by_pot(x, e, expected):
    assert int(q8.rounding_divide_by_pot(x, e)) == expected


def test_multiply_by_quantized_multiplier():
    # 0.25 = 2**30 * 2**(-1 - 31). TFLite rounds twice: 101 -> high mul 50.5 -> 51, then
    # 51 / 2 = 25.5 -> 26, where one rounding of 25.25 would give 25 (kept: bit equality
    # with TFLM matters more); 102 -> 51 -> 26; -101 -> -50 (see above) -> -25
    m, s = q8.quantize_multiplier(0.25)
    assert (int(m[0]), int(s[0])) == (2**30, -1)
    got = q8.multiply_by_quantized_multiplier(np.array([101, 102, -101]), m[0], s[0])
    assert got.tolist() == [26, 26, -25]
    # 3.0 = 0.75 * 2**2: shift 2 multiplies first; 1000 * 3 = 3000 exactly
    m, s = q8.quantize_multiplier(3.0)
    assert int(q8.multiply_by_quantized_multiplier(1000, m[0], s[0])) == 3000
    # 2**30 << 2 saturates to INT32_MAX before the high mul by 0.5: 2**30, not 2**31
    assert int(q8.multiply_by_quantized_multiplier(2**30, 2**30, 2)) == 2**30


def test_activation_params():
    # [0, 1]: scale 1/255, 0.0 at -128
    assert q8.activation_params(0.0, 1.0) == pytest.approx((1 / 255, -128))
    # [-1, 1]: scale 2/255, zero point round(-128 + 127.5) = round(-0.5) = -1 (std::round)
    scale, zp = q8.activation_params(-1.0, 1.0)
    assert scale == pytest.approx(2 / 255) and zp == -1
    # [0.5, 2] is widened to [0, 2] so that 0.0 is exact
    assert q8.activation_params(0.5, 2.0) == pytest.approx((2 / 255, -128))
    # a zero-width range
    assert q8.activation_params(0.0, 0.0) == pytest.approx((1 / 255, -128))


def _conv_graph(rng, groups=1, stride=(1, 1), padding=(1, 1), dilation=(1, 1)):
    """One conv layer quantised by hand: input scale 1/32 zp 3, weight scale 1/64, output
    scale 1/8 zp -5, so the real multiplier is (1/32)(1/64)/(1/8) = 1/256."""
    cin, cout, k = 4, 6 if groups == 1 else 8, 3
    w = rng.integers(-127, 128, (cout, cin // groups, k, k)).astype(np.int8)
    bias = rng.integers(-500, 500, cout).astype(np.int32)
    m, s = q8.quantize_multiplier(np.full(cout, 1 / 256))
    hw = q8.conv_output_hw((7, 9), (k, k), stride, padding, dilation)
    ts = [q8.QTensor("x", (cin, 7, 9), 1 / 32, 3), q8.QTensor("y", (cout, *hw), 1 / 8, -5)]
    node = q8.Conv2d("conv", (0,), 1, w, bias, m, s, stride, padding, dilation, groups,
                     -128, 127)
    return q8.Int8Graph(ts, [node], 0, 1), w, bias


@pytest.mark.parametrize("groups, stride, padding, dilation", [
    (1, (1, 1), (1, 1), (1, 1)), (4, (2, 1), (1, 0), (1, 1)), (1, (1, 2), (2, 2), (2, 1)),
])
def test_conv_reference_against_float(groups, stride, padding, dilation):
    """The integer conv equals the real conv of the dequantised values rounded at the
    output scale, within one step (the fixed-point multiplier is exact here: 1/256 =
    2**30 * 2**(-7 - 31), so only the final rounding and ties differ)."""
    import torch
    rng = np.random.default_rng(1)
    g, w, bias = _conv_graph(rng, groups, stride, padding, dilation)
    x = rng.integers(-128, 128, (5, 4, 7, 9)).astype(np.int8)
    y = q8.run_int8(g, x)
    xr = torch.tensor((x.astype(np.float64) - 3) / 32)
    wr = torch.tensor(w.astype(np.float64) / 64)
    br = torch.tensor(bias.astype(np.float64) / (32 * 64))
    ref = torch.nn.functional.conv2d(xr, wr, br, stride, padding, dilation, groups).numpy()
    want = np.clip(np.round(ref * 8) - 5, -128, 127)
    assert y.shape == want.shape
    assert np.abs(y.astype(np.int64) - want).max() <= 1
    assert (y == want).mean() > 0.95


def test_conv_counts():
    """Ops per sample of a 4 -> 6 channel 3x3 conv, padding 1, on 7x9: in-bounds taps per
    axis: rows 2 + 3*5 + 2 = 19 of 21, columns 2 + 3*7 + 2 = 25 of 27, so 19 * 25 * 4 * 6
    = 11,400 MACs; 6 * 7 * 9 = 378 outputs."""
    rng = np.random.default_rng(0)
    g, _, _ = _conv_graph(rng)
    dev = BitwiseDevice("cortex-m4")
    q8.run_int8(g, rng.integers(-128, 128, (3, 4, 7, 9)).astype(np.int8), device=dev)
    ops = dev.ledger.total_ops()
    assert ops["mac_int8"] == 3 * 11400
    # per tap the input offset, per output the offset: 11,400 + 378; requant 6 per output
    assert ops["int_add"] == 3 * (11400 + 378 + 6 * 378)
    assert ops["int_mul"] == 3 * 378
    assert ops["int_cmp"] == 3 * (378 + 2 * 378)
    assert dev.ledger.samples()["infer"] == 3


def test_avg_pool_rounds_half_away_from_zero():
    """TFLM's mean: (acc + n/2) / n for acc > 0, else (acc - n/2) / n in C division.
    Windows of 2 values: (1 + 2) -> 3/2 = 1.5 -> 2; (-1 - 2) -> -1.5 -> -2; (1 + 0) -> 0.5
    -> 1; (-1 + 0) -> -0.5 -> -1; (4 + 4) -> 4."""
    ts = [q8.QTensor("x", (1, 1, 10), 1.0, 0), q8.QTensor("y", (1, 1, 5), 1.0, 0)]
    g = q8.Int8Graph(ts, [q8.AvgPool2d("p", (0,), 1, (1, 2), (1, 2), (0, 0))], 0, 1)
    x = np.array([[[[1, 2, -1, -2, 1, 0, -1, 0, 4, 4]]]], np.int8)
    assert q8.run_int8(g, x).reshape(-1).tolist() == [2, -2, 1, -1, 4]


def test_add_matches_real_sum():
    """TFLite's add of a (scale 0.1, zp 10) and b (scale 0.04, zp -20) into out (scale 0.2,
    zp 0). b is a's bytes read at b's scale (a clamp that lets everything through):
    q = 30: a = 0.1 * 20 = 2.0, b = 0.04 * 50 = 2.0 -> 4.0 / 0.2 = 20;
    q = 10: a = 0, b = 1.2 -> 6; q = -128: -13.8 - 4.32 = -18.12 -> -90.6 -> -91;
    q = 127: 11.7 + 5.88 = 17.58 -> 87.9 -> 88."""
    ts = [q8.QTensor("a", (4,), 0.1, 10), q8.QTensor("b", (4,), 0.04, -20),
          q8.QTensor("y", (4,), 0.2, 0)]
    twice = 2 * max(0.1, 0.04)
    m1, s1 = q8.quantize_multiplier(0.1 / twice)             # 0.5
    m2, s2 = q8.quantize_multiplier(0.04 / twice)            # 0.2
    mo, so = q8.quantize_multiplier(twice / (2**20 * 0.2))   # 2**-20
    nodes = [q8.Clamp("as_b", (0,), 1, -128, 127),
             q8.Add("add", (0, 1), 2, int(m1[0]), int(s1[0]), int(m2[0]), int(s2[0]),
                    int(mo[0]), int(so[0]), -128, 127)]
    x = np.array([[30, 10, -128, 127]], np.int8)
    assert q8.run_int8(q8.Int8Graph(ts, nodes, 0, 2), x).reshape(-1).tolist() == \
        [20, 6, -91, 88]


def test_prelu_values_and_counts():
    """TFLite's prelu, input and output at scale 0.1 zero point 0, alpha 0.5 on every one
    of the 4 channels (int8 127 at scale 0.5 / 127): q >= 0 passes, q < 0 is halved (even q:
    no rounding). The C multiplies only the negative inputs by alpha: 3 in this batch of 2
    (a per-sample count times 2 would give 2 or 4), each channel's alpha read once per
    sample: 4 B x 2 of flash."""
    ts = [q8.QTensor("x", (4,), 0.1, 0), q8.QTensor("y", (4,), 0.1, 0)]
    m1, s1 = q8.quantize_multiplier(1.0)
    m2, s2 = q8.quantize_multiplier(0.5 / 127)
    node = q8.PReLU("prelu", (0,), 1, np.full(4, 127, np.int8), int(m1[0]), int(s1[0]),
                    int(m2[0]), int(s2[0]))
    x = np.array([[-4, 5, -2, 0], [1, 2, 6, -6]], np.int8)
    dev = BitwiseDevice("cortex-m4")
    y = q8.run_int8(q8.Int8Graph(ts, [node], 0, 1), x, device=dev)
    assert y.tolist() == [[-2, 5, -1, 0], [1, 2, 6, -3]]
    ops = dev.ledger.ops("infer/L0_PReLU")
    assert ops["int_mul"] == 3 + 2 * 4   # the alphas, plus a requantisation's per element
    assert dev.ledger.bytes("infer/L0_PReLU")[("nonvolatile", "read")] == 2 * 4


def test_run_int8_refuses_wrong_input():
    rng = np.random.default_rng(0)
    g, _, _ = _conv_graph(rng)
    with pytest.raises(ModelError, match=r"expected int8 \[N >= 1, 4, 7, 9\], got float64"):
        q8.run_int8(g, np.zeros((1, 4, 7, 9)))
    with pytest.raises(ModelError, match="got int8 \\(1, 4, 9, 7\\)"):
        q8.run_int8(g, np.zeros((1, 4, 9, 7), np.int8))


def test_arena_reuses_dead_buffers():
    """x (100 B) -> a (300 B) -> b (200 B) -> c (50 B), 16-byte aligned: 112, 304, 208, 64.
    Greedy, largest first: a at 0; b is alive with a (node 1): at 304; x is alive with a
    only (node 0), not with b: also at 304; c is alive with b only: at 0, where a was.
    Arena 304 + 208 = 512 B, against 688 B for four separate buffers."""
    ts = [q8.QTensor(n, (s,), 1.0, 0) for n, s in (("x", 100), ("a", 300), ("b", 200),
                                                    ("c", 50))]
    nodes = [q8.Clamp(f"n{i}", (i,), i + 1, -128, 127) for i in range(3)]
    size, offsets = q8.Int8Graph(ts, nodes, 0, 3).arena()
    assert offsets == {1: 0, 2: 304, 0: 304, 3: 0}
    assert size == 304 + 208
