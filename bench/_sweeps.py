"""What the bench scripts share to run their seed loops as sweeps (``deploy.sweep``).

Not a benchmark: a bench script builds a spec dict (the keys of ``deploy.sweep.load_spec``),
calls :func:`sweep`, and prints the spread over seeds of ``deploy.sweep.summary`` (mean,
std over n - 1, min, max, n) through :func:`spread` and :func:`fmt`.
"""
from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def sweep(spec: dict, *, workers: int | None = None, serial: bool = True):
    """Run ``spec`` into ``bench/out/<name>-sweep`` and return the ``SweepResult``.

    ``serial`` (the default) runs every run in this process, one after another: the
    benches that report wall seconds keep their single-threaded, warm-cache timing;
    ``serial=False`` runs them on a Dask ``LocalCluster`` of ``workers`` processes. A
    bench measures again each time, so the run files of an earlier call are replaced
    (``force``).
    """
    from deploy.sweep import run_sweep

    def progress(done, total, key, how):
        print(f"  [sweep {spec['name']} {done}/{total}] {how}: {key}", flush=True)

    return run_sweep(spec, OUT / f"{spec['name']}-sweep", workers=workers, serial=serial,
                     force=True, progress=progress)


def ok_rows(result) -> list[dict]:
    """The sweep's rows; raises ``RuntimeError`` naming the first failed run, if any: a
    figure over fewer seeds than asked would read as the full spread."""
    bad = [r for r in result.rows if r["status"] != "ok"]
    if bad:
        raise RuntimeError(f"sweep run {bad[0]['key']} failed: {bad[0]['error']} "
                           f"({len(bad)} of {len(result.rows)} rows; table "
                           f"{result.table_path})")
    return result.rows


def field(row: dict, key: str):
    """A row's run parameter (``seed``, ``dataset``, ...), or the text of one of its
    overrides (the row's ``overrides`` is ``"k=v k=v"``, values as ``--set`` takes them)."""
    if key in row:
        return row[key]
    pairs = dict(p.split("=", 1) for p in row.get("overrides", "").split() if "=" in p)
    return pairs.get(key)


def _matches(row: dict, match: dict) -> bool:
    from deploy.sweep import overrides_text
    for k, v in match.items():
        have = field(row, k)
        if have != v and str(have) != overrides_text({k: v}).split("=", 1)[1]:
            return False
    return True


def spread(rows: list[dict], metric: str, **match) -> dict:
    """``deploy.sweep.summary`` of ``metric`` over the rows whose parameters or overrides
    equal ``match`` (``spread(rows, "test_accuracy", local=True)``): mean, std, min, max, n."""
    from deploy.sweep import summary
    chosen = [r for r in rows if _matches(r, match)]
    if not chosen:
        raise KeyError(f"no sweep row has {match}")
    s = summary(chosen, by=(), metric=metric)[0]
    return {k: s[k] for k in ("mean", "std", "min", "max", "n")}


def read(result, row: dict):
    """The run file of a sweep row (``models.registry.RunResult``: metrics, facts, traces)."""
    from deploy.runfile import read_run
    return read_run(Path(result.out_dir) / row["run_file"])


def facts(result, row: dict) -> dict:
    """The facts of a sweep row's run (host wall seconds and the like, not in the table)."""
    return read(result, row).facts


def fmt(s: dict, scale: float = 100.0, digits: int = 1) -> str:
    """``mean +/- std [min, max]`` of a :func:`spread`, scaled (100: fractions as %); the
    std of one seed is undefined and prints as ``nan``."""
    f = f"{{:.{digits}f}}"
    return (f"{f.format(scale * s['mean'])} +/- {f.format(scale * s['std'])} "
            f"[{f.format(scale * s['min'])}, {f.format(scale * s['max'])}]")
