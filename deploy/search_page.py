"""A search's summary page (:mod:`deploy.search`): the objectives against each other with
the Pareto front (one objective: against the trial number, with the best so far), then
every finished trial's settings and objectives."""
from __future__ import annotations

import math

from deploy.search_spec import STUDY_FILE, Search, population, startup_trials
from deploy.sweep import PAGE_STYLE, fmt, value_axis

UNITS = {"energy_j": "J", "per_inference_j": "J", "per_train_sample_j": "J", "latency_s": "s"}
"""Objectives with a unit: their axis is labelled with SI prefixes (``200 nJ``)."""


def finished(trial) -> bool:
    """Complete, or failed with its run's error (a trial failed without one was interrupted
    and runs again)."""
    from optuna.trial import TrialState
    return trial.state == TrialState.COMPLETE or (trial.state == TrialState.FAIL
                                                  and "error" in trial.user_attrs)


def _unit_y_axis(ax, values, objective: str) -> None:
    """An objective with a unit up the y axis is labelled as across the x axis (``200 nJ``,
    never a bare ``1e-7`` above the numbers); a unitless one keeps matplotlib's axis."""
    if objective in UNITS:
        value_axis(ax, values, UNITS[objective], "y")


def _plot(study, search: Search, front: list[int]):
    from matplotlib.figure import Figure
    from optuna.trial import TrialState
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    fig = Figure(figsize=(7.0, 4.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    names = [f"{n} ({d})" for n, d in search.objectives]
    if len(search.objectives) == 1:
        xs = [t.number for t in done]
        ys = [t.values[0] for t in done]
        better = max if search.objectives[0][1] == "max" else min
        best = [better(ys[:i + 1]) for i in range(len(ys))]
        ax.plot(xs, ys, "o", label="trial")
        ax.step(xs, best, "k--", where="post", lw=1, label="best so far")
        _unit_y_axis(ax, ys, search.objectives[0][0])
        ax.set_xlabel("trial")
        ax.set_ylabel(names[0])
    else:   # the first objective up, the second across: accuracy against joules
        on = [t for t in done if t.number in front]
        ax.plot([t.values[1] for t in done], [t.values[0] for t in done], "o", color="0.6",
                label="trial")
        on.sort(key=lambda t: t.values[1])
        ax.plot([t.values[1] for t in on], [t.values[0] for t in on], "o--", color="C3",
                lw=1, label="Pareto front")
        for t in done:
            ax.annotate(str(t.number), (t.values[1], t.values[0]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        value_axis(ax, [t.values[1] for t in done], UNITS.get(search.objectives[1][0]))
        _unit_y_axis(ax, [t.values[0] for t in done], search.objectives[0][0])
        ax.set_xlabel(names[1])
        ax.set_ylabel(names[0])
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2,
              frameon=False)
    return fig


def html_page(study, spec, front: list[int], label: str) -> str:
    """The search's page: the plot, the Pareto front, every trial (self-contained)."""
    import html

    from optuna.trial import TrialState

    from deploy.plots import fig_to_img
    esc = html.escape
    search = spec.search
    params = list(search.space)
    objs = [n for n, _ in search.objectives]
    trials = [t for t in study.get_trials(deepcopy=False) if finished(t)]
    how = {"tpe": f"TPE (first {startup_trials(search.trials)} trials random)",
           "nsga2": f"NSGA-II (population {population(search.trials)})",
           "random": "random sampling"}[search.method]
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{esc(spec.name)}</title>"
             f"{PAGE_STYLE}</head><body><h1>Search {esc(spec.name)}</h1>",
             f"<p>{esc(spec.models[0])}: {len(trials)} of {search.trials} trials finished "
             f"by {esc(how)}, seed {search.seed}; objectives "
             f"{esc(', '.join(f'{n} ({d})' for n, d in search.objectives))}, energy priced "
             f"on {esc(label)}. Study: {STUDY_FILE}; every trial x profile: results.csv.</p>"]
    if any(t.state == TrialState.COMPLETE for t in trials):
        parts.append(fig_to_img(_plot(study, search, front),
                                "the search's objectives and its Pareto front"))
    if len(objs) > 1:
        parts.append(f"<h2>Pareto front ({len(front)} trials)</h2><p>Trial(s) "
                     f"{', '.join(map(str, front)) or 'none'}: no other trial is at least as "
                     "good in every objective and better in one.</p>")
    heads = ["trial", "state", *params, *objs, "run file", "error"]
    parts.append("<h2>Trials</h2><div class=wide><table><tr>"
                 + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr>")
    for t in trials:
        ok = t.state == TrialState.COMPLETE
        vals = t.values if ok else [math.nan] * len(objs)
        state = ("Pareto" if t.number in front else "ok") if ok else "failed"
        cells = [t.number, state, *(t.params.get(p, "") for p in params), *vals,
                 f"runs/{t.user_attrs.get('run_file', '')}.h5" if ok else "",
                 t.user_attrs.get("error", "")]
        cls = " class=err" if not ok else ""
        parts.append(f"<tr{cls}>" + "".join(f"<td>{esc(fmt(c))}</td>" for c in cells)
                     + "</tr>")
    parts.append("</table></div></body></html>\n")
    return "".join(parts)


__all__ = ["html_page", "finished"]
