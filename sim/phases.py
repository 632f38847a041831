"""Which scope of a run is its inference and which its training: one rule for every report.

A run's scopes that recorded samples say what it did; the rule reads their depth-1 names
(a scope holds its sub-scopes: ``infer`` holds ``infer/L256``):

* training: a depth-1 scope whose name starts with ``train`` or ``learn`` (``train`` first);
* inference: ``infer`` when it (or a sub-scope) recorded samples, else the last other
  depth-1 scope that did (an ``evaluate`` or ``test`` block after training).

The samples of a depth-1 scope are those of its topmost sampled scopes (a scope recording
samples inside one that already does is not counted twice). The headline, the HTML report,
``--json`` and the NeuroBench metrics (``sim.neurobench``) all use these functions.
"""
from __future__ import annotations

from collections.abc import Mapping

from sim.scope_paths import within

TRAINING_PREFIXES = ("train", "learn")


def depth1_sampled(samples: Mapping[str, int]) -> list[str]:
    """Depth-1 names of every scope with samples, in recording order, each once."""
    out: list[str] = []
    for scope, n in samples.items():
        top = scope.split("/")[0] if scope else ""
        if n > 0 and top and top not in out:
            out.append(top)
    return out


def train_scope(samples: Mapping[str, int]) -> str | None:
    """The depth-1 training scope (``train`` if sampled, else the first ``train*``/``learn*``)."""
    tops = [s for s in depth1_sampled(samples) if s.startswith(TRAINING_PREFIXES)]
    return "train" if "train" in tops else next(iter(tops), None)


def inference_scope(samples: Mapping[str, int]) -> str | None:
    """The depth-1 inference scope (``infer`` if sampled, else the last non-training one)."""
    tops = [s for s in depth1_sampled(samples) if not s.startswith(TRAINING_PREFIXES)]
    return "infer" if "infer" in tops else (tops[-1] if tops else None)


def scope_samples(samples: Mapping[str, int], scope: str | None) -> int:
    """Samples of ``scope``: those of its topmost sampled scopes (itself or sub-scopes)."""
    if scope is None:
        return 0
    sampled = [s for s, n in samples.items() if n > 0 and within(s, scope)]
    return sum(samples[s] for s in sampled if not any(t != s and within(s, t) for t in sampled))
