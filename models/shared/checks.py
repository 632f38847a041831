"""Checks every method shares, written once: the x/y input check run before it trains or
predicts, config minimums, and the checks that a run has not diverged."""
from __future__ import annotations

import contextlib

import numpy as np

from sim.errors import ModelError


def check_xy(x, y, sample_shape, n_classes: int | None, what: str) -> None:
    """Raise a one-line ModelError unless ``x`` is ``(N, *sample_shape)`` of finite numbers
    and ``y`` (when given) is ``(N,)`` integer labels in ``0 .. n_classes - 1``.

    ``sample_shape`` is an int (flat features) or a tuple; ``None`` entries match any size.
    """
    shape = (sample_shape,) if isinstance(sample_shape, (int, np.integer)) else \
        tuple(sample_shape)
    x = np.asarray(x) if not hasattr(x, "shape") else x
    want = "(N, " + ", ".join("*" if s is None else str(s) for s in shape) + ")"
    if len(x.shape) != 1 + len(shape) or any(  # the lengths are equal once zip runs
            s is not None and int(d) != int(s) for d, s in zip(x.shape[1:], shape, strict=True)):
        raise ModelError(f"{what}: x has shape {tuple(x.shape)}, expected {want}")
    xa = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
    if xa.dtype.kind == "f" and not np.isfinite(xa).all():
        bad = int((~np.isfinite(xa)).sum())
        raise ModelError(f"{what}: x holds {bad} NaN or infinite value(s); inputs must be "
                         "finite")
    if y is None:
        return
    ya = np.asarray(y.detach().cpu() if hasattr(y, "detach") else y)
    if ya.shape != (x.shape[0],):
        raise ModelError(f"{what}: y has shape {ya.shape}, expected ({x.shape[0]},) to match x")
    if ya.size and ya.dtype.kind not in "iub":
        raise ModelError(f"{what}: y has dtype {ya.dtype}; expected integer class labels")
    if n_classes is not None and ya.size and (ya.min() < 0 or ya.max() >= n_classes):
        raise ModelError(f"{what}: labels span {ya.min()}..{ya.max()}, expected "
                         f"0..{n_classes - 1}")


def check_at_least(cfg, **minimum) -> None:
    """Raise a one-line ModelError naming the first field of ``cfg`` below its minimum
    (``check_at_least(cfg, weight_decay=0, warmup=0)``); NaN fails every bound."""
    for name, low in minimum.items():
        value = getattr(cfg, name)
        if not value >= low:
            raise ModelError(f"{type(cfg).__name__}.{name} = {value}: must be >= {low}")


def check_field_types(cfg) -> None:
    """Raise a one-line ModelError naming the first field of the dataclass ``cfg`` whose value
    is not of its annotated type: ``int`` (not bool), ``float`` (an int is fine), ``str``, or
    ``tuple[int, ...]`` (any sequence of ints). The CLI's ``--set`` checks types already; a
    config built in Python was a traceback later (``hidden=32``: 'int' object is not
    iterable) or silently changed (``hidden=(2.7,)`` became ``(2,)``)."""
    import dataclasses
    import numbers
    from collections.abc import Sequence

    def whole(v) -> bool:
        return isinstance(v, numbers.Integral) and not isinstance(v, bool)
    checks = {"int": (whole, "a whole number"),
              "float": (lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool),
                        "a number"),
              "str": (lambda v: isinstance(v, str), "text"),
              "tuple[int, ...]": (lambda v: isinstance(v, Sequence) and not isinstance(v, str)
                                  and all(whole(h) for h in v), "a sequence of whole numbers")}
    for field in dataclasses.fields(cfg):
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        if kind not in checks:
            continue
        ok, what = checks[kind]
        value = getattr(cfg, field.name)
        if not ok(value):
            raise ModelError(f"{type(cfg).__name__}.{field.name} = {value!r}: expected {what}")


def all_finite(tensors) -> bool:
    """True when every value of every tensor is finite. Read in numpy on the host, so a
    check inside a counting block adds nothing to the ledger."""
    return all(np.isfinite(t.detach().cpu().numpy()).all() for t in tensors)


@contextlib.contextmanager
def optimizer_overflow_is_config_error(what: str, lr: float, optimizer: str):
    """torch's Adam/AdamW raise a RuntimeError naming an overflow when the step size
    lr / (1 - beta1^t) leaves float32's range (lr ~ 1e38): a one-line error naming ``lr``
    (``what``: the config class, e.g. ``MLPConfig``; ``optimizer``: its name in the
    message). Any other RuntimeError passes."""
    try:
        yield
    except RuntimeError as exc:
        if "overflow" not in str(exc):
            raise
        raise ModelError(f"{what}.lr = {lr}: {optimizer}'s step overflows float32; "
                         "expected a smaller lr") from None
