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


def _tuple(value, nd: int, what: str, name: str) -> tuple[int, ...]:
    arr = np.asarray(value).ravel()
    if arr.size == 1:
        arr = np.repeat(arr, nd)
    if arr.size != nd or not np.all(arr == np.rint(arr)):
        raise _err(f"node {name!r}: {what} = {value!r}; expected an integer or {nd} integers")
    return tuple(int(v) for v in arr)


def _conv_geometry(name, kind, in_shape, weight, stride, padding, dilation, groups):
    """(out_shape, stride, pad_before, dilation) of a convolution, its shapes checked."""
    nd = weight.ndim - 2
    if len(in_shape) != nd + 1:
        raise _err(f"node {name!r} is a {kind} fed a tensor of shape {tuple(in_shape)}; "
                   f"expected (channels, {', '.join('LHW'[-nd:] if nd == 1 else 'HW')}) "
                   f"= {nd + 1} dimensions")
    cout, cin_g = weight.shape[:2]
    if groups < 1 or cout % groups or in_shape[0] != cin_g * groups:
        raise _err(f"node {name!r} is a {kind} with weight {tuple(weight.shape)} and groups "
                   f"{groups}, fed {in_shape[0]} channels (shape {tuple(in_shape)}); expected "
                   f"{cin_g * groups} input channels (weight.shape[1] x groups)")
    k = weight.shape[2:]
    s = _tuple(stride, nd, "stride", name)
    d = _tuple(dilation, nd, "dilation", name)
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
        total = tuple(2 * p for p in pad)
    out = tuple((L + t - di * (ki - 1) - 1) // si + 1
                for L, t, di, ki, si in zip(in_shape[1:], total, d, k, s, strict=True))
    if any(o < 1 for o in out) or any(v < 1 for v in s + d):
        raise _err(f"node {name!r} is a {kind} with kernel {tuple(k)}, stride {s}, padding "
                   f"{pad}, dilation {d} on input {tuple(in_shape)}: output size {out}; "
                   "expected every output size >= 1 (a larger input or smaller kernel)")
    return (cout, *out), s, pad, d


MAX_SYNAPSES = 200_000_000
"""Most (output, kernel tap) pairs one convolution may unroll to (about 10 GB of index
arrays while building): the simulator holds every synapse, whatever the chip stores."""


def _conv_coo(weight, in_shape, out_shape, s, pad, d, groups, name="", kind="Conv2d"):
    """(post, pre, w) of a convolution: every (output position, kernel tap) pair whose input
    position is inside the tensor (zero padding drops the others)."""
    nd = weight.ndim - 2
    cout, cin_g = weight.shape[:2]
    k = weight.shape[2:]
    pairs = int(np.prod(out_shape)) * cin_g * int(np.prod(k))
    if pairs > MAX_SYNAPSES:
        raise _err(f"node {name!r} is a {kind} of {pairs:,} synapses (outputs {tuple(out_shape)}"
                   f" x {cin_g * int(np.prod(k))} taps); the simulator unrolls at most "
                   f"{MAX_SYNAPSES:,} per layer: use a smaller input or more stride")
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
                              node.dilation, int(node.groups))[0]
    if isinstance(node, (nir.SumPool2d, nir.AvgPool2d)):
        c = in_shape[0] if len(in_shape) == 3 else 0
        w = np.ones((max(c, 1), 1, *_tuple(node.kernel_size, 2, "kernel_size", name)))
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


def linear_map(name: str, node, in_shape) -> tuple[sp.csr_matrix, np.ndarray | None]:
    """``(W, b)``: the node as ``y = W x + b`` on C-order flat vectors (``b`` None: no bias)."""
    import nir
    in_shape = _unbatched(node, in_shape)
    n_in = int(np.prod(in_shape))
    shape = out_shape(name, node, in_shape)
    n_out = int(np.prod(shape))
    if isinstance(node, (nir.Linear, nir.Affine)):
        W = sp.csr_matrix(np.asarray(node.weight, np.float64))
        # an Affine's bias: None is no bias, one value is the same for every output
        b = np.asarray(node.bias, np.float64).ravel() \
            if isinstance(node, nir.Affine) and node.bias is not None else None
        if b is not None and b.size == 1:
            b = np.full(n_out, b[0])
        if b is not None and b.size != n_out:
            raise _err(f"node {name!r} is an Affine with bias of {b.size} values; expected "
                       f"{n_out} (weight.shape[0]) or one")
        return W, b
    if isinstance(node, (nir.Conv1d, nir.Conv2d)):
        w = np.asarray(node.weight, np.float64)
        _, s, pad, d = _conv_geometry(name, node_kind(node), in_shape, w, node.stride,
                                      node.padding, node.dilation, int(node.groups))
        post, pre, wv = _conv_coo(w, in_shape, shape, s, pad, d, int(node.groups), name,
                                  node_kind(node))
        W = sp.csr_matrix((wv, (post, pre)), shape=(n_out, n_in))
        bias = np.asarray(node.bias, np.float64).ravel() if node.bias is not None else None
        if bias is not None and bias.size not in (0, 1, w.shape[0]):
            raise _err(f"node {name!r} is a {node_kind(node)} with bias of {bias.size} values; "
                       f"expected {w.shape[0]} (one per output channel)")
        b = None if bias is None or not bias.size or not np.any(bias) else \
            np.repeat(np.broadcast_to(bias, (w.shape[0],)), n_out // w.shape[0])
        return W, b
    if isinstance(node, (nir.SumPool2d, nir.AvgPool2d)):
        c = in_shape[0]
        k = _tuple(node.kernel_size, 2, "kernel_size", name)
        value = 1.0 if isinstance(node, nir.SumPool2d) else 1.0 / float(np.prod(k))
        w = np.full((c, 1, *k), value)
        _, s, pad, d = _conv_geometry(name, node_kind(node), in_shape, w, node.stride,
                                      node.padding, 1, c)
        post, pre, wv = _conv_coo(w, in_shape, shape, s, pad, d, c, name, node_kind(node))
        return sp.csr_matrix((wv, (post, pre)), shape=(n_out, n_in)), None
    if isinstance(node, nir.Scale):
        scale = np.broadcast_to(np.asarray(node.scale, np.float64).ravel(), (n_in,))
        return sp.diags(scale, format="csr"), None
    return sp.identity(n_in, format="csr"), None   # Flatten: the same C-order vector


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
