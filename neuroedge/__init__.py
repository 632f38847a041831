"""neuroedge: what a model would cost on real hardware (ops, bytes, joules, seconds).

The public API for a model of your own is :func:`estimate`; the registered methods run
through ``deploy.cli`` (``neuroedge simulate``) and ``models.runner``.
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("neuroedge")
except _metadata.PackageNotFoundError:   # a source tree that was not installed
    __version__ = "0+unknown"


def __getattr__(name):
    # lazy: ``import neuroedge`` stays light (torch is loaded by the first estimate)
    if name in ("estimate", "Estimate"):
        from neuroedge import estimate as _estimate_module
        return getattr(_estimate_module, name)
    raise AttributeError(f"module 'neuroedge' has no attribute {name!r}")


__all__ = ["estimate", "Estimate", "__version__"]
