"""The neuroedge CLI end to end: simulate -> run file -> report -> compare, and one-line errors."""
import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hw_profiles
import models
from deploy import export as export_mod
from deploy.cli import main
from deploy.formatting import format_energy
from deploy.outputs import atomic_output
from deploy.runfile import read_run, write_run
from models.registry import Card, Method, Outcome, RunResult, Study, Trained
from sim.artifacts import BitwiseArtifact
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
            rd = (fp["writable"] + fp["read_only"]) * fp["blocks"]
            wr = fp["writable"] * fp["blocks"]
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
    rows = {r["profile"]: r for r in json.loads(out_json.read_text())["profiles"]}
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


def test_report_stack_option(run_path, capsys, tmp_path):
    """--stack graph prices the same run without per-op dispatch: less time than eager; an
    unknown stack is a one-line error listing the stacks."""
    from deploy.runfile import read_run
    run = read_run(run_path)
    eager = run.ledger.price(run.profile, stack="eager")
    graph = run.ledger.price(run.profile, stack="graph")
    assert graph.total_latency_s < eager.total_latency_s
    capsys.readouterr()
    assert main(["report", str(run_path), "--stack", "graph"]) == 0
    assert main(["report", str(run_path), "--stack", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "eager, graph, fused" in err


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
    assert ("profile 'loihi' is a 'neuromorphic' profile; model 'mlp' runs on gpu, cpu, "
            "bitwise profiles") in capsys.readouterr().err
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
    out = capsys.readouterr().out
    assert "mlp" in out and "onnx" in out        # its export target
    assert "settings (--set KEY=VALUE): hidden, epochs, batch_size, lr, weight_decay" in out


def test_console_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "deploy.cli", "profiles", "show", "a100"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "a100" in proc.stdout


# -- safe outputs and checks before the work (issue 11 items 1-2) -------------------------
# Every case runs the real CLI in tmp_path. The registered methods' functions are replaced
# by fakes: a refusal must come before any training, so a fake that fails when called is
# the proof, and a fake that returns a tiny result keeps the write path real and fast.
# Until the other rooms are merged only mlp is registered (it exports onnx); the C target
# is exercised by a fake bitwise method whose artifact is a real packed network.
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
    run = RunResult("mlp", hw_profiles.load("a100"), "digits", {}, {"test_accuracy": 1.0},
                    _tiny_ledger())
    return write_run(tmp_path / "run.h5", run)


def _no_work(monkeypatch, name):
    """Replace ``name``'s data loading, simulate and artifact by functions that fail the
    test if called: the command had to stop before any of them."""
    def trained(*a, **k):
        raise AssertionError(f"{name} trained although the command had to stop first")
    method = models.REGISTRY[name]
    monkeypatch.setitem(models.REGISTRY, name,
                        dataclasses.replace(method, simulate=trained, artifact=trained,
                                            load_data=trained))


def _count_tiny(device):
    """What the fakes record: _tiny_ledger's counts, in the device's own ledger."""
    device.ledger.add("mac_fp32", 1000, scope="train/fc1/forward")
    device.ledger.add_bytes("offchip", read=64, write=16, scope="train")


@pytest.fixture
def fake_mlp(monkeypatch):
    """``mlp`` whose simulate records a tiny ledger on the device it is handed and loads no
    data; the profiles of those devices are recorded."""
    seen = []

    def simulate(cfg, device, data, progress):
        seen.append(device.profile)
        _count_tiny(device)
        return Outcome({"test_accuracy": 1.0})
    monkeypatch.setitem(models.REGISTRY, "mlp",
                        dataclasses.replace(models.REGISTRY["mlp"], simulate=simulate,
                                            load_data=lambda dataset, cfg: None))
    return seen


@dataclasses.dataclass
class FakeConfig:
    width: int = 3
    seed: int = 0


def _fake_method(name, *, kinds, profile, simulate, artifact=None, exports=()):
    """A method that is not registered (the test puts it in REGISTRY with monkeypatch)."""
    card = Card(name=name, title=f"fake {name}", reference="-", claim="-",
                device_kinds=kinds, datasets=("digits",), config=FakeConfig,
                presets={"quick": {"digits": {}}, "full": {"digits": {"width": 5}}},
                default_profile=profile, default_dataset="digits", exports=exports,
                metrics={"acc": "1"}, main_metric="acc")
    return Method(card, simulate, lambda *a: Study({}, {}), artifact,
                  lambda dataset, cfg: None)


def _packed_network(wb=32):
    """A 70-45-10 packed network with golden inputs (tests/deploy/test_c_export.py's)."""
    from tests.deploy.test_c_export import _network
    return _network(wb, sizes=(70, 45, 10))


@pytest.fixture
def fake_c(monkeypatch):
    """A bitwise method ``fake_c`` exporting to C: its simulate records a tiny ledger and a
    trained state, its artifact is a real packed network; the calls are counted."""
    calls = {"simulate": 0, "artifact": 0}

    def simulate(cfg, device, data, progress):
        calls["simulate"] += 1
        return Outcome({"acc": 1.0}, trained=Trained({"w": np.zeros(cfg.width)}))

    def artifact(trained, target):
        calls["artifact"] += 1
        layers, x = _packed_network()
        return BitwiseArtifact(layers, x, "cortex-m4")
    monkeypatch.setitem(models.REGISTRY, "fake_c",
                        _fake_method("fake_c", kinds=("bitwise",), profile="cortex-m4",
                                     simulate=simulate, artifact=artifact, exports=("c",)))
    return calls


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_out_dot_leaves_the_directory_byte_identical(tmp_path, monkeypatch, capsys,
                                                            fake_c, force):
    _user_files(tmp_path)
    before = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    _no_work(monkeypatch, "fake_c")
    assert main(["export", "fake_c", "--target", "c", "--out", ".", *force]) == 2
    _one_line_error(capsys, "--out '.' is a directory that is not empty")
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "sub"]


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_out_existing_dir_or_file_is_refused_before_training(tmp_path, monkeypatch,
                                                                   capsys, fake_c, force):
    d = tmp_path / "mine"
    d.mkdir()
    _user_files(d)
    f = tmp_path / "model.c"
    f.write_text("my own C")
    before = _tree(tmp_path)
    _no_work(monkeypatch, "fake_c")
    assert main(["export", "fake_c", "--target", "c", "--out", str(d), *force]) == 2
    _one_line_error(capsys, "is a directory that is not empty")
    assert main(["export", "fake_c", "--target", "c", "--out", str(f), *force]) == 2
    _one_line_error(capsys, "is a file; this export writes a directory")
    assert _tree(tmp_path) == before


def _fake_file_exporter(monkeypatch, target, payload):
    """The ``target`` exporter writes ``payload`` through the real writer (deploy.outputs)."""
    def export(art, out, *, force=False):
        with atomic_output(out, force=force) as tmp:
            tmp.write_bytes(payload)
        return out
    monkeypatch.setitem(export_mod.EXPORTERS, target, export)


def test_export_out_existing_file_needs_force(tmp_path, monkeypatch, capsys, fake_mlp):
    out = tmp_path / "mlp.onnx"
    out.write_bytes(b"my old file")
    _fake_file_exporter(monkeypatch, "onnx", b"new export")
    mlp = models.REGISTRY["mlp"]

    def with_trained(cfg, device, data, progress):   # fake_mlp's simulate, plus a state
        return dataclasses.replace(mlp.simulate(cfg, device, data, progress),
                                   trained=Trained({"w": np.zeros(2)}))
    monkeypatch.setitem(models.REGISTRY, "mlp", dataclasses.replace(
        mlp, simulate=with_trained, artifact=lambda trained, target: None))
    assert main(["export", "mlp", "--target", "onnx", "--out", str(out)]) == 2
    _one_line_error(capsys, "already exists: pass --force to replace it, or choose another --out")
    assert out.read_bytes() == b"my old file" and fake_mlp == []
    assert main(["export", "mlp", "--target", "onnx", "--out", str(out), "--force"]) == 0
    assert out.read_bytes() == b"new export" and len(fake_mlp) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.onnx"]


def test_export_into_an_unwritable_place_is_refused_before_training(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "afile").write_text("x")
    _no_work(monkeypatch, "mlp")
    assert main(["export", "mlp", "--target", "onnx",
                 "--out", str(tmp_path / "afile" / "mlp.onnx")]) == 2
    _one_line_error(capsys, "is a file, not a directory")


def test_export_missing_package_is_reported_before_training(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(export_mod.EXPORT_DEPENDENCIES, "onnx", ("neuroedge_no_such_package",))
    _no_work(monkeypatch, "mlp")
    assert main(["export", "mlp", "--target", "onnx", "--out", str(tmp_path / "x")]) == 2
    _one_line_error(capsys, "export target 'onnx' needs the Python package(s) "
                    "neuroedge_no_such_package, which are not installed: "
                    "pip install 'neuroedge[export]'")


def test_missing_fashion_mnist_is_reported_before_training(monkeypatch, capsys, tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("NEUROEDGE_DATA", str(empty))
    _no_work(monkeypatch, "mlp")
    assert main(["simulate", "mlp", "--dataset", "fashion-mnist",
                 "--out", str(tmp_path / "x.h5")]) == 2
    _one_line_error(capsys, "Fashion-MNIST: missing", "NEUROEDGE_DATA")
    # an export trains on the card's export_dataset: checked before training too
    mlp = models.REGISTRY["mlp"]
    monkeypatch.setitem(models.REGISTRY, "mlp", dataclasses.replace(
        mlp, card=dataclasses.replace(mlp.card, export_dataset="fashion-mnist")))
    assert main(["export", "mlp", "--target", "onnx", "--out", str(tmp_path / "k.onnx")]) == 2
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
    # the summary, with the energy report itself under energy_report
    assert json.loads(js.read_text())["energy_report"] == want and want["profile"] == "a100"


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
@pytest.mark.parametrize("cmd", [["simulate"], ["simulate", "mlp"],
                                 ["export", "mlp", "--target", "onnx"]])
def test_seed_out_of_range_is_one_line_exit_2(capsys, cmd, seed, needle):
    with pytest.raises(SystemExit) as exc:
        main([*cmd, "--seed", seed])
    assert exc.value.code == 2
    _one_line_error(capsys, "argument --seed: " + needle)


def test_largest_seed_is_accepted(fake_mlp, tmp_path):
    assert main(["simulate", "mlp", "--out", str(tmp_path / "r.h5"), "--seed", "4294967295"]) == 0
    assert read_run(tmp_path / "r.h5").config["seed"] == 4294967295


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
    rows = json.loads(js.read_text())["profiles"]
    assert len(rows) == 2
    # 1000 MAC at twice a100's mac_fp32 energy: +1000 x that energy; byte and static terms
    # are equal (time depends on the rates, which are unchanged)
    assert rows[1]["total_j"] - rows[0]["total_j"] == pytest.approx(1000 * A100_MAC_PJ * 1e-12,
                                                                    rel=1e-9)


def test_report_says_it_prices_the_stored_snapshot_not_the_file(tmp_path, capsys):
    """A run on a user's file is priced on the snapshot the run stored, and says so: the
    file may have changed or gone since (`--profile FILE` prices the file as it is now)."""
    mine = tmp_path / "mine.toml"
    mine.write_text(A100_TOML.read_text().replace('name = "a100"', 'name = "mine"'))
    run = write_run(tmp_path / "run.h5", RunResult("mlp", hw_profiles.load(mine), "digits",
                                                   {}, {"test_accuracy": 1.0}, _tiny_ledger()))
    snapshot = f"mine (snapshot stored in the run; file: {mine.resolve()} when simulated)"

    def report(*extra):
        capsys.readouterr()
        js = tmp_path / "r.json"
        assert main(["report", str(run), "--json", str(js), "--force", "--width", "400",
                     *extra]) == 0
        (row,) = json.loads(js.read_text())["profiles"]
        return row, capsys.readouterr()

    row, said = report()            # the file as it was: the same figures, no note
    assert row["profile"] == snapshot and f"J on {snapshot}, estimate" in said.out
    assert said.err == "" and f"run on mine (file: {mine.resolve()}))" in said.out
    total = row["total_j"]
    mine.write_text(_a100_with_double_mac().replace('name = "a100"', 'name = "mine"'))
    # the file changed: still the snapshot, and the file is not read to compare (a run file
    # never makes neuroedge read another file: its label could name any path)
    row, said = report()
    assert row["profile"] == snapshot and row["total_j"] == total and said.err == ""
    row, said = report("--profile", str(mine))     # the file as it is now, under its label
    assert row["profile"] == f"mine (file: {mine.resolve()})" and said.err == ""
    # 1000 MAC at twice the energy: +1000 x a100's mac_fp32 energy
    assert row["total_j"] - total == pytest.approx(1000 * A100_MAC_PJ * 1e-12, rel=1e-9)
    mine.unlink()
    row, said = report()            # the file is gone: the snapshot, said so, no note
    assert row["profile"] == snapshot and row["total_j"] == total and said.err == ""


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
    """--compare on another neuromorphic chip re-runs the plan there (step times depend on
    the placement), with the same config and seed; a stored ledger re-priced without that
    would keep loihi's placement."""
    from sim.neuromorphic import Network
    seen = []

    def simulate(cfg, device, data, progress):
        seen.append((device.profile.name, cfg.seed, cfg.width))
        net = Network(dt=1e-3)
        net.population("out", 4, "lif", tau_mem=0.01, v_threshold=1.0)
        device.compile(net)
        device.run(20, scope="infer")
        return Outcome({})
    monkeypatch.setitem(models.REGISTRY, "fake_snn",
                        _fake_method("fake_snn", kinds=("neuromorphic",), profile="loihi",
                                     simulate=simulate))
    out = tmp_path / "r.h5"
    assert main(["simulate", "fake_snn", "--profile", "loihi", "--out", str(out), "--seed", "4",
                 "--set", "width=7", "--compare", "loihi2,truenorth"]) == 0
    # the run, then one re-run per chip, each with the run's seed and --set
    assert seen == [("loihi", 4, 7), ("loihi2", 4, 7), ("truenorth", 4, 7)]
    # a status line: on stderr, so the report on stdout starts with its headline
    assert "re-placing and re-running fake_snn on truenorth" in capsys.readouterr().err
    # truenorth's 1 ms tick paces its 20 steps: 20 ms there, whatever the placement
    from models import runner
    from sim.execution.neuromorphic import reprice
    plan = runner.prepare(models.REGISTRY["fake_snn"], profile="loihi")
    tn = reprice(lambda q: runner.execute(dataclasses.replace(plan, profile=q)), ["truenorth"])[0]
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
    # the one row is calibration: no held-out factor is claimed, the row is counted apart
    # (the summary was the raw dict as JSON, '"heldout": {"heldout_rows": 0, ...')
    assert out.splitlines()[-2:] == [
        "summary: 1 row, 1 predicted (0 held-out, 1 calibration: fitted on), 0 not rebuildable",
        "held-out error: none (no held-out row was predicted)"]
    assert main(["validate", "--only", "nope"]) == 2
    _one_line_error(capsys, "--only nope: no such validation row")


def test_validate_closes_with_a_short_summary_and_json_keeps_every_figure(
        tmp_path, monkeypatch, capsys):
    """Before, validate's last line was its summary dict as one JSON line (2,276 characters
    for these three rows, 4,963 for all of them, nulls included); now a few lines within
    the terminal's width, the errors per device kind leaving out what no row gives
    (TrueNorth's published rows give no latency), and the whole dict in --json."""
    monkeypatch.setenv("COLUMNS", "80")
    rows = "truenorth-rate-20hz,gpu-resnet50-orin-mlperf,truenorth-tcad15-11.58hz"
    assert main(["validate", "--only", rows, "--json", str(tmp_path / "v.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    summary = json.loads((tmp_path / "v.json").read_text())["summary"]
    kinds = summary["heldout"]["device_kind_factors"]
    # x1.12 on the Orin (edge-gpu), x1.015 on TrueNorth: median x1.07, worst x1.12; the
    # Orin's latency x2.70 the only one
    assert kinds["edge-gpu"]["energy_median_factor"] == pytest.approx(1.122, abs=1e-3)
    assert kinds["neuromorphic"]["latency_median_factor"] is None
    at = out.index(next(line for line in out if line.startswith("summary: ")))
    assert out[at:] == [
        "summary: 3 rows, 3 predicted (2 held-out, 1 calibration: fitted on), 0 not",
        "  rebuildable",
        "held-out error, max(r, 1/r): energy x1.1 median, x1.1 worst; latency x2.7",
        "  median, x2.7 worst",
        "  edge-gpu (1 row): energy x1.1 median, x1.1 worst; latency x2.7 median, x2.7",
        "    worst",
        "  neuromorphic (1 row): energy x1 median, x1 worst"]


def test_version(capsys):
    from importlib import metadata
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"neuroedge {metadata.version('neuroedge')}\n"



# -- one runner: --preset, --set, --seed in the run file name (issue 12 item 3) ------------
MLP_FIELDS = "hidden, epochs, batch_size, lr, weight_decay, lr_schedule"


def test_set_is_parsed_and_recorded_in_the_run_file(tmp_path, monkeypatch, fake_mlp, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "mlp", "--set", "epochs=3", "--set", "hidden=8,4",
                 "--set", "lr=0.01"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "(quick preset, seed 0, set epochs=3, hidden=8,4, lr=0.01)" in captured.err
    name = "mlp-digits-a100-quick-seed0-epochs=3-hidden=8,4-lr=0.01"
    assert f"run file: runs/{name}.h5" in out
    run = read_run(tmp_path / "runs" / f"{name}.h5")
    # the overrides typed from MLPConfig's annotations; the rest is the quick digits preset
    # (MLPConfig's defaults: batch 32, no weight decay)
    assert run.config == {"hidden": [8, 4], "epochs": 3, "batch_size": 32, "lr": 0.01,
                          "weight_decay": 0.0, "lr_schedule": "constant", "seed": 0}
    assert run.preset == "quick"


@pytest.mark.parametrize("item, needle", [
    ("epocs=3", "--set epocs: mlp has no setting 'epocs'; did you mean 'epochs'? (neuroedge "
                "models lists them)"),
    ("xyz=3", f"--set xyz: mlp has no setting 'xyz'; fields are {MLP_FIELDS}"),
    ("seed=1", "--set seed: mlp has no setting 'seed'; give the seed with --seed"),
    ("epochs", "--set 'epochs': expected KEY=VALUE (e.g. --set epochs=3)"),
    ("epochs=x", "--set epochs: 'x' is not an integer"),
    ("lr=nan", "--set lr: 'nan' is not a finite number"),
])
@pytest.mark.parametrize("cmd", [["simulate", "mlp"], ["export", "mlp", "--target", "onnx"]])
def test_bad_set_is_a_one_line_error_before_training(tmp_path, monkeypatch, capsys, cmd, item,
                                                     needle):
    monkeypatch.chdir(tmp_path)
    _no_work(monkeypatch, "mlp")
    assert main([*cmd, "--set", item]) == 2
    err = _one_line_error(capsys, needle)
    assert err == f"neuroedge: error: {needle}\n"
    assert list(tmp_path.iterdir()) == []


def test_two_seeds_leave_two_run_files(tmp_path, monkeypatch, fake_mlp, capsys):
    monkeypatch.chdir(tmp_path)
    for seed in ("1", "2"):
        assert main(["simulate", "mlp", "--seed", seed, "--set", "epochs=2"]) == 0
    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        f"mlp-digits-a100-quick-seed{k}-epochs=2.{ext}" for k in (1, 2) for ext in ("h5", "html")]
    assert [read_run(runs / f"mlp-digits-a100-quick-seed{k}-epochs=2.h5").config["seed"]
            for k in (1, 2)] == [1, 2]
    capsys.readouterr()
    # the same seed and settings again: the default name exists, so --force is needed
    assert main(["simulate", "mlp", "--seed", "1", "--set", "epochs=2"]) == 2
    _one_line_error(capsys, "--out 'runs/mlp-digits-a100-quick-seed1-epochs=2.h5' already "
                    "exists: pass --force")
    assert len(fake_mlp) == 2
    assert main(["simulate", "mlp", "--seed", "1", "--set", "epochs=2", "--force"]) == 0
    assert len(fake_mlp) == 3


def test_full_is_an_alias_of_preset_full(tmp_path, monkeypatch, fake_mlp, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "mlp", "--full"]) == 0
    run = read_run("runs/mlp-digits-a100-full-seed0.h5")
    assert run.preset == "full"
    capsys.readouterr()
    assert main(["simulate", "mlp", "--preset", "full"]) == 2      # the same file name
    _one_line_error(capsys, "runs/mlp-digits-a100-full-seed0.h5' already exists")
    assert main(["simulate", "mlp", "--full", "--preset", "quick"]) == 2
    _one_line_error(capsys, "--full is --preset full; it contradicts --preset quick")
    assert len(fake_mlp) == 1


def test_parser_defaults_and_contract_names():
    """The default model stays DiffPC (registered by its room); the CLI's spelled-out
    presets and targets are the contract's."""
    from deploy import cli
    from models import registry
    from sim.artifacts import ARTIFACT_TYPES
    assert cli.build_parser().parse_args(["simulate"]).model == "diffpc" == cli.DEFAULT_MODEL
    assert cli.PRESETS == registry.PRESETS
    assert export_mod.TARGETS == registry.EXPORT_TARGETS
    assert set(export_mod.EXPORTERS) == set(ARTIFACT_TYPES) == set(export_mod.TARGETS)


def test_models_and_version_import_no_torch():
    """`neuroedge models` loads the cards only (each imports its method lazily): no torch,
    which alone takes seconds to import."""
    code = ("import sys; from deploy.cli import main; main(['models']); "
            "print('torch' in sys.modules, 'numba' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "False False"


def test_experiment_prints_the_study_as_json(monkeypatch, capsys, toy_gpu):
    asked = []

    def experiment(preset, seed, profiles, progress):
        asked.append((preset, seed, dict(profiles)))
        run = RunResult("mlp", toy_gpu, "digits", {"seed": seed}, {"test_accuracy": 0.5},
                        Ledger())
        return Study({"mlp": run}, {"claim_met": False, "gap": float("nan")})
    monkeypatch.setitem(models.REGISTRY, "mlp",
                        dataclasses.replace(models.REGISTRY["mlp"], experiment=experiment))
    assert main(["experiment", "mlp", "--preset", "full", "--seed", "5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert asked == [("full", 5, {"gpu": "a100"})]          # the card's study_profiles
    assert doc == {"model": "mlp", "preset": "full", "seed": 5,
                   "summary": {"claim_met": False, "gap": None},   # NaN: null, strict JSON
                   "runs": {"mlp": {"profile": "toy-gpu (file: " + str(toy_gpu.path) + ")",
                                    "dataset": "digits", "metrics": {"test_accuracy": 0.5}}}}


# -- exports from the trained model (issue 12 item 4) --------------------------------------
def _onnx_outputs(path, x):
    import onnxruntime as ort
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _mlp_logits(trained, x):
    """The MLP by hand from its stored weights: relu(x W0^T + b0) W2^T + b2 (one hidden
    layer: Linear, ReLU, Linear)."""
    a = trained.arrays
    h = np.maximum(x @ a["param/0.weight"].T + a["param/0.bias"], 0.0)
    return h @ a["param/2.weight"].T + a["param/2.bias"]


def test_export_mlp_onnx_trains_once_and_matches_torch(tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    import torch
    mlp = models.REGISTRY["mlp"]
    calls, arts = [], []

    def simulate(cfg, device, data, progress):
        calls.append(cfg)
        return mlp.simulate(cfg, device, data, progress)

    def artifact(trained, target):
        arts.append(mlp.artifact(trained, target))
        return arts[-1]
    monkeypatch.setitem(models.REGISTRY, "mlp",
                        dataclasses.replace(mlp, simulate=simulate, artifact=artifact))
    out = tmp_path / "mlp.onnx"
    assert main(["export", "mlp", "--target", "onnx", "--set", "epochs=2", "--seed", "3",
                 "--out", str(out)]) == 0
    assert [(c.epochs, c.seed) for c in calls] == [(2, 3)]     # trained once, as asked
    assert f"exported: {out}" in capsys.readouterr().out
    x = np.random.default_rng(0).normal(size=(7, 64)).astype(np.float32)   # batch 7: dynamic
    with torch.no_grad():
        want = arts[0].module(torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(_onnx_outputs(out, x), want, atol=1e-5)


def test_export_from_a_run_file_trains_not_at_all(tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    run_file = tmp_path / "run.h5"
    assert main(["simulate", "mlp", "--set", "epochs=2", "--out", str(run_file)]) == 0
    trained = read_run(run_file).trained
    assert trained.meta == {"sizes": [64, 32, 10]}
    _no_work(monkeypatch, "mlp")
    mlp = models.REGISTRY["mlp"]
    from models.baselines.mlp import card as mlp_card
    monkeypatch.setitem(models.REGISTRY, "mlp",
                        dataclasses.replace(mlp, artifact=mlp_card.artifact))
    capsys.readouterr()
    for argv, out in ((["export", "--target", "onnx"], tmp_path / "a.onnx"),
                      (["export", "mlp", "--target", "onnx"], tmp_path / "b.onnx")):
        assert main([*argv, "--from", str(run_file), "--out", str(out)]) == 0
        assert "its stored trained state; no training" in capsys.readouterr().out
        x = trained.arrays["example_x"]
        np.testing.assert_allclose(_onnx_outputs(out, x), _mlp_logits(trained, x), atol=1e-5)
    assert _onnx_outputs(tmp_path / "a.onnx", x).shape == (8, 10)   # 8 stored test samples


def test_export_from_checks_are_one_line_errors(tmp_path, tiny_run, fake_c, monkeypatch,
                                                capsys):
    _no_work(monkeypatch, "mlp")
    state = write_run(tmp_path / "state.h5",
                      RunResult("mlp", hw_profiles.load("a100"), "digits", {}, {},
                                _tiny_ledger(), trained=Trained({"w": np.zeros(2)})))
    cases = [
        (["export", "--target", "onnx", "--from", str(tiny_run)],
         f"--from '{tiny_run}' stores no trained state"),
        (["export", "fake_c", "--target", "c", "--from", str(tiny_run)],
         f"--from '{tiny_run}' is a run of model 'mlp', not 'fake_c': name 'mlp' or leave "
         "the model out"),
        (["export", "--target", "c", "--from", str(tiny_run)],
         "model 'mlp' cannot be exported to 'c'; its export targets are: onnx"),
        (["export", "--target", "onnx", "--from", str(tiny_run), "--seed", "1", "--set",
          "epochs=2"], "--set, --seed apply to training only: leave them out"),
        (["export", "--target", "onnx", "--from", str(tiny_run), "--full"],
         "--full applies to training only: leave it out"),
        (["export", "--target", "onnx", "--from", str(tmp_path / "nope.h5")],
         "run file '" + str(tmp_path / "nope.h5") + "' does not exist"),
        (["export", "--target", "onnx", "--from", str(tmp_path)], "is a directory"),
        (["export", "--target", "onnx"], "export: name the model to train and export"),
        (["export", "--target", "onnx", "--from", str(state), "--out", str(state),
          "--force"], "is the same file as the input"),
    ]
    for argv, needle in cases:
        assert main(argv) == 2, argv
        _one_line_error(capsys, needle)
    assert fake_c == {"simulate": 0, "artifact": 0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5", "state.h5"]


def test_export_c_trains_once_and_the_project_matches_the_bitwise_device(tmp_path, fake_c,
                                                                         capsys):
    from deploy.c_export import check_c_project, missing_tools
    from sim.bitwise import BitwiseDevice
    out = tmp_path / "proj"
    assert main(["export", "fake_c", "--target", "c", "--set", "width=4", "--out",
                 str(out)]) == 0
    assert fake_c == {"simulate": 1, "artifact": 1}
    assert {"model.c", "golden.h", "Makefile"} <= {p.name for p in out.iterdir()}
    if missing_tools("host"):
        pytest.skip(f"C host build: {missing_tools('host')}")
    layers, x = _packed_network()
    run = check_c_project(out, BitwiseDevice("cortex-m4").run(layers, x), target="host")
    assert run.all_match


# -- reports that lead with the answer (issue 14 item 4) -------------------------------------
@pytest.fixture(scope="module")
def simulate_mlp_quick(tmp_path_factory):
    """`neuroedge simulate mlp --preset quick` as a user runs it: stdout and stderr in one
    stream (what a terminal shows), 80 columns."""
    d = tmp_path_factory.mktemp("quick")
    env = {**os.environ, "COLUMNS": "80",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "deploy.cli", "simulate", "mlp", "--preset",
                           "quick", "--out", str(d / "run.h5")], cwd=d, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout, read_run(d / "run.h5")


def test_simulate_headline_is_in_the_first_12_lines(simulate_mlp_quick):
    text, run = simulate_mlp_quick
    head = text.splitlines()[:12]
    energy = run.ledger.price(run.profile)
    labels = [ln.split("  ")[0] for ln in head]
    for label in ("test_accuracy", "total energy", "energy per inference",
                  "energy per train sample", "latency"):
        assert label in labels, (label, head)
    joined = "\n".join(head)
    assert f"{run.metrics['test_accuracy']:.6g}" in joined
    assert f"{format_energy(energy.total_j)} on a100" in joined
    # infer and train record their samples directly: per sample = energy within / samples
    for scope in ("infer", "train"):
        per = energy.energy_within(scope) / energy.samples[scope]
        assert (f"{format_energy(per)}, {energy.energy_bound(scope)} ({scope}: "
                f"{energy.samples[scope]:,} samples)") in joined.replace("\n" + " " * 25, " ")
    # a100 eager: idle power during kernel launches is its own part, never "dynamic"
    assert f"idle during launches {format_energy(energy.launch_idle_j)}" in \
        joined.replace("\n" + " " * 25, " ")


def test_default_terminal_report_fits_60_lines_and_the_width(simulate_mlp_quick):
    text, _ = simulate_mlp_quick
    lines = text.splitlines()
    # the report, then "run file:" and "report:"; the status line "simulating ..." above it
    assert len(lines) <= 60 + 3, text
    assert max(map(len, lines)) <= 80
    assert "Profile entries" not in text and "--sources" in text


def test_report_sources_all_and_width(run_path, capsys):
    capsys.readouterr()
    assert main(["report", str(run_path), "--width", "70"]) == 0
    short = capsys.readouterr().out
    assert max(map(len, short.splitlines())) <= 70 and len(short.splitlines()) <= 60 + 1
    assert "Profile entries" not in short
    assert main(["report", str(run_path), "--width", "70", "--sources"]) == 0
    cited = capsys.readouterr().out
    assert "Profile entries of a100" in cited and "energy_pj.mac_fp32" in cited
    assert main(["report", str(run_path), "--all"]) == 0
    full = capsys.readouterr().out
    assert "Energy by scope (own charges; sub-scopes apart)" in full
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run_path), "--width", "20"])
    assert exc.value.code == 2
    _one_line_error(capsys, "argument --width: 20 is too narrow; give at least 40")


def test_json_to_stdout_is_the_only_stdout_and_leaves_no_file(run_path, capsys, tmp_path,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["report", str(run_path), "--json", "-"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)          # stdout is the JSON and nothing else
    assert "total energy" in captured.err   # the report went to stderr
    assert not (tmp_path / "-").exists() and list(tmp_path.iterdir()) == []
    run = read_run(run_path)
    energy = run.ledger.price("a100")
    assert doc["model"] == "mlp" and doc["main_metric"] == "test_accuracy"
    assert doc["metrics"]["test_accuracy"] == {"value": run.metrics["test_accuracy"],
                                               "unit": "1"}
    assert doc["metrics"]["test_loss"]["unit"] == "nats"
    row = doc["profiles"][0]
    assert row["total_j"] == pytest.approx(energy.total_j, rel=1e-12)
    assert row["per_inference_j"] == pytest.approx(
        energy.energy_within("infer") / energy.samples["infer"], rel=1e-12)
    assert row["per_train_sample_j"] == pytest.approx(
        energy.energy_within("train") / energy.samples["train"], rel=1e-12)
    assert row["latency_s"] == pytest.approx(energy.total_latency_s, rel=1e-12)
    assert doc["energy_report"]["profile"] == "a100"
    assert "neurobench" in doc   # None where sim.neurobench is missing
    # compare: one row per profile, the first the reference
    assert main(["compare", str(run_path), "--profiles", "a100,h100", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["profile"] for r in doc["profiles"]] == ["a100", "h100"]
    assert doc["profiles"][1]["relative_energy"] == pytest.approx(
        doc["profiles"][1]["total_j"] / doc["profiles"][0]["total_j"])
    assert list(tmp_path.iterdir()) == []


def test_quiet_prints_nothing_and_still_writes(tmp_path, fake_mlp, capsys):
    out = tmp_path / "r.h5"
    assert main(["simulate", "mlp", "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert out.is_file() and out.with_suffix(".html").is_file()
    assert main(["report", str(out), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    # --quiet with --json -: the JSON alone
    assert main(["simulate", "mlp", "--out", str(out), "--force", "--quiet", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["model"] == "mlp"
    # errors still print
    assert main(["report", str(tmp_path / "missing.h5"), "--quiet"]) == 2
    _one_line_error(capsys, "does not exist")


def test_simulate_compare_shows_the_comparison_in_the_terminal(tmp_path, fake_mlp, capsys):
    assert main(["simulate", "mlp", "--out", str(tmp_path / "r.h5"), "--compare",
                 "h100,x86-avx2", "--width", "100"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[:12]
    assert any(ln.startswith("vs h100 ") for ln in head)
    assert any(ln.startswith("vs x86-avx2 ") for ln in head)
    assert "Comparison across profiles (vs a100)" in out


def _arguments(parser, path=()):
    """(command path, argparse action) of every argument of every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _arguments(sub, (*path, name))
        else:
            yield path, action


def test_every_flag_of_every_subcommand_has_help():
    from deploy.cli import build_parser
    missing = [f"{' '.join(path) or 'neuroedge'} {'/'.join(a.option_strings) or a.dest}"
               for path, a in _arguments(build_parser())
               if not (a.help and a.help.strip()) or a.help == argparse.SUPPRESS]
    assert missing == []
    # and every subcommand has a help line in `neuroedge --help`
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    assert sorted(c.dest for c in sub._choices_actions if c.help) == sorted(sub.choices)
