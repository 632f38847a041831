"""neuroedge: what a model would cost on real hardware (ops, bytes, joules, seconds).

The public API for a model of your own is :func:`estimate`; the registered methods run
through ``deploy.cli`` (``neuroedge simulate``) and ``models.runner``.
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("neuroedge")
except _metadata.PackageNotFoundError:   # a source tree that was not installed
    __version__ = "0+unknown"


# The submodule ``neuroedge.estimate`` and the function share a name: importing the submodule
# sets the package attribute to the module, so the function is bound here, after that import,
# eagerly (the submodule imports torch only inside its functions: ``import neuroedge`` stays
# light). A lazy ``__getattr__`` would be bypassed once anything imported the submodule.
from neuroedge.estimate import estimate  # noqa: E402
from neuroedge.result import Estimate  # noqa: E402

__all__ = ["estimate", "Estimate", "__version__"]
