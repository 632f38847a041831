"""bench/RESULTS.md's int8 C export table is rendered from the benchmark's own RESULT
(bench/out/c_int8.json, written by `python bench/c_int8.py --write`): no figure can drift."""
import json
from pathlib import Path

from bench.c_int8 import RESULT_FILE, render

ROOT = Path(__file__).resolve().parents[2]


def test_results_table_is_the_benchmark_output():
    result = json.loads(RESULT_FILE.read_text())
    assert render(result) in (ROOT / "bench" / "RESULTS.md").read_text()


def test_recorded_run_is_consistent():
    """The stored run: bit-exact on both targets, the arena equal to the built bss, the
    flash within the stated margin, and the traced count within 80 instructions of the
    SysTick count."""
    from deploy.c_int8 import FLASH_MARGIN
    result = json.loads(RESULT_FILE.read_text())
    assert result["rows"]
    for row in result["rows"]:
        assert row["bit_exact_host"] is True and row["bit_exact_cortex-m4"] is True
        pred, built = row["sizes_predicted"], row["sizes_built"]
        assert built["bss"] == pred["arena"]
        assert abs(pred["flash"] - built["flash"]) <= FLASH_MARGIN * built["flash"]
        m = row["measured"]
        if "traced_instructions_per_inference" in m:
            assert abs(m["traced_instructions_per_inference"]
                       - m["instructions_per_inference"]) <= 80
