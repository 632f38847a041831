"""bench/screener.py: the tables of bench/RESULTS.md's Screener section and of the room README
are rendered from the stored RESULT (bench/out/screener.json), which was run under the
protocol the code now has (voxel AUROC over body voxels only)."""
import json
from pathlib import Path

import pytest

from bench import screener as bs
from models.screener.experiment import summarize

ROOT = Path(__file__).resolve().parents[2]


def metrics(gm, none, sincos, randf, fnone, fmask, ratio, clean):
    return {"auroc_gauss_mask": gm, "auroc_gauss_none": none, "auroc_gauss_sincos": sincos,
            "auroc_gauss_mask_randf": randf, "auroc_flow_none": fnone,
            "auroc_flow_mask": fmask, "invariance_ratio": ratio,
            "auroc_clean_gauss_mask": clean, "delta_condition": 0.5, "delta_descriptor": 5.0}


def test_render_states_each_seed_and_the_checks():
    per = [metrics(0.90, 0.60, 0.80, 0.70, 0.62, 0.85, 0.1, 0.91),
           metrics(0.80, 0.60, 0.70, 0.70, 0.64, 0.78, 0.2, 0.80)]
    table = bs.render({"summary": summarize(per), "per_seed": per})
    # gauss_mask 0.90, 0.80: mean 0.850, population std 0.050
    assert "| **gauss_mask (Screener-Gaussian: masking-invariant condition)** | " \
           "**0.850 +- 0.050** | 0.900 0.800 |" in table
    # a's 0.85 holds on the mean (0.850 >= 0.85) and on seed 1 only
    assert "| a | gauss_mask >= 0.85 | 0.850 | holds | 1/2 |" in table
    # e: |flow_mask - gauss_mask| = 0.05, 0.02 (mean 0.035) against |flow_none - gauss_none|
    # = 0.02, 0.04 (mean 0.030): fails on the mean, holds on seed 1 (0.02 < 0.04)
    assert "| e | abs(flow - Gaussian) smaller with g than with none | 0.035 vs 0.030 | " \
           "fails | 1/2 |" in table


def test_only_the_full_protocol_is_written(capsys):
    with pytest.raises(SystemExit):
        bs.main(["--preset", "quick", "--write"])
    with pytest.raises(SystemExit):
        bs.main(["--set", "ssl_steps=30", "--write"])
    assert "only a full-preset run without --set is written" in capsys.readouterr().err


@pytest.mark.skipif(not bs.RESULT_FILE.exists(), reason="no stored screener RESULT")
def test_figures_are_the_stored_run():
    result = json.loads(bs.RESULT_FILE.read_text())
    table = bs.render(result)
    assert table in (ROOT / "bench" / "RESULTS.md").read_text()
    assert table in (ROOT / "models" / "screener" / "README.md").read_text()
    # the stored run is the bench's protocol: full preset, 3 seeds, body voxels only
    assert result["preset"] == "full" and result["seeds"] == [0, 1, 2]
    assert result["overrides"] == {"count_steps": 0}
    assert result["auroc_voxels"] == "body (organ > 0)"
    assert result["summary"] == summarize(result["per_seed"])   # the summary is its seeds'


@pytest.mark.skipif(not bs.RESULT_FILE.exists(), reason="no stored screener RESULT")
def test_the_claims_row_is_the_stored_run():
    s = json.loads(bs.RESULT_FILE.read_text())["summary"]

    def pm(key):
        return f"{s[key + '_mean']:.3f} +- {s[key + '_std']:.3f}"

    row = next(line for line in (ROOT / "docs" / "claims.md").read_text().splitlines()
               if line.startswith("| `screener` |"))
    assert (f"{pm('auroc_gauss_mask')} vs {pm('auroc_gauss_none')} (none) / "
            f"{pm('auroc_gauss_sincos')} (sin-cos), on "
            f"{s['checks']['a_vs_none_ge_+0.05']['seeds_holding']}/{s['seeds']} seeds") in row
    assert f"SSL descriptor {s['mask_minus_randf_mean']:+.3f} over a random-init one" in row
    assert f"{s['invariance_ratio_mean']:.2f}x as much as the descriptor" in row
    assert f"contaminated training {s['contaminated_minus_clean_mean']:+.3f}" in row
    assert (f"(+{s['flow_minus_gauss_none_mean']:.2f} unconditioned, "
            f"{s['flow_minus_gauss_mask_mean']:.2f} conditioned)") in row
