"""The neuroedge CLI end to end: simulate -> run file -> report -> compare, and one-line errors."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hw_profiles
import models
from deploy import export as export_mod
from deploy.cli import main
from deploy.formatting import format_energy
from deploy.runfile import read_run, write_run
from models.registry import RunResult
from sim.ledger import Ledger

COMPARED = ["a100", "h100", "x86-avx2", "jetson-orin"]


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run.h5"
    assert main(["simulate", "mlp", "--profile", "a100", "--dataset", "digits",
                 "--out", str(out)]) == 0
    return out


def _hand_priced_total(run, profile_name: str) -> float:
    """Price the run's ledger by hand from the profile's numbers (sim/execution/gpu_cpu.py):
    ops and bytes (offchip bytes at the L2/LLC when the block's footprint fits it, plus one
    DRAM load of the footprint per block), idle power over max(Hockney compute, memory) plus
    kernel launches x launch_s."""
    p = hw_profiles.load(profile_name)
    idle, ex = p.static_power_w.value, p.execution
    cache = p.memory["shared"].capacity_bytes.value
    fps = run.ledger.footprints()
    fits = {b: fp["writable"] + fp["read_only"] <= cache for b, fp in fps.items()}
    total = 0.0
    for scope in run.ledger.scopes():
        ops = run.ledger.ops(scope)
        k = ops.pop("kernel_launch", 0)
        compute_s = memory_s = 0.0
        for op, n in ops.items():
            total += n * p.energy_pj[op].value * 1e-12
            compute_s += n / p.throughput[op].value
        if k and ops:
            compute_s *= 1 + ex["half_perf_ops"].value * k / sum(ops.values())
        blocks = [b for b in fps if scope == b or scope.startswith(b + "/")]
        cached = bool(blocks) and fits[max(blocks, key=len)]
        for (level, direction), n in run.ledger.bytes(scope).items():
            mem = p.memory["shared" if cached and level == "offchip" else level]
            q = mem.read_pj_per_byte if direction == "read" else mem.write_pj_per_byte
            total += n * q.value * 1e-12
            memory_s += n / mem.bandwidth_bytes_per_s.value
        total += idle * (max(compute_s, memory_s) + k * ex["launch_s"].value)
    dram = p.memory["offchip"]
    for b, fp in fps.items():
        if fits[b]:
            rd, wr = (fp["writable"] + fp["read_only"]) * fp["blocks"], fp["writable"] * fp["blocks"]
            total += (rd * dram.read_pj_per_byte.value + wr * dram.write_pj_per_byte.value) * 1e-12
            total += idle * (rd + wr) / dram.bandwidth_bytes_per_s.value
    return total


def test_simulate_writes_run_and_html(run_path, capsys):
    run = read_run(run_path)
    assert run.model == "mlp" and run.profile.name == "a100" and run.dataset == "digits"
    assert run.metrics["test_accuracy"] >= 0.95
    assert run_path.with_suffix(".html").is_file()


def test_compare_prints_energies_as_profiles_say(run_path, capsys, tmp_path):
    capsys.readouterr()
    out_json = tmp_path / "cmp.json"
    assert main(["compare", str(run_path), "--profiles", ",".join(COMPARED),
                 "--json", str(out_json)]) == 0
    table = capsys.readouterr().out
    run = read_run(run_path)
    rows = {r["profile"]: r for r in json.loads(out_json.read_text())}
    assert list(rows) == COMPARED
    for name in COMPARED:
        expected = _hand_priced_total(run, name)
        assert rows[name]["total_j"] == pytest.approx(expected, rel=1e-9)
        assert format_energy(expected) in table
    # profiles with different numbers give different energies
    assert len({round(r["total_j"], 15) for r in rows.values()}) == len(COMPARED)
    assert rows["a100"]["relative_energy"] == pytest.approx(1.0)
    assert rows["h100"]["relative_energy"] == pytest.approx(
        rows["h100"]["total_j"] / rows["a100"]["total_j"])


def test_report_command(run_path, capsys, tmp_path):
    capsys.readouterr()
    html = tmp_path / "r.html"
    assert main(["report", str(run_path), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "a100" in out and "What these figures are" in out and "estimate" in out
    assert html.read_text().count("data:image/png;base64,") >= 3


def test_compare_on_wrong_kind_is_one_line_error(run_path, capsys):
    capsys.readouterr()
    assert main(["compare", str(run_path), "--profiles", "a100,loihi"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("neuroedge: error: profile 'loihi' has no energy for op(s) ")
    assert "mac_fp32" in err


def test_corrupt_run_file_is_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 20)
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error: run file") and err.count("\n") == 1
    assert "Traceback" not in err


def test_unknown_model_and_profile(capsys, tmp_path):
    assert main(["simulate", "nope", "--out", str(tmp_path / "x.h5")]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err
    assert main(["simulate", "mlp", "--profile", "loihi", "--out", str(tmp_path / "x.h5")]) == 2
    assert "runs on gpu, cpu, bitwise profiles; 'loihi' is 'neuromorphic'" in capsys.readouterr().err
    assert main(["profiles", "show", "nope"]) == 2
    assert "unknown hardware profile 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists()


def test_profiles_and_models_listings(capsys):
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    for name in ("loihi", "truenorth", "cortex-m4", "a100", "jetson-orin"):
        assert name in out
    assert main(["profiles", "show", "loihi"]) == 0
    out = capsys.readouterr().out
    assert "energy_pj.synop" in out and "23.6" in out and "10.1109/MM.2018.112130359" in out
    assert main(["models"]) == 0
    assert "mlp" in capsys.readouterr().out


def test_console_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "deploy.cli", "profiles", "show", "a100"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "a100" in proc.stdout


# -- safe outputs and checks before the work (issue 11 items 1-2) -------------------------
# Every case runs the real CLI in tmp_path. The model cards' simulate/export are replaced
# by fakes: a refusal must come before any training, so a fake that fails when called is
# the proof, and a fake that returns a tiny result keeps the write path real and fast.
A100_TOML = Path(hw_profiles.__file__).parent / "data" / "a100.toml"

A100_MAC_PJ = hw_profiles.load("a100").energy_pj["mac_fp32"].value


def _a100_mac_line(factor: float = 1) -> str:
    return f"mac_fp32 = {{ value = {A100_MAC_PJ * factor:g}"


def _a100_with_double_mac() -> str:
    """The shipped a100.toml with mac_fp32's energy doubled (a user's own numbers)."""
    text = A100_TOML.read_text()
    assert _a100_mac_line() in text   # the edit below must change something
    return text.replace(_a100_mac_line(), _a100_mac_line(2))



def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(Path(root).rglob("*"))
            if p.is_file()}


def _user_files(d):
    (d / "notes.txt").write_text("my notes")
    (d / "sub").mkdir()
    (d / "sub" / "data.csv").write_text("1,2,3\n")


def _tiny_ledger():
    led = Ledger()
    led.add("mac_fp32", 1000, scope="train/fc1/forward")
    led.add_bytes("offchip", read=64, write=16, scope="train")
    return led


@pytest.fixture
def tiny_run(tmp_path):
    """A real run file of a tiny a100 ledger, written without any training."""
    return write_run(tmp_path / "run.h5", model="mlp", profile="a100", dataset="digits",
                     config={}, metrics={"test_accuracy": 1.0}, ledger=_tiny_ledger())


def _no_work(monkeypatch, name):
    """Replace ``name``'s simulate and export by functions that fail the test if called."""
    def trained(*a, **k):
        raise AssertionError(f"{name} trained although the command had to stop first")
    card = models.REGISTRY[name]
    monkeypatch.setitem(models.REGISTRY, name,
                        dataclasses.replace(card, simulate=trained, export=trained))


@pytest.fixture
def fake_mlp(monkeypatch):
    """``mlp`` whose simulate returns a tiny result on the profile it is handed; the
    profiles handed to it are recorded."""
    seen = []

    def simulate(profile, dataset, seed, quick, progress):
        seen.append(profile)
        return RunResult("mlp", profile, dataset, {"seed": seed},
                         {"test_accuracy": 1.0}, _tiny_ledger())
    monkeypatch.setitem(models.REGISTRY, "mlp",
                        dataclasses.replace(models.REGISTRY["mlp"], simulate=simulate))
    return seen


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_out_dot_leaves_the_directory_byte_identical(tmp_path, monkeypatch, capsys,
                                                            force):
    _user_files(tmp_path)
    before = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    _no_work(monkeypatch, "bep")
    assert main(["export", "bep", "--target", "c", "--out", ".", *force]) == 2
    _one_line_error(capsys, "--out '.' is a directory that is not empty")
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "sub"]


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_out_existing_dir_or_file_is_refused_before_training(tmp_path, monkeypatch,
                                                                   capsys, force):
    d = tmp_path / "mine"
    d.mkdir()
    _user_files(d)
    f = tmp_path / "model.c"
    f.write_text("my own C")
    before = _tree(tmp_path)
    _no_work(monkeypatch, "bep")
    assert main(["export", "bep", "--target", "c", "--out", str(d), *force]) == 2
    _one_line_error(capsys, "is a directory that is not empty")
    assert main(["export", "bep", "--target", "c", "--out", str(f), *force]) == 2
    _one_line_error(capsys, "is a file; this export writes a directory")
    assert _tree(tmp_path) == before


def _fake_file_export(monkeypatch, name, payload):
    """``name``'s export writes ``payload`` through the real writer (deploy.export)."""
    def export(target, out, *, seed, quick, progress, force=False):
        with export_mod.atomic_output(out, force=force) as tmp:
            tmp.write_bytes(payload)
        return out
    monkeypatch.setitem(models.REGISTRY, name,
                        dataclasses.replace(models.REGISTRY[name], export=export))


def test_export_out_existing_file_needs_force(tmp_path, monkeypatch, capsys):
    out = tmp_path / "cuba.nir"
    out.write_bytes(b"my old file")
    _fake_file_export(monkeypatch, "snn_cuba", b"new export")
    assert main(["export", "snn_cuba", "--target", "nir", "--out", str(out)]) == 2
    _one_line_error(capsys, "already exists: pass --force to replace it, or choose another --out")
    assert out.read_bytes() == b"my old file"
    assert main(["export", "snn_cuba", "--target", "nir", "--out", str(out), "--force"]) == 0
    assert out.read_bytes() == b"new export"
    assert [p.name for p in tmp_path.iterdir()] == ["cuba.nir"]


def test_export_into_an_unwritable_place_is_refused_before_training(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "afile").write_text("x")
    _no_work(monkeypatch, "snn_cuba")
    assert main(["export", "snn_cuba", "--target", "nir",
                 "--out", str(tmp_path / "afile" / "cuba.nir")]) == 2
    _one_line_error(capsys, "is a file, not a directory")


def test_export_missing_package_is_reported_before_training(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(export_mod.EXPORT_DEPENDENCIES, "nir", ("neuroedge_no_such_package",))
    _no_work(monkeypatch, "snn_cuba")
    assert main(["export", "snn_cuba", "--target", "nir", "--out", str(tmp_path / "x")]) == 2
    _one_line_error(capsys, "neuroedge_no_such_package", "pip install 'neuroedge[export]'")


def test_missing_fashion_mnist_is_reported_before_training(monkeypatch, capsys, tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("NEUROEDGE_DATA", str(empty))
    for name in ("tversky", "klas"):
        _no_work(monkeypatch, name)
        assert main(["simulate", name, "--out", str(tmp_path / "x.h5")]) == 2
        _one_line_error(capsys, "Fashion-MNIST: missing", "NEUROEDGE_DATA")
    assert main(["export", "klas", "--target", "onnx", "--out", str(tmp_path / "k.onnx")]) == 2
    _one_line_error(capsys, "Fashion-MNIST: missing")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_report_html_or_json_onto_the_run_file_is_refused(tiny_run, capsys):
    before = tiny_run.read_bytes()
    for opt in ("--html", "--json"):
        for force in ([], ["--force"]):
            assert main(["report", str(tiny_run), opt, str(tiny_run), *force]) == 2
            _one_line_error(capsys, f"{opt} '{tiny_run}' is the same file as the input")
            assert tiny_run.read_bytes() == before
    assert main(["compare", str(tiny_run), "--profiles", "a100", "--json", str(tiny_run)]) == 2
    _one_line_error(capsys, "is the same file as the input")
    assert tiny_run.read_bytes() == before


def test_report_outputs_that_are_directories_or_unwritable(tiny_run, capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    cases = [(["report", str(tiny_run), "--html", str(tmp_path)], "is a directory"),
             (["report", str(tiny_run), "--json", str(tmp_path / "afile" / "r.json")],
              "is a file, not a directory"),
             (["compare", str(tiny_run), "--profiles", "a100", "--html", str(tmp_path)],
              "is a directory"),
             (["report", str(tiny_run), "--html", str(tmp_path / "r.x"),
               "--json", str(tmp_path / "r.x")], "are the same file")]
    for argv, needle in cases:
        assert main(argv) == 2
        _one_line_error(capsys, needle)
        assert capsys.readouterr().out == ""   # refused before the report was printed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "run.h5"]


def test_report_existing_json_needs_force(tiny_run, capsys, tmp_path):
    js = tmp_path / "e.json"
    js.write_text("mine")
    assert main(["report", str(tiny_run), "--json", str(js)]) == 2
    _one_line_error(capsys, "--json", "already exists: pass --force")
    assert js.read_text() == "mine"
    assert main(["report", str(tiny_run), "--json", str(js), "--force"]) == 0
    run = read_run(tiny_run)
    want = json.loads(json.dumps(run.ledger.price(run.profile).to_dict()))
    assert json.loads(js.read_text()) == want and want["profile"] == "a100"


def test_directory_given_as_an_input_is_named_as_one(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    _one_line_error(capsys, "is a directory; pass the path of a run file")
    assert main(["profiles", "show", str(tmp_path)]) == 2
    _one_line_error(capsys, "is a directory; pass a shipped profile name")


def test_simulate_out_and_html_onto_one_file_is_refused_before_training(tmp_path, monkeypatch,
                                                                        capsys):
    _no_work(monkeypatch, "mlp")
    x = tmp_path / "X.h5"
    assert main(["simulate", "mlp", "--out", str(x), "--html", str(x)]) == 2
    _one_line_error(capsys, "are the same file")
    assert main(["simulate", "mlp", "--out", str(tmp_path / "X.html")]) == 2   # html default
    _one_line_error(capsys, "are the same file")
    assert list(tmp_path.iterdir()) == []


def test_simulate_unusable_out_is_refused_before_training(tmp_path, monkeypatch, capsys):
    _no_work(monkeypatch, "mlp")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "old.h5").write_bytes(b"an earlier run")
    before = _tree(tmp_path)
    for out, needle in ((tmp_path, "is a directory"),
                        (tmp_path / "afile" / "run.h5", "is a file, not a directory"),
                        (tmp_path / "old.h5", "already exists: pass --force")):
        assert main(["simulate", "mlp", "--out", str(out)]) == 2
        _one_line_error(capsys, needle)
    assert _tree(tmp_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode-555 directory anyway; "
                    "test_simulate_unusable_out_is_refused_before_training covers it")
def test_simulate_read_only_out_is_refused_before_training(tmp_path, monkeypatch, capsys):
    _no_work(monkeypatch, "mlp")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert main(["simulate", "mlp", "--out", str(ro / "run.h5")]) == 2
        _one_line_error(capsys, "cannot write in directory")
    finally:
        ro.chmod(0o755)


def test_simulate_existing_run_file_is_replaced_with_force(tmp_path, fake_mlp, capsys):
    out = tmp_path / "run.h5"
    out.write_bytes(b"an earlier run")
    assert main(["simulate", "mlp", "--profile", "a100", "--out", str(out)]) == 2
    _one_line_error(capsys, "--out", "already exists")
    assert fake_mlp == [] and out.read_bytes() == b"an earlier run"
    assert main(["simulate", "mlp", "--profile", "a100", "--out", str(out), "--force"]) == 0
    assert read_run(out).model == "mlp" and out.with_suffix(".html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5", "run.html"]


@pytest.mark.parametrize("compare, needle", [
    ("a100,nope", "unknown hardware profile 'nope'"),
    ("h100,loihi", "--compare 'loihi' is a 'neuromorphic' profile"),
    ("h100,h100", "profile 'h100' is listed twice (entries 1 and 2"),
    (",", "expected a comma-separated list"),
])
def test_bad_compare_is_refused_before_training(tmp_path, monkeypatch, capsys, compare, needle):
    _no_work(monkeypatch, "mlp")
    assert main(["simulate", "mlp", "--out", str(tmp_path / "r.h5"), "--compare", compare]) == 2
    _one_line_error(capsys, needle)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed, needle", [
    ("-1", "-1 is out of range; seeds are integers 0..4294967295"),
    ("99999999999999999999999", "99999999999999999999999 is out of range"),
    ("4294967296", "4294967296 is out of range"),
    ("1.5", "'1.5' is not an integer seed"),
])
@pytest.mark.parametrize("cmd", [["simulate", "snn_cuba"], ["simulate", "bep"],
                                 ["export", "bep", "--target", "c"]])
def test_seed_out_of_range_is_one_line_exit_2(capsys, cmd, seed, needle):
    with pytest.raises(SystemExit) as exc:
        main([*cmd, "--seed", seed])
    assert exc.value.code == 2
    _one_line_error(capsys, "argument --seed: " + needle)


def test_largest_seed_is_accepted(fake_mlp, tmp_path):
    assert main(["simulate", "mlp", "--out", str(tmp_path / "r.h5"), "--seed", "4294967295"]) == 0
    assert read_run(tmp_path / "r.h5").config == {"seed": 4294967295}


def test_duplicate_profiles_in_compare(tiny_run, capsys, tmp_path):
    assert main(["compare", str(tiny_run), "--profiles", "a100,a100"]) == 2
    _one_line_error(capsys, "--profiles: profile 'a100' is listed twice (entries 1 and 2")
    assert main(["compare", str(tiny_run), "--profiles", f"a100,{A100_TOML}"]) == 2
    _one_line_error(capsys, "profile 'a100' is listed twice")
    # a user file that keeps the shipped name is another profile: two rows
    mine = tmp_path / "a100.toml"
    mine.write_text(_a100_with_double_mac())
    js = tmp_path / "rows.json"
    assert main(["compare", str(tiny_run), "--profiles", f"a100,{mine}", "--json", str(js)]) == 0
    rows = json.loads(js.read_text())
    assert len(rows) == 2
    # 1000 MAC at twice a100's mac_fp32 energy: +1000 x that energy; byte and static terms
    # are equal (time depends on the rates, which are unchanged)
    assert rows[1]["total_j"] - rows[0]["total_j"] == pytest.approx(1000 * A100_MAC_PJ * 1e-12,
                                                                    rel=1e-9)


@pytest.mark.parametrize("name", ["my-gpu", "a100"])
def test_users_profile_file_is_the_profile_used(tmp_path, fake_mlp, name):
    mine = tmp_path / "mine.toml"
    mine.write_text(A100_TOML.read_text().replace('name = "a100"', f'name = "{name}"')
                    .replace(_a100_mac_line(), _a100_mac_line(2)))
    out = tmp_path / "r.h5"
    assert main(["simulate", "mlp", "--profile", str(mine), "--out", str(out)]) == 0
    (handed,) = fake_mlp
    assert handed.path == str(mine) and handed.energy_pj["mac_fp32"].value == 2 * A100_MAC_PJ
    run = read_run(out)
    assert run.profile.name == name and run.profile.energy_pj["mac_fp32"].value == 2 * A100_MAC_PJ


def test_report_into_a_closed_pipe_is_quiet(tiny_run):
    """`neuroedge report RUN.h5 | head -1`: the reader leaves before the report is written."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "deploy.cli", "report", str(tiny_run)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()                  # no reader: the child's first write gets EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""
    if shutil.which("sh") and shutil.which("head"):
        cmd = f"{sys.executable} -m deploy.cli report {tiny_run} | head -1"
        sh = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env,
                            timeout=120, check=False)
        assert sh.returncode == 0 and sh.stderr == "" and sh.stdout.count("\n") == 1


def test_simulate_compare_re_places_a_spiking_run_on_each_chip(tmp_path, monkeypatch, capsys):
    """--compare on another neuromorphic chip re-runs the model there (step times depend on
    the placement); a stored ledger re-priced without that would keep loihi's placement."""
    from sim.neuromorphic import Network, NeuromorphicDevice
    seen = []

    def simulate(profile, dataset, seed, quick, progress):
        seen.append(profile.name)
        net = Network(dt=1e-3)
        net.population("out", 4, "lif", tau_mem=0.01, v_threshold=1.0)
        dev = NeuromorphicDevice(profile)
        dev.compile(net)
        dev.run(20, scope="infer")
        return RunResult("snn_cuba", profile, dataset, {"seed": seed}, {}, dev.ledger)
    monkeypatch.setitem(models.REGISTRY, "snn_cuba",
                        dataclasses.replace(models.REGISTRY["snn_cuba"], simulate=simulate))
    out = tmp_path / "r.h5"
    assert main(["simulate", "snn_cuba", "--profile", "loihi", "--out", str(out),
                 "--compare", "loihi2,truenorth"]) == 0
    assert seen == ["loihi", "loihi2", "truenorth"]   # the run, then one re-run per chip
    assert "re-placing and re-running snn_cuba on truenorth" in capsys.readouterr().out
    # truenorth's 1 ms tick paces its 20 steps: 20 ms there, whatever the placement
    from sim.neuromorphic.timing import reprice
    tn = reprice(lambda p: simulate(p, "va-cuba", 0, True, None), ["truenorth"])[0]
    assert tn.total_latency_s == pytest.approx(20e-3)


def test_realtime_on_a_profile_without_step_times_is_refused_before_training(
        tmp_path, monkeypatch, capsys):
    _no_work(monkeypatch, "mlp")
    assert main(["simulate", "mlp", "--out", str(tmp_path / "r.h5"), "--realtime"]) == 2
    _one_line_error(capsys, "--realtime: profile 'a100' (gpu) has no per-core step-time model")
    assert list(tmp_path.iterdir()) == []


def test_validate_prints_rows_with_sources_and_refuses_unknown_ids(capsys):
    assert main(["validate", "--only", "truenorth-rate-20hz"]) == 0
    out = capsys.readouterr().out
    # predicted / measured for TrueNorth's published 26 pJ per synaptic event (calibration)
    assert "truenorth-rate-20hz" in out and "source: P. A. Merolla et al." in out
    assert main(["validate", "--only", "nope"]) == 2
    _one_line_error(capsys, "--only nope: no such validation row")


def test_version(capsys):
    from importlib import metadata
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"neuroedge {metadata.version('neuroedge')}\n"
