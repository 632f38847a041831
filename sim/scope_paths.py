"""Scope paths: the ``/``-separated names a ledger files its counts under, and containment.

A scope is a path such as ``"train/fc1/backward"``; a scope's totals include its sub-scopes.
The ledger (:mod:`sim.ledger`), the energy report (:mod:`sim.energy_report`) and the
execution models all read scopes this way, so the rule lives here, below all of them.
"""
from __future__ import annotations

import re

SCOPE_RE = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
"""A valid full scope path: names of letters, digits, ``_``, ``.``, ``-`` joined by ``/``."""


def within(scope: str, parent: str) -> bool:
    """True when ``scope`` is ``parent`` or one of its sub-scopes (``""`` contains all).

    Examples
    --------
    >>> within("train/fc1", "train"), within("trainer", "train"), within("infer", "")
    (True, False, True)
    """
    return parent == "" or scope == parent or scope.startswith(parent + "/")
