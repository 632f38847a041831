"""The per-layer table of an estimate, the way torchinfo's ``summary`` shows a model.

One row per module the forward called, in the order of the first call, indented by depth
(``--depth N`` / ``depth=N`` keeps modules up to N levels below the model, a cut row
summing what lies under it). Each row: type, output shape, parameters (the module's own and
its children's, as torchinfo counts them), its multiply-accumulates and energy in the
inference, the same in the training step when one ran (forward and backward of the module;
the optimizer step and the loss are in the totals, and in the model's own row where it has
one), and the bytes of its outputs (the activations it writes: every call's, a module
called ten times wrote ten outputs). The totals row sums the inference and the training
step as the ledger holds them (ops outside every module, such as the loss or the optimizer
step, included), and lines below give torchinfo's sizes plus a microcontroller's arena
plan.

The MACs the model's own ``forward`` runs outside every module it calls (``y @
self.head``) get a row of their own, ``(root: ops in Net.forward itself)``, with the
model's own parameters (also where it has only those), so the rows at depth 1 add up to the
totals; in the training step that row also holds the loss and the optimizer step, which run
outside every module too, and its energy what pricing charges the run as a whole (the
weights loaded from memory once, the state loaded into the cache once a block, idle and
static power outside the ops' time). A model with no ops or parameters of its own (an
``nn.Sequential``) still gets the row where it holds such energy.

MACs and energy are those of the whole example batch on one profile (the first priced, by
default); counts do not depend on the profile, energy does.
"""
from __future__ import annotations

from dataclasses import dataclass

from deploy import text_fit
from deploy.formatting import format_bytes, format_energy, printable

DEFAULT_DEPTH = 3
"""torchinfo's default depth."""
DEFAULT_ROWS = 30
"""Rows the terminal shows without --all."""
_DIRECTIONS = ("forward", "backward")
ROOT_OWN = "(root)"
"""The name of the row of the ops the model's own forward runs outside its modules (and,
training, the loss and the optimizer step): no module path can be it."""


@dataclass(frozen=True)
class LayerTableRow:
    """One module of the estimate's table (see the module docstring)."""

    name: str               # module path ("" for the model itself)
    type: str
    depth: int
    output_shape: tuple
    parameters: int
    infer_macs: int
    infer_energy_j: float
    train_macs: int
    train_energy_j: float
    output_bytes: int


def _module_scopes(ledger, top: str) -> dict[str, list[str]]:
    """Module path -> the ledger scopes ``top/<path>/forward|backward`` of it."""
    out: dict[str, list[str]] = {}
    for s in ledger.scopes():
        parts = s.split("/")
        if len(parts) == 3 and parts[0] == top and parts[2] in _DIRECTIONS:
            out.setdefault(parts[1], []).append(s)
    return out


def _under(path: str, other: str) -> bool:
    return path == "" or other == path or other.startswith(path + ".")


def rows(est, profile: str | None = None, depth: int | None = None) -> list[LayerTableRow]:
    """The table's rows for ``profile`` (default: the first priced), modules at most
    ``depth`` levels below the model (``None``: every module)."""
    if not est.reports or not est.modules:
        return []
    profile = profile or next(iter(est.reports))
    ledger, report = est.ledgers[profile], est.reports[profile]
    energy: dict[str, float] = {}
    for c in report.charges:
        energy[c.scope] = energy.get(c.scope, 0.0) + c.energy_j
    macs = {s: sum(n for op, n in ledger.ops(s).items() if op.startswith("mac_"))
            for s in ledger.scopes()}
    tops = [(est.inference_scope, True)]
    if est.train_samples:
        tops.append((est.train_scope, False))
    scopes = {top: _module_scopes(ledger, top) for top, _ in tops}
    out = []
    for path, info in est.modules.items():
        level = 0 if path == "" else path.count(".") + 1
        if depth is not None and level > depth:
            continue
        sums = {}
        for top, _ in tops:
            if path == "":   # the model: everything its scope holds, loss and optimizer too
                sums[top] = (_macs(ledger, top), report.energy_within(top))
                continue
            mine = [s for p, ss in scopes[top].items() if _under(path, p) for s in ss]
            sums[top] = (sum(macs.get(s, 0) for s in mine),
                         sum(energy.get(s, 0.0) for s in mine))
        train = sums.get(est.train_scope, (0, 0.0)) if est.train_samples else (0, 0.0)
        infer = sums[est.inference_scope]
        out.append(LayerTableRow(path, info["type"], level, tuple(info["output_shape"]),
                                 info["parameters"], infer[0], infer[1], train[0], train[1],
                                 info["output_bytes"]))
    if depth is None or depth >= 1:
        out += _root_own(est, ledger, report, tops, macs, energy)
    return out


def _root_own(est, ledger, report, tops, macs, energy) -> list[LayerTableRow]:
    """The row of what each top scope holds outside every module's scope: the ops of the
    model's own forward and their backward (training: the loss and the optimizer step
    too), and the charges pricing puts on the run as a whole (the state loaded into the
    cache once a block, idle power outside the ops' time), so that the rows add up to the
    totals. Only where it holds something: MACs of the model's own forward (``y @
    self.head``), parameters of its own, or energy (a plain ``nn.Sequential`` has neither
    MACs nor parameters of its own, but its weights loaded from memory once and the static
    power of the whole inference are charged to the run, not to a module); a row of
    nothing (no profile charges the run as a whole) is left out."""
    root = est.modules.get("")
    if root is None:
        return []
    sums = {}
    for top, _ in tops:
        mine = [s for s in ledger.scopes() if s in (top, f"{top}/backward")]
        sums[top] = (sum(macs.get(s, 0) for s in mine),
                     sum(energy.get(s, 0.0) for s in mine))
    own = root.get("own_parameters", 0)
    infer = sums[est.inference_scope]
    train = sums.get(est.train_scope, (0, 0.0)) if est.train_samples else (0, 0.0)
    if not (own or infer[0] or train[0] or infer[1] or train[1]):
        return []
    return [LayerTableRow(ROOT_OWN, root["type"], 1, (), own, infer[0], infer[1], train[0],
                          train[1], 0)]


def _shape(shape: tuple) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]" if shape else "-"


def _count(n: int) -> str:
    return f"{n:,}" if n else "--"


def render(est, profile: str | None = None, depth: int | None = DEFAULT_DEPTH,
           max_rows: int | None = DEFAULT_ROWS, width: int | None = None) -> list[str]:
    """The table as text lines (about 80 columns without a training step), its totals and
    sizes below; ``max_rows=None`` shows every row, else the first ``max_rows`` and a line
    saying how many more (``--all``); a table wider than ``width`` is one line per layer
    (:func:`deploy.text_fit.records`)."""
    if not est.reports or not est.modules:
        return []
    profile = profile or next(iter(est.reports))
    table = rows(est, profile, depth)
    if not table:
        return []
    train = est.train_samples > 0
    head = ["layer (type)", "output", "params", "MACs", "energy"]
    if train:
        head += ["train MACs", "train energy"]
    head.append("act.")
    body = []
    for r in table[1:] if table[0].name == "" else table:   # the model is the totals row
        label = "  " * (r.depth - 1) + printable(f"{r.name.rsplit('.', 1)[-1]} ({r.type})")
        if r.name == ROOT_OWN and (r.infer_macs or r.train_macs or r.parameters):
            label = printable(f"(root: ops in {r.type}.forward itself"
                              + (", loss, optimizer)" if train else ")"))
        elif r.name == ROOT_OWN:   # no ops of its own: what the run is charged as a whole
            label = "(root: loss, optimizer, run-wide)" if train else "(root: run-wide charges)"
        cells = [label, _shape(r.output_shape), _count(r.parameters), _count(r.infer_macs),
                 format_energy(r.infer_energy_j) if r.infer_energy_j else "--"]
        if train:
            cells += [_count(r.train_macs),
                      format_energy(r.train_energy_j) if r.train_energy_j else "--"]
        cells.append("--" if r.name == ROOT_OWN else format_bytes(r.output_bytes))
        body.append(cells)
    shown = body if max_rows is None else body[:max_rows]
    ledger, report = est.ledgers[profile], est.reports[profile]
    top = est.modules.get("", {})
    total = [f"Total ({top.get('type', est.model)})", _shape(tuple(top.get("output_shape", ()))),
             f"{top.get('parameters', 0):,}",
             _count(_macs(ledger, est.inference_scope)),
             format_energy(report.energy_within(est.inference_scope))]
    if train:
        total += [_count(_macs(ledger, est.train_scope)),
                  format_energy(report.energy_within(est.train_scope))]
    total.append(format_bytes(_leaf_output_bytes(est)))
    depth_text = "every depth" if depth is None else f"depth {depth}"
    out = [f"Layers on {profile} (batch of {est.inference_samples}; {depth_text}; "
           "act. = output bytes)"]
    more = [f"  ... {len(body) - len(shown)} more layers (--all)"] if len(body) > len(shown) \
        else []
    lines = text_fit.aligned(head, [*shown, total])
    if width is None or max(map(len, lines)) <= width:
        rule = "-" * max(map(len, lines))
        out += [rule, lines[0], rule, *lines[1:-1], *more, rule, lines[-1], rule]
    else:   # one line per layer, the depth as its indent
        out += text_fit.fold(text_fit.records(head, [*shown, total]), width)
        out[-1:-1] = more
    out += _sizes(est, profile)
    return out


def _leaf_output_bytes(est) -> int:
    """Output bytes of every module with no module under it (torchinfo's forward pass
    size: each activation once, whatever depth the table shows)."""
    paths = list(est.modules)
    return sum(info["output_bytes"] for p, info in est.modules.items()
               if not any(o != p and _under(p, o) for o in paths))


def _macs(ledger, scope: str) -> int:
    return sum(n for op, n in ledger.total_ops(scope).items() if op.startswith("mac_"))


def _sizes(est, profile: str) -> list[str]:
    """torchinfo's size lines, and a microcontroller's arena plan when there is one."""
    ledger = est.ledgers[profile]
    models = ledger.models()
    params = sum(m.get("parameter_bytes", 0) + m.get("buffer_bytes", 0)
                 for m in models.values())
    # a torch.ao quantized model's parameters and activations are as it stores and runs
    # them (int8 weights, quint8 activations); a float model's parameters in its own
    # precision (fp32 also when it is priced at int8: these are its tensors' bytes)
    stored = {"quantized": "as stored", "int8": "fp32"}.get(est.dtype, est.dtype)
    acts = "as run" if est.dtype == "quantized" else est.dtype
    out = [f"Params {format_bytes(params)} ({stored}); activations {acts}, every leaf "
           f"layer's output: {format_bytes(_leaf_output_bytes(est))}"]
    mem = est.memory.get(profile)
    if mem:
        out.append(f"Activation arena (TFLM's greedy plan): {format_bytes(mem['arena_bytes'])}"
                   f"; weights {format_bytes(mem['weight_bytes'])}")
    return out
