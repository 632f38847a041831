"""Ops on nested tensors (``torch.nested``, strided and jagged layouts) priced on dense
stand-ins.

A nested tensor holds B components of different shapes (sequences of different lengths);
its ops act on each component. The cost rules read dense shapes, so a call on nested
tensors is priced on dense tensors that do the same work:

- **on the values**, one call, where the work is the same per element or per row whatever
  the component it falls in (elementwise ops, Linear, layer norm, softmax, dropout, copies):
  each nested tensor stands in as ``(1, rows, *rest)``, its components' rows stacked (the
  values themselves, which every such tensor keeps in one buffer). Exact: such a rule's
  count is a sum over rows.
- **per component** otherwise (attention over each sequence, batched products): the call
  priced once per distinct set of component shapes, each component as a batch of one
  (``(1, *component)``: the call keeps its dimensions, so its dim arguments still apply), a
  dense argument of as many dimensions whose leading one is B (one row per component)
  sliced to the component's row, and the price times the components of that shape.

Conversions between nested and dense tensors move the components' elements once (to a
padded tensor: the padding written too). A call neither way can price (components that
differ in number between arguments) is reported uncounted under its name.
"""
from collections import Counter
from collections.abc import Callable

import torch

from hw_profiles.errors import first_names

aten = torch.ops.aten

_ROWWISE = {aten.linear, aten.linear_backward, aten.native_layer_norm,
            aten.native_layer_norm_backward, aten._softmax, aten._log_softmax,
            aten._softmax_backward_data, aten._log_softmax_backward_data, aten.native_dropout,
            aten.native_dropout_backward, aten.clone, aten.copy_, aten._to_copy}
"""Ops whose count on the stacked values equals the sum of their counts per component
(elementwise ops are found by ATen's ``pointwise`` tag)."""

_CONVERSIONS = {aten.to_padded_tensor, aten._nested_tensor_from_mask, aten._nested_from_padded,
                aten._nested_from_padded_tensor, aten._nested_tensor_from_tensor_list}
"""Nested to dense and back: memory only."""


def is_nested_call(tensors) -> bool:
    """Some of ``tensors`` is a nested tensor."""
    return any(t.is_nested for t in tensors)


def _jagged(t: torch.Tensor) -> bool:
    return t.layout is torch.jagged


def stacked_values(t: torch.Tensor) -> torch.Tensor | None:
    """``t``'s components' rows stacked, ``(rows, *rest)``, as a view of its values (autograd
    follows it: a loss can be taken on it); None when the components differ beyond their
    first dimension or no such view exists. Runs no arithmetic on torch tensors (the layer
    recorder calls it where the engine counts): metadata queries and views only."""
    if _jagged(t):
        return t.values() if t._ragged_idx == 1 else None
    sizes = t._nested_tensor_size().tolist()
    if not sizes or not sizes[0] or not t.is_contiguous() \
            or any(s[1:] != sizes[0][1:] for s in sizes):
        return None
    return t.values().view(sum(s[0] for s in sizes), *sizes[0][1:])


def shape_of(t: torch.Tensor) -> list:
    """A tensor's shape as a list; a nested tensor's as its component count and, per
    dimension of its components, the size they share or the range ``"3..5"`` of sizes."""
    if not t.is_nested:
        return list(t.shape)
    parts = t.unbind()
    dims = []
    for d in range(parts[0].dim() if parts else 0):
        sizes = {int(u.shape[d]) for u in parts}
        dims.append(sizes.pop() if len(sizes) == 1 else f"{min(sizes)}..{max(sizes)}")
    return [len(parts), *dims]


def element_count(t: torch.Tensor) -> int:
    """Elements ``t`` holds; a nested tensor's over its components."""
    return t.values().numel() if t.is_nested else t.numel()


def describe(t: torch.Tensor) -> str:
    """A tensor's shape for a message; a nested tensor's components' shapes."""
    if not t.is_nested:
        return f"shape {tuple(t.shape)}"
    return f"nested components {first_names(tuple(u.shape) for u in t.unbind())}"


def nested_cost(func, args, kwargs, out, price: Callable) -> tuple[dict[str, int], int, int, str]:
    """``price(func, args, kwargs, out)`` (the engine's op cost) of a call with nested
    tensors among its arguments or outputs, on dense stand-ins (the module docstring)."""
    packet = func.overloadpacket
    name = str(packet).removeprefix("aten.")
    nested = [t for t in _flat(args, kwargs, out) if t.is_nested]
    if packet in _CONVERSIONS:
        return _conversion_cost(nested, out)
    if packet in _ROWWISE or torch.Tag.pointwise in func.tags:
        stand_ins = {}
        for t in nested:
            v = stacked_values(t)
            if v is None:
                break
            stand_ins[id(t)] = v.unsqueeze(0)
        else:
            dense = [t for t in _flat(args, kwargs, out) if not t.is_nested]
            shape = next(iter(stand_ins.values())).shape
            if packet in _ROWWISE or all(_fits(t.shape, shape) for t in dense):
                return _dense_cost(func, *_substituted((args, kwargs, out), stand_ins), price)
    return _per_component_cost(func, args, kwargs, out, nested, name, price)


def _dense_cost(func, args, kwargs, out, price):
    """``price`` of a call on dense stand-ins; the composite ops that reach the engine whole
    only on nested tensors (ATen decomposes them on dense ones) as the kernels they run."""
    packet = func.overloadpacket
    if packet is aten.linear:
        return _linear_cost(args, kwargs, out, price)
    if packet is aten.linear_backward:
        return _linear_backward_cost(args, out, price)
    if packet is aten.matmul:
        return _matmul_cost(args[0], args[1], out, price)
    if packet is aten.matmul_backward:
        grad, a, b, mask = args
        parts = []
        if mask[0]:
            parts.append(_matmul_cost(grad, b.transpose(-1, -2), a, price))
        if mask[1]:
            parts.append(_matmul_cost(a.transpose(-1, -2), grad, b, price))
        return _summed(parts)
    return price(func, args, kwargs, out)


def _matmul_cost(a, b, out, price):
    """``a @ b`` as ATen runs it: by a matrix (a weight), ``mm`` of ``a``'s rows; of equal
    batch dimensions (a component's), ``bmm`` over the flattened batch."""
    if b.dim() == 2 and a.dim() >= 2:
        k, m = b.shape
        return price(aten.mm.default, (a.reshape(-1, k), b), {}, out.reshape(-1, m))
    if a.dim() < 3 or a.shape[:-2] != b.shape[:-2]:
        return {}, 0, 0, "matmul"
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    return price(aten.bmm.default, (a.reshape(-1, n, k), b.reshape(-1, k, m)), {},
                 out.reshape(-1, n, m))


def _linear_cost(args, kwargs, out, price):
    """``linear`` (which reaches the engine whole only on nested tensors; on dense ones ATen
    decomposes it) as the product it runs: ``addmm`` of the rows by the transposed weight,
    ``mm`` without a bias."""
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    rows, y = x.reshape(-1, x.shape[-1]), out.reshape(-1, out.shape[-1])
    if bias is None:
        return price(aten.mm.default, (rows, w.t()), {}, y)
    return price(aten.addmm.default, (bias, rows, w.t()), {}, y)


def _linear_backward_cost(args, out, price):
    """``linear_backward(input, grad_output, weight, mask)`` as the products and the sum
    autograd runs for a dense Linear: input gradient ``g W``, weight gradient ``g^T x``,
    bias gradient the column sums of ``g``."""
    x, g, w, mask = args
    rows, g2 = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
    parts = []
    if mask[0]:
        parts.append(price(aten.mm.default, (g2, w), {}, rows))
    if mask[1]:
        parts.append(price(aten.mm.default, (g2.t(), rows), {}, w))
    if mask[2]:
        parts.append(price(aten.sum.dim_IntList, (g2, [0]), {}, g2[0]))
    return _summed(parts)


def _summed(parts) -> tuple[dict[str, int], int, int, str]:
    counts: Counter = Counter()
    read = write = 0
    for c, r, w, uncounted in parts:
        if uncounted:
            return {}, 0, 0, uncounted
        counts.update(c)
        read += r
        write += w
    return dict(counts), read, write, ""


def _fits(dense: torch.Size, stand_in: torch.Size) -> bool:
    """A dense operand broadcasts into the stand-in without growing it."""
    try:
        return torch.broadcast_shapes(dense, stand_in) == stand_in
    except RuntimeError:
        return False


def _per_component_cost(func, args, kwargs, out, nested, name, price):
    parts = {}
    for t in nested:
        if id(t) not in parts:
            parts[id(t)] = [u.unsqueeze(0) for u in t.unbind()]
    ndim = nested[0].dim()
    counts_of = {len(p) for p in parts.values()}
    if len(counts_of) != 1:
        return {}, 0, 0, name
    batch = counts_of.pop()
    groups: dict[tuple, list[int]] = {}    # component shapes -> [first component, how many]
    for b in range(batch):
        group = groups.setdefault(tuple(tuple(p[b].shape) for p in parts.values()), [b, 0])
        group[1] += 1
    priced = []
    for b, n in groups.values():
        stand_ins = {i: p[b] for i, p in parts.items()}
        sliced = _substituted((args, kwargs, out), stand_ins, batch, b, ndim)
        c, r, w, uncounted = _dense_cost(func, *sliced, price)
        priced.append(({op: n * k for op, k in c.items()}, n * r, n * w, uncounted))
    return _summed(priced)


def _conversion_cost(nested, out) -> tuple[dict[str, int], int, int, str]:
    """Nested to dense or back: the components' elements read and written once; a padded
    output's padding written too."""
    moved = max((t.values().numel() * t.element_size() for t in nested), default=0)
    written = moved
    if isinstance(out, torch.Tensor) and not out.is_nested:
        written = out.numel() * out.element_size()
    return {}, moved, written, ""


def _flat(*trees) -> list[torch.Tensor]:
    found = []
    stack = list(trees)
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _substituted(tree, stand_ins: dict, batch: int = 0, b: int = 0, ndim: int = 0):
    """``tree`` with each nested tensor replaced by its stand-in; with ``batch``, a dense
    tensor of the nested tensors' ``ndim`` dimensions whose leading one is ``batch`` (one
    row per sequence) by its row ``b``, kept as a batch of one (a weight matrix whose first
    size happens to equal ``batch`` is left whole)."""
    if isinstance(tree, torch.Tensor):
        if tree.is_nested:
            return stand_ins[id(tree)]
        if batch > 1 and tree.dim() == ndim and tree.shape[0] == batch:
            return tree[b:b + 1]
        return tree
    if isinstance(tree, tuple):
        return tuple(_substituted(t, stand_ins, batch, b, ndim) for t in tree)
    if isinstance(tree, list):
        return [_substituted(t, stand_ins, batch, b, ndim) for t in tree]
    if isinstance(tree, dict):
        return {k: _substituted(v, stand_ins, batch, b, ndim) for k, v in tree.items()}
    return tree
