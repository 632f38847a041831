"""Checks the bench scripts share: every side of a comparison did the work it is timed or
compared for (issue 16, "honest benches").

Not a benchmark. A check raises ``RuntimeError`` naming the side, what it did and what was
asked, so a figure from a run that trained fewer epochs (early exit, a callback that stops
training, a preset that overrides the count) never reaches a table.
"""
from __future__ import annotations


def epochs_trained(side: str, trained: int, asked: int) -> int:
    """``trained`` (read back from the side's own history, trace or callback) must equal
    ``asked`` (the epochs the bench times or compares it for); returns it."""
    if trained != asked:
        raise RuntimeError(f"bench: {side} trained {trained} epochs, but the bench asked "
                           f"for {asked}; its figure would not be for the work stated")
    return trained


class EpochCounter:
    """A progress callback ``(step, total, record)`` counting the epochs a trainer reports:
    for trainers that keep no history of their own (QAT's ``fit``)."""

    def __init__(self):
        self.epochs = 0

    def __call__(self, step, total, record):
        self.epochs += 1
