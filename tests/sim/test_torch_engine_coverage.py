"""Coverage of the ops real models emit: attention kernels, the fused transformer fast path,
norms, interpolation and in-place restrides (issue 30). Tensors are built on the engine's
device, so the counts checked here are those of a CUDA run too."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from sim.torch_engine import TorchDevice
from sim.torch_engine.costs import op_cost

aten = torch.ops.aten


def _flops(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def test_attention_forward_and_backward_hand_formula(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    q = torch.randn(2, 3, 5, 8, requires_grad=True, **on)
    k = torch.randn(2, 3, 7, 8, requires_grad=True, **on)
    v = torch.randn(2, 3, 7, 8, requires_grad=True, **on)
    with dev.count("a"):
        F.scaled_dot_product_attention(q, k, v).sum().backward()
    # 2 x 3 heads, 5 x 7 = 35 scores each: 210 scores; QK^T 210 x 8 + PV 210 x 8 = 3,360 MACs;
    # backward QK^T recomputed, dQ, dK, dV, dP (210 x 8 each) = 8,400: 11,760 in all
    assert dev.ledger.total_ops()["mac_fp32"] == 11_760
    # FlopCounterMode's own formula, where it has one (CUDA kernels), agrees: 2 x 11,760
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count
    assert sdpa_flop_count(q.shape, k.shape, v.shape) + sdpa_backward_flop_count(
        q.shape, q.shape, k.shape, v.shape) == 2 * 11_760
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("backward", [False, True])
def test_every_fused_attention_kernel_counts_the_same(backward):
    """The CPU flash, CUDA flash, efficient and cuDNN kernels get one rule, so the count
    does not depend on which kernel a device picked (called here on CPU tensors: the rule
    reads shapes only)."""
    q, k, v = torch.zeros(1, 2, 4, 8), torch.zeros(1, 2, 6, 8), torch.zeros(1, 2, 6, 8)
    ops = ([aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
            aten._scaled_dot_product_flash_attention_backward.default,
            aten._scaled_dot_product_efficient_attention_backward.default,
            aten._scaled_dot_product_cudnn_attention_backward.default] if backward else
           [aten._scaled_dot_product_flash_attention_for_cpu.default,
            aten._scaled_dot_product_flash_attention.default,
            aten._scaled_dot_product_efficient_attention.default,
            aten._scaled_dot_product_cudnn_attention.default])
    args = (torch.zeros(1, 2, 4, 8), q, k, v) if backward else (q, k, v)
    # 2 heads x 4 x 6 = 48 scores; forward 48 x (8 + 8) = 768 MACs + 5 x 48 softmax ops;
    # backward 48 x (3 x 8 + 2 x 8) = 1,920 MACs + 3 x 48 softmax-backward ops
    want = ({"mac_fp32": 1_920, "flop_fp32": 144} if backward
            else {"mac_fp32": 768, "flop_fp32": 240})
    for op in ops:
        counts, _, _, uncounted = op_cost(op, args, {}, (torch.zeros(1, 2, 4, 8),))
        assert (counts, uncounted) == (want, ""), op


@pytest.mark.parametrize("train", [False, True])
def test_transformer_encoder_fast_path_is_counted(toy_gpu_path, train):
    """In eval, PyTorch would run each layer as one fused kernel: the engine counts it as its
    constituent ops, the same MACs as training's path and as FlopCounterMode."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    dev = TorchDevice(toy_gpu_path)
    enc = dev.compile(enc.train(train))
    x = torch.randn(3, 6, 16, device=dev.torch_device)
    with dev.count("t"), torch.set_grad_enabled(train):
        enc(x)
    # per layer, 18 tokens: in-projection 18 x 16 x 48 = 13,824, out-projection 18 x 16 x 16
    # = 4,608, feed-forward 2 x 18 x 16 x 32 = 18,432; attention 3 x 2 heads x 6 x 6 = 216
    # scores x (8 + 8) = 3,456: 40,320 per layer, 80,640 for two
    assert dev.ledger.total_ops()["mac_fp32"] == 80_640
    # FlopCounterMode agrees on the projections and feed-forward (73,728); it has no formula
    # for the CPU flash kernel (so misses 2 x 3,456 of attention there) but has CUDA's
    assert _flops(lambda: enc(x)) // 2 in (80_640 - 2 * 3_456, 80_640)
    assert dev.ledger.uncounted() == {}
    assert torch.backends.mha.get_fastpath_enabled()    # restored after the block


def test_norms_interpolation_and_restride(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.randn(1, 2, 4, 4, device=dev.torch_device)
    with dev.count("u"):
        F.interpolate(x, scale_factor=2, mode="bilinear")   # 2 x 8 x 8 = 128 out x 4 taps
        F.group_norm(x, 1)                                   # 32 elements x 7
        x.as_strided_((2, 4, 4), (16, 4, 1))                 # metadata only
        F.interpolate(x.view(1, 2, 4, 4), scale_factor=2)    # nearest: bytes only
    assert dev.ledger.ops("u") == {"mac_fp32": 512, "flop_fp32": 224, "kernel_launch": 3}
    assert dev.ledger.uncounted() == {}


def test_host_to_device_copy_is_not_device_work():
    """A CUDA run copies the host's input onto the device; a CPU run does not: the copy is a
    transfer, free, so both count the same (op_cost on a meta 'device' stands in for CUDA)."""
    src = torch.zeros(4, 3)
    dst = torch.empty(4, 3, device="meta")
    assert op_cost(aten.copy_.default, (dst, src), {}, dst)[:3] == ({}, 0, 0)
    same = torch.empty(4, 3)
    assert op_cost(aten.copy_.default, (same, src), {}, same)[2] == 48   # 12 floats written


# Ops of real models that went uncounted before (issue 36's follow-up of issue 30): each
# runs forward and backward under the engine and must leave nothing uncounted.
_EVERYDAY = {
    "hardswish / hardsigmoid (MobileNetV3)": lambda x: F.hardswish(x) + F.hardsigmoid(x),
    "leaky ReLU, ELU, SELU, CELU": lambda x: F.leaky_relu(x) + F.elu(x) + F.selu(x) + F.celu(x),
    "softplus, Mish, log-sigmoid, GLU": lambda x: (F.softplus(x) + F.mish(x) + F.logsigmoid(x)
                                                   + F.glu(x.repeat(1, 2), -1)),
    "shrinks, PReLU, RReLU": lambda x: (F.softshrink(x) + F.hardshrink(x)
                                        + F.prelu(x, torch.full((1,), 0.25, device=x.device))
                                        + F.rrelu(x, training=False)),
    "losses": lambda x: (F.smooth_l1_loss(x, x.detach() / 2) + F.huber_loss(x, x.detach() / 2)
                         + F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(x.detach()))
                         + F.binary_cross_entropy_with_logits(x, torch.sigmoid(x.detach()))),
    "2-D cross entropy": lambda x: F.cross_entropy(
        x.view(2, 5, 2, 2), torch.zeros(2, 2, 2, dtype=torch.long, device=x.device)),
    "scans, median": lambda x: (torch.cumsum(x, -1) + torch.cumprod(x, -1)
                                + torch.logcumsumexp(x, -1)).sum() + x.median(),
    "pixel shuffle, reflect / replicate pads, fold": lambda x: (
        F.pixel_shuffle(x.view(1, 40, 1, 1), 2).sum()
        + F.pad(x.view(2, 5, 2, 2), (1, 1, 1, 1), mode="reflect").sum()
        + F.pad(x.view(2, 5, 2, 2), (1, 1, 1, 1), mode="replicate").sum()
        + F.fold(F.unfold(x.view(2, 5, 2, 2), 2), (2, 2), 2).sum()),
    "3-D and adaptive max pooling, nearest upsampling": lambda x: (
        F.avg_pool3d(x.view(1, 1, 2, 4, 5), 2).sum() + F.max_pool3d(x.view(1, 1, 2, 4, 5), 2).sum()
        + F.adaptive_max_pool1d(x.unsqueeze(1), 3).sum()
        + F.interpolate(x.view(2, 5, 2, 2), scale_factor=2).sum()),
    "cdist, gumbel softmax": lambda x: torch.cdist(x, x).sum() + F.gumbel_softmax(x).sum(),
    "floor division": lambda x: x * torch.floor_divide(torch.arange(10, device=x.device), 3),
    "fake quantization (QAT)": lambda x: (
        torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
        + torch.fake_quantize_per_channel_affine(
            x, torch.full((10,), 0.1, device=x.device),
            torch.zeros(10, dtype=torch.int32, device=x.device), 1, -128, 127)),
    "weight norm, channel shuffle, max unpool": lambda x: (
        torch._weight_norm(x, torch.ones(4, 1, device=x.device), 0).sum()
        + F.channel_shuffle(x.view(2, 4, 5, 1), 2).sum()
        + F.max_unpool1d(*F.max_pool1d(x.unsqueeze(1), 2, return_indices=True), 2).sum()),
    "CTC loss": lambda x: F.ctc_loss(
        F.log_softmax(x.view(5, 2, 4), -1), torch.tensor([[1, 2], [3, 1]], device=x.device),
        [5, 5], [2, 2]),
    # uncounted before (a probe of everyday layers, stop 48)
    "bilinear layer": lambda x: F.bilinear(x, x[:, :6], torch.ones(3, 10, 6, device=x.device)),
    "soft and multi margin losses, dist": lambda x: (
        F.soft_margin_loss(x, torch.ones_like(x))
        + F.multi_margin_loss(x, torch.zeros(4, dtype=torch.long, device=x.device))
        + torch.dist(x, x.detach() / 2)),
    "distributions' argument checks": lambda x: torch.distributions.Normal(
        x, torch.ones_like(x)).log_prob(torch.zeros_like(x)).sum(),
    "trace, diag, Tensor.unfold": lambda x: (torch.trace(x[:, :4]) + torch.diag(x[:, :4]).sum()
                                             + x.unfold(1, 4, 2).sum()),
    "nearest-exact upsampling": lambda x: F.interpolate(x.view(2, 5, 2, 2), scale_factor=2,
                                                        mode="nearest-exact"),
    "per-sample weighted embedding bag": lambda x: F.embedding_bag(
        torch.tensor([0, 2, 1, 3], device=x.device), torch.ones(4, 3, device=x.device),
        torch.tensor([0, 2], device=x.device), mode="sum", per_sample_weights=x[0, :4]),
    "pdist, masked_select": lambda x: (F.pdist(x).sum()
                                       + torch.masked_select(x, x > 0).sum()),
    "grid sample, training": lambda x: F.grid_sample(
        x.view(1, 1, 4, 10), torch.tanh(x[:, :6]).view(1, 2, 6, 2), align_corners=False),
}


@pytest.mark.parametrize("name", list(_EVERYDAY))
def test_everyday_ops_are_counted_forward_and_backward(toy_gpu_path, name):
    dev = TorchDevice(toy_gpu_path)
    x = torch.randn(4, 10, device=dev.torch_device, requires_grad=True)
    with dev.count("t"):
        _EVERYDAY[name](x).sum().backward()
    assert dev.ledger.uncounted() == {}, name
    assert dev.ledger.total_ops("t").get("flop_fp32", 0) > 0


def test_bilinear_counts_atens_trilinear_products(toy_gpu_path):
    """nn.Bilinear runs ``_trilinear``, unrolled over the output features: per feature k
    the input1 x weight_k product summed over input1's features (B I J MACs), then with
    input2 over its features (B J MACs), then added into the output (B adds)."""
    dev = TorchDevice(toy_gpu_path)
    torch.manual_seed(0)
    layer = dev.compile(torch.nn.Bilinear(5, 7, 3, bias=False))
    x1 = torch.randn(4, 5, device=dev.torch_device, requires_grad=True)
    x2 = torch.randn(4, 7, device=dev.torch_device, requires_grad=True)
    with dev.count("fwd"):
        out = layer(x1, x2)
    # 3 x (4 x 5 x 7 + 4 x 7) = 504 MACs, 3 x 4 = 12 adds
    assert dev.ledger.ops("fwd")["mac_fp32"] == 504
    assert dev.ledger.ops("fwd")["flop_fp32"] == 12
    with dev.count("bwd"):
        out.backward(torch.ones_like(out))
    # each of the three gradients is K I J B = 420 MACs. Other ops: input1's gradient
    # multiplies gradient x weight elementwise first (3 x 4 x 5 x 7 = 420) and adds 3 x 20
    # outputs (480); input2's pairs input1 with the weight over I first (the MACs), then
    # multiplies by the gradient and adds, 3 x (28 + 28) = 168; the weight's multiplies
    # input1 by the gradient (3 x 20) and adds 3 x 35 outputs (165)
    ops = dev.ledger.total_ops("bwd")
    assert ops["mac_fp32"] == 3 * 420
    assert ops["flop_fp32"] == 480 + 168 + 165
    assert dev.ledger.uncounted() == {}


def test_grid_sample_backward_counts_both_gradients():
    """grid_sampler_2d_backward, bilinear, zeros padding, no corner alignment: per output
    pixel the coordinates again (2 x 4 unnormalise + 2 floors + 12 weight ops) and 2
    multiplies for the grid's gradient; per output element 4 MACs for the input's gradient
    and 8 for the grid's. 9 pixels x 2 channels."""
    inp, grid = torch.randn(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1
    grad = torch.randn(1, 2, 3, 3)
    outs = (torch.empty_like(inp), torch.empty_like(grid))
    args = (grad, inp, grid, 0, 0, False, [True, True])
    counts, read, write, uncounted = op_cost(aten.grid_sampler_2d_backward.default, args, {},
                                             outs)
    assert uncounted == ""
    assert counts["flop_fp32"] == 9 * (8 + 2 + 12 + 2)
    assert counts["mac_fp32"] == 18 * (4 + 8)
    # the gradient (72 B) and grid (72 B) read, 4 corners of each of 18 elements (288 B);
    # both gradients written (128 + 72 B)
    assert (read, write) == (72 + 72 + 288, 128 + 72)
    # the input's gradient alone: no grid-gradient products
    args = (grad, inp, grid, 0, 0, False, [True, False])
    counts = op_cost(aten.grid_sampler_2d_backward.default, args, {}, outs)[0]
    assert counts["mac_fp32"] == 18 * 4 and counts["flop_fp32"] == 9 * 22


def test_pool3d_and_cdist_counts(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.randn(1, 1, 4, 4, 4, device=dev.torch_device)
    with dev.count("pool"):
        F.avg_pool3d(x, 2)         # 2 x 2 x 2 = 8 outputs, each adds a 2 x 2 x 2 window: 64
    assert dev.ledger.ops("pool") == {"flop_fp32": 64, "kernel_launch": 1}
    a = torch.randn(3, 5, 7, device=dev.torch_device)
    b = torch.randn(3, 6, 7, device=dev.torch_device)
    with dev.count("cdist"):
        torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")
    # 3 x 5 x 6 = 90 distances of 7 subtract-square-accumulate steps: 630 MACs; 630
    # subtractions + 90 roots = 720
    ops = dev.ledger.ops("cdist")
    assert (ops["mac_fp32"], ops["flop_fp32"]) == (630, 720)
    x = torch.randn(4, 10, device=dev.torch_device)
    with dev.count("pdist"):
        F.pdist(x)
    # 4 x 3 / 2 = 6 pairs of 10 subtract-square-accumulate steps: 60 MACs; 60 subtractions
    # + 6 roots = 66
    ops = dev.ledger.ops("pdist")
    assert (ops["mac_fp32"], ops["flop_fp32"]) == (60, 66)


def test_cdist_of_more_than_25_rows_counts_the_matrix_product_form(toy_gpu_path):
    """cdist's default for more than 25 rows (prototypes, k-means, contrastive losses) runs
    ``_euclidean_dist``, the matrix-product form; it was uncounted, forward and backward."""
    dev = TorchDevice(toy_gpu_path)
    a = torch.randn(30, 8, device=dev.torch_device, requires_grad=True)
    b = torch.randn(40, 8, device=dev.torch_device)
    with dev.count("forward"):
        d = torch.cdist(a, b)
    # one product of (30, 8 + 2) by (10, 40): 12,000 MACs; norms 2 x 30 x 8 + 2 x 40 x 8,
    # x1 times -2 30 x 8, clamp and root 2 x 1,200: 240 + 480 + 640 + 2,400 = 3,760
    ops = dev.ledger.ops("forward")
    assert (ops["mac_fp32"], ops["flop_fp32"]) == (12_000, 3_760)
    with dev.count("backward"):
        d.sum().backward()
    assert dev.ledger.uncounted() == {}


def _lstm_ledger(dev, train, mkldnn):
    torch.manual_seed(0)
    lstm = dev.compile(torch.nn.LSTM(8, 16, num_layers=2, batch_first=True))
    x = torch.randn(4, 5, 8, device=dev.torch_device, requires_grad=train)
    with torch.backends.mkldnn.flags(enabled=mkldnn), dev.count("lstm"):
        with torch.set_grad_enabled(train):
            out = lstm(x)[0]
            if train:
                out.sum().backward()
    assert dev.ledger.uncounted() == {}
    return dev.ledger.total_ops("lstm")


@pytest.mark.parametrize("train", [False, True], ids=["infer", "train"])
def test_fused_lstm_counts_the_cells_products(toy_gpu_path, train):
    """nn.LSTM on a CPU runs oneDNN's fused layer kernel (``mkldnn_rnn_layer``), op by op
    when oneDNN is off; the MACs agree. Forward: 4 batch x 5 steps x 64 gate units x
    (8 + 16) inputs for layer 1 = 30720, x (16 + 16) for layer 2 = 40960: 71680. Training
    adds twice that in the fused backward, whose op-by-op twin skips the zero initial
    state's gradient: 4 x 64 x 16 = 4096 MACs per layer."""
    dev = TorchDevice(toy_gpu_path)
    fused = _lstm_ledger(dev, train, mkldnn=True)
    if dev.torch_device.type != "cpu" or not torch.backends.mkldnn.is_available():
        pytest.skip("oneDNN's fused LSTM runs on a CPU build with oneDNN")
    by_op = _lstm_ledger(TorchDevice(toy_gpu_path), train, mkldnn=False)
    if not train:
        assert fused["mac_fp32"] == by_op["mac_fp32"] == 71680
        # gate arithmetic: 13 per unit and step (as op by op) + 2 bias adds x 4 gates:
        # 2 layers x 20 positions x 16 units x 21 = 13440
        assert fused["flop_fp32"] == 13440
    else:
        assert fused["mac_fp32"] == 3 * 71680 == by_op["mac_fp32"] + 2 * 4096


def test_cudnn_rnn_counts_every_layer_and_direction(toy_gpu_path):
    """The CUDA kernel (``_cudnn_rnn``) runs every layer and direction in one call: priced
    from its arguments alone (no GPU needed). A 2-layer bidirectional GRU, 5 steps x 4
    batch, input 8, hidden 16: layer 1 per direction 48 x (8 + 16), layer 2 48 x (32 + 16)
    MACs per position: 20 x 2 x (1152 + 2304) = 138240, as the GRU run op by op."""
    T, B, H = 5, 4, 16
    gru = torch.nn.GRU(8, H, num_layers=2, bidirectional=True)
    weights = [w.detach() for w in gru._flat_weights]
    x = torch.randn(T, B, 8)
    out = (torch.empty(T, B, 2 * H), torch.empty(4, B, H), torch.empty(0), torch.empty(0),
           torch.empty(0))
    args = (x, weights, 4, None, torch.zeros(4, B, H), None, 3, H, 0, 2, False, 0.0, False,
            True, [], None)
    counts, _, _, uncounted = op_cost(aten._cudnn_rnn.default, args, {}, out)
    assert uncounted == "" and counts["mac_fp32"] == 138240
    # gate arithmetic: 20 positions x 16 units x 4 layer-directions x (10 + 2 x 3 biases)
    assert counts["flop_fp32"] == 20 * 16 * 4 * 16
    twin = TorchDevice(toy_gpu_path, prefer_cuda=False)   # the op-by-op twin, on the CPU
    with twin.count("gru"):
        twin.compile(gru)(x)
    assert twin.ledger.total_ops("gru")["mac_fp32"] == 138240


_OPTIMIZERS = {
    "Adam": (torch.optim.Adam, {}),
    "Adam, weight decay, AMSGrad, maximize": (
        torch.optim.Adam, {"weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    "AdamW": (torch.optim.AdamW, {}),
    "SGD": (torch.optim.SGD, {"lr": 0.1}),
    "SGD, Nesterov momentum, weight decay": (
        torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    "Adagrad, weight decay": (torch.optim.Adagrad, {"weight_decay": 0.1}),
}


def _optimizer_ledger(toy_gpu_path, make, options, how):
    dev = TorchDevice(toy_gpu_path)
    torch.manual_seed(0)
    net = dev.compile(torch.nn.Linear(8, 4))
    x = torch.randn(16, 8, device=dev.torch_device)
    opt = make(net.parameters(), **options, **{how: True})
    # the first two steps make the state (SGD's momentum buffer); the third is counted
    for step in range(3):
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        if step < 2:
            opt.step()
    with dev.count("step"):
        opt.step()
    assert dev.ledger.uncounted() == {}
    return dev.ledger.total_ops("step")


@pytest.mark.parametrize("name", list(_OPTIMIZERS))
def test_fused_optimizer_counts_as_its_foreach_twin(toy_gpu_path, name):
    """``fused=True`` runs one kernel per step (``_fused_adam_`` ...); it counts the same
    arithmetic as the ``_foreach_`` path, whose ops are counted one by one. 36 parameters
    (8 x 4 weights + 4 biases); Adam's 7 ops per element give 252, plus the step counters'
    2 increments."""
    make, options = _OPTIMIZERS[name]
    fused = _optimizer_ledger(toy_gpu_path, make, options, "fused")
    foreach = _optimizer_ledger(toy_gpu_path, make, options, "foreach")
    assert fused["flop_fp32"] == foreach["flop_fp32"]
    if name == "Adam":
        assert fused["flop_fp32"] == 36 * 7 + 2


def test_vector_products(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    d = dev.torch_device
    a, v, w = torch.randn(6, 5, device=d), torch.randn(5, device=d), torch.randn(6, device=d)
    with dev.count("v"):
        torch.mv(a, v)          # 30
        torch.addmv(w, a, v)    # 30
        torch.dot(v, v)         # 5
        torch.addr(a, w, v)     # 6 x 5 = 30
    assert dev.ledger.ops("v")["mac_fp32"] == 95
    b1, b2 = torch.randn(2, 3, 4, device=d), torch.randn(2, 4, 5, device=d)
    with dev.count("inplace"):
        torch.zeros(3, 5, device=d).addmm_(b1[0], b2[0])     # 3 x 4 x 5 = 60
        torch.zeros(2, 3, 5, device=d).baddbmm_(b1, b2)      # 2 x 60 = 120
        torch.addbmm(torch.zeros(3, 5, device=d), b1, b2)    # summed over the batch: 120
        torch.zeros(6, device=d).addmv_(a, v)                # 30
    assert dev.ledger.ops("inplace")["mac_fp32"] == 330
    if d.type == "cpu":
        i8 = torch.ones(32, 16, dtype=torch.int8)
        with dev.count("i"):
            torch._int_mm(i8, i8.T.contiguous())     # 32 x 16 x 32 = 16384 int8 MACs
        assert dev.ledger.ops("i")["mac_int8"] == 16384
        # a mixture-of-experts grouped GEMM: 10 tokens routed to 3 experts (offsets 3, 7,
        # 10), each token's row times its expert's 8 x 8 matrix: 10 x 8 x 8 = 640 MACs
        with dev.count("moe"):
            torch._grouped_mm(torch.randn(10, 8), torch.randn(3, 8, 8),
                              torch.tensor([3, 7, 10], dtype=torch.int32))
        assert dev.ledger.ops("moe")["mac_fp32"] == 640


def test_grad_scaler_unscale_and_update(toy_gpu_path):
    """Mixed-precision training's GradScaler: unscaling checks and rescales each gradient
    element (2 ops: 36 parameters -> 72), the update touches the one-element scale (3)."""
    dev = TorchDevice(toy_gpu_path)
    d = dev.torch_device
    net = dev.compile(torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(d.type)
    with torch.autocast(d.type, dtype=torch.bfloat16):
        loss = net(torch.randn(16, 8, device=d)).float().pow(2).mean()
    scaler.scale(loss).backward()
    with dev.count("unscale"):
        scaler.unscale_(opt)
    with dev.count("update"):
        scaler.step(opt)
        scaler.update()
    assert dev.ledger.uncounted() == {}
    assert dev.ledger.total_ops("unscale")["flop_fp32"] == 72
    assert dev.ledger.total_ops("update")["flop_fp32"] >= 3


def test_searches_and_index_writes_are_counted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    d = dev.torch_device
    x = torch.randn(4, 10, device=d)
    edges = torch.linspace(-1, 1, 5, device=d)
    with dev.count("bucketize"):
        torch.bucketize(x, edges)     # 40 queries x ceil(log2(5 + 1)) = 3 compares: 120
    assert dev.ledger.ops("bucketize") == {"flop_fp32": 120, "kernel_launch": 1}
    probs = torch.softmax(x, -1)
    with dev.count("sample"):
        torch.multinomial(probs, 2)   # 40 weights scanned + 8 draws x ceil(log2 11) = 4: 72
    assert dev.ledger.ops("sample")["flop_fp32"] == 72
    with dev.count("misc"):
        torch.unique(torch.arange(8, device=d) % 3)  # 8 x 4 sort steps + 8 neighbour tests
        (x > 0).nonzero()
        torch.histc(x, 5)
        x.index_fill(1, torch.tensor([0, 2], device=d), -1.0)
        torch.rot90(x)
        F.embedding(torch.tensor([[1, 2]], device=d), torch.randn(10, 3, device=d), max_norm=1.0)
    assert dev.ledger.uncounted() == {}
    assert dev.ledger.ops("misc")["int_cmp"] >= 40


def test_cuda_kernels_are_priced_from_their_arguments():
    """Kernels only CUDA builds dispatch to, priced on CPU tensors of the same shapes (no
    GPU needed): cuDNN's batch norm as native_batch_norm (7 per element), the fused LSTM /
    GRU cell kernels (13 / 10 per hidden unit + 2 bias adds per gate; backward twice the
    gate arithmetic + the bias gradients), the masked softmax (6 per element) and cuDNN's
    grid sampler as grid_sampler_2d's bilinear rule."""
    x = torch.randn(2, 4, 3, 3)
    w, b = torch.ones(4), torch.zeros(4)
    out = (torch.empty_like(x), torch.empty(4), torch.empty(4), torch.empty(0))
    counts = op_cost(aten.cudnn_batch_norm.default, (x, w, b, w, w, True, 0.1, 1e-5), {}, out)[0]
    assert counts["flop_fp32"] == 7 * 72
    B, H = 3, 5
    gates, state = torch.randn(B, 4 * H), torch.randn(B, H)
    lstm = op_cost(aten._thnn_fused_lstm_cell.default,
                   (gates, gates, state, torch.zeros(4 * H), torch.zeros(4 * H)), {},
                   (state, state, gates))[0]
    assert lstm["flop_fp32"] == B * H * (13 + 8)
    back = op_cost(aten._thnn_fused_lstm_cell_backward_impl.default,
                   (state, state, state, state, gates, True), {}, (gates, gates, state))[0]
    assert back["flop_fp32"] == B * H * (26 + 8)
    g3 = torch.randn(B, 3 * H)
    gru = op_cost(aten._thnn_fused_gru_cell.default, (g3, g3, state, None, None), {},
                  (state, torch.randn(B, 5 * H)))[0]
    assert gru["flop_fp32"] == B * H * 10
    scores = torch.randn(2, 4, 6)
    masked = op_cost(aten._masked_softmax.default,
                     (scores, torch.zeros(2, 4, 6, dtype=torch.bool), -1, None), {}, scores)[0]
    assert masked["flop_fp32"] == 6 * 48
    img, grid = torch.randn(1, 2, 5, 5), torch.rand(1, 4, 4, 2) * 2 - 1
    sampled = torch.empty(1, 2, 4, 4)
    cudnn = op_cost(aten.cudnn_grid_sampler.default, (img, grid), {}, sampled)
    plain = op_cost(aten.grid_sampler_2d.default, (img, grid, 0, 0, True), {}, sampled)
    assert cudnn == plain and cudnn[0]["mac_fp32"] == 4 * 32
    # its backward (input, grid, grad_output), as grid_sampler_2d_backward with both
    # gradients: 32 output elements x (4 + 8) multiply-adds = 384
    grads = (torch.empty_like(img), torch.empty_like(grid))
    cudnn_back = op_cost(aten.cudnn_grid_sampler_backward.default, (img, grid, sampled), {},
                         grads)
    plain_back = op_cost(aten.grid_sampler_2d_backward.default,
                         (sampled, img, grid, 0, 0, True, [True, True]), {}, grads)
    assert cudnn_back == plain_back and cudnn_back[0]["mac_fp32"] == 384


def test_default_qat_observer_is_counted(toy_gpu_path):
    """torch.ao's default QAT fake-quantize module runs one fused observer-and-quantize
    kernel per call: 9 ops per element (a running min and max, then fake quantization)."""
    from torch.ao.quantization import FusedMovingAvgObsFakeQuantize
    dev = TorchDevice(toy_gpu_path)
    fq = dev.compile(FusedMovingAvgObsFakeQuantize())
    x = torch.randn(4, 10, device=dev.torch_device)
    with dev.count("qat"):
        fq(x)
    assert dev.ledger.uncounted() == {}
    # one kernel, _fused_moving_avg_obs_fq_helper: per element of the 4 x 10 input 2 compares
    # (running min, max) + 7 fake-quantization ops (divide, round, add the zero point, 2
    # clamp compares, subtract it, multiply) = 9; 9 x 40 = 360
    assert dev.ledger.total_ops("qat") == {"flop_fp32": 9 * 40, "kernel_launch": 1}
    # read: x 40 x 4 B = 160, the observer and fake-quant switches (int64, 8 B each), running
    # min, max, scale (fp32) and zero point (int32), 4 B each: 160 + 16 + 16 = 192; written:
    # the output 160 B, its bool mask 40 B and the four updated statistics 16 B = 216
    assert dev.ledger.total_bytes("qat") == {("offchip", "read"): 192,
                                             ("offchip", "write"): 216}


def test_fused_optimizer_groups_of_equal_shapes_keep_their_own_options(toy_gpu_path):
    """Two parameter groups of the same shapes, one with weight decay and one without: the
    fused kernel is called once per group with the same tensor shapes, and only a float
    tells them apart, so its cost is never taken from the memo (or replayed) by shape.
    Adam: 7 ops per element, + 1 with weight decay: 36 x 7 + 36 x 8 + 2 x 2 step counters."""
    def ledger(how):
        dev = TorchDevice(toy_gpu_path)
        torch.manual_seed(0)
        a, b = dev.compile(torch.nn.Linear(8, 4)), dev.compile(torch.nn.Linear(8, 4))
        opt = torch.optim.Adam([{"params": a.parameters()},
                                {"params": b.parameters(), "weight_decay": 0.1}], **{how: True})
        x = torch.randn(16, 8, device=dev.torch_device)
        for step in range(2):
            opt.zero_grad()
            (a(x) + b(x)).pow(2).sum().backward()
            if step == 0:
                opt.step()
        with dev.count("step"):
            opt.step()
        return dev.ledger.total_ops("step")["flop_fp32"]
    assert ledger("fused") == ledger("foreach") == 36 * 7 + 36 * 8 + 4


def test_functional_copy_and_fill_of_exported_graphs():
    """torch.export's functionalized graphs run the functional ``copy`` and ``fill`` (core
    ATen ops), which were uncounted: bytes only, the overwritten tensor not read."""
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    # copy reads src's 12 floats (48 B) and writes 48 B; fill reads nothing
    assert op_cost(aten.copy.default, (a, b), {}, a.clone()) == ({}, 48, 48, "")
    assert op_cost(aten.fill.Scalar, (a, 1.0), {}, a.clone()) == ({}, 0, 48, "")


def test_conv_tbc_counts_the_overlapping_taps(toy_gpu_path):
    """fairseq's time-batch-channel convolution (``torch.conv_tbc``) was uncounted."""
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    x = torch.randn(5, 2, 4, **on, requires_grad=True)      # time 5, batch 2, 4 channels
    w = torch.randn(3, 4, 6, **on, requires_grad=True)      # 3 taps, 4 -> 6 channels
    b = torch.zeros(6, **on, requires_grad=True)
    with dev.count("fwd"):
        y = torch.conv_tbc(x, w, b, 1)
    # padding 1, 5 output steps: tap k reads input step o - 1 + k, inside [0, 5) for 4, 5
    # and 4 output steps: 13 x batch 2 x 4 x 6 = 624 MACs
    assert dev.ledger.ops("fwd")["mac_fp32"] == 624
    with dev.count("bwd"):
        y.sum().backward()
    assert dev.ledger.uncounted() == {}


def test_mode_and_functional_normal_are_counted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    d = dev.torch_device
    x = torch.randint(0, 4, (6, 16), device=d).float()
    with dev.count("mode"):
        torch.mode(x, dim=1)
    # a sort of each 16-element row, 16 x ceil(log2 16) = 64 compares, and one more per
    # element for the run count: 6 x 16 x 5 = 480
    assert dev.ledger.ops("mode") == {"flop_fp32": 480, "kernel_launch": 1}
    mean = torch.zeros(6, 16, device=d)
    with dev.count("normal"):
        torch.normal(mean, 2.0)       # normal_'s one draw per element, out of place: 96
    assert dev.ledger.ops("normal") == {"flop_fp32": 96, "kernel_launch": 1}


def test_untagged_elementwise_overloads_random_likes_and_copying_views(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    x = torch.randn(3, 4, **on)
    with dev.count("elementwise"):
        torch.rsub(x, torch.ones(1, 4, **on))      # 1 - x with a tensor: 12 subtractions
        x.masked_fill(x > 0, torch.tensor(0.0, **on))   # 12 selects (and the compare, 12)
    assert dev.ledger.ops("elementwise")["flop_fp32"] == 36
    with dev.count("noise"):
        torch.randn_like(x)                         # a diffusion model's noise: 12 draws
        torch.rand_like(x)
    assert dev.ledger.ops("noise")["flop_fp32"] == 24
    ops = torch.ops.aten
    with dev.count("copies"):
        # the copying forms of views, as torch.export's functional graphs run them, and
        # take: bytes only (12 floats read and written each)
        ops.view_copy(x, [12])
        ops.permute_copy(x, [1, 0])
        ops.t_copy(x)
        torch.take(x, torch.arange(12, **on))
    assert dev.ledger.uncounted() == {}
    # no arithmetic, 5 kernels: the 3 copies, the arange that makes take's indices, take
    assert dev.ledger.ops("copies") == {"kernel_launch": 5}
    # read: 3 copies x 12 floats x 4 B = 144, take's 12 gathered floats (48 B) and its 12
    # int64 indices (96 B): 144 + 48 + 96 = 288; written: 3 x 48 = 144, the arange's 12
    # int64 (96 B), take's 12 floats (48 B): 144 + 96 + 48 = 288
    assert dev.ledger.bytes("copies") == {("offchip", "read"): 288,
                                          ("offchip", "write"): 288}
    with dev.count("runs"):
        torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 2, 3], **on))   # 6 compares
    assert dev.ledger.uncounted() == {}
    # one neighbour compare per element of the 6 int64 values, as integer ops (no fp32),
    # in one kernel
    # (they were int_add: unique_consecutive was missing from the comparisons)
    assert dev.ledger.ops("runs") == {"int_cmp": 6, "kernel_launch": 1}
    # read: the 6 values x 8 B = 48; written: the 3 distinct values 1, 2, 3 x 8 B = 24
    assert dev.ledger.bytes("runs") == {("offchip", "read"): 48, ("offchip", "write"): 24}


def test_masked_scatter_trains_and_index_fill_backward_is_counted(toy_gpu_path):
    """masked_scatter puts image features into a language model's token embeddings (LLaVA);
    its backward gathers the gradient back (bytes only), and index_fill's backward runs
    ``_unique`` on the indices: both were uncounted."""
    dev = TorchDevice(toy_gpu_path)
    on = dict(device=dev.torch_device)
    tokens = torch.randn(2, 6, 4, requires_grad=True, **on)
    image = torch.randn(3, 4, requires_grad=True, **on)
    where = torch.zeros(2, 6, 1, dtype=torch.bool, **on)
    where[0, 1:4] = True
    with dev.count("scatter"):
        tokens.masked_scatter(where, image).sum().backward()
        x = torch.randn(4, 5, requires_grad=True, **on)
        x.index_fill(1, torch.tensor([0, 2, 2], **on), -1.0).sum().backward()
    assert dev.ledger.uncounted() == {}


def test_running_max_and_min_of_integers_are_compares(toy_gpu_path):
    """cummax / cummin keep the running extreme: one compare per element, int_cmp on integers
    (they counted int_add). 5 int64 values: 5 compares each."""
    dev = TorchDevice(toy_gpu_path)
    x = torch.tensor([3, 1, 4, 1, 5], device=dev.torch_device)
    with dev.count("scan"):
        torch.cummax(x, 0)
        torch.cummin(x, 0)
    ops = dev.ledger.ops("scan")
    assert ops["int_cmp"] == 10 and "int_add" not in ops
