"""Estimates of NIR graphs and snnTorch modules on the neuromorphic chips.

:func:`estimate_nir` reads the graph (:func:`deploy.nir_import.read_nir`), drives its
``Input`` (:func:`deploy.nir_import.stimulus`), places it on every neuromorphic profile
asked for and runs ``steps`` steps there (scope ``"infer"``), then prices the run: one
inference sample, or one per image a ``dataset:`` stimulus presents.
:func:`estimate_spiking_module` sends a snnTorch module through snnTorch's own NIR export
first. Both are public in the facade too (``neuroedge.estimate_nir``,
``neuroedge.estimate_spiking_module``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from deploy.estimate_result import Estimate, profile_list
from hw_profiles.errors import NeuroedgeError, first_line

SCOPE = "infer"


MAX_STEPS = 10_000_000
"""The most time steps one estimate runs (a 1 ms step: almost three hours of chip time);
checked before the run, since the engine's records grow with the steps."""


def estimate_nir(graph_or_path, *, stimulus=None, steps: int | None = None, profiles,
                 dt: float | None = None, seed: int = 0, reset: str | None = None,
                 quantize: bool = True, model_facts: dict | None = None,
                 input: str | None = None) -> Estimate:
    """Price ``steps`` steps of the NIR graph driven by ``stimulus`` on each profile.

    ``steps`` may be left out when ``stimulus`` is a spike array or its file: it is then the
    array's length T (its first axis). At most :data:`MAX_STEPS`.

    ``stimulus``: what :func:`deploy.nir_import.stimulus` takes ("poisson:rate=50", a
    spike array (T, n) or its .npy/.npz path, "dataset:NAME"). A profile that is not a
    neuromorphic chip, or a chip the network does not fit on, goes to ``skipped`` with the
    one-line reason. ``stimulus=None`` runs the graph on its own activity: the sources a
    neuroedge export stores (Poisson rates, event lists) and its injected currents; a graph
    whose ``Input`` carries no events then needs a stimulus. ``quantize=False`` keeps the
    float weights (to compare spike counts with the producer; a chip's real weights are
    quantised). ``input``: the ``Input`` node the stimulus drives, for a graph with several
    (the others stay silent).

    A ``dataset:NAME`` stimulus presents several test images back to back (up to
    :data:`deploy.nir_import.DATASET_IMAGES`); each is one inference sample, so the
    per-inference figures are the run's divided by the images. Nothing is reset between two
    images: each starts from the state the one before left (membranes, synaptic currents,
    spikes in flight), as a chip fed a stream of inputs would.
    """
    import sim
    from deploy.nir_import import read_nir, stimulus_length
    from deploy.nir_import import stimulus as attach
    from hw_profiles import load as load_profile
    if steps is None:
        steps = stimulus_length(stimulus) if stimulus is not None else None
        if steps is None:
            raise NeuroedgeError("estimate_nir: steps is missing; give steps= (--steps on the "
                                 "command line), or a spike array stimulus whose length is "
                                 "the run's")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise NeuroedgeError(f"estimate_nir: steps = {steps!r}; expected an integer >= 1")
    if steps > MAX_STEPS:
        raise NeuroedgeError(f"estimate_nir: steps = {steps:,} is more than {MAX_STEPS:,} "
                             "(the most one estimate runs); price a shorter run and scale")
    if input is not None and stimulus is None:
        raise NeuroedgeError(f"estimate_nir: input={input!r} names the Input node the "
                             "stimulus drives; give a stimulus too (--stimulus)")
    net = read_nir(graph_or_path, dt=dt, reset=reset)
    if model_facts is not None:   # the producer's module, counted directly
        net.model_facts = dict(model_facts)
    if stimulus is not None:
        attach(net, stimulus, steps, seed=seed, input=input)
    else:
        _check_self_driven(net, graph_or_path)
    # a dataset: stimulus presents several images; per-inference figures are per image
    samples = getattr(net, "nir_samples", 1) if stimulus is not None else 1
    label = Path(graph_or_path).name if isinstance(graph_or_path, (str, os.PathLike)) \
        else "nir-graph"
    est = Estimate(model=label, source="nir", inference_samples=samples,
                   inference_scope=SCOPE)
    if samples > 1:
        est.notes = (f"input: {samples} test images of {str(stimulus)[len('dataset:'):]}, "
                     f"{steps:,} steps in all, one sample each; run back to back with no reset "
                     "between them (each image starts from the state the previous left)",)
    profiles = profile_list(profiles)
    if not profiles:
        raise NeuroedgeError("estimate_nir: profiles is empty; give at least one "
                             "neuromorphic chip, e.g. profiles=['loihi', 'loihi2']")
    for asked in profiles:
        prof = load_profile(asked)
        name = prof.name
        if prof.kind != "neuromorphic":
            est.skipped[name] = (f"{name} is a {prof.kind} profile; a NIR graph runs on the "
                                 "neuromorphic chips (loihi, loihi2, ...)")
            continue
        dev = sim.device(prof)
        try:
            dev.compile(net, quantize=quantize)
        except NeuroedgeError as exc:
            est.skipped[name] = str(exc).splitlines()[0]
            if prof.limit("weight_sharing", 0) < 1 and any(
                    p.kernel_weights is not None for p in net.projections.values()):
                est.skipped[name] += (" (its convolutions unrolled to one synapse each: "
                                      "the profile states no weight sharing)")
            continue
        note = _connectivity_note(name, dev.compiled)
        if note:
            est.notes = (*est.notes, note)
        with dev.count(SCOPE, samples=samples):
            dev.run(int(steps), scope=None)
        est.ledgers[name] = dev.ledger
        est.reports[name] = dev.report()
    return est


def _connectivity_note(name: str, compiled) -> str:
    """How the chip stores the graph's convolutions (shared kernels or unrolled synapses)
    and its synapse memory; empty for a graph without them."""
    kinds = compiled.connectivity
    conv = [p for p, k in kinds.items() if k != "sparse"]
    if not conv:
        return ""
    how = ("as shared kernels (limits.weight_sharing)" if kinds[conv[0]] == "shared" else
           "unrolled to one synapse entry each (the profile states no weight sharing)")
    return (f"{name}: {len(conv)} convolution/pooling projection(s) stored {how}; "
            f"chip synapse memory {compiled.synapse_memory_bytes:,} B")


def _check_self_driven(net, graph_or_path) -> None:
    """Refuse to run with no stimulus a graph whose Inputs bring no activity of their own."""
    silent = [k for k in getattr(net, "nir_inputs", ())
              if net.sources[k].kind == "events" and not len(net.sources[k].steps)]
    if silent:
        where = graph_or_path if isinstance(graph_or_path, (str, os.PathLike)) else "the graph"
        raise NeuroedgeError(
            f"NIR {str(where)!r}: Input {', '.join(map(repr, silent))} carries no events and "
            "no stimulus was given; give one (--stimulus poisson:rate=50, a .npy spike array "
            "(steps, inputs), or dataset:NAME)")


def estimate_spiking_module(module, example_input, profiles, steps: int | None = None, *,
                            dt: float | None = None, quantize: bool = True, stimulus=None,
                            seed: int = 0) -> Estimate:
    """Export the snnTorch ``module`` with snnTorch's ``export_to_nir`` and estimate it,
    driven by ``example_input`` (spikes, shape (T, n) or (T, 1, n): row t is time step t).

    ``stimulus``: what :func:`estimate_nir` takes ("poisson:rate=50", a spike array or its
    .npy/.npz path, "dataset:NAME", drawn with ``seed``) drives the run instead of
    ``example_input``, which then gives only one step's input shape (its rows after the
    first axis). ``steps`` defaults to T (the stimulus array's length, else
    ``example_input``'s) plus the network's depth (the steps the last layer needs to see the
    last input); ``dt`` to snnTorch's export step 1e-4 s.
    """
    try:
        import torch
        from snntorch.export_nir import export_to_nir
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NeuroedgeError("estimate_spiking_module needs snntorch: "
                             "pip install snntorch") from exc
    from deploy.nir_import import SNNTORCH_DT, read_nir, stimulus_length
    x = example_input.detach().cpu().numpy() if isinstance(example_input, torch.Tensor) \
        else np.asarray(example_input)
    if x.ndim < 2:
        raise NeuroedgeError(f"estimate_spiking_module: example_input has shape {x.shape}; "
                             "expected spikes (T, n) or (T, 1, n), time first")
    if x.ndim == 5:   # (T, batch, C, H, W): snnTorch's time-first batched layout of images
        if x.shape[1] != 1:
            raise NeuroedgeError(f"estimate_spiking_module: example_input has shape {x.shape}:"
                                 f" a batch of {x.shape[1]}; one sample is run, (T, 1, C, H, "
                                 "W) or (T, C, H, W)")
        x = x[:, 0]
    _check_neurons(module)
    # one step's input without batch: (n,) for (T, n) or (T, 1, n); (C, H, W) for events
    sample = torch.zeros(x.shape[2:] if x.ndim == 3 and x.shape[1] == 1 else x.shape[1:])
    facts = _module_facts(module)   # as given: the export's forward pass resizes state buffers
    resets = _snntorch_resets(module)
    try:
        graph = export_to_nir(_exportable_copy(module, sample), sample)
    except NeuroedgeError:
        raise
    except Exception as exc:
        if x.ndim == 3 and x.shape[1] > 1 and _exports(module, torch.zeros(x.shape[2:])):
            # (T, B, n), snnTorch's time-first batch: the export failed on (B, n) as one
            # step's input (NIR's type error), and one step of (n,) exports
            raise NeuroedgeError(f"estimate_spiking_module: example_input has shape "
                                 f"{x.shape}: a batch of {x.shape[1]}; one sample is run, "
                                 "(T, 1, n) or (T, n)") from None
        raise NeuroedgeError(
            f"estimate_spiking_module: snnTorch's export_to_nir failed on "
            f"{type(module).__name__} with one step's input of shape {tuple(sample.shape)} "
            f"({first_line(exc)}); snnTorch exports Linear, Conv2d, AvgPool2d "
            "and Flatten layers and Leaky, RLeaky, Synaptic and RSynaptic neurons") from None
    _state_resets(graph, resets)
    uniform = set(resets.values())
    if dt is not None and dt != SNNTORCH_DT:
        # snnTorch is discrete-time: its export writes tau = 1e-4 / (1 - beta); another step
        # keeps beta only with every tau scaled by dt / 1e-4 (a different dt changed the
        # spikes: 65 at 1e-4 s, 380 at 1e-3 s for beta 0.98)
        _scale_taus(graph, dt / SNNTORCH_DT)
    dt = SNNTORCH_DT if dt is None else dt
    if steps is None:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            depth = max(read_nir(graph, dt=dt).nir_depth.values(), default=0)
        length = stimulus_length(stimulus) if stimulus is not None else None
        steps = (x.shape[0] if length is None else length) + depth
    est = estimate_nir(graph, stimulus=x if stimulus is None else stimulus, steps=steps,
                       profiles=profiles, dt=dt, seed=seed, quantize=quantize,
                       model_facts=facts, reset=uniform.pop() if len(uniform) == 1 else None)
    est.model = type(module).__name__
    if stimulus is not None:
        what = f"the stimulus {str(stimulus)!r}" if isinstance(stimulus, (str, os.PathLike)) \
            else f"a spike array of shape {np.shape(stimulus)}"
        est.notes = (f"input: {what} drives the {steps:,} steps (seed {seed}); "
                     f"the example input gives only one step's shape {tuple(sample.shape)}, "
                     "its spikes are not run", *est.notes)
    return est


def _scale_taus(graph, factor: float) -> None:
    """Every time constant of ``graph``'s neuron nodes (nested subgraphs too) times
    ``factor``."""
    import nir
    for node in graph.nodes.values():
        if isinstance(node, nir.NIRGraph):
            _scale_taus(node, factor)
            continue
        for key in ("tau", "tau_mem", "tau_syn"):
            if getattr(node, key, None) is not None:
                setattr(node, key, np.asarray(getattr(node, key), dtype=np.float64) * factor)


SNNTORCH_LAYERS = ("Linear", "Conv2d", "AvgPool2d", "Flatten", "Leaky", "RLeaky", "Synaptic",
                   "RSynaptic")
"""The layers snnTorch's ``export_to_nir`` writes (and this estimate runs)."""


def _check_neurons(module) -> None:
    """Refuse, naming the layer, what snnTorch's export would drop or mis-write: a layer it
    does not export (it wrote an empty node, an AttributeError later), and a neuron option
    that changes the spikes but is not in the export (graded spikes, quantised state, beta
    = 1: no leak, an infinite tau)."""
    import snntorch as snn
    import torch
    for path, m in module.named_modules():
        kind = type(m).__name__
        if not path or isinstance(m, (torch.nn.Sequential, torch.nn.ModuleList)):
            continue
        exported = kind in SNNTORCH_LAYERS and isinstance(
            m, (snn.SpikingNeuron, torch.nn.Linear, torch.nn.Conv2d, torch.nn.AvgPool2d,
                torch.nn.Flatten))
        if not exported and next(m.children(), None) is None:   # a leaf it does not write
            raise NeuroedgeError(f"estimate_spiking_module: layer {path!r} ({kind}) is not "
                                 "exported by snnTorch's export_to_nir; it writes "
                                 f"{', '.join(SNNTORCH_LAYERS)}")
        if not isinstance(m, snn.SpikingNeuron):
            continue
        graded = getattr(m, "graded_spikes_factor", 1.0)
        if isinstance(graded, torch.Tensor):
            graded = graded.detach().cpu().numpy()
        if not np.all(np.asarray(graded) == 1.0):
            raise NeuroedgeError(f"estimate_spiking_module: {path!r} ({kind}) has "
                                 f"graded_spikes_factor={np.asarray(graded).tolist()}, which "
                                 "the export leaves out (its spikes would count 1): use 1")
        if getattr(m, "inhibition", False):
            raise NeuroedgeError(f"estimate_spiking_module: {path!r} ({kind}) has "
                                 "inhibition=True (only the strongest neuron fires), which "
                                 "the export leaves out: remove it")
        if getattr(m, "state_quant", False):
            raise NeuroedgeError(f"estimate_spiking_module: {path!r} ({kind}) quantises its "
                                 "state (state_quant), which the export leaves out: remove it")
        beta = getattr(m, "beta", None)
        if isinstance(beta, torch.Tensor) and bool((beta.detach() >= 1).any()):
            raise NeuroedgeError(f"estimate_spiking_module: {path!r} ({kind}) has beta >= 1 "
                                 "(no leak), which the export writes as an infinite tau; use "
                                 "beta < 1")


def _snntorch_resets(module) -> dict[str, str]:
    """Each snnTorch neuron's reset as the NIR import names it, by module path: snnTorch's
    default (``reset_mechanism="subtract"``, ``reset_delay=True``) is ``"snntorch"``; a
    ``Leaky``'s ``"zero"`` is NIR's reset to ``v_reset = 0`` (``"value"``: the same spikes,
    checked against snnTorch in ``tests/deploy/test_nir_snntorch_modules.py``). snnTorch's
    export records neither, and the import would assume the default. Any other reset is
    refused: RLeaky's and Synaptic's ``"zero"`` hold the state at 0 for the step after a
    spike (that step's input dropped), ``"none"`` never resets, and ``reset_delay=False``
    subtracts within the step; the import runs none of those."""
    import snntorch as snn
    import torch
    words = {}
    for path, m in module.named_modules():
        if not isinstance(m, snn.SpikingNeuron):
            continue
        mechanism = {0: "subtract", 1: "zero", 2: "none"}.get(int(m.reset_mechanism_val))
        delay = bool(getattr(m, "reset_delay", True))
        beta = getattr(m, "beta", None)
        if mechanism == "subtract" and delay and isinstance(beta, torch.Tensor) \
                and bool((beta.detach() == 0).any()):
            # snnTorch's delayed subtraction after a full decay has no equivalent on the
            # engine (the import would advise reset='value', which this call does not take)
            raise NeuroedgeError(
                f"estimate_spiking_module: {path} ({type(m).__name__}) has beta = 0 with "
                "reset_mechanism='subtract', which the NIR import cannot run; use "
                "reset_mechanism='zero' (a Leaky) or beta > 0")
        if mechanism == "subtract" and delay:
            words[path] = "snntorch"
        elif mechanism == "zero" and type(m) is snn.Leaky:
            words[path] = "value"
        else:
            what = f"reset_mechanism={mechanism!r}" + ("" if delay else ", reset_delay=False")
            raise NeuroedgeError(
                f"estimate_spiking_module: {path or 'the module'} ({type(m).__name__}) has "
                f"{what}, which the NIR import cannot run (it runs snnTorch's default, "
                "reset_mechanism='subtract' with reset_delay=True, and a Leaky's 'zero'); "
                "use reset_mechanism='subtract'")
    return words


def _state_resets(graph, resets: dict[str, str], prefix: str = "") -> None:
    """Write each neuron's reset (:func:`_snntorch_resets`) into its LIF / CubaLIF node's
    metadata, which the import honours: snnTorch names a node by its module's path (an
    RLeaky's neuron is ``path.lif`` in its subgraph)."""
    import nir
    for name, node in graph.nodes.items():
        key = f"{prefix}{name}"
        if isinstance(node, nir.NIRGraph):
            _state_resets(node, resets, f"{key}.")
        elif isinstance(node, (nir.LIF, nir.CubaLIF)):
            word = resets.get(key, resets.get(key.removesuffix(".lif")))
            if word is not None:
                node.metadata = {**(node.metadata or {}), "reset": word}


def _exportable_copy(module, sample):
    """A copy of the snnTorch ``module`` that snnTorch's export takes, the same network:
    each neuron's scalar ``beta``, ``alpha`` and ``threshold`` become tensors of its input's
    shape for one sample (the export of a scalar one fails NIR's type inference: its LIF
    node's input type is ``[]`` against the previous layer's ``[n]``, so
    ``snn.Leaky(beta=0.9)``, the usual way to write one, could not be exported), and each
    ``nn.Flatten`` flattens from one dimension earlier (the export traces one unbatched
    sample). The module itself is not touched, its hidden state included."""
    import copy

    import snntorch as snn
    import torch
    # a neuron's hidden state after a training step still holds autograd history, which
    # torch cannot deep-copy; the export resets the state anyway, so it is copied detached
    held = {id(t): t.detach().clone() for m in module.modules()
            for t in (*vars(m).values(), *m._buffers.values())
            if isinstance(t, torch.Tensor) and t.grad_fn is not None}
    net = copy.deepcopy(module, memo=held)
    neurons = [m for m in net.modules() if isinstance(m, snn.SpikingNeuron)]
    shapes: dict[int, tuple[int, ...]] = {}

    def seen(mod, args):
        if args and isinstance(args[0], torch.Tensor):
            shapes.setdefault(id(mod), tuple(args[0].shape))

    # snnTorch's export traces one unbatched sample, where nn.Flatten()'s start_dim=1 (the
    # batch's first feature dimension) would keep the channels apart: one earlier
    for m in net.modules():
        if isinstance(m, torch.nn.Flatten) and m.start_dim > 0:
            m.start_dim -= 1
            m.end_dim = m.end_dim - 1 if m.end_dim > 0 else m.end_dim
    hooks = [m.register_forward_pre_hook(seen) for m in neurons]
    try:
        _reset_state(neurons)
        with torch.no_grad():
            net(sample)
    finally:
        for h in hooks:
            h.remove()
    _reset_state(neurons)
    for m in neurons:
        shape = shapes.get(id(m))
        for name in ("beta", "alpha", "threshold"):
            t = getattr(m, name, None)
            if shape is None or not isinstance(t, torch.Tensor) or t.numel() != 1:
                continue
            full = t.detach().reshape(()).expand(shape).clone()
            if isinstance(t, torch.nn.Parameter):
                full = torch.nn.Parameter(full, requires_grad=t.requires_grad)
            setattr(m, name, full)
    return net


def _reset_state(neurons) -> None:
    """Zero the hidden state of these snnTorch neurons, and of no other.

    Each neuron's own ``reset_mem``: snnTorch's ``utils.reset`` calls the classmethod
    ``reset_hidden``, which zeroes every instance of the class that ever ran
    (``SpikingNeuron.instances``), so the caller's module lost its ``mem`` and ``syn`` (a
    deep copy is not in that list: the copy itself kept them)."""
    for m in neurons:
        m.reset_mem()


def _exports(module, sample) -> bool:
    """Whether snnTorch's export takes ``module`` on one step's input ``sample``."""
    from snntorch.export_nir import export_to_nir
    try:
        export_to_nir(_exportable_copy(module, sample), sample)
    except Exception:
        return False
    return True


def _module_facts(module) -> dict[str, int]:
    """NeuroBench's Footprint, ParameterCount and ConnectionSparsity of the torch module, by
    their definitions (neurobench.metrics.static: parameters' numel; bytes of parameters +
    buffers; zero weights of its Linear and convolution layers, zeros the network built
    from them leaves out)."""
    from sim.torch_engine.activity import model_facts
    return model_facts(module)
