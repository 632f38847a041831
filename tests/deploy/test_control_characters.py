"""Control characters in a file's text (issue 32): a run file's or a profile's text holding
ESC[2J, a carriage return, a newline or a bidi override is shown escaped (``\\x1b``,
``\\x0a``, ``\\u202e``) wherever it is printed -- the terminal report, ``compare``, the HTML
report, the error line, ``profiles show`` and the ``estimate`` table -- never obeyed, and
never splits a line. One helper does it: ``deploy.formatting.printable``."""
import json
import re

import pytest

import deploy.runfile as runfile
from deploy.cli import main
from deploy.formatting import printable
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger
from sim.traces import Trace, curve

HOSTILE = "x\x1b[2J\rgone\nINJECTED\u202eevil"
SHOWN = "x\\x1b[2J\\x0dgone\\x0aINJECTED\\u202eevil"
RAW = ("\x1b", "\r", "\u202e", "\x0b")


def test_printable_escapes_every_control_and_bidi_character():
    assert printable(HOSTILE) == SHOWN
    # a whole report keeps its own newlines and tabs; a second pass changes nothing
    assert printable("a\tb\nc\x1b", lines=True) == "a\tb\nc\\x1b"
    assert printable(printable(HOSTILE)) == SHOWN
    assert printable("é µs 10 nJ [bold]") == "é µs 10 nJ [bold]"   # printable text is kept
    assert printable("\u2028\u2066\x85\x7f") == "\\u2028\\u2066\\x85\\x7f"
    # a byte that is not UTF-8, as h5py reads it (a lone surrogate): no font draws it
    assert printable(b"s\x87".decode("utf-8", "surrogateescape")) == "s\\udc87"


def _hostile_run(tmp_path, toy_gpu_path):
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 10)
        led.add_samples(1)
    result = RunResult(model="mlp" + HOSTILE, profile=load(toy_gpu_path),
                       dataset="digits" + HOSTILE, preset="quick",
                       config={"note" + HOSTILE: HOSTILE}, metrics={"acc" + HOSTILE: 0.5},
                       ledger=led,
                       traces={"loss": curve([1.0, 0.5]),
                               "tbl": Trace("table", [[1, 2]], "<b>" + HOSTILE, ("a", "b"))},
                       units={"acc" + HOSTILE: "%" + HOSTILE})
    path = tmp_path / "run.h5"
    runfile.write_run(path, result)
    return path


def _no_raw(text):
    for c in RAW:
        assert c not in text, repr(c)


@pytest.mark.parametrize("command", [["report"], ["compare", "--profiles", "TOY,a100"]])
def test_terminal_report_shows_the_files_text_escaped_on_its_own_lines(
        tmp_path, toy_gpu_path, capsys, command):
    path = _hostile_run(tmp_path, toy_gpu_path)
    argv = [command[0], str(path), *(a.replace("TOY", str(toy_gpu_path)) for a in command[1:]),
            "--width", "400"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    _no_raw(out)
    # the newline in the model's name did not start a line: no line begins with the text
    # that followed it, and the title holds the whole escaped name
    assert not any(ln.startswith("INJECTED") for ln in out.splitlines())
    assert "mlp" + SHOWN in out.splitlines()[0]


def test_html_report_escapes_the_files_text(tmp_path, toy_gpu_path, capsys):
    path = _hostile_run(tmp_path, toy_gpu_path)
    html = tmp_path / "r.html"
    assert main(["report", str(path), "--html", str(html), "--quiet"]) == 0
    text = html.read_text()
    _no_raw(text)
    title = re.search("<title>(.*)</title>", text, re.S).group(1)
    assert "\n" not in title and "mlp" + SHOWN in title
    # the trace's unit is the file's text: escaped as HTML too (it was put in raw)
    assert "&lt;b&gt;" in text and "<b>x" not in text


def test_json_summary_keeps_the_text_as_data_with_json_escapes(tmp_path, toy_gpu_path):
    path = _hostile_run(tmp_path, toy_gpu_path)
    out = tmp_path / "r.json"
    assert main(["report", str(path), "--json", str(out), "--quiet"]) == 0
    raw = out.read_text()
    _no_raw(raw)                               # JSON writes \u001b, \r, \u202e
    assert json.loads(raw)["model"] == "mlp" + HOSTILE   # the data itself is unchanged


def test_error_line_escapes_the_text_it_quotes(monkeypatch, capsys):
    import deploy.cli as cli
    from hw_profiles.errors import NeuroedgeError

    def hostile(args):
        raise NeuroedgeError(f"profile {HOSTILE} is unknown")
    monkeypatch.setattr(cli, "cmd_profiles", hostile)
    assert main(["profiles"]) == 2
    err = capsys.readouterr().err
    assert err == f"neuroedge: error: profile {SHOWN} is unknown\n"


def test_profiles_show_prints_markup_and_bidi_text_as_written(tmp_path, toy_gpu_text, capsys):
    # the loader refuses control characters, not a bidi override or rich's markup: "[/]"
    # closed no tag and was a MarkupError traceback; "[bold]" vanished
    text = toy_gpu_text.replace('description = "', 'description = "[/] [bold]b\u202eR ', 1)
    assert text != toy_gpu_text
    path = tmp_path / "p.toml"
    path.write_text(text)
    assert main(["profiles", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[/] [bold]b\\u202eR" in out and "\u202e" not in out


def _nir(path, lif="lif"):
    import nir
    import numpy as np
    graph = nir.NIRGraph(
        nodes={"in": nir.Input({"input": np.array([2])}),
               "w": nir.Linear(weight=np.eye(2) * 2.0),
               lif: nir.LIF(tau=np.full(2, 0.01), r=np.ones(2), v_leak=np.zeros(2),
                            v_threshold=np.ones(2), v_reset=np.zeros(2)),
               "out": nir.Output({"output": np.array([2])})},
        edges=[("in", "w"), ("w", lif), (lif, "out")])
    nir.write(path, graph)
    return path


ESTIMATE = ["--stimulus", "poisson:rate=100", "--steps", "5", "--dt", "1e-3",
            "--profiles", "loihi", "--reset", "value"]


def test_estimate_table_escapes_the_files_name(tmp_path, capsys):
    # a file name may hold any byte but '/' and NUL; the table's title names the model by it
    path = _nir(tmp_path / "net\x1b[2J\nINJECTED.nir")
    assert main(["estimate", str(path), *ESTIMATE]) == 0
    out = capsys.readouterr().out
    _no_raw(out)
    assert "net\\x1b[2J\\x0aINJECTED" in out
    assert not any(ln.startswith("INJECTED") for ln in out.splitlines())


def test_estimate_refuses_a_nir_node_name_with_control_characters_in_one_line(tmp_path,
                                                                               capsys):
    # node names become ledger scopes, which are plain names: refused, the name escaped
    path = _nir(tmp_path / "hand.nir", lif="lif" + HOSTILE)
    assert main(["estimate", str(path), *ESTIMATE]) == 2
    err = capsys.readouterr().err
    _no_raw(err)
    assert err.count("\n") == 1 and err.startswith("neuroedge: error: scope ")
