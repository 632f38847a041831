"""TorchDevice: op counts of known modules against their formulas, scopes, bytes, limits."""
import pytest
import torch

from sim import device
from sim.errors import HardwareLimitError
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
    assert dev.ledger.total_ops() == {"mac_fp32": 800, "kernel_launch": 1}  # one kernel: addmm
    # addmm reads bias (5) + input (8x20) + weight (20x5 via a view) floats, writes 8x5 floats
    read = 4 * (OUT + B * IN + IN * OUT)
    assert dev.ledger.total_bytes() == {("offchip", "read"): read,
                                        ("offchip", "write"): 4 * B * OUT}
    assert dev.ledger.samples() == {"infer": B}


def test_mlp_training_step_counts_match_formulas(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    x, y = dev.tensor(torch.randn(B, IN)), torch.randint(0, OUT, (B,)).to(dev.torch_device)
    with dev.count("train", samples=B):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
    led = dev.ledger
    # forward: B*IN*H + B*H*OUT MACs; ReLU: B*H pointwise ops
    # (one kernel each: addmm, relu, addmm)
    assert led.total_ops("train/0/forward") == {"mac_fp32": B * IN * H, "kernel_launch": 1}
    assert led.total_ops("train/1/forward") == {"flop_fp32": B * H, "kernel_launch": 1}
    assert led.total_ops("train/2/forward") == {"mac_fp32": B * H * OUT, "kernel_launch": 1}
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
        net2(dev.tensor(x)).sum().backward()
    assert 2 * dev.ledger.total_ops()["mac_fp32"] == fc.get_total_flops()


def test_conv2d_macs(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    conv = dev.compile(torch.nn.Conv2d(3, 4, kernel_size=3, bias=False))
    dev.run(conv, torch.zeros(2, 3, 10, 10))
    # output 2 x 4 x 8 x 8, each a 3 x 3 x 3 dot product: 512 x 27 = 13824 MACs
    assert dev.ledger.total_ops() == {"mac_fp32": 2 * 4 * 8 * 8 * 27, "kernel_launch": 1}


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("groups", [1, 4, 16])
def test_grouped_conv_training_step_is_three_forwards(toy_gpu_path, groups, transposed):
    """A convolution's backward is two convolutions of the forward's size (input gradient,
    weight gradient), so a step costs 3x the forward's MACs, for any number of groups.
    torch's own formula counts the weight gradient as if groups = 1 (16x too much for a
    16-channel depthwise conv); the engine divides it by groups."""
    dev = TorchDevice(toy_gpu_path)
    make = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    conv = dev.compile(make(16, 32, kernel_size=3, groups=groups, bias=False))
    x = dev.tensor(torch.randn(2, 16, 10, 10)).requires_grad_(True)
    with dev.count("fwd"):
        conv(x)
    with dev.count("step"):
        conv(x).sum().backward()
    # forward: conv, 2 x 32 x 8 x 8 outputs x (16 / groups) input channels x 9 taps;
    # transposed, each of 2 x 16 x 10 x 10 inputs x (32 / groups) output channels x 9 taps
    fwd = (2 * 16 * 10 * 10 * (32 // groups) * 9 if transposed
           else 2 * 32 * 8 * 8 * (16 // groups) * 9)
    assert dev.ledger.total_ops("fwd")["mac_fp32"] == fwd
    assert dev.ledger.total_ops("step")["mac_fp32"] == 3 * fwd


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


def test_scatter_reduce_and_running_max_count_one_op_per_element(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    src = torch.arange(21.0).reshape(7, 3)
    idx = torch.tensor([0, 1, 1, 4, 2, 0, 3])
    with dev.count("x"):
        torch.zeros(5, 3).scatter_reduce_(0, idx[:, None].expand(7, 3), src, "amin")  # 21
        torch.cummax(src, 1)                                                      # 21
        torch.cummin(src, 0)                                                      # 21
    assert dev.ledger.ops("x")["flop_fp32"] == 63
    assert dev.ledger.uncounted() == {}


def test_unknown_op_reported_uncounted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        torch.linalg.eigvalsh(torch.eye(3))   # iterative: no operation count (LAWN 41)
    assert any("eigh" in k for k in dev.ledger.uncounted())


def test_adam_step_counted(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    opt = torch.optim.Adam(net.parameters(), foreach=True)
    net(dev.tensor(torch.randn(B, IN))).sum().backward()
    with dev.count("opt"):
        opt.step()
    n_params = sum(p.numel() for p in net.parameters())
    assert n_params == IN * H + H + H * OUT + OUT == 421     # 320 + 16 + 80 + 5
    # the foreach Adam step, one op per output element of each _foreach_ kernel: the 4 step
    # counters + 1 (4), then per parameter element 7: lerp of the first moment, multiply
    # and addcmul of the second, sqrt, divide by the bias correction, add eps, the addcdiv
    # update; 7 x 421 + 4 = 2951. Launches: 2 zeros_like per parameter for the moments
    # (4 x 2 = 8, bytes only) + the 8 _foreach_ kernels = 16
    assert dev.ledger.total_ops() == {"flop_fp32": 7 * n_params + 4, "kernel_launch": 16}
    assert dev.ledger.uncounted() == {}


def test_counting_does_not_change_results(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    x = dev.tensor(torch.randn(B, IN))
    plain = net(x)
    counted = dev.run(net, x)
    assert torch.equal(plain, counted)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"),
                    reason="reads the resident set from /proc")
def test_counting_frees_a_dead_tensors_memory_inside_the_block(toy_gpu_path):
    """The footprint tracker watches storages without keeping their memory: a tensor that
    dies inside a count block is freed there, not when the block ends. (torch's
    StorageWeakRef kept it allocated: a 1000-step count block of chunk attention held
    14 GB.) Fifty 4 MB results made and dropped in one block: kept, the process grows by
    50 x 4 = 200 MB; freed, each result reuses the last one's memory. CPU by construction."""
    dev = TorchDevice(toy_gpu_path, prefer_cuda=False)
    x = torch.ones(1_000_000)                        # 4 MB of float32
    with dev.count("x"):
        (x * 2).sum()                                # warm-up: the first result's memory
        before = _rss_mb()
        for _ in range(50):
            y = x * 2                                # a new 4 MB storage, seen by the tracker
            del y
        grown = _rss_mb() - before
    assert grown < 100, f"{grown:.0f} MB kept by the counting block"


def test_nested_count_records_under_outer_inner(toy_gpu_path):
    """Device.count's rule on the torch engine: an inner block records under outer/inner."""
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(torch.nn.Linear(4, 3))
    x = dev.tensor(torch.zeros(2, 4))
    with torch.no_grad(), dev.count("train", samples=5):
        with dev.count("a", samples=2):
            lin(x)
        lin(x[:1])                       # after the inner block: back at train
    led = dev.ledger
    # Linear(4, 3) on a batch of 2: 2 x 4 x 3 = 24 MACs in one addmm kernel; the Linear is
    # the outermost module, so its ops sit at the block's scope itself (no module path)
    assert led.ops("train/a") == {"mac_fp32": 24, "kernel_launch": 1}
    assert led.ops("train") == {"mac_fp32": 12, "kernel_launch": 1}     # 1 x 4 x 3
    assert led.samples() == {"train": 5, "train/a": 2}
    assert list(led.footprints()) == ["train"]    # one footprint: the outermost block's


def test_nested_count_below_open_ledger_scope_and_module_paths(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    net = dev.compile(_mlp())
    with dev.ledger.scope("run"), dev.count("train"), dev.count("step", samples=B):
        net(dev.tensor(torch.randn(B, IN))).sum().backward()
    led = dev.ledger
    # forward of the first Linear: B x IN x H = 8 x 20 x 16 = 2560 MACs
    assert led.ops("run/train/step/0/forward")["mac_fp32"] == B * IN * H
    # backward of the second Linear: grad input B x OUT x H + grad weight OUT x B x H
    # = 2 x 8 x 5 x 16 = 1280 MACs
    assert led.ops("run/train/step/2/backward")["mac_fp32"] == 2 * B * OUT * H
    assert led.samples() == {"run/train/step": B}
    # the root's own ops (sum, the ones-like gradient of the loss) sit at the block's scope
    assert led.scopes() == ["run/train/step"] + [f"run/train/step/{i}/{d}" for i in range(3)
                                                 for d in ("backward", "forward")]


def test_nested_count_error_pops_the_inner_name(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    lin = dev.compile(torch.nn.Linear(4, 3))
    x = dev.tensor(torch.zeros(2, 4))   # made outside the blocks: its fill kernel is not counted
    with torch.no_grad(), dev.count("train"):
        with pytest.raises(RuntimeError, match="boom"), dev.count("a", samples=2):
            raise RuntimeError("boom")
        lin(x)
    # the failed block adds no samples, and the ops after it land at train, not train/a
    assert dev.ledger.ops("train") == {"mac_fp32": 24, "kernel_launch": 1}
    assert dev.ledger.samples() == {}
    with torch.no_grad(), dev.count("again"):     # the mode was removed: a fresh block
        lin(x[:1])
    assert dev.ledger.ops("again") == {"mac_fp32": 12, "kernel_launch": 1}


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


# --- bytes at the op level (issue 13 item 1) -------------------------------------------------

def _bytes(dev, scope="x"):
    b = getattr(dev, "ledger", dev).total_bytes(scope)
    return b.get(("offchip", "read"), 0), b.get(("offchip", "write"), 0)


def test_gathers_read_the_selected_rows_plus_indices(toy_gpu_path):
    """A mini-batch x[idx] reads its rows, not the whole training tensor (digits' 1,347 x 64
    was charged 345,088 B per batch before)."""
    x = torch.zeros(1347, 64)
    emb = torch.zeros(100, 64)
    idx = torch.arange(32) * 3                       # 32 int64 indices
    for fn in (lambda: x[idx], lambda: x.index_select(0, idx),
               lambda: torch.nn.functional.embedding(idx, emb)):
        dev = TorchDevice(toy_gpu_path)
        with dev.count("x"):
            fn()
        # 32 rows x 64 features x 4 B + 32 indices x 8 B = 8,448 B read; 8,192 B written
        assert _bytes(dev) == (8_448, 8_192)
        # no arithmetic: one gather kernel
        assert dev.ledger.total_ops() == {"kernel_launch": 1} and dev.ledger.uncounted() == {}
    dev = TorchDevice(toy_gpu_path)
    cols = torch.zeros(32, 1, dtype=torch.int64)
    with dev.count("x"):
        x[:32].gather(1, cols)                       # one element per row
    # 32 elements x 4 B + 32 indices x 8 B = 384 B read; 32 x 4 B = 128 B written
    assert _bytes(dev) == (384, 128)


def test_embedding_bag_reads_one_row_per_index(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    table, idx, offsets = torch.zeros(1000, 16), torch.arange(12), torch.tensor([0, 4, 9])
    with dev.count("x"):
        torch.nn.functional.embedding_bag(idx, table, offsets, mode="sum")
    read, write = _bytes(dev)
    # 12 rows x 16 x 4 B + 12 indices x 8 B + 3 offsets x 8 B = 888 B, not the 64,000 B table
    assert read == 888
    # one add per gathered element: 12 x 16 = 192
    assert dev.ledger.total_ops() == {"flop_fp32": 192, "kernel_launch": 1}
    # output 3 x 16 x 4 B + bag_size 3 x 8 B + max_indices 3 x 8 B (offset2bag empty) = 240 B
    assert write == 240


def test_slices_are_free_and_their_copy_reads_only_the_slice(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.zeros(100, 64)
    with dev.count("x"):
        v = x[:, :8].narrow(0, 10, 50)               # views: nothing moves
        assert _bytes(dev) == (0, 0)
        v.contiguous()
    # 50 rows x 8 columns x 4 B = 1,600 B read and written
    assert _bytes(dev) == (1_600, 1_600)


def test_broadcast_input_is_read_once(toy_gpu_path):
    dev, col = TorchDevice(toy_gpu_path), torch.ones(7, 1)
    with dev.count("x"):
        col.expand(7, 3) * 2.0
    # the expanded view addresses 7 distinct floats (28 B); the product writes 7 x 3 x 4 B
    assert _bytes(dev) == (28, 84)
    assert dev.ledger.total_ops() == {"flop_fp32": 21, "kernel_launch": 1}


def test_in_place_and_foreach_ops_count_their_writes(toy_gpu_path):
    a, b = torch.zeros(3), torch.zeros(5)
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        torch._foreach_add_([a, b], 1.0)
    # reads and writes the 3 + 5 floats: 32 B each way, 8 adds
    assert _bytes(dev) == (32, 32)
    assert dev.ledger.total_ops() == {"flop_fp32": 8, "kernel_launch": 1}   # one fused kernel
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        a.add_(1.0)
        b.add_(1.0)
    assert _bytes(dev) == (32, 32)                   # the add_ path: the same 32 B each way
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        a.copy_(torch.ones(3))                       # overwrites a without reading it
        torch.zeros_like(b)                          # b gives only its shape
    # copy_: reads the 3-float source (12 B), writes a (12 B); ones: writes 12 B;
    # zeros_like: writes 5 floats (20 B)
    assert _bytes(dev) == (12, 12 + 12 + 20)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
def test_foreach_optimizer_counts_as_the_single_tensor_one(toy_gpu_path, name):
    """Adam/AdamW/SGD's _foreach_ path and per-tensor path record the same ops and writes."""
    ledgers = []
    for foreach in (True, False):
        dev = TorchDevice(toy_gpu_path)
        net = dev.compile(_mlp())
        kw = {"momentum": 0.9} if name == "SGD" else {}
        opt = getattr(torch.optim, name)(net.parameters(), lr=0.1, foreach=foreach, **kw)
        for _ in range(2):
            net(dev.tensor(torch.randn(B, IN))).sum().backward()
            with dev.count("opt"):
                opt.step()
        ledgers.append(dev)
    fe, single = ledgers
    fe_ops, single_ops = fe.ledger.total_ops(), single.ledger.total_ops()
    # the same arithmetic; the foreach path launches fewer kernels (one per op over the list)
    assert fe_ops.pop("kernel_launch") < single_ops.pop("kernel_launch")
    assert fe_ops == single_ops
    n = sum(p.numel() for p in _mlp().parameters())  # 421 parameters
    (fr, fw), (sr, sw) = _bytes(fe, "opt"), _bytes(single, "opt")
    assert fw == sw
    if name == "SGD":
        assert fr == sr
        # step 1 clones the gradient into the momentum buffer and updates p (2 writes of the
        # 421 floats); step 2 scales and adds into the buffer and updates p (3 writes):
        # 5 x 421 x 4 B = 8,420 B
        assert fw == 5 * n * 4
    else:
        # foreach adds 1.0 to the step counters from a 0-dim float32 tensor: 4 B per step
        assert fr == sr + 2 * 4


def test_index_put_writes_only_the_indexed_rows(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x, idx, v = torch.zeros(10, 4), torch.tensor([1, 5, 7]), torch.ones(3, 4)
    with dev.count("x"):
        x[idx] = v
    # reads values 3 x 4 x 4 B + 3 indices x 8 B = 72 B; writes 3 rows x 4 x 4 B = 48 B
    assert _bytes(dev) == (72, 48)
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        x.index_put_((idx,), v, accumulate=True)
    # accumulating also reads the 48 B it adds to
    assert _bytes(dev) == (72 + 48, 48)


def test_max_pool_and_its_backward(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    with dev.count("x"):
        y = torch.nn.functional.max_pool2d(x, 2)
    # output 2 x 3 x 4 x 4 = 96 elements, each compares a 2 x 2 window: 384 ops;
    # reads 384 floats (1,536 B), writes 96 floats + 96 int64 indices = 384 + 768 B
    assert dev.ledger.total_ops() == {"flop_fp32": 384, "kernel_launch": 1}
    assert _bytes(dev) == (1_536, 1_152)
    g = torch.ones_like(y)
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        y.backward(g)
    # one add per output gradient (96); reads the gradient (384 B) and the indices (768 B),
    # not the forward input; writes the 384-float input gradient (1,536 B)
    assert dev.ledger.total_ops() == {"flop_fp32": 96, "kernel_launch": 1}
    assert _bytes(dev) == (1_152, 1_536)
    assert dev.ledger.uncounted() == {}


def test_per_sample_training_cost_does_not_depend_on_training_set_size(toy_gpu_path):
    """The MLP's ledger for 6,000 rows is 10x that for 600 (batch 40 divides both) but for
    Adam's one-time state, so its energy per training sample is the same: mini-batch gathers
    read the batch only (before, each batch read the whole training tensor)."""
    from models.baselines.mlp.card import MLPConfig
    from models.baselines.mlp.model import MLPClassifier
    rng = torch.Generator().manual_seed(0)
    runs = []
    for n in (600, 6000):
        x = torch.rand(n, 64, generator=rng).numpy()
        y = torch.randint(0, 10, (n,), generator=rng).numpy()
        dev = TorchDevice(toy_gpu_path)
        MLPClassifier(64, 10, MLPConfig(epochs=1, batch_size=40), dev).fit(x, y)
        runs.append(dev.ledger)
    small, large = runs
    ops6, ops60 = small.total_ops("train"), large.total_ops("train")
    # Adam's first step launches its one-time moment fills once per run: 2 moments x 4
    # parameter tensors = 8 kernels, which 10 runs of 600 launch 10 times
    assert ops60.pop("kernel_launch") == 10 * ops6.pop("kernel_launch") - 9 * 8
    assert {k: 10 * v for k, v in ops6.items()} == ops60
    (r6, w6), (r60, w60) = _bytes(small, "train"), _bytes(large, "train")
    assert r60 == 10 * r6
    # Adam's first step zero-fills its two moments once per run: 2 x 2,410 parameters
    # (64 x 32 + 32 + 32 x 10 + 10) x 4 B = 19,280 B, which 10 runs of 600 write 10 times
    assert w60 == 10 * w6 - 9 * 19_280
    reports = [led.price(toy_gpu_path) for led in runs]

    def per_sample(report, n, launches: bool) -> float:
        return sum(c.energy_j for c in report.charges if c.scope.startswith("train")
                   and (c.category == "overhead") == launches) / n
    # the launch overhead (1 us x 1 W idle per kernel on the toy) is 10x less Adam's 8
    # one-time launches in 9 of the 10 small runs: 9 x 8 x 1 uJ
    assert per_sample(reports[1], 6000, True) * 6000 == pytest.approx(
        10 * per_sample(reports[0], 600, True) * 600 - 9 * 8 * 1e-6, rel=1e-9)
    # the rest, per sample, differs only by Adam's one-time write spread over 600 or 6,000
    # samples (19,280 B x 20 pJ/B / 600 = 0.64 nJ, 0.3% of the ~0.2 uJ per sample)
    assert per_sample(reports[1], 6000, False) == pytest.approx(
        per_sample(reports[0], 600, False), rel=5e-3)


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
        net(dev.tensor(torch.randn(B, IN))).sum().backward()
    for branch in ("a", "b"):
        # weight gradient B x IN x H MACs (no input gradient); bias gradient: a sum over
        # the batch, one add per element of the (B, H) output gradient
        # kernels: the weight-gradient mm and the bias-gradient sum; forward one addmm
        assert dev.ledger.ops(f"t/{branch}/backward") == {"mac_fp32": B * IN * H,
                                                         "flop_fp32": B * H,
                                                         "kernel_launch": 2}
        assert dev.ledger.ops(f"t/{branch}/forward") == {"mac_fp32": B * IN * H,
                                                        "kernel_launch": 1}


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
        net(dev.tensor(torch.randn(B, IN))).sum().backward()
    assert dev.ledger.scopes() == ["t", "t/Sequential.0/backward", "t/Sequential.0/forward",
                                   "t/Sequential.1/backward", "t/Sequential.1/forward",
                                   "t/head/backward", "t/head/forward"]
    # the borrowed Linear: B x IN x H forward MACs; backward only its weight gradient (the
    # input needs none) and its bias gradient, B x H adds
    assert dev.ledger.ops("t/Sequential.0/forward") == {"mac_fp32": B * IN * H,
                                                        "kernel_launch": 1}     # addmm
    assert dev.ledger.ops("t/Sequential.0/backward") == {"mac_fp32": B * IN * H,
                                                         "flop_fp32": B * H,
                                                         "kernel_launch": 2}    # mm, sum
    # the head: input and weight gradients, 2 x B x H x OUT MACs, and B x OUT bias adds
    assert dev.ledger.ops("t/head/backward") == {"mac_fp32": 2 * B * H * OUT,
                                                 "flop_fp32": B * OUT,
                                                 "kernel_launch": 3}    # two mm, one sum


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
        net(torch.randn(B, IN, device=dev.torch_device, requires_grad=True)).backward()
    # outer's own code: x * 2 and y * 3 (B x IN each), the sum (B x IN adds)
    assert dev.ledger.ops("t/outer/forward") == {"flop_fp32": 3 * B * IN, "kernel_launch": 3}
    assert dev.ledger.ops("t/outer.inner/forward") == {"mac_fp32": B * IN * IN,
                                                      "kernel_launch": 1}
    # its backward: the gradients of the two products, B x IN multiplies each
    assert dev.ledger.ops("t/outer/backward") == {"flop_fp32": 2 * B * IN, "kernel_launch": 2}


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
    assert per_scope[0]["t/a/backward"] == {"mac_fp32": B * IN * H, "flop_fp32": B * H,
                                            "kernel_launch": 2}


def test_affine_grid_is_a_bmm_of_the_base_grid(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    theta = torch.randn(2, 2, 3)
    with dev.count("x"):
        torch.nn.functional.affine_grid(theta, [2, 1, 5, 7], align_corners=False)
    # 2 x 5 x 7 = 70 pixels, each [x, y, 1] times the 3 x 2 theta^T: 70 x 6 = 420 MACs
    assert dev.ledger.total_ops() == {"mac_fp32": 420, "kernel_launch": 1}
    # reads theta (12 floats) + the base grid (70 x 3 = 210); writes the base grid (210)
    # + the grid (70 x 2 = 140): (12 + 210) x 4 = 888 B read, (210 + 140) x 4 = 1,400 B
    assert _bytes(dev) == (888, 1_400)
    assert dev.ledger.uncounted() == {}


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_grid_sample_counts_per_pixel_and_per_element(toy_gpu_path, align):
    dev = TorchDevice(toy_gpu_path)
    x, grid = torch.randn(2, 3, 6, 6), torch.rand(2, 4, 5, 2) * 2 - 1
    with dev.count("x"):
        torch.nn.functional.grid_sample(x, grid, align_corners=align)
    # 2 x 4 x 5 = 40 pixels, 3 channels: 120 output elements.
    # per pixel: 2 coordinates x 4 ops (3 with align_corners) + 2 floors + 4 weights x 3
    # = 22 (20); per element 4 multiply-adds = 480 MACs; indices 2 adds, 16 comparisons
    per_pixel = 20 if align else 22
    assert dev.ledger.total_ops() == {"flop_fp32": 40 * per_pixel, "mac_fp32": 480,
                                      "int_add": 80, "int_cmp": 640, "kernel_launch": 1}
    # reads 4 neighbours per output element (480 floats) + the grid (80), not the 216-float
    # input: (480 + 80) x 4 = 2,240 B; writes the 120-float output: 480 B
    assert _bytes(dev) == (2_240, 480)
    assert dev.ledger.uncounted() == {}


def test_nearest_border_grid_sample_and_uncounted_modes(toy_gpu_path):
    dev = TorchDevice(toy_gpu_path)
    x, grid = torch.randn(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1
    with dev.count("x"):
        torch.nn.functional.grid_sample(x, grid, mode="nearest", padding_mode="border",
                                        align_corners=False)
    # 9 pixels x (2 coordinates x (4 + 2 clip) + 2 roundings) = 9 x 14 = 126; one bounds
    # check (4 comparisons) per pixel = 36; no arithmetic per element
    assert dev.ledger.total_ops() == {"flop_fp32": 126, "int_cmp": 36, "kernel_launch": 1}
    # reads 1 neighbour per output element (18 floats) + the grid (18): 144 B; writes 72 B
    assert _bytes(dev) == (144, 72)
    assert dev.ledger.uncounted() == {}
    dev = TorchDevice(toy_gpu_path)
    with dev.count("x"):
        torch.nn.functional.grid_sample(x, grid, mode="bicubic", align_corners=False)
        torch.nn.functional.grid_sample(x, grid, padding_mode="reflection",
                                        align_corners=False)
    assert dev.ledger.uncounted() == {"grid_sampler_2d": 2}        # executed, not priced


def test_in_place_masked_fill_counts_as_its_pointwise_form(toy_gpu_path):
    x, mask = torch.randn(4, 5), torch.rand(4, 5) < 0.5
    flops = []
    for inplace in (False, True):
        y = x.clone()
        dev = TorchDevice(toy_gpu_path)
        with dev.count("x"):
            y.masked_fill_(mask, 0.0) if inplace else y.masked_fill(mask, 0.0)
        assert dev.ledger.uncounted() == {}
        flops.append(dev.ledger.ops("x")["flop_fp32"])
        # reads y (20 floats, 80 B) and the mask (20 B); writes 20 floats (80 B): y in
        # place, a new tensor out of place
        assert _bytes(dev) == (100, 80)
    assert flops == [20, 20]                   # one select per element, both forms
