"""TorchDevice: op counts of known modules against their formulas, scopes, bytes, limits."""
import pytest
import torch

from hw_profiles.errors import HardwareLimitError, ModelError
from sim import device
from sim.torch_engine import TorchDevice
from sim.torch_engine.costs import op_cost

B, IN, H, OUT = 8, 20, 16, 5


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(IN, H), torch.nn.ReLU(), torch.nn.Linear(H, OUT))


def test_linear_forward_macs_and_bytes(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(torch.nn.Linear(IN, OUT))
    dev.run(lin, torch.zeros(B, IN))
    # addmm: B x IN x OUT multiply-accumulates = 8 x 20 x 5 = 800
    assert dev.ledger.total_ops() == {"mac_fp32": 800}
    # addmm reads bias (5) + input (8x20) + weight (20x5 via a view) floats, writes 8x5 floats
    read = 4 * (OUT + B * IN + IN * OUT)
    assert dev.ledger.total_bytes() == {("offchip", "read"): read, ("offchip", "write"): 4 * B * OUT}
    assert dev.ledger.samples() == {"infer": B}


def test_mlp_training_step_counts_match_formulas(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    x, y = torch.randn(B, IN), torch.randint(0, OUT, (B,))
    with dev.count("train", samples=B):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
    led = dev.ledger
    # forward: B*IN*H + B*H*OUT MACs; ReLU: B*H pointwise ops
    assert led.total_ops("train/0/forward") == {"mac_fp32": B * IN * H}
    assert led.total_ops("train/1/forward") == {"flop_fp32": B * H}
    assert led.total_ops("train/2/forward") == {"mac_fp32": B * H * OUT}
    # backward of the last layer: grad input (B*OUT*H) + grad weight (OUT*B*H) MACs,
    # bias grad = a sum over the batch, one op per input element (B*OUT)
    assert led.total_ops("train/2/backward")["mac_fp32"] == 2 * B * H * OUT
    assert led.total_ops("train/2/backward")["flop_fp32"] == B * OUT
    # first layer: the input needs no gradient, so only the weight gradient: B*IN*H
    assert led.total_ops("train/0/backward")["mac_fp32"] == B * IN * H
    assert led.uncounted() == {}


def test_flop_counter_agrees_with_torch(toy_gpu_path):
    """Our MAC count is exactly half of torch's own FlopCounterMode total."""
    from torch.utils.flop_counter import FlopCounterMode
    net = _mlp()
    x = torch.randn(B, IN)
    with FlopCounterMode(display=False) as fc:
        net(x).sum().backward()
    dev = TorchDevice(toy_gpu_path)
    net2 = dev.compile(_mlp())
    with dev.count("t"):
        net2(x).sum().backward()
    assert 2 * dev.ledger.total_ops()["mac_fp32"] == fc.get_total_flops()


def test_conv2d_macs(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    conv = dev.compile(torch.nn.Conv2d(3, 4, kernel_size=3, bias=False))
    dev.run(conv, torch.zeros(2, 3, 10, 10))
    # output 2 x 4 x 8 x 8, each a 3 x 3 x 3 dot product: 512 x 27 = 13824 MACs
    assert dev.ledger.total_ops() == {"mac_fp32": 2 * 4 * 8 * 8 * 27}


def test_float64_and_integer_ops_use_their_own_names(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        a = torch.ones(3, 4, dtype=torch.float64)
        (a @ a.T)                                  # 3 x 3 x 4 = 36 fp64 MACs
        torch.arange(6) + 1                        # 6 integer adds
        _ = torch.arange(6) == 2                   # 6 integer compares
    ops = dev.ledger.total_ops()
    assert ops["mac_fp64"] == 36
    assert ops["int_add"] == 6 and ops["int_cmp"] == 6


def test_views_are_free():
    x = torch.ones(4, 4)
    counts, read, write, unc = op_cost(torch.ops.aten.t.default, (x,), {}, x.t())
    assert (counts, read, write, unc) == ({}, 0, 0, "")


def test_scatter_and_index_adds_count_one_add_per_source_element(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    target, src = torch.zeros(5, 3), torch.ones(7, 3)
    idx = torch.tensor([0, 1, 1, 4, 2, 0, 3])
    with dev.count("x"):
        target.index_add(0, idx, src)                                   # 21 adds
        target.scatter_add(0, idx[:, None].expand(7, 3), src)           # 21 adds
    assert dev.ledger.ops("x")["flop_fp32"] == 42
    assert dev.ledger.uncounted() == {}


def test_unknown_op_reported_uncounted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        torch.linalg.cholesky(torch.eye(3))
    assert any("cholesky" in k for k in dev.ledger.uncounted())


def test_adam_step_counted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    opt = torch.optim.Adam(net.parameters(), foreach=True)
    net(torch.randn(B, IN)).sum().backward()
    with dev.count("opt"):
        opt.step()
    n_params = sum(p.numel() for p in net.parameters())
    # Adam touches every parameter several times (moments, bias correction, update)
    assert dev.ledger.total_ops()["flop_fp32"] >= 5 * n_params
    assert dev.ledger.uncounted() == {}


def test_counting_does_not_change_results(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    x = torch.randn(B, IN)
    plain = net(x)
    counted = dev.run(net, x)
    assert torch.equal(plain, counted)


def test_nested_count_rejected(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    with dev.count("a"), pytest.raises(ModelError, match="cannot nest"), dev.count("b"):
        pass


def test_model_too_large_for_memory(tmp_path, toy_gpu_text):
    small = toy_gpu_text.replace("capacity_bytes = { value = 1e9", "capacity_bytes = { value = 100")
    path = tmp_path / "tiny.toml"
    path.write_text(small)
    dev = TorchDevice(path)
    with pytest.raises(HardwareLimitError,
                       match=r"\[TorchDevice.compile\] Linear parameters \+ buffers = 4040 B "
                             r"exceeds toy-gpu memory.offchip.capacity_bytes = 100 B"):
        dev.compile(torch.nn.Linear(100, 10))   # 1010 floats = 4040 B > 100 B


def test_device_factory(toy_gpu_path):
    dev = device(toy_gpu_path)
    assert isinstance(dev, TorchDevice)
    assert dev.torch_device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_device_factory_serves_every_shipped_profile():
    """Every kind a shipped profile has gets its engine; none is left 'not implemented'."""
    import hw_profiles
    from sim.bitwise import BitwiseDevice
    from sim.neuromorphic import NeuromorphicDevice
    engine_of = {"gpu": TorchDevice, "cpu": TorchDevice, "bitwise": BitwiseDevice,
                 "neuromorphic": NeuromorphicDevice}
    for name in hw_profiles.available():
        prof = hw_profiles.load(name)
        assert type(device(name)) is engine_of[prof.kind], name


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (a GPU machine)")
def test_cuda_counts_equal_cpu_counts(toy_gpu_path):
    """On a GPU profile with CUDA present the engine runs on CUDA and counts the same ops."""
    ledgers = []
    for prefer_cuda in (True, False):
        dev = TorchDevice(toy_gpu_path, prefer_cuda=prefer_cuda)
        assert dev.torch_device.type == ("cuda" if prefer_cuda else "cpu")
        net = dev.compile(_mlp())
        x = dev.tensor(torch.randn(B, IN))
        with dev.count("train", samples=B):
            net(x).sum().backward()
        ledgers.append(dev.ledger.total_ops())
    assert ledgers[0]["mac_fp32"] == ledgers[1]["mac_fp32"] == B * IN * H + B * H * OUT + \
        B * IN * H + 2 * B * H * OUT


class _TwoBranches(torch.nn.Module):
    """``a(x) + b(x)`` on an input that needs no gradient: both branches end backward open."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = torch.nn.Linear(IN, H), torch.nn.Linear(IN, H)

    def forward(self, x):
        return self.a(x) + self.b(x)


def test_backward_ops_go_to_the_module_whose_forward_made_them(toy_gpu_path):
    """Each branch's gradients are its own, whatever the order autograd runs them in.

    torch's ModuleTracker left both branches "running" in backward (their input needs no
    gradient, so the hook that closes them never fires) and gave every op to one of them,
    picked by a string-hash-ordered set.
    """
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_TwoBranches())
    with dev.count("t"):
        net(torch.randn(B, IN)).sum().backward()
    for branch in ("a", "b"):
        # weight gradient B x IN x H MACs (no input gradient); bias gradient: a sum over
        # the batch, one add per element of the (B, H) output gradient
        assert dev.ledger.ops(f"t/{branch}/backward") == {"mac_fp32": B * IN * H,
                                                         "flop_fp32": B * H}
        assert dev.ledger.ops(f"t/{branch}/forward") == {"mac_fp32": B * IN * H}


class _Borrower(torch.nn.Module):
    """Calls an encoder it holds in a list (not registered), then its own head."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = [encoder]
        self.head = torch.nn.Linear(H, OUT)

    def forward(self, x):
        return self.head(self.encoder[0](x))


def test_a_module_called_by_one_that_does_not_register_it_is_named_by_its_class(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    torch.manual_seed(0)
    net = dev.compile(_Borrower(torch.nn.Sequential(torch.nn.Linear(IN, H), torch.nn.ReLU())))
    with dev.count("t"):
        net(torch.randn(B, IN)).sum().backward()
    assert dev.ledger.scopes() == ["t", "t/Sequential.0/backward", "t/Sequential.0/forward",
                                   "t/Sequential.1/backward", "t/Sequential.1/forward",
                                   "t/head/backward", "t/head/forward"]
    # the borrowed Linear: B x IN x H forward MACs; backward only its weight gradient (the
    # input needs none) and its bias gradient, B x H adds
    assert dev.ledger.ops("t/Sequential.0/forward") == {"mac_fp32": B * IN * H}
    assert dev.ledger.ops("t/Sequential.0/backward") == {"mac_fp32": B * IN * H,
                                                         "flop_fp32": B * H}
    # the head: input and weight gradients, 2 x B x H x OUT MACs, and B x OUT bias adds
    assert dev.ledger.ops("t/head/backward") == {"mac_fp32": 2 * B * H * OUT,
                                                 "flop_fp32": B * OUT}


def test_a_module_names_the_ops_of_its_own_code_between_its_children(toy_gpu_path):
    """Ops a module runs itself, before and after a child, are the module's, not the child's."""

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(IN, IN)

        def forward(self, x):
            return (self.inner(x * 2.0) * 3.0).sum()

    class Root(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.outer = Outer()

        def forward(self, x):
            return self.outer(x)

    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(Root())
    with dev.count("t"):
        net(torch.randn(B, IN, requires_grad=True)).backward()
    # outer's own code: x * 2 and y * 3 (B x IN each), the sum (B x IN adds)
    assert dev.ledger.ops("t/outer/forward") == {"flop_fp32": 3 * B * IN}
    assert dev.ledger.ops("t/outer.inner/forward") == {"mac_fp32": B * IN * IN}
    # its backward: the gradients of the two products, B x IN multiplies each
    assert dev.ledger.ops("t/outer/backward") == {"flop_fp32": 2 * B * IN}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (a GPU machine)")
def test_cuda_scopes_equal_cpu_scopes(toy_gpu_path):
    """CUDA runs backward on a device thread: each op still finds its module, scope by scope."""
    per_scope = []
    for prefer_cuda in (True, False):
        dev = TorchDevice(toy_gpu_path, prefer_cuda=prefer_cuda)
        net = dev.compile(_TwoBranches())
        with dev.count("t"):
            net(dev.tensor(torch.randn(B, IN))).sum().backward()
        per_scope.append({s: dev.ledger.ops(s) for s in dev.ledger.scopes()})
    assert per_scope[0] == per_scope[1]
    assert per_scope[0]["t/a/backward"] == {"mac_fp32": B * IN * H, "flop_fp32": B * H}
