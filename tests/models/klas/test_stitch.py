"""SN-Net's stitching as KLAS uses it: least squares, the identity stitch, ledger FLOPs."""
import pytest
import torch

import sim
from models.klas.stitch import StitchedViT, StitchLayer, least_squares
from models.klas.vit import TinyViT
from sim.errors import ModelError


def _vit(dim, depth=3, heads=2, seed=0, patch=7):
    torch.manual_seed(seed)
    return TinyViT(dim, depth, heads, patch=patch).eval()


def test_ls_stitch_reproduces_an_exactly_linear_map():
    g = torch.Generator().manual_seed(1)
    src = torch.randn(40, 17, 8, generator=g)                    # 680 tokens of width 8
    w, b = torch.randn(12, 8, generator=g), torch.randn(12, generator=g)
    dst = src @ w.T + b                                           # exactly linear target
    layer = StitchLayer(8, 12).ls_init(src, dst)
    with torch.no_grad():
        assert torch.allclose(layer(src), dst, atol=1e-4)
    assert torch.allclose(layer.weight, w, atol=1e-4) and torch.allclose(layer.bias, b, atol=1e-4)
    # a non-linear target is not reproduced exactly: the residual is what LS leaves
    w2, b2 = least_squares(src, torch.tanh(dst))
    assert float((src @ w2.T + b2 - torch.tanh(dst)).abs().max()) > 1e-2


def test_identity_stitch_between_identical_anchors_is_the_anchor():
    f = _vit(16)
    x = torch.rand(5, 784)
    for i in (1, 2):
        eye = StitchLayer(16, 16)
        with torch.no_grad():
            eye.weight.copy_(torch.eye(16))
            eye.bias.zero_()
        with torch.no_grad():
            assert torch.allclose(StitchedViT(f, f, i, i, eye)(x), f(x), atol=1e-6)
    # and LS init between an anchor and itself finds that identity
    outs = f.block_outputs(torch.rand(30, 784))
    ls = StitchLayer(16, 16).ls_init(outs[0], outs[0])
    assert torch.allclose(ls.weight, torch.eye(16), atol=1e-3)


def test_stitched_flops_in_the_ledger_are_front_plus_stitch_plus_back(toy_gpu_path):
    f, g = _vit(16), _vit(24, seed=1)
    dev = sim.device(toy_gpu_path)
    x = torch.rand(4, 784)                     # run() moves it to the engine's device
    # the modules go there too (not compiled: run() records them as models it ran)
    f, g = f.to(dev.torch_device), g.to(dev.torch_device)
    net = StitchedViT(f, g, 2, 1, StitchLayer(16, 24).to(dev.torch_device))
    dev.run(net, x, scope="s")
    dev.run(f, x, scope="f")
    dev.run(g, x, scope="g")
    led = dev.ledger

    def mac(prefix):  # module scopes are dotted paths: "s/front.0.qkv/forward"
        return sum(led.ops(s).get("mac_fp32", 0) for s in led.scopes()
                   if s == prefix or s.startswith((prefix + ".", prefix + "/")))
    # stitch layer: 4 samples x 17 tokens x 16 x 24 MACs
    assert mac("s/stitch") == 4 * 17 * 16 * 24
    assert mac("s/embed") == 4 * 16 * 49 * 16                     # 16 patches of 49 px -> 16
    assert mac("s/embed") + mac("s/front") == mac("f/embed") + mac("f/blocks.0") + mac("f/blocks.1")
    assert mac("s/back") == mac("g/blocks.1") + mac("g/blocks.2")
    assert mac("s") == (mac("f/embed") + mac("f/blocks.0") + mac("f/blocks.1") + mac("s/stitch")
                        + mac("g/blocks.1") + mac("g/blocks.2") + mac("g/norm") + mac("g/head"))
    assert led.uncounted() == {}


def test_bad_stitch_inputs_are_named():
    f, g = _vit(16), _vit(24, seed=1)
    with pytest.raises(ModelError, match=r"i = 0; expected an int in 1..3"):
        StitchedViT(f, g, 0, 1)
    with pytest.raises(ModelError, match=r"j = 3; expected an int in 1..2"):
        StitchedViT(f, g, 1, 3)
    with pytest.raises(ModelError, match=r"expected 16 -> 24"):
        StitchedViT(f, g, 1, 1, StitchLayer(16, 16))
    with pytest.raises(ModelError, match="share the patch layout"):
        StitchedViT(f, _vit(24, patch=4), 1, 1)
    with pytest.raises(ModelError, match="leading .* dims must match"):
        least_squares(torch.zeros(5, 17, 4), torch.zeros(6, 17, 4))
    with pytest.raises(ModelError, match="give >= 5 tokens"):
        least_squares(torch.zeros(3, 4), torch.zeros(3, 2))
    with pytest.raises(ModelError, match="src has width 8"):
        StitchLayer(16, 24).ls_init(torch.zeros(10, 17, 8), torch.zeros(10, 17, 24))
    with pytest.raises(ModelError, match="not a multiple of patch 5"):
        TinyViT(8, 2, 2, patch=5)


def test_stitched_model_runs_in_onnxruntime_like_torch(tmp_path):
    import numpy as np
    import onnxruntime as ort

    from deploy.onnx_export import export_onnx
    f, g = _vit(16), _vit(24, seed=1)
    net = StitchedViT(f, g, 2, 1, StitchLayer(16, 24)).eval()
    x = torch.rand(4, 784, generator=torch.Generator().manual_seed(0))
    path = export_onnx(net, x[:2], tmp_path / "stitched.onnx", input_names=("pixels",),
                       output_names=("logits",))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"pixels": x.numpy()})                  # batch 4 != 2
    with torch.no_grad():
        want = net(x).numpy()
    assert got.shape == (4, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
