"""Rebuild each published measurement's workload with the real engines and price it.

``validate()`` reads the validation table (``hw_profiles.validation.load_table``), rebuilds every
row's workload on the engine of its profile's kind, prices it with the profile's execution
model and returns one :class:`ValidationRow` per measurement: predicted and measured joules
(and seconds, where published) per the row's unit, their ratio, and a status:

- ``ok``: predicted and compared;
- ``not rebuildable``: the source does not publish a number the workload needs (the table's
  ``missing`` says which); nothing is estimated in its place.

Readings chosen here, stated once:

- **Deployed precision.** The GPU and MCU measurements ran int8 networks (TensorRT,
  X-CUBE-AI). Torch on a CPU host cannot run int8 convolutions, so such a network is run in
  fp32 and its counts are re-typed to the deployed precision by
  :func:`sim.precision.retyped_int8` (the re-typing ``estimate --dtype int8`` uses too):
  each ``mac_fp32`` becomes a ``mac_int8``, each ``flop_fp32`` an ``int_add``, and every
  byte count is divided by 4 (4-byte floats become 1-byte integers). Counts of other ops
  are kept. A row measured in fp16 (the Movidius NCS) is re-typed the same way by
  :func:`sim.precision.retyped_fp16`: fp32 MACs and flops become fp16 ones and bytes are halved.
- **Tile replication (TrueNorth).** The published operating point is a full chip of
  1,048,576 neurons; the row simulates ``simulated_neurons`` of them with the same per-neuron
  statistics and multiplies every count by ``neurons / simulated_neurons`` before pricing, so
  the whole chip's static power is charged against the whole chip's events. TrueNorth's
  cores are identical and its per-event energies do not depend on placement, which is what
  makes the scaling exact for energy.
- **Activity.** Spiking inputs are Poisson trains at the published rate, drawn from the row's
  seed; nothing is fitted to the measurement.

No profile parameter is fitted to this table. Rows whose measurement some profile number was
derived from are marked ``group = "calibration"`` and summarised apart from ``held-out`` rows.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from statistics import median

import numpy as np

from hw_profiles.errors import NeuroedgeError
from hw_profiles.loader import load
from hw_profiles.validation import DEFAULT_DEVICE_KIND, Measurement, load_table
from sim.ledger import Ledger
from sim.precision import retyped_fp16, retyped_int8
from sim.pricing import price


@dataclass(frozen=True)
class ValidationRow:
    """Predicted against measured for one published measurement (J and s per ``per``)."""

    id: str
    kind: str
    profile: str
    group: str
    part: str
    per: str
    status: str                      # ok | not rebuildable
    measured_j: float
    predicted_j: float | None
    measured_latency_s: float | None
    predicted_latency_s: float | None
    detail: str
    source: str
    stack: str = ""                  # the software stack it was priced for
    device_kind: str = ""            # hw_profiles.validation.DEVICE_KINDS

    @property
    def ratio(self) -> float | None:
        """Predicted / measured energy (None when not predicted)."""
        return None if self.predicted_j is None else self.predicted_j / self.measured_j

    @property
    def latency_ratio(self) -> float | None:
        if self.predicted_latency_s is None or self.measured_latency_s is None:
            return None
        return self.predicted_latency_s / self.measured_latency_s

    def to_dict(self) -> dict:
        out = asdict(self)
        out["ratio"], out["latency_ratio"] = self.ratio, self.latency_ratio
        return out


# -- ledgers: scaling and re-typing ------------------------------------------------------------
def scaled(ledger: Ledger, factor: int) -> Ledger:
    """A copy of ``ledger`` with every op, byte and sample count multiplied by ``factor``."""
    out = Ledger()
    for scope in ledger.scopes():
        for op, n in ledger.ops(scope).items():
            out.add(op, int(n) * factor, scope=scope)
        for (level, direction), n in ledger.bytes(scope).items():
            kw = {direction: int(n) * factor}
            out.add_bytes(level, scope=scope, **kw)
    for scope, n in ledger.samples().items():
        out.add_samples(int(n) * factor, scope=scope)
    # the replicas run side by side on their own cores: a step lasts as long as one replica's
    # step, so the step-time sums stay; the per-core table gains a block of rows per replica
    for scope in ledger.scopes():
        rec = ledger.timing(scope)
        if rec is not None:
            ops = np.asarray(rec.core_ops)
            tiled = np.vstack([ops[:1] * factor, np.tile(ops[1:], (factor, 1))])
            out.add_timing(replace(rec, core_ops=tiled), scope=scope)
    return out


# -- torch workloads ---------------------------------------------------------------------------
def _torch():
    import torch
    return torch


def mlp(params) -> tuple:
    """Fully connected ReLU network ``layers[0] -> ... -> layers[-1]`` and one input batch."""
    torch = _torch()
    nn = torch.nn
    sizes = list(params["layers"])
    mods = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        mods.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods), torch.zeros(int(params["batch"]), sizes[0])


def _conv_bn(nn, cin, cout, k, stride=1, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride, padding=k // 2 if isinstance(k, int) else
                        tuple(x // 2 for x in k), groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return layers + ([nn.ReLU()] if relu else [])


def ds_cnn_kws(params) -> tuple:
    """MLPerf Tiny keyword spotting DS-CNN (mlcommons/tiny benchmark/training/keyword_spotting/
    keras_model.py, 'ds_cnn'): 49 x 10 MFCC input, conv 64 @ 10 x 4 stride 2, four depthwise-
    separable blocks of 64, average pool, dense 12."""
    torch = _torch()
    nn = torch.nn
    layers = [nn.ZeroPad2d((1, 2, 4, 5)), nn.Conv2d(1, 64, (10, 4), 2, bias=False),
              nn.BatchNorm2d(64), nn.ReLU()]    # Keras 'same' with stride 2: pad (4,5) x (1,2)
    for _ in range(4):
        layers += _conv_bn(nn, 64, 64, 3, groups=64) + _conv_bn(nn, 64, 64, 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 12)]
    return nn.Sequential(*layers), torch.zeros(int(params["batch"]), 1, 49, 10)


def mobilenet_v1_vww(params) -> tuple:
    """MLPerf Tiny visual wake words MobileNetV1, alpha 0.25 (8 base filters), 96 x 96 x 3,
    2 classes (mlcommons/tiny benchmark/training/visual_wake_words/vww_model.py)."""
    torch = _torch()
    nn = torch.nn
    layers = _conv_bn(nn, 3, 8, 3, stride=2)
    # (output filters, depthwise stride) of the 13 depthwise-separable blocks of MobileNetV1
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + \
        [(256, 2), (256, 1)]
    c = 8
    for cout, s in blocks:
        layers += _conv_bn(nn, c, c, 3, stride=s, groups=c) + _conv_bn(nn, c, cout, 1)
        c = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 2)]
    return nn.Sequential(*layers), torch.zeros(int(params["batch"]), 3, 96, 96)


def _residual_module():
    torch = _torch()
    nn = torch.nn

    class Residual(nn.Module):
        """ResNet basic block: two 3 x 3 conv-BN, a 1 x 1 strided shortcut when shapes change."""

        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(*_conv_bn(nn, cin, cout, 3, stride=stride),
                                      *_conv_bn(nn, cout, cout, 3, relu=False))
            self.short = nn.Identity() if stride == 1 and cin == cout else \
                nn.Conv2d(cin, cout, 1, stride)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + self.short(x))

    class Bottleneck(nn.Module):
        """ResNet-50 v1.5 bottleneck: 1 x 1, 3 x 3 (strided), 1 x 1 x 4, projection shortcut."""

        def __init__(self, cin, width, stride):
            super().__init__()
            cout = 4 * width
            self.body = nn.Sequential(*_conv_bn(nn, cin, width, 1),
                                      *_conv_bn(nn, width, width, 3, stride=stride),
                                      *_conv_bn(nn, width, cout, 1, relu=False))
            self.short = nn.Identity() if stride == 1 and cin == cout else \
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + self.short(x))

    return Residual, Bottleneck


def resnet8_ic(params) -> tuple:
    """MLPerf Tiny image classification ResNet-8 (mlcommons/tiny benchmark/training/
    image_classification/keras_model.py): conv 16, stacks of 16 / 32 / 64 filters, average
    pool, dense 10, on 32 x 32 x 3."""
    torch = _torch()
    nn = torch.nn
    Residual, _ = _residual_module()
    net = nn.Sequential(*_conv_bn(nn, 3, 16, 3), Residual(16, 16, 1), Residual(16, 32, 2),
                        Residual(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(64, 10))
    return net, torch.zeros(int(params["batch"]), 3, 32, 32)


def fc_autoencoder_ad(params) -> tuple:
    """MLPerf Tiny anomaly detection autoencoder (mlcommons/tiny benchmark/training/
    anomaly_detection/keras_model.py): 640 -> 128 x 4 -> 8 -> 128 x 4 -> 640, each hidden
    dense followed by batch norm and ReLU."""
    torch = _torch()
    nn = torch.nn
    sizes = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
    layers = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
    layers.append(nn.Linear(128, 640))
    return nn.Sequential(*layers), torch.zeros(int(params["batch"]), 640)


def resnet50(params) -> tuple:
    """ResNet-50 v1.5 (stride on the 3 x 3 conv of each stage's first bottleneck), 224 x 224."""
    torch = _torch()
    nn = torch.nn
    _, Bottleneck = _residual_module()
    layers = _conv_bn(nn, 3, 64, 7, stride=2) + [nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(n):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    size = int(params.get("image", 224))
    return nn.Sequential(*layers), torch.zeros(int(params["batch"]), 3, size, size)


TORCH_WORKLOADS: dict[str, Callable] = {
    "mlp": mlp, "ds_cnn_kws": ds_cnn_kws, "mobilenet_v1_vww": mobilenet_v1_vww,
    "resnet8_ic": resnet8_ic, "fc_autoencoder_ad": fc_autoencoder_ad, "resnet50": resnet50,
}


def torch_ledger(m: Measurement) -> tuple[Ledger, int, str]:
    """Count the row's torch network on its profile (TorchDevice): the ledger (re-typed to
    int8 where the row ran int8), the batch size and a description. ``bench/calibrate.py``
    prices the same ledger. Rows of one workload, shape and profile share one count (the
    MLPerf Tiny rows run four networks on two parts across many stacks); pricing does not
    change a ledger."""
    key = (m.workload, repr(sorted(m.params.items())), m.profile)
    if key not in _LEDGERS:
        _LEDGERS[key] = _count_torch(m.workload, dict(m.params), m.profile)
    return _LEDGERS[key]


_LEDGERS: dict[tuple[str, str, str], tuple[Ledger, int, str]] = {}


def _count_torch(workload: str, params: dict, profile: str) -> tuple[Ledger, int, str]:
    torch = _torch()
    from sim.torch_engine import TorchDevice
    module, x = TORCH_WORKLOADS[workload](params)
    module.eval()
    dev = TorchDevice(profile, prefer_cuda=False)
    net = dev.compile(module)
    with torch.no_grad(), dev.count("infer", samples=int(x.shape[0])):
        net(dev.tensor(x))
    ledger = dev.ledger
    detail = "TorchDevice"
    if params.get("precision") == "int8":
        # footprints dropped: every byte at SRAM, as this table's figures were first
        # measured (keeping them moves part of cortex-m4's weights to flash)
        ledger = retyped_int8(ledger, footprints=False)
        detail += ", counts re-typed to int8"
    elif params.get("precision") == "fp16":
        ledger = retyped_fp16(ledger)
        detail += ", counts re-typed to fp16"
    return ledger, int(x.shape[0]), detail


def supply_factor(m: Measurement) -> float:
    """Like for like in supply voltage: the row's stated supply over the profile's
    (``limits.supply_v``), 1 where either is not given. The profiled MCUs' energies are their
    supply power at ``supply_v``; at another supply the linear regulator draws the same current,
    so the energy scales with the voltage (with a switching regulator, an approximation)."""
    prof_v = load(m.profile).limit("supply_v")
    return 1.0 if m.supply_v is None or prof_v is None else m.supply_v / prof_v


def _torch_row(m: Measurement) -> tuple[float, float, str, str]:
    """Count the torch network on the row's profile, price it per sample for the row's stack:
    joules, seconds, detail, stack."""
    ledger, n, detail = torch_ledger(m)
    # no held-out error attached: this run computes it (validation_summary.json)
    report = price(ledger, m.profile, stack=m.stack or None, validation=False)
    detail += f", stack {report.stack}"
    energy = report.total_j
    if m.idle_subtracted:
        # like for like: the measurement is running minus idle power, so the idle power the
        # model charges over busy and launch time (static, overhead) is taken out
        idle = sum(c.energy_j for c in report.charges if c.category in ("static", "overhead"))
        energy -= idle
        detail += f", idle {idle / n:.3g} J subtracted (measured idle-subtracted)"
    volts = supply_factor(m)
    if volts != 1.0:
        energy *= volts
        detail += f", energy x {volts:.4g} for the row's {m.supply_v:g} V supply"
    return energy / n, report.total_latency_s / n, detail, report.stack


# -- spiking workloads -------------------------------------------------------------------------
def rate_periods(rate_hz: float, dt: float, n: int) -> np.ndarray:
    """Integer firing periods (steps) of ``n`` neurons whose mean rate is ``rate_hz``.

    A neuron driven from reset to threshold by a constant current fires every whole number of
    steps, so a rate whose period ``1 / (rate_hz dt)`` is not whole (95.93 Hz: 10.42 steps)
    is built as a mix of the two neighbouring periods a = floor and a + 1: the first
    ``round(p n)`` neurons fire every a steps and the rest every a + 1, with p solving
    p / a + (1 - p) / (a + 1) = rate_hz dt. A whole period gives every neuron that period.

    Raises
    ------
    NeuroedgeError
        ``rate_hz dt`` is not in (0, 1] (at most one spike per step).
    """
    r = float(rate_hz) * dt                          # spikes per step
    if not 0.0 < r <= 1.0:
        raise NeuroedgeError(f"[validation] rate_hz = {rate_hz!r} at dt = {dt} s is "
                             f"{r:g} spikes per step; expected > 0 and <= 1")
    exact = 1.0 / r
    a = int(math.floor(exact + 1e-9))
    if abs(exact - round(exact)) < 1e-9:             # whole period: one period for all
        return np.full(n, int(round(exact)), dtype=np.int64)
    b = a + 1
    p = (r - 1.0 / b) / (1.0 / a - 1.0 / b)          # share of neurons at period a
    n_a = int(round(p * n))
    return np.concatenate([np.full(n_a, a), np.full(n - n_a, b)]).astype(np.int64)


def truenorth_rate_network(m: Measurement) -> tuple[float, float, str]:
    """Merolla 2014's operating point (and Akopyan 2015's): every neuron firing at
    ``rate_hz`` on average and delivering each spike over ``synapses_per_neuron`` synapses,
    for ``duration_s`` of real time (1 ms ticks).

    Each neuron is an integrate-and-fire unit driven by a constant current that takes it from
    reset to threshold in exactly its period of steps (:func:`rate_periods`: ``1 / (rate_hz
    dt)`` when that is whole, else a mix of the two neighbouring whole periods with the
    published mean rate), started at a random phase (seeded), so the rate is the published
    one by construction. Its spikes go to the next ``synapses_per_neuron`` neurons of its
    256-neuron block (a binary crossbar) with a weight of 1e-6 of the threshold, too small to
    move any spike by a step over the run. Counts are then scaled to the chip (module
    docstring).
    """
    from sim.neuromorphic import Network, NeuromorphicDevice
    p = m.params
    n_chip, k = int(p["neurons"]), int(p["synapses_per_neuron"])
    n = int(p["simulated_neurons"])
    if n_chip % n or n % 256:
        raise NeuroedgeError(f"[validation {m.id}] simulated_neurons = {n} must be a multiple "
                             f"of 256 that divides neurons = {n_chip}")
    dt = 1e-3
    steps = round(p["duration_s"] / dt)
    period = rate_periods(float(p["rate_hz"]), dt, n)   # 50 steps each at 20 Hz
    # v rises by 1/period per step and spikes once v > 1 - 0.5/period: after exactly `period`
    # steps from reset (strict threshold, reset to 0)
    thr = 1.0 - 0.5 / period
    rng = np.random.default_rng(int(p.get("seed", 0)))
    # one period for all draws the phases as before the mixed periods existed (same seed,
    # same stream), so the calibration row's counts are unchanged
    uniform = bool(np.all(period == period[0]))
    phase = rng.integers(0, int(period[0]) if uniform else period, n)
    net = Network(dt=dt)
    net.population("neurons", n, "if", v_threshold=thr, r=1.0, i_inj=1.0 / (period * dt),
                   v_init=phase / period)
    j = np.arange(n)
    block, local = j // 256, j % 256
    pre = np.repeat(j, k)
    post = (block[:, None] * 256 + (local[:, None] + 1 + np.arange(k)) % 256).ravel()
    net.connect("neurons", "neurons", pre_idx=pre, post_idx=post, weight=1e-6)
    dev = NeuromorphicDevice(m.profile)
    dev.compile(net)
    dev.run(steps, scope="infer")
    factor = n_chip // n
    ledger = scaled(dev.ledger, factor)
    report = price(ledger, m.profile, validation=False)
    events = ledger.total_ops()["synop"]
    rate = events / (n_chip * k * p["duration_s"])
    detail = (f"NeuromorphicDevice, {n} of {n_chip} neurons simulated, counts x {factor}; "
              f"{events:.4g} synaptic events in {steps} steps (mean rate {rate:.4g} Hz), "
              f"latency {report.total_latency_s:.3g} s for {p['duration_s']} s real time")
    return report.total_j / events, report.total_latency_s / events, detail


SPIKING_WORKLOADS: dict[str, Callable] = {"truenorth_rate_network": truenorth_rate_network}


# -- the table ---------------------------------------------------------------------------------
def _row(m: Measurement, status: str, detail: str, pred_j=None, pred_s=None,
         stack: str = "") -> ValidationRow:
    return ValidationRow(m.id, m.kind, m.profile, m.group, m.part, m.per, status,
                         m.measured_j, pred_j, m.measured_latency_s,
                         pred_s if m.measured_latency_s is not None else None, detail,
                         f"{m.source_title} <{m.source_url}>", stack or m.stack,
                         m.device_kind)


def validate_one(m: Measurement) -> ValidationRow:
    """Rebuild and price one measurement (see the module docstring for the statuses)."""
    if not m.workload:
        return _row(m, "not rebuildable", m.missing)
    if m.workload in SPIKING_WORKLOADS:
        j, s, detail = SPIKING_WORKLOADS[m.workload](m)
        return _row(m, "ok", detail, j, s)
    if m.workload not in TORCH_WORKLOADS:
        raise NeuroedgeError(f"[validation {m.id}] unknown workload {m.workload!r}; known: "
                             f"{', '.join(sorted({**TORCH_WORKLOADS, **SPIKING_WORKLOADS}))}")
    # a torch workload on a microcontroller (bitwise) profile is counted by TorchDevice too
    # and priced with the MCU's memories (sim/execution/mcu.py)
    j, s, detail, stack = _torch_row(m)
    return _row(m, "ok", detail, j, s, stack)


def validate(table=None, only: set[str] | None = None) -> list[ValidationRow]:
    """Rebuild, price and compare every row of the validation table.

    Parameters
    ----------
    table : path of a validation table, or None for the shipped one
    only : row ids to run (all when None)

    Returns
    -------
    list of ValidationRow, in table order.
    """
    rows = load_table(table)
    if only is not None:
        check_ids(only, rows)
    return [validate_one(m) for m in rows if only is None or m.id in only]


def check_ids(only: set[str], rows: list[Measurement] | None = None) -> None:
    """Refuse row ids the table does not have (an unknown id ran nothing and read as a
    pass).

    Raises
    ------
    NeuroedgeError
        One line naming the unknown ids and the known ones.
    """
    known = {m.id for m in (load_table() if rows is None else rows)}
    unknown = sorted(set(only) - known)
    if unknown:
        raise NeuroedgeError(f"validation row id(s) {', '.join(map(repr, unknown))}: no such "
                             f"row in the validation table; rows are {', '.join(sorted(known))}")


def summarise(rows: list[ValidationRow]) -> dict:
    """Counts, kinds and |log10(predicted / measured)| statistics, overall and per group."""
    def stats(sub):
        logs = [abs(math.log10(r.ratio)) for r in sub if r.ratio is not None]
        lat = [abs(math.log10(r.latency_ratio)) for r in sub if r.latency_ratio is not None]
        return {"predicted": len(logs),
                "median_abs_log10": median(logs) if logs else None,
                "max_abs_log10": max(logs) if logs else None,
                "within_3x": sum(x <= math.log10(3) for x in logs),
                "latency_predicted": len(lat),
                "latency_median_abs_log10": median(lat) if lat else None}
    return {"rows": len(rows), "kinds": sorted({r.kind for r in rows}),
            "kinds_predicted": sorted({r.kind for r in rows if r.ratio is not None}),
            "status": {s: sum(r.status == s for r in rows) for s in
                       ("ok", "not rebuildable")},
            "all": stats(rows),
            "held-out": stats([r for r in rows if r.group == "held-out"]),
            "calibration": stats([r for r in rows if r.group == "calibration"])}


def kind_errors(rows: list[ValidationRow]) -> dict[str, dict]:
    """Per profile kind, over its held-out rows with a prediction: their count, the median
    relative error |predicted / measured - 1| and the range of predicted / measured.
    Calibration rows are left out: their profile numbers came from those measurements."""
    out = {}
    for kind in sorted({r.kind for r in rows}):
        sub = [r for r in rows if r.kind == kind and r.group == "held-out" and r.ratio is not None]
        if sub:
            out[kind] = {"rows": len(sub), **_rel_stats(sub)}
    return out


def _rel_stats(rows: list[ValidationRow]) -> dict:
    """Over rows with a prediction (at least one): the median relative error
    |predicted / measured - 1| and the range of predicted / measured."""
    ratios = [r.ratio for r in rows]
    return {"median_rel_error": median(abs(x - 1) for x in ratios),
            "min_ratio": min(ratios), "max_ratio": max(ratios)}


def _factor(r: float) -> float:
    """How far off a ratio is, either way: max(r, 1/r)."""
    return max(r, 1.0 / r)


def factor_stats(rows: list[ValidationRow]) -> dict:
    """Over ``rows`` with a prediction: their count and the median and worst factor
    max(r, 1/r) of predicted / measured, energy and latency (None where none)."""
    e = [_factor(r.ratio) for r in rows if r.ratio is not None]
    t = [_factor(r.latency_ratio) for r in rows if r.latency_ratio is not None]
    return {"rows": len(e),
            "energy_median_factor": median(e) if e else None,
            "energy_worst_factor": max(e) if e else None,
            "latency_median_factor": median(t) if t else None,
            "latency_worst_factor": max(t) if t else None}


def device_kind_of(r: ValidationRow) -> str:
    """The device kind a row counts under (hw_profiles.validation.DEVICE_KINDS)."""
    return r.device_kind or DEFAULT_DEVICE_KIND[r.kind]


def heldout_factors(rows: list[ValidationRow]) -> dict:
    """The held-out summary ``bench/validate.py`` reports: all held-out rows (``kinds``: their
    device kinds), then per device kind (``device_kind_factors``), per profile kind
    (``kind_factors``), per profile and software stack (``stack_factors``, keyed
    ``"profile/stack"``: what a report on that profile and stack shows) and per profile
    (``profile_factors``: what a neuromorphic report shows). Calibration rows never
    enter it; they are counted apart (``calibration_rows``)."""
    held = [r for r in rows if r.group == "held-out" and r.ratio is not None]
    out = {"heldout_rows": len(held), "kinds": sorted({device_kind_of(r) for r in held}),
           "calibration_rows": sum(r.group == "calibration" for r in rows),
           "rows": len(rows)}
    out.update({k: v for k, v in factor_stats(held).items() if k != "rows"})
    # per device kind, also what a report's validation error shows (its median relative
    # error and range) and the profiles its rows ran on, so the report can say whose rows
    # they are (hw_profiles.validation.error_rows)
    out["device_kind_factors"] = {
        k: {**factor_stats(sub), **_rel_stats(sub), "profiles": sorted({r.profile for r in sub})}
        for k in out["kinds"] for sub in [[r for r in held if device_kind_of(r) == k]]}
    # per profile kind, with the device kinds and profiles of its rows: what a report on a
    # profile no row measures shows, named by whose rows they are
    out["kind_factors"] = {
        k: {**factor_stats(sub), "device_kinds": sorted({device_kind_of(r) for r in sub}),
            "profiles": sorted({r.profile for r in sub})}
        for k in sorted({r.kind for r in held}) for sub in [[r for r in held if r.kind == k]]}
    # the device kind of every profile a row prices, calibration rows too (one per profile:
    # hw_profiles.validation.load_table checks it); a profile no row prices has none
    out["profile_device_kinds"] = dict(sorted((r.profile, device_kind_of(r)) for r in rows
                                              if r.profile))
    out["stack_factors"] = {f"{p}/{s}": factor_stats([r for r in held
                                                       if (r.profile, r.stack) == (p, s)])
                            for p, s in sorted({(r.profile, r.stack) for r in held if r.stack})}
    # per profile, every stack together: what a report on a kind priced per profile
    # (hw_profiles.validation.PER_PROFILE_KINDS, the neuromorphic chips) shows
    out["profile_factors"] = {
        p: {**factor_stats(sub), "median_rel_error": median(abs(r.ratio - 1) for r in sub)}
        for p in sorted({r.profile for r in held})
        for sub in [[r for r in held if r.profile == p]]}
    return out


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def format_rows(rows: list[ValidationRow]) -> str:
    """The validation table as text (``neuroedge validate`` and ``bench/validate.py``): one
    line per row, then each row's status, detail and source."""
    # ids are padded to the longest (MLPerf Tiny ids run to 32 characters), at least 28
    w = max([28, *(len(r.id) for r in rows)])
    head = (f"{'id':{w}} {'kind':12} {'profile':12} {'group':11} {'per':15} {'pred J':>9} "
            f"{'meas J':>9} {'ratio':>7} {'pred s':>9} {'meas s':>9} {'ratio':>7}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.id:{w}} {r.kind:12} {r.profile:12} {r.group:11} {r.per:15} "
                     f"{_fmt(r.predicted_j):>9} {_fmt(r.measured_j):>9} {_fmt(r.ratio):>7} "
                     f"{_fmt(r.predicted_latency_s):>9} {_fmt(r.measured_latency_s):>9} "
                     f"{_fmt(r.latency_ratio):>7}  {r.status}")
    lines.append("")
    for r in rows:
        lines.append(f"[{r.id}] {r.status}: {r.detail}\n    source: {r.source}")
    return "\n".join(lines)
