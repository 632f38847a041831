"""KLAS's pass rule: per-seed differences against a stated margin, k of n seeds, else tie."""
from models.klas.experiment import MARGINS, verdict


def test_differences_inside_the_margin_are_a_tie():
    # the bench's frontier differences (+0.0015, +0.0057, +0.0011 AUC): one of 3 beyond 0.005,
    # ceil(2 x 3 / 3) = 2 needed -> tie, not "better" (a strict ">" called it a win)
    assert MARGINS["frontier"] == 0.005
    assert verdict([0.0015, 0.0057, 0.0011], MARGINS["frontier"]) == "tie"
    # the bench's Spearman differences KLAS - CKA: +0.055, +0.131, -0.177: 2 of 3 > 0.05,
    # but their mean (0.055 + 0.131 - 0.177) / 3 = +0.003 is inside the margin -> tie
    assert MARGINS["ranking"] == 0.05
    assert verdict([0.055, 0.131, -0.177], MARGINS["ranking"]) == "tie"


def test_claims_quote_the_frontier_differences_of_results():
    """docs/claims.md's frontier differences are RESULTS.md's supernet AUCs, KLAS - SN-Net."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    row = re.search(r"\*\*supernet frontier AUC: KLAS / SN-Net \(ratio\)\*\* \|(.*)",
                    (root / "bench" / "RESULTS.md").read_text()).group(1)
    d = [float(a) - float(b) for a, b in re.findall(r"(0\.\d+) / (0\.\d+)", row)]
    above = sum(x > MARGINS["frontier"] for x in d)
    assert verdict(d, MARGINS["frontier"]) == "tie"
    text = (f"supernet frontier AUC differences {', '.join(f'{x:+.4f}' for x in d)}, above "
            f"the {MARGINS['frontier']} margin on {above} of {len(d)} seeds, mean "
            f"{sum(d) / len(d):+.4f}")
    assert text in (root / "docs" / "claims.md").read_text()


def test_k_of_n_in_both_directions():
    assert verdict([0.1, 0.1, 0.0], 0.05) == "better"       # 2 of 3, mean 0.067
    assert verdict([0.1, 0.0, 0.0], 0.05) == "tie"          # 1 of 3
    assert verdict([-0.1, -0.1, 0.0], 0.05) == "worse"      # 2 of 3, mean -0.067
    assert verdict([-0.1, -0.1, 0.2], 0.05) == "tie"        # 2 of 3 below, mean 0
    assert verdict([0.06] * 3 + [0.0] * 2, 0.05) == "tie"   # 5 seeds need 4
    assert verdict([0.07] * 4 + [0.0], 0.05) == "better"    # mean 0.056
