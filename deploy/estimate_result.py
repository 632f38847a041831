"""Estimate: what :func:`deploy.estimate.estimate` (public as :func:`neuroedge.estimate`)
returns for one model on several profiles."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from sim.energy_report import BOUNDS, EnergyReport
from sim.ledger import Ledger


def profile_list(profiles) -> list:
    """``profiles`` as a list: a string may name several, comma-separated ("loihi,loihi2")."""
    if isinstance(profiles, str):
        return [p.strip() for p in profiles.split(",") if p.strip()]
    return list(profiles) if profiles is not None else []


@dataclass
class Estimate:
    """One model counted once per engine and priced on every profile it can run on.

    Attributes
    ----------
    model : a label for the model (its class name, or the NIR file's name)
    source : ``"torch"`` (a torch module counted by the torch engine) or ``"nir"`` (a NIR
        graph or spiking module run on the neuromorphic engine)
    ledgers : profile name -> the ledger its report priced (the torch engine's counts are
        the same on every profile of one engine; a neuromorphic run is placed per chip)
    reports : profile name -> EnergyReport, in the order the profiles were asked for
    skipped : profile name -> one line saying why the model cannot run there (a chip it
        does not fit on, a kind no engine for this model serves)
    inference_samples : samples one inference scope processed (the example's batch)
    train_samples : samples the training step processed (0 when none was asked)
    inference_scope, train_scope : the ledger scopes of the two
    notes : what ran, one line each (mode, loss and optimizer of the training step, the
        assumptions an import made), for reports to show beside the table
    dtype : the precision the torch model was priced at (``"fp32"`` or ``"int8"``;
        ``"quantized"``: a torch.ao quantized model, priced at its own kernels; ``"fp16"``,
        ``"bf16"``, ``"fp64"``: a model whose parameters are in that precision, counted as
        it runs)
    memory : microcontroller profile -> one inference's memory plan, TFLM's way:
        ``arena_bytes`` (greedy plan of the activations' lifetimes), ``peak_live_bytes``,
        ``weight_bytes`` and ``placement`` (memory name -> writable / read-only bytes)
    modules : torch models: module path -> type, output shape, output bytes, parameters,
        in the order the forward first called them (the per-layer table's source)
    stacks_asked : profile name -> the software stack asked for it (``estimate(stack=...)``);
        a profile not in it was priced for its default stack (each report's ``stack``)

    ``uncounted`` lists the ops that ran but have no cost formula; when it is not empty
    every figure is a lower bound and ``lower_bound`` is True (``uncounted_line()`` says so
    in one line, which the table puts first). ``lower_bound`` is True as well when any
    profile's figures are a lower bound for another reason (a model that ran no op at all:
    pricing's note saying so is among ``notes``).
    """

    model: str
    source: str
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    reports: dict[str, EnergyReport] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    inference_samples: int = 0
    train_samples: int = 0
    inference_scope: str = "infer"
    train_scope: str = "train"
    notes: tuple[str, ...] = ()
    dtype: str = "fp32"
    memory: dict[str, dict] = field(default_factory=dict)
    modules: dict[str, dict] = field(default_factory=dict)
    stacks_asked: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        """The table ``neuroedge estimate`` prints: profiles, notes, NeuroBench metrics
        and the per-layer table (``print(estimate)``)."""
        from deploy.estimate_text import table
        return table(self)

    @property
    def layers(self) -> list:
        """The per-layer rows (:class:`deploy.layer_table.LayerTableRow`) of every module,
        on the first priced profile; ``layer_rows(profile, depth)`` for another."""
        return self.layer_rows()

    def layer_rows(self, profile: str | None = None, depth: int | None = None) -> list:
        """Per-layer rows on ``profile`` (default the first priced), ``depth`` levels deep
        (``None``: every module)."""
        from deploy.layer_table import rows
        return rows(self, profile, depth)

    @property
    def neurobench(self) -> dict:
        """NeuroBench's metrics (:func:`sim.neurobench.metrics`) of the inference; ``{}``
        when no profile priced the model."""
        from sim import neurobench
        ledger = next(iter(self.ledgers.values()), None)
        return neurobench.metrics(ledger, self.inference_scope) if ledger is not None else {}

    @property
    def uncounted(self) -> dict[str, int]:
        """Op name -> calls that ran but were priced at nothing (the ledger's record, the same
        on every profile of the torch engine; the first priced profile's for NIR runs)."""
        ledger = next(iter(self.ledgers.values()), None)
        return dict(sorted(ledger.uncounted().items())) if ledger is not None else {}

    @property
    def lower_bound(self) -> bool:
        """True when some op went uncounted, or when any profile's figures are a lower bound
        (``rows()``' ``bound``): the flag and the rows never disagree."""
        return bool(self.uncounted) or any(r.energy_bound() == BOUNDS[1]
                                           for r in self.reports.values())

    def uncounted_line(self) -> str:
        """One line naming the uncounted ops and their calls, or "" when every op counted."""
        ops = self.uncounted
        if not ops:
            return ""
        calls = sum(ops.values())
        names = ", ".join(f"{k} x{n:,}" for k, n in ops.items())
        return (f"LOWER BOUND: {len(ops)} op(s) ran uncounted ({calls:,} call(s): {names}); "
                "they are in no figure below")

    def per_inference_j(self, profile: str) -> float:
        """Energy of one inference sample on ``profile`` (J)."""
        r = self.reports[profile]
        n = r.samples.get(self.inference_scope, 0)
        return r.energy_within(self.inference_scope) / n if n else math.nan

    def per_train_sample_j(self, profile: str) -> float:
        """Energy of one training sample on ``profile`` (J); nan without a training step."""
        r = self.reports[profile]
        n = r.samples.get(self.train_scope, 0)
        return r.energy_within(self.train_scope) / n if n else math.nan

    def rows(self) -> list[dict]:
        """One plain dict per priced profile: the energy table across devices."""
        first = next(iter(self.reports.values()), None)
        out = []
        for name, r in self.reports.items():
            out.append({"profile": name, "kind": r.kind, "total_j": float(r.total_j),
                        "per_inference_j": self.per_inference_j(name),
                        "per_train_sample_j": self.per_train_sample_j(name),
                        "latency_s": float(r.total_latency_s), "bound": r.energy_bound(),
                        "stack": r.stack, "stack_asked": name in self.stacks_asked,
                        "vs_first": float(r.total_j / first.total_j)
                        if first is not None and first.total_j > 0 else math.nan})
        return out
