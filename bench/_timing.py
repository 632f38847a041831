"""CPU timing shared by the benches: the sides of a comparison timed taking turns."""
from __future__ import annotations

import time


def best_interleaved(fns: dict, repeats: int, window_s: float = 0.25) -> tuple[dict, dict]:
    """Best-of-``repeats`` CPU seconds per call for each function, the functions taking turns,
    and the last output of each (so a caller can check that every side did its work).

    Each sample loops a function for about ``window_s`` (a 3 ms kernel runs ~80 times, a
    100 ms sgemm ~3 times), so on a shared machine all sides see preemption alike: the
    best of many short runs would otherwise favour the short kernel. Taking turns makes a
    burst of load hit all of them.
    """
    reps, outs = {}, {}
    for name, fn in fns.items():
        fn()                       # warm-up: numba's cache load, allocator, BLAS setup
        t = time.process_time()
        outs[name] = fn()
        reps[name] = max(1, round(window_s / max(time.process_time() - t, 1e-6)))
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.process_time()
            for _ in range(reps[name]):
                outs[name] = fn()
            best[name] = min(best[name], (time.process_time() - t) / reps[name])
    return best, outs
