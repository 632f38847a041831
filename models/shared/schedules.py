"""Step-size schedules shared by the torch training loop and float PC / DiffPC's PCNet.

Light (no torch): cards check a configured schedule's name against ``LR_SCHEDULES``.
"""
from __future__ import annotations

import math

from sim.errors import ModelError

LR_SCHEDULES = ("constant", "cosine")


def lr_factor(schedule: str, step: int, total: int) -> float:
    """The step size of optimizer step ``step`` (0-based) of ``total``, as a fraction of
    the configured one: ``constant`` 1; ``cosine`` ``(1 + cos(pi step / total)) / 2``,
    from 1 at the first step towards 0 at the last (cosine annealing, Loshchilov & Hutter
    2017, arXiv:1608.03983, section 3, without restarts and with eta_min = 0)."""
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))
    raise ModelError(f"lr schedule {schedule!r}: expected one of {LR_SCHEDULES}")


def check_schedule(owner: str, schedule: str) -> None:
    """A config's ``lr_schedule`` must be one of ``LR_SCHEDULES``."""
    if schedule not in LR_SCHEDULES:
        raise ModelError(f"{owner}.lr_schedule = {schedule!r}; expected one of "
                         f"{LR_SCHEDULES}")
