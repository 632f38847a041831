"""The text of an :class:`~deploy.estimate_result.Estimate`: what ``neuroedge estimate``
prints and ``print(estimate)`` shows -- the energy table across profiles, the skipped
profiles with why, the notes, NeuroBench's metrics and the per-layer table
(:mod:`deploy.layer_table`). The first line says when an op went uncounted."""
from __future__ import annotations

import math


def table(est, all_layers: bool = False, depth: int | None = None,
          width: int | None = None) -> str:
    """The energy table across devices, the skipped profiles with why, the notes, the
    NeuroBench metrics and the per-layer table (:mod:`deploy.layer_table`); the first line
    says when some op went uncounted (every figure then a lower bound). ``all_layers``:
    every layer row, not the first 30; ``depth``: the module depth (default 3); ``width``:
    characters per line (tables that do not fit become one line per row, long lines are
    folded at spaces: :mod:`deploy.text_fit`), None for no limit."""
    from deploy import text_fit
    from deploy.formatting import format_energy, format_seconds, printable, significant
    rows = est.rows()
    train = est.train_samples > 0
    head = ["profile", "kind", "per inference"] + (["per train sample"] if train else []) \
        + ["latency", "total vs first", "figures"]
    body = []
    for r in rows:
        cells = [printable(r["profile"]), r["kind"], format_energy(r["per_inference_j"])]
        if train:
            cells.append(format_energy(r["per_train_sample_j"]))
        ratio = r["vs_first"]
        cells += [format_seconds(r["latency_s"]),
                  f"{significant(ratio)}x" if math.isfinite(ratio) else "-", r["bound"]]
        body.append(cells)
    ran = f"{est.inference_samples} inference sample(s)"
    if train:
        ran += f" and one training step of {est.train_samples} sample(s)"
    # the model's name and source, a NIR file's node names: a file's text, escaped
    lines = [f"{printable(est.model)} ({printable(est.source)}): {ran}; energy per sample, "
             "latency of the whole run"]
    if est.uncounted:   # a lower bound for another reason says why in its notes below
        lines.insert(0, est.uncounted_line())
    if body:
        lines += text_fit.table(head, body, width)
    else:
        lines.append("no profile could price this model")
    lines += error_lines(est.reports, getattr(est, "stacks_asked", {}))
    if est.skipped:
        lines.append("skipped:")
        lines += [f"  {printable(name)}: {printable(why)}" for name, why in est.skipped.items()]
    for note in getattr(est, "notes", ()):
        lines.append(f"note: {printable(note)}")
    lines += _detail_lines(est, all_layers, depth, width)
    kinds: dict[str, tuple] = {}
    for r in est.reports.values():
        kinds.setdefault(r.kind, (r.execution_model, r.excluded))
    for kind, (model, excluded) in kinds.items():
        if model:
            lines.append(f"execution model ({kind}): {model}")
        if excluded:
            lines.append(f"excludes ({kind}): {'; '.join(excluded)}")
    return "\n".join(text_fit.fold(lines, width))


def error_lines(reports, asked=()) -> list[str]:
    """One line per priced profile: the software stack it was priced for (``asked`` names
    the profiles whose stack was asked; the others got their default), how far its kind and
    stack's predictions were from held-out published measurements (median and worst
    factor, energy and latency, ``bench/validate.py``), and whether its figures are an
    estimate or a lower bound."""
    from sim.pricing import describe_error
    out = []
    for name, r in reports.items():
        err = r.validation
        what = (describe_error(err) if err is not None else
                f"no held-out measurement of kind {r.kind} on {r.profile} is predicted yet: "
                "error unknown")
        how = "asked" if name in asked else "the default"
        if name in asked and asked[name] != r.stack:
            # a library that sets none of the ledger's ops (fp32 on an int8 library) prices
            # as peak (sim/execution/mcu.py): say what was asked and why it is not named
            how = f"{asked[name]} asked, which sets none of these ops"
        out.append(f"error {name} (stack {r.stack or '-'}, {how}; figures: {r.bound}): {what}")
    return out


def _detail_lines(est, all_layers: bool = False, depth: int | None = None,
                  width: int | None = None) -> list[str]:
    """NeuroBench metrics of the inference and the per-layer table on the first profile:
    torchinfo's rows (:mod:`deploy.layer_table`) for a torch model, the report's layer
    rows for a NIR run."""
    import shutil
    from types import SimpleNamespace

    from deploy import layer_table, terminal
    first = next(iter(est.reports), None)
    if first is None:
        return []
    run = SimpleNamespace(ledger=est.ledgers[first])
    report = est.reports[first]
    # with a width, rich lays the lines out unfolded and table() folds them with an indent
    rich_width = 1000 if width else max(60, min(shutil.get_terminal_size((100, 24)).columns,
                                                140))
    out = [""] + terminal.neurobench_lines(run, report, rich_width)
    if est.modules:
        out += layer_table.render(est, first, layer_table.DEFAULT_DEPTH if depth is None
                                  else depth, None if all_layers else layer_table.DEFAULT_ROWS,
                                  width=width)
    else:
        layers = terminal.layer_lines(run, report, width or rich_width,
                                      n=None if all_layers else 10)
        if layers:
            out += [f"on {first}:"] + layers
    return [ln.rstrip() for ln in out]
