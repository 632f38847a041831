"""Post-training int8 quantisation of a torch model into a :class:`sim.bitwise.int8.Int8Graph`.

The model is traced with ``torch.fx`` (so the graph is the model's own data flow, residual
adds included), run in fp32 on the calibration data to record each value's min and max,
and converted layer by layer with TFLite's conventions (:mod:`sim.bitwise.int8`):

- weights: per output channel, symmetric, ``scale = max |w| / 127``;
- activations: per tensor, asymmetric, from the calibration min/max (widened to hold 0);
- a ReLU / ReLU6 whose input is a conv, linear or add used by nothing else is fused into
  that op's clamp, and the op's output takes the ReLU's range (as the TFLite converter
  does); any other ReLU is a clamp at the input's scale;
- pooling and flatten keep their input's scale and zero point (TFLite requires it);
- a ``BatchNorm2d`` right after a conv used by nothing else is folded into the conv's
  weights and bias (its running statistics: the model in eval mode), before quantisation;
- ``Dropout`` and ``Identity`` are nothing at inference.

Anything else is refused in one line naming the layer and listing :data:`SUPPORTED`.
"""
from __future__ import annotations

import math
import operator
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from sim.bitwise import int8 as q8

SUPPORTED = ("Conv2d (any groups: plain, depthwise, grouped; zero padding)",
             "BatchNorm2d right after a Conv2d (folded into it)", "Linear",
             "ReLU", "ReLU6", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d(1)", "Flatten",
             "flatten/view/reshape to [N, -1]", "residual add (a + b, torch.add)",
             "Dropout and Identity (no-ops at inference)")
CALIBRATION_SETS = ("digits", "fashion-mnist")
"""Bundled data set names ``--calibration`` takes (else an ``.npy`` file)."""
MAX_ACC = q8.INT32_MAX


def _label(node) -> str:
    """A layer's name as the user wrote it: the module path (``features.3``) for a module,
    the traced node's name for a function."""
    return str(node.target) if node.op == "call_module" else node.name


def _unsupported(node, what: str, why: str = "") -> ExportError:
    extra = f" ({why})" if why else ""
    return ExportError(f"c-int8 export: layer {_label(node)!r} ({what}) is not supported"
                       f"{extra}; supported: {', '.join(SUPPORTED)}")


def _pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


# -- reading the traced graph -------------------------------------------------------------
def _classify(gm, node) -> tuple[str, object]:
    """(kind, module or None) of one fx node, or an ExportError for what is not supported."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    if node.op == "placeholder":
        return "input", None
    if node.op == "output":
        return "output", None
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        what = type(mod).__name__
        if isinstance(mod, nn.Conv2d):
            if mod.padding_mode != "zeros":
                raise _unsupported(node, what, f"padding_mode={mod.padding_mode!r}")
            if isinstance(mod.padding, str) and mod.padding != "valid":
                raise _unsupported(node, what, "padding='same': give the padding as numbers")
            return "conv", mod
        if isinstance(mod, nn.Linear):
            return "linear", mod
        if isinstance(mod, nn.BatchNorm2d):
            if not mod.track_running_stats or mod.running_mean is None:
                raise _unsupported(node, what, "track_running_stats=False: no statistics "
                                               "to fold")
            return "bn", mod
        if isinstance(mod, nn.ReLU6):
            return "relu6", mod
        if isinstance(mod, nn.ReLU):
            return "relu", mod
        if isinstance(mod, nn.MaxPool2d):
            if _pair(mod.dilation) != (1, 1) or mod.ceil_mode or mod.return_indices:
                raise _unsupported(node, what, "dilation, ceil_mode and return_indices "
                                               "must be left at their defaults")
            return "maxpool", mod
        if isinstance(mod, nn.AvgPool2d):
            if mod.ceil_mode or mod.divisor_override is not None:
                raise _unsupported(node, what, "ceil_mode and divisor_override must be left "
                                               "at their defaults")
            if _pair(mod.padding) != (0, 0) and mod.count_include_pad:
                raise _unsupported(node, what, "padding counted in the mean: set "
                                               "count_include_pad=False, as TFLM counts")
            return "avgpool", mod
        if isinstance(mod, nn.AdaptiveAvgPool2d):
            size = mod.output_size
            if size not in (1, (1, 1), [1, 1]):
                raise _unsupported(node, what, f"output_size={size!r}; only 1 (global)")
            return "globalavg", mod
        if isinstance(mod, nn.Flatten):
            return "flatten", mod
        if isinstance(mod, (nn.Dropout, nn.Identity)):
            return "identity", mod
        if type(mod).__module__.startswith(("torch.ao.nn.quantized", "torch.ao.quantization",
                                            "torch.ao.nn.intrinsic.quantized")):
            raise _unsupported(node, what, "a torch.ao quantized model: give the float model; "
                                           "the export quantizes it itself, TFLite's way, "
                                           "from --calibration")
        raise _unsupported(node, what)
    if node.op == "call_function":
        fn = node.target
        if fn in (operator.add, torch.add):
            return "add", None
        if fn in (torch.flatten,):
            return "flatten", None
        if fn in (F.relu, torch.relu):
            return "relu", None
        if fn is F.relu6:
            return "relu6", None
        if fn in (F.dropout,):
            return "identity", None
        raise _unsupported(node, f"function {getattr(fn, '__name__', fn)}")
    if node.op == "call_method":
        if node.target in ("flatten", "view", "reshape"):
            return "flatten", None
        if node.target == "size":
            return "size", None
        if node.target == "relu":
            return "relu", None
        if node.target == "add":
            return "add", None
        raise _unsupported(node, f"tensor method .{node.target}()")
    raise _unsupported(node, f"fx op {node.op} {node.target}")


def trace(model):
    """``(GraphModule, [(node, kind, module)])`` of ``model`` in eval mode, every layer
    checked against :data:`SUPPORTED` first."""
    import torch.fx
    model = model.cpu().eval()   # the reference and the calibration run on the CPU
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as exc:   # data-dependent control flow and the like
        first = " ".join(str(exc).split())[:200]
        raise ExportError(f"c-int8 export: torch.fx cannot trace the model "
                          f"({type(exc).__name__}: {first}); the export needs a model whose "
                          "forward has no data-dependent control flow") from None
    ops = [(node, *_classify(gm, node)) for node in gm.graph.nodes]
    inputs = [n for n, kind, _ in ops if kind == "input"]
    if len(inputs) != 1:
        raise ExportError(f"c-int8 export: the model takes {len(inputs)} inputs; it must take "
                          "exactly one tensor")
    return gm, ops


def _calibrate(gm, x: np.ndarray, batch: int = 256) -> tuple[dict, dict]:
    """min, max and per-sample shape of every traced value over the calibration data."""
    import torch
    import torch.fx
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    shapes: dict[str, tuple] = {}

    class _Record(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                if not torch.isfinite(out).all():
                    raise ExportError(f"c-int8 export: layer {_label(n)!r} gives NaN or infinite "
                                      "values on the calibration data; check the model's "
                                      "weights and the data")
                lo[n.name] = min(lo.get(n.name, math.inf), float(out.min()))
                hi[n.name] = max(hi.get(n.name, -math.inf), float(out.max()))
                shapes[n.name] = tuple(out.shape[1:])
            return out

    rec = _Record(gm)
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            xb = torch.from_numpy(np.ascontiguousarray(x[i:i + batch], dtype=np.float32))
            try:
                rec.run(xb)
            except ExportError:
                raise
            except Exception as exc:   # the user's model on inputs of this shape
                first = " ".join(str(exc).split())[:200]
                raise ExportError(f"c-int8 export: the model fails on calibration inputs of "
                                  f"shape {tuple(xb.shape)} ({type(exc).__name__}: {first}); "
                                  "check --input-shape") from None
    return {k: (lo[k], hi[k]) for k in lo}, shapes


# -- building the int8 graph ----------------------------------------------------------------
def _weight_params(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel (axis 0): int8 weights in [-127, 127] and their scales."""
    flat = w.reshape(w.shape[0], -1)
    amax = np.abs(flat).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    q = np.clip(np.round(flat / scale[:, None]), -127, 127).astype(np.int8)
    return q.reshape(w.shape), scale


def _bias_and_multipliers(node, bias, w_scale, s_in, s_out, q_w, in_zp):
    bias = np.zeros(q_w.shape[0]) if bias is None else bias
    qb = np.round(bias / (s_in * w_scale))
    if np.abs(qb).max(initial=0) > MAX_ACC:
        raise ExportError(f"c-int8 export: layer {_label(node)!r}: a bias does not fit int32 at "
                          f"the scale s_in x s_w; the layer's input range is too narrow")
    # the largest |accumulator|: every tap at |x - zp| <= 255 times |w| <= 127, plus the bias
    k = q_w[0].size
    worst = np.abs(q_w.reshape(q_w.shape[0], -1)).astype(np.int64).sum(axis=1) * 255 \
        + np.abs(qb)
    if worst.max() > MAX_ACC:
        raise ExportError(f"c-int8 export: layer {_label(node)!r}: {k} taps per output could "
                          "overflow the int32 accumulator; split the layer")
    mult, shift = q8.quantize_multiplier(s_in * w_scale / s_out)
    return qb.astype(np.int32), mult, shift


def _act_range(kind: str | None, t: q8.QTensor) -> tuple[int, int]:
    """The clamp of a fused activation at the output's scale and zero point."""
    if kind == "relu":
        return max(q8.INT8_MIN, t.zero_point), q8.INT8_MAX
    if kind == "relu6":
        return (max(q8.INT8_MIN, t.zero_point),
                min(q8.INT8_MAX, t.zero_point + int(round(6.0 / t.scale))))
    return q8.INT8_MIN, q8.INT8_MAX


def quantize(model, calibration: np.ndarray) -> q8.Int8Graph:
    """Post-training int8 quantisation of ``model`` calibrated on ``calibration``
    (float [N, *input shape]): an :class:`~sim.bitwise.int8.Int8Graph`.

    Raises ExportError (one line) for an unsupported layer, a model that cannot be traced,
    values that are not finite, or an accumulator that could overflow.
    """
    gm, ops = trace(model)
    ranges, shapes = _calibrate(gm, calibration)
    users = {node.name: [u for u in node.users] for node, _, _ in ops}
    kinds = {node.name: kind for node, kind, _ in ops}
    tensors: list[q8.QTensor] = []
    nodes: list = []
    tid: dict[str, int] = {}     # fx value -> tensor id
    fused: set[str] = set()      # relu nodes folded into their producer

    def new_tensor(name: str, shape, scale: float, zp: int) -> int:
        tensors.append(q8.QTensor(name, tuple(int(d) for d in shape), float(scale), int(zp)))
        return len(tensors) - 1

    def from_range(name: str, value: str) -> int:
        scale, zp = q8.activation_params(*ranges[value])
        return new_tensor(name, shapes[value], scale, zp)

    def fusible(node) -> str | None:
        """The ReLU kind to fuse after ``node``, when its one user is a ReLU."""
        us = users[node.name]
        if len(us) == 1 and kinds[us[0].name] in ("relu", "relu6"):
            return us[0].name
        return None

    def folded_bn(node):
        """The BatchNorm2d node folded into conv ``node``: its one user, when a BN."""
        us = users[node.name]
        return us[0] if len(us) == 1 and kinds[us[0].name] == "bn" else None

    def arg_tensor(node, a) -> int:
        import torch.fx
        if not isinstance(a, torch.fx.Node) or a.name not in tid:
            raise _unsupported(node, f"{node.op} {node.target}",
                               "an input is a constant, not a traced tensor")
        return tid[a.name]

    output = input_id = None
    for node, kind, mod in ops:
        if kind == "input":
            if node.name not in ranges:
                raise ExportError("c-int8 export: the model's input is never used")
            tid[node.name] = input_id = from_range("input", node.name)
            continue
        if kind == "size":
            continue
        if kind == "output":
            out = node.args[0]
            if isinstance(out, (tuple, list)) and len(out) == 1:
                out = out[0]
            output = arg_tensor(node, out)
            continue
        if node.name in fused:
            continue
        src = arg_tensor(node, node.args[0])
        tin = tensors[src]
        if kind == "identity":
            tid[node.name] = src
            continue
        if kind == "bn":
            raise _unsupported(node, "BatchNorm2d", "it is folded into a Conv2d only when it "
                               "directly follows one that nothing else uses")
        if kind in ("conv", "linear", "add"):
            bn = folded_bn(node) if kind == "conv" else None
            tail = bn if bn is not None else node
            relu = fusible(tail)
            t = from_range(node.name, relu or tail.name)
            lo, hi = _act_range(kinds[relu] if relu else None, tensors[t])
            for extra in (relu, bn.name if bn is not None else None):
                if extra:
                    fused.add(extra)
                    tid[extra] = t
            tid[node.name] = t
            if kind == "conv":
                bn_mod = gm.get_submodule(bn.target) if bn is not None else None
                nodes.append(_conv(node, mod, src, t, tin, tensors[t], lo, hi, bn_mod))
            elif kind == "linear":
                if len(tin.shape) != 1:
                    raise _unsupported(node, "Linear", f"its input has shape {tin.shape} per "
                                       "sample; flatten to [N, features] first")
                nodes.append(_linear(node, mod, src, t, tin, tensors[t], lo, hi))
            else:
                other = arg_tensor(node, node.args[1] if len(node.args) > 1 else None)
                if node.kwargs.get("alpha", 1) != 1 or tensors[other].shape != tin.shape:
                    raise _unsupported(node, "add", "both operands must be traced tensors "
                                       "of one shape, without alpha")
                nodes.append(_add(node, src, other, t, tin, tensors[other], tensors[t], lo, hi))
            continue
        # the rest keep the input's scale and zero point
        t = new_tensor(node.name, shapes[node.name], tin.scale, tin.zero_point)
        tid[node.name] = t
        if kind in ("relu", "relu6"):
            lo, hi = _act_range(kind, tin)
            nodes.append(q8.Clamp(_label(node), (src,), t, lo, hi))
        elif kind == "flatten":
            if len(tensors[t].shape) != 1 or tensors[t].size != tin.size:
                raise _unsupported(node, f"{node.op} {node.target}",
                                   f"it reshapes {tin.shape} to {tensors[t].shape}; only a "
                                   "flatten to [N, features] is supported")
            nodes.append(q8.Reshape(_label(node), (src,), t))
        elif kind in ("maxpool", "avgpool"):
            cls = q8.MaxPool2d if kind == "maxpool" else q8.AvgPool2d
            stride = mod.stride if mod.stride is not None else mod.kernel_size
            nodes.append(cls(_label(node), (src,), t, _pair(mod.kernel_size), _pair(stride),
                             _pair(mod.padding)))
        elif kind == "globalavg":
            hw = tin.shape[1:]
            nodes.append(q8.AvgPool2d(_label(node), (src,), t, hw, hw, (0, 0)))
        else:   # pragma: no cover - _classify knows no other kind
            raise _unsupported(node, kind)
        if kind in ("maxpool", "avgpool", "globalavg") and len(tin.shape) != 3:
            raise _unsupported(node, kind, f"its input has shape {tin.shape} per sample")
    if output is None or not nodes:
        raise ExportError("c-int8 export: the model computes nothing the export can write")
    return q8.Int8Graph(tensors, nodes, input_id, output)


def _conv(node, mod, src, dst, tin, tout, lo, hi, bn=None) -> q8.Conv2d:
    w = mod.weight.detach().double().cpu().numpy()
    b = None if mod.bias is None else mod.bias.detach().double().cpu().numpy()
    if bn is not None:   # fold: y = gamma (conv - mean) / sqrt(var + eps) + beta
        mean = bn.running_mean.detach().double().cpu().numpy()
        var = bn.running_var.detach().double().cpu().numpy()
        gamma = (bn.weight.detach().double().cpu().numpy() if bn.weight is not None
                 else np.ones_like(mean))
        beta = (bn.bias.detach().double().cpu().numpy() if bn.bias is not None
                else np.zeros_like(mean))
        k = gamma / np.sqrt(var + bn.eps)
        w = w * k[:, None, None, None]
        b = ((b if b is not None else 0.0) - mean) * k + beta
    qw, ws = _weight_params(w)
    qb, mult, shift = _bias_and_multipliers(node, b, ws, tin.scale, tout.scale, qw,
                                            tin.zero_point)
    padding = (0, 0) if isinstance(mod.padding, str) else _pair(mod.padding)
    return q8.Conv2d(_label(node), (src,), dst, qw, qb, mult, shift, _pair(mod.stride), padding,
                     _pair(mod.dilation), int(mod.groups), lo, hi)


def _linear(node, mod, src, dst, tin, tout, lo, hi) -> q8.Linear:
    w = mod.weight.detach().double().cpu().numpy()
    qw, ws = _weight_params(w)
    b = None if mod.bias is None else mod.bias.detach().double().cpu().numpy()
    qb, mult, shift = _bias_and_multipliers(node, b, ws, tin.scale, tout.scale, qw,
                                            tin.zero_point)
    return q8.Linear(_label(node), (src,), dst, qw, qb, mult, shift, lo, hi)


def _add(node, a, b, dst, ta, tb, tout, lo, hi) -> q8.Add:
    # TFLite PrepareGeneralSubOp: both inputs to 2 x the larger scale, 20 bits of headroom
    twice_max = 2.0 * max(ta.scale, tb.scale)
    m1, s1 = q8.quantize_multiplier(ta.scale / twice_max)
    m2, s2 = q8.quantize_multiplier(tb.scale / twice_max)
    mo, so = q8.quantize_multiplier(twice_max / ((1 << q8.ADD_LEFT_SHIFT) * tout.scale))
    return q8.Add(_label(node), (a, b), dst, int(m1[0]), int(s1[0]), int(m2[0]), int(s2[0]),
                  int(mo[0]), int(so[0]), lo, hi)


# -- calibration data ------------------------------------------------------------------------
def load_calibration(spec: str, input_shape: tuple[int, ...], limit: int = 1000):
    """``(x_calibration, x_test, y_test)`` for ``--calibration``: a bundled set name
    (:data:`CALIBRATION_SETS`: its training split calibrates, its test split measures
    accuracy) or an ``.npy`` file of float inputs [N, *input shape[1:]] (no labels, so
    no accuracy: ``x_test`` and ``y_test`` are None). At most ``limit`` calibration samples."""
    per_sample = tuple(input_shape[1:])
    if spec in CALIBRATION_SETS:
        from models.shared.datasets import LOADERS
        try:
            data = LOADERS[spec]()
        except Exception as exc:
            raise ExportError(f"--calibration {spec}: {' '.join(str(exc).split())[:300]}") \
                from None
        n = math.prod(per_sample)
        if data.n_features != n:
            raise ExportError(f"--calibration {spec}: its samples hold {data.n_features} values "
                              f"({'x'.join(map(str, data.input_shape))}) but --input-shape "
                              f"{','.join(map(str, input_shape))} takes {n} per sample")
        return (data.x_train[:limit].reshape(-1, *per_sample),
                data.x_test.reshape(-1, *per_sample), data.y_test)
    path = Path(spec)
    if path.suffix != ".npy":
        raise ExportError(f"--calibration {spec!r}: expected a data set name "
                          f"({', '.join(CALIBRATION_SETS)}) or an .npy file of inputs")
    if not path.is_file():
        raise ExportError(f"--calibration {spec!r}: no such file")
    try:
        x = np.load(path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise ExportError(f"--calibration {spec!r}: not a readable .npy file "
                          f"({' '.join(str(exc).split())[:200]})") from None
    if x.dtype.kind not in "fiu" or x.ndim < 1 or x.shape[0] < 1 \
            or tuple(x.shape[1:]) != per_sample:
        raise ExportError(f"--calibration {spec!r}: holds {x.dtype} {x.shape}; expected real "
                          f"numbers [N >= 1, {', '.join(map(str, per_sample))}] (the "
                          "--input-shape without its batch)")
    x = np.asarray(x[:limit], dtype=np.float32)
    if not np.isfinite(x).all():
        raise ExportError(f"--calibration {spec!r}: holds NaN or infinite values")
    return x, None, None
