"""The export scaffolding: atomic writes, target validation, ONNX checked by onnxruntime."""
import pytest
import torch

from deploy.cli import main
from deploy.errors import ExportError, OutputError
from deploy.export import atomic_output, export_model
from deploy.onnx_export import check_onnx, export_onnx


def test_atomic_output_leaves_nothing_when_the_writer_fails(tmp_path):
    out = tmp_path / "model.bin"
    with pytest.raises(RuntimeError):
        with atomic_output(out) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer crashed")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_replaces_only_its_own_directory_export(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    (out / "old.h").write_text("old")        # the user's: refused even with force
    with pytest.raises(OutputError, match="has no .neuroedge-manifest.json"), \
            atomic_output(out, directory=True, force=True) as tmp:
        (tmp / "new.h").write_text("new")
    assert [p.name for p in out.iterdir()] == ["old.h"]
    (out / "old.h").unlink()                 # empty: an export may go there
    with atomic_output(out, directory=True) as tmp:
        (tmp / "v1.h").write_text("v1")
    with atomic_output(out, directory=True, force=True) as tmp:   # its own: replaced
        (tmp / "v2.h").write_text("v2")
    assert sorted(p.name for p in out.iterdir()) == [".neuroedge-manifest.json", "v2.h"]
    assert [p.name for p in tmp_path.iterdir()] == ["c"]


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
    good = export_onnx(_BatchDependent(), torch.randn(2, 3), out, check_inputs=torch.randn(2, 3))
    assert good == out and out.exists()
