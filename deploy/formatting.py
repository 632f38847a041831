"""Figures as people read them: engineering units with 3 significant digits, and the
fixed order of energy categories that tables and plots share."""
from __future__ import annotations

import math

from hw_profiles.ops import CATEGORIES
from sim.energy_report import EnergyReport

_ENERGY_UNITS = ((1e-12, "pJ"), (1e-9, "nJ"), (1e-6, "uJ"), (1e-3, "mJ"), (1.0, "J"))
_BYTE_UNITS = ((1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB"), (1e12, "TB"))
_SECOND_UNITS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))


def significant(x: float) -> str:
    """``x`` to 3 significant digits, without an exponent where readable (50.1, 44, 1230)."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    r = float(f"{x:.3g}")
    decimals = max(0, 2 - math.floor(math.log10(abs(r))))
    if decimals > 9 or abs(r) >= 1e15:
        return f"{x:.3g}"
    text = f"{r:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _engineering(value: float, units) -> str:
    value = float(value)
    if not math.isfinite(value):
        return f"{value} {units[-1][1]}"
    # Round first, so 999.96 pJ reads "1 nJ" rather than "1000 pJ".
    mag = float(f"{abs(value):.3g}")
    base = next(u for s, u in units if s == 1.0)
    if mag == 0:
        return f"0 {base}"
    scale, unit = units[0]
    for s, u in units:
        if mag >= s:
            scale, unit = s, u
    return f"{'-' if value < 0 else ''}{significant(mag / scale)} {unit}"


def format_energy(j: float) -> str:
    """Joules in pJ, nJ, uJ, mJ or J with 3 significant digits.

    Examples
    --------
    >>> format_energy(50.1e-9), format_energy(0.5e-12), format_energy(0.0)
    ('50.1 nJ', '0.5 pJ', '0 J')
    """
    return _engineering(j, _ENERGY_UNITS)


def format_bytes(n: float) -> str:
    """Bytes in B, kB, MB, GB or TB (base 1000) with 3 significant digits.

    Examples
    --------
    >>> format_bytes(4400), format_bytes(400)
    ('4.4 kB', '400 B')
    """
    return _engineering(n, _BYTE_UNITS)


def format_seconds(s: float) -> str:
    """Seconds in ns, us, ms or s with 3 significant digits.

    Examples
    --------
    >>> format_seconds(44e-9), format_seconds(0.0123)
    ('44 ns', '12.3 ms')
    """
    return _engineering(s, _SECOND_UNITS)


def energy_breakdown(report: EnergyReport) -> dict[str, float]:
    """Energy per category in joules, in the fixed order of ``hw_profiles.ops.CATEGORIES``.

    Every category is present (0.0 where nothing was charged), so plots of several
    profiles line up.
    """
    by_cat = report.by_category()
    return {cat: float(by_cat.get(cat, 0.0)) for cat in CATEGORIES}
