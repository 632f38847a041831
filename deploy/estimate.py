"""``estimate(model, example_input, profiles=...)``: one call that prices a model of your own.

Public as :func:`neuroedge.estimate` (the facade re-exports it); ``neuroedge estimate`` on the
command line (:mod:`deploy.estimate_cli`) calls it too.

A torch module is counted once by the torch engine (:class:`sim.torch_engine.TorchDevice`)
and its ledger priced on every profile asked: GPUs and CPUs with their execution model,
microcontrollers (``bitwise`` profiles such as ``cortex-m7``) with their own memories
(:mod:`sim.execution.mcu`). The counts do not depend on the profile, so the module runs
once, not once per profile; only the capacity check (:meth:`TorchDevice.compile`) and the
pricing are per profile, and a profile that fails either is listed in
``Estimate.skipped`` with its one-line reason while the others are still priced.
Neuromorphic chips run spiking networks: a NIR graph, a ``.nir`` file or a torch module
with snnTorch neurons goes to :mod:`deploy.nir_estimate`; a plain module skips them.

What runs (the choices torchinfo-like tools leave open):

- inference is ``module(*x)`` in eval mode without gradients, under scope ``infer`` with
  samples = the batch (first dimension of the first input);
- a training step (asked by ``loss``, ``optimizer`` or ``train_step``) is one forward, loss,
  backward and optimizer step in train mode, under ``train`` with the same samples;
- both run on a deep copy of the module on the CPU (counts do not depend on the device
  the ops execute on), so the user's module keeps its weights, mode, device and gradients.
"""
from __future__ import annotations

import copy
import inspect
import math
import os
from collections.abc import Mapping
from contextlib import contextmanager

from deploy import nir_estimate  # light: nir and the engine are imported in its functions
from deploy.cli_args import INPUT_DTYPES
from deploy.estimate_result import Estimate, profile_list
from hw_profiles.errors import NeuroedgeError, ProfileError, first_line
from sim import seeds
from sim.energy_report import BOUNDS
from sim.errors import HardwareLimitError, ModelError, PricingError
from sim.precision import DTYPES, INT8_CONVENTIONS, retyped_int8

TORCH_KINDS = ("gpu", "cpu", "bitwise")   # the kinds sim.device(p, engine="torch") serves
DEFAULT_LR = 0.01   # the default SGD step size; the counts of one step do not depend on it
_CE_NAMES = ("cross_entropy", "nll_loss")


WRAPPER_ROUTE = ("wrap the model in a module whose forward takes only tensors and builds "
                 "what else it passes (a cache, decoder inputs), and estimate that wrapper "
                 "(a wrapper factory: docs/estimate.md)")
"""The way out for a forward that takes more than tensors, or inputs the command line cannot
name: one hint for every message that needs it."""

MAX_DRAWN_INPUT_BYTES = 2 ** 30
"""An example input given as a shape is drawn in float32 only up to this size (1 GiB): a
mistyped shape is refused before anything is allocated."""

SPIKE_PROBABILITY = 0.2
"""Per step and input, of the spikes drawn for a spiking module given only a shape."""


def estimate(model, example_input=None, *, profiles=("a100",), train_step=None, loss=None,
             optimizer=None, target=None, seed: int = 0, strict: bool = False,
             dtype: str = "fp32", stack=None, **nir_options) -> Estimate:
    """Count ``model`` once and price it on every profile in ``profiles``.

    Parameters
    ----------
    model : torch.nn.Module, nir.NIRGraph, or the path of a ``.nir`` file
        A plain module is counted by the torch engine. A module with snnTorch neurons
        inside, a NIR graph and a ``.nir`` path go to
        :func:`deploy.nir_estimate.estimate_spiking_module` /
        :func:`~deploy.nir_estimate.estimate_nir` with ``nir_options``.
    example_input : tensor, array, tuple of tensors, dict of tensors, or a shape such as
        ``(1, 1, 28, 28)``
        What one inference is run on; its first dimension is the batch (the samples the
        per-inference energy divides by). A dict is passed by keyword,
        ``model(**example_input)`` (a ``transformers`` tokenizer's output). A shape is
        filled with standard normal values drawn with ``seed``. Required for torch modules.
    profiles : profile names, paths or HardwareProfiles (a string may list them with commas)
    train_step : callable ``(module, example_input) -> loss tensor``, optional
        One training step of your own; estimate calls ``backward()`` on the loss it returns
        and steps the optimizer.
    loss : callable ``(output, target) -> loss``, ``"cross_entropy"``, ``"mse"`` or
        ``"auto"``, optional
        Asks for one training step with this loss. ``"auto"``: cross-entropy on random
        labels when the output is ``(batch, classes)`` with 2+ classes, else MSE against
        random normal targets. Without ``target``, a cross-entropy loss (``CrossEntropyLoss``,
        ``NLLLoss``, ``F.cross_entropy``, ``F.nll_loss``) gets random labels over the
        output's classes and any other loss random normal targets shaped like the output.
    optimizer : torch optimizer class, or factory ``params -> optimizer``, optional
        Default (when a training step is asked): ``torch.optim.SGD(params, lr=0.01)``.
        An optimizer instance is refused: it holds the user's parameters, and the step
        runs on a copy.
    target : tensor, optional
        The loss's target for the training step.
    seed : int
        Seeds the example input drawn from a shape and the random targets.
    strict : bool
        Refuse (``ModelError``) a model in which any op ran uncounted. Without it such an
        estimate is returned marked: ``Estimate.lower_bound`` is True, ``Estimate.uncounted``
        names the ops and their calls, and the table's first line says so. A model in which
        every op went uncounted is refused either way (it would be priced at 0 J).
    dtype : ``"fp32"`` (default) or ``"int8"``
        The precision the model is priced at. ``"int8"``: the fp32 counts re-typed by
        :func:`sim.precision.retyped_int8` (per-channel int8 weights, per-tensor int8
        activations, int32 accumulators; MACs priced as int8 MACs, other flops as integer
        ops, bytes / 4), and a microcontroller's arena and weights planned at 1 byte per
        value. The notes state the conventions.
    stack : str or dict, optional
        The software stack each profile is priced for (``sim.execution.stacks_of``: eager,
        graph or fused on GPUs and CPUs; peak or a kernel library such as ``xcube-ai-7.3``
        on microcontrollers). A name prices every profile for that stack; ``"a100=graph,
        stm32l4r5=xcube-ai-7.3"`` or a dict ``{profile: stack}`` one per profile, the
        others at their default. None (default): every profile's default stack. Every
        report says which stack it was priced for and whether it was the default.
    **nir_options
        ``stimulus``, ``steps``, ``dt`` ...: forwarded to :mod:`deploy.nir_estimate`.

    Returns
    -------
    Estimate
        ``source="torch"``: one ledger shared by every priced profile, a report per
        profile, ``skipped`` for the profiles that cannot run the model, and ``notes``
        saying what ran (mode, loss, optimizer).

    Raises
    ------
    ModelError
        Uncounted ops with ``strict``, or nothing counted at all; no example input,
        non-finite input, a forward or training step that fails on it,
        a model of a type no engine takes, NIR options for a plain module.
    ProfileError
        An unknown profile, a profile listed twice, or no profiles.
    NeuroedgeError
        A stack that a profile does not have (the message names its stacks), or a stack
        for a NIR graph or spiking module (neuromorphic chips run their own runtime).

    Examples
    --------
    >>> import torch
    >>> est = estimate(torch.nn.Linear(4, 3), torch.zeros(2, 4), profiles=["a100", "cortex-m7"])
    >>> est.ledgers["a100"].total_ops()["mac_fp32"]   # 2 samples x 4 inputs x 3 outputs
    24
    >>> sorted(est.reports)
    ['a100', 'cortex-m7']
    """
    profiles = profile_list(profiles)   # "loihi,loihi2": the same list for every model kind
    spiking_module = _is_torch_module(model) and _is_spiking(model)
    if stack and (isinstance(model, (str, os.PathLike)) or _is_nir_graph(model)
                  or spiking_module):
        raise ModelError(f"estimate: stack={stack!r} applies to torch modules priced on GPUs, "
                         "CPUs and microcontrollers; a neuromorphic chip runs its own runtime "
                         "(stack native): leave stack out")
    if dtype != "fp32" and (isinstance(model, (str, os.PathLike)) or _is_nir_graph(model)
                            or spiking_module):
        raise ModelError(f"estimate: dtype={dtype!r} applies to torch modules without spiking "
                         "neurons; a NIR graph or spiking module runs at the chip's own "
                         "weight precision: leave dtype out")
    trained = [k for k, v in (("train_step", train_step), ("loss", loss),
                              ("optimizer", optimizer), ("target", target)) if v is not None]
    if trained and (isinstance(model, (str, os.PathLike)) or _is_nir_graph(model)
                    or spiking_module):
        # the neuromorphic engine runs inference; these were silently ignored
        raise ModelError(f"estimate: {', '.join(trained)} ask for a training step, which is "
                         "priced for torch modules on GPUs, CPUs and microcontrollers; a NIR "
                         "graph or spiking module runs inference on the neuromorphic engine: "
                         f"leave {', '.join(trained)} out"
                         + (" (--train on the command line)" if "loss" in trained else ""))
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not path.endswith(".nir"):
            raise ModelError(f"estimate: model {path!r} is a path but not a .nir file; pass a "
                             "NIR file (.nir), a nir.NIRGraph or a torch.nn.Module (a Python "
                             "file goes through 'neuroedge estimate FILE.py:factory')")
        if not os.path.isfile(path):
            from hw_profiles.errors import not_a_file
            raise ModelError(f"estimate: NIR file {path!r} {not_a_file(path)}; pass the path "
                             "of a .nir file")
        return _checked(_nir_call("estimate_nir", path, profiles=profiles, seed=seed,
                                  **nir_options), strict)
    if _is_nir_graph(model):
        return _checked(_nir_call("estimate_nir", model, profiles=profiles, seed=seed,
                                  **nir_options), strict)
    import torch
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"estimate: model is a {type(model).__name__}; pass a "
                         "torch.nn.Module, a nir.NIRGraph or the path of a .nir file")
    if spiking_module:
        if isinstance(example_input, Mapping):
            raise ModelError(f"estimate: {type(model).__name__} has spiking neurons and takes "
                             "one spike tensor (time first), not a dict of inputs")
        # time first, (T, n) or (T, 1, n); a shape is drawn here with ``seed`` as spikes
        # (Bernoulli, p = SPIKE_PROBABILITY per step and input), not as normal values
        drawn = _is_shape(example_input)
        xs, _ = example_inputs(example_input, type(model).__name__, seed)
        x = xs[0] if len(xs) == 1 else xs
        if drawn:
            gen = torch.Generator().manual_seed(seeds.child(seed, "example_input", "spikes"))
            x = torch.bernoulli(torch.full(x.shape, SPIKE_PROBABILITY), generator=gen)
        est = _nir_call("estimate_spiking_module", model, x, profiles=profiles, seed=seed,
                        **nir_options)
        if drawn and "stimulus" not in nir_options:   # a stimulus drives it instead
            est.notes = (*est.notes, f"input: random spikes of shape {tuple(x.shape)} (time "
                         f"first), each input spiking with probability {SPIKE_PROBABILITY} "
                         f"per step, seed {seed}")
        return _checked(est, strict)
    if dtype not in DTYPES:
        raise ModelError(f"estimate: dtype {dtype!r} is not known; give one of "
                         f"{', '.join(DTYPES)}")
    if nir_options:
        verb = "applies" if len(nir_options) == 1 else "apply"
        raise ModelError(f"estimate: {', '.join(sorted(nir_options))} {verb} to NIR graphs "
                         f"and spiking modules; {type(model).__name__} is a plain torch "
                         "module (no snnTorch neurons inside): leave them out")
    return _checked(_estimate_torch(model, example_input, profiles, train_step=train_step,
                                    loss=loss, optimizer=optimizer, target=target, seed=seed,
                                    dtype=dtype, stack=stack), strict)


def _checked(est: Estimate, strict: bool) -> Estimate:
    """``est`` unless an op went uncounted under ``strict``, or every op did: a model that
    ran is never priced at 0 J with no word. A profile priced as a lower bound as a whole (a
    model that ran no op: nothing to count) brings its report's notes, which say why."""
    ops = est.uncounted
    if not ops:
        return _with_bound_notes(est)
    names = ", ".join(f"{k} ({n:,} call(s))" for k, n in ops.items())
    ledger = next(iter(est.ledgers.values()))
    if not any(ledger.total_ops().values()):
        raise ModelError(f"estimate: no op of {est.model} could be counted; uncounted: "
                         f"{names}; no cost can be given (file an issue naming these ops)")
    if strict:
        raise ModelError(f"estimate: {est.model} ran {len(ops)} uncounted op(s): {names}; "
                         "its figures would be lower bounds (strict refuses them; drop "
                         "strict to get them marked as lower bounds)")
    return _with_bound_notes(est)


def _with_bound_notes(est: Estimate) -> Estimate:
    """``est`` with the notes of every report that pricing marked a lower bound as a whole
    (``EnergyReport.bound``), once each: its reason is pricing's own words, so the estimate's
    notes pass them on rather than say it again in other words."""
    seen = set(est.notes)
    for r in est.reports.values():
        if r.bound != BOUNDS[1]:
            continue
        for note in r.notes:
            if note not in seen:
                seen.add(note)
                est.notes = (*est.notes, note)
    return est


# -- dispatch ---------------------------------------------------------------------------------
def _is_nir_graph(obj) -> bool:
    # by name: importing nir here would make every torch estimate pay for it
    return type(obj).__name__ == "NIRGraph" and type(obj).__module__.split(".")[0] == "nir"


def _is_spiking(module) -> bool:
    """A module with an snnTorch neuron (a ``SpikingNeuron`` subclass) anywhere inside."""
    return any(c.__name__ == "SpikingNeuron" and c.__module__.startswith("snntorch")
               for m in module.modules() for c in type(m).__mro__)


def _nir_call(name: str, *args, **kwargs) -> Estimate:
    fn = getattr(nir_estimate, name)
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            # one line a command-line user can act on: what the model takes among the
            # options forwarded here, not the function's Python parameters
            what = "a spiking module" if name == "estimate_spiking_module" else "a NIR graph"
            why = {"reset": " (each neuron's reset_mechanism gives it)",
                   "input": " (--input-node: its one Input takes the example input)"}
            taken = [k for k in _NIR_OPTIONS if k in params]
            raise ModelError(f"estimate: {what} takes no "
                             f"{', '.join(k + why.get(k, '') for k in unknown)}; of the NIR "
                             f"options it takes {', '.join(taken)}")
    return fn(*args, **kwargs)


_NIR_OPTIONS = ("stimulus", "steps", "dt", "reset", "input")
"""The options the command line forwards to :mod:`deploy.nir_estimate` (``--input-node``
is ``input``)."""


# -- inputs -----------------------------------------------------------------------------------
def _profiles(profiles) -> list:
    """Load every profile now (an unknown one fails before any work)."""
    from hw_profiles import load_many
    profiles = profile_list(profiles)
    if not profiles:
        raise ProfileError("estimate: profiles is empty; give at least one profile name or "
                           "path, e.g. jetson-orin, cortex-m7 or a100")
    return load_many(profiles)


class ExampleInputs(tuple):
    """The example input's tensors, the positional ones first; the last ``len(names)`` are
    keyword inputs (a dict example input: ``model(**inputs)``)."""

    def __new__(cls, tensors, names: tuple[str, ...] = ()):
        self = super().__new__(cls, tensors)
        self.names = tuple(names)
        return self

    def positional(self) -> tuple:
        return tuple(self[:len(self) - len(self.names)])

    def keywords(self) -> dict:
        return dict(zip(self.names, self[len(self) - len(self.names):], strict=True))

    def call(self, fn):
        """``fn`` (the model) on these inputs."""
        return fn(*self.positional(), **self.keywords())


def example_inputs(example_input, name: str, seed: int, like=None):
    """``example_input`` as a tuple of CPU tensors, checked finite, and its batch size. A
    shape is filled with standard normal values, in the floating dtype of the module
    ``like``'s first floating parameter (a ``.half()`` or bfloat16 model takes its own
    precision), float32 otherwise."""
    import numpy as np
    import torch

    from sim.torch_engine.nested import describe
    if example_input is None:
        raise ModelError(f"estimate: {name} needs example_input, one input batch such as "
                         "torch.zeros(1, 1, 28, 28) or its shape (1, 1, 28, 28)")
    names: tuple[str, ...] = ()     # a dict's keys
    items: tuple = ()

    def where(i: int) -> str:   # an input's name in a message
        return "example_input" + (f"[{names[i]!r}]" if names else
                                  f"[{i}]" if len(items) > 1 else "")
    if _is_shape(example_input):
        dtype = _floating_dtype(like)
        # drawn in float32, then converted: the larger of the two is held
        shape = _drawable(example_input, max(4, dtype.itemsize), str(dtype).split(".")[-1])
        gen = torch.Generator().manual_seed(seeds.child(seed, "example_input"))
        xs = ExampleInputs((torch.randn(shape, generator=gen).to(dtype),))
    else:
        if isinstance(example_input, Mapping):
            # keyword inputs, model(**inputs): the transformers convention (a tokenizer's
            # BatchEncoding: input_ids=, attention_mask=)
            names = tuple(example_input)
            bad = [k for k in names if not isinstance(k, str)]
            if bad or not names:
                raise ModelError(f"estimate: example_input is a dict with "
                                 f"{'no keys' if not names else f'key {bad[0]!r}'}; give "
                                 "keyword names of the forward (input_ids=, attention_mask=) "
                                 "mapped to tensors")
            items = tuple(example_input.values())
        else:
            items = example_input if isinstance(example_input, (tuple, list)) \
                else (example_input,)
        xs = []
        for i, x in enumerate(items):
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(x)
            if not isinstance(x, torch.Tensor):
                # an object a forward parameter takes (a transformers cache, an encoder's
                # outputs) is built inside a wrapper, from tensors
                built = (f"; {type(x).__name__} is no tensor: {WRAPPER_ROUTE}"
                         if type(x).__module__ != "builtins" else "")
                raise ModelError(f"estimate: {where(i)} is a {type(x).__name__}; "
                                 "give tensors or arrays, or a shape of ints such as "
                                 f"(1, 1, 28, 28){built}")
            xs.append(x.detach().to("cpu"))
        xs = ExampleInputs(xs, names)
        if not xs:
            raise ModelError("estimate: example_input is an empty tuple; give one input batch")
    for i, x in enumerate(xs):
        if x.is_floating_point() or x.is_complex():
            # a nested tensor (sequences of different lengths) has no isfinite: its components
            bad = sum(int((~torch.isfinite(u)).sum()) for u in (x.unbind() if x.is_nested
                                                                 else (x,)))
            if bad:
                raise ModelError(f"estimate: {where(i)} of {describe(x)} has {bad} NaN or "
                                 "infinite value(s); give finite numbers")
    batch = int(xs[0].size(0)) if xs[0].dim() else 1
    if batch == 0:   # the command's --input-shape refuses a 0 as well
        raise ModelError(f"estimate: {where(0)} of {describe(xs[0])} holds 0 samples (its "
                         "first dimension, the batch, is 0); give at least one sample")
    return xs, batch


def _drawable(shape, element_bytes: int, dtype_name: str) -> tuple[int, ...]:
    """``shape`` as a tuple, checked before an input of it is drawn: one or more
    dimensions, each >= 1, and at most :data:`MAX_DRAWN_INPUT_BYTES` at ``element_bytes``."""
    shape = tuple(int(d) for d in shape)
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"estimate: example_input shape {shape} must have one or more "
                         "dimensions, each >= 1 (the first is the batch), e.g. (1, 1, 28, 28)")
    nbytes = element_bytes * math.prod(shape)
    if nbytes > MAX_DRAWN_INPUT_BYTES:
        raise ModelError(f"estimate: example_input shape {shape} would take {nbytes:,} "
                         f"bytes in {dtype_name}, over the {MAX_DRAWN_INPUT_BYTES:,}-byte limit "
                         "for a drawn input; give a smaller shape (the batch is the first "
                         "dimension)")
    return shape


def _floating_dtype(module):
    """The dtype of ``module``'s first floating-point parameter or buffer (float32 when it
    has none, or no module is given): what a drawn input is made in."""
    import torch
    if module is not None:
        for t in (*module.parameters(), *module.buffers()):
            if t.is_floating_point():
                return t.dtype
    return torch.float32


def _is_shape(x) -> bool:
    return (isinstance(x, (tuple, list)) and len(x) > 0
            and all(isinstance(d, int) and not isinstance(d, bool) for d in x))


def _shape_text(xs) -> str:
    from sim.torch_engine.nested import describe
    return ", ".join(describe(x).removeprefix("shape ") for x in xs)


# -- the torch path ---------------------------------------------------------------------------
def _estimate_torch(module, example_input, profiles, *, train_step, loss, optimizer, target,
                    seed, dtype, stack=None) -> Estimate:
    import torch

    from sim.torch_engine import TorchDevice
    from sim.torch_engine.activity import packed_size, uninitialized_parameters
    from sim.torch_engine.costs import float_suffix
    name = type(module).__name__
    profs = _profiles(profiles)
    asked = stacks_asked(profs, stack)
    xs, batch = example_inputs(example_input, name, seed, like=module)
    _check_script_ops(module, name)
    own = _floating_dtype(module)
    if dtype == "int8" and own != torch.float32:
        # int8 re-types an fp32 ledger (ops and bytes / 4); a model in another precision
        # would keep its own ops and have its bytes divided wrongly
        raise ModelError(f"estimate: dtype='int8' re-expresses an fp32 model's counts at "
                         f"int8, but {name}'s parameters are {str(own).removeprefix('torch.')}; "
                         "give the fp32 model (module.float()) or leave dtype out")
    wants_train = train_step is not None or loss is not None or optimizer is not None
    if train_step is not None and loss is not None:
        raise ModelError("estimate: give train_step or loss, not both (train_step computes "
                         "its own loss)")
    if train_step is not None and not callable(train_step):
        raise ModelError(f"estimate: train_step is a {type(train_step).__name__}; give a "
                         "callable (module, example_input) -> loss tensor")
    _check_optimizer(optimizer)
    devices = {}
    est = Estimate(model=name, source="torch", stacks_asked=asked)
    # a lazy layer's size comes with a forward: checked after the copy is sized
    stored = None if uninitialized_parameters(module) else _stored_weight_bytes(module, dtype)
    for p in profs:   # capacity per profile, before the copy: a model no profile holds is
        # refused without copying it (a 2 GiB Linear took 5 GB to refuse on a cortex-m7)
        if p.kind not in TORCH_KINDS:
            est.skipped[p.label] = (f"{p.label} is a {p.kind} chip: it runs spiking networks; "
                                    f"give a NIR graph (.nir) or a torch module with snnTorch "
                                    f"neurons, not the plain module {name}")
            continue
        dev = TorchDevice(p, prefer_cuda=False)   # CPU: counts do not depend on the device
        try:
            if stored is not None:
                dev.check_fits(name, stored)
        except HardwareLimitError as exc:
            est.skipped[p.label] = str(exc)
            continue
        devices[p.label] = dev
    if not devices:   # nothing to run: every profile refused
        return _ordered(est, profs, [])
    try:
        # torch cannot deep-copy a CSR / CSC / BSR / BSC tensor (a graph's adjacency
        # buffer): such tensors are cloned for the copy
        memo = {id(t): t.clone() for t in (*module.parameters(), *module.buffers())
                if t.layout not in (torch.strided, torch.sparse_coo)}
        # nor a tensor computed from parameters and kept as an attribute (a layer pruned
        # with torch.nn.utils.prune: its weight = weight_orig * weight_mask, which the
        # prune hook computes again before each forward): copied detached
        memo.update((id(t), t.detach().clone()) for mod in module.modules()
                    for t in vars(mod).values()
                    if isinstance(t, torch.Tensor) and not t.is_leaf)
        net = copy.deepcopy(module, memo=memo)
    except Exception as exc:   # a module holding a lock, a file, a generator ...
        raise ModelError(f"estimate: {name} cannot be deep-copied ({first_line(exc)}); "
                         "estimate runs a copy so your module stays untouched: make its "
                         "attributes copyable") from None
    lazy_note = _size_lazy_layers(net, xs, name)
    for label, dev in list(devices.items()):   # the copy placed; a lazy model's size checked
        try:
            with _script_copy_moved(net):
                dev.compile(net, stored_bytes=_stored_weight_bytes(net, dtype))
        except HardwareLimitError as exc:
            est.skipped[label] = str(exc)
            del devices[label]
    est.inference_samples = batch
    memory_notes: dict[str, str] = {}
    notes = ["inference: eval mode, no gradients, on a copy of the module (its weights, mode "
             "and device are untouched)", *lazy_note]
    if devices:
        dev = next(iter(devices.values()))
        consumer: list = []
        with _module_facts(net, dtype, xs[0], consumer) as modules:
            out = _infer(dev, net, xs, name)
        batch, samples_note = _samples(xs, batch, consumer)
        dev.ledger.add_samples(batch, scope="infer")
        est.inference_samples = batch
        notes += samples_note
        est.modules = modules
        notes += _not_finite("the forward's output", out)
        _check_mcu_memory(est, devices, net, xs, dtype, memory_notes)
        notes += memory_notes.values()
        _check_device_memory(est, devices, net, xs, dev.ledger)
        if wants_train:
            # the model's facts (NeuroBench's static metrics) are of the module as given,
            # as the inference counts are: not of the copy the training step changed
            given = dev.ledger.models()
            note, peak = _train(dev, net, xs, example_input, out, batch, name,
                                train_step=train_step, loss=loss, optimizer=optimizer,
                                target=target, seed=seed)
            for model, facts in given.items():
                dev.ledger.record_model(model, **facts)
            notes.append(note)
            est.train_samples = batch
            _check_training_memory(est, devices, peak, dtype)
        ledger = dev.ledger
        if dtype == "int8":
            notes += _other_floats_note(ledger)
            ledger = retyped_int8(ledger)
            notes.append(INT8_CONVENTIONS)
        est.dtype = dtype
        if dtype == "fp32" and packed_size(net)[0]:
            est.dtype = "quantized"   # a torch.ao quantized model runs its own int8 kernels
        elif dtype == "fp32":
            # a .half(), bfloat16 or float64 model runs (and is counted) in its own precision
            est.dtype = float_suffix(own) or "fp32"
        for label, d in devices.items():
            try:
                est.reports[label] = ledger.price(d.profile, stack=asked.get(label))
            except (PricingError, HardwareLimitError) as exc:
                est.skipped[label] = str(exc)
                continue
            est.ledgers[label] = ledger
    # a profile skipped after its inference memory was planned (the training step does not
    # fit it, or pricing failed) keeps no plan: it runs nothing
    dropped = {memory_notes[k] for k in est.skipped if k in memory_notes}
    return _ordered(est, profs, [n for n in notes if n not in dropped])


def _check_script_ops(module, name: str) -> None:
    """Refuse a TorchScript module whose graph runs ops torch executes outside its
    dispatcher, where no engine sees them: the oneDNN (MKLDNN-layout) ops that
    ``torch.jit.optimize_for_inference`` puts in (``prim::mkldnn_convolution``: a
    convolution's MACs would be missing with no word). MKLDNN tensors themselves are
    counted as dense (``x.to_mkldnn()`` in a forward runs aten ops on them); the graph's
    MKLDNN constants (its weights) do no work."""
    import torch
    covered: set[int] = set()
    for mod in module.modules():
        if id(mod) in covered or not isinstance(mod, torch.jit.ScriptModule):
            continue
        covered.update(id(m) for m in mod.modules())
        try:
            graph = mod.inlined_graph
        except Exception:   # a module with no forward graph of its own: nothing to read
            continue
        found: set[str] = set()
        blocks = [graph]
        while blocks:
            for node in blocks.pop().nodes():
                kind = node.kind()
                if kind.startswith("prim::") and "mkldnn" in kind.lower() \
                        and kind != "prim::ConstantMKLDNNTensor":
                    found.add(kind)
                blocks.extend(node.blocks())
        if found:
            raise ModelError(f"estimate: {name}'s TorchScript graph runs "
                             f"{', '.join(sorted(found))} on MKLDNN-layout tensors "
                             "(torch.jit.optimize_for_inference's oneDNN ops), which torch "
                             "runs outside its dispatcher: no engine sees their work, so "
                             "every figure would leave it out; give the module before "
                             "optimize_for_inference (scripted, or torch.jit.freeze'd)")


@contextmanager
def _script_copy_moved(net):
    """A block that places the copy ``net`` on a device (``TorchDevice.compile`` moves it).
    torch's ``Module._apply`` reads every parameter's ``.grad``; a TorchScript module's
    copy has non-leaf parameters (torch's deep copy of one), on which that read warns that
    ``.grad`` of a non-leaf tensor is not populated: torch's own read, not the user's, so
    that one warning is silenced for a TorchScript copy."""
    import warnings

    import torch
    if not isinstance(net, torch.jit.ScriptModule):
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"The \.grad attribute of a Tensor that is "
                                "not a leaf Tensor is being accessed", category=UserWarning)
        yield


def _other_floats_note(ledger) -> list[str]:
    """At ``dtype="int8"``: a note naming the float ops counted in another precision than
    fp32 (a forward that runs part of itself under ``torch.autocast``, or casts), which
    the int8 re-typing prices as int8 as well (:func:`sim.precision.retyped_int8`)."""
    ops = ledger.total_ops()
    other = {k: n for k, n in ops.items() if k.split("_")[0] in ("mac", "flop")
             and k.rsplit("_", 1)[-1] in ("fp16", "bf16", "fp64") and n}
    if not other:
        return []
    what = ", ".join(f"{n:,} {k}" for k, n in sorted(other.items()))
    return [f"int8: the forward also ran {what} (autocast or a cast inside it); the "
            "deployed int8 model runs them at int8 too, so they are priced as int8 MACs "
            "and integer ops like the fp32 ones (their bytes, counted at their own size, "
            "are divided by 4 as every other byte)"]


def _ordered(est: Estimate, profs, notes: list) -> Estimate:
    """``est`` with its reports first, in the order asked, and the skipped profiles in the
    order asked as well; no memory plan for a skipped profile; ``notes``."""
    order = [p.label for p in profs]
    est.reports = {k: est.reports[k] for k in order if k in est.reports}
    est.skipped = {k: est.skipped[k] for k in order if k in est.skipped}
    est.memory = {k: v for k, v in est.memory.items() if k not in est.skipped}
    est.notes = tuple(notes)
    return est


def _stored_weight_bytes(net, dtype: str) -> int:
    """The bytes ``net``'s parameters and buffers take stored at ``dtype``: at int8 weight
    matrices and kernels 1 byte a value, vectors (biases, norm scales) 4 bytes (TFLM's int32
    biases); at fp32 each tensor's own bytes. A torch.ao quantized model's packed weights
    (no parameters) as they are stored, whatever ``dtype``."""
    import torch

    from sim.torch_engine.activity import packed_size
    from sim.torch_engine.costs import tensor_bytes
    per = 1 if dtype == "int8" else None
    # a sparse tensor (a graph's adjacency) as it is stored: values and indices
    return sum(tensor_bytes(t) if t.layout is not torch.strided
               else t.numel() * (per if per and t.is_floating_point() and t.dim() > 1
                                 else t.element_size())
               for t in [*net.parameters(), *net.buffers()]) + packed_size(net)[1]


def _asked_label(asked: str, profs) -> str | None:
    """The label of the profile ``asked`` names in ``PROFILE=STACK``: its label, the path
    of its file as given to ``--profiles`` or any spelling of it, or its name when one
    profile asked has it; None when none does."""
    from pathlib import Path
    for p in profs:
        if asked == p.label:
            return p.label
    for p in profs:
        if p.path and Path(asked).expanduser().resolve() == Path(p.path).resolve():
            return p.label
    named = [p.label for p in profs if p.name == asked]
    return named[0] if len(named) == 1 else None


def stacks_asked(profs, stack) -> dict[str, str]:
    """profile label -> the stack asked for it (checked: the profile has it); profiles not
    named are left out (priced at their default). ``stack``: None, one name for every
    profile, ``"PROFILE=STACK,..."`` or a dict ``{profile: stack}``.

    Raises
    ------
    NeuroedgeError
        A profile without that stack (the message lists its stacks, with a suggestion), a
        profile named that is not asked, a profile named twice (under any spelling), or a
        malformed ``PROFILE=STACK`` list.
    """
    from sim.execution import resolve_stack, stacks_of
    if not stack:
        return {}
    labels = {p.label: p for p in profs}
    if isinstance(stack, str) and "=" not in stack:
        pairs = [(label, stack.strip()) for label in labels]
    elif isinstance(stack, str):
        pairs = []
        for part in stack.split(","):
            label, sep, name = (t.strip() for t in part.partition("="))
            if not sep or not label or not name:
                raise ModelError(f"estimate: stack {stack!r}: expected one stack name, or "
                                 "PROFILE=STACK pairs separated by commas, e.g. "
                                 "a100=graph,stm32l4r5=xcube-ai-7.3")
            pairs.append((label, name))
    else:
        pairs = [(str(k), str(v)) for k, v in dict(stack).items()]
    out, given = {}, {}
    for asked, name in pairs:
        label = _asked_label(asked, profs)
        if label is None:
            raise ModelError(f"estimate: stack for profile {asked!r}, which is not among the "
                             f"profiles asked ({', '.join(labels)})")
        if label in given:   # a dict would keep the last one silently, as --profiles refuses
            raise ModelError(f"estimate: --stack: profile {label!r} is named twice "
                             f"({given[label]!r}, then {f'{asked}={name}'!r}); give each "
                             "profile one stack")
        given[label] = f"{asked}={name}"
        try:
            out[label] = resolve_stack(labels[label], name)
        except NeuroedgeError as exc:
            others = [o for o, p in labels.items() if o != label and name in stacks_of(p)]
            if others and isinstance(stack, str) and "=" not in stack:
                raise NeuroedgeError(f"{exc}; to price {', '.join(others)} for {name} "
                                     f"only, give PROFILE=STACK pairs, e.g. "
                                     f"--stack {others[0]}={name}") from None
            raise
    return out


def _is_torch_module(obj) -> bool:
    import torch
    return isinstance(obj, torch.nn.Module)


_TRACED_FOR = "that traces its activations' lifetimes for the memory check of {}"
_LEAVE_OUT = "leave out the profiles whose memory is checked"
"""Why a memory check runs the forward again (``forward_errors``'s ``again``): {} the
profiles checked."""


def _check_mcu_memory(est: Estimate, devices: dict, net, xs, dtype: str, notes: dict) -> None:
    """Each microcontroller (bitwise profile) in ``devices`` holds one inference the way
    TFLM lays it out (:func:`sim.execution.mcu.place_inference`): the activation arena
    planned from tensor lifetimes (:mod:`sim.arena`) in SRAM, the weights in the SRAM left
    and then flash. A profile it does not fit moves to ``est.skipped`` with the one-line
    reason naming the bytes; ``est.memory`` gets the plan of the others, ``notes`` (profile
    -> line) each plan in words."""
    from sim.arena import greedy_arena, peak_live_bytes, trace_lifetimes
    from sim.execution.mcu import place_inference
    mcus = [label for label, d in devices.items() if d.profile.kind == "bitwise"]
    if not mcus:
        return
    per = 1 if dtype == "int8" else None
    with forward_errors(net, xs, type(net).__name__, again=_TRACED_FOR.format(
            ", ".join(mcus)), instead=_LEAVE_OUT):
        buffers = trace_lifetimes(net.eval(), xs.positional(), bytes_per_element=per,
                                  keywords=xs.keywords())
    arena, _ = greedy_arena(buffers)
    weights = _stored_weight_bytes(net, dtype)
    peak = peak_live_bytes(buffers)
    for label in mcus:
        try:
            held = place_inference(devices[label].profile, arena, weights,
                                   samples=est.inference_samples)
        except HardwareLimitError as exc:
            est.skipped[label] = str(exc)
            del devices[label]
            continue
        prof = devices[label].profile
        est.memory[label] = {"arena_bytes": arena, "peak_live_bytes": peak,
                             "weight_bytes": weights,
                             "placement": {prof.memory[lv].name: {"writable": w,
                                                                  "read_only": r}
                                           for lv, (w, r) in held.items()}}
        where = ", ".join(f"{prof.memory[lv].name} {w + r:,} B" for lv, (w, r) in held.items())
        notes[label] = (f"{label} memory: activation arena {arena:,} B ({len(buffers)} tensors, "
                        f"greedy plan of their lifetimes; peak live {peak:,} B) + weights "
                        f"{weights:,} B, placed {where}")


def _check_device_memory(est: Estimate, devices: dict, net, xs, ledger) -> None:
    """Each GPU or CPU profile in ``devices`` holds one inference in its device memory: the
    weights and the activations alive at once (:func:`sim.arena.peak_live_bytes` of the
    forward's tensor lifetimes). The lifetimes are traced (a second forward) only when the
    bytes every op of the counted inference wrote, with the weights and the input, could
    exceed a profile's memory: every tensor the forward fills is written by some op, so
    the peak is at most all of them (an allocation never written is not in that bound).
    A profile it does not fit moves to ``est.skipped`` with the one-line reason naming
    the bytes. A training step's memory is :func:`_check_training_memory`'s."""
    from sim.arena import peak_live_bytes, trace_lifetimes
    capacity = {label: d.profile.memory["offchip"].capacity_bytes.value
                for label, d in devices.items()
                if d.profile.kind in ("gpu", "cpu") and "offchip" in d.profile.memory}
    weights = _stored_weight_bytes(net, "fp32")
    inputs = sum(x.numel() * x.element_size() for x in xs)
    bound = weights + inputs + ledger.total_bytes("infer").get(("offchip", "write"), 0)
    tight = [label for label, cap in capacity.items() if bound > cap]
    if not tight:
        return
    with forward_errors(net, xs, type(net).__name__,
                         again=_TRACED_FOR.format(", ".join(tight)), instead=_LEAVE_OUT):
        peak = peak_live_bytes(trace_lifetimes(net.eval(), xs.positional(),
                                               keywords=xs.keywords()))
    for label in tight:
        if weights + peak > capacity[label]:
            name = devices[label].profile.name
            est.skipped[label] = (
                f"[estimate] one inference of {est.inference_samples} sample(s) holds weights "
                f"{weights} B + activations alive at once {peak} B = {weights + peak} B, "
                f"which exceeds {name} memory.offchip.capacity_bytes = "
                f"{capacity[label]:.0f} B; use a smaller batch or a profile with more device "
                f"memory")
            del devices[label]


@contextmanager
def _module_facts(net, dtype: str, watch=None, consumer: list | None = None):
    """Yields a dict filled, while the block runs the forward, with every module called:
    path -> type, output shape (of the first call), output bytes (of every call, as
    torchinfo sums a module called again: at ``dtype``, 1 byte a float value for int8)
    and parameters (its own and its children's, as torchinfo counts them), in the order of
    the first call (a parent before its children). A container the forward never calls
    (an ``nn.ModuleList`` or ``nn.ModuleDict`` of blocks) gets a row before its first
    called child, with no output: a table cut at its depth sums its children there (they
    fell out of the table, and the next row took their place as their parent).
    ``consumer`` gets (path, module) of the first module stating a batch layout
    (:func:`_batch_layout`) that is called with the tensor ``watch`` itself."""
    import torch

    from sim.arena import output_tensors
    from sim.torch_engine.activity import packed_size
    from sim.torch_engine.nested import element_count, shape_of
    facts: dict[str, dict] = {}
    names = {id(m): n for n, m in net.named_modules()}

    def before(module, args):
        path = names.get(id(module))
        if consumer is not None and not consumer and path is not None \
                and any(a is watch for a in args) and _batch_layout(module) is not None:
            consumer.append((path, module))
        if path is not None and path not in facts:
            facts[path] = {"type": type(module).__name__, "output_shape": [],
                           "output_bytes": 0,
                           # a torch.ao quantized layer's packed weights included
                           "parameters": sum(p.numel() for p in module.parameters())
                           + packed_size(module)[0],
                           # its own, not its children's (the model's: its own ops' row)
                           "own_parameters": sum(p.numel()
                                                 for p in module.parameters(recurse=False))}

    def after(module, args, output):
        entry = facts.get(names.get(id(module)))
        if entry is None:
            return
        tensors = output_tensors(output)   # a returned cache object's tensors too
        if tensors and not entry["output_shape"]:
            entry["output_shape"] = shape_of(tensors[0])
        # every call writes its output: a module called 10 times, 10 outputs (torchinfo)
        entry["output_bytes"] += sum(
            element_count(t) * (1 if dtype == "int8" and t.is_floating_point()
                                else t.element_size())
            for t in tensors)

    # TorchScript modules take no Python hooks (and run none of their children's): such a
    # model has no layer rows, its ops are counted all the same
    handles = [h for m in net.modules() if not isinstance(m, torch.jit.ScriptModule)
               for h in (m.register_forward_pre_hook(before), m.register_forward_hook(after))]
    try:
        yield facts
    finally:
        for h in handles:
            h.remove()
        with_parents: dict[str, dict] = {}
        for path, entry in facts.items():
            parts = path.split(".") if path else []
            for k in range(1, len(parts)):
                parent = ".".join(parts[:k])
                if parent not in facts and parent not in with_parents:
                    mod = net.get_submodule(parent)
                    with_parents[parent] = {
                        "type": type(mod).__name__, "output_shape": [], "output_bytes": 0,
                        "parameters": sum(p.numel() for p in mod.parameters())
                        + packed_size(mod)[0],
                        "own_parameters": sum(p.numel()
                                              for p in mod.parameters(recurse=False))}
            with_parents[path] = entry
        facts.clear()
        facts.update(with_parents)


def token_ids(model, shape: tuple[int, ...], seed: int):
    """An example batch of token ids for a language model (``neuroedge estimate
    --input-dtype int64``): int64 of ``shape``, uniform below the vocabulary
    (``num_embeddings``) of the table the ids index: a ``transformers`` model's
    ``get_input_embeddings()``, else the model's first ``nn.Embedding`` / ``nn.EmbeddingBag``
    (the token table comes before the position and segment tables in every model seen);
    drawn with ``seed``; and the note saying so."""
    import torch
    from torch import nn
    tables = (nn.Embedding, nn.EmbeddingBag)
    first = getattr(model, "get_input_embeddings", None)
    try:
        table = first() if callable(first) else None
    except Exception:       # a model class that does not implement it
        table = None
    if not isinstance(table, tables):
        table = next((m for m in model.modules() if isinstance(m, tables)), None)
    name = type(model).__name__
    if table is None:
        raise ModelError(f"estimate: --input-dtype int64 draws token ids below the model's "
                         f"vocabulary (its nn.Embedding num_embeddings), but {name} has no "
                         "nn.Embedding; leave --input-dtype out for float input")
    shape = _drawable(shape, 8, "int64")
    gen = torch.Generator().manual_seed(seeds.child(seed, "example_input"))
    high = table.num_embeddings
    return (torch.randint(0, high, shape, generator=gen),
            f"input: token ids of shape {shape}, uniform in [0, {high}) (the vocabulary of "
            f"{name}'s input embedding), seed {seed}")


def drawn_example(model, shape: tuple[int, ...], input_dtype: str, seed: int):
    """What the commands (estimate, measure, a sweep of your own model) give ``estimate``
    for ``--input-shape`` and ``--input-dtype``: the shape itself (float32: estimate draws
    standard normal values in the model's precision), or token ids (int64,
    :func:`token_ids`); and the note to add to the report, or None."""
    if input_dtype not in INPUT_DTYPES:
        raise ModelError(f"estimate: input dtype {input_dtype!r}; give one of "
                         f"{', '.join(INPUT_DTYPES)} (int64: token ids for a language model)")
    return token_ids(model, shape, seed) if input_dtype == "int64" else (shape, None)


def drawn_examples(model, shapes: list[tuple[int, ...]], input_dtypes: list[str], seed: int):
    """:func:`drawn_example` for a model that takes one input per shape (``--input-shape``
    given several times, with its ``--input-dtype``): the single input as
    :func:`drawn_example` gives it, several as a tuple of tensors, input ``i`` drawn from
    its own stream of ``seed`` (two inputs of one shape get different values); and the
    notes to add to the report."""
    if len(shapes) == 1:
        example, note = drawn_example(model, shapes[0], input_dtypes[0], seed)
        return example, [note] if note else []
    inputs, notes = [], []
    for i, (shape, input_dtype) in enumerate(zip(shapes, input_dtypes, strict=True)):
        own = seeds.child(seed, "input", i)
        example, note = drawn_example(model, shape, input_dtype, own)
        if note is None:   # a shape: drawn as estimate would draw it
            example = example_inputs(example, type(model).__name__, own, like=model)[0][0]
        else:
            notes.append(f"input {i}: {note.removeprefix('input: ')}")
        inputs.append(example)
    return tuple(inputs), notes


def _size_lazy_layers(net, xs, name: str) -> list[str]:
    """Lazy layers (``nn.LazyLinear`` ...) sized by one uncounted forward on the example
    input, as torch's LazyModule convention asks before a model's memory is known; the
    note for the report, or none when the model has no lazy layers."""
    import torch

    from sim.torch_engine.activity import uninitialized_parameters
    lazy = uninitialized_parameters(net)
    if not lazy:
        return []
    net.eval()
    try:
        with torch.no_grad():
            xs.call(net)
    except Exception as exc:
        raise ModelError(f"estimate: {name} forward failed on example_input of shape "
                         f"{_shape_text(xs)} while sizing its lazy layers "
                         f"({first_line(exc)}); give an input of the shape {name}.forward "
                         "expects (batch first)") from exc
    return [f"lazy layers ({len(lazy)} parameters and buffers) sized by one uncounted forward "
            "on the example input before the counted one"]


def _infer(dev, net, xs, name: str):
    """The counted inference, under ``infer``; its samples are added after it
    (:func:`_samples`: the layer that takes the input tells where its batch is)."""
    import torch
    net.eval()
    # only the forward itself is the model's: the ledger flush when the count ends is
    # neuroedge's, and a failure there is not the input's shape
    with torch.no_grad(), dev.count("infer"):
        with forward_errors(net, xs, name):
            return xs.call(net)


def _batch_layout(mod) -> tuple[int, int] | None:
    """(the dimension of the batch, the dimensions of a batched input) that layer ``mod``
    states for its input, or None for a layer that states none (an embedding, a norm, a
    pointwise layer: any dimensions, the batch first). Recurrent layers, multi-head
    attention and the transformer layers take their sequence first unless
    ``batch_first=True`` (PyTorch's default layout, ``(T, B, ...)``); one input dimension
    fewer is an unbatched sample (a Linear's 1-D input, a Conv2d's ``(C, H, W)``)."""
    from torch import nn
    if isinstance(mod, (nn.RNNBase, nn.MultiheadAttention, nn.Transformer)):
        return (0 if mod.batch_first else 1), 3
    if isinstance(mod, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return (0 if mod.self_attn.batch_first else 1), 3
    if isinstance(mod, (nn.TransformerEncoder, nn.TransformerDecoder)):
        if not len(mod.layers):
            return None
        return (0 if mod.layers[0].self_attn.batch_first else 1), 3
    if isinstance(mod, nn.RNNCellBase):
        return 0, 2
    if isinstance(mod, (nn.Linear, nn.Bilinear)):
        return 0, 2
    if isinstance(mod, nn.modules.conv._ConvNd):
        return 0, len(mod.kernel_size) + 2
    for dims, classes in _pools_and_norms():
        if isinstance(mod, classes):
            return 0, dims
    return None


_POOLS_AND_NORMS: list = []
"""(batched input dimensions, layer classes) of the pooling and instance-norm layers,
filled on first use (torch is imported late)."""


def _pools_and_norms():
    from torch import nn
    if not _POOLS_AND_NORMS:
        for n in (1, 2, 3):
            _POOLS_AND_NORMS.append((n + 2, tuple(
                getattr(nn, f"{kind}{n}d") for kind in (
                    "MaxPool", "AvgPool", "AdaptiveMaxPool", "AdaptiveAvgPool",
                    "InstanceNorm", "LPPool", "FractionalMaxPool")
                if hasattr(nn, f"{kind}{n}d"))))
    return _POOLS_AND_NORMS


def _samples(xs, batch: int, consumer: list) -> tuple[int, list[str]]:
    """The samples one inference processes and the note saying where they were read when
    not on the first input's dimension 0. ``consumer``: (path, module) of the first layer
    the forward gave that input itself, when one stating its layout (:func:`_batch_layout`)
    took it: a sequence-first layer's batch is dimension 1; an input with fewer
    dimensions than that layer takes batched is one sample."""
    if not consumer:
        return batch, []
    path, mod = consumer[0]
    bdim, batched = _batch_layout(mod)
    x = xs[0]
    from sim.torch_engine.nested import describe
    layer = f"{type(mod).__name__} {path!r}" if path else type(mod).__name__
    if x.dim() < batched:
        return 1, [f"samples: example_input of {describe(x)} has {x.dim()} dimension(s), one "
                   f"fewer than the {batched} of a batch into {layer}, which takes it: one "
                   "sample (unbatched); add a batch dimension in front to count several"]
    if bdim == 0:
        return batch, []
    n = int(x.size(bdim))
    if n == 0:
        raise ModelError(f"estimate: example_input of {describe(x)} holds 0 samples (dim "
                         f"{bdim}, the batch of {layer}: batch_first=False); give at least "
                         "one sample")
    return n, [f"samples: {layer} takes its input sequence first (batch_first=False), so the "
               f"{n} sample(s) are dim {bdim} of example_input of {describe(x)}, not dim 0 "
               "(a batch_first=True model takes (batch, steps, ...))"]


@contextmanager
def forward_errors(net, xs, name: str, again: str = "", instead: str = "",
                   command: str = "estimate"):
    """A forward of ``net`` (``name``) on ``xs`` that fails inside the block: one line
    (``ModelError``) naming the input's shape and the failure, not a traceback; the
    counted forward's and every other's. ``again``: the block runs the forward once more
    after the counted one (the lifetime trace of a memory check, measure's timed calls), for
    the reason given; a failure there comes from state the model keeps between calls, not
    from the input's shape, and the message says so, with ``instead`` (another way out).
    ``command``: the message's first word (``measure`` for its timed calls)."""
    import torch
    try:
        yield
    except NeuroedgeError:
        raise
    except Exception as exc:
        when, fix = "", _forward_fix(net, xs, name, exc)
        if again:   # the counted forward took this input: its shape is right
            when = f" on a second run {again}"
            fix = (f"make {name}.forward run again on the same input (reset the state it "
                   "keeps between calls)" + (f", or {instead}" if instead else ""))
        elif xs[0].is_floating_point() and any(
                isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) for m in net.modules()):
            fix += " (token ids: give integer input; the command's --input-dtype int64)"
        raise ModelError(f"{command}: {name} forward failed on example_input of shape "
                         f"{_shape_text(xs)}{when} ({first_line(exc)}); {fix}") from exc


def required_parameters(fn, given: int = 0) -> list[str]:
    """The parameters of ``fn`` (a function, a class: its ``__init__``, a module: its
    ``forward``) that a call with ``given`` positional arguments leaves without a value."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):   # a builtin or C function: nothing to tell
        return []
    out, positional = [], 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
            if positional > given and p.default is p.empty:
                out.append(p.name)
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            out.append(p.name)
    return out


def _forward_fix(net, xs, name: str, exc: Exception) -> str:
    """What to change when ``net``'s forward failed on ``xs`` with ``exc``: the inputs it
    lacks, a container that has no forward, parameters of another dtype than the input, or
    else the input's shape."""
    import torch

    if isinstance(exc, NotImplementedError) and type(net).forward is torch.nn.Module.forward:
        return (f"{name} has no forward of its own (a container such as ModuleList or "
                "ModuleDict); give the module that runs them")
    lacking = [p for p in required_parameters(net.forward, len(xs.positional()))
               if p not in xs.keywords()]
    if isinstance(exc, TypeError) and lacking:
        return (f"{name}.forward also takes {', '.join(lacking)}: give --input-shape once "
                "per input, in its order (an example input of several tensors: a tuple or "
                "dict)")
    own = {p.dtype for p in net.parameters() if p.is_floating_point()}
    given = {t.dtype for t in xs if t.is_floating_point()}
    if len(own) == 1 and given and given != own:
        (dtype,) = own
        return (f"{name}'s parameters are {str(dtype).removeprefix('torch.')} and the input "
                f"is {', '.join(sorted(str(d).removeprefix('torch.') for d in given))}: give "
                f"an input of the model's dtype, or one dtype for the whole model")
    shapes = f"give inputs of the shapes {name}.forward expects (batch first)"
    bound = _binding(net, xs, name)
    if bound:
        return f"{bound}; {shapes}, give an input by its parameter's name, or {WRAPPER_ROUTE}"
    return f"give an input of the shape {name}.forward expects (batch first)"


def _binding(net, xs, name: str) -> str:
    """Where the example inputs went, when that may be why the forward failed: each
    positional input after the first names the forward parameter it went to (its
    annotation too, when that is no tensor: ``GPT2Model``'s second parameter is its
    cache), and the decoder inputs (parameters named ``decoder_*input*``: an
    encoder-decoder's) that were not given. "" when neither applies. Read from the
    forward's parameter names alone: no model class is known by name."""
    import inspect

    from sim.torch_engine.nested import describe
    try:
        params = list(inspect.signature(net.forward).parameters.values())
    except (TypeError, ValueError):   # a builtin or TorchScript forward: nothing to tell
        return ""
    slots = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    positional = xs.positional()
    parts = []
    for i, x in enumerate(positional[1:len(slots)], start=1):
        p = slots[i]
        ann = p.annotation
        text = "" if ann is p.empty else ann if isinstance(ann, str) \
            else inspect.formatannotation(ann)
        kind = f" (annotated {text}: no tensor)" if text and "Tensor" not in text else ""
        parts.append(f"input {i + 1} of {describe(x)} went to {name}.forward's parameter "
                     f"{p.name!r}{kind}")
    if parts:
        parts[-1] += (" (inputs go to forward's parameters in order: "
                      f"{', '.join(p.name for p in slots[:len(positional)])})")
    given = {p.name for p in slots[:len(positional)]} | set(xs.keywords())
    decoder = [p.name for p in params if p.name.startswith("decoder_") and "input" in p.name
               and p.name not in given]
    if decoder:
        parts.append(f"{name}.forward also takes {', '.join(decoder)}, not given (the "
                     "inputs of an encoder-decoder's decoder)")
    return "; ".join(parts)


def _check_optimizer(optimizer) -> None:
    import torch
    if optimizer is None:
        return
    if isinstance(optimizer, torch.optim.Optimizer):
        raise ModelError(f"estimate: optimizer is a {type(optimizer).__name__} instance bound "
                         "to your module's parameters, but the training step runs on a copy; "
                         "give its class (torch.optim.Adam) or a factory "
                         "(lambda params: torch.optim.SGD(params, lr=0.1))")
    if not callable(optimizer):
        raise ModelError(f"estimate: optimizer is a {type(optimizer).__name__}; give an "
                         "optimizer class or a factory params -> optimizer")


def _make_optimizer(optimizer, net):
    import torch
    params = [p for p in net.parameters() if p.requires_grad]
    if not params:
        raise ModelError(f"estimate: {type(net).__name__} has no trainable parameters; a "
                         "training step needs some (leave loss, optimizer and train_step out)")
    if optimizer is None:
        return torch.optim.SGD(params, lr=DEFAULT_LR), f"SGD(lr={DEFAULT_LR})"
    label = getattr(optimizer, "__name__", type(optimizer).__name__)
    try:
        opt = optimizer(params)
    except TypeError as exc:
        raise ModelError(f"estimate: optimizer {label}(params) failed ({first_line(exc)}); "
                         "give a factory with its settings, e.g. "
                         "lambda params: torch.optim.SGD(params, lr=0.1)") from None
    if not isinstance(opt, torch.optim.Optimizer):
        raise ModelError(f"estimate: optimizer {label}(params) returned a "
                         f"{type(opt).__name__}; it must return a torch.optim.Optimizer")
    return opt, (type(opt).__name__ if isinstance(optimizer, type) else f"{label} -> "
                 f"{type(opt).__name__}")


def _trained_output(out):
    """(tensor, where) the training step's loss is taken on: the first floating-point (or
    complex) tensor of the output: the output itself when it is a tensor, else of a tuple,
    list, dict or dataclass output (a ``transformers`` ModelOutput is an ordered dict: its
    ``logits`` or ``last_hidden_state``), found depth first; ``where`` names it
    (``['logits']``). (None, "") when the output holds none (an integer tensor included)."""
    import dataclasses

    import torch

    from sim.torch_engine.nested import stacked_values
    if isinstance(out, torch.Tensor):
        # integer outputs (class ids from argmax, token ids) carry no gradient: no loss on them
        if not (out.is_floating_point() or out.is_complex()):
            return None, ""
        if out.is_nested:
            # sequences of different lengths: the loss on their rows stacked (a view that
            # autograd follows); None where the components differ beyond their rows
            return stacked_values(out), ""
        return out, ""
    if isinstance(out, Mapping):
        items = list(out.items())
    elif isinstance(out, (tuple, list)):
        items = list(enumerate(out))
    elif dataclasses.is_dataclass(out) and not isinstance(out, type):
        items = [(f.name, getattr(out, f.name)) for f in dataclasses.fields(out)]
    else:
        return None, ""
    for key, value in items:
        t, where = _trained_output(value)
        if t is not None:
            return t, f"[{key!r}]{where}"
    return None, ""


def _loss_and_target(loss, target, out, seed: int):
    """(loss function, target, one line saying which) for ``loss`` on output ``out`` (its
    tensor :func:`_trained_output` picks)."""
    import torch
    import torch.nn.functional as F
    returned = type(out).__name__
    if isinstance(out, torch.Tensor):
        returned += f" of {str(out.dtype).removeprefix('torch.')}"
    out, where = _trained_output(out)
    if out is None:
        raise ModelError(f"estimate: the forward returned a {returned} with no "
                         "floating-point tensor to train on; give train_step=callable(module, "
                         "x) -> loss for this model (neuroedge.estimate from Python), or "
                         "leave the training step out")
    if where:
        where = f" of the output{where}"
    classifier = out.dim() == 2 and out.shape[1] >= 2
    if loss == "auto":
        loss = "cross_entropy" if classifier else "mse"
    if isinstance(loss, str):
        fns = {"cross_entropy": F.cross_entropy, "mse": F.mse_loss}
        if loss not in fns:
            raise ModelError(f"estimate: loss {loss!r} is not known; give 'cross_entropy', "
                             "'mse', 'auto' or a callable (output, target) -> loss")
        fn, what = fns[loss], loss
    elif callable(loss):
        fn = loss
        what = getattr(loss, "__name__", type(loss).__name__)
    else:
        raise ModelError(f"estimate: loss is a {type(loss).__name__}; give 'cross_entropy', "
                         "'mse', 'auto' or a callable (output, target) -> loss")
    if target is not None:
        return fn, torch.as_tensor(target), f"{what}{where} on the given target"
    # its own stream: with the input's seed the target would be drawn from the input's numbers
    gen = torch.Generator().manual_seed(seeds.child(seed, "target"))
    is_ce = (isinstance(fn, (torch.nn.CrossEntropyLoss, torch.nn.NLLLoss))
             or getattr(fn, "__name__", "") in _CE_NAMES)
    if is_ce:
        if out.dim() < 2:
            raise ModelError(f"estimate: loss {what} needs an output (batch, classes, ...); "
                             f"the forward returned shape {tuple(out.shape)}: give target= "
                             "or another loss")
        classes = int(out.shape[1])
        shape = (out.shape[0],) + tuple(out.shape[2:])
        y = torch.randint(0, classes, shape, generator=gen)
        return fn, y, (f"{what}{where} on random labels over {classes} classes (output "
                       f"{tuple(out.shape)})")
    y = torch.randn(tuple(out.shape), generator=gen, dtype=out.dtype)
    return fn, y, (f"{what}{where} against random normal targets shaped like the output "
                   f"{tuple(out.shape)}")


def _train(dev, net, xs, example_input, out, batch: int, name: str, *, train_step, loss,
           optimizer, target, seed: int) -> tuple[str, int]:
    """One training step counted under ``train``; returns the line saying what ran and the
    most bytes it held alive at once (:func:`sim.arena.live_peak_mode`: the weights, their
    gradients, the optimizer's state, the inputs and the activations backward needs)."""
    import torch

    from sim.arena import live_peak_mode
    if isinstance(net, torch.jit.ScriptModule):
        raise ModelError(f"estimate: {name} is a TorchScript module, which cannot be trained "
                         "on a copy (torch's copy of a ScriptModule has non-leaf parameters, "
                         "which no optimizer takes); give the Python nn.Module for a training "
                         "step, or leave the training step out")
    opt, opt_text = _make_optimizer(optimizer, net)
    y = None
    if train_step is None:
        fn, y, what = _loss_and_target("auto" if loss is None else loss, target, out, seed)
    net.train()
    try:
        with dev.count("train", samples=batch), live_peak_mode(
                [*net.parameters(), *net.buffers(), *xs, y,
                 *(p.grad for p in net.parameters()),
                 *(t for state in opt.state.values() for t in state.values())]) as held:
            # only the step itself (forward, loss, backward, optimizer) is the user's: the
            # ledger flush and the peak's bookkeeping when the blocks end are neuroedge's,
            # and a failure there is not the input's or the loss's
            try:
                opt.zero_grad(set_to_none=True)
                if train_step is not None:
                    arg = xs if isinstance(example_input, (tuple, list)) and not \
                        _is_shape(example_input) else xs[0]
                    if xs.names:      # a dict example input: the dict
                        arg = xs.keywords()
                    value = train_step(net, arg)
                else:
                    value = fn(_trained_output(xs.call(net))[0], y)
                if not isinstance(value, torch.Tensor) or value.numel() != 1 \
                        or not value.requires_grad:
                    raise ModelError(f"estimate: the training step's loss is "
                                     f"{_describe(value)}; it must be one tensor value that "
                                     "requires grad (computed from the module's output)")
                value.backward()
                opt.step()
            except NeuroedgeError:
                raise
            except Exception as exc:
                raise ModelError(f"estimate: {name} training step failed on example_input of "
                                 f"shape {_shape_text(xs)} ({first_line(exc)}); check the loss "
                                 "and target against the output, or give "
                                 "train_step=callable(module, x) -> loss") from exc
        broken = _not_finite("the training step's loss", value)
    finally:
        net.eval()
    if train_step is not None:
        what = f"train_step {getattr(train_step, '__name__', type(train_step).__name__)}"
    line = f"training step: one forward, {what}, backward and {opt_text} step, train mode"
    return "; ".join([line, *broken]), held.peak


def _not_finite(what: str, value) -> list[str]:
    """A note when ``value`` (a tensor or a structure of tensors) holds NaN or infinite
    floating-point values, else none: the counts and prices stand (they do not depend on
    the values), but the model does not compute numbers on this input."""
    import torch
    from torch.utils._pytree import tree_leaves
    bad = total = 0
    for t in tree_leaves(value):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) \
                and not t.is_nested:
            bad += int((~torch.isfinite(t.detach())).sum())
            total += t.numel()
    if not bad:
        return []
    return [f"{what} holds {bad:,} NaN or infinite value(s) of {total:,} (the counts and "
            "prices do not depend on values and stand; the model's weights or input do not "
            "give numbers)"]


def _check_training_memory(est: Estimate, devices: dict, peak: int, dtype: str) -> None:
    """Each profile in ``devices`` holds the training step asked for: the most bytes it had
    alive at once (``peak``, from :func:`_train`) against a GPU's or CPU's device memory,
    or a microcontroller's writable memories (weights, gradients and optimizer state change
    every step: SRAM, never flash; :func:`sim.execution.mcu.place`), at fp32 as the step
    ran (a run priced at int8 leaves microcontrollers unchecked: no int8 training step is
    modelled). A profile it does not fit moves to ``est.skipped``, naming the bytes (the
    inference alone would fit there, but the run asked for training)."""
    from sim.execution.mcu import place
    for label in [label for label, d in devices.items() if d.profile.kind == "bitwise"]:
        if dtype != "fp32":
            break
        try:
            place(devices[label].profile, peak, 0, who="estimate",
                  subject="one training step",
                  writable_what="weights, gradients, optimizer state and the activations "
                                "backward needs, alive at once, fp32")
        except HardwareLimitError as exc:
            est.skipped[label] = str(exc)
            del devices[label]
    for label in [label for label, d in devices.items() if d.profile.kind in ("gpu", "cpu")
                  and "offchip" in d.profile.memory]:
        prof = devices[label].profile
        capacity = prof.memory["offchip"].capacity_bytes.value
        if peak > capacity:
            est.skipped[label] = (
                f"[estimate] one training step of {est.train_samples} sample(s) holds "
                f"{peak} B alive at once (weights, gradients, optimizer state, inputs and "
                f"the activations backward needs), which exceeds {prof.name} "
                f"memory.offchip.capacity_bytes = {capacity:.0f} B; use a smaller batch or "
                f"a profile with more device memory")
            del devices[label]


def _describe(value) -> str:
    import torch
    if isinstance(value, torch.Tensor):
        return (f"a tensor of shape {tuple(value.shape)}"
                + ("" if value.requires_grad else " without grad"))
    return f"a {type(value).__name__}"

