"""What a trained method hands to an exporter: plain data the simulation layer owns.

A card's ``artifact(trained, target)`` returns one of these; ``deploy/export.py`` maps each
export target to the artifact type it takes (``EXPORTERS``) and writes it. Nothing here
imports ``deploy``: the exporters read these objects, never the other way round.

* :class:`BitwiseArtifact` (target ``c``): the packed bitwise layers
  (``sim/bitwise/network.py``) and golden inputs; the exporter runs the layers on a
  ``BitwiseDevice`` of ``profile`` and writes the outputs as golden vectors.
* :class:`NetworkArtifact` (target ``nir``): a spiking ``Network`` (``sim/neuromorphic``)
  and the profile its placement (and so its quantised weights) comes from.
* :class:`TorchArtifact` (target ``onnx``): a torch module in eval mode with example inputs
  the exported graph is checked on against torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.errors import ModelError


@dataclass(frozen=True)
class BitwiseArtifact:
    layers: list
    inputs: np.ndarray
    profile: Any = "cortex-m4"

    def __post_init__(self):
        if not self.layers:
            raise ModelError("BitwiseArtifact: no layers; a trained bitwise network has at "
                              "least one layer")


@dataclass(frozen=True)
class NetworkArtifact:
    network: Any
    profile: Any = "loihi"


@dataclass(frozen=True)
class TorchArtifact:
    module: Any
    example_inputs: Any
    input_names: tuple[str, ...] = ("input",)
    output_names: tuple[str, ...] = ("output",)
    check_inputs: Any = None
    notes: dict = field(default_factory=dict)


ARTIFACT_TYPES = {"c": BitwiseArtifact, "nir": NetworkArtifact, "onnx": TorchArtifact}
"""Export target -> the artifact type its exporter takes."""
