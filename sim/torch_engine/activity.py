"""Layer records and NeuroBench activity counts of the modules a counting block runs.

:class:`LayerRecorder` is called by the :class:`~sim.torch_engine.scopes.ScopeTracker` when a
module's forward starts and ends. It records every *leaf* module that ran (one without
children: what torchinfo's per-layer summary lists with parameters, and where every op of a
container's forward lands anyway) with :meth:`sim.ledger.Ledger.record_layer`, and counts,
under the scope the layer's ops land in (``infer/net.0/forward``), NeuroBench's activity
(Yik et al., "NeuroBench: A Framework for Benchmarking Neuromorphic Computing Algorithms and
Systems", Nature Communications 2025, arXiv:2304.04640, Methods "Complexity metrics"), with
the definitions of its reference harness:

* connection layers are ``nn.Linear`` and ``nn.Conv1d/2d/3d``; per call, ``dense_synops``
  counts every (input, weight) pair that reaches an output (a convolution's padded
  positions are not inputs, so border outputs count fewer), ``effective_*`` the pairs whose
  input and weight are both non-zero; a call whose every input is 0, 1 or -1 is spiking and
  its pairs are accumulates (``effective_acs``), otherwise multiply-accumulates
  (``effective_macs``). Biases are not synaptic operations.
* activation layers are ``nn.ReLU``, ``nn.Sigmoid`` and snnTorch's spiking neurons
  (``snntorch.SpikingNeuron``, when snnTorch is installed): ``activations`` counts their
  output elements (the spikes, for a neuron), ``activations_zero`` the zeros among them.
* ``membrane_updates``: for a spiking neuron, every element of its membrane on its first
  call in the block and, on later calls, the elements whose membrane changed.

Nothing here loops over elements in Python. A Linear's effective pairs are the batch's
non-zero-input indicators dotted with each input column's count of non-zero weights; a
convolution's are ``sum(mask * F)``, where ``F[c, position]`` counts the non-zero weights
input ``(c, position)`` meets, the gradient of ``sum(conv(x, weight != 0))`` with respect to
``x`` (one single-sample convolution and its backward per layer, input shape and weight
version, cached for the block; the module's own padding mode is honoured).

The counts are computed with the counting dispatch mode suspended, so they cost no ops in
the ledger.

Off the CPU (CUDA) the counts stay on the device until the block ends (*deferred*): each
call adds 0-dim tensors to per-scope sums, and :meth:`LayerRecorder.flush` reads them all
back with one copy. Reading a count back per layer (``int(t)``) makes the host wait for
every kernel queued before it, so torch's host-side work and the GPU's no longer overlap:
a training step with ten layers waited ten times (issue 36). Nothing in a deferred call
turns a device value into a Python number: which way a call counts is not decided on the
host but as arithmetic (a spiking input's pairs go to ``effective_acs`` times 1 and to
``effective_macs`` times 0; the ledger drops zero counts), and the shortcuts that need a
host decision (no zero weight: every non-zero input meets them all) are replaced by the
general count, which equals them. The CPU keeps the host path (numpy is faster there, and
nothing waits); ``LayerRecorder.defer_on_cpu = True`` runs the deferred path on the CPU
too, as the tests do, so both paths are checked against the same hand counts and
NeuroBench's own.
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn
from torch._C import _functorch
from torch.utils._python_dispatch import _disable_current_modes

from sim.torch_engine.costs import is_packed_weights, packed_weights, tensor_bytes
from sim.torch_engine.nested import stacked_values


def _host_array(t: torch.Tensor) -> np.ndarray | None:
    """``t`` as a numpy view when it lives on the CPU in a dtype numpy has, else None."""
    if t.device.type != "cpu" or t.dtype in (torch.bfloat16,) or t.is_complex():
        return None
    try:
        return t.detach().numpy()
    except (RuntimeError, TypeError):    # conjugate, negative or other views numpy lacks
        return None


def count_nonzero(t: torch.Tensor) -> int:
    """Non-zero elements of ``t`` (-0.0 is zero, NaN is not, as torch counts them). On the
    CPU numpy's count of the ``!= 0`` mask: torch's count took 3.1 ms on a 64 x 16 x 26 x 26
    float tensor on one core, numpy's count of the floats 0.3 ms, of their mask 0.08 ms
    (numpy counts a float array element by element, a bool mask in wide words; issue 36)."""
    a = _host_array(t)
    if a is None:
        return int(torch.count_nonzero(t))
    return _host_nonzero(a)


def _host_nonzero(a: np.ndarray) -> int:
    """:func:`count_nonzero` of a host array."""
    return int(np.count_nonzero(a if a.dtype == np.bool_ else a != 0))


def _has_zero(a: np.ndarray) -> bool:
    """Some element of ``a`` is 0 (or -0.0; NaN is not): the ``== 0`` mask's any(), 2x
    faster than ``not np.all(a)`` on a float array."""
    return bool((a == 0).any()) if a.dtype != np.bool_ else not a.all()


_SPIKE_VALUES = (0, 1, -1)


def _not_spikes(a: np.ndarray) -> bool:
    """Some element of ``a`` is other than 0 and +-1: ``|a| (|a| - 1)`` is 0 exactly there
    (NaN and inf give non-zero products; integers: modulo 2^bits only at 0 and 1, coprime
    factors)."""
    a = np.abs(a)
    return bool(np.any(a * (a - 1)))


_SAMPLES: dict[int, np.ndarray] = {}


def sample_index(size: int) -> np.ndarray:
    """The 64 positions of the flat tensor :func:`is_spiking` tests first: ``size`` times the
    fractional parts of ``k`` times the golden ratio, ``k = 0 .. 63`` (a Weyl sequence:
    spread over the whole tensor and, within each sample of a batch, over its channels and
    positions). Any even stride meets one feature in every sample when it is close to a
    multiple of the sample's size: ``size // 64`` put every sampled element of a 128 x 1000
    ReLU output in column 0, and the odd stride that replaced it (2707 for a 64 x 16 x 13 x
    13 pooled activation, 2704 elements a sample) every one in channel 0; one dead unit or
    channel passed the sample and the whole tensor was tested, ~0.3-0.5 ms a call (issue
    36). Kept per size."""
    idx = _SAMPLES.get(size)
    if idx is None:
        if len(_SAMPLES) > 1024:   # a model fed ever-new shapes: start again
            _SAMPLES.clear()
        frac = np.mod(np.arange(64) * 0.6180339887498949, 1.0)
        idx = _SAMPLES[size] = np.minimum((frac * size).astype(np.int64), size - 1)
    return idx


def is_spiking(x: torch.Tensor) -> bool:
    """Every element 0 or +-1 (|x| equals its non-zero indicator). numpy on the CPU
    (torch.equal of the two tensors took 3 ms on the tensor above), torch elsewhere. A
    sample of 64 elements spread over the tensor (:func:`sample_index`) is tested first:
    one element other than 0 and +-1 settles it (the usual case of real-valued inputs:
    2.5 ms -> 0.01 ms for the tensor above); otherwise every element is tested."""
    a = _host_array(x)
    if a is None:
        return bool(torch.equal(x.abs(), (x != 0).to(x.dtype)))
    return _host_spiking(a)


def _host_spiking(a: np.ndarray) -> bool:
    """:func:`is_spiking` of a host array."""
    if a.dtype == np.bool_:
        return True
    flat = a.reshape(-1)       # a view when contiguous, else a copy
    # the sample in plain Python: a handful of numpy calls on 64 elements cost more than
    # the loop, which usually stops at the first element (``in`` compares by ==: -0.0 is 0,
    # NaN matches nothing)
    if flat.size > 64 and any(v not in _SPIKE_VALUES
                              for v in flat[sample_index(flat.size)].tolist()):
        return False
    return not _not_spikes(flat)


def quantized_layer(mod: nn.Module) -> str | None:
    """``"conv"``, ``"dense"`` or ``"layer"`` for a torch.ao quantized layer that holds
    packed weights (a converted or dynamic model's convolutions, Linears, embeddings,
    LSTMs and GRUs: no ``nn`` layer class, no ``parameters()``, and the Linears, embeddings
    and RNNs keep their packed weights in child modules), None for any other module. Reads
    only the torch.ao modules already imported: a model made of them imported them."""
    quantized = sys.modules.get("torch.ao.nn.quantized")
    if quantized is None:
        return None
    if isinstance(mod, quantized.modules.conv._ConvNd):
        return "conv"
    if isinstance(mod, quantized.modules.linear.Linear):   # dynamic and fused ones too
        return "dense"
    if isinstance(mod, quantized.modules.embedding_ops.Embedding):
        return "layer"
    dynamic = sys.modules.get("torch.ao.nn.quantized.dynamic")
    if dynamic is not None and isinstance(mod, dynamic.modules.rnn.RNNBase):
        return "layer"
    return None


def op_class(mod: nn.Module) -> str:
    """The kernel class a deployed inference library runs for leaf ``mod``
    (:data:`sim.ledger.OP_CLASSES`), or "" for a module of no known class. A convolution
    with one input channel per output group and more than one group is depthwise
    (TFLite's DEPTHWISE_CONV_2D, CMSIS-NN's ``arm_depthwise_conv_*``); 1 x 1 (pointwise)
    convolutions are standard convolutions, as TFLite runs them (CONV_2D). torch.ao's
    quantized convolutions and Linears are of their float layers' classes."""
    quantized = quantized_layer(mod)
    if isinstance(mod, nn.modules.conv._ConvNd) or quantized == "conv":
        groups = mod.groups
        return "depthwise_conv" if groups > 1 and groups == mod.in_channels else "conv"
    if isinstance(mod, (nn.Linear, nn.Bilinear)) or quantized == "dense":
        return "dense"
    for classes, name in _OP_CLASS_OF:
        if isinstance(mod, classes):
            return name
    return ""


_OP_CLASS_OF = (
    ((nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd,
      nn.modules.pooling._AdaptiveAvgPoolNd, nn.modules.pooling._AdaptiveMaxPoolNd,
      nn.modules.pooling._LPPoolNd), "pooling"),
    ((nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm), "normalization"),
    ((nn.Softmax, nn.LogSoftmax), "softmax"),
    ((nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.Sigmoid, nn.Tanh, nn.GELU, nn.SiLU, nn.ELU,
      nn.Hardswish, nn.Hardsigmoid, nn.PReLU), "activation"),
    ((nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout, nn.ZeroPad2d, nn.ConstantPad2d),
     "elementwise"),
)

CONNECTION_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
"""NeuroBench's stateless connection layers (neurobench.blocks.layer.STATELESS_LAYERS)."""

RECURRENT_CELLS = (nn.RNNCell, nn.LSTMCell)
"""The recurrent cells whose synaptic operations NeuroBench defines and this engine counts
(neurobench.blocks.layer.RECURRENT_CELLS also lists GRUCell, whose formula there reads the
input bias of one gate element for all; not reproduced). Whole recurrent layers
(nn.RNN / LSTM / GRU) have no NeuroBench definition (it raises for them): their products
are in the ledger's MACs, not in the activity."""

ACTIVATION_LAYERS: tuple[type, ...] = (nn.ReLU, nn.Sigmoid)
"""NeuroBench's default activation layers (neurobench.blocks.activation), plus snnTorch's
neurons below when snnTorch is installed (NeuroBench adds them for snnTorch models)."""
try:   # snnTorch is optional (the ``export`` extra)
    from snntorch import SpikingNeuron as _SpikingNeuron
except ImportError:   # pragma: no cover - depends on the environment
    _SpikingNeuron = None
else:
    ACTIVATION_LAYERS = ACTIVATION_LAYERS + (_SpikingNeuron,)


def is_spiking_neuron(mod: nn.Module) -> bool:
    return _SpikingNeuron is not None and isinstance(mod, _SpikingNeuron)


_KINDS: dict[type, tuple] = {}


def _kinds(mod: nn.Module) -> tuple[bool, bool, bool, bool, str | None, bool]:
    """(spiking neuron, connection layer, activation layer, recurrent cell, op class,
    quantized layer with packed weights) of ``mod``'s class: what
    :meth:`LayerRecorder.leave` asks of every call, looked up once per class (isinstance
    answers by class alone; issue 36). The op class is None for a convolution, whose class
    (depthwise or not) depends on its groups and channels."""
    cls = type(mod)
    kinds = _KINDS.get(cls)
    if kinds is None:
        quantized = quantized_layer(mod)
        conv = isinstance(mod, nn.modules.conv._ConvNd) or quantized == "conv"
        kinds = _KINDS[cls] = (is_spiking_neuron(mod), isinstance(mod, CONNECTION_LAYERS),
                               isinstance(mod, ACTIVATION_LAYERS),
                               isinstance(mod, RECURRENT_CELLS),
                               None if conv else op_class(mod), quantized is not None)
    return kinds


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for t in x:
            found = _first_tensor(t)
            if found is not None:
                return found
    return None


def _values(t: torch.Tensor | None) -> torch.Tensor | None:
    """The values the activity counts read: a quantized tensor's dequantized ones (a
    ReLU or Sigmoid of a torch.ao static quantized model runs on quint8 tensors, which
    have no count_nonzero: its counting raised NotImplementedError). Exact for what is
    counted: ``scale * (q - zero_point)`` is 0 exactly where ``q`` is the zero point."""
    if t is not None and t.is_nested:
        # a nested tensor's components (sequences of different lengths): their rows
        # stacked, as a batch of rows (it has no count_nonzero of its own)
        rows = stacked_values(t)
        return rows if rows is not None else torch.cat([u.reshape(-1) for u in t.unbind()])
    return t.dequantize() if t is not None and t.is_quantized else t


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    """A layer output's shape for its record; a nested tensor's as its stacked rows (its
    component count where they differ beyond the first dimension)."""
    if not t.is_nested:
        return tuple(t.shape)
    rows = stacked_values(t)
    return tuple(rows.shape) if rows is not None else (t.size(0),)


def _neuron_output(mod: nn.Module, out):
    """The spikes of an snnTorch neuron's output, as NeuroBench's NeuronHook takes them."""
    if getattr(mod, "init_hidden", False) and not getattr(mod, "output", False) \
            and not isinstance(out, tuple):
        return out
    return _first_tensor(out)


def uninitialized_parameters(module: nn.Module) -> list[str]:
    """The names of ``module``'s parameters and buffers that a lazy layer (``nn.LazyLinear``,
    ``nn.LazyConv2d`` ...) has not sized yet: they have no shape until a first forward."""
    from torch.nn.parameter import is_lazy
    return [n for n, t in [*module.named_parameters(), *module.named_buffers()] if is_lazy(t)]


def model_facts(module: nn.Module, counted: set[int] | None = None) -> dict[str, int]:
    """:data:`sim.ledger.MODEL_FACTS` of a torch module (NeuroBench's Footprint,
    ParameterCount and ConnectionSparsity: the weights of Linear/Conv layers, biases not
    included, and those of recurrent layers and cells with their biases). A torch.ao
    quantized model's packed weights, which are no ``parameters()``, count as parameters at
    the bytes they are stored in (:func:`sim.torch_engine.costs.packed_weights`).

    ``counted``: ids of tensors (and packed-weight objects) already counted in another
    model of the same run; they are skipped here and this model's are added, so weights two
    models share (a tied embedding, a backbone two heads use) count once."""
    counted = set() if counted is None else counted
    before = set(counted)     # another model's tensors (a computed weight is never one)

    def new(t) -> bool:
        if id(t) in counted:
            return False
        counted.add(id(t))
        return True

    params = [p for p in module.parameters() if new(p)]
    buffers = [b for b in module.buffers() if new(b)]
    weights = zeros = 0
    # device -> non-zero counts of the weights on it, off the CPU: read back together, one
    # wait per device instead of one per layer
    on_device: dict[torch.device, list[torch.Tensor]] = {}
    with torch.no_grad(), _disable_current_modes():
        for mod in module.modules():
            if isinstance(mod, CONNECTION_LAYERS):
                tensors = [mod.weight]
            elif isinstance(mod, (nn.RNNBase, nn.RNNCellBase)):
                tensors = [p for name, p in mod.named_parameters(recurse=False)
                           if name.startswith(("weight", "bias"))]
            else:
                continue
            for t in tensors:
                if id(t) in before:     # another model's (shared), counted there
                    continue
                weights += t.numel()
                if t.device.type == "meta":
                    # no values (torch.func's ensemble template, a module built on the
                    # meta device): its weights count, none of them as zero
                    continue
                if t.device.type == "cpu":
                    zeros += t.numel() - count_nonzero(t)
                else:
                    zeros += t.numel()
                    on_device.setdefault(t.device, []).append(torch.count_nonzero(t))
        zeros -= sum(int(torch.stack(counts).sum()) for counts in on_device.values())
        # a torch.ao quantized model's weights are packed, no parameters: counted as
        # stored; a quantized Linear's or convolution's weight (not its bias) and a dynamic
        # RNN cell's weights and biases are connection weights, as the float layers' are
        stored = []   # (elements, bytes as stored) of each packed tensor
        for obj in packed_parameters(module):
            if not new(obj):
                continue
            kind = obj._type().qualified_name()
            connection = not kind.endswith("EmbeddingPackedParamsBase")
            cell = kind.endswith(".CellParamsBase")
            for p in packed_weights(obj):
                stored.append((p.numel, p.stored))
                if connection and (cell or not p.bias):
                    weights += p.numel
                    zeros += p.zeros
    # a sparse tensor (a graph's adjacency buffer) holds its stored values and indices,
    # not its dense shape's elements
    return {"parameters": sum(p.numel() if p.layout is torch.strided else p._nnz()
                              for p in params) + sum(n for n, _ in stored),
            "parameter_bytes": tensor_bytes(params) + sum(b for _, b in stored),
            "buffer_bytes": tensor_bytes(buffers),
            "connection_weights": weights, "connection_zero_weights": zeros}


def packed_size(module: nn.Module) -> tuple[int, int]:
    """(elements, bytes as stored) of the packed weights of ``module``'s torch.ao quantized
    layers, biases included; (0, 0) for a float model."""
    sizes = [(p.numel, p.stored) for obj in packed_parameters(module)
             for p in packed_weights(obj)]
    return sum(n for n, _ in sizes), sum(b for _, b in sizes)


def packed_parameters(module: nn.Module) -> list[torch.ScriptObject]:
    """The packed-weight objects of ``module``'s torch.ao quantized layers (a converted
    model's Linears, convolutions, embeddings, ``quantize_dynamic``'s LSTM and GRU cells:
    :func:`sim.torch_engine.costs.packed_weights`), each once."""
    found: dict[int, torch.ScriptObject] = {}
    for mod in module.modules():
        for value in vars(mod).values():
            if isinstance(value, torch.ScriptObject) and is_packed_weights(value):
                found.setdefault(id(value), value)
    return list(found.values())


_COUNT = torch.float32
"""The dtype the 0/1 products of the synaptic-operation counts are computed in: whole numbers
are exact in it to 2^24 (a count of weights one input meets, one gate's pairs); totals
larger than that are summed in float64."""


def cell_synops(mod: nn.Module, args: tuple, dense: bool, as_tensor: bool = False):
    """NeuroBench's synaptic operations of one call of an RNN or LSTM cell (its
    ``single_layer_MACs``): inputs, states and weights taken as 0/1 (all ones for the
    ``dense`` count), the products of both projections whose input and weight are both
    non-zero, and for an LSTM cell the gate products after them: ``f c + i g`` (each
    product whose two gates, as 0/1 after the biases, are non-zero) and ``o tanh(c)``.
    States not passed are zero: no recurrent products. As NeuroBench does, an LSTM's
    ``(h, c)`` stay 0/1 in the dense count too (its ``cylce_tuple_ones`` fills only the
    outer tuple's tensors with ones), so Dense equals NeuroBench's value. An int, or with
    ``as_tensor`` the 0-dim tensor on the cell's device (not read back)."""
    def bits(t: torch.Tensor) -> torch.Tensor:
        # 0/1 in float32 whatever the model's dtype: half and bfloat16 hold whole numbers
        # only to 2048 and 256, and a gate's count of pairs can exceed both
        return torch.ones_like(t, dtype=_COUNT) if dense else (t != 0).to(_COUNT)

    def state_bits(t: torch.Tensor) -> torch.Tensor:
        return (t != 0).to(_COUNT) if isinstance(mod, nn.LSTMCell) else bits(t)

    x = args[0]
    states = args[1] if len(args) > 1 and args[1] is not None else None
    xb = bits(x).reshape(-1, x.shape[-1])                               # (batch, in)
    gates = bits(mod.weight_ih) @ xb.T                                  # (G x hidden, batch)
    if states is not None:
        h = states[0] if isinstance(mod, nn.LSTMCell) else states
        gates = gates + bits(mod.weight_hh) @ state_bits(h).reshape(-1, h.shape[-1]).T
    total = gates.sum(dtype=torch.float64)   # float32 sums lose whole numbers past 2^24
    if isinstance(mod, nn.LSTMCell):
        if mod.bias:
            gates = gates + (bits(mod.bias_ih) + bits(mod.bias_hh))[:, None]
        i, f, g, o = (gates != 0).to(gates.dtype).reshape(4, mod.hidden_size, -1)
        c = i * g
        if states is not None:
            c = c + f * state_bits(states[1]).reshape(-1, mod.hidden_size).T
        total = (total + c.sum(dtype=torch.float64)
                 + (o * (c != 0)).sum(dtype=torch.float64))
    return total if as_tensor else int(total)


_PLAIN_DISPATCH = torch.Tensor.__torch_dispatch__

UNCOUNTED_ACTIVITY = "neurobench_activity_under_vmap"
"""The ledger's uncounted entry for a layer call whose NeuroBench activity is not counted:
inside ``torch.func.vmap`` over the layer's weights (an ensemble), or of a spiking neuron
or recurrent cell (their state) inside a torch.func transform."""


def _wrapped(t) -> bool:
    """``t`` is a torch.func (functorch) wrapper: grad's or vmap's."""
    return isinstance(t, torch.Tensor) and _functorch.is_functorch_wrapped_tensor(t)


def _physical(t: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The plain tensor under ``t``'s torch.func wrappers and how many vmap levels batch
    it: each level's batch dimension moved to the front (the outermost first)."""
    levels = 0
    while _functorch.is_functorch_wrapped_tensor(t):
        if _functorch.is_batchedtensor(t):
            t, bdim = _functorch._unwrap_batched(t, _functorch.maybe_get_level(t))
            if bdim is not None:
                t = t.movedim(bdim, levels)
                levels += 1
        else:
            t = _functorch.get_unwrapped(t)
    return t, levels


def _unwrapped(x, y, w, kinds) -> tuple | None:
    """(x, y, w) of a layer call inside torch.func's grad or vmap as the plain tensors they
    wrap, vmap's samples joined into the batch: a Linear's rows, a convolution's batch (or,
    for an unbatched convolution input, the batch). None when the counts would need more:
    weights batched by vmap (one layer per sample), a spiking neuron's or recurrent cell's
    state."""
    if kinds[0] or kinds[3]:
        return None
    w, w_levels = _physical(w) if w is not None else (None, 0)
    if w_levels:
        return None
    logical = x
    if x is not None:
        x, levels = _physical(x)
        if levels > 1:
            x = x.flatten(0, levels - 1)
        if levels and w is not None and w.dim() > 2 and logical.dim() == w.dim():
            x = x.flatten(0, 1)      # a batched convolution input: vmap's samples join it
    if y is not None:
        y = _physical(y)[0]
    return x, y, w


def _suspended(mod: nn.Module, x, y, kinds):
    """A context in which the activity counts' torch ops reach no dispatch mode. A Linear,
    convolution or activation layer on tensors that do not dispatch to Python themselves
    (plain tensors and parameters): torch's C++ guard that turns Python dispatch off for the
    thread, 2 us; otherwise (neurons and cells read more of the module, a tensor subclass
    must still dispatch to itself): every mode popped and pushed back, 9 us of Python
    (issue 36)."""
    if not (kinds[0] or kinds[3]) and all(
            not isinstance(t, torch.Tensor) or type(t).__torch_dispatch__ is _PLAIN_DISPATCH
            for t in (x, y, getattr(mod, "weight", None))):
        return torch._C._DisableTorchDispatch()
    return _disable_current_modes()


class LayerRecorder:
    """Per-block layer records and activity tallies; the engine flushes them at block end.

    ``scope_of(path)`` gives the ledger scope an op of layer ``path`` lands in (the
    counting mode's rule, so activity and ops share scopes). A call on tensors off the CPU
    is counted deferred (the module's docstring); :meth:`flush` before reading
    ``activity``.
    """

    defer_on_cpu = False
    """Count calls on CPU tensors deferred too (the tests run both paths on the CPU)."""

    def __init__(self, scope_of, writes_to=None):
        self.scope_of = scope_of
        # writes_to(tensor): ops of the block that wrote its storage (the engine's); with
        # ``_version`` it tells when weights changed (see ``_weights_state``)
        self.writes_to = writes_to
        # path -> (type, shape, params, op class)
        self.layers: dict[str, tuple[str, tuple, int, str]] = {}
        self.activity: dict[str, dict[str, int]] = {}          # scope -> name -> count
        # (scope, name) -> 0-dim int64 tensor: deferred counts, on the device until flush()
        self._pending: dict[tuple[str, str], torch.Tensor] = {}
        self.roots: list[nn.Module] = []    # outermost modules run, in order (no duplicates)
        self._seen_neurons: set[int] = set()   # id() of neurons called once in this block
        self._pre_mem: dict[int, torch.Tensor | None] = {}
        # (id, shape, all?) -> (version, fan-out, its host array, its sum): see _fan_out
        self._conv_f: dict[tuple, tuple] = {}
        self._columns: dict[int, tuple] = {}   # id(Linear) -> ((id, weight version), counts)
        self._dense_weights: dict[int, tuple] = {}   # id(layer) -> ((id, version), no zero)
        # scope -> calls whose activity is not counted (:data:`UNCOUNTED_ACTIVITY`)
        self.uncounted: dict[str, int] = {}

    # -- tracker callbacks -------------------------------------------------------------
    def enter(self, mod: nn.Module, path: str, args) -> None:
        if path == "" and not any(m is mod for m in self.roots):
            self.roots.append(mod)
        if _kinds(mod)[0]:
            mem = getattr(mod, "mem", None)
            self._pre_mem[id(mod)] = mem if isinstance(mem, torch.Tensor) else None

    def leave(self, mod: nn.Module, path: str, args, out) -> None:
        kinds = _kinds(mod)
        neuron = kinds[0]
        # containers: their ops land in their leaves (the module's own registry rather than
        # the children() generator: this runs on every module call, issue 36). A layer of a
        # kind NeuroBench counts is one with children too, as NeuroBench's hooks take it: a
        # Linear or convolution under weight_norm / spectral_norm (its parametrizations are
        # children), a spiking neuron that holds its recurrent connection (snnTorch's RLeaky,
        # RSynaptic; the connection is counted as the Linear or convolution it is)
        counted = neuron or kinds[1] or kinds[2] or kinds[3]
        if not (counted or kinds[5]) and any(m is not None for m in mod._modules.values()):
            return
        y = _neuron_output(mod, out) if neuron else _first_tensor(out)
        params = sum(p.numel() for p in mod._parameters.values() if p is not None)
        if kinds[5]:   # a torch.ao quantized layer: its packed weights are its parameters
            params += packed_size(mod)[0]
        # a TorchScript module's registry is no dict (no .get): a scripted or frozen module
        # with no children (torch.jit.freeze, a scripted Linear) reaches here
        children = mod._modules
        parametrized = children["parametrizations"] if "parametrizations" in children else None
        if parametrized is not None:   # the tensors a parametrized weight is made of
            params += sum(p.numel() for p in parametrized.parameters())
        if path or params:   # a parameter-free root (a loss) is no layer of the model
            shape = () if y is None else _shape(y)
            self.layers.pop(path, None)           # re-insert: recording order = last call
            op = kinds[4]
            self.layers[path] = (type(mod).__name__, shape, params,
                                 op_class(mod) if op is None else op)
        # activity: the counts run torch ops, with the counting mode suspended; layers with
        # no activity (pooling, flatten, ...) skip entering it (issue 36)
        if counted:
            x = _first_tensor(args)
            w = mod.weight if kinds[1] else None
            with torch.no_grad(), _suspended(mod, x, y, kinds):
                if _wrapped(x) or _wrapped(y) or _wrapped(w):
                    # inside torch.func's grad or vmap (per-sample gradients): the tensors
                    # are functorch wrappers, which have no storage and no numpy view (the
                    # count raised NotImplementedError); counted on the tensors they wrap
                    plain = _unwrapped(x, y, w, kinds)
                    if plain is None:
                        scope = self.scope_of(path)
                        self.uncounted[scope] = self.uncounted.get(scope, 0) + 1
                        return
                    x, y, w = plain
                self._activity(mod, path, args, _values(x), _values(y), kinds, w)

    # -- one leaf call's activity --------------------------------------------------------
    def _activity(self, mod, path, args, x, y, kinds, w) -> None:
        scope = self.scope_of(path)
        neuron, connection, activation, recurrent = kinds[:4]
        t = x if x is not None else y
        if t is not None and (t.device.type != "cpu" or self.defer_on_cpu):
            self._deferred_activity(mod, scope, args, x, y, kinds, w)
            return
        if connection and x is not None:
            xa = _host_array(x)   # once for the counts below (None off the CPU)
            dense, effective = self._synops(mod, w, x, xa)
            # spikes: every element 0 or +-1, i.e. |x| equals its non-zero indicator
            spiking = is_spiking(x) if xa is None else _host_spiking(xa)
            self._add(scope, "dense_synops", dense)
            self._add(scope, "effective_acs" if spiking else "effective_macs", effective)
        if recurrent and x is not None:
            self._add(scope, "dense_synops", cell_synops(mod, args, dense=True))
            self._add(scope, "effective_acs" if is_spiking(x) else "effective_macs",
                      cell_synops(mod, args, dense=False))
        if activation and y is not None:
            self._add(scope, "activations", y.numel())
            self._add(scope, "activations_zero", y.numel() - count_nonzero(y))
        if neuron:
            self._membrane(mod, scope)

    def _deferred_activity(self, mod, scope, args, x, y, kinds, w) -> None:
        """:meth:`_activity` with every data-dependent count a 0-dim tensor on ``x``'s device,
        added to ``_pending`` (no host sync; the module's docstring)."""
        neuron, connection, activation, recurrent = kinds[:4]
        if connection and x is not None:
            dense, effective = self._deferred_synops(mod, w, x)
            self._add(scope, "dense_synops", dense)
            self._add_split(scope, x, effective)
        if recurrent and x is not None:
            self._add(scope, "dense_synops",
                      cell_synops(mod, args, dense=True, as_tensor=True))
            self._add_split(scope, x, cell_synops(mod, args, dense=False, as_tensor=True))
        if activation and y is not None:
            self._add(scope, "activations", y.numel())
            self._pend(scope, "activations_zero",
                       y.numel() - torch.count_nonzero(y))
        if neuron:
            self._membrane(mod, scope, deferred=True)

    def _add_split(self, scope: str, x: torch.Tensor, effective: torch.Tensor) -> None:
        """A call's effective pairs under ``effective_acs`` when ``x`` is spikes (every
        element 0 or +-1; a bool tensor is), else ``effective_macs``, decided on the device:
        the pairs times 1 under one name and times 0 under the other."""
        if x.dtype == torch.bool:
            self._pend(scope, "effective_acs", effective)
            return
        # NaN and inf are neither 0 nor +-1 (as in _not_spikes); complex: its magnitude
        not_spikes = ((x != 0) & (x.abs() != 1)).any()
        self._pend(scope, "effective_acs", effective * ~not_spikes)
        self._pend(scope, "effective_macs", effective * not_spikes)

    def _add(self, scope: str, name: str, n) -> None:
        """Add ``n`` to count ``name`` of ``scope``: an int now, a tensor deferred."""
        if isinstance(n, torch.Tensor):
            self._pend(scope, name, n)
            return
        bucket = self.activity.setdefault(scope, {})
        bucket[name] = bucket.get(name, 0) + int(n)

    def _pend(self, scope: str, name: str, n: torch.Tensor) -> None:
        """Add the 0-dim tensor ``n`` to the deferred count ``name`` of ``scope``."""
        key = (scope, name)
        n = n.to(torch.int64)   # a cell's float count: truncated as int() truncates it
        prev = self._pending.get(key)
        self._pending[key] = n if prev is None else prev + n

    def flush(self) -> None:
        """The deferred counts into ``activity``: one copy to the host for all of them."""
        if not self._pending:
            return
        keys = list(self._pending)
        values = torch.stack([self._pending[k] for k in keys]).tolist()
        self._pending.clear()
        for (scope, name), n in zip(keys, values, strict=True):
            self._add(scope, name, n)

    def _membrane(self, mod, scope, deferred: bool = False) -> None:
        post = getattr(mod, "mem", None)
        if not isinstance(post, torch.Tensor):
            return
        pre = self._pre_mem.pop(id(mod), None)
        if id(mod) not in self._seen_neurons or pre is None or pre.shape != post.shape:
            # NeuroBench counts every element on a neuron's first call of a batch
            self._seen_neurons.add(id(mod))
            self._add(scope, "membrane_updates", post.numel())
        elif deferred:
            self._pend(scope, "membrane_updates", torch.count_nonzero(pre - post))
        else:
            self._add(scope, "membrane_updates", int(torch.count_nonzero(pre - post)))

    # -- synaptic operations -----------------------------------------------------------
    def _synops(self, mod, w: torch.Tensor, x: torch.Tensor,
                xa: np.ndarray | None) -> tuple[int, int]:
        """(dense, effective) (input, weight) pairs of one call of a connection layer with
        weights ``w``; ``xa``: ``x`` as a host array, or None."""
        if isinstance(mod, nn.Linear):
            rows = x.numel() // max(x.shape[-1], 1)
            dense = rows * mod.in_features * mod.out_features
            per_column = self._per_column(mod, w)
            if per_column is None:   # no zero weight: each non-zero input meets them all
                nonzero = count_nonzero(x) if xa is None else _host_nonzero(xa)
                return dense, nonzero * mod.out_features
            nz = x != 0
            per_input = nz.reshape(-1, x.shape[-1]).sum(dim=0, dtype=torch.int64)   # (in,)
            # elementwise then sum: CUDA has no int64 matmul
            return dense, int((per_input * per_column).sum())
        unbatched = x.dim() == w.dim() - 1
        sample_shape = tuple(x.shape if unbatched else x.shape[1:])
        batch = 1 if unbatched else x.shape[0]
        f_ones = self._fan_out(mod, w, sample_shape, None)
        # no zero weight (training's usual case): the effective fan-out is the dense one
        f_eff = f_ones if self._dense(mod, w) else self._fan_out(mod, w, sample_shape,
                                                                 w != 0)
        return batch * f_ones[3], self._effective_pairs(x, xa, unbatched, f_eff[1], f_eff[2])

    def _deferred_synops(self, mod, w: torch.Tensor, x: torch.Tensor) -> tuple[int, torch.Tensor]:
        """:meth:`_synops` without a host decision: the effective pairs as a 0-dim tensor,
        by the general count (per non-zero input, its column's or position's non-zero
        weights), which equals the no-zero-weight shortcut when no weight is zero."""
        if isinstance(mod, nn.Linear):
            rows = x.numel() // max(x.shape[-1], 1)
            dense = rows * mod.in_features * mod.out_features
            per_input = (x != 0).reshape(-1, x.shape[-1]).sum(dim=0, dtype=torch.int64)
            return dense, (per_input * self._columns_of(mod, w)).sum()
        unbatched = x.dim() == w.dim() - 1
        sample_shape = tuple(x.shape if unbatched else x.shape[1:])
        batch = 1 if unbatched else x.shape[0]
        dense = batch * self._fan_out(mod, w, sample_shape, None)[3]   # once per shape
        f = self._fan_out(mod, w, sample_shape, w != 0)[1]
        nz = x != 0
        nzs = nz if unbatched else nz.sum(dim=0, dtype=torch.int64)
        return dense, (nzs.to(torch.int64) * f).sum()

    @staticmethod
    def _effective_pairs(x: torch.Tensor, a: np.ndarray | None, unbatched: bool,
                         f: torch.Tensor, fa: np.ndarray | None) -> int:
        """``sum(x != 0 times f)`` over the batch: each input element's non-zero count over
        the batch times the weights it meets (numpy on the CPU: its bool sum over the batch
        took 0.07 ms where torch's took 0.16 ms, 64 x 16 x 13 x 13). ``a``, ``fa``: ``x``
        and ``f`` as host arrays, or None."""
        if a is None or fa is None:
            nz = x != 0
            nzs = nz if unbatched else nz.sum(dim=0)
            return int((nzs.to(torch.int64) * f).sum())
        nz = a != 0
        nzs = nz if unbatched else nz.sum(axis=0, dtype=np.int64)
        return int((nzs * fa).sum())

    def _weights_state(self, w: torch.Tensor) -> tuple:
        """Changes whenever weights ``w`` may have: the tensor, its ``_version`` (bumped
        by in-place ops outside the dispatch mode) and the ops inside it that wrote the
        weights' storage (in-place ``_foreach_`` updates under the mode leave ``_version``
        as it was)."""
        return (id(w), w._version, self.writes_to(w) if self.writes_to is not None else 0)

    def _dense(self, mod, w: torch.Tensor) -> bool:
        """No weight of ``mod`` (``w``) is zero (NaN is not zero); kept while its weights are
        unchanged (an evaluation loop asks once per batch with the same weights; training,
        once per step: one pass over the weights, far cheaper than counting them per
        column)."""
        key = self._weights_state(w)
        dense = self._dense_weights.get(id(mod))
        if dense is None or dense[0] != key:
            a = _host_array(w)   # numpy: 3-5x faster than torch's all() on the CPU
            no_zero = not _has_zero(a) if a is not None else bool(w.all())
            dense = self._dense_weights[id(mod)] = (key, no_zero)
        return dense[1]

    def _per_column(self, mod, w: torch.Tensor) -> torch.Tensor | None:
        """Non-zero weights per input column of a Linear, or None when none is zero; kept
        while its weights are unchanged."""
        if self._dense(mod, w):
            return None
        return self._columns_of(mod, w)

    def _columns_of(self, mod, w: torch.Tensor) -> torch.Tensor:
        """Non-zero weights per input column of a Linear, kept while its weights are
        unchanged."""
        key = self._weights_state(w)
        col = self._columns.get(id(mod))
        if col is None or col[0] != key:
            col = self._columns[id(mod)] = (key, (w != 0).sum(dim=0, dtype=torch.int64))
        return col[1]

    def _fan_out(self, mod, w, sample_shape, wnz) -> tuple:
        """``F[c, position]``: weights (non-zero ones, or all when ``wnz`` is None) that
        each input element meets in one convolution of ``sample_shape`` (``w``: the
        layer's weight), as ``(weights
        version, F, F as a host array or None, F's sum or None)``: the array and the sum
        are taken once with F, not per call (issue 36); the sum, the dense count, only of
        the all-ones F (an int on the CPU, else a 0-dim tensor)."""
        # the non-zero fan-out is kept for the weights' current version only (training
        # changes them every step)
        key = (id(mod), sample_shape, wnz is None)
        version = None if wnz is None else self._weights_state(w)
        f = self._conv_f.get(key)
        if f is None or f[0] != version:
            # 0/1 weights in float32 (float64 weights stay): in half or bfloat16 a count of
            # more than 2048 or 256 weights met would round; float32 is exact to 2^24, and
            # TF32 convolutions round only their inputs, here 0 and 1
            dtype = torch.float64 if w.dtype == torch.float64 else _COUNT
            w01 = (torch.ones_like(w, dtype=dtype) if wnz is None else wnz.to(dtype))
            # the gradient needs autograd, which torch.inference_mode turns off: off here
            # (under inference mode a CNN's count failed, "element 0 of tensors does not
            # require grad"); an inference tensor w is copied into a normal one autograd
            # may save
            with torch.inference_mode(False), torch.enable_grad():
                if w01.is_inference():
                    w01 = w01.clone()
                ones = torch.ones((1, *sample_shape), dtype=w01.dtype, device=w01.device,
                                  requires_grad=True)
                total = mod._conv_forward(ones, w01, None).sum()
                (grad,) = torch.autograd.grad(total, ones)
            fan = grad[0].round().to(torch.int64)
            # the sum is the dense count, of the all-ones fan-out only (the non-zero one is
            # re-made every training step and never summed): numpy's int on the CPU, a 0-dim
            # tensor elsewhere (not read back: deferred)
            fa = _host_array(fan)
            total = None if wnz is not None else int(fa.sum()) if fa is not None \
                else fan.sum()
            f = self._conv_f[key] = (version, fan, fa, total)
        return f
