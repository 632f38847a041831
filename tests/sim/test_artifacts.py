"""Export artifacts: one type per target, and a bitwise artifact needs layers."""
import numpy as np
import pytest

from sim.artifacts import ARTIFACT_TYPES, BitwiseArtifact, NetworkArtifact, TorchArtifact
from sim.errors import ModelError


def test_artifact_types_per_target():
    assert ARTIFACT_TYPES == {"c": BitwiseArtifact, "nir": NetworkArtifact,
                              "onnx": TorchArtifact}
    with pytest.raises(ModelError, match=r"^BitwiseArtifact: no layers"):
        BitwiseArtifact([], np.zeros((1, 1), np.uint32))
