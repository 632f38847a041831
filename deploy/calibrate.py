"""``neuroedge measure --calibrate --profile BASE --out MINE.toml``: fit this machine's
per-op dispatch overhead, its achieved GEMM throughput curve and (where an energy counter is
readable) its idle power from microbenchmarks, and write a profile of the user's own.

The written profile is BASE with the fitted entries replaced, each with provenance
``measured`` and a note giving date, machine and command:

- ``[execution] launch_s``: seconds of one eager op that does almost no arithmetic
  (``torch.add`` of two 8x8 tensors), timed in blocks of ``DISPATCH_BLOCK`` calls, the
  fastest block (as every timing here: load only adds time);
- ``[throughput] mac_fp32`` and ``[execution] half_perf_ops``: Hockney's curve, the one the
  pricing uses (a kernel of n MACs takes ``launch_s + (n + n_1/2) / peak``), fitted by least
  squares on relative error to square fp32 GEMMs (``GEMM_SIZES``);
- ``[static] power_w``: mean power over ``IDLE_S`` seconds of sleep, only where NVML or RAPL
  is readable; otherwise BASE's entry is kept and the output says so.

Energies per op are BASE's: they are not measurable without a counter.
"""
from __future__ import annotations

import datetime
import platform
import shlex
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from deploy.measure import energy_meter, time_calls
from hw_profiles.errors import ProfileError
from sim.errors import ModelError

MARKER = "# written by neuroedge measure --calibrate"
CALIBRATED_ON = "; calibrated on "   # the description's suffix naming the machine
DISPATCH_BLOCK = 200
GEMM_SIZES = (16, 32, 64, 128, 256, 512)
IDLE_S = 1.0
SOURCE = {"title": "", "url": "https://docs.python.org/3/library/time.html#time.perf_counter",
          "kind": "web"}


def machine_name() -> str:
    """The host and its CPU model (from /proc/cpuinfo where present)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()} ({cpu})"


def dispatch_s(*, repeats: int, clock=time.perf_counter, device: str = "cpu") -> float:
    """Seconds of one eager op that does almost no arithmetic: the framework's dispatch."""
    import torch
    a = torch.ones(8, 8, device=device)
    b = torch.ones(8, 8, device=device)

    def block():
        for _ in range(DISPATCH_BLOCK):
            torch.add(a, b)

    sync = torch.cuda.synchronize if device == "cuda" else None
    # the fastest block: other work on the machine only adds time, and a calibration
    # wants what this machine does (the median took a busy neighbour's delays in)
    return time_calls(block, warmup=1, repeats=repeats, clock=clock, sync=sync).min_s \
        / DISPATCH_BLOCK


def gemm_times(sizes, *, repeats: int, device: str = "cpu") -> np.ndarray:
    """Seconds of one n x n x n fp32 matmul for each n in ``sizes``: the fastest of the
    repeats (load only adds time; with the median, a busy second core made n = 64 take
    8 ms and the fit refused the machine)."""
    import torch
    out = []
    for n in sizes:
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        sync = torch.cuda.synchronize if device == "cuda" else None
        out.append(time_calls(lambda a=a, b=b: torch.mm(a, b), warmup=2, repeats=repeats,
                              sync=sync).min_s)
    return np.array(out)


def fit_hockney(macs: np.ndarray, seconds: np.ndarray, launch_s: float) -> tuple[float, float]:
    """``(peak MAC/s, n_1/2)`` of ``seconds = launch_s + (macs + n_1/2) / peak``, by least
    squares on relative error (times span orders of magnitude). n_1/2 is kept >= 1: a
    negative intercept means the overhead is all in ``launch_s``."""
    y = seconds - launch_s
    w = 1.0 / seconds
    design = np.stack([macs, np.ones_like(macs)], axis=1) * w[:, None]
    (slope, intercept), *_ = np.linalg.lstsq(design, y * w, rcond=None)
    if not slope > 0:
        raise ModelError("GEMM timings do not grow with size (slope "
                         f"{slope:.3g} s/MAC): rerun on an idle machine")
    peak = 1.0 / slope
    n_half = float(max(intercept * peak, 1.0))
    fitted = launch_s + (macs + n_half) / peak
    off = np.abs(np.log(fitted / seconds))
    worst = int(np.argmax(off))
    if off[worst] > np.log(MAX_FIT_FACTOR):
        # timings that do not follow the model (a busy machine: n = 64 to 512 all took 8 ms,
        # the fit then 500x off at n = 64) would be written as this machine's rates
        raise ModelError(f"GEMM timings do not follow a peak rate and a half-performance size: "
                         f"{macs[worst]:.3g} MACs took {seconds[worst]:.3g} s, the fit gives "
                         f"{fitted[worst]:.3g} s (more than {MAX_FIT_FACTOR:g}x apart); rerun "
                         "on an idle machine")
    return float(peak), n_half


MAX_FIT_FACTOR = 3.0
"""The most a GEMM timing may be from the fitted Hockney curve, either way: timing noise on
a loaded machine moves timings tens of percent; a point this far off means no fit."""


def _base_path(profile: str) -> Path:
    from hw_profiles.loader import load
    p = load(profile)
    if not p.path:
        raise ProfileError(f"profile {profile!r}: has no file to start from")
    return Path(p.path)


def _quantity(value: float, unit: str, note: str) -> dict:
    return {"value": float(f"{value:.6g}"), "unit": unit, "provenance": "measured",
            "source": "neuroedge_calibrate", "note": note}


def calibrate(base: str, *, repeats: int = 20, device: str = "cpu", name: str = "",
              command: str = "") -> tuple[dict, list[str]]:
    """The calibrated profile as a TOML document (a dict) and one line per fitted entry."""
    from hw_profiles.loader import load
    kind = load(base).kind
    wanted = "gpu" if device == "cuda" else "cpu"
    if kind != wanted:   # checked before the microbenchmarks run
        raise ProfileError(f"--profile {base!r} is a {kind} profile; calibrating on {device} "
                           f"measures a {wanted}: start from a {wanted} profile (e.g. "
                           f"{'a100' if wanted == 'gpu' else 'x86-avx2'})")
    doc = tomllib.loads(_base_path(base).read_text())
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    where = f"{stamp} on {machine_name()}, {device}; command: {command or 'calibrate()'}"
    launch = dispatch_s(repeats=repeats, device=device)
    sizes = GEMM_SIZES
    macs = np.array([float(n) ** 3 for n in sizes])
    secs = gemm_times(sizes, repeats=repeats, device=device)
    peak, n_half = fit_hockney(macs, secs, launch)
    lines = [f"launch_s      {launch:.3g} s  (torch.add of 8x8 tensors, fastest of {repeats} "
             f"blocks of {DISPATCH_BLOCK})",
             f"mac_fp32      {peak:.3g} MAC/s  (Hockney fit to fp32 GEMMs n = "
             f"{', '.join(map(str, sizes))})",
             f"half_perf_ops {n_half:.3g}"]
    doc.setdefault("execution", {})
    doc["execution"]["launch_s"] = _quantity(
        launch, "s", f"eager torch.add of two 8x8 tensors; {where}")
    doc["execution"]["half_perf_ops"] = _quantity(
        n_half, "1", "Hockney n_1/2 fitted with mac_fp32 to the fastest GEMM times "
        + ", ".join(f"n={n}: {t:.3g} s" for n, t in zip(sizes, secs, strict=True))
        + f"; {where}")
    doc.setdefault("throughput", {})["mac_fp32"] = _quantity(
        peak, "1/s", f"achieved fp32 GEMM peak, Hockney fit; {where}")
    meter, why = energy_meter(device)
    if meter is not None:
        e0 = meter.read_j()
        time.sleep(IDLE_S)
        idle_w = (meter.read_j() - e0) / IDLE_S
        doc.setdefault("static", {})["power_w"] = _quantity(
            idle_w, "W", f"{meter.name} over {IDLE_S} s of sleep; {where}")
        lines.append(f"power_w       {idle_w:.3g} W  ({meter.name})")
    else:
        lines.append(f"power_w       kept from {base}: idle power is not measurable here ({why})")
    doc["name"] = name or f"{doc['name']}-measured"
    # a profile calibrated before names its old machine once, not once per calibration
    base_description = doc["description"].split(CALIBRATED_ON)[0]
    doc["description"] = f"{base_description}{CALIBRATED_ON}{machine_name()}"
    doc.setdefault("sources", {})["neuroedge_calibrate"] = dict(
        SOURCE, title=f"neuroedge measure --calibrate microbenchmarks (time.perf_counter), "
                      f"{where}")
    cited = set(_cited(doc))
    doc["sources"] = {k: v for k, v in doc["sources"].items() if k in cited}
    return doc, lines


def _cited(obj):
    """Every ``source`` key a quantity in ``obj`` cites (the loader refuses uncited ones)."""
    if isinstance(obj, dict):
        if "source" in obj and "value" in obj:
            yield obj["source"]
        for k, v in obj.items():
            if k != "sources":
                yield from _cited(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _cited(v)


def write_profile(doc: dict, out: Path, *, force: bool = False) -> None:
    """Write ``doc`` to ``out`` after checking it loads; refuse to replace a file this
    command did not write (its first line is not ``MARKER``) unless ``force``."""
    import tomli_w

    from deploy.outputs import write_text
    from hw_profiles.loader import loads
    check_out(out, force)
    text = MARKER + "\n" + tomli_w.dumps(doc)
    loads(text, origin=str(out))   # a profile that does not load is never written
    # written in a temporary directory of its own and renamed onto ``out``: no sibling the
    # user may own (``OUT.tmp``) is touched; force=True as check_out has just allowed it
    write_text(out, text, force=True, parents=True, option="--out")


def check_out(out: Path, force: bool) -> None:
    """Refuse an existing ``out`` this command did not write (its first line is not
    ``MARKER``) unless ``force``, and a place that cannot take the file (a parent that is
    a file or not writable): checked before the measurements, and again when writing."""
    from deploy.outputs import check_output
    check_output(out, force=True, option="--out")
    if out.exists():
        try:
            first = out.read_text().splitlines()[:1]
        except (OSError, UnicodeDecodeError):
            first = []
        if first != [MARKER] and not force:
            raise ModelError(f"--out {out}: exists and was not written by measure "
                             "--calibrate; choose another path or pass --force")


def cmd_calibrate(args, device: str) -> int:
    if not args.out:
        raise ModelError("--calibrate: give --out PATH.toml for the profile it writes")
    out = Path(args.out)
    if out.suffix != ".toml":
        raise ModelError(f"--out {out}: expected a .toml path")
    check_out(out, args.force)   # before a minute of measuring, not after
    command = "neuroedge " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    doc, lines = calibrate(args.profile, repeats=args.repeats, device=device,
                           name=out.stem, command=command)
    write_profile(doc, out, force=args.force)
    print(f"calibrated {doc['name']} from {args.profile} on {device}:")
    print("\n".join("  " + line for line in lines))
    print(f"wrote {out}: use it with --profile {out}")
    return 0
