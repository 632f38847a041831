"""GEB's procedural tasks: a response space with a low-probability optimum, and its reward.

Both tasks (the digest's plan, "Toy RLHF where pi(y|x) is exact") are the same recipe at two
sizes: per prompt and position a reference ("SFT") token distribution that puts most mass on
a few *common* tokens, and a hidden reward whose optimum is spelled with *rare* tokens, so
that pi_ref(y*) is tiny:

``toy``
    4 tokens over a vocabulary of 6 (1,296 responses), 16 prompts: small enough that every
    expectation over responses is an exact sum.
``chars``
    a character-level task: 8 characters over a 12-letter alphabet (4.3e8 strings, never
    enumerated), 4 prompts; expectations are sample means.
``reach``
    3 tokens over a vocabulary of 6 (216 responses, exact sums), 16 prompts, and the
    reference mass ``common_mass`` = 0.4 on the two common tokens (:data:`COMMON_MASS`):
    each rare token keeps 0.15, so pi_ref(y*) ~ 0.15^3 (ln ~ -5.7; the trained pi_ref
    gives about -6 to -7.5) and the optimum is reachable by sampling (issue 34, item 6:
    on ``toy`` pi_ref(y*) ~ 1e-6 and no arm's P(y*) rises above 0.01, so the reward half
    of the claim cannot be tested there).

Reward (every task): ``r*(x, y) = m(y) / L + decoy * c(y) / L`` with ``c`` the number of
common tokens and ``m`` the credit for matching the optimum ``y*(x)``: with the default
``credit="match"``, the number of positions where ``y`` has ``y*``'s token, wherever they
are; with ``credit="prefix"``, the length of the prefix ``y`` shares with ``y*``. The
all-common answers (what the reference policy says) earn ``decoy`` = 0.5 and the optimum
1.0: a passive learner that only sharpens the reference's answers is stuck near 0.5, and the
optimum's credit is found only by sampling its rare tokens (in order, under ``prefix``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import ModelError

TASKS = {"toy": {"vocab": 6, "length": 4, "prompts": 16},
         "chars": {"vocab": 12, "length": 8, "prompts": 4},
         "reach": {"vocab": 6, "length": 3, "prompts": 16}}
"""Sizes of each task (vocabulary, response length, prompts)."""

COMMON_MASS = {"reach": 0.4}
"""Tasks whose reference mass on the common tokens is not the config's default 0.9: the
card's presets pass it (``GebConfig.common_mass``)."""


@dataclass(frozen=True)
class Task:
    """One seed's task: the reference token distribution and the hidden reward."""

    name: str
    vocab: int
    length: int
    prompts: int
    q: np.ndarray            # (P, L, V) reference token probabilities per prompt, position
    common: np.ndarray       # (P, L, V) bool: the common tokens
    target: np.ndarray       # (P, L) int: the optimum y*(x), rare tokens only
    decoy: float             # reward of an all-common answer
    source: str
    credit: str = "match"    # match: every token matching y* earns; prefix: its matching prefix

    @property
    def enumerable(self) -> bool:
        return self.vocab ** self.length <= 4096

    def reward(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """r*(x, y) in [0, 1]; ``x`` (N,) prompts, ``y`` (N, L) tokens -> (N,)."""
        hit = y == self.target[x]                                     # (N, L)
        # credit: (match, the default) every position that matches, or the matching prefix's length
        prefix = hit.sum(1) if self.credit == "match" else np.cumprod(hit, axis=1).sum(1)
        common = np.take_along_axis(self.common[x], y[..., None], 2)[..., 0].sum(1)
        return (prefix + self.decoy * common) / self.length


def make_task(name: str, seed: int, common_mass: float = 0.9, n_common: int = 2,
              decoy: float = 0.5, credit: str = "match") -> Task:
    """The task ``name`` (``toy`` or ``chars``) drawn from ``seed``: per prompt and
    position ``n_common`` common tokens share ``common_mass`` of the reference mass, the
    rest share what is left; the optimum takes a rare token at every position."""
    if name not in TASKS:
        raise ModelError(f"GEB task {name!r} is unknown; tasks are {', '.join(TASKS)}")
    if not 0.0 < common_mass < 1.0 or not 0 < n_common < TASKS[name]["vocab"] - 1:
        raise ModelError(f"make_task({name!r}): common_mass = {common_mass} must lie in (0, 1) "
                         f"and n_common = {n_common} in [1, vocab - 2]")
    s = TASKS[name]
    p, length, v = s["prompts"], s["length"], s["vocab"]
    gen = np.random.default_rng(seed)
    order = np.argsort(gen.random((p, length, v)), axis=2)            # a random token order
    common = np.zeros((p, length, v), bool)
    np.put_along_axis(common, order[..., :n_common], True, axis=2)
    q = np.where(common, common_mass / n_common, (1 - common_mass) / (v - n_common))
    target = order[..., n_common]                                     # a rare token each
    return Task(name, v, length, p, q, common, target, decoy,
                f"procedural ({name}, seed {seed}, common mass {common_mass})", credit)


def sample_reference(task: Task, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (prompt, response) pairs from the reference distribution q: the SFT corpus the
    reference policy is trained on. Returns x (n,) and y (n, L)."""
    gen = np.random.default_rng(seed)
    x = gen.integers(0, task.prompts, n)
    cdf = np.cumsum(task.q[x], axis=2)                                # (n, L, V)
    y = (gen.random((n, task.length, 1)) > cdf).sum(2)
    return x, np.minimum(y, task.vocab - 1)


def all_responses(task: Task) -> np.ndarray:
    """Every response of an enumerable task, (V^L, L), in lexicographic order."""
    if not task.enumerable:
        raise ModelError(f"task {task.name!r} has {task.vocab}^{task.length} responses; only "
                         "a task with <= 4096 is enumerated")
    grids = np.indices((task.vocab,) * task.length).reshape(task.length, -1)
    return grids.T.copy()
