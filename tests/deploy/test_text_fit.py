"""``neuroedge estimate`` readable at 80 columns (issue 35 item 4): no line longer than the
terminal, no cell or word split across lines, the same figures as the unfolded output."""
from __future__ import annotations

import contextlib
import io
import re

import pytest

from deploy import text_fit
from deploy.cli import main

NET = """import torch.nn as nn


def make_net():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
"""


def test_a_table_that_fits_is_aligned_else_one_record_per_row():
    head, body = ["name", "kind", "energy"], [["a100", "gpu", "5.63 mJ"], ["m7", "mcu", "1 uJ"]]
    # widths 4, 4, 7 plus two gaps of 2: 19 characters
    assert text_fit.table(head, body, 19) == ["name  kind   energy",
                                              "a100  gpu   5.63 mJ",
                                              "m7    mcu      1 uJ"]
    assert text_fit.table(head, body, None)[1] == "a100  gpu   5.63 mJ"   # no limit
    assert text_fit.table(head, body, 18) == ["a100: kind gpu,", "  energy 5.63 mJ",
                                              "m7: kind mcu,", "  energy 1 uJ"]


def test_fold_breaks_at_spaces_with_an_indent_and_keeps_a_long_word_whole():
    assert text_fit.fold(["  one two three four"], 12) == ["  one two", "    three", "    four"]
    path = "/a/very/long/path/that/is/one/word.toml"
    assert text_fit.fold([f"file {path}"], 20) == ["file", f"  {path}"]   # copyable
    assert text_fit.fold(["x" * 30], None) == ["x" * 30]


def _words(text: str) -> set[str]:
    return {w.strip(",;:()") for w in text.split()}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The same estimate printed at 80 columns and unfolded (a pipe without $COLUMNS)."""
    path = tmp_path_factory.mktemp("fit") / "net.py"
    path.write_text(NET)
    argv = ["estimate", f"{path}:make_net", "--input-shape", "1,784", "--train",
            "--profiles", "jetson-orin,cortex-m7,a100,loihi"]
    mp = pytest.MonkeyPatch()
    out = {}
    for columns in ("80", None, "--width"):
        if columns == "80":
            mp.setenv("COLUMNS", columns)
        else:
            mp.delenv("COLUMNS", raising=False)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(argv + (["--width", "80"] if columns == "--width" else [])) == 0
        out[columns] = buf.getvalue()
    mp.undo()
    # --width 80 lays a pipe's output out as $COLUMNS=80 does
    assert out["--width"] == out["80"]
    return out["80"], out[None]


def test_estimate_at_80_columns_fits_and_splits_no_word(outputs):
    narrow, wide = outputs
    # unfolded, the table with a training step (85 characters), the held-out error lines,
    # the skipped cortex-m7's reason and the execution-model lines are wider than 80
    assert max(map(len, wide.splitlines())) > 200
    assert max(map(len, narrow.splitlines())) <= 80
    # every word at 80 columns is a word of the unfolded output: nothing cut mid-word
    assert _words(narrow) <= _words(wide) | {"kind", "latency", "figures", "per", "inference",
                                             "train", "sample", "total", "vs", "first",
                                             "output", "params", "MACs", "energy", "act."}
    # and nothing dropped but the rules and the first columns' names (a record starts with
    # the profile or the layer): every other word of the unfolded output is still there
    rules = {"-" * n for n in range(200)}
    assert _words(wide) - rules - {"profile", "layer", "type"} <= _words(narrow)


def test_the_figures_at_80_columns_are_the_unfolded_ones(outputs):
    narrow, wide = outputs
    # the energy table's rows: 'a100  gpu  956 uJ  5.63 mJ ...' unfolded, a record folded
    seen = []
    for line in wide.splitlines():
        m = re.match(r"(jetson-orin|a100)\s+gpu\s+(\S+ \S+)\s+(\S+ \S+)\s+(\S+ \S+)", line)
        if m:
            name, infer, train, latency = m.groups()
            folded = narrow[narrow.index(f"\n{name}: "):].split("\n")[1:3]   # two lines
            record = " ".join(" ".join(folded).split())
            assert f"per inference {infer}, per train sample {train}" in record
            assert f"latency {latency}" in record
            seen.append(name)
    assert seen == ["jetson-orin", "a100"]
    # the training step's weights, gradients and activations need more SRAM than it has
    assert "skipped:\n  cortex-m7: [estimate] cortex-m7: one training step needs" in narrow
