"""GEB's bonus forms: optimism signs on a grid (Def. 3.1, Lemma 3.2, Thm 4.2), the
trainer's per-pair table for hand-set log-probabilities, and the table = -kappa g_f(u)."""
import math

import numpy as np
import pytest
import torch

from models.geb import losses

GEB = ("geb_p", "geb_f", "geb_tanh")
GRID = torch.logspace(-4, math.log10(0.9), 25, dtype=torch.float64)
"""pi and pi_ref in [1e-4, 0.9]: geb_tanh's and geb_p's forward-KL u reach 0 at pi = 1."""


def cross_derivative(bonus, f_div, pi, pi_ref, beta=0.1):
    """Central finite difference of d^2 (beta pi_ref g_f(u)) / (d pi d pi_ref), relative
    steps 1e-3."""
    h, k = 1e-3 * pi, 1e-3 * pi_ref

    def pot(a, b):
        return losses.bonus_potential(bonus, f_div, a, b, beta)
    return (pot(pi + h, pi_ref + k) - pot(pi + h, pi_ref - k) - pot(pi - h, pi_ref + k)
            + pot(pi - h, pi_ref - k)) / (4 * h * k)


def fpp(f_div, u):
    """f''(u): u^-1 (reverse KL), u^-2 (forward KL), u^-1.5 / 2 (Hellinger, f = -2 sqrt u)."""
    return {"rkl": 1 / u, "fkl": u ** -2, "hel": 0.5 * u ** -1.5}[f_div]


@pytest.mark.parametrize("f_div", losses.F_DIVS)
@pytest.mark.parametrize("bonus", GEB)
def test_geb_is_optimistic_on_the_grid(f_div, bonus):
    pi, ref = torch.meshgrid(GRID, GRID, indexing="ij")
    d = cross_derivative(bonus, f_div, pi, ref)
    assert bool((d < 0).all())      # Thm 4.2: optimistic everywhere on the grid
    # closed form: beta u f''(u) u'(pi) with u' = -1, -1/pi^2, -1/(1 - (1-pi)^2)
    u = losses.u_of(bonus, f_div, pi)
    du = {"geb_p": -torch.ones_like(pi), "geb_f": -1 / pi ** 2,
          "geb_tanh": -1 / (1 - (1 - pi) ** 2)}[bonus]
    torch.testing.assert_close(d, 0.1 * u * fpp(f_div, u) * du, rtol=1e-3, atol=1e-9)


@pytest.mark.parametrize("f_div", losses.F_DIVS)
def test_prior_form_is_redundant_under_kl_and_anti_optimistic_otherwise(f_div):
    pi, ref = torch.meshgrid(GRID, GRID, indexing="ij")
    d = cross_derivative("prior", f_div, pi, ref)
    # closed form -beta (pi / pi_ref^2) d/dx[x f''(x)] at x = pi / pi_ref: x f'' = 1 (rkl),
    # 1/x (fkl), x^-0.5 / 2 (hel), so the derivative is 0, -1/x^2, -x^-1.5 / 4
    x = pi / ref
    dxf = {"rkl": torch.zeros_like(x), "fkl": -x ** -2, "hel": -0.25 * x ** -1.5}[f_div]
    exact = -0.1 * pi / ref ** 2 * dxf
    if f_div == "rkl":
        assert float(d.abs().max()) < 1e-3       # Lemma 3.1: zero (finite-difference noise)
    else:
        assert bool((d > 0).all())               # Lemma 3.2 / Thm 3.3: anti-optimistic
        torch.testing.assert_close(d, exact, rtol=1e-3, atol=1e-9)


PI_L = 0.25
KAPPA = 0.5
T = math.atanh(1 - PI_L - 1e-5)   # atanh(0.74999) = 0.5 ln 7 - 1e-5 / (1 - 0.75^2) = 0.972932
TABLE = {   # the digest's table at pi(y_l) = 0.25, kappa = 0.5
    ("geb_p", "rkl"): 0.125,                          # +kappa pi
    ("geb_p", "fkl"): -0.5 * math.log(0.75),          # -kappa ln(1 - pi) = 0.143841
    ("geb_p", "hel"): -0.5 * math.sqrt(1.25),         # -kappa sqrt(1.5 - pi) = -0.559017
    ("geb_f", "rkl"): -0.5 / 0.25001,                 # -kappa / (pi + 1e-5) = -1.999920
    ("geb_f", "fkl"): 0.5 * math.log(0.25),           # +kappa ln pi = -0.693147
    ("geb_f", "hel"): -0.5 / 0.50001,                 # -kappa / (sqrt pi + 1e-5) = -0.999980
    ("geb_tanh", "rkl"): -0.5 * T,                    # -0.486466
    ("geb_tanh", "fkl"): -0.5 * math.log(T),          # 0.013719
    ("geb_tanh", "hel"): -0.5 * math.sqrt(T + 0.5),   # -0.606783
    # the prior form at pi_l / pi_ref_l = 0.25 / 1: -kappa g_f(0.25)
    ("prior", "rkl"): -0.125,                         # -kappa u
    ("prior", "fkl"): 0.5 + 0.5 * math.log(4),        # -kappa (ln u - 1) = 1.193147
    ("prior", "hel"): -0.25,                          # -kappa sqrt u
    ("none", "rkl"): 0.0, ("none", "fkl"): 0.0, ("none", "hel"): 0.0}
FDPO = {   # r_w = ln 0.5 - ln 0.125 = ln 4, r_l = ln 0.25 - ln 1 = -ln 4, beta = 0.1
    "rkl": math.log1p(math.exp(-0.1 * 2 * math.log(4))),   # z = 2 ln 4; -log sigma(0.27726)
    "hel": math.log1p(math.exp(-0.1 * 3.0)),    # z = (e^{ln 4 / 2} - e^{-ln 4 / 2}) / 0.5 = 3
    "fkl": math.log1p(math.exp(-0.1 * 3.75))}   # z = e^{ln 4} - e^{-ln 4} = 3.75


@pytest.mark.parametrize("bonus,f_div", sorted(TABLE))
def test_per_pair_loss_table(bonus, f_div):
    lg = torch.log(torch.tensor([0.5, 0.125, 0.25, 1.0], dtype=torch.float64))
    fdpo, bon = losses.pair_loss(f_div, bonus, 0.1, KAPPA, lg[0:1], lg[2:3], lg[1:2], lg[3:4])
    assert float(fdpo) == pytest.approx(FDPO[f_div], rel=1e-12)
    assert float(bon) == pytest.approx(TABLE[bonus, f_div], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("f_div", losses.F_DIVS)
@pytest.mark.parametrize("bonus", GEB)
def test_table_entries_are_minus_kappa_g_of_u_up_to_a_constant(f_div, bonus):
    pi = torch.linspace(0.2, 0.8, 13, dtype=torch.float64)
    term = losses.geb_bonus(bonus, f_div, torch.log(pi), KAPPA)
    gap = term + KAPPA * losses.g(f_div, losses.u_of(bonus, f_div, pi))
    # constant in pi up to the trainer's 1e-5 guards (<= kappa 1e-5 / 0.2^2 ~ 1.3e-4)
    assert float(gap.max() - gap.min()) < 3e-4
    # the constant: -kappa = -0.5 under forward KL (the -1 of g = ln u - 1), kappa (1 + alpha)
    # = 0.5 for geb_p under reverse KL (kappa pi + kappa (1 - pi)), 0 otherwise
    const = -0.5 if f_div == "fkl" else 0.5 if (bonus, f_div) == ("geb_p", "rkl") else 0.0
    assert float(gap.mean()) == pytest.approx(const, abs=3e-4)


def test_g_is_the_convex_conjugate_identity():
    u = torch.tensor([0.3, 1.0, 2.5], dtype=torch.float64, requires_grad=True)
    for f_div in losses.F_DIVS:
        (fp,) = torch.autograd.grad(losses.f(f_div, u).sum(), u)
        torch.testing.assert_close(losses.g(f_div, u), u * fp - losses.f(f_div, u))
    assert np.isclose(float(losses.g("rkl", torch.tensor(3.0))), 3.0)
