"""neuroedge: what a model would cost on real hardware (ops, bytes, joules, seconds).

The public Python API: a thin facade over the layers below it, which hold every line of the
implementation (``hw_profiles <- sim <- models <- deploy <- neuroedge``). For a model of your
own, :func:`estimate` (a torch module, a NIR graph or a ``.nir`` file) returns an
:class:`Estimate` (``print(est)`` shows its tables); every refusal is a
:class:`NeuroedgeError` with a one-line message; :func:`estimate_nir` and
:func:`estimate_spiking_module` are its neuromorphic paths, callable directly. The
registered methods run through ``deploy.cli`` (``neuroedge simulate``) and
``models.runner``.

Examples
--------
>>> import torch, neuroedge
>>> est = neuroedge.estimate(torch.nn.Linear(4, 3), torch.zeros(2, 4), profiles=["a100"])
>>> est.ledgers["a100"].total_ops()["mac_fp32"]   # 2 samples x 4 inputs x 3 outputs
24
"""
from importlib import metadata as _metadata

from deploy.estimate import estimate
from deploy.estimate_result import Estimate
from deploy.nir_estimate import estimate_nir, estimate_spiking_module
from hw_profiles.errors import NeuroedgeError

try:
    __version__ = _metadata.version("neuroedge")
except _metadata.PackageNotFoundError:   # a source tree that was not installed
    __version__ = "0+unknown"

__all__ = ["estimate", "Estimate", "estimate_nir", "estimate_spiking_module", "NeuroedgeError",
           "__version__"]
