"""Terminal tables at common widths: a figure or unit is never cut, and no line is longer
than the width. A table wider than the terminal cut its middle columns with an ellipsis and
dropped its first or last columns (``compare --width 70`` showed "vs first" as ``0`` for
0.0367x and lost the "figures" column; ``--width 40 --all`` showed ``12…`` for 121 uJ); it
now wraps its text columns only, or falls back to one line per row with each column named,
as ``neuroedge estimate`` does."""
import re

import pytest

from deploy import terminal
from deploy.formatting import comparison_cells, report_tables
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger
from sim.pricing import price

WIDTHS = (40, 70, 80, 120)


def _gpu_ledger() -> Ledger:
    """An MLP-like run: inference and training, fp32 MACs and DRAM traffic."""
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 1_286 * 450)
        led.add_bytes("offchip", read=9_640 * 450, write=40 * 450)
        led.add_samples(450)
    with led.scope("train"):
        led.add("mac_fp32", 3 * 1_286 * 40_410)
        led.add_bytes("offchip", read=3 * 9_640 * 40_410, write=9_640 * 40_410)
        led.add_samples(40_410)
    return led


def _snn_ledger() -> Ledger:
    led = Ledger()
    with led.scope("run"):
        led.add("synop", 2_000_000)
        led.add("neuron_update_active", 300_000)
        led.add("neuron_update_idle", 700_000)
        led.add("spike", 40_000)
        led.add_samples(100)
    return led


def _reports(kind: str):
    if kind == "gpu":
        led, names = _gpu_ledger(), ("a100", "jetson-orin", "x86-avx2")
    else:
        led, names = _snn_ledger(), ("loihi2", "truenorth")
    return led, [price(led, name) for name in names]


def _run(led, profile) -> RunResult:
    return RunResult(model="mlp", profile=profile, dataset="digits", config={},
                     metrics={"test_accuracy": 0.96}, ledger=led)


def _whole_in(cell: str, lines: list[str]) -> bool:
    """``cell`` on one line, not run into a longer figure ("0.03" of "0.0367x" is not it)."""
    pattern = r"(?<![\w.])" + re.escape(cell) + r"(?![\w.])"
    return any(re.search(pattern, ln) for ln in lines)


def _cells(rows) -> set[str]:
    """Every cell of a table: the profile names and the figures."""
    return {c for row in rows for c in row if c.strip()}


@pytest.mark.parametrize("kind", ["gpu", "snn"])
@pytest.mark.parametrize("width", WIDTHS)
def test_comparison_figures_stay_whole_at_every_width(kind, width):
    _, reports = _reports(kind)
    # the default report's table (profile, total, per inference, ..., vs first, figures)
    rows = terminal._comparison_rows(reports)
    short = terminal.comparison_lines(reports, width)
    assert max(map(len, short)) <= width, "\n".join(short)
    missing = [c for c in _cells(rows) if not _whole_in(c, short)]
    assert missing == [], "\n".join(short)
    # --all's (total, dynamic, static, per-sample columns, latency, vs first), and the
    # table of comparison_table
    header, cells = comparison_cells(reports)
    for text in (terminal.comparison_table(reports, width),
                 "\n".join(terminal._lines(width, terminal._table("Comparison", header,
                                                                  cells)))):
        lines = text.splitlines()
        assert max(map(len, lines)) <= width, text
        missing = [c for c in _cells(cells) if not _whole_in(c, lines)]
        assert missing == [], text
        assert "…" not in text


def test_ratios_at_70_columns_and_totals_at_40_stay_whole():
    """The cells the probe saw cut: a ratio at 70 columns ("0" for 0.0367x), joules at 40
    ("12…" for 121 uJ)."""
    _, gpu = _reports("gpu")
    ratios = [terminal._comparison_rows(gpu)[i][5] for i in range(3)]
    assert ratios[0] == "1x" and all(r.endswith("x") for r in ratios)
    lines = terminal.comparison_lines(gpu, 70)
    for ratio in ratios:
        assert _whole_in(ratio, lines), "\n".join(lines)
    assert sum("figures estimate" in ln for ln in lines) == 3   # the column is not dropped
    _, snn = _reports("snn")
    header, cells = comparison_cells(snn)
    text = terminal.comparison_table(snn, 40)
    for row in cells:
        assert _whole_in(row[1], text.splitlines()), text      # the total, e.g. "121 uJ"


def test_a_table_that_fits_is_drawn_as_before():
    _, gpu = _reports("gpu")
    lines = terminal.comparison_lines(gpu, 120)
    assert lines[1].split() == ["profile", "total", "per", "inference", "per", "train",
                                "sample", "latency", "vs", "first", "figures"]
    assert set(lines[2]) == {"─"}
    assert lines[3].split()[0] == "a100" and len(lines) == 3 + 3 + 1


def test_one_line_per_row_names_each_column():
    _, gpu = _reports("gpu")
    lines = terminal.comparison_lines(gpu, 70)
    joined = " ".join(ln.strip() for ln in lines)
    assert re.search(r"jetson-orin: total \S+ \w+, per inference \S+ \w+, per train sample "
                     r"\S+ \w+, latency \S+ \w+, vs first \S+x, figures estimate", joined)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_table_of_the_full_report_fits_and_keeps_its_figures(width):
    led, reports = _reports("gpu")
    report = reports[0]
    text = terminal.terminal_report(_run(led, load("a100")), report, width,
                                    compared=reports[1:], full=True)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width, text
    for key, (_, rows) in report_tables(report).items():
        if key in ("entries", "nature"):   # text tables: their words may wrap
            continue
        figures = {c for row in rows for c in row[1:] if c.strip()}
        missing = [c for c in figures if not _whole_in(c, lines)]
        assert missing == [], (key, missing, text)


@pytest.mark.parametrize("width", (40, 80))
def test_a_text_last_column_wraps_at_spaces_within_the_width(width):
    """The latency table's time model (a sentence) was taken for a figure: kept on one line,
    it ran past the width."""
    model = ("lower bound for 585,532 ops counted outside the engine's steps: spread evenly "
             "over all 128 cores, no barrier")
    rows = [("infer", "1.78 us", model), ("train/learn", "32.5 ms", "compute")]
    lines = terminal._lines(width, terminal._table("Estimated latency", ("scope", "latency",
                                                                         "time model"),
                                                   rows, text_last=True))
    assert max(map(len, lines)) <= width, "\n".join(lines)
    assert _whole_in("1.78 us", lines) and _whole_in("32.5 ms", lines)
    assert " ".join(" ".join(lines).split()).count("spread evenly over all 128 cores") == 1
