"""The export scaffolding: target validation, ONNX checked by onnxruntime,
and the exporters fed sim artifacts built directly (no model card)."""
import numpy as np
import pytest
import torch

from deploy.cli import main
from deploy.errors import ExportError
from deploy.export import EXPORTERS, export_model, write_artifact
from deploy.onnx_export import check_onnx, export_onnx
from sim.artifacts import ARTIFACT_TYPES, BitwiseArtifact, NetworkArtifact, TorchArtifact


def test_export_rejects_unknown_target_and_unsupported_model():
    with pytest.raises(ExportError, match="unknown export target 'tflite'"):
        export_model("mlp", "tflite")
    with pytest.raises(ExportError, match="cannot be exported to 'nir'"):
        export_model("mlp", "nir")


def test_cli_export_error_is_one_line(capsys):
    assert main(["export", "mlp", "--target", "nir"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error:") and err.count("\n") == 1


def test_onnx_roundtrip_agrees_and_detects_a_mismatch(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    path = export_onnx(net, torch.randn(2, 6), tmp_path / "net.onnx")
    assert check_onnx(path, net, torch.randn(9, 6)) < 1e-5   # dynamic batch: 9 != 2
    with torch.no_grad():
        net[2].bias += 1.0                                   # torch side changes, file not
    with pytest.raises(ExportError, match="disagrees"):
        check_onnx(path, net, torch.randn(4, 6))


class _BatchDependent(torch.nn.Module):
    """Traced at batch 2 as the identity; eager at other batch sizes adds 1: ONNX disagrees."""

    def forward(self, x):
        return x if x.shape[0] == 2 else x + 1


def test_export_with_a_failing_check_keeps_no_file(tmp_path):
    out = tmp_path / "bad.onnx"
    with pytest.raises(ExportError, match="disagrees"):
        export_onnx(_BatchDependent(), torch.randn(2, 3), out, check_inputs=torch.randn(5, 3))
    assert list(tmp_path.iterdir()) == []
    # checked at its own batch size it agrees, but the batch axis is declared dynamic: the
    # check at twice the batch (4) finds the graph fixed to batch 2's path
    with pytest.raises(ExportError, match=r"bad.onnx: onnxruntime disagrees .* at batch 4"):
        export_onnx(_BatchDependent(), torch.randn(2, 3), out, check_inputs=torch.randn(2, 3))
    assert list(tmp_path.iterdir()) == []
    good = export_onnx(_BatchDependent(), torch.randn(2, 3), out, check_inputs=torch.randn(2, 3),
                       dynamic_batch=False)
    assert good == out and out.exists()


class _BatchBakedIn(torch.nn.Module):
    """``view(int(x.shape[0]), -1)``: the tracer records the example's batch as a constant."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(x.view(int(x.shape[0]), -1))


def test_a_dynamic_batch_that_cannot_run_is_refused(tmp_path):
    """Before, checked at the example's batch only, the file was kept and onnxruntime failed
    at any other batch ("GEMM: Dimension mismatch")."""
    out = tmp_path / "baked.onnx"
    with pytest.raises(ExportError, match=r"baked.onnx: onnxruntime fails at batch 2 "):
        export_onnx(_BatchBakedIn(), torch.randn(1, 2, 3), out, check_inputs=torch.randn(1, 2, 3))
    assert list(tmp_path.iterdir()) == []


# -- EXPORTERS: one writer per target, each taking its sim artifact (issue 12 item 4) -------
def _bitwise_artifact():
    from tests.deploy.test_c_export import _network
    layers, x = _network(32, sizes=(40, 20, 10))
    return BitwiseArtifact(layers, x, "cortex-m4")


def test_c_exporter_writes_the_artifacts_layers_with_golden_vectors(tmp_path):
    from deploy.c_export import check_c_project, missing_tools
    from sim.bitwise import BitwiseDevice
    art = _bitwise_artifact()
    out = EXPORTERS["c"](art, tmp_path / "proj")
    assert out == tmp_path / "proj"
    assert {"model.c", "model_weights.h", "golden.h", "Makefile"} <= {p.name
                                                                     for p in out.iterdir()}
    # 12 golden inputs (test_c_export's _network), as many expected labels in golden.h
    golden = (out / "golden.h").read_text()
    assert "#define NE_GOLDEN_N 12" in golden
    if missing_tools("host"):
        pytest.skip(f"C host build: {missing_tools('host')}")
    want = BitwiseDevice("cortex-m4").run(art.layers, art.inputs)
    assert check_c_project(out, want, target="host").all_match


def test_onnx_exporter_matches_torch_on_a_linear_layer(tmp_path):
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort
    torch.manual_seed(1)
    lin = torch.nn.Linear(5, 3)
    art = TorchArtifact(lin.eval(), torch.randn(2, 5), input_names=("x",), output_names=("y",),
                        check_inputs=torch.randn(4, 5))
    path = EXPORTERS["onnx"](art, tmp_path / "lin.onnx")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x"]
    assert [o.name for o in sess.get_outputs()] == ["y"]
    x = torch.randn(6, 5)
    with torch.no_grad():
        want = (x @ lin.weight.T + lin.bias).numpy()          # y = x W^T + b
    np.testing.assert_allclose(sess.run(None, {"x": x.numpy()})[0], want, atol=1e-5)


def test_nir_exporter_refuses_a_profile_that_cannot_place_the_network(tmp_path):
    from sim.neuromorphic import Network
    net = Network(dt=1e-3)
    net.population("p", 2, "lif", tau_mem=0.01, v_threshold=1.0)
    with pytest.raises(ExportError, match=r"^NIR export: the artifact's profile 'a100' is a "
                                          r"'gpu' profile; the placement"):
        EXPORTERS["nir"](NetworkArtifact(net, "a100"), tmp_path / "n.nir")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target, wrong", [("c", "torch"), ("nir", "bitwise"),
                                           ("onnx", "network")])
def test_an_exporter_refuses_another_artifact_type(tmp_path, target, wrong):
    from sim.neuromorphic import Network
    arts = {"torch": lambda: TorchArtifact(torch.nn.Linear(2, 1), torch.zeros(1, 2)),
            "bitwise": _bitwise_artifact, "network": lambda: NetworkArtifact(Network(dt=1e-3))}
    art = arts[wrong]()
    want = ARTIFACT_TYPES[target].__name__
    with pytest.raises(ExportError, match=rf"^export target '{target}' takes a "
                                          rf"sim.artifacts.{want}; got a {type(art).__name__} "):
        write_artifact(target, art, tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_write_artifact_refuses_an_unknown_target(tmp_path):
    with pytest.raises(ExportError, match="unknown export target 'tflite': targets are c, nir, "
                                          "onnx"):
        write_artifact("tflite", None, tmp_path / "x")
