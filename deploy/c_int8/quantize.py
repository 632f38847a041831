"""Post-training int8 quantisation of a torch model into a :class:`sim.bitwise.int8.Int8Graph`.

The model is traced with ``torch.fx`` (so the graph is the model's own data flow, residual
adds included), run in fp32 on the calibration data to record each value's min and max,
and converted layer by layer with TFLite's conventions (:mod:`sim.bitwise.int8`):

- weights: per output channel, symmetric, ``scale = max |w| / 127``;
- activations: per tensor, asymmetric, from the calibration min/max (widened to hold 0);
- a ReLU, ReLU6, Hardtanh or clamp (each a clamp to its bounds) whose input is a conv,
  linear or add used by nothing else is fused into that op's clamp, and the op's output
  takes the clamp's range (as the TFLite converter does); any other is a clamp at the
  input's scale;
- pooling and flatten keep their input's scale and zero point (TFLite requires it);
- a ``BatchNorm1d/2d`` right after a conv or linear used by nothing else is folded into its
  weights and bias (its running statistics: the model in eval mode), before quantisation;
- a ``Conv1d`` or 1-D pool runs as the 2-D kernel of height 1 on the (C, 1, L) view of its
  (C, L) input (a reshape, free: the same bytes), as TFLite converts Conv1D; a global
  average pool written ``x.mean((2, 3))`` or ``F.adaptive_avg_pool2d(x, 1)`` is the
  ``AdaptiveAvgPool2d(1)`` it computes;
- ``a + b`` and ``a - b`` of two tensors run as TFLite's int8 add and sub, ``a * b`` (of one
  shape, or a squeeze-and-excitation block's (C, 1, 1) channel weights times its (C, H, W)
  input) as its int8 mul, ``torch.cat`` along the channels as one requantisation per
  input into its block of the output; arithmetic with a number (``x * 0.5``, ``x + 3``,
  ``x / 6``) is an elementwise function of one tensor, a 256-entry table like the
  activations;
- a ``PReLU`` (one alpha, or one per channel) is TFLite's int8 prelu, its alphas int8,
  symmetric per tensor;
- ``Dropout`` and ``Identity`` are nothing at inference.

Anything else is refused in one line naming the layer and listing :data:`SUPPORTED`.
"""
from __future__ import annotations

import math
import operator
from collections import OrderedDict
from pathlib import Path

import numpy as np

from deploy.errors import ExportError
from sim.bitwise import int8 as q8

SUPPORTED = ("Conv2d and Conv1d (any groups: plain, depthwise, grouped; zero padding)",
             "BatchNorm1d/2d right after a Conv1d, Conv2d or Linear (folded into it)",
             "Linear", "ReLU", "ReLU6", "Hardtanh and clamp/clip to number bounds",
             "Sigmoid, Tanh, Hardsigmoid, Hardswish, SiLU, GELU, LeakyReLU, ELU, Mish, "
             "Softplus (a 256-entry table)",
             "PReLU (one alpha or one per channel)", "MaxPool1d/2d", "AvgPool1d/2d",
             "AdaptiveAvgPool1d/2d(1) and x.mean over the spatial axes (global average)",
             "the functional forms of these pools",
             "a zero pad (ZeroPad1d/2d, F.pad) folded into the conv after it", "Flatten",
             "flatten/view/reshape/unsqueeze/squeeze and x[:, :, None, None] of each sample",
             "expand/expand_as read only by a product",
             "add and subtract of two tensors of one shape (a + b, a - b, torch.add)",
             "product of two tensors of one shape, or by per-channel weights (C, 1, ..., 1): "
             "squeeze-and-excitation",
             "torch.cat along the channels",
             "arithmetic with a number (x * 0.5, x + 3, x / 6: a 256-entry table)",
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


def _hw(v, one_d: bool, height: int) -> tuple[int, int]:
    """A pooling setting as (height, width); a 1-D layer's is ``height`` (1 for a kernel or
    stride, 0 for padding) along the height of its (C, 1, L) view."""
    if not one_d:
        return _pair(v)
    return (height, int(v if isinstance(v, int) else v[0]))


def _ones(v) -> set[int]:
    return {int(v)} if isinstance(v, int) else {int(x) for x in v}


# -- reading the traced graph -------------------------------------------------------------
ONE_D = ("conv1d", "maxpool1d", "avgpool1d", "globalavg1d")
"""Kinds that run on a (C, L) value as the 2-D kernels of height 1 on its (C, 1, L) view
(a free reshape before and after: TFLite converts Conv1D the same way)."""
SOFTMAX_WHY = ("export the logits: a softmax keeps their argmax, the class; TFLM's int8 "
               "softmax is not among the kernels")


def _conv_padding(node, mod) -> tuple[int, ...]:
    """A Conv1d/Conv2d's zero padding before the input (top, left) per spatial axis;
    ``'same'`` (stride 1 in torch) as torch splits ``dilation x (kernel - 1)``: half before,
    the odd one after (the kernels read the padding after from the output's size)."""
    what = type(mod).__name__
    if mod.padding_mode != "zeros":
        raise _unsupported(node, what, f"padding_mode={mod.padding_mode!r}")
    if mod.padding == "valid":
        return (0,) * len(mod.kernel_size)
    if mod.padding == "same":
        return tuple(d * (k - 1) // 2 for k, d in zip(mod.kernel_size, mod.dilation,
                                                      strict=True))
    return tuple(int(p) for p in mod.padding)


def _zero_pad(node, pad, value) -> tuple[int, ...]:
    """A constant pad's widths (torch's order: last axis first, before then after), when it
    pads with zeros by non-negative widths; else an ExportError."""
    import torch.fx
    what = f"{node.op} {_label(node)}"
    if isinstance(pad, torch.fx.Node) or any(isinstance(p, torch.fx.Node) for p in pad) \
            or isinstance(value, torch.fx.Node):
        raise _unsupported(node, what, "its widths and value must be constants")
    if value not in (None, 0, 0.0):
        raise _unsupported(node, what, f"it pads with {value!r}; only zeros fold into a conv")
    pad = tuple(int(p) for p in pad)
    if len(pad) not in (2, 4) or min(pad) < 0:
        raise _unsupported(node, what, f"widths {pad}; expected 2 (1-D) or 4 (2-D) "
                                       "non-negative widths")
    return pad


def _classify_module(node, mod) -> tuple[str, object]:
    """(kind, module) of a module (or of a functional call as its module), or an
    ExportError for what is not supported."""
    from torch import nn
    what = type(mod).__name__
    if isinstance(mod, (nn.Conv1d, nn.Conv2d)):
        _conv_padding(node, mod)
        return ("conv1d" if isinstance(mod, nn.Conv1d) else "conv"), mod
    if isinstance(mod, nn.Linear):
        return "linear", mod
    if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
        if not mod.track_running_stats or mod.running_mean is None:
            raise _unsupported(node, what, "track_running_stats=False: no statistics "
                                           "to fold")
        return "bn", mod
    if isinstance(mod, nn.Hardtanh):   # ReLU6 is one: hardtanh(0, 6)
        return "clamp", _bounds(node, mod.min_val, mod.max_val)
    if isinstance(mod, nn.ReLU):
        return "clamp", RELU
    one_d = "1d" if isinstance(mod, (nn.MaxPool1d, nn.AvgPool1d, nn.AdaptiveAvgPool1d)) else ""
    if isinstance(mod, (nn.MaxPool1d, nn.MaxPool2d)):
        if _ones(mod.dilation) != {1} or mod.ceil_mode or mod.return_indices:
            raise _unsupported(node, what, "dilation, ceil_mode and return_indices "
                                           "must be left at their defaults")
        return "maxpool" + one_d, mod
    if isinstance(mod, (nn.AvgPool1d, nn.AvgPool2d)):
        if mod.ceil_mode or getattr(mod, "divisor_override", None) is not None:
            raise _unsupported(node, what, "ceil_mode and divisor_override must be left "
                                           "at their defaults")
        if _ones(mod.padding) != {0} and mod.count_include_pad:
            raise _unsupported(node, what, "padding counted in the mean: set "
                                           "count_include_pad=False, as TFLM counts")
        return "avgpool" + one_d, mod
    if isinstance(mod, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d)):
        size = mod.output_size
        if size not in (1, (1,), (1, 1), [1], [1, 1]):
            raise _unsupported(node, what, f"output_size={size!r}; only 1 (global)")
        return "globalavg" + one_d, mod
    if isinstance(mod, nn.Flatten):
        return "flatten", mod
    if isinstance(mod, (nn.ConstantPad1d, nn.ConstantPad2d)):   # ZeroPad1d/2d among them
        return "pad", _zero_pad(node, mod.padding, mod.value)
    if isinstance(mod, (nn.Dropout, nn.Identity)):
        return "identity", mod
    if isinstance(mod, _lut_modules()):
        return "lut", mod
    if isinstance(mod, nn.PReLU):
        return "prelu", mod
    if isinstance(mod, (nn.Softmax, nn.LogSoftmax)):
        raise _unsupported(node, what, SOFTMAX_WHY)
    if type(mod).__module__.startswith(("torch.ao.nn.quantized", "torch.ao.quantization",
                                        "torch.ao.nn.intrinsic.quantized")):
        raise _unsupported(node, what, "a torch.ao quantized model: give the float model; "
                                       "the export quantizes it itself, TFLite's way, "
                                       "from --calibration")
    raise _unsupported(node, what)


def _lut_modules() -> tuple:
    """Elementwise activation modules the export runs as a 256-entry table."""
    from torch import nn
    return (nn.Sigmoid, nn.Tanh, nn.Hardsigmoid, nn.Hardswish, nn.SiLU, nn.GELU, nn.LeakyReLU,
            nn.ELU, nn.Mish, nn.Softplus)


def _lut_functions() -> tuple:
    """Their functional forms (torch.sigmoid, F.hardswish, ...)."""
    import torch
    import torch.nn.functional as F
    return (torch.sigmoid, torch.tanh, F.sigmoid, F.tanh, F.hardsigmoid, F.hardswish, F.silu,
            F.gelu, F.leaky_relu, F.elu, F.mish, F.softplus)


def _functional_pools() -> dict:
    """torch.nn.functional pooling function -> the module that does the same."""
    import torch.nn.functional as F
    from torch import nn
    return {F.max_pool1d: nn.MaxPool1d, F.max_pool2d: nn.MaxPool2d,
            F.avg_pool1d: nn.AvgPool1d, F.avg_pool2d: nn.AvgPool2d,
            F.adaptive_avg_pool1d: nn.AdaptiveAvgPool1d,
            F.adaptive_avg_pool2d: nn.AdaptiveAvgPool2d}


def _call_arguments(gm, node) -> dict:
    """A function call's arguments by name (torch.fx's normalisation), every one a constant;
    else an ExportError."""
    import torch.fx
    what = f"function {getattr(node.target, '__name__', node.target)}"
    if len(node.args) == 1 and not node.kwargs:
        # the input alone: nothing to read (torch.tanh's schema match is ambiguous, aten's
        # and the math overload, so normalising it fails)
        return {}
    try:
        args = node.normalized_arguments(gm, normalize_to_only_use_kwargs=True)
    except Exception:   # an ambiguous or unknown signature
        args = None
    if args is None:
        raise _unsupported(node, what, "its arguments could not be read")
    kwargs = dict(args.kwargs)
    kwargs.pop("input", None)
    if any(isinstance(v, torch.fx.Node) for v in kwargs.values()):
        raise _unsupported(node, what, "its settings must be constants, not tensors")
    return kwargs


def _mean_dims(node) -> tuple:
    """``(dims, keepdim)`` of ``x.mean(dims)`` / ``torch.mean(x, dims)``."""
    import torch.fx
    args, kwargs = list(node.args[1:]), dict(node.kwargs)
    dims = kwargs.pop("dim", args.pop(0) if args else None)
    keepdim = kwargs.pop("keepdim", args.pop(0) if args else False)
    if dims is None or kwargs.get("dtype") is not None or args \
            or isinstance(dims, torch.fx.Node) or isinstance(keepdim, torch.fx.Node):
        raise _unsupported(node, "mean", "only the mean over the spatial axes, a global "
                                         "average pool: x.mean((2, 3)) or x.mean(-1)")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return dims, bool(keepdim)


RELU = (0.0, None)
"""A ReLU as clamp bounds (lower, upper; None: unbounded)."""


def _bounds(node, lower, upper) -> tuple:
    """Clamp bounds as numbers (None for an infinite one), lower at most upper; else an
    ExportError."""
    import torch.fx
    if isinstance(lower, torch.fx.Node) or isinstance(upper, torch.fx.Node):
        raise _unsupported(node, "clamp", "its bounds must be numbers, not tensors")
    lo = None if lower is None or float(lower) == -math.inf else float(lower)
    hi = None if upper is None or float(upper) == math.inf else float(upper)
    if (lo is not None and not math.isfinite(lo)) or (hi is not None and not math.isfinite(hi)) \
            or (lo is not None and hi is not None and lo > hi):
        raise _unsupported(node, "clamp", f"bounds ({lower}, {upper}): expected numbers, the "
                                          "lower at most the upper")
    return lo, hi


def _clamp_bounds(node) -> tuple:
    """The bounds of ``torch.clamp(x, min, max)`` / ``x.clamp(min=..., max=...)``."""
    args, kwargs = list(node.args[1:]), node.kwargs
    lower = kwargs.get("min", args[0] if args else None)
    upper = kwargs.get("max", args[1] if len(args) > 1 else None)
    return _bounds(node, lower, upper)


_BINARY_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": None}
"""Arithmetic of two values as tensor methods: the kind when both are traced tensors
(None: no kernel then), and with one a number an elementwise function of the other (a
table)."""


def _binary_functions() -> dict:
    """The same as operators and torch functions."""
    import torch
    return {operator.add: "add", torch.add: "add", operator.sub: "sub", torch.sub: "sub",
            operator.mul: "mul", torch.mul: "mul", operator.truediv: None, torch.div: None}


def _binary(node, kind: str | None, fn) -> tuple[str, object]:
    """``a + b``, ``a - b``, ``a * b``, ``a / b`` (operator, torch function or tensor method):
    of two traced tensors, the kind; with one operand a number, the elementwise function of
    the other that the model computes (a 256-entry table, its settings such as ``alpha``
    included); else an ExportError."""
    import torch.fx
    what = getattr(fn, "__name__", fn) if node.op == "call_function" else f".{fn}()"
    operands = list(node.args[:2])
    tensors = [isinstance(a, torch.fx.Node) for a in operands]
    if len(operands) == 2 and all(tensors):
        if kind is None:
            raise _unsupported(node, str(what), "a division of two tensors has no int8 kernel; "
                               "a division by a number is a table")
        return kind, None
    numbers = [isinstance(a, (int, float)) and not isinstance(a, bool) for a in operands]
    kwargs = dict(node.kwargs)
    if len(operands) == 2 and tensors.count(True) == 1 and numbers.count(True) == 1 \
            and not any(isinstance(v, torch.fx.Node) for v in kwargs.values()):
        at = tensors.index(True)
        const = operands[1 - at]
        if node.op == "call_method":
            if at != 0:
                raise _unsupported(node, str(what), "a number's method")
            return "lut", lambda v: getattr(v, fn)(const, **kwargs)
        return "lut", (lambda v: fn(v, const, **kwargs)) if at == 0 else \
            (lambda v: fn(const, v, **kwargs))
    raise _unsupported(node, str(what), "its operands must be two traced tensors, or one "
                       "and a number")


def _cat_arguments(node) -> tuple[list, int]:
    """The tensors and the axis of ``torch.cat(tensors, dim)``."""
    import torch.fx
    args, kwargs = list(node.args), dict(node.kwargs)
    parts = kwargs.pop("tensors", args.pop(0) if args else None)
    dim = kwargs.pop("dim", kwargs.pop("axis", args.pop(0) if args else 0))
    if not isinstance(parts, (list, tuple)) or not parts or isinstance(dim, torch.fx.Node) \
            or args or kwargs:
        raise _unsupported(node, "cat", "expected torch.cat([tensors], dim) with a constant "
                                        "dim")
    return list(parts), int(dim)


def _classify(gm, node) -> tuple[str, object]:
    """(kind, module or settings) of one fx node, or an ExportError for what is not
    supported. A functional pooling call is classified as its module."""
    import torch
    import torch.nn.functional as F
    if node.op == "placeholder":
        return "input", None
    if node.op == "output":
        return "output", None
    if node.op == "call_module":
        return _classify_module(node, gm.get_submodule(node.target))
    if node.op == "call_function":
        fn = node.target
        binary = _binary_functions()
        if fn in binary:
            return _binary(node, binary[fn], fn)
        if fn in (torch.cat, torch.concat, torch.concatenate):
            return "cat", _cat_arguments(node)
        if fn in (torch.flatten, torch.reshape, torch.unsqueeze, torch.squeeze):
            return "flatten", None
        if fn is operator.getitem:
            return _getitem(node)
        if fn is getattr and len(node.args) == 2 and node.args[1] == "shape":
            return "size", None    # x.shape: Python numbers, no layer
        if fn in (operator.neg, torch.neg):
            return "lut", torch.neg
        if fn in (F.relu, torch.relu):
            return "clamp", RELU
        if fn is F.relu6:
            return "clamp", (0.0, 6.0)
        if fn is F.hardtanh:
            kw = _call_arguments(gm, node)
            return "clamp", _bounds(node, kw["min_val"], kw["max_val"])
        if fn in (torch.clamp, torch.clip):
            return "clamp", _clamp_bounds(node)
        if fn in (F.dropout,):
            return "identity", None
        pool = _functional_pools().get(fn)
        if pool is not None:
            settings = _call_arguments(gm, node)
            if settings.get("stride") in ([], (), None):   # left out: torch.fx writes []
                settings.pop("stride", None)                 # the module's: the kernel
            try:
                mod = pool(**settings)
            except TypeError as exc:   # a setting the module does not take
                raise _unsupported(node, f"function {fn.__name__}", str(exc)) from None
            return _classify_module(node, mod)
        if fn is torch.mean:
            return "mean", _mean_dims(node)
        if fn in _lut_functions():
            settings = _call_arguments(gm, node)
            settings.pop("inplace", None)
            return "lut", lambda v: fn(v, **settings)
        if fn is F.pad:
            kw = _call_arguments(gm, node)
            if kw.get("mode", "constant") != "constant":
                raise _unsupported(node, "function pad", f"mode={kw['mode']!r}; only a "
                                   "constant zero pad folds into a conv")
            return "pad", _zero_pad(node, kw["pad"], kw.get("value"))
        if fn in (F.softmax, F.log_softmax, torch.softmax, torch.log_softmax):
            raise _unsupported(node, f"function {fn.__name__}", SOFTMAX_WHY)
        raise _unsupported(node, f"function {getattr(fn, '__name__', fn)}")
    if node.op == "call_method":
        if node.target in ("flatten", "view", "reshape", "unsqueeze", "squeeze"):
            return "flatten", None
        if node.target in ("expand", "expand_as"):
            return "expand", None
        if node.target == "neg":
            return "lut", lambda v: -v
        if node.target == "size":
            return "size", None
        # not the in-place forms (x.relu_()): torch.fx keeps later uses of x on the value
        # before the call, so the export would drop the clamp
        if node.target == "relu":
            return "clamp", RELU
        if node.target in ("clamp", "clip"):
            return "clamp", _clamp_bounds(node)
        if node.target in _BINARY_METHODS:
            return _binary(node, _BINARY_METHODS[node.target], node.target)
        if node.target == "mean":
            return "mean", _mean_dims(node)
        if node.target in ("sigmoid", "tanh") and len(node.args) == 1 and not node.kwargs:
            method = node.target
            return "lut", lambda v: getattr(v, method)()
        if node.target in ("softmax", "log_softmax"):
            raise _unsupported(node, f"tensor method .{node.target}()", SOFTMAX_WHY)
        raise _unsupported(node, f"tensor method .{node.target}()")
    if node.op == "get_attr":
        raise _unsupported(node, f"tensor {node.target!r} held by the model", "a parameter or "
                           "buffer used as an operand (y * self.gamma, F.prelu(x, w)); the "
                           "export takes the weights of the layers listed only")
    raise _unsupported(node, f"fx op {node.op} {node.target}")


def _getitem(node) -> tuple[str, object]:
    """``x.size()[i]`` / ``x.shape[0]`` (a Python number: no layer), or ``x[:, :, None,
    None]`` (new axes of 1 around whole ones: a reshape); any other indexing refused."""
    import torch.fx
    source, index = node.args
    if isinstance(source, torch.fx.Node) and (
            (source.op == "call_method" and source.target == "size")
            or (source.op == "call_function" and source.target is getattr)):
        return "size", None
    items = index if isinstance(index, tuple) else (index,)
    whole = slice(None)
    if any(i is None for i in items) and all(i is None or i == whole or i is Ellipsis
                                             for i in items):
        return "flatten", None
    raise _unsupported(node, "indexing", f"x[{index!r}]; only new axes of 1 "
                       "(x[:, :, None, None]) and sizes (x.shape[0]) are read")


def trace(model):
    """``(GraphModule, [(node, kind, module)])`` of ``model`` in eval mode, every layer
    checked against :data:`SUPPORTED` first."""
    import torch.fx
    from torch import nn
    model = model.cpu().eval()   # the reference and the calibration run on the CPU
    if torch.fx.Tracer().is_leaf_module(model, ""):
        # a bare torch.nn layer (nn.Linear(784, 10)): traced alone, fx would trace into its
        # function and read its weight as an operand; as the one layer of a container it is
        # a layer, named by its class
        model = nn.Sequential(OrderedDict([(type(model).__name__.lower(), model)]))
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
                shape = shapes.setdefault(n.name, tuple(out.shape[1:]))
                if shape != tuple(out.shape[1:]):
                    raise ExportError(f"c-int8 export: layer {_label(n)!r} gives "
                                      f"{tuple(out.shape[1:])} per sample on a batch of "
                                      f"{out.shape[0] if out.dim() else 0} but {shape} on "
                                      "another: its shape depends on the batch size (a bare "
                                      "squeeze()? name the axes: x.squeeze(-1))")
            return out

    rec = _Record(gm)
    # batches of near-equal size (257 samples: 129 + 128, not 256 + 1): a model whose
    # per-sample shapes depend on the batch (a bare squeeze()) is then read the same way
    # whatever the count, and refused below where two batches disagree
    n_batches = -(-x.shape[0] // batch)
    bounds = np.linspace(0, x.shape[0], n_batches + 1).round().astype(int)
    with torch.no_grad():
        for i, j in zip(bounds[:-1], bounds[1:], strict=True):
            xb = torch.from_numpy(np.ascontiguousarray(x[i:j], dtype=np.float32))
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


def _act_range(bounds: tuple | None, t: q8.QTensor) -> tuple[int, int]:
    """A clamp's bounds (lower, upper; None: none) at tensor ``t``'s scale and zero point,
    within int8: a ReLU's floor is the zero point, a ReLU6's top ``zp + round(6 / scale)``."""
    lower, upper = bounds if bounds is not None else (None, None)
    lo = q8.INT8_MIN if lower is None else t.zero_point + int(round(lower / t.scale))
    hi = q8.INT8_MAX if upper is None else t.zero_point + int(round(upper / t.scale))
    return min(max(q8.INT8_MIN, lo), q8.INT8_MAX), max(min(q8.INT8_MAX, hi), q8.INT8_MIN)


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
    settings = {node.name: mod for node, _, mod in ops}   # a clamp's bounds, a mean's axes
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
        if len(us) == 1 and kinds[us[0].name] == "clamp":
            return us[0].name
        return None

    def folded_bn(node):
        """The BatchNorm node folded into the conv or linear ``node``: its one user, when a
        BatchNorm."""
        us = users[node.name]
        return us[0] if len(us) == 1 and kinds[us[0].name] == "bn" else None

    def arg_tensor(node, a) -> int:
        import torch.fx
        if not isinstance(a, torch.fx.Node) or a.name not in tid:
            raise _unsupported(node, f"{node.op} {node.target}",
                               "an input is a constant, not a traced tensor")
        return tid[a.name]

    def as_2d(node, src: int) -> int:
        """A (C, L) value as its (C, 1, L) view for a 2-D kernel (a free reshape, once)."""
        t = tensors[src]
        if len(t.shape) != 2:
            raise _unsupported(node, kinds[node.name], f"its input has shape {t.shape} per "
                               "sample; a 1-D layer takes [N, C, L]")
        if src not in views:
            views[src] = new_tensor(f"{t.name}.2d", (t.shape[0], 1, t.shape[1]), t.scale,
                                    t.zero_point)
            nodes.append(q8.Reshape(f"{_label(node)}.view", (src,), views[src], view=True))
        return views[src]

    def as_torch(node, t: int, value: str) -> int:
        """A 2-D kernel's output ``t`` under the shape torch gives ``value`` (the same bytes:
        a free reshape where they differ)."""
        want = shapes[value]
        if tensors[t].shape == want:
            return t
        if math.prod(want) != tensors[t].size:   # a layer the export reads otherwise than torch
            raise _unsupported(node, kinds[node.name], f"torch gives {want} per sample, the "
                               f"int8 kernel {tensors[t].shape}")
        out = new_tensor(value, want, tensors[t].scale, tensors[t].zero_point)
        nodes.append(q8.Reshape(f"{_label(node)}.view", (t,), out, view=True))
        return out

    def concat(node, parts, dim) -> int:
        """``torch.cat`` along the channels: the output's bytes are the inputs' one after
        another, each requantised to the output's scale."""
        ins = [arg_tensor(node, a) for a in parts]
        shape = shapes[node.name]
        if dim % (len(shape) + 1) != 1 or any(tensors[i].shape[1:] != shape[1:] for i in ins):
            raise _unsupported(node, "cat", f"along axis {dim} of [N, "
                               f"{', '.join(map(str, shape))}]; only along the channels "
                               "(axis 1), where each input is one block of the output")
        out = from_range(node.name, node.name)
        scales = np.array([tensors[i].scale / tensors[out].scale for i in ins])
        mult, shift = q8.quantize_multiplier(scales)
        nodes.append(q8.Concat(_label(node), tuple(ins), out, tuple(int(m) for m in mult),
                               tuple(int(x) for x in shift)))
        return out

    output = input_id = None
    views: dict[int, int] = {}   # (C, L) tensor -> its (C, 1, L) view
    pads: dict[str, tuple[int, int]] = {}   # zero pad node -> (top, left) widths it adds
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
        if not users[node.name]:
            # a layer whose result nothing reads: an in-place call (F.relu(y, inplace=True)
            # or nn.ReLU(inplace=True) without keeping its result), which torch.fx records
            # apart from the later uses of y: exporting it would drop the layer
            raise _unsupported(node, kind, "its result is never used: an in-place call? "
                               "write y = f(y)")
        if kind == "cat":
            tid[node.name] = concat(node, *mod)
            continue
        src = arg_tensor(node, _source(node))
        tin = tensors[src]
        one_d = kind in ONE_D
        if one_d:
            src = as_2d(node, src)
        if kind == "expand":
            # a broadcast view: the value stays as small as it is, and the product that
            # reads it broadcasts it (a (C, 1, 1) weight over (C, H, W)); any other reader
            # (a conv, a table, the output) would take the small value for the large one
            other = next((u for u in users[node.name] if kinds[u.name] != "mul"), None)
            if other is not None:
                raise _unsupported(node, "expand", f"its result goes to {_label(other)!r} "
                                   f"({kinds[other.name]}); an expand is exported only as "
                                   "the broadcast operand of a product (x * s.expand_as(x))")
        if kind in ("identity", "expand"):
            tid[node.name] = src
            continue
        if kind == "pad":
            # folded into the one conv after it, as more padding before the input (the conv's
            # output size, from torch, holds the padding after)
            us = users[node.name]
            conv = "conv1d" if len(mod) == 2 else "conv"
            if len(us) != 1 or kinds[us[0].name] != conv or len(tin.shape) != len(mod) // 2 + 1:
                raise _unsupported(node, f"zero pad of {len(mod)} widths", "it folds into a "
                                   f"{'Conv1d' if conv == 'conv1d' else 'Conv2d'} that is its "
                                   "only user, padding the input's spatial axes")
            pads[node.name] = (0, mod[0]) if conv == "conv1d" else (mod[2], mod[0])
            tid[node.name] = src
            continue
        if kind == "bn":
            raise _unsupported(node, type(mod).__name__, "it is folded into a Conv1d, Conv2d "
                               "or Linear only when it directly follows one that nothing "
                               "else uses")
        if kind in ("conv", "conv1d", "linear", "add", "sub", "mul"):
            bn = folded_bn(node) if kind in ("conv", "conv1d", "linear") else None
            tail = bn if bn is not None else node
            relu = fusible(tail)
            value = relu or tail.name
            scale, zp = q8.activation_params(*ranges[value])
            shape = shapes[value]
            t = new_tensor(node.name, (shape[0], 1, *shape[1:]) if one_d else shape, scale, zp)
            lo, hi = _act_range(settings[relu] if relu else None, tensors[t])
            bn_mod = gm.get_submodule(bn.target) if bn is not None else None
            if kind in ("conv", "conv1d"):
                before = pads.get(getattr(node.args[0], "name", None), (0, 0))
                nodes.append(_conv(node, mod, src, t, tensors[src], tensors[t], lo, hi, bn_mod,
                                   before))
            elif kind == "linear":
                if len(tin.shape) != 1:
                    raise _unsupported(node, "Linear", f"its input has shape {tin.shape} per "
                                       "sample; flatten to [N, features] first")
                nodes.append(_linear(node, mod, src, t, tin, tensors[t], lo, hi, bn_mod))
            else:
                other = arg_tensor(node, node.args[1] if len(node.args) > 1 else None)
                nodes.append(_elementwise(node, kind, src, other, t, tensors, lo, hi))
            t = as_torch(node, t, value)
            for extra in (relu, bn.name if bn is not None else None):
                if extra:
                    fused.add(extra)
                    tid[extra] = t
            tid[node.name] = t
            continue
        # the rest keep the input's scale and zero point
        tin = tensors[src]
        if kind == "clamp":
            t = new_tensor(node.name, shapes[node.name], tin.scale, tin.zero_point)
            lo, hi = _act_range(mod, tin)
            nodes.append(q8.Clamp(_label(node), (src,), t, lo, hi))
        elif kind == "prelu":
            t = from_range(node.name, node.name)
            nodes.append(_prelu(node, mod, src, t, tin, tensors[t]))
        elif kind == "lut":
            t = from_range(node.name, node.name)
            nodes.append(q8.Lut(_label(node), (src,), t, _table(node, mod, tin, tensors[t])))
        elif kind == "flatten":
            # any reshape of a sample is free: the bytes are C-order, channel first, as
            # torch holds them (a flatten, an SE block's (C,) -> (C, 1, 1))
            t = new_tensor(node.name, shapes[node.name], tin.scale, tin.zero_point)
            if tensors[t].size != tin.size:
                raise _unsupported(node, f"{node.op} {node.target}",
                                   f"it reshapes {tin.shape} per sample to "
                                   f"{tensors[t].shape}; a reshape must keep the batch axis "
                                   "and each sample's values")
            nodes.append(q8.Reshape(_label(node), (src,), t))
        else:   # pooling: on (C, H, W), or a 1-D layer's (C, 1, L) view
            if kind == "mean":
                dims, _ = mod
                rank = len(tin.shape) + 1
                if rank not in (3, 4) or sorted(d % rank for d in dims) != list(range(2, rank)):
                    raise _unsupported(node, "mean", f"over axes {dims} of a [N, "
                                       f"{', '.join(map(str, tin.shape))}] value; only the "
                                       "mean over the spatial axes, a global average pool: "
                                       "x.mean((2, 3)) or x.mean(-1)")
                if rank == 3:
                    src = as_2d(node, src)
                    tin = tensors[src]
                kind = "globalavg"
            if len(tin.shape) != 3:
                raise _unsupported(node, kind, f"its input has shape {tin.shape} per sample")
            if kind.startswith("globalavg"):
                hw = tin.shape[1:]
                t = new_tensor(node.name, (tin.shape[0], 1, 1), tin.scale, tin.zero_point)
                nodes.append(q8.AvgPool2d(_label(node), (src,), t, hw, hw, (0, 0)))
            else:
                cls = q8.MaxPool2d if kind.startswith("maxpool") else q8.AvgPool2d
                kernel = _hw(mod.kernel_size, one_d, 1)
                stride = _hw(mod.stride if mod.stride is not None else mod.kernel_size,
                             one_d, 1)
                padding = _hw(mod.padding, one_d, 0)
                out_hw = q8.conv_output_hw(tin.shape[1:], kernel, stride, padding, (1, 1))
                t = new_tensor(node.name, (tin.shape[0], *out_hw), tin.scale, tin.zero_point)
                nodes.append(cls(_label(node), (src,), t, kernel, stride, padding))
            t = as_torch(node, t, node.name)
        tid[node.name] = t
    if output is None or all(isinstance(n, q8.Reshape) for n in nodes):
        raise ExportError("c-int8 export: the model computes nothing the export can write "
                          "(reshapes alone move no byte)")
    return q8.Int8Graph(tensors, nodes, input_id, output)


def _source(node):
    """The value a layer reads: its first argument, or for a table of arithmetic with a
    number first (``0.5 * x``, ``1 - x``) the traced operand."""
    import torch.fx
    return next((a for a in node.args if isinstance(a, torch.fx.Node)),
                node.args[0] if node.args else None)


def _table(node, fn, tin: q8.QTensor, tout: q8.QTensor) -> np.ndarray:
    """The 256 int8 outputs of the elementwise ``fn`` (the model's own module or function,
    in float32 as the model runs), one per int8 input ``q`` at index ``q + 128``: ``fn`` of
    ``scale_in (q - zp_in)``, quantised at the output's scale (rounded half away from zero,
    as TFLite's tables) and clamped to int8."""
    import torch
    q = np.arange(-128, 128)
    x = torch.from_numpy(((q - tin.zero_point) * tin.scale).astype(np.float32))
    with torch.no_grad():
        f = fn(x).double().numpy()
    if f.shape != (256,) or np.isnan(f).any():
        raise _unsupported(node, "elementwise function", "it is not a number on some of the "
                           "input's int8 range (0 / 0?) or not elementwise")
    # an infinity (6 / x at x = 0, where the range widened to hold 0 puts a grid point the
    # calibration never reached) saturates as every out-of-range value does
    v = f / tout.scale
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + tout.zero_point,
                   q8.INT8_MIN, q8.INT8_MAX).astype(np.int8)


def _fold_bn(w: np.ndarray, b, bn) -> tuple[np.ndarray, np.ndarray]:
    """``w``, ``b`` of a conv or linear with the BatchNorm after it folded in: y = gamma
    (x - mean) / sqrt(var + eps) + beta, from its running statistics."""
    mean = bn.running_mean.detach().double().cpu().numpy()
    var = bn.running_var.detach().double().cpu().numpy()
    gamma = (bn.weight.detach().double().cpu().numpy() if bn.weight is not None
             else np.ones_like(mean))
    beta = (bn.bias.detach().double().cpu().numpy() if bn.bias is not None
            else np.zeros_like(mean))
    k = gamma / np.sqrt(var + bn.eps)
    return w * k.reshape(-1, *[1] * (w.ndim - 1)), ((b if b is not None else 0.0) - mean) * k + beta


def _conv(node, mod, src, dst, tin, tout, lo, hi, bn=None, before=(0, 0)) -> q8.Conv2d:
    """A Conv2d, or a Conv1d as the Conv2d of height 1 on (C, 1, L); ``before``: the (top,
    left) widths of a zero pad folded into it."""
    w = mod.weight.detach().double().cpu().numpy()
    b = None if mod.bias is None else mod.bias.detach().double().cpu().numpy()
    if bn is not None:
        w, b = _fold_bn(w, b, bn)
    one_d = w.ndim == 3
    if one_d:
        w = w[:, :, None, :]
    qw, ws = _weight_params(w)
    qb, mult, shift = _bias_and_multipliers(node, b, ws, tin.scale, tout.scale, qw,
                                            tin.zero_point)
    padding = _conv_padding(node, mod)
    if one_d:
        stride, padding, dilation = (1, mod.stride[0]), (0, padding[0]), (1, mod.dilation[0])
    else:
        stride, dilation = _pair(mod.stride), _pair(mod.dilation)
    padding = tuple(p + b for p, b in zip(_pair(padding), before, strict=True))
    return q8.Conv2d(_label(node), (src,), dst, qw, qb, mult, shift, stride, padding,
                     dilation, int(mod.groups), lo, hi)


def _linear(node, mod, src, dst, tin, tout, lo, hi, bn=None) -> q8.Linear:
    w = mod.weight.detach().double().cpu().numpy()
    b = None if mod.bias is None else mod.bias.detach().double().cpu().numpy()
    if bn is not None:
        w, b = _fold_bn(w, b, bn)
    qw, ws = _weight_params(w)
    qb, mult, shift = _bias_and_multipliers(node, b, ws, tin.scale, tout.scale, qw,
                                            tin.zero_point)
    return q8.Linear(_label(node), (src,), dst, qw, qb, mult, shift, lo, hi)


def _elementwise(node, kind: str, a: int, b: int, dst: int, tensors, lo, hi):
    """``a + b``, ``a - b`` (an add with the second input's multiplier negated, as TFLite's
    sub) or ``a * b`` of two traced tensors: of one shape, or for a product one of them
    (C, 1, ..., 1) against the other's (C, ...)."""
    ta, tb = tensors[a], tensors[b]
    if kind == "mul" and ta.shape != tb.shape and _per_channel(ta.shape, tb.shape):
        a, b, ta, tb = b, a, tb, ta   # the full tensor first, the per-channel one second
    if node.kwargs.get("alpha", 1) != 1 or not (
            ta.shape == tb.shape or (kind == "mul" and _per_channel(tb.shape, ta.shape))):
        raise _unsupported(node, kind, f"operands of shapes {ta.shape} and {tb.shape} per "
                           "sample" + (" with alpha" if "alpha" in node.kwargs else "")
                           + "; expected one shape" + (", or one operand (C, 1, ..., 1) "
                           "against the other's (C, ...)" if kind == "mul" else ""))
    tout = tensors[dst]
    if kind == "mul":
        m, s = q8.quantize_multiplier(ta.scale * tb.scale / tout.scale)
        return q8.Mul(_label(node), (a, b), dst, int(m[0]), int(s[0]), lo, hi)
    # TFLite PrepareGeneralSubOp: both inputs to 2 x the larger scale, 20 bits of headroom
    twice_max = 2.0 * max(ta.scale, tb.scale)
    m1, s1 = q8.quantize_multiplier(ta.scale / twice_max)
    m2, s2 = q8.quantize_multiplier(tb.scale / twice_max)
    mo, so = q8.quantize_multiplier(twice_max / ((1 << q8.ADD_LEFT_SHIFT) * tout.scale))
    sign = -1 if kind == "sub" else 1
    return q8.Add(_label(node), (a, b), dst, int(m1[0]), int(s1[0]), sign * int(m2[0]),
                  int(s2[0]), int(mo[0]), int(so[0]), lo, hi)


def _prelu(node, mod, src, dst, tin, tout) -> q8.PReLU:
    """A PReLU: its alphas (one, or one per channel: the first axis of a sample) int8,
    symmetric per tensor (``scale = max |alpha| / 127``), one per channel in the C."""
    alpha = mod.weight.detach().double().cpu().numpy().ravel()
    channels = tin.shape[0]
    if alpha.size not in (1, channels):
        raise _unsupported(node, "PReLU", f"{alpha.size} parameters for an input of shape "
                           f"{tin.shape} per sample; expected 1 or {channels}")
    alpha = np.broadcast_to(alpha, (channels,))
    amax = float(np.abs(alpha).max())
    scale = amax / 127.0 if amax > 0 else 1.0
    qa = np.clip(np.round(alpha / scale), -127, 127).astype(np.int8)
    m1, s1 = q8.quantize_multiplier(tin.scale / tout.scale)
    m2, s2 = q8.quantize_multiplier(tin.scale * scale / tout.scale)
    return q8.PReLU(_label(node), (src,), dst, qa, int(m1[0]), int(s1[0]), int(m2[0]),
                    int(s2[0]))


def _per_channel(small: tuple, full: tuple) -> bool:
    """``small`` is (C, 1, ..., 1) of ``full``'s (C, ...), with more than one value there."""
    return len(small) == len(full) >= 2 and small[0] == full[0] \
        and all(d == 1 for d in small[1:]) and math.prod(full[1:]) > 1


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
    # a copy: the memory map is read-only (torch warned on every export from an .npy of
    # float32) and the file may change after the export read it
    x = np.array(x[:limit], dtype=np.float32)
    if not np.isfinite(x).all():
        raise ExportError(f"--calibration {spec!r}: holds NaN or infinite values")
    return x, None, None
