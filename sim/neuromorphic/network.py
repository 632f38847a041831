"""Network description for NeuromorphicDevice: populations, projections, inputs, probes.

Plain data, validated when added, so that nothing runs on a malformed network.

Discrete-time semantics (one place, used by the kernels, the Brian2 tests and the NIR export)
---------------------------------------------------------------------------------------------
Time is a fixed step ``dt`` (seconds). Within step ``t`` every neuron, in this order:

1. receives ``x_c[t]``: the sum over the spikes arriving in step ``t`` on synaptic channel
   ``c`` of ``weight x payload`` (payload 1 for a binary spike), plus its injected current
   (added to channel 0 of LIF/IF, or straight into ``v`` for CUBA-LIF, see below), from
   step ``i_inj_start`` on (0 by default);
2. updates its state with the *new* input (Lava's and snnTorch's order):

   - ``cuba_lif`` (NIR ``CubaLIF``: ``tau_syn dI/dt = -I + w_in S``,
     ``tau_mem dv/dt = (v_leak - v) + r I``), per channel ``c``
     ``I_c[t] = a_c I_c[t-1] + g_c x_c[t]`` and
     ``v[t] = a_v v[t-1] + b_v + sum_c k_c I_c[t] + k_inj i_inj``.

     In float64 the current's sum is evaluated in this order (the reading chosen: Brian2's
     arithmetic, ``ge = a ge`` in its state update, then ``ge += w`` once per arriving spike):
     the spikes that arrive with delay 1 are added one at a time into the decayed current,
     then the summed input of the longer delays,
     ``I_c[t] = fl(...fl(fl(a_c I_c[t-1]) + fl(g_c u_1)) ... + fl(g_c u_m)) + fl(g_c y_c[t])``,
     ``u_k = fl(weight_k x payload_k)`` the delay-1 arrivals in the order they were sent
     (the spikes of step ``t - 1`` as the spike record lists them: source events, Poisson
     channels, then neurons by population and index; each spike's synapses in the order
     the projections were connected), ``y_c[t]`` the sum of the delay >= 2 arrivals (a ring
     buffer of sums, as before: a slot per delay holds a sum, not the spikes). Without
     delay-1 arrivals this is ``fl(fl(a_c I_c[t-1]) + fl(g_c x_c[t]))``, the plain
     formula's rounding; with two or more on one channel the roundings differ from one
     ``g_c x_c`` (1.6% of the (neuron, channel, step) triples with input in VA CUBA), and
     this order is what keeps the spikes identical to Brian2's. Why delay 1 only: its
     spikes go straight into the current, so the engine keeps no input buffer for them
     (issue 36). The update is active ("had input") when a delay-1 arrival's ``u_k`` was
     non-zero, or ``y_c[t]`` or the injected current is non-zero, or it spiked;
   - ``lif`` (NIR ``LIF``: ``tau dv/dt = (v_leak - v) + r I``) with ``I`` = the step's input
     (``x_0[t]`` summed over every delay, for ``if`` too; active when it is non-zero):
     ``v[t] = a_v v[t-1] + b_v + k (x_0[t] + i_inj)``;
   - ``if`` (NIR ``IF``: ``dv/dt = r I``): ``v[t] = v[t-1] + r dt (x_0[t] + i_inj)``;

   with coefficients from the integration scheme (``method``):

   ============  ======================  ==========================================
   coefficient   ``"euler"`` (forward)   ``"exact"`` (input held over the step)
   ============  ======================  ==========================================
   a_v           1 - dt/tau_mem          exp(-dt/tau_mem)
   b_v           (dt/tau_mem) v_leak     (1 - a_v) v_leak
   k (lif)       (dt/tau_mem) r          (1 - a_v) r
   a_c           1 - dt/tau_syn          exp(-dt/tau_syn)
   g_c           (dt/tau_syn) w_in       (dt/tau_syn) w_in
   k_c           (dt/tau_mem) r          r tau_s/(tau_s - tau_m) (a_c - a_v)
                                         (r (dt/tau_m) a_v when tau_s == tau_m)
   ============  ======================  ==========================================

   ``"euler"`` needs ``dt <= 2 tau`` for every time constant (``|1 - dt/tau| <= 1``);
   :meth:`Network.population` refuses a faster one, whose state would grow without bound.

   A spike is one step of ``S = 1`` (snnTorch's reading of NIR's spike input); the
   ``exact`` coupling ``k_c`` is the exact solution of the two linear ODEs over one step
   for the current just after the step's input arrived (Brian2's ``method='exact'`` with
   synapses scheduled before the state update).
3. is refractory for ``refractory_steps`` steps after a spike: ``v`` is held, currents
   keep integrating, no spike (Brian2's ``(unless refractory)``). A spike in step ``s``
   keeps the neuron refractory while ``t - s < refractory_steps``, with
   ``refractory_steps = int((refractory + 1e-3 dt) / dt)`` (Brian2's
   ``timestep(refractory, dt)``: a whole number of steps as given, a fractional one
   truncated, 1.5 ms at dt = 1 ms is 1 step); at most ``MAX_STEPS`` steps;
4. spikes iff ``v[t] > v_threshold`` (strict, NIR), then resets: ``reset="value"`` sets
   ``v = v_reset`` (NIR); ``reset="subtract"`` subtracts ``v_threshold - v_reset``
   (snnTorch's subtraction when ``v_reset = 0``);
5. its spike reaches its targets in step ``t + delay`` (integer ``delay >= 1``: a spike
   always needs at least one step to travel, as on Loihi).

Probes of ``"i<c>"`` and the engine's ``I`` after a ``run`` report ``I_c[t]``; a run split
into several ``run`` calls gives the same spikes, states and ledger as one call.

Sources: an event source's channel sends at most one spike per step (``spikes`` refuses
two events of one ``(step, index)``: merge them into one, its payload the one to send);
its payload is delivered as ``weight x payload`` on every chip (not yet checked against a
binary chip's ``limits.spike_payload_bits``, as neurons' payloads are). Poisson sources
draw each channel from its own stream: the ``k``-th Poisson source of a network (``k = 0,
1, ...`` in the order added) from ``SeedSequence(seed, spawn_key=(k,))`` (``k = 0``:
``SeedSequence(seed)``), so sources of one seed are independent and a network's trains are
reproducible (:meth:`Source.channel_seeds`).

Units: ``dt`` and time constants in seconds; ``v``, thresholds and weights in the same
arbitrary unit (mV in the Vogels-Abbott example); ``r`` converts input to voltage.

Custom neuron kernels (:class:`NeuronKernel`) plug in as populations with their own state
and parameter arrays; their spikes may carry a small signed integer payload (graded or
ternary spikes, as DiffPC's units need). Their injected current is added to input channel
0 from step ``i_inj_start`` on, as for the built-in models; ``method`` and ``reset`` do not
apply to them (the kernel integrates and resets its own state) and are refused.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from sim.errors import ModelError

MODELS = ("lif", "if", "cuba_lif")
METHODS = ("euler", "exact")
RESETS = ("value", "subtract")
MAX_CHANNELS = 4  # synaptic channels of a cuba_lif population (VA CUBA uses 2: exc, inh)
# Largest step index and delay: beyond it a float input no longer converts to the engine's
# int64 steps faithfully (1e20 became -2**63, a negative delay); 2**31 - 1 steps of 1 ms
# are 24 days of simulated time.
MAX_STEPS = 2**31 - 1

# model -> required parameters, optional parameters with defaults
_PARAMS = {
    "lif": ({"tau_mem", "v_threshold"},
            {"r": 1.0, "v_leak": 0.0, "v_reset": 0.0, "refractory": 0.0, "v_init": None}),
    "if": ({"v_threshold"},
           {"r": 1.0, "v_reset": 0.0, "refractory": 0.0, "v_init": None}),
    "cuba_lif": ({"tau_mem", "tau_syn", "v_threshold"},
                 {"r": 1.0, "v_leak": 0.0, "v_reset": 0.0, "w_in": 1.0, "refractory": 0.0,
                  "v_init": None}),
}


def _err(where: str, msg: str) -> ModelError:
    return ModelError(f"[Network.{where}] {msg}")


def _finite_array(where: str, name: str, value, shape=None, dtype=np.float64) -> np.ndarray:
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError):
        kind = "O"
    if kind == "c":   # the float cast would drop the imaginary part without a word
        raise _err(where, f"{name} is complex ({np.asarray(value).dtype}); expected real "
                          "numbers")
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise _err(where, f"{name} = {value!r}: expected numbers") from None
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr.ravel()))
        raise _err(where, f"{name} has {bad.size} non-finite value(s) (first at flat index "
                          f"{bad[0]}: {arr.ravel()[bad[0]]}); every value must be finite")
    if shape is not None and arr.shape != shape:
        if arr.ndim == 0:
            arr = np.full(shape, arr.item(), dtype=dtype)
        else:
            raise _err(where, f"{name} has shape {arr.shape}; expected {shape} or a scalar")
    return arr


def refractory_steps(refractory, dt: float) -> np.ndarray:
    """Whole steps a refractory period of ``refractory`` seconds lasts at time step ``dt``:
    Brian2's ``timestep(refractory, dt) = int((refractory + 1e-3 dt) / dt)`` (a whole number
    of steps stays that number despite rounding, a fractional one is truncated), as float64
    so that a caller can bound it before the integer cast."""
    return np.floor((np.asarray(refractory, np.float64) + 1e-3 * dt) / dt)


def _index_array(where: str, name: str, value, n: int) -> np.ndarray:
    """``value`` as int64 indices into ``0..n-1``; refuses masks, fractions and complex."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        arr = np.asarray(value, dtype=object)   # ragged: _finite_array names it
    if arr.dtype == np.bool_:   # True/False would be read as indices 1/0
        raise _err(where, f"{name} is a boolean mask; expected integer indices in 0..{n - 1} "
                          "(np.flatnonzero(mask) gives them)")
    if arr.dtype.kind not in "iu":
        arr = _finite_array(where, name, value)
        bad = np.flatnonzero(arr != np.round(arr))
        if bad.size:    # 0.7 became index 0, 2.9 index 2
            k = int(bad[0])
            raise _err(where, f"{name}[{k}] = {arr.ravel()[k]:g}; indices must be integers "
                              f"in 0..{n - 1}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise _err(where, f"{name} spans {arr.min():.0f}..{arr.max():.0f}; expected "
                          f"0..{n - 1}")
    return arr.astype(np.int64)


@dataclass(frozen=True)
class NeuronKernel:
    """A user-supplied neuron model: a numba (or numpy) function plus named state and params.

    ``update(inp, state, params, payload) -> None`` is called once per step for the
    population, with C-contiguous arrays of its own neurons only:

    - ``inp``: float64 ``(n, n_channels)``, the step's synaptic input (weight x payload summed)
      plus injected current on channel 0; read only (the engine reuses it between steps);
    - ``state``: float64 ``(len(state_names), n)``, updated in place;
    - ``params``: float64 ``(len(param_names), n)``, read only;
    - ``payload``: int32 ``(n,)``, all 0 on entry; write a non-zero signed integer to emit a
      spike carrying it (``|payload| < 2**(spike_payload_bits-1)`` of the profile).

    Kernel authors' contract for speed: make ``update`` a numba ``@njit`` function
    (``cache=True`` caches its own compilation) of exactly these four arguments that returns
    nothing, writes only ``state`` and ``payload`` and reads no global state that changes.
    The engine then calls it inside its compiled step loop (``custom_loop.run_custom``): all
    steps of a ``run`` in one numba call, compiled once per process for each distinct set
    of update functions in a network. Any other callable (plain Python or numpy) is called
    from Python once per step (``run(..., loop="python")``), with the same results.
    """

    name: str
    update: Callable
    state_names: tuple[str, ...]
    param_names: tuple[str, ...] = ()
    n_channels: int = 1

    def __post_init__(self):
        if not callable(self.update):
            raise _err("kernel", f"NeuronKernel {self.name!r}: update must be callable")
        if len(set(self.state_names)) != len(self.state_names) or not self.state_names:
            raise _err("kernel", f"NeuronKernel {self.name!r}: state_names "
                                 f"{self.state_names} must be unique and non-empty")
        if isinstance(self.n_channels, bool) or not isinstance(self.n_channels,
                                                               (int, np.integer)) \
                or not 1 <= self.n_channels <= MAX_CHANNELS:
            raise _err("kernel", f"NeuronKernel {self.name!r}: n_channels = "
                                 f"{self.n_channels!r}; expected an integer 1..{MAX_CHANNELS}")


@dataclass
class Population:
    """``n`` neurons of one model with per-neuron parameter arrays (float64, shape (n,))."""

    name: str
    n: int
    model: str | NeuronKernel
    params: dict[str, np.ndarray]
    method: str = "euler"
    reset: str = "value"
    n_channels: int = 1
    i_inj: np.ndarray | None = None   # injected current per neuron (per-step input)
    i_inj_start: int = 0    # first step the injected current flows (NIR import: a bias of a
                            # population L transmission steps from the input starts at L)
    state_init: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def custom(self) -> bool:
        return isinstance(self.model, NeuronKernel)

    @property
    def model_name(self) -> str:
        return self.model.name if self.custom else self.model

    @property
    def state_names(self) -> tuple[str, ...]:
        if self.custom:
            return self.model.state_names
        chans = tuple(f"i{c}" for c in range(self.n_channels)) if self.model == "cuba_lif" \
            else ()
        return ("v",) + chans


@dataclass
class Source:
    """Spikes from outside the cores: explicit events or Poisson trains, ``n`` channels.

    ``kind == "events"``: ``steps[k]``, ``index[k]`` (and ``payload[k]``) list each spike.
    ``kind == "poisson"``: each channel spikes with probability ``rate_hz x dt`` per step,
    drawn from ``seed`` and ``stream`` (the source's position among the network's Poisson
    sources): the same seed and position give the same trains, two sources of one seed
    independent ones (:meth:`channel_seeds`).
    """

    name: str
    n: int
    kind: str
    steps: np.ndarray | None = None
    index: np.ndarray | None = None
    payload: np.ndarray | None = None
    rate_hz: np.ndarray | None = None
    seed: int = 0
    stream: int = 0

    def channel_seeds(self) -> np.ndarray:
        """One uint64 SplitMix state per channel: ``SeedSequence(seed, spawn_key=(stream,))``
        (``stream`` 0, the network's first Poisson source: ``SeedSequence(seed)``, the
        stream every source drew from before sources had their own)."""
        key = (self.stream,) if self.stream else ()
        return np.random.SeedSequence(self.seed, spawn_key=key).generate_state(self.n,
                                                                             np.uint64)


@dataclass
class Projection:
    """Synapses ``pre -> post`` as COO arrays (one entry per synapse, NIR weight [out, in])."""

    name: str
    pre: str
    post: str
    pre_idx: np.ndarray     # int64 (m,)
    post_idx: np.ndarray    # int64 (m,)
    weight: np.ndarray      # float64 (m,)
    delay: np.ndarray       # int64 (m,), steps >= 1
    channel: int = 0
    kernel_weights: int | None = None   # weight-shared (convolutional) form: the distinct
                                        # weights a chip with shared connectivity stores;
                                        # None: every synapse has its own weight
    dense_connections: int | None = None   # NeuroBench's Dense: the connections of the
                                           # producer's matrix, weights of 0 included, which
                                           # need not be stored; None: the synapses above


class Network:
    """A spiking network: add populations, sources, projections and probes, then compile.

    Parameters
    ----------
    dt : float
        Time step in seconds (> 0).

    Examples
    --------
    >>> net = Network(dt=1e-3)
    >>> _ = net.population("out", 2, "lif", tau_mem=0.02, v_threshold=1.0)
    >>> _ = net.spikes("in", 1, steps=[0, 3], index=[0, 0])
    >>> _ = net.connect("in", "out", weight=[[30.0], [10.0]], delay=1)
    >>> sorted(net.populations)
    ['out']
    """

    def __init__(self, dt: float):
        if not (isinstance(dt, (int, float, np.floating)) and np.isfinite(dt) and dt > 0):
            raise _err("__init__", f"dt = {dt!r}: expected a finite time step > 0 in seconds")
        self.dt = float(dt)
        self.populations: dict[str, Population] = {}
        self.sources: dict[str, Source] = {}
        self.projections: dict[str, Projection] = {}
        self.probes: list[tuple[str, str]] = []

    # -- nodes ---------------------------------------------------------------------------
    def _new_name(self, where: str, name: str) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise _err(where, f"name {name!r}: expected a non-empty string without '/'")
        if name in self.populations or name in self.sources:
            raise _err(where, f"name {name!r} is already used by another population or source")

    @staticmethod
    def _check_n(where: str, name: str, n) -> int:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise _err(where, f"{name}: n = {n!r}; expected an integer >= 1")
        return int(n)

    def population(self, name: str, n: int, model: str | NeuronKernel, *, method=None,
                   reset=None, n_channels: int | None = None, i_inj=None,
                   i_inj_start: int = 0, **params) -> Population:
        """Add ``n`` neurons of ``model`` (``"lif"``, ``"if"``, ``"cuba_lif"`` or a kernel).

        Parameters are scalars or ``(n,)`` arrays: ``tau_mem``, ``tau_syn`` (s; a tuple of
        per-channel values for ``n_channels > 1``), ``v_threshold``, ``v_reset``, ``v_leak``,
        ``r``, ``w_in``, ``refractory`` (s), ``v_init`` (initial ``v``; default ``v_reset``).
        ``method`` (default ``"euler"``), ``reset`` (default ``"value"``), ``n_channels``
        (default 1). For a :class:`NeuronKernel`, pass its ``param_names`` and optional
        ``<state>_init``; ``i_inj`` and ``i_inj_start`` apply to it, ``method`` and
        ``reset`` do not (refused), ``n_channels`` is the kernel's (another is refused).
        """
        where = "population"
        self._new_name(where, name)
        n = self._check_n(where, name, n)
        inj = None if i_inj is None else _finite_array(where, f"{name}.i_inj", i_inj, (n,))
        if isinstance(i_inj_start, bool) or not isinstance(i_inj_start, (int, np.integer)) \
                or not 0 <= i_inj_start <= MAX_STEPS:
            raise _err(where, f"{name}: i_inj_start = {i_inj_start!r}; expected a step "
                              f"0..{MAX_STEPS}")
        if isinstance(model, NeuronKernel):
            return self._custom_population(name, n, model, inj, int(i_inj_start), method,
                                           reset, n_channels, params)
        method = "euler" if method is None else method
        reset = "value" if reset is None else reset
        n_channels = 1 if n_channels is None else n_channels
        if method not in METHODS:
            raise _err(where, f"{name}: method {method!r} is unknown; expected one of {METHODS}")
        if reset not in RESETS:
            raise _err(where, f"{name}: reset {reset!r} is unknown; expected one of {RESETS}")
        if model not in MODELS:
            raise _err(where, f"{name}: neuron model {model!r} is unknown; expected one of "
                              f"{MODELS} or a NeuronKernel")
        if model != "cuba_lif" and n_channels != 1:
            raise _err(where, f"{name}: n_channels = {n_channels}; only cuba_lif has several "
                              "synaptic channels")
        if isinstance(n_channels, bool) or not isinstance(n_channels, (int, np.integer)) \
                or not 1 <= n_channels <= MAX_CHANNELS:
            raise _err(where, f"{name}: n_channels = {n_channels!r}; expected an integer "
                              f"1..{MAX_CHANNELS}")
        n_channels = int(n_channels)
        required, optional = _PARAMS[model]
        unknown = set(params) - required - set(optional)
        if unknown:
            raise _err(where, f"{name}: unknown parameter(s) {sorted(unknown)} for model "
                              f"{model!r}; it takes {sorted(required | set(optional))}")
        missing = required - set(params)
        if missing:
            raise _err(where, f"{name}: model {model!r} needs parameter(s) {sorted(missing)}")
        out: dict[str, np.ndarray] = {}
        for key, default in optional.items():
            if key not in params and default is not None:
                out[key] = np.full(n, float(default))
        for key, value in params.items():
            if key == "v_init" and value is None:
                continue
            if key == "tau_syn":
                vals = value if isinstance(value, (tuple, list)) else (value,) * n_channels
                if len(vals) != n_channels:
                    raise _err(where, f"{name}: tau_syn has {len(vals)} entries for "
                                      f"n_channels = {n_channels}; give one per channel")
                for c, v in enumerate(vals):
                    out[f"tau_syn{c}"] = _finite_array(where, f"{name}.tau_syn[{c}]", v, (n,))
                continue
            out[key] = _finite_array(where, f"{name}.{key}", value, (n,))
        for key, arr in out.items():
            if key.startswith("tau") and not np.all(arr > 0):
                raise _err(where, f"{name}.{key} has min {arr.min():g}; time constants must "
                                  "be > 0 seconds")
            if key == "refractory" and not np.all(arr >= 0):
                raise _err(where, f"{name}.refractory has min {arr.min():g}; must be >= 0 s")
            # 1e17 s became -2**63 steps in the int64 cast, and no refractoriness at all
            if key == "refractory" and refractory_steps(arr.max(), self.dt) > MAX_STEPS:
                raise _err(where, f"{name}.refractory has max {arr.max():g} s = "
                                  f"{refractory_steps(arr.max(), self.dt):g} steps of dt = "
                                  f"{self.dt:g} s; refractory periods must be at most "
                                  f"{MAX_STEPS} steps ({MAX_STEPS * self.dt:g} s)")
            # Forward Euler multiplies the state by a = 1 - dt/tau each step: |a| > 1 (the
            # state grows without bound, a 3e14 blow-up in 40 steps) exactly when dt > 2 tau.
            if key.startswith("tau") and method == "euler" and np.any(self.dt > 2 * arr):
                i = int(np.argmin(arr))
                raise _err(where, f"{name}.{key}[{i}] = {arr[i]:g} s with dt = {self.dt:g} s: "
                                  "explicit Euler (method='euler') is unstable for dt > 2 tau; "
                                  f"need tau >= dt/2 = {self.dt / 2:g} s, a smaller dt, or "
                                  "method='exact'")
        pop = Population(name, n, model, out, method, reset, n_channels, inj,
                         i_inj_start=int(i_inj_start))
        self.populations[name] = pop
        return pop

    def _custom_population(self, name, n, kernel: NeuronKernel, inj, i_inj_start, method,
                           reset, n_channels, params) -> Population:
        where = "population"
        # the kernel integrates and resets its own state: neither choice can reach it
        for arg, value, does in (("method", method, "integrates"), ("reset", reset, "resets")):
            if value is not None:
                raise _err(where, f"{name}: {arg} = {value!r} does not apply to custom kernel "
                                  f"{kernel.name!r}, which {does} its own state; omit {arg}")
        if n_channels is not None and (isinstance(n_channels, bool) or not isinstance(
                n_channels, (int, np.integer)) or n_channels != kernel.n_channels):
            raise _err(where, f"{name}: n_channels = {n_channels!r}; custom kernel "
                              f"{kernel.name!r} has n_channels = {kernel.n_channels} (omit "
                              "n_channels, or set it on the NeuronKernel)")
        inits = {k[:-5]: v for k, v in params.items() if k.endswith("_init")
                 and k[:-5] in kernel.state_names}
        rest = {k: v for k, v in params.items() if k[:-5] not in inits or not k.endswith("_init")}
        unknown = set(rest) - set(kernel.param_names)
        if unknown:
            raise _err(where, f"{name}: unknown parameter(s) {sorted(unknown)} for kernel "
                              f"{kernel.name!r}; it takes {list(kernel.param_names)} and "
                              f"<state>_init for states {list(kernel.state_names)}")
        missing = set(kernel.param_names) - set(rest)
        if missing:
            raise _err(where, f"{name}: kernel {kernel.name!r} needs parameter(s) "
                              f"{sorted(missing)}")
        out = {k: _finite_array(where, f"{name}.{k}", v, (n,)) for k, v in rest.items()}
        init = {k: _finite_array(where, f"{name}.{k}_init", v, (n,)) for k, v in inits.items()}
        pop = Population(name, n, kernel, out, "euler", "value", int(kernel.n_channels), inj,
                         i_inj_start=i_inj_start, state_init=init)
        self.populations[name] = pop
        return pop

    def spikes(self, name: str, n: int, steps, index, payload=None) -> Source:
        """Explicit input spikes: channel ``index[k]`` fires in step ``steps[k]``."""
        where = "spikes"
        self._new_name(where, name)
        n = self._check_n(where, name, n)
        st = _finite_array(where, f"{name}.steps", steps, dtype=np.float64)
        if np.asarray(index).dtype == np.bool_:   # True/False would be read as channels 1/0
            raise _err(where, f"{name}.index is a boolean mask; expected integer channel "
                              f"indices in 0..{n - 1} (np.flatnonzero(mask) gives them)")
        ix = _finite_array(where, f"{name}.index", index, dtype=np.float64)
        if st.ndim != 1 or st.shape != ix.shape:
            raise _err(where, f"{name}: steps {st.shape} and index {ix.shape} must be 1-D "
                              "arrays of the same length")
        if np.any(st != np.round(st)) or np.any(st < 0) or np.any(st > MAX_STEPS):
            raise _err(where, f"{name}.steps must be integers in 0..{MAX_STEPS} (time steps, "
                              "not seconds)")
        if np.any(ix != np.round(ix)) or np.any(ix < 0) or np.any(ix >= n):
            raise _err(where, f"{name}.index must be integers in 0..{n - 1}")
        if payload is None:
            pl = np.ones(st.size, np.int32)
        else:
            pf = _finite_array(where, f"{name}.payload", payload, st.shape)
            # payloads are the chip's signed integers; 0 is "no spike" to the kernels
            bad = np.flatnonzero((pf != np.round(pf)) | (pf == 0) | (np.abs(pf) > 2**31 - 1))
            if bad.size:
                k = int(bad[0])
                raise _err(where, f"{name}.payload[{k}] = {pf[k]:g}: payloads must be non-zero "
                                  f"integers in -{2**31 - 1}..{2**31 - 1} (signed int32)")
            pl = pf.astype(np.int32)
        order = np.lexsort((ix, st))
        # two events of one (step, index) merged into one spike, the last payload winning
        same = np.flatnonzero((st[order][1:] == st[order][:-1])
                              & (ix[order][1:] == ix[order][:-1]))
        if same.size:
            a, b = sorted(order[same[0]:same[0] + 2].tolist())
            raise _err(where, f"{name}: events {a} and {b} are both step {st[a]:g}, index "
                              f"{ix[a]:g}; a channel sends at most one spike per step (give "
                              "one event, with the payload to send)")
        src = Source(name, n, "events", steps=st[order].astype(np.int64),
                     index=ix[order].astype(np.int64), payload=pl[order])
        self.sources[name] = src
        return src

    def poisson(self, name: str, n: int, rate_hz, seed: int = 0) -> Source:
        """``n`` independent Poisson spike trains of ``rate_hz`` (scalar or (n,)), seeded.

        Independent of every other Poisson source of the network too, the same seed or not
        (:meth:`Source.channel_seeds`)."""
        where = "poisson"
        self._new_name(where, name)
        n = self._check_n(where, name, n)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise _err(where, f"{name}: seed = {seed!r}; expected an integer >= 0")
        rate = _finite_array(where, f"{name}.rate_hz", rate_hz, (n,))
        if np.any(rate < 0) or np.any(rate * self.dt > 1):
            raise _err(where, f"{name}.rate_hz must lie in 0..1/dt = {1 / self.dt:g} Hz")
        stream = sum(1 for s in self.sources.values() if s.kind == "poisson")
        src = Source(name, n, "poisson", rate_hz=rate, seed=int(seed), stream=stream)
        self.sources[name] = src
        return src

    # -- edges ---------------------------------------------------------------------------
    def size_of(self, name: str) -> int:
        node = self.populations.get(name) or self.sources.get(name)
        if node is None:
            raise _err("connect", f"no population or source named {name!r}; known: "
                                  f"{sorted([*self.populations, *self.sources])}")
        return node.n

    def connect(self, pre: str, post: str, weight=None, *, pre_idx=None, post_idx=None,
                delay=1, channel: int = 0, name: str | None = None,
                kernel_weights: int | None = None,
                dense_connections: int | None = None) -> Projection:
        """Connect ``pre`` to ``post``: dense ``weight`` (n_post, n_pre) or sparse COO.

        Sparse form: ``pre_idx``, ``post_idx`` and ``weight`` of equal length. ``delay`` is
        in steps (>= 1), a scalar or one per synapse (dense: shape (n_post, n_pre)).
        ``channel`` picks the synaptic channel of a cuba_lif target. ``kernel_weights``:
        the synapses are a weight-shared (convolutional) layer whose kernel holds that many
        weights (what a chip with shared connectivity stores instead of one per synapse).
        ``dense_connections``: the connections NeuroBench's Dense synaptic operations count
        each step, the producer's matrix with its weights of 0 (which are not stored and
        cost nothing), at least the synapses given; None: the synapses given.
        """
        where = "connect"
        n_pre, n_post = self.size_of(pre), self.size_of(post)
        if post not in self.populations:
            raise _err(where, f"post {post!r} is a source; projections must end on a population")
        name = name or f"{pre}->{post}"
        if name in self.projections:
            raise _err(where, f"projection {name!r} exists; pass name= to add another")
        target = self.populations[post]
        if not (isinstance(channel, int) and 0 <= channel < target.n_channels):
            raise _err(where, f"{name}: channel = {channel!r}; {post} has channels "
                              f"0..{target.n_channels - 1}")
        if weight is None:
            raise _err(where, f"{name}: weight is required")
        if kernel_weights is not None and (isinstance(kernel_weights, bool) or not isinstance(
                kernel_weights, (int, np.integer)) or kernel_weights < 1):
            raise _err(where, f"{name}: kernel_weights = {kernel_weights!r}; expected an "
                              "integer >= 1 (the weights the shared kernel holds) or None")
        if pre_idx is None and post_idx is None:
            w = _finite_array(where, f"{name}.weight", weight)
            if w.shape != (n_post, n_pre):
                raise _err(where, f"{name}.weight has shape {w.shape}; expected "
                                  f"(n_post, n_pre) = ({n_post}, {n_pre}) as NIR's [out, in]")
            post_i, pre_i = np.nonzero(w)
            wv = w[post_i, pre_i]
            d = np.asarray(delay)
            # dense delays are the weight's matrix or one scalar: any other shape would be
            # indexed as if it were (n_post, n_pre) and give other synapses' delays
            if d.ndim != 0 and d.shape != w.shape:
                raise _err(where, f"{name}.delay has shape {d.shape}; expected a scalar or "
                                  f"the weight's shape (n_post, n_pre) = {w.shape}")
            dv = d[post_i, pre_i] if d.ndim == 2 else d
        else:
            if pre_idx is None or post_idx is None:
                raise _err(where, f"{name}: sparse form needs both pre_idx and post_idx")
            pre_i = _index_array(where, f"{name}.pre_idx", pre_idx, n_pre)
            post_i = _index_array(where, f"{name}.post_idx", post_idx, n_post)
            wv = _finite_array(where, f"{name}.weight", weight)
            if wv.ndim == 0:
                wv = np.full(pre_i.shape, wv.item())
            if not (pre_i.ndim == 1 and pre_i.shape == post_i.shape == wv.shape):
                raise _err(where, f"{name}: pre_idx {pre_i.shape}, post_idx {post_i.shape} and "
                                  f"weight {wv.shape} must be 1-D of one length")
            dv = delay
        dv = _finite_array(where, f"{name}.delay", dv)
        dv = np.broadcast_to(dv, wv.shape) if dv.ndim == 0 else dv
        if dv.shape != wv.shape:
            raise _err(where, f"{name}.delay has shape {np.shape(delay)}; expected a scalar or "
                              "one per synapse")
        if np.any(dv != np.round(dv)) or np.any(dv < 1):
            raise _err(where, f"{name}.delay must be integers >= 1 step (a spike needs a step "
                              f"to travel); got min {dv.min() if dv.size else '-'}")
        if dv.size and dv.max() > MAX_STEPS:
            raise _err(where, f"{name}.delay has max {dv.max():g} steps; delays must be at most "
                              f"{MAX_STEPS} steps")
        if dense_connections is not None and (isinstance(dense_connections, bool) or not (
                isinstance(dense_connections, (int, np.integer))
                and dense_connections >= wv.size)):
            raise _err(where, f"{name}: dense_connections = {dense_connections!r}; expected an "
                              f"integer >= {wv.size} (the synapses given, plus the weights "
                              "of 0 left out) or None")
        proj = Projection(name, pre, post, np.asarray(pre_i, np.int64),
                          np.asarray(post_i, np.int64), np.asarray(wv, np.float64),
                          np.asarray(dv, np.int64).copy(), channel,
                          None if kernel_weights is None else int(kernel_weights),
                          None if dense_connections is None else int(dense_connections))
        self.projections[name] = proj
        return proj

    def probe(self, target: str, what: str = "spikes") -> None:
        """Record ``"spikes"`` of a population or source, or a state variable of a population."""
        where = "probe"
        if target in self.sources and what == "spikes":
            self.probes.append((target, what))
            return
        pop = self.populations.get(target)
        if pop is None:
            raise _err(where, f"no population named {target!r}")
        if what != "spikes" and what not in pop.state_names:
            raise _err(where, f"{target} has no state {what!r}; probe 'spikes' or one of "
                              f"{list(pop.state_names)}")
        if (target, what) not in self.probes:
            self.probes.append((target, what))

    def summary(self) -> Mapping[str, int]:
        return {"populations": len(self.populations), "sources": len(self.sources),
                "neurons": sum(p.n for p in self.populations.values()),
                "synapses": sum(p.weight.size for p in self.projections.values())}
