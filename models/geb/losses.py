"""GEB's losses: the f-DPO pair logits and the exploratory bonus terms, per f-divergence.

Li et al., *General Exploratory Bonus for Optimistic Exploration in RLHF*, ICLR 2026,
arXiv:2510.03269; the practical loss follows the authors' trainer (repository
WindyLee0822/GEB, ``dpo_iteration/wpo.py``).

Divergences (Section 3): ``D_f(pi || pi_ref) = E_{pi_ref} f(pi / pi_ref)`` with

========= ===================== ====================== ===================================
``f_div``  f(u)                  f'(u)                  g_f(u) = u f'(u) - f(u)
========= ===================== ====================== ===================================
``rkl``    u ln u (reverse KL)   ln u + 1               u
``fkl``    -ln u (forward KL)    -1/u                   ln u - 1
``hel``    -2 sqrt(u) (alpha=1/2) -1/sqrt(u)            sqrt(u)
========= ===================== ====================== ===================================

(Hellinger: ``f`` fixed up to the affine terms that change neither the policy nor the
bonus' cross-derivative; this scale matches the trainer's logits.)

The prior-form bonus (Section 3.1) is ``L_bonus = max_pi J = beta E_{y~pi_ref} g_f(pi /
pi_ref)``; GEB (Section 4, Eqs. 8-11) replaces the ratio by ``u(pi)`` strictly decreasing
in ``pi``: ``geb_p`` u = 1 + alpha - pi, ``geb_f`` u = 1 / pi, ``geb_tanh`` u =
arctanh(1 - pi) + alpha, with alpha = 1/2 for Hellinger and 0 otherwise (the trainer's
constants). The trainer adds ``-kappa g_f(u)`` for the REJECTED response of each pair only,
with ``pi = exp(log pi_theta(y_l))`` (a full-sequence probability); the per-pair terms are
those of :func:`geb_bonus` (the digest's table; equal to ``-kappa g_f(u)`` up to constants).

Optimism (Def. 3.1): the cross-derivative d^2 L / (d pi d pi_ref) of ``beta pi_ref
g_f(u)`` is <= 0. For GEB it is ``beta u f''(u) u'(pi) <= 0`` (f convex, u' < 0); for the
prior form it is ``-beta (pi / pi_ref^2) d/dx[x f''(x)]``, zero for reverse KL (Lemma
3.1: redundant) and >= 0 for forward KL and Hellinger (Lemma 3.2, Thm 3.3: anti-optimistic).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

F_DIVS = ("rkl", "fkl", "hel")
BONUSES = ("none", "prior", "geb_p", "geb_f", "geb_tanh")
EPS = 1e-5          # the trainer's guard in 1/(pi + eps), arctanh(1 - pi - eps)
ALPHA = {"rkl": 0.0, "fkl": 0.0, "hel": 0.5}
"""alpha in u = 1 + alpha - pi and arctanh(1 - pi) + alpha: keeps u > 0 where g_f needs it
(Hellinger's sqrt; the trainer's constants, 1.5 - pi and arctanh(.) + 0.5)."""


def f(f_div: str, u: torch.Tensor) -> torch.Tensor:
    """The generator f(u) of the divergence (table in the module docstring)."""
    if f_div == "rkl":
        return u * torch.log(u)
    if f_div == "fkl":
        return -torch.log(u)
    return -2.0 * torch.sqrt(u)


def g(f_div: str, u: torch.Tensor) -> torch.Tensor:
    """``g_f(u) = u f'(u) - f(u)``, the integrand of the bonus (convex-conjugate identity)."""
    if f_div == "rkl":
        return u
    if f_div == "fkl":
        return torch.log(u) - 1.0
    return torch.sqrt(u)


def u_of(bonus: str, f_div: str, pi: torch.Tensor, pi_ref: torch.Tensor | None = None):
    """The argument u of g_f: pi / pi_ref for the prior form, GEB's u(pi) otherwise."""
    a = ALPHA[f_div]
    if bonus == "prior":
        return pi / pi_ref
    if bonus == "geb_p":
        return 1.0 + a - pi
    if bonus == "geb_f":
        return 1.0 / pi
    if bonus == "geb_tanh":
        return torch.atanh(1.0 - pi) + a
    raise ValueError(bonus)


def bonus_potential(bonus: str, f_div: str, pi, pi_ref, beta: float = 1.0):
    """``beta pi_ref g_f(u)``: one response's share of ``L_bonus`` (its cross-derivative in
    (pi, pi_ref) is the optimism of Def. 3.1)."""
    return beta * pi_ref * g(f_div, u_of(bonus, f_div, pi, pi_ref))


def fdpo_logits(f_div: str, r_w: torch.Tensor, r_l: torch.Tensor) -> torch.Tensor:
    """f-DPO logit z of each pair from the log-ratios ``r = log pi - log pi_ref``: the
    reparameterised reward difference f'(pi_w/pi_ref) - f'(pi_l/pi_ref) of Section 3, up
    to the trainer's scale (KL: r_w - r_l; Hellinger: (e^{-r_l/2} - e^{-r_w/2}) / 0.5;
    forward KL: e^{-r_l} - e^{-r_w})."""
    if f_div == "rkl":
        return r_w - r_l
    if f_div == "hel":
        return (torch.exp(-r_l / 2) - torch.exp(-r_w / 2)) / 0.5
    return torch.exp(-r_l) - torch.exp(-r_w)


def geb_bonus(bonus: str, f_div: str, logp_l: torch.Tensor, kappa: float,
              logp_ref_l: torch.Tensor | None = None) -> torch.Tensor:
    """The per-pair bonus term added to the loss, on the rejected response (the trainer's
    table; ``prior``: ``-kappa g_f(pi / pi_ref)``, the standard bonus on the same sample)."""
    if bonus == "none":
        return torch.zeros_like(logp_l)
    if bonus == "prior":
        return -kappa * g(f_div, torch.exp(logp_l - logp_ref_l))
    pi = torch.exp(logp_l)
    if bonus == "geb_p":
        if f_div == "rkl":
            return kappa * pi
        if f_div == "fkl":
            return -kappa * torch.log(1.0 - pi)
        return -kappa * torch.sqrt(1.5 - pi)
    if bonus == "geb_f":
        if f_div == "rkl":
            return -kappa / (pi + EPS)
        if f_div == "fkl":
            return kappa * logp_l   # kappa ln pi, in the log form (never underflows)
        return -kappa / (torch.sqrt(pi) + EPS)
    t = torch.atanh(1.0 - pi - EPS)   # geb_tanh
    if f_div == "rkl":
        return -kappa * t
    if f_div == "fkl":
        return -kappa * torch.log(t)
    return -kappa * torch.sqrt(t + 0.5)


def pair_loss(f_div: str, bonus: str, beta: float, kappa: float, logp_w, logp_l,
              ref_w, ref_l) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-pair f-DPO loss ``-log sigma(beta z)`` and bonus term, each of shape (N,)."""
    z = fdpo_logits(f_div, logp_w - ref_w, logp_l - ref_l)
    return -F.logsigmoid(beta * z), geb_bonus(bonus, f_div, logp_l, kappa, ref_l)


def exact_prior_bonus(f_div: str, logp_all: torch.Tensor, logp_ref_all: torch.Tensor,
                      beta: float = 1.0) -> torch.Tensor:
    """``L_bonus`` of the prior form as the exact expectation over every response:
    ``beta sum_y pi_ref(y) g_f(pi(y)/pi_ref(y))`` per prompt; ``logp_*_all`` (P, Y).
    Reverse KL: ``beta sum_y pi(y) = beta`` whatever pi is (Lemma 3.1)."""
    pi_ref = torch.exp(logp_ref_all)
    return beta * (pi_ref * g(f_div, torch.exp(logp_all - logp_ref_all))).sum(-1)
