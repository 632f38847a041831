"""The neuroedge CLI end to end: simulate -> run file -> report -> compare, and one-line errors."""
import json
import subprocess
import sys

import pytest

import hw_profiles
from deploy.cli import main
from deploy.formatting import format_energy
from deploy.runfile import read_run

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
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "a100" in proc.stdout
