"""Cost of one aten op: primitive-op counts and bytes, as small pure functions of shapes.

Counting conventions (the same on every profile):

- Matrix products and convolutions use **torch's own FLOP counter formulas**
  (``torch.utils.flop_counter.flop_registry``: multiply-add = 2 FLOPs); we record
  ``FLOPs / 2`` multiply-accumulates as ``mac_<dtype>``.
- Ops tagged ``pointwise`` by aten (add, relu, where, ...) and ``_foreach_*`` ops (the
  optimizers' fused list updates): one op per output element, ``flop_<dtype>``.
- Ops tagged ``reduction`` (sum, mean, argmax, ...): one op per input element.
- A few composite kernels with no tag get a stated per-element factor (``_PER_ELEMENT``).
- Views (``is_view``) and allocation without writes cost nothing (``FREE``).
- Data movement ops (copy, cat, gather, ...) cost bytes but no arithmetic (``MEMORY_ONLY``).
- Integer and boolean tensors count ``int_add`` (``int_cmp`` for comparisons) instead
  of ``flop_<dtype>``; integer products count ``mac_int8`` for 8-bit inputs, else
  ``int_mul`` + ``int_add`` per multiply-accumulate.
- Bytes: every op that is not free reads all its tensor inputs and writes all its outputs
  from/to device memory (``offchip``). This is eager PyTorch with no fusion and no cache
  hits: an upper bound on traffic, stated as such in reports.

Anything else is *uncounted*: the engine records its name and the report lists it; it is
never silently zero.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils.flop_counter import flop_registry

aten = torch.ops.aten

_FLOAT_SUFFIX = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16",
                 torch.bfloat16: "bf16"}

# Composite kernels without an aten tag: ops per element of their first tensor input.
# Softmax = max, subtract, exp, sum, divide (5); log-softmax likewise (5); their backward
# passes = multiply, sum, subtract (3); dropout = compare a random number and scale (2);
# layer norm = mean, subtract, square, mean, rsqrt-scale, affine multiply and add (7),
# backward about twice that (14); NLL loss = one gather-and-add per target element.
_PER_ELEMENT = {
    aten._softmax: 5, aten._log_softmax: 5,
    aten._softmax_backward_data: 3, aten._log_softmax_backward_data: 3,
    aten.native_dropout: 2, aten.native_dropout_backward: 1,
    aten.native_layer_norm: 7, aten.native_layer_norm_backward: 14,
    aten.nll_loss_forward: 1, aten.nll_loss_backward: 1,
    aten.mse_loss: 3, aten.mse_loss_backward: 3,
    aten.bernoulli_: 1, aten.bernoulli: 1, aten.normal_: 1, aten.uniform_: 1,
    aten.randn: 1, aten.rand: 1, aten.randint: 1, aten.randperm: 1,
}
# Ops that compare rather than compute: integer/bool inputs count int_cmp.
_COMPARISONS = {aten.eq, aten.ne, aten.lt, aten.le, aten.gt, aten.ge, aten.maximum,
                aten.minimum, aten.max, aten.min, aten.amax, aten.amin, aten.argmax,
                aten.argmin, aten.where, aten.clamp, aten.clamp_min, aten.clamp_max,
                aten.sort, aten.topk}
# Sorting-type ops: n * ceil(log2 n) comparisons along the sorted dimension.
_SORTS = {aten.sort, aten.topk, aten.kthvalue, aten.argsort}

FREE = {aten.detach, aten.alias, aten.lift_fresh, aten.empty, aten.empty_like,
        aten.new_empty, aten.empty_strided, aten.new_empty_strided, aten._unsafe_view,
        aten._local_scalar_dense, aten.set_, aten.resize_, aten.is_same_size,
        aten.sym_size, aten.sym_stride, aten.sym_numel}
"""Ops that move no data and compute nothing (views, allocation without writes)."""

MEMORY_ONLY = {aten.copy_, aten.clone, aten._to_copy, aten.cat, aten.stack, aten.index_select,
               aten.gather, aten.scatter, aten.scatter_, aten.index, aten.index_put_,
               aten.index_put, aten.embedding, aten.embedding_dense_backward, aten.fill_,
               aten.zero_, aten.zeros, aten.zeros_like, aten.ones, aten.ones_like, aten.full,
               aten.full_like, aten.new_zeros, aten.new_ones, aten.new_full, aten.scalar_tensor,
               aten.constant_pad_nd, aten.repeat, aten.contiguous, aten.arange, aten.flip,
               aten.roll, aten.masked_scatter, aten.slice_scatter, aten.select_scatter,
               aten.diagonal_scatter, aten.tril, aten.triu, aten.one_hot,
               aten.select_backward, aten.slice_backward}
"""Ops that move bytes but do no arithmetic."""


def _tensors(tree) -> list[torch.Tensor]:
    """Tensors in aten arguments: flat values, lists/tuples of them, and dicts (kwargs).

    Hand-written rather than ``tree_flatten`` because it runs once per executed op and
    aten schemas nest at most a list inside the argument tuple.
    """
    out: list[torch.Tensor] = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return out


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _elementwise_op(packet, dtype: torch.dtype) -> str:
    if dtype in _FLOAT_SUFFIX:
        return f"flop_{_FLOAT_SUFFIX[dtype]}"
    if dtype.is_complex:
        return ""
    return "int_cmp" if packet in _COMPARISONS else "int_add"


def op_cost(func, args, kwargs, out) -> tuple[dict[str, int], int, int, str]:
    """Cost of one executed aten op.

    Returns
    -------
    counts : dict op name -> count (empty for free ops)
    read_bytes, write_bytes : traffic to device memory (0 for free ops)
    uncounted : the op's name when no formula applies (then counts and bytes are empty), else ""
    """
    packet = func.overloadpacket
    # profiler markers (record_function in optimizers) execute no arithmetic
    if func.is_view or packet in FREE or func.namespace == "profiler":
        return {}, 0, 0, ""
    inputs, outputs = _tensors((args, kwargs)), _tensors(out)
    read, write = _nbytes(inputs), _nbytes(outputs)
    name = str(packet).removeprefix("aten.")
    first = inputs[0] if inputs else (outputs[0] if outputs else None)
    counts: dict[str, int] = {}

    if packet in flop_registry:
        flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
        macs = flops // 2
        dtype = first.dtype
        if dtype in _FLOAT_SUFFIX:
            counts[f"mac_{_FLOAT_SUFFIX[dtype]}"] = macs
        elif dtype in (torch.int8, torch.uint8):
            counts["mac_int8"] = macs
        elif not dtype.is_complex:
            counts["int_mul"] = macs
            counts["int_add"] = macs
        else:
            return {}, 0, 0, name
    elif packet in MEMORY_ONLY:
        pass
    elif packet in _SORTS:
        if first is None:
            return {}, 0, 0, name
        dim_pos = 2 if packet in (aten.topk, aten.kthvalue) else 1  # after k for topk
        dim = args[dim_pos] if len(args) > dim_pos and isinstance(args[dim_pos], int) \
            else kwargs.get("dim", -1)
        n = first.shape[dim] if first.dim() else 1
        op = _elementwise_op(aten.sort, first.dtype)
        counts[op] = first.numel() * max(1, math.ceil(math.log2(max(n, 2))))
    elif name.startswith("_foreach_"):
        # list ops of the optimizers: one op per element of the first tensor list
        lists = [a for a in args if isinstance(a, (list, tuple)) and a
                 and isinstance(a[0], torch.Tensor)]
        if not lists:
            return {}, 0, 0, name
        for t in lists[0]:
            op = _elementwise_op(packet, t.dtype)
            counts[op] = counts.get(op, 0) + t.numel()
    elif torch.Tag.pointwise in func.tags:
        ref = outputs[0] if outputs else first
        op = _elementwise_op(packet, first.dtype if first is not None else ref.dtype)
        if not op:
            return {}, 0, 0, name
        counts[op] = ref.numel()
    elif torch.Tag.reduction in func.tags or packet in _PER_ELEMENT:
        if first is None:
            ref = outputs[0]
        else:
            ref = first
        op = _elementwise_op(packet, ref.dtype)
        if not op:
            return {}, 0, 0, name
        counts[op] = ref.numel() * _PER_ELEMENT.get(packet, 1)
    else:
        return {}, 0, 0, name
    return {k: v for k, v in counts.items() if v}, read, write, ""


def tensor_bytes(tensors: Any) -> int:
    """Bytes held by every tensor in a (nested) structure."""
    return _nbytes(_tensors(tensors))
