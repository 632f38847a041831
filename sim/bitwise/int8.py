"""Int8 networks the way TFLite Micro and CMSIS-NN run them: the integer arithmetic, the
graph, and a vectorised numpy reference counted on the bitwise/MCU engine.

Arithmetic (TFLite's ``kernels/internal/common.h``, the scheme of Jacob et al. 2018):

- a real value ``r`` of a tensor is ``scale * (q - zero_point)`` with ``q`` int8;
  activations have one scale and zero point per tensor (asymmetric), weights one scale per
  output channel and zero point 0 (symmetric, ``q`` in [-127, 127]), biases are int32 at
  scale ``s_in * s_w[c]``;
- a convolution or fully connected layer accumulates ``sum (x + in_offset) * w + bias`` in
  int32 (``in_offset = -zero_point_in``; padding contributes nothing), then rescales the
  accumulator by the real multiplier ``s_in * s_w[c] / s_out`` held as a Q31 fixed-point
  ``multiplier`` and a power-of-two ``shift`` (:func:`quantize_multiplier`, TFLite's
  ``QuantizeMultiplier``), with :func:`multiply_by_quantized_multiplier`
  (``SaturatingRoundingDoublingHighMul`` then ``RoundingDivideByPOT``), adds the output
  zero point and clamps to ``[act_min, act_max]`` (a fused ReLU/ReLU6 is only a tighter
  clamp);
- a residual add rescales both inputs to a common scale with 20 bits of headroom
  (TFLite's ``PrepareGeneralSubOp``/``reference_ops::Add`` for int8), adds, and rescales
  to the output;
- max pooling takes the int8 maximum, average pooling the rounded integer mean of the
  in-bounds values (round half away from zero, as TFLM), both at the input's scale.

One deviation, for defined behaviour: where a multiplier exceeds 1 (``shift > 0``) TFLM
multiplies ``x * (1 << shift)`` in int32, undefined on overflow; here (and in the C that
:mod:`deploy.c_int8` writes) the product is formed in 64 bits and saturated to int32.

Activations are stored channel-first per sample (C, H, W), as torch holds them, so a
flatten is free and a Linear layer's weights keep torch's column order; the C kernels use
the same layout. Every layer's arithmetic is here once, vectorised over the batch
(:func:`run_int8`), and the generated C (``deploy/c_int8/templates/ne_int8.c``) repeats it
loop by loop; the export's golden test requires the two to agree bit for bit.

Counting (per sample; the ops of the C kernels' inner loops, priced by the profile):

- conv / depthwise conv / linear: per in-bounds tap 1 ``mac_int8`` and 1 ``int_add``
  (the input offset); per output the requantisation :data:`REQUANT_OPS` plus 1 ``int_add``
  (output offset) and 2 ``int_cmp`` (clamp); bytes: each tap reads one activation byte
  (SRAM, ``local``) and one weight byte (flash, ``nonvolatile``), each output channel
  reads its 12 bytes of bias, multiplier and shift from flash once, each output writes one
  byte;
- max pool: per in-bounds tap 1 ``int_cmp``; avg pool: per tap 1 ``int_add``, per output
  1 ``int_mul`` (the division), 2 ``int_add`` (rounding), 2 ``int_cmp`` (clamp);
- add (a subtraction is an add whose second input's multiplier is negated, as TFLite's
  sub): per output 2 x (1 offset ``int_add`` + 1 shift ``int_add`` + a requantisation),
  1 ``int_add`` (sum), 1 requantisation, 1 ``int_add`` (offset), 2 ``int_cmp``;
- mul: per output 2 offset ``int_add``, 1 ``int_mul``, a requantisation, 1 ``int_add``
  (offset), 2 ``int_cmp``; reads both inputs' bytes;
- concatenation: per output 1 offset ``int_add``, a requantisation (each input to the
  output's scale), 1 ``int_add`` (offset), 2 ``int_cmp``;
- clamp (a ReLU that follows no conv, linear or add): 2 ``int_cmp`` per element;
- PReLU: per element 1 offset ``int_add``, 1 ``int_cmp`` (the sign), a requantisation,
  1 ``int_add`` (offset), 2 ``int_cmp``; for each negative input (counted over the batch as
  it is, not per sample) 1 ``int_mul`` by its channel's alpha; each channel's alpha byte
  read from flash once;
- reshape / flatten: nothing (the bytes stay where they are).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sim.errors import ModelError

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
ADD_LEFT_SHIFT = 20
"""Bits of headroom TFLite's int8 add gives both inputs before rescaling them."""

REQUANT_OPS = {"int_mul": 1, "int_add": 6, "int_cmp": 1}
"""One :func:`multiply_by_quantized_multiplier` in Thumb-2 terms: SMULL (the 64-bit
product), the nudge added to it (ADDS + ADC), the high word taken (a shift), the rounding
divide's mask and threshold (AND, ADD), the compare and the rounding add."""


# -- fixed-point arithmetic (TFLite common.h) ---------------------------------------------
def quantize_multiplier(real) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's ``QuantizeMultiplier``: ``real = multiplier * 2**(shift - 31)`` with
    ``multiplier`` an int32 in [2**30, 2**31) (0 for ``real == 0``). Vectorised.

    ``frexp`` splits ``real = frac * 2**shift`` with frac in [0.5, 1); ``round(frac * 2**31)``
    may round up to 2**31, which is halved and the shift raised; a shift below -31 leaves
    nothing of the value, so the multiplier becomes 0.
    """
    r = np.atleast_1d(np.asarray(real, dtype=np.float64))
    if not np.isfinite(r).all() or (r < 0).any():
        raise ModelError(f"quantize_multiplier: multipliers must be finite and >= 0, got "
                         f"{r[~np.isfinite(r) | (r < 0)][:3].tolist()}")
    frac, shift = np.frexp(r)
    # std::round (half away from zero); frac * 2**31 and the + 0.5 are exact in float64
    q = np.floor(frac * 2.0**31 + 0.5).astype(np.int64)
    top = q == 2**31
    q = np.where(top, q // 2, q)
    shift = np.where(top, shift + 1, shift).astype(np.int64)
    tiny = shift < -31
    q = np.where(tiny, 0, q)
    shift = np.where(tiny, 0, shift)
    if (shift > 30).any():
        raise ModelError(f"quantize_multiplier: a multiplier of {float(r.max()):.3g} is too "
                         "large for int32 fixed point (shift > 30)")
    return q.astype(np.int32), shift.astype(np.int32)


def _trunc_div(a: np.ndarray, d: int) -> np.ndarray:
    """C's integer division (towards zero) of int64 ``a`` by ``d`` > 0."""
    return np.where(a >= 0, a // d, -((-a) // d))


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul``: ``round(a * b / 2**31)`` for int32
    ``a``, ``b`` (the nudge is +2**30, or 1 - 2**30 for a negative product, then C's
    truncating division); ``INT32_MIN * INT32_MIN`` saturates to ``INT32_MAX``. int64 out."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    out = _trunc_div(ab + nudge, 1 << 31)
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, out)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero
    (arithmetic shift, then +1 when the remainder exceeds half, with ties going up for
    positive and down for negative ``x``). int64 in and out, ``exponent`` in [0, 31]."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier``: ``x * multiplier * 2**(shift - 31)``,
    rounded; for ``shift > 0`` ``x`` is first shifted left (in 64 bits, saturated to int32:
    see the module docstring). int64 out, within int32."""
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = np.clip(x << left, INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier),
                                  right)


# -- the graph ---------------------------------------------------------------------------
@dataclass(frozen=True)
class QTensor:
    """One int8 activation: its shape per sample ((C, H, W) or (F,)), scale, zero point."""

    name: str
    shape: tuple[int, ...]
    scale: float
    zero_point: int

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@dataclass(frozen=True)
class Conv2d:
    """Convolution (``groups == 1``), depthwise (``groups`` = input channels, any depth
    multiplier) or grouped; weights [C_out, C_in / groups, kh, kw] int8, per output
    channel ``bias`` (int32), ``multiplier`` and ``shift``. ``padding``: the zero rows above
    and columns left of the input; those below and right are what the output's size reaches
    (fewer or more: torch's 'same' of an even kernel, a zero pad before the conv)."""

    name: str
    inputs: tuple[int]
    output: int
    weight: np.ndarray
    bias: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class Linear:
    """Fully connected: weights [out, in] int8, per output ``bias``, ``multiplier``, ``shift``."""

    name: str
    inputs: tuple[int]
    output: int
    weight: np.ndarray
    bias: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    act_min: int
    act_max: int


@dataclass(frozen=True)
class MaxPool2d:
    name: str
    inputs: tuple[int]
    output: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    act_min: int = INT8_MIN
    act_max: int = INT8_MAX


@dataclass(frozen=True)
class AvgPool2d:
    """Mean of the in-bounds values of each window (TFLM's count; torch's
    ``count_include_pad=False``)."""

    name: str
    inputs: tuple[int]
    output: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    act_min: int = INT8_MIN
    act_max: int = INT8_MAX


@dataclass(frozen=True)
class Add:
    """Elementwise ``a + b`` of two tensors of one shape (TFLite's int8 add)."""

    name: str
    inputs: tuple[int, int]
    output: int
    multiplier1: int
    shift1: int
    multiplier2: int
    shift2: int
    out_multiplier: int
    out_shift: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class Mul:
    """Elementwise ``a * b`` (TFLite's int8 mul): ``b`` of ``a``'s shape, or (C, 1, ..., 1)
    against ``a``'s (C, ...): one value per channel, broadcast over the channel (a
    squeeze-and-excitation block's channel weights). ``(a - za) (b - zb)`` in int32,
    rescaled by ``s_a s_b / s_out``."""

    name: str
    inputs: tuple[int, int]
    output: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class Concat:
    """Concatenation along the channel axis (the first of each sample, so every input is one
    block of the output's bytes): each input requantised to the output's scale and zero
    point as TFLM's int8 requantize does (``zp_out + MBQM(q - zp_in)``, clamped to int8)."""

    name: str
    inputs: tuple[int, ...]
    output: int
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]


@dataclass(frozen=True)
class PReLU:
    """``x`` where ``x >= 0``, else ``alpha[c] x`` (TFLite's int8 prelu): one int8 ``alpha``
    per channel (the first axis of each sample; a shared alpha repeated), symmetric at
    ``alpha_scale``; the two sides rescaled by ``s_in / s_out`` (``multiplier1``) and
    ``s_in s_alpha / s_out`` (``multiplier2``)."""

    name: str
    inputs: tuple[int]
    output: int
    alpha: np.ndarray      # int8 [C]
    multiplier1: int
    shift1: int
    multiplier2: int
    shift2: int


@dataclass(frozen=True)
class Clamp:
    """A ReLU, ReLU6 or clamp that could not be fused: ``clamp(q, act_min, act_max)``, same
    scale."""

    name: str
    inputs: tuple[int]
    output: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class Reshape:
    """Flatten / reshape: the same bytes under another shape (the output aliases the input).
    ``view``: added by the export, not a layer of the model (a 1-D layer's (C, 1, L) view for
    its 2-D kernel, and back)."""

    name: str
    inputs: tuple[int]
    output: int
    view: bool = False


@dataclass(frozen=True)
class Lut:
    """An elementwise activation (sigmoid, tanh, hardswish, ...) as the table of its 256 int8
    outputs, one per int8 input (TFLite's lookup-table kernels): ``y = table[x + 128]``."""

    name: str
    inputs: tuple[int]
    output: int
    table: np.ndarray   # int8 [256]


NODE_TYPES = (Conv2d, Linear, MaxPool2d, AvgPool2d, Add, Mul, Concat, PReLU, Clamp, Lut,
              Reshape)


@dataclass
class Int8Graph:
    """An int8 network: tensors, nodes in execution order, the input and output tensor."""

    tensors: list[QTensor]
    nodes: list
    input: int
    output: int
    meta: dict = field(default_factory=dict)

    def storage(self) -> list[int]:
        """The tensor whose bytes each tensor uses: itself, or for a reshape's output the
        storage of its input."""
        base = list(range(len(self.tensors)))
        for node in self.nodes:
            if isinstance(node, Reshape):
                base[node.output] = base[node.inputs[0]]
        return base

    def lifetimes(self):
        """:class:`sim.arena.Buffer` per stored tensor (reshape outputs share their input's):
        written by node ``first`` (the input: before node 0), last read by node ``last``
        (the output: after the last node). Returns (storage tensor ids, buffers)."""
        from sim.arena import Buffer
        base = self.storage()
        first = {self.input: 0}
        last = {self.input: 0}
        for i, node in enumerate(self.nodes):
            for t in node.inputs:
                last[base[t]] = max(last.get(base[t], i), i)
            b = base[node.output]
            first.setdefault(b, i)
            last[b] = max(last.get(b, i), i)
        last[base[self.output]] = len(self.nodes)
        ids = sorted(first)
        return ids, [Buffer(self.tensors[t].size, first[t], last[t]) for t in ids]

    def arena(self) -> tuple[int, dict[int, int]]:
        """TFLM's greedy plan of the activations (:func:`sim.arena.greedy_arena`): (arena
        bytes, offset of every tensor, reshape outputs at their input's offset)."""
        from sim.arena import greedy_arena
        ids, buffers = self.lifetimes()
        size, offsets = greedy_arena(buffers)
        at = dict(zip(ids, offsets, strict=True))
        base = self.storage()
        return size, {t: at[base[t]] for t in range(len(self.tensors)) if base[t] in at}


# -- the reference ---------------------------------------------------------------------------
def _windows(x: np.ndarray, kernel, stride, dilation, out_hw) -> np.ndarray:
    """[N, C, OH, OW, kh, kw] views of padded ``x`` [N, C, H, W]."""
    kh, kw = kernel
    dh, dw = dilation
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    win = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    win = win[:, :, ::stride[0], ::stride[1], ::dh, ::dw]
    return win[:, :, :out_hw[0], :out_hw[1]]


def _valid_taps(size: int, out: int, k: int, stride: int, pad: int, dil: int) -> np.ndarray:
    """Per output position along one axis, how many of the ``k`` taps fall inside the input."""
    pos = np.arange(out)[:, None] * stride - pad + np.arange(k)[None, :] * dil
    return ((pos >= 0) & (pos < size)).sum(axis=1)


def _requantize(acc, multiplier, shift, out_zp: int, lo: int, hi: int) -> np.ndarray:
    y = multiply_by_quantized_multiplier(acc, multiplier, shift) + out_zp
    return np.clip(y, lo, hi).astype(np.int8)


class _Counter:
    """Op and byte counts of one node, per sample, flushed to the ledger times N; what
    depends on the values (:meth:`batch_op`) as the total over the N samples."""

    def __init__(self, ledger, level: str, n: int):
        self.ledger, self.level, self.n = ledger, level, n
        self.ops: dict[str, int] = {}
        self.read = self.write = self.flash = 0
        self.batch_ops: dict[str, int] = {}   # data-dependent: totals over the N samples

    def op(self, name: str, count) -> None:
        self.ops[name] = self.ops.get(name, 0) + int(count)

    def batch_op(self, name: str, total) -> None:
        self.batch_ops[name] = self.batch_ops.get(name, 0) + int(total)

    def requant(self, count) -> None:
        for op, k in REQUANT_OPS.items():
            self.op(op, k * int(count))

    def flush(self) -> None:
        for op, k in self.ops.items():
            self.ledger.add(op, k * self.n)
        for op, total in self.batch_ops.items():
            if total:
                self.ledger.add(op, total)
        self.ledger.add_bytes(self.level, read=self.read * self.n, write=self.write * self.n)
        if self.flash:
            self.ledger.add_bytes("nonvolatile", read=self.flash * self.n)


def conv_output_hw(in_hw, kernel, stride, padding, dilation) -> tuple[int, int]:
    """torch's output size: ``(H + 2p - d (k - 1) - 1) // s + 1`` per axis."""
    return tuple((h + 2 * p - d * (k - 1) - 1) // s + 1
                 for h, k, s, p, d in zip(in_hw, kernel, stride, padding, dilation,
                                          strict=True))


def _conv(node: Conv2d, x, tin: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    n, cin, h, w = x.shape
    cout, cg, kh, kw = node.weight.shape
    g = node.groups
    oh, ow = tout.shape[1:]
    ph, pw = node.padding
    # (x - zp_in) is 0 at the padding: pad the offset input with zeros; ``padding`` is the
    # top / left offset (as the C kernel reads it), the bottom / right what the output size
    # reaches (torch's 'same' of an even kernel and a zero pad before the conv pad unevenly)
    below = max(ph, (oh - 1) * node.stride[0] + (kh - 1) * node.dilation[0] + 1 - h - ph)
    right = max(pw, (ow - 1) * node.stride[1] + (kw - 1) * node.dilation[1] + 1 - w - pw)
    xo = np.pad(x.astype(np.float64) - tin.zero_point, ((0, 0), (0, 0), (ph, below),
                                                        (pw, right)))
    win = _windows(xo, (kh, kw), node.stride, node.dilation, (oh, ow))
    cols = win.reshape(n, g, cg, oh * ow, kh * kw).transpose(0, 1, 3, 2, 4) \
              .reshape(n, g, oh * ow, cg * kh * kw)
    wmat = node.weight.reshape(g, cout // g, cg * kh * kw).astype(np.float64)
    # exact in float64: every term is at most 255 x 127 and the sums stay far below 2**53
    acc = np.matmul(cols, wmat.transpose(0, 2, 1))          # [n, g, oh*ow, cout/g]
    acc = acc.transpose(0, 1, 3, 2).reshape(n, cout, oh, ow).astype(np.int64)
    acc += node.bias.astype(np.int64)[None, :, None, None]
    y = _requantize(acc, node.multiplier[None, :, None, None], node.shift[None, :, None, None],
                    tout.zero_point, node.act_min, node.act_max)
    taps = int(_valid_taps(h, oh, kh, node.stride[0], ph, node.dilation[0]).sum()
               * _valid_taps(w, ow, kw, node.stride[1], pw, node.dilation[1]).sum()) * cg * cout
    outs = cout * oh * ow
    c.op("mac_int8", taps)
    c.op("int_add", taps + outs)
    c.requant(outs)
    c.op("int_cmp", 2 * outs)
    c.read += taps
    c.flash += taps + 12 * cout
    c.write += outs
    return y


def _linear(node: Linear, x, tin: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    xo = x.reshape(x.shape[0], -1).astype(np.float64) - tin.zero_point
    acc = (xo @ node.weight.astype(np.float64).T).astype(np.int64)   # exact, as in _conv
    acc += node.bias.astype(np.int64)[None, :]
    y = _requantize(acc, node.multiplier[None, :], node.shift[None, :], tout.zero_point,
                    node.act_min, node.act_max)
    o, k = node.weight.shape
    c.op("mac_int8", o * k)
    c.op("int_add", o * k + o)
    c.requant(o)
    c.op("int_cmp", 2 * o)
    c.read += o * k
    c.flash += o * k + 12 * o
    c.write += o
    return y


def _pool_windows(x, node, tout, fill):
    ph, pw = node.padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    return _windows(xp, node.kernel, node.stride, (1, 1), tout.shape[1:])


def _pool_taps(node, tin: QTensor, tout: QTensor) -> np.ndarray:
    """[OH, OW] in-bounds taps per window."""
    vy = _valid_taps(tin.shape[1], tout.shape[1], node.kernel[0], node.stride[0],
                     node.padding[0], 1)
    vx = _valid_taps(tin.shape[2], tout.shape[2], node.kernel[1], node.stride[1],
                     node.padding[1], 1)
    return vy[:, None] * vx[None, :]


def _max_pool(node: MaxPool2d, x, tin: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    # the padding never wins: it is below every int8
    win = _pool_windows(x.astype(np.int16), node, tout, INT8_MIN - 1)
    y = np.clip(win.max(axis=(-2, -1)), node.act_min, node.act_max).astype(np.int8)
    taps = int(_pool_taps(node, tin, tout).sum()) * tout.shape[0]
    c.op("int_cmp", taps + 2 * tout.size)
    c.read += taps
    c.write += tout.size
    return y


def _avg_pool(node: AvgPool2d, x, tin: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    win = _pool_windows(x.astype(np.int64), node, tout, 0)
    acc = win.sum(axis=(-2, -1))
    count = _pool_taps(node, tin, tout)[None, None]
    half = count // 2
    # TFLM: acc > 0 ? (acc + count/2) / count : (acc - count/2) / count, C division
    avg = np.where(acc > 0, (acc + half) // count, -((half - acc) // count))
    y = np.clip(avg, node.act_min, node.act_max).astype(np.int8)
    taps = int(count.sum()) * tout.shape[0]
    c.op("int_add", taps + 2 * tout.size)
    c.op("int_mul", tout.size)
    c.op("int_cmp", 2 * tout.size)
    c.read += taps
    c.write += tout.size
    return y


def _add(node: Add, a, b, ta: QTensor, tb: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    sa = multiply_by_quantized_multiplier(
        (a.astype(np.int64) - ta.zero_point) << ADD_LEFT_SHIFT, node.multiplier1, node.shift1)
    sb = multiply_by_quantized_multiplier(
        (b.astype(np.int64) - tb.zero_point) << ADD_LEFT_SHIFT, node.multiplier2, node.shift2)
    y = _requantize(sa + sb, node.out_multiplier, node.out_shift, tout.zero_point,
                    node.act_min, node.act_max)
    n = tout.size
    c.op("int_add", 2 * 2 * n + n + n)
    c.requant(3 * n)
    c.op("int_cmp", 2 * n)
    c.read += 2 * n
    c.write += n
    return y


def _mul(node: Mul, a, b, ta: QTensor, tb: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    # b is a's shape or (C, 1, ..., 1): numpy broadcasts it over each channel as the C does
    prod = (a.astype(np.int64) - ta.zero_point) * (b.astype(np.int64) - tb.zero_point)
    y = _requantize(prod, node.multiplier, node.shift, tout.zero_point, node.act_min,
                    node.act_max)
    n = tout.size
    c.op("int_add", 3 * n)
    c.op("int_mul", n)
    c.requant(n)
    c.op("int_cmp", 2 * n)
    c.read += 2 * n
    c.write += n
    return y


def _concat(node: Concat, xs, tins, tout: QTensor, c: _Counter) -> np.ndarray:
    parts = [_requantize(x.astype(np.int64) - t.zero_point, m, s, tout.zero_point, INT8_MIN,
                         INT8_MAX)
             for x, t, m, s in zip(xs, tins, node.multipliers, node.shifts, strict=True)]
    n = tout.size
    c.op("int_add", 2 * n)
    c.requant(n)
    c.op("int_cmp", 2 * n)
    c.read += n
    c.write += n
    return np.concatenate(parts, axis=1)


def _prelu(node: PReLU, x, tin: QTensor, tout: QTensor, c: _Counter) -> np.ndarray:
    v = x.astype(np.int64) - tin.zero_point
    alpha = node.alpha.astype(np.int64).reshape(-1, *[1] * (x.ndim - 2))   # per channel
    pos = multiply_by_quantized_multiplier(v, node.multiplier1, node.shift1)
    neg = multiply_by_quantized_multiplier(v * alpha, node.multiplier2, node.shift2)
    y = np.clip(np.where(v >= 0, pos, neg) + tout.zero_point, INT8_MIN, INT8_MAX)
    n = tout.size
    negative = int(np.count_nonzero(v < 0))   # over the batch: the C multiplies only these
    c.op("int_add", 2 * n)
    c.op("int_cmp", 3 * n)
    c.requant(n)
    c.batch_op("int_mul", negative)
    c.flash += node.alpha.size
    c.read += n
    c.write += n
    return y.astype(np.int8)


def _clamp(node: Clamp, x, c: _Counter) -> np.ndarray:
    c.op("int_cmp", 2 * x[0].size)
    c.read += x[0].size
    c.write += x[0].size
    return np.clip(x, node.act_min, node.act_max).astype(np.int8)


def _lut(node: Lut, x, c: _Counter) -> np.ndarray:
    n = x[0].size
    c.op("int_add", n)    # the index x + 128
    c.read += n
    c.flash += n          # the table is constant data
    c.write += n
    return node.table[x.astype(np.int16) + 128]


def check_input(graph: Int8Graph, x) -> np.ndarray:
    """``x`` as int8 [N, *input shape], or a one-line ModelError."""
    x = np.asarray(x)
    shape = graph.tensors[graph.input].shape
    if x.dtype != np.int8 or x.ndim != len(shape) + 1 or tuple(x.shape[1:]) != shape \
            or x.shape[0] < 1:
        raise ModelError(f"int8 network input: expected int8 [N >= 1, "
                         f"{', '.join(map(str, shape))}], got {x.dtype} {x.shape}")
    return x


BATCH = 256
"""Samples per vectorised pass of :func:`run_int8` (bounds the im2col copies' memory)."""


def run_int8(graph: Int8Graph, x, device=None, scope: str = "infer") -> np.ndarray:
    """The int8 network on int8 inputs ``x`` [N, *input shape]: its int8 output [N, ...].

    With ``device`` (a :class:`~sim.bitwise.BitwiseDevice`), every node's ops and bytes are
    counted in its ledger under ``scope/L{i}_{kind}`` (see the module docstring), N samples.
    """
    x = check_input(graph, x)
    if device is None:
        return np.concatenate([_forward(graph, x[i:i + BATCH], None, "local")
                               for i in range(0, x.shape[0], BATCH)])
    with device.count(scope, samples=x.shape[0]):
        return np.concatenate([_forward(graph, x[i:i + BATCH], device.ledger,
                                        device.memory_level)
                               for i in range(0, x.shape[0], BATCH)])


def _forward(graph: Int8Graph, x: np.ndarray, ledger, level: str) -> np.ndarray:
    n = x.shape[0]
    values: dict[int, np.ndarray] = {graph.input: x}
    ts = graph.tensors
    for i, node in enumerate(graph.nodes):
        c = _Counter(ledger, level, n)
        args = [values[t] for t in node.inputs]
        tin = ts[node.inputs[0]]
        tout = ts[node.output]
        if isinstance(node, Conv2d):
            y = _conv(node, args[0], tin, tout, c)
        elif isinstance(node, Linear):
            y = _linear(node, args[0], tin, tout, c)
        elif isinstance(node, MaxPool2d):
            y = _max_pool(node, args[0], tin, tout, c)
        elif isinstance(node, AvgPool2d):
            y = _avg_pool(node, args[0], tin, tout, c)
        elif isinstance(node, Add):
            y = _add(node, args[0], args[1], tin, ts[node.inputs[1]], tout, c)
        elif isinstance(node, Mul):
            y = _mul(node, args[0], args[1], tin, ts[node.inputs[1]], tout, c)
        elif isinstance(node, Concat):
            y = _concat(node, args, [ts[t] for t in node.inputs], tout, c)
        elif isinstance(node, PReLU):
            y = _prelu(node, args[0], tin, tout, c)
        elif isinstance(node, Clamp):
            y = _clamp(node, args[0], c)
        elif isinstance(node, Lut):
            y = _lut(node, args[0], c)
        elif isinstance(node, Reshape):
            y = args[0].reshape((n, *tout.shape))
        else:
            raise ModelError(f"int8 network: node {i} is a {type(node).__name__}; known: "
                             f"{', '.join(t.__name__ for t in NODE_TYPES)}")
        if ledger is not None and not isinstance(node, Reshape):
            with ledger.scope(f"L{i}_{type(node).__name__}"):
                c.flush()
        values[node.output] = y
    return values[graph.output]


def quantize_input(graph: Int8Graph, x) -> np.ndarray:
    """Real inputs -> int8 at the input tensor's scale and zero point (round half to even,
    then saturate), as a sensor driver would before calling the model."""
    t = graph.tensors[graph.input]
    q = np.round(np.asarray(x, dtype=np.float64) / t.scale) + t.zero_point
    return np.clip(q, INT8_MIN, INT8_MAX).astype(np.int8)


def dequantize(t: QTensor, q) -> np.ndarray:
    return (np.asarray(q, dtype=np.float64) - t.zero_point) * t.scale


def activation_params(lo: float, hi: float) -> tuple[float, int]:
    """Per-tensor asymmetric int8 scale and zero point for the range [lo, hi] (TFLite's
    converter: the range is widened to hold 0, so 0.0 is exact; ``scale = (hi - lo) / 255``,
    ``zero_point = round(-128 - lo / scale)``, half away from zero as ``std::round``). A
    range of zero width gets scale 1/255."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ModelError(f"activation range [{lo}, {hi}] is not finite")
    scale = (hi - lo) / 255.0 if hi > lo else 1.0 / 255.0
    zp_real = INT8_MIN - lo / scale
    zp = int(math.copysign(math.floor(abs(zp_real) + 0.5), zp_real))   # std::round
    zp = min(max(zp, INT8_MIN), INT8_MAX)
    return scale, zp
