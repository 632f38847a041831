"""The digest's checks a (condition gaps) and c (masking invariance) at a reduced scale,
over three seeds, judged on the mean as the bench does (slow: 205 s at load ~4).

The bench (``bench/screener.py``, full preset) runs all five checks with all six variants;
this test keeps the three Gaussian rows at 300 density steps and 6 test volumes. The full
preset's margins over 3 seeds (AUROC over body voxels, 2026-12-07: gaps +0.29 +- 0.03 and
+0.14 +- 0.00, ratio 0.11 +- 0.07, every seed holding) are well clear of the thresholds, so a
pass is not a lucky seed.
"""
import numpy as np
import pytest

from models import runner
from tests.conftest import TOY_GPU

REDUCED = {"train": 48, "test": 6, "ssl_steps": 300, "density_steps": 300, "count_steps": 0,
           "variants": ("gauss_none", "gauss_sincos", "gauss_mask")}


@pytest.mark.slow
def test_masking_invariant_condition_beats_none_and_sincos_and_ignores_lesions():
    runs = [runner.run("screener", profile=str(TOY_GPU), seed=s, overrides=REDUCED).metrics
            for s in range(3)]
    gm = np.array([m["auroc_gauss_mask"] for m in runs])
    none = np.array([m["auroc_gauss_none"] for m in runs])
    sincos = np.array([m["auroc_gauss_sincos"] for m in runs])
    ratio = np.array([m["invariance_ratio"] for m in runs])
    assert (gm - none).mean() >= 0.05        # check a: >= marginal Gaussian + 0.05
    assert (gm - sincos).mean() >= 0.03      # check a: >= sin-cos condition + 0.03
    assert (ratio <= 0.5).all()              # check c, on every seed
