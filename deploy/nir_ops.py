"""NIR's stateless (linear and reshaping) nodes as sparse matrices over flat, C-order channels.

The engine's populations are flat vectors; a NIR graph's tensors are ``(C, H, W)`` (Conv2d,
pooling), ``(C, L)`` (Conv1d) or flat (Linear). Every node between two spiking populations
(``Linear``, ``Affine``, ``Scale``, ``Conv1d``, ``Conv2d``, ``SumPool2d``, ``AvgPool2d``,
``Flatten``) is a linear map ``y = W x + b`` of the C-order flattened tensors, so a chain of
them composes to one matrix: the synapses of one projection. :func:`chain_shape` follows the
shapes along the chain (checking each node's own), :func:`linear_map` builds ``(W, b)``.

Semantics (NIR's node definitions, nir 1.0.8 ``nir/ir/conv.py``, ``pooling.py``, PyTorch's
conventions, which NIR follows):

- ``Conv{1,2}d(input_shape, weight[Cout, Cin/groups, *k], stride, padding, dilation,
  groups, bias)``: ``y[co, o] = b[co] + sum_{ci in group(co), k} w[co, ci, k] x[ci, o*s - p
  + k*d]``, zero outside the input; ``padding`` an int, a tuple, ``"valid"`` (0) or
  ``"same"`` (stride 1; total ``d (k-1)``, the smaller half before, as PyTorch);
  output size ``floor((L + 2p - d (k-1) - 1) / s) + 1``.
- ``SumPool2d(kernel_size, stride, padding)``: the sum over each window, per channel;
  ``AvgPool2d``: that sum / ``prod(kernel_size)`` (PyTorch's default
  ``count_include_pad=True``: padded zeros count in the divisor).
- ``Scale(scale)``: ``y = scale * x`` elementwise; ``Flatten``: the same C-order vector.

Everything is built with numpy over all (output, kernel) index pairs at once: no Python loop
per neuron or synapse.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from deploy.errors import ExportError


def _err(msg: str) -> ExportError:
    return ExportError(f"NIR import: {msg}")


def real_values(name: str, field: str, value, unit: str = "") -> np.ndarray:
    """``value`` as float64, refused in one line naming the node and field where it holds
    no real numbers (strings, compound records, complex values: numpy would raise a
    TypeError deep inside, or keep only the real part with a warning)."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        what = {"c": f"{a.dtype} values", "S": "bytes", "U": "strings", "O": "Python objects",
                "V": f"compound records ({a.dtype})"}.get(a.dtype.kind, f"{a.dtype} values")
        raise _err(f"node {name!r}: {field} holds {what}; expected real numbers{unit}")
    return a.astype(np.float64, copy=False)


def _tuple(value, nd: int, what: str, name: str) -> tuple[int, ...]:
    arr = np.asarray(value).ravel()
    if arr.size == 1:
        arr = np.repeat(arr, nd)
    if arr.size != nd or arr.dtype.kind not in "biuf" or not np.all(np.isfinite(arr)) \
            or not np.all(arr == np.rint(arr)) or np.any(np.abs(arr) > 2**31):
        raise _err(f"node {name!r}: {what} = {value!r}; expected an integer or {nd} integers")
    return tuple(int(v) for v in arr)


def _at_least(name: str, kind: str, what: str, values: tuple[int, ...], low: int) -> None:
    """Stride, dilation and kernel sizes >= 1, padding >= 0: checked before any arithmetic
    divides by them or sizes an array with them (a stride of 0 was a ZeroDivisionError, a
    negative pooling kernel numpy's 'negative dimensions')."""
    if any(v < low for v in values):
        raise _err(f"node {name!r} is a {kind} with {what} {values}; expected integers "
                   f">= {low}")


def _conv_geometry(name, kind, in_shape, weight, stride, padding, dilation, groups):
    """(out_shape, stride, pad_before, dilation) of a convolution, its shapes checked."""
    nd = weight.ndim - 2
    if len(in_shape) != nd + 1:
        raise _err(f"node {name!r} is a {kind} fed a tensor of shape {tuple(in_shape)}; "
                   f"expected (channels, {', '.join('LHW'[-nd:] if nd == 1 else 'HW')}) "
                   f"= {nd + 1} dimensions")
    cout, cin_g = weight.shape[:2]
    if groups < 1 or cout % groups:
        raise _err(f"node {name!r} is a {kind} with groups {groups}; expected an integer >= 1 "
                   f"that divides its {cout} output channels (weight {tuple(weight.shape)})")
    if in_shape[0] != cin_g * groups:
        raise _err(f"node {name!r} is a {kind} with weight {tuple(weight.shape)} and groups "
                   f"{groups}, fed {in_shape[0]} channels (shape {tuple(in_shape)}); expected "
                   f"{cin_g * groups} input channels (weight.shape[1] x groups)")
    k = weight.shape[2:]
    _at_least(name, kind, "kernel_size" if kind.endswith("Pool2d") else "kernel", tuple(k), 1)
    s = _tuple(stride, nd, "stride", name)
    d = _tuple(dilation, nd, "dilation", name)
    _at_least(name, kind, "stride", s, 1)
    _at_least(name, kind, "dilation", d, 1)
    if isinstance(padding, (str, bytes)):
        word = padding.decode() if isinstance(padding, bytes) else padding
        if word == "valid":
            pad = (0,) * nd
        elif word == "same":
            if any(v != 1 for v in s):
                raise _err(f"node {name!r}: padding 'same' with stride {s}; PyTorch and NIR "
                           "define 'same' for stride 1 only")
            pad = tuple((di * (ki - 1)) // 2 for di, ki in zip(d, k, strict=True))
        else:
            raise _err(f"node {name!r}: padding {word!r}; expected an integer, a tuple, "
                       "'same' or 'valid'")
        total = tuple(di * (ki - 1) for di, ki in zip(d, k, strict=True)) if word == "same" \
            else tuple(2 * p for p in pad)
    else:
        pad = _tuple(padding, nd, "padding", name)
        _at_least(name, kind, "padding", pad, 0)
        total = tuple(2 * p for p in pad)
    out = tuple((L + t - di * (ki - 1) - 1) // si + 1
                for L, t, di, ki, si in zip(in_shape[1:], total, d, k, s, strict=True))
    if any(o < 1 for o in out):
        raise _err(f"node {name!r} is a {kind} with kernel {tuple(k)}, stride {s}, padding "
                   f"{pad}, dilation {d} on input {tuple(in_shape)}: output size {out}; "
                   "expected every output size >= 1 (a larger input or smaller kernel)")
    return (cout, *out), s, pad, d


MAX_SYNAPSES = 20_000_000
"""Most synapses one NIR import builds, all its layers together (the simulator holds every
synapse, whatever the chip stores). A synapse costs about 210 B from the import through
compile and a run (index, weight and delay arrays and their copies: a 12.96 M-synapse
Conv2d peaked at 2.3 GB, a 5.76 M one at 1.2 GB, on loihi and spinnaker2 alike), so this
bound is ~4.2 GB, a sixth of a 24 GiB machine: room for the rest of the run and for a
second process. The former 200 M (~42 GB) let a 43 KB file exhaust memory. Checked before
anything of that size is allocated."""


def _too_many(what: str, count: int, limit: int, hint: str) -> None:
    """Refuse ``count`` synapses over ``limit`` (what is left of :data:`MAX_SYNAPSES` after
    the layers built before)."""
    if count > limit:
        before = f", {MAX_SYNAPSES - limit:,} of them built for the layers before" \
            if limit < MAX_SYNAPSES else ""
        raise _err(f"{what}; the import builds at most {MAX_SYNAPSES:,} synapses for a graph "
                   f"(~210 B each through compile and run{before}): {hint}")


def compose(label: str, Wn: sp.csr_matrix, W: sp.csr_matrix,
            limit: int = MAX_SYNAPSES) -> sp.csr_matrix:
    """``Wn @ W``, refused before it is built when it could hold more than ``limit``
    synapses: the product of two small maps can be dense (100,000 -> 1 -> 100,000 is 2 x
    10^5 weights and 10^10 synapses). The bound: for each middle index, the entries of its
    column in ``Wn`` times those of its row in ``W``."""
    Wn, W = Wn.tocsr(), W.tocsr()
    per_col = np.bincount(Wn.indices, minlength=Wn.shape[1]).astype(np.float64)
    bound = min(float(per_col @ np.diff(W.indptr).astype(np.float64)),
                float(Wn.shape[0]) * float(W.shape[1]))
    _too_many(f"the chain {label} composes into up to {bound:,.0f} synapses ({Wn.shape[0]:,} "
              f"targets x {W.shape[1]:,} sources)", int(bound), limit,
              "put a spiking layer between its weight nodes or make them smaller")
    return Wn @ W


def _conv_coo(weight, in_shape, out_shape, s, pad, d, groups, name="", kind="Conv2d",
              limit=MAX_SYNAPSES):
    """(post, pre, w) of a convolution: every (output position, kernel tap) pair whose input
    position is inside the tensor (zero padding drops the others)."""
    nd = weight.ndim - 2
    cout, cin_g = weight.shape[:2]
    k = weight.shape[2:]
    pairs = int(np.prod(out_shape)) * cin_g * int(np.prod(k))
    _too_many(f"node {name!r} is a {kind} of {pairs:,} synapses (outputs {tuple(out_shape)} "
              f"x {cin_g * int(np.prod(k))} taps)", pairs, limit,
              "use a smaller input or more stride")
    # broadcast axes: cout, cin_g, *out, *k
    co = np.arange(cout).reshape((cout, 1) + (1,) * (2 * nd))
    cg = np.arange(cin_g).reshape((1, cin_g) + (1,) * (2 * nd))
    ci = (co // (cout // groups)) * cin_g + cg
    shape = (cout, cin_g, *out_shape[1:], *k)
    inside = np.ones(shape, bool)
    in_pos, out_pos = [], []
    for a in range(nd):   # per spatial axis (1 or 2), each over all positions at once
        o = np.arange(out_shape[1 + a]).reshape((1, 1) + tuple(-1 if b == a else 1
                                                              for b in range(nd)) + (1,) * nd)
        t = np.arange(k[a]).reshape((1, 1) + (1,) * nd + tuple(-1 if b == a else 1
                                                                for b in range(nd)))
        pos = o * s[a] - pad[a] + t * d[a]
        inside &= (pos >= 0) & (pos < in_shape[1 + a])
        in_pos.append(pos)
        out_pos.append(o)
    co_b, ci_b = np.broadcast_to(co, shape), np.broadcast_to(ci, shape)
    w_b = np.broadcast_to(weight.reshape((cout, cin_g) + (1,) * nd + tuple(k)), shape)
    sel = inside & (w_b != 0)
    pre = np.ravel_multi_index((ci_b[sel], *[np.broadcast_to(p, shape)[sel] for p in in_pos]),
                               tuple(in_shape))
    post = np.ravel_multi_index((co_b[sel], *[np.broadcast_to(p, shape)[sel] for p in out_pos]),
                                tuple(out_shape))
    return post, pre, w_b[sel]


def node_kind(node) -> str:
    return type(node).__name__


def _groups(name: str, node) -> int:
    return _tuple(node.groups, 1, "groups", name)[0]


def _pool_kernel(name: str, node) -> tuple[int, ...]:
    k = _tuple(node.kernel_size, 2, "kernel_size", name)
    _at_least(name, node_kind(node), "kernel_size", k, 1)
    return k


def _unbatched(node, in_shape) -> tuple[int, ...]:
    """``in_shape`` without a leading batch dimension of 1 where a Conv/pooling node expects
    one dimension fewer (Norse's export types its Input with the sample's batch of 1)."""
    import nir
    want = {nir.Conv1d: 2, nir.Conv2d: 3, nir.SumPool2d: 3, nir.AvgPool2d: 3}.get(type(node))
    in_shape = tuple(int(v) for v in in_shape)
    if want is not None and len(in_shape) == want + 1 and in_shape[0] == 1:
        return in_shape[1:]
    return in_shape


def out_shape(name: str, node, in_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``node`` gives for an input of ``in_shape`` (checked against the node)."""
    import nir
    in_shape = _unbatched(node, in_shape)
    n_in = int(np.prod(in_shape))
    if isinstance(node, (nir.Linear, nir.Affine)):
        w = np.asarray(node.weight)
        if w.ndim != 2 or w.shape[1] != n_in:
            raise _err(f"node {name!r} is a {node_kind(node)} with weight {w.shape}, fed "
                       f"{n_in} values (shape {tuple(in_shape)}); expected weight (n_out, "
                       f"{n_in})")
        return (w.shape[0],)
    if isinstance(node, (nir.Conv1d, nir.Conv2d)):
        w = np.asarray(node.weight)
        return _conv_geometry(name, node_kind(node), in_shape, w, node.stride, node.padding,
                              node.dilation, _groups(name, node))[0]
    if isinstance(node, (nir.SumPool2d, nir.AvgPool2d)):
        c = in_shape[0] if len(in_shape) == 3 else 0
        w = np.ones((max(c, 1), 1, *_pool_kernel(name, node)))
        if len(in_shape) != 3:
            raise _err(f"node {name!r} is a {node_kind(node)} fed shape {tuple(in_shape)}; "
                       "expected (channels, H, W)")
        return _conv_geometry(name, node_kind(node), in_shape, w, node.stride, node.padding,
                              1, c)[0]
    if isinstance(node, nir.Scale):
        scale = np.asarray(node.scale)
        if scale.size not in (1, n_in):
            raise _err(f"node {name!r} is a Scale of {scale.size} values, fed {n_in} (shape "
                       f"{tuple(in_shape)}); expected 1 or {n_in} values")
        return tuple(in_shape)
    if isinstance(node, nir.Flatten):
        nd = len(in_shape)
        a = node.start_dim % nd if nd else 0
        b = node.end_dim % nd if nd else 0
        return tuple(in_shape[:a]) + (int(np.prod(in_shape[a:b + 1])),) + tuple(in_shape[b + 1:])
    return tuple(in_shape)   # Delay, Output: the same tensor


def linear_map(name: str, node, in_shape,
               limit: int = MAX_SYNAPSES) -> tuple[sp.csr_matrix, np.ndarray | None]:
    """``(W, b)``: the node as ``y = W x + b`` on C-order flat vectors (``b`` None: no bias);
    refused before it is built when it holds more than ``limit`` synapses."""
    import nir
    in_shape = _unbatched(node, in_shape)
    n_in = int(np.prod(in_shape))
    shape = out_shape(name, node, in_shape)
    n_out = int(np.prod(shape))
    if isinstance(node, (nir.Linear, nir.Affine)):
        w = real_values(name, "weight", node.weight)
        _too_many(f"node {name!r} is a {node_kind(node)} of {w.size:,} weights", w.size, limit,
                  "use fewer neurons")
        W = sp.csr_matrix(w)
        # an Affine's bias: None is no bias, one value is the same for every output
        b = real_values(name, "bias", node.bias).ravel() \
            if isinstance(node, nir.Affine) and node.bias is not None else None
        if b is not None and b.size == 1:
            b = np.full(n_out, b[0])
        if b is not None and b.size != n_out:
            raise _err(f"node {name!r} is an Affine with bias of {b.size} values; expected "
                       f"{n_out} (weight.shape[0]) or one")
        return W, b
    if isinstance(node, (nir.Conv1d, nir.Conv2d)):
        w = real_values(name, "weight", node.weight)
        W = _conv_map(name, node, in_shape, shape, w, limit)
        bias = real_values(name, "bias", node.bias).ravel() if node.bias is not None else None
        if bias is not None and bias.size not in (0, 1, w.shape[0]):
            raise _err(f"node {name!r} is a {node_kind(node)} with bias of {bias.size} values; "
                       f"expected {w.shape[0]} (one per output channel)")
        b = None if bias is None or not bias.size or not np.any(bias) else \
            np.repeat(np.broadcast_to(bias, (w.shape[0],)), n_out // w.shape[0])
        return W, b
    if isinstance(node, (nir.SumPool2d, nir.AvgPool2d)):
        c = in_shape[0]
        k = _pool_kernel(name, node)
        value = 1.0 if isinstance(node, nir.SumPool2d) else 1.0 / float(np.prod(k))
        w = np.full((c, 1, *k), value)
        _, s, pad, d = _conv_geometry(name, node_kind(node), in_shape, w, node.stride,
                                      node.padding, 1, c)
        post, pre, wv = _conv_coo(w, in_shape, shape, s, pad, d, c, name, node_kind(node),
                                  limit)
        return sp.csr_matrix((wv, (post, pre)), shape=(n_out, n_in)), None
    if isinstance(node, nir.Scale):
        scale = np.broadcast_to(real_values(name, "scale", node.scale).ravel(), (n_in,))
        return sp.diags(scale, format="csr"), None
    return sp.identity(n_in, format="csr"), None   # Flatten: the same C-order vector


def _conv_map(name, node, in_shape, shape, w, limit) -> sp.csr_matrix:
    """The Conv1d/Conv2d ``node`` with kernel ``w`` as a sparse (outputs, inputs) matrix."""
    groups = _groups(name, node)
    _, s, pad, d = _conv_geometry(name, node_kind(node), in_shape, w, node.stride,
                                  node.padding, node.dilation, groups)
    post, pre, wv = _conv_coo(w, in_shape, shape, s, pad, d, groups, name, node_kind(node),
                              limit)
    return sp.csr_matrix((wv, (post, pre)), shape=(int(np.prod(shape)),
                                                   int(np.prod(in_shape))))


def has_zero_weights(name: str, node) -> bool:
    """Whether the node's matrix holds a weight (or scale) of 0, which its sparse map
    (:func:`linear_map`) leaves out."""
    import nir
    if isinstance(node, (nir.Linear, nir.Affine, nir.Conv1d, nir.Conv2d)):
        return bool(np.any(real_values(name, "weight", node.weight) == 0))
    if isinstance(node, nir.Scale):
        return bool(np.any(real_values(name, "scale", node.scale) == 0))
    return False


def connection_map(name: str, node, in_shape, W: sp.csr_matrix,
                   limit: int = MAX_SYNAPSES) -> sp.csr_matrix:
    """The node's connections as a 0/1 matrix, weights of 0 included: NeuroBench's Dense
    synaptic operations count every weight of a connection layer (a Linear's ``n_out x
    n_in``, a convolution's (output, tap) pairs inside the input), while ``W`` (its
    :func:`linear_map`) keeps only the non-zero ones. Built anew only for a node with a
    weight of 0; otherwise ``W``'s own pattern."""
    import nir
    in_shape = _unbatched(node, in_shape)
    if isinstance(node, (nir.Scale, nir.Flatten)):
        return sp.identity(W.shape[1], format="csr")
    if has_zero_weights(name, node):
        if isinstance(node, (nir.Linear, nir.Affine)):
            return sp.csr_matrix(np.ones(W.shape))
        ones = np.ones(np.shape(node.weight))
        return _conv_map(name, node, in_shape, out_shape(name, node, in_shape), ones, limit)
    P = W.copy()
    P.data[:] = 1.0
    return P


def kernel_weights(node) -> int:
    """Weights a chip with shared (convolutional) connectivity stores for ``node``: the kernel
    (Conv), one value (pooling), 0 for Flatten/Scale-free reshapes; -1 when the node is not
    weight-shared (Linear/Affine: every synapse its own weight)."""
    import nir
    if isinstance(node, (nir.Conv1d, nir.Conv2d)):
        return int(np.asarray(node.weight).size)
    if isinstance(node, (nir.SumPool2d, nir.AvgPool2d)):
        return 1
    if isinstance(node, nir.Scale):
        return int(np.asarray(node.scale).size)
    if isinstance(node, nir.Flatten):
        return 0
    return -1
