"""A format-version-2 run file never recorded its preset (``--full`` runs existed then): it
is reported as "preset not recorded" (headline, HTML run table, ``--json`` null), never as a
quick run, and a card's quick-preset note is not put on it. The file is built as
/tmp/probe_report/make_v2.py built it: a version-3 file less its preset, facts and trained
state, its config that of a full run."""
import json

import h5py
import pytest

import deploy.runfile as runfile
from deploy import headline as hl
from deploy import report as rp
from deploy.cli import main
from deploy.errors import RunFileError
from hw_profiles import load
from models.registry import RunResult
from sim.ledger import Ledger

CARD_WITH_NOTE = "decoupled_prototypes"   # its card's preset_notes: {"quick": "smoke run: ..."}


def _v2(tmp_path, toy_gpu_path, model: str = "mlp"):
    """A version-3 run file of ``model`` rewritten as version 2 wrote it."""
    led = Ledger()
    led.add("mac_fp32", 1000, scope="infer")
    led.add_samples(4, scope="infer")
    result = RunResult(model=model, profile=load(toy_gpu_path), dataset="digits",
                       config={"epochs": 40}, metrics={"test_accuracy": 0.9}, ledger=led,
                       preset="quick")
    path = runfile.write_run(tmp_path / "v2.h5", result)
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = 2
        del f.attrs["preset"]
        for group in ("facts", "trained", "metric_units"):
            if group in f:
                del f[group]
    return path


def test_a_version_2_file_reads_with_no_preset(tmp_path, toy_gpu_path):
    run = runfile.read_run(_v2(tmp_path, toy_gpu_path))
    assert run.file.format_version == 2
    assert run.preset is None            # was "quick"
    assert hl.preset_text(run) == "preset not recorded"


def test_report_says_preset_not_recorded_in_headline_json_and_html(tmp_path, toy_gpu_path,
                                                                    capsys):
    path = _v2(tmp_path, toy_gpu_path)
    js, html = tmp_path / "r.json", tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(path), "--json", str(js), "--html", str(html),
                 "--width", "100"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("neuroedge report: mlp on digits (preset not recorded, run on ")
    assert json.loads(js.read_text())["preset"] is None
    page = html.read_text()
    assert "<td>preset</td><td>not recorded</td>" in page
    assert "<td>quick</td>" not in page


def test_no_quick_preset_note_on_a_file_that_never_recorded_its_preset(tmp_path,
                                                                       toy_gpu_path):
    path = _v2(tmp_path, toy_gpu_path, model=CARD_WITH_NOTE)
    run = runfile.read_run(path)
    report = run.ledger.price(run.profile)
    labels = [label for label, _ in rp.headline(run, [report])]
    assert not any("preset" in label for label in labels), labels
    assert "smoke run" not in " ".join(v for _, v in rp.headline(run, [report]))
    # the same run recorded as quick gets the card's note
    run.preset = "quick"
    assert dict(rp.headline(run, [report]))["quick preset"].startswith("smoke run")


def test_a_run_without_a_recorded_preset_is_not_written_as_one(tmp_path, toy_gpu_path):
    run = runfile.read_run(_v2(tmp_path, toy_gpu_path))
    with pytest.raises(RunFileError, match=r"preset is None; a run file records one of "
                                           r"quick, full, own"):
        runfile.write_run(tmp_path / "again.h5", run)
    assert not (tmp_path / "again.h5").exists()
