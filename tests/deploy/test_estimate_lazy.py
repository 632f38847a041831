"""Models in forms torch allows that the engine did not take. Lazy layers
(``nn.LazyLinear``, ``nn.LazyConv2d``: sized by their first forward): ``TorchDevice.compile``
crashed with torch's raw ValueError from ``numel()`` of an uninitialized parameter (and
``neuroedge estimate`` printed the traceback); now compile refuses in one line, and estimate
sizes them by one uncounted forward on the example input, as torch's convention asks. Also
meta-device and TorchScript models (below)."""
import pytest
import torch
from torch import nn

from deploy.cli import main
from deploy.estimate import estimate
from sim.errors import ModelError
from sim.torch_engine.engine import TorchDevice


def _lazy():
    return nn.Sequential(nn.LazyConv2d(8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))


def _sized():
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 26 * 26, 10))


def test_compile_refuses_unsized_lazy_layers_in_one_line():
    dev = TorchDevice("x86-avx2")
    with pytest.raises(ModelError, match=r"lazy layers not sized yet \(0\.weight, 0\.bias, "
                                         r"3\.weight and 1 more\).*run the model once"):
        dev.compile(_lazy())


def test_compile_takes_lazy_layers_once_sized():
    model = _lazy()
    model(torch.zeros(1, 1, 28, 28))
    dev = TorchDevice("x86-avx2")
    net = dev.compile(model)
    with dev.count("x"), torch.no_grad():
        net(torch.zeros(1, 1, 28, 28, device=dev.torch_device))
    # 8 x 9 + 8 conv, 5,408 x 10 + 10 linear
    assert dev.ledger.models()["Sequential"]["parameters"] == 80 + 54_090


def test_estimate_sizes_lazy_layers_and_counts_as_the_sized_model():
    lazy = _lazy()
    est = estimate(lazy, (2, 1, 28, 28), profiles=["cortex-m7", "a100"])
    ref = estimate(_sized(), (2, 1, 28, 28), profiles=["cortex-m7", "a100"])
    assert est.ledgers["a100"].total_ops() == ref.ledgers["a100"].total_ops()
    assert est.modules == ref.modules
    assert any("lazy layers (4 parameters and buffers) sized" in n for n in est.notes)
    # the user's module is untouched: estimate sized a copy
    assert isinstance(lazy[0].weight, nn.parameter.UninitializedParameter)
    assert not any("lazy" in n for n in ref.notes)


def test_estimate_lazy_model_with_a_wrong_shape_is_one_line():
    with pytest.raises(ModelError, match=r"forward failed on example_input of shape "
                                         r"\(2, 1, 2, 2\) while sizing its lazy layers"):
        estimate(_lazy(), (2, 1, 2, 2), profiles=["a100"])


def test_cli_estimate_of_a_lazy_factory(tmp_path, capsys):
    f = tmp_path / "lazy_net.py"
    f.write_text("from torch import nn\n\n\ndef make():\n    return nn.Sequential("
                 "nn.LazyConv2d(8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))\n")
    assert main(["estimate", f"{f}:make", "--input-shape", "2,1,28,28",
                 "--profiles", "cortex-m7"]) == 0
    out = capsys.readouterr().out
    assert "lazy layers (4 parameters and buffers) sized by one uncounted forward" in out
    assert "ParameterCount 54,170" in out


def test_meta_device_model_is_one_line():
    """A model built on the meta device (shapes, no data): compile crashed in .to() with
    torch's NotImplementedError ("Cannot copy out of meta tensor")."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))
    with pytest.raises(ModelError, match=r"parameters on the meta device \(0\.weight, "
                                         r"0\.bias, 2\.weight and 1 more\).*to_empty"):
        TorchDevice("x86-avx2").compile(model)
    with pytest.raises(ModelError, match="meta device"):
        estimate(model, (2, 16), profiles=["a100"])


def test_torchscript_model_is_estimated_and_its_training_refused_in_one_line():
    """A torch.jit.script'ed model: estimate crashed registering Python hooks
    (``register_forward_pre_hook is not supported on ScriptModules``); its ops are counted
    now (no layer rows), and a training step is refused (torch's copy of a ScriptModule has
    non-leaf parameters, which no optimizer takes)."""
    torch.manual_seed(0)
    plain = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))
    est = estimate(torch.jit.script(plain), (2, 16), profiles=["a100"])
    # 2 x (16 x 8 + 8 x 2) = 288 MACs, as the Python module counts
    assert est.ledgers["a100"].total_ops()["mac_fp32"] == 288
    with pytest.raises(ModelError, match="TorchScript module, which cannot be trained"):
        estimate(torch.jit.script(plain), (2, 16), profiles=["a100"], loss="auto")
