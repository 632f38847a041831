"""Execution models: how a ledger's counts become seconds and joules on one kind of device.

One module per kind, each exposing ``price(ledger, profile) -> EnergyReport``;
:func:`sim.pricing.price` dispatches to them by ``profile.kind``. Every parameter a model uses
comes from the profile (``[execution]``, ``[static]``, ``[[memory]]``), with its source.
"""
