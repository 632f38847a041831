"""Dense factorisations and solves (Gaussian processes' Cholesky and triangular solves,
normalising flows' log-determinants, whitening's inverses), uncounted before: counted by the
operation counts of LAPACK Working Note 41 for the routine ATen calls (POTRF, TRSM, GETRF,
GETRS, POTRS, GEQRF, ORGQR). Per matrix: LAWN 41's additions as MACs (each paired with a
multiplication) and the multiplications left over as other ops."""
import pytest
import torch

from sim.torch_engine.engine import TorchDevice

DEVICE = TorchDevice("x86-avx2").torch_device
F64 = dict(dtype=torch.float64, device=DEVICE)


def _ops(fn) -> tuple[int, int]:
    dev = TorchDevice("x86-avx2")
    with dev.count("c"):
        fn()
    assert dev.ledger.uncounted() == {}
    ops = dev.ledger.total_ops()
    return ops.get("mac_fp64", 0), ops.get("flop_fp64", 0)


def _spd(n, batch=()):
    a = torch.randn(*batch, n, n, **F64)
    return a @ a.transpose(-1, -2) + n * torch.eye(n, **F64)


def test_cholesky_counts_potrf_and_its_square_roots():
    # POTRF(n): n^3/6 + n^2/2 + n/3 multiplications, n^3/6 - n/6 additions; n = 4: 20 and
    # 10; MACs 10, other 20 - 10 + 4 roots = 14; a batch of 3: 30 and 42
    a = _spd(4, (3,))
    assert _ops(lambda: torch.linalg.cholesky(a)) == (30, 42)


@pytest.mark.parametrize("unit, want", [(False, (12, 8)), (True, (12, 0))])
def test_triangular_solve_counts_trsm(unit, want):
    # TRSM, 4 x 4 against 2 columns: 2 x 4 x 5 / 2 = 20 multiplications (12 with a unit
    # diagonal: its 8 divisions skipped), 2 x 4 x 3 / 2 = 12 additions
    low = torch.linalg.cholesky(_spd(4))
    b = torch.randn(4, 2, **F64)
    assert _ops(lambda: torch.linalg.solve_triangular(low, b, upper=False,
                                                      unitriangular=unit)) == want


def test_inverse_and_determinants_count_lu():
    a = torch.randn(4, 4, **F64)
    # GETRF(4): n^3/3 + 2n/3 = 24 multiplications, n(n - 1)(2n - 1)/6 = 14 additions;
    # inv = solve(A, I) adds GETRS(4, 4 columns): 64 and 48 -> MACs 62, other 26
    assert _ops(lambda: torch.linalg.inv(a)) == (62, 26)
    # det: GETRF and the diagonal's product (4): MACs 14, other 10 + 4
    assert _ops(lambda: torch.linalg.det(a)) == (14, 14)
    # slogdet: |.|, log and sum per diagonal element (12)
    assert _ops(lambda: torch.linalg.slogdet(a)) == (14, 10 + 12)
    # solve against 3 columns: GETRF + GETRS(4, 3) = 48 and 36 -> 14 + 36, 10 + 12
    b = torch.randn(4, 3, **F64)
    assert _ops(lambda: torch.linalg.solve(a, b)) == (50, 22)


def test_qr_counts_geqrf_and_orgqr():
    a = torch.randn(6, 4, **F64)
    # GEQRF(6, 4): 122 multiplications, 86 additions; ORGQR(6, 4, 4) for the reduced Q:
    # 84 and 68 (LAWN 41's formulas; see sim/torch_engine/costs.py)
    assert _ops(lambda: torch.linalg.qr(a)) == (86 + 68, (122 - 86) + (84 - 68))
    assert _ops(lambda: torch.linalg.qr(a, mode="r")) == (86, 36)


def test_geqrf_and_householder_product_count_their_routines():
    a = torch.randn(6, 4, **F64)
    qr, tau = torch.geqrf(a)
    # the same LAWN 41 counts as in qr above: GEQRF(6, 4) 122 / 86, ORGQR(6, 4, 4) 84 / 68
    assert _ops(lambda: torch.geqrf(a)) == (86, 122 - 86)
    assert _ops(lambda: torch.linalg.householder_product(qr, tau)) == (68, 84 - 68)


def test_orthogonal_parametrization_by_householder_trains_with_nothing_uncounted():
    """``nn.utils.parametrizations.orthogonal`` with its Householder map (torch's default
    for a non-square real weight; for a square one it is ``matrix_exp``, uncounted): the
    weight is rebuilt from the parameter by ORGQR on every forward, and backward runs
    through it (the in-place ``tril_`` of the reflectors was uncounted too)."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 6, **F64)
    torch.nn.utils.parametrizations.orthogonal(layer)
    dev = TorchDevice("x86-avx2")
    with dev.count("train"):
        layer(torch.randn(3, 4, **F64)).sum().backward()
    assert dev.ledger.uncounted() == {}
    # at least the forward's ORGQR(6, 4, 4): 68 MACs, and the 3 x 4 x 6 = 72 of the product
    assert dev.ledger.total_ops()["mac_fp64"] >= 68 + 72


def test_the_older_factorisation_apis_count_their_routines():
    a = _spd(4)
    low = torch.linalg.cholesky(a)
    # torch.cholesky: POTRF(4) 20 multiplications, 10 additions, and 4 square roots
    assert _ops(lambda: torch.cholesky(a)) == (10, 10 + 4)
    # cholesky_inverse: POTRI = TRTRI(4) (20 and 4) + LAUUM (POTRF's 20 and 10): 40 and 14
    assert _ops(lambda: torch.cholesky_inverse(low)) == (14, 40 - 14)
    # triangular_solve of 3 columns: TRSM(4, 3) 3 x 4 x 5 / 2 = 30 and 3 x 4 x 3 / 2 = 18
    b = torch.randn(4, 3, **F64)
    assert _ops(lambda: torch.triangular_solve(b, low, upper=False)) == (18, 30 - 18)
    # linalg.lu: GETRF(4) 24 and 14, as in inv above (P, L and U unpacked: bytes only)
    assert _ops(lambda: torch.linalg.lu(a)) == (14, 24 - 14)


def test_gaussian_process_marginal_likelihood_trains_with_nothing_uncounted():
    """A GP's negative log marginal likelihood and its gradient: Cholesky, Cholesky solve,
    log-determinant from the factor's diagonal, and their backward passes (triangular
    solves, products)."""
    torch.manual_seed(0)
    x = torch.randn(12, 2, **F64)
    y = torch.randn(12, **F64)
    lengthscale = torch.tensor(0.7, **F64, requires_grad=True)
    dev = TorchDevice("x86-avx2")
    with dev.count("gp"):
        k = torch.exp(-torch.cdist(x, x) ** 2 / (2 * lengthscale ** 2))
        k = k + 0.1 * torch.eye(12, **F64)
        low = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y[:, None], low)
        nll = 0.5 * (y[:, None] * alpha).sum() + low.diagonal().log().sum()
        nll.backward()
    assert dev.ledger.uncounted() == {}
    # the forward's POTRF(12): 12^3/6 - 12/6 = 286 additions as MACs, at least
    assert dev.ledger.total_ops()["mac_fp64"] > 286
