"""numba kernel of ``NeuromorphicDevice.update_weights``: one pass over a projection's synapses.

The numpy form (gather, add, round, compare, scatter, then the changed synapses' cores)
walked the projection's synapses six times; DiffPC rewrites 2 x 1M synapses per batch.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def add_weights(w, perm, delta, scale, top, col, n_neurons, core_of, per_row):
    """``w[perm] += delta``, rounded to multiples of ``scale`` clipped to +-``top`` steps
    when ``scale > 0`` (``np.round``'s half-to-even, as the numpy form); counts into
    ``per_row[1 + core]`` each synapse whose stored value changes, by its target neuron's
    core. Returns the number changed."""
    changed = 0
    for k in range(perm.size):
        j = perm[k]
        new = w[j] + delta[k]
        if scale > 0.0:
            new = min(max(np.rint(new / scale), -top), top) * scale
        if new != w[j]:
            changed += 1
            per_row[core_of[col[j] % n_neurons] + 1] += 1
        w[j] = new
    return changed
