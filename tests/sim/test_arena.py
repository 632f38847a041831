"""sim.arena: tensor lifetimes traced from a torch module and TFLM's greedy arena plan,
checked against arenas computed by hand."""
import torch
import torch.nn as nn

from sim.arena import Buffer, greedy_arena, peak_live_bytes, trace_lifetimes


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return x + torch.relu(self.fc(x))


def test_chain_arena_by_hand():
    # Linear(16,32) -> ReLU -> Linear(32,8) on (1,16), fp32. Ops: t, addmm, relu, t, addmm.
    # buffers: x 64 B alive ops 0..2 (read by the first addmm, op 2), h1 128 B 2..3,
    # h2 128 B 3..5, y 32 B 5..6 (the output, read after the last op).
    # Largest first: h1 at 0; h2 overlaps h1 in time -> 128; x overlaps h1 only -> 128
    # (h2 is born after x dies); y overlaps h2 only -> 0. Arena = 128 + 128 = 256 B,
    # the peak live bytes (h1 + h2 at the relu).
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    x = torch.zeros(1, 16)
    bufs = trace_lifetimes(net, (x,))
    assert bufs == [Buffer(64, 0, 2), Buffer(128, 2, 3), Buffer(128, 3, 5), Buffer(32, 5, 6)]
    arena, offsets = greedy_arena(bufs)
    assert (arena, offsets) == (256, [128, 0, 128, 0]) and peak_live_bytes(bufs) == 256


def test_residual_keeps_the_input_alive():
    # x + relu(fc(x)) on (1,16): every tensor 16 x 4 = 64 B. x lives until the add (op 4),
    # so at the relu x, fc(x) and relu(...) are all alive: 3 x 64 = 192 B, where the chain
    # without the skip would need 128 B. Greedy (ties in creation order): x 0, h 64,
    # r 128 (overlaps x and h), out 64 (overlaps x and r; h is dead). Arena 192 B.
    bufs = trace_lifetimes(Residual().eval(), (torch.zeros(1, 16),))
    assert [b.nbytes for b in bufs] == [64] * 4
    assert greedy_arena(bufs) == (192, [0, 64, 128, 64])


def test_int8_elements_are_one_byte_and_views_share_their_base():
    # Flatten is a view: (1,4,2,2) fp32 = 64 B -> int8 16 B, one buffer with its view;
    # Linear(16, 2) output 2 B; both alive at the addmm: arena 16 + 16 (aligned) = 32 B
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 2)).eval()
    bufs = trace_lifetimes(net, (torch.zeros(1, 4, 2, 2),), bytes_per_element=1)
    assert [b.nbytes for b in bufs] == [16, 2]
    assert greedy_arena(bufs)[0] == 32


def test_greedy_fills_a_gap_left_by_a_dead_buffer():
    # a: 100 B ops 0..1, b: 50 B 0..3, c: 96 B 2..3 (a is dead by then).
    # aligned: a 112, b 64, c 96. a at 0; c overlaps b only, b not placed yet -> 0;
    # b overlaps a (0..112) and c (0..96) -> 112. Arena 176 B = peak (a + b = 176 at op 0).
    bufs = [Buffer(100, 0, 1), Buffer(50, 0, 3), Buffer(96, 2, 3)]
    assert greedy_arena(bufs) == (176, [0, 112, 0])
    assert peak_live_bytes(bufs) == 176


def test_the_trace_lets_dead_activations_go():
    """The trace kept every tensor the forward made alive (so no address was reused): it
    held the whole forward's bytes at once (2.8 GB resident for a 40-layer 64-channel
    128 x 128 CNN at batch 8, where the forward itself holds two 33.5 MB activations;
    369 MB after). Now a storage that dies is let go, and a new one at its address starts
    a new buffer: the same lifetimes, the forward's own memory."""
    import weakref
    refs, alive_later = [], []
    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                        nn.Linear(8, 8)).eval()
    net[0].register_forward_hook(lambda m, i, o: refs.append(weakref.ref(o)))
    net[4].register_forward_pre_hook(lambda m, i: alive_later.append(refs[0]() is not None))
    buffers = trace_lifetimes(net, (torch.randn(2, 8),))
    assert alive_later == [False]     # the first Linear's output was freed by the last one
    # ops: t, addmm (2), relu (3), t, addmm (5), relu (6), t, addmm (8); the output read
    # after them (9). The input and 5 outputs (64 B each), in the order made, each alive
    # until the next layer's kernel reads it
    assert [(b.nbytes, b.first, b.last) for b in buffers] == \
        [(64, 0, 2), (64, 2, 3), (64, 3, 5), (64, 5, 6), (64, 6, 8), (64, 8, 9)]


def test_the_trace_and_the_count_run_the_same_decomposed_attention(toy_gpu_path):
    # both observe the encoder layer with the fused fast path off (one setting, shared):
    # the same aten ops in the same order, among them its 4 matrix products (in-projection,
    # out-projection, linear1, linear2), none of them the fused kernel
    from torch.utils._python_dispatch import TorchDispatchMode

    from sim.torch_engine import TorchDevice

    class Ops(TorchDispatchMode):   # outermost: sees every op the inner mode runs
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    dev = TorchDevice(toy_gpu_path)
    torch.manual_seed(0)
    layer = dev.compile(nn.TransformerEncoderLayer(64, 4, 256, batch_first=True).eval())
    x = torch.randn(1, 32, 64, device=dev.torch_device)
    assert torch.backends.mha.get_fastpath_enabled()
    with Ops() as traced:
        trace_lifetimes(layer, (x,))
    with Ops() as counted, torch.no_grad(), dev.count("infer"):
        layer(x)
    assert traced.names == counted.names
    assert traced.names.count("addmm") == 4
    assert not any("transformer_encoder_layer" in n or "native_multi_head" in n
                   for n in traced.names)
    assert torch.backends.mha.get_fastpath_enabled()   # restored after both


class _Layer:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values


class _Cache:
    """A transformers-style cache: its tensors in per-layer objects pytree does not open."""

    def __init__(self):
        self.layers = []


class _Cached(nn.Module):
    def __init__(self, as_object: bool):
        super().__init__()
        self.k, self.v = nn.Linear(16, 16), nn.Linear(16, 16)
        self.as_object = as_object

    def forward(self, x):
        k, v = self.k(x), self.v(x)
        out = torch.relu(k + v)
        if not self.as_object:
            return out, ((k, v),)
        cache = _Cache()
        cache.layers.append(_Layer(k, v))
        return out, cache


def test_tensors_returned_inside_a_cache_object_stay_alive_to_the_end():
    """A Llama's DynamicCache was taken for dead after its last op: a model whose returned
    KV cache did not fit was priced (the peak 983,040 B where the cache alone is 2 MB)."""
    x = torch.ones(64, 16)
    peaks = [peak_live_bytes(trace_lifetimes(_Cached(as_object), (x,)))
             for as_object in (False, True)]
    # k, v and the output (64 x 16 x 4 B = 4,096 B each) all alive at the end, plus the
    # input and the sum k + v alive while relu runs: the same peak either way
    assert peaks[0] == peaks[1] >= 3 * 4096


def test_a_max_pools_indices_are_not_an_activation():
    """Conv2d(3,16,3,p=1) -> MaxPool2d(2) -> Flatten -> Linear on a 3x64x64 int8 input: the
    input 12,288 B and the conv's output 65,536 B alive at the conv; that output and the
    pool's 16,384 B at the pool: 81,920 B, as the AvgPool twin. Before, the int64 indices
    max_pool2d_with_indices returns (16,384 x 8 = 131,072 B, read by nothing) made it
    212,992 B, over a cortex-m4's 196,608 B of SRAM."""
    torch.manual_seed(0)
    x = torch.zeros(1, 3, 64, 64)
    sizes = {}
    for name, pool in (("max", nn.MaxPool2d(2)), ("avg", nn.AvgPool2d(2))):
        net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), pool, nn.Flatten(),
                            nn.Linear(16 * 32 * 32, 4)).eval()
        bufs = trace_lifetimes(net, (x,), bytes_per_element=1)
        assert max(b.nbytes for b in bufs) == 65_536
        sizes[name] = greedy_arena(bufs)[0]
    assert sizes == {"max": 81_920, "avg": 81_920}


class _Unpool(nn.Module):
    """Indices a later op reads (max_unpool2d) are the graph's: they stay."""

    def forward(self, x):
        y, idx = nn.functional.max_pool2d(x, 2, return_indices=True)
        return nn.functional.max_unpool2d(y, idx, 2)


def test_indices_read_later_stay_in_the_arena():
    # (1,1,4,4): pooled 4 values; their int64 indices 4 x 8 = 32 B, read by the unpool
    bufs = trace_lifetimes(_Unpool().eval(), (torch.zeros(1, 1, 4, 4),), bytes_per_element=1)
    assert 32 in [b.nbytes for b in bufs]
