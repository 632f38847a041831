"""Sparse tensors (graph networks' adjacency matrices). Before: a CSR matrix product crashed
the count block (``RuntimeError: Sparse CSR tensors do not have strides``, from the bytes
rule), a COO product was counted as the dense product (N x N x D MACs, not nnz x D), and
``torch.sparse.mm``'s kernel, coalescing, ``index_reduce`` and ``segment_reduce`` were
uncounted."""
import pytest
import torch

from sim.torch_engine.costs import op_cost
from sim.torch_engine.engine import TorchDevice

DEVICE = TorchDevice("x86-avx2").torch_device
aten = torch.ops.aten
N, D = 10, 8


def _adjacency(layout):
    """A 10 x 10 adjacency with 25 distinct edges (coalesced)."""
    g = torch.Generator().manual_seed(0)
    edges = torch.randperm(N * N, generator=g)[:25]
    adj = torch.sparse_coo_tensor(torch.stack([edges // N, edges % N]),
                                  torch.rand(25, generator=g), (N, N)).coalesce()
    return (adj if layout == "coo" else adj.to_sparse_csr()).to(DEVICE)


def _count(fn):
    dev = TorchDevice("x86-avx2")
    with dev.count("g"):
        fn()
    return dev.ledger


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_times_dense_counts_the_stored_values(layout):
    adj = _adjacency(layout)
    x = torch.randn(N, D, device=DEVICE, requires_grad=True)
    led = _count(lambda: (adj @ x).sum().backward())
    assert led.uncounted() == {}
    # forward 25 stored values x 8 columns = 200 MACs; backward adj^T @ grad, 200 more (the
    # dense product would be 10 x 10 x 8 = 800 each)
    assert led.total_ops()["mac_fp32"] == 400


def test_gcn_layer_trains_with_nothing_uncounted():
    adj = _adjacency("coo")
    x = torch.randn(N, D, device=DEVICE)
    w = torch.randn(D, 4, device=DEVICE, requires_grad=True)
    led = _count(lambda: torch.sparse.mm(adj, x @ w).relu().sum().backward())
    assert led.uncounted() == {}
    # x W: 10 x 8 x 4 = 320; adj (x W): 25 x 4 = 100; backward adj^T grad 100 and the
    # weight gradient x^T (.) 320 (x needs no gradient)
    assert led.total_ops()["mac_fp32"] == 320 + 100 + 100 + 320


def test_dense_times_sparse_and_sparse_bytes():
    adj = _adjacency("csr")
    x = torch.randn(3, N, device=DEVICE)
    out = x @ adj.to_dense()
    counts, read, write, uncounted = op_cost(aten.mm.default, (x, adj), {}, out)
    # each of the 25 stored values meets the 3 rows of x: 75 MACs
    assert uncounted == "" and counts == {"mac_fp32": 75}
    # x 3 x 10 x 4 B = 120; the CSR matrix: 25 values x 4 B + 11 row pointers and 25 column
    # indices x 8 B = 388; the dense 3 x 10 output written, 120 B
    assert (read, write) == (120 + 388, 120)


def test_sparse_sparse_product_is_uncounted_not_dense():
    adj = _adjacency("coo")
    led = _count(lambda: torch.sparse.mm(adj, adj))
    assert led.uncounted() and "mac_fp32" not in led.total_ops()


def test_coalesce_and_graph_reductions():
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, N, (2, 30), generator=g)
    raw = torch.sparse_coo_tensor(idx, torch.rand(30, generator=g), (N, N))
    led = _count(lambda: raw.coalesce())
    # sorting 30 entries: 30 x ceil(log2 30) = 150 comparisons; merging: 30 adds
    assert led.total_ops()["int_cmp"] == 150 and led.total_ops()["flop_fp32"] == 30
    src = torch.randn(30, D, device=DEVICE, requires_grad=True)
    dst = torch.randint(0, N, (30,), generator=g).to(DEVICE)
    led = _count(lambda: torch.zeros(N, D, device=DEVICE)
                 .index_reduce(0, dst, src, "amax").sum().backward())
    assert led.uncounted() == {}
    data = torch.randn(9, D, device=DEVICE, requires_grad=True)
    led = _count(lambda: torch.segment_reduce(
        data, "sum", lengths=torch.tensor([3, 3, 3], device=DEVICE)).sum().backward())
    assert led.uncounted() == {}
    # forward 9 x 8 = 72 adds, backward 72 gradient copies, plus the sum's 24 and nothing
    # else with arithmetic
    assert led.total_ops()["flop_fp32"] == 72 + 72 + 24


class _GCN(torch.nn.Module):
    """Two graph convolutions over an adjacency buffer (COO or CSR)."""

    def __init__(self, n, edges, layout="coo"):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        idx = torch.randint(0, n, (2, edges), generator=g)
        adj = torch.sparse_coo_tensor(idx, torch.ones(edges), (n, n)).coalesce()
        self.register_buffer("adj", adj if layout == "coo" else adj.to_sparse_csr())
        self.lin1 = torch.nn.Linear(16, 8)
        self.lin2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.sparse.mm(self.adj, self.lin1(x)).relu() if self.adj.layout is \
            torch.sparse_coo else (self.adj @ self.lin1(x)).relu()
        return self.adj @ self.lin2(h)


def test_a_sparse_adjacency_weighs_what_it_stores():
    """A 200,000-node graph with 100,000 edges: its dense shape would be 1.6e11 B of float32,
    and the model was refused on every profile; stored it is values and indices."""
    model = _GCN(200_000, 100_000)
    nnz = model.adj._nnz()
    dev = TorchDevice("jetson-orin")
    dev.compile(model)
    # 4 B per value and 2 x 8 B of indices; lin1 and lin2: (16 x 8 + 8 + 8 x 3 + 3) x 4 B
    assert dev.footprint_bytes == nnz * 20 + 163 * 4
    x = torch.randn(200_000, 16, device=dev.torch_device)
    with dev.count("g"), torch.no_grad():
        model(x)
    led = dev.ledger
    assert led.models()["_GCN"]["buffer_bytes"] == nnz * 20
    # the adjacency is read by both products: in the resident footprint, as stored
    assert led.footprints()["g"]["read_only"] >= nnz * 20


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_estimate_of_a_graph_network_trains_and_plans_mcu_memory(layout):
    from deploy.estimate import estimate
    model = _GCN(500, 3000, layout)
    nnz = model.adj._nnz()
    est = estimate(model, (500, 16), profiles=["a100", "cortex-m7"], loss="auto",
                   strict=True)
    ops = est.ledgers["a100"].total_ops("infer")
    # 500 x 16 x 8 + nnz x 8 + 500 x 8 x 3 + nnz x 3 MACs
    assert ops["mac_fp32"] == 500 * 16 * 8 + nnz * 8 + 500 * 8 * 3 + nnz * 3
    assert "cortex-m7" in est.memory       # the MCU arena plan ran on the sparse model
    assert est.ledgers["a100"].uncounted() == {}


@pytest.mark.parametrize("optimizer", ["SGD", "SparseAdam", "Adagrad"])
def test_sparse_embedding_gradients_train_with_nothing_uncounted(optimizer):
    """nn.Embedding(sparse=True), the recommender's table: its gradient is sparse, and the
    optimizers that take one (SGD, SparseAdam, Adagrad) update only the rows looked up.
    Before: SGD's sparse-into-dense add_, the coalesced-flag query and sparse_mask were
    uncounted."""
    torch.manual_seed(0)
    dev = TorchDevice("x86-avx2")
    emb = dev.compile(torch.nn.Embedding(100, 8, sparse=True))
    opt = getattr(torch.optim, optimizer)(emb.parameters(), lr=0.1)
    ids = torch.randint(0, 100, (4, 5), device=dev.torch_device)
    with dev.count("t"):
        for _ in range(2):
            opt.zero_grad()
            emb(ids).sum().backward()
            opt.step()
    assert dev.ledger.uncounted() == {}
    if optimizer == "SGD":
        # per step: the sum's 20 x 8 = 160 adds and SGD's 160 (one per looked-up value of
        # the uncoalesced gradient): 2 x 320
        assert dev.ledger.total_ops()["flop_fp32"] == 640


def test_sparse_mask_reads_the_rows_it_keeps():
    dense = torch.randn(100, 8)
    rows = torch.tensor([[3, 7, 9]])
    mask = torch.sparse_coo_tensor(rows, torch.ones(3, 8), (100, 8)).coalesce()
    out = dense.sparse_mask(mask)
    counts, read, write, uncounted = op_cost(aten.sparse_mask.default, (dense, mask), {}, out)
    # the result: 3 rows x 8 values x 4 B + 3 row indices x 8 B = 120 B, written; read:
    # those values and the mask's 3 indices (24 B), not the 3,200-B table
    assert (uncounted, counts, read, write) == ("", {}, 120 + 24, 120)
