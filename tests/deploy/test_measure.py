"""`neuroedge measure FILE.py:factory`: predicted and measured side by side on this machine."""
import itertools
import types

import pytest
import torch

from deploy.cli import main
from deploy.estimate import estimate
from deploy.measure import NvmlEnergy, measure_energy, run_measure, time_calls

MLP = '''
import torch.nn as nn


def make():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
'''


@pytest.fixture
def user_file(tmp_path):
    p = tmp_path / "mlp.py"
    p.write_text(MLP)
    return p


def test_median_and_spread_from_a_fake_clock():
    # the first warm-up call is timed alone (-5, 95: 100), the second is not; then the fake
    # clock returns 0,3 | 10,11 | 20,27 | 30,32 | 40,41: durations 3,1,7,2,1
    ticks = iter([-5, 95, 0, 3, 10, 11, 20, 27, 30, 32, 40, 41])
    calls = []
    t = time_calls(lambda: calls.append(1), warmup=2, repeats=5, clock=lambda: next(ticks))
    # sorted durations 1,1,2,3,7 -> median 2; spread 1..7; 2 warm-up + 5 timed calls
    assert (t.median_s, t.min_s, t.max_s, t.repeats, t.first_s) == (2, 1, 7, 5, 100)
    assert len(calls) == 7
    # no warm-up: the first call is the first timed one (duration 3)
    ticks = iter([0, 3, 10, 11])
    assert time_calls(lambda: None, warmup=0, repeats=2, clock=lambda: next(ticks)).first_s == 3


def test_nvml_path_with_an_injected_pynvml():
    # a counter in mJ that grows 500 mJ per call: 4 calls -> 2000 mJ = 2 J -> 0.5 J per call
    counter = itertools.count(start=10_000, step=500)
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: ("gpu", i),
        nvmlDeviceGetTotalEnergyConsumption=lambda h: state["mj"])
    state = {"mj": next(counter)}

    def call():
        state["mj"] = next(counter)

    meter = NvmlEnergy(fake)
    assert measure_energy(call, meter, repeats=4) == pytest.approx(0.5)


def test_measure_cpu_mlp_predicted_and_measured_present(user_file, monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    r = run_measure(model, (1, 16), "x86-avx2", device="cpu", warmup=1, repeats=3,
                    meter_for=lambda d: (None, "no counter in this test"))
    want = estimate(model, (1, 16), profiles="x86-avx2").rows()[0]
    assert r["predicted_latency_s"] == want["latency_s"] > 0
    assert r["predicted_energy_j"] == want["total_j"] > 0
    assert r["latency_min_s"] <= r["measured_latency_s"] <= r["latency_max_s"]
    assert r["measured_latency_s"] > 0 and r["measured_energy_j"] is None
    assert r["energy_note"].startswith("energy is not measurable here")


def test_cli_prints_both_and_the_energy_line(user_file, capsys, monkeypatch):
    # this machine's RAPL may or may not be readable: pretend it is not
    monkeypatch.setattr("deploy.measure.RAPL_ENERGY", user_file.parent / "no_rapl")
    assert main(["measure", f"{user_file}:make", "--input-shape", "1,16", "--profile",
                 "x86-avx2", "--device", "cpu", "--repeats", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "latency s" in out and "predicted" in out and "measured" in out
    assert "energy is not measurable here: no readable RAPL counter" in out


def test_cli_measures_a_language_model_on_token_ids(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("deploy.measure.RAPL_ENERGY", tmp_path / "no_rapl")
    f = tmp_path / "lm.py"
    f.write_text("from torch import nn\n\n\ndef make():\n"
                 "    return nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 50))\n")
    assert main(["measure", f"{f}:make", "--input-shape", "2,12", "--input-dtype", "int64",
                 "--profile", "x86-avx2", "--device", "cpu", "--repeats", "3",
                 "--warmup", "1"]) == 0
    assert "predicted" in capsys.readouterr().out


@pytest.mark.parametrize("spec, profile, want", [
    ("{f}:nope", "x86-avx2", "has no 'nope'"),
    ("{f}:make", "nosuch", "unknown hardware profile 'nosuch'"),
])
def test_bad_input_one_line(user_file, capsys, spec, profile, want):
    assert main(["measure", spec.format(f=user_file), "--input-shape", "1,16",
                 "--profile", profile, "--device", "cpu"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and want in err


def test_hockney_fit_recovers_peak_and_half_perf():
    import numpy as np

    from deploy.calibrate import fit_hockney
    # times built from peak 1e10 MAC/s, n_1/2 = 5e4, launch 2e-6 s:
    # t = 2e-6 + (n + 5e4) / 1e10, e.g. n = 1e6 -> 2e-6 + 1.05e-4 = 1.07e-4 s
    macs = np.array([4096.0, 32768.0, 262144.0, 2097152.0])
    secs = 2e-6 + (macs + 5e4) / 1e10
    peak, n_half = fit_hockney(macs, secs, 2e-6)
    assert peak == pytest.approx(1e10, rel=1e-9) and n_half == pytest.approx(5e4, rel=1e-6)


@pytest.fixture
def one_torch_thread():
    """A second core busy with other work stalls a two-thread GEMM for a scheduler slice
    (8 ms for n = 64, every repeat): the fit then refuses the machine, as it should on a
    busy one; the test wants a measurement, which one thread gives under load too."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_calibrate_writes_a_measured_profile_that_prices(tmp_path, user_file, capsys,
                                                         monkeypatch, one_torch_thread):
    import tomllib

    import deploy.calibrate as cal
    from hw_profiles.loader import load
    monkeypatch.setattr(cal, "GEMM_SIZES", (16, 32, 64))   # keep the test short
    monkeypatch.setattr("deploy.measure.RAPL_ENERGY", tmp_path / "no_rapl")
    out = tmp_path / "mine.toml"
    args = ["measure", "--calibrate", "--profile", "x86-avx2", "--out", str(out),
            "--device", "cpu", "--repeats", "3"]
    assert main(args) == 0
    assert "idle power is not measurable here" in capsys.readouterr().out
    doc = tomllib.loads(out.read_text())
    for q in (doc["execution"]["launch_s"], doc["execution"]["half_perf_ops"],
              doc["throughput"]["mac_fp32"]):
        assert q["provenance"] == "measured" and "UTC on " in q["note"]
    assert doc["static"]["power_w"]["provenance"] == "measured"   # x86-avx2's own, kept
    prof = load(str(out))
    assert prof.name == "mine"
    assert main(["measure", f"{user_file}:make", "--input-shape", "1,16", "--profile",
                 str(out), "--device", "cpu", "--repeats", "2"]) == 0
    assert "predicted on mine" in capsys.readouterr().out
    assert main(args) == 0                    # its own file: replaced without --force


def test_calibrate_refuses_a_file_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "notes.toml"
    out.write_text("# mine\n")
    assert main(["measure", "--calibrate", "--profile", "x86-avx2", "--out", str(out),
                 "--repeats", "1"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not written by measure --calibrate" in err
    assert out.read_text() == "# mine\n"
    # refused before any measurement: on a busy machine the GEMM fit's own refusal came
    # first (the file was checked only when writing)
    import deploy.calibrate as cal

    def never(*a, **k):
        raise AssertionError("measured before the output was checked")
    monkey = pytest.MonkeyPatch()
    monkey.setattr(cal, "calibrate", never)
    try:
        assert main(["measure", "--calibrate", "--profile", "x86-avx2", "--out", str(out),
                     "--repeats", "1"]) == 2
    finally:
        monkey.undo()


def test_measure_takes_a_torch_export_module(tmp_path, capsys, monkeypatch):
    """``torch.export.export(...).module()`` refuses ``.eval()`` (NotImplementedError),
    which measure called on it: a traceback before."""
    monkeypatch.setattr("deploy.measure.RAPL_ENERGY", tmp_path / "no_rapl")
    f = tmp_path / "exported.py"
    f.write_text("import torch\nfrom torch import nn\n\n\ndef make():\n"
                 "    net = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))\n"
                 "    return torch.export.export(net, (torch.zeros(2, 16),)).module()\n")
    assert main(["measure", f"{f}:make", "--input-shape", "2,16", "--profile", "x86-avx2",
                 "--device", "cpu", "--repeats", "3", "--warmup", "1"]) == 0
    assert "predicted" in capsys.readouterr().out


def test_hockney_fit_refuses_timings_that_follow_no_curve():
    """Seen on a busy machine: n = 64 to 512 all took 8 ms. The least-squares line through
    them was written as this machine's GEMM rate, pricing a model 5.4x its measured time;
    the fit is now refused when a point is more than 3x from it."""
    import numpy as np

    from deploy.calibrate import fit_hockney
    from sim.errors import ModelError
    macs = np.array([16.0, 32.0, 64.0, 128.0, 256.0, 512.0]) ** 3
    secs = np.array([2e-5, 1e-4, 8e-3, 8e-3, 8e-3, 8.01e-3])
    with pytest.raises(ModelError, match=r"GEMM timings do not follow .*more than 3x apart\); "
                                         r"rerun on an idle machine"):
        fit_hockney(macs, secs, 1.2e-6)


def test_calibrating_from_a_profile_of_another_kind_is_refused_first(tmp_path, capsys,
                                                                   monkeypatch):
    # it ran the microbenchmarks, then blamed the output's schema (loihi) or wrote a
    # "bitwise"/"gpu" profile holding this CPU's rates (cortex-m4, a100 on --device cpu)
    import deploy.calibrate as cal
    monkeypatch.setattr(cal, "gemm_times", lambda *a, **k: pytest.fail("benchmarked"))
    for base in ("loihi", "cortex-m4", "a100"):
        out = tmp_path / f"{base}.toml"
        assert main(["measure", "--calibrate", "--profile", base, "--out", str(out),
                     "--device", "cpu"]) == 2
        err = capsys.readouterr().err
        assert f"--profile '{base}' is a" in err and "start from a cpu profile" in err
        assert not out.exists()


class _FailsLater(torch.nn.Module):
    """Runs twice (the count, on a copy, and the first timed call), then raises."""

    def __init__(self):
        super().__init__()
        self.fc, self.calls = torch.nn.Linear(4, 2), 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError(f"boom on call {self.calls}")
        return self.fc(x)


def test_a_forward_failing_in_the_timed_calls_is_one_line():
    # was a raw traceback: the count ran on a copy, the timed calls on the model itself
    from deploy.measure import run_measure
    from sim.errors import ModelError
    with pytest.raises(ModelError, match=r"_FailsLater forward failed .* timed on cpu .*boom "
                                         r"on call"):
        run_measure(_FailsLater(), (1, 4), "x86-avx2", device="cpu", warmup=1, repeats=3,
                    meter_for=lambda device: (None, "no counter"))


def test_an_energy_counter_that_does_not_move_is_no_reading():
    """A counter that did not tick in the window (RAPL updates about once a millisecond,
    20 calls of 20 us are 0.4 ms) was a ZeroDivisionError in the table; one that wrapped
    printed negative joules. Both are no reading, said so."""
    from deploy.measure import format_measure, run_measure

    class Stuck:
        name = "RAPL package"

        def read_j(self):
            return 123.0

    r = run_measure(torch.nn.Linear(4, 2), (1, 4), "x86-avx2", device="cpu", warmup=1,
                    repeats=3, meter_for=lambda device: (Stuck(), ""))
    assert r["measured_energy_j"] is None
    assert "RAPL package counter read 0 J over 3 calls (not a positive reading" in \
        r["energy_note"]
    assert "energy is not measurable here" in format_measure(r)


# -- found by a probe of the command (stop 54) ----------------------------------------------
class _Svd(torch.nn.Module):
    """A Linear, then an op with no cost formula (linalg.svd): the price is a lower bound."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.linalg.svd(self.fc(x)).S


def test_a_lower_bound_price_is_marked_in_the_table():
    # was printed as a full prediction (pred/meas 0.0003 with no mark) while estimate
    # said LOWER BOUND for the same model
    from deploy.measure import format_measure
    r = run_measure(_Svd(), (2, 8, 8), "x86-avx2", device="cpu", warmup=1, repeats=2,
                    meter_for=lambda d: (None, "no counter"))
    assert r["lower_bound"] is True
    text = format_measure(r)
    assert "(a LOWER BOUND)" in text and "LOWER BOUND: 1 op(s) ran uncounted" in text
    latency_row = next(line for line in text.splitlines() if line.startswith("latency s"))
    assert latency_row.split()[2].startswith(">=") and latency_row.split()[4].startswith(">=")


def test_a_meter_without_the_counter_is_no_meter_not_the_models_failure():
    # a board without NVML's energy counter raised inside the timed block, and the message
    # blamed the user's forward ("make Sequential.forward run again")
    from deploy.measure import energy_meter

    class NotSupported(Exception):
        pass

    def unsupported(handle):
        raise NotSupported("Not Supported")

    fake = types.SimpleNamespace(nvmlInit=lambda: None,
                                 nvmlDeviceGetHandleByIndex=lambda i: ("gpu", i),
                                 nvmlDeviceGetTotalEnergyConsumption=unsupported)
    with pytest.MonkeyPatch.context() as mp:
        import sys
        mp.setitem(sys.modules, "pynvml", fake)
        meter, why = energy_meter("cuda")
    assert meter is None and "NotSupported: Not Supported" in why


def test_the_clock_does_not_time_entering_no_grad():
    # grad mode is off inside the timed calls, entered once outside them (~2 us per call
    # before, 15-20% of a small model's call)
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append(torch.is_grad_enabled())
            return x * 2

    real = torch.no_grad
    entered = []

    class Counting(real):
        def __enter__(self):
            entered.append(1)
            return super().__enter__()

    def entries(repeats):
        entered.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(torch, "no_grad", Counting)
            run_measure(Probe(), (1, 4), "x86-avx2", device="cpu", warmup=2,
                        repeats=repeats, meter_for=lambda d: (None, "no counter"))
        return len(entered)

    # 10 more timed calls enter no_grad no more often (once per call: 10 more entries)
    assert entries(5) == entries(15)
    assert seen[-17:] == [False] * 17        # 2 warm-up + 15 timed calls without autograd


class _CachesOnFirstCall(torch.nn.Module):
    """One-time work on the first call (a 256^3 precompute), a tiny layer after it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)
        self.cache = None

    def forward(self, x):
        if self.cache is None:
            a = torch.randn(256, 256)
            self.cache = (a @ a @ a).sum()
        return self.fc(x)


def test_a_first_call_that_does_one_time_work_is_noted():
    from deploy.measure import format_measure
    # predicted prices the first call (two 256^3 GEMMs, 33.5 M MACs) against a warmed
    # median of one 16x4 Linear: the table says why pred/meas is far above 1
    r = run_measure(_CachesOnFirstCall(), (1, 16), "x86-avx2", device="cpu", warmup=2,
                    repeats=5, meter_for=lambda d: (None, "no counter"))
    assert r["first_call_s"] > 10 * r["measured_latency_s"]
    assert r["predicted_latency_s"] > 10 * r["measured_latency_s"]
    assert "the prediction prices a first call" in format_measure(r)
    # a plain model's first call is slower too (3-7x: allocator, dispatch caches) but its
    # price is not 10x the median: no note
    plain = run_measure(torch.nn.Linear(16, 4), (1, 16), "x86-avx2", device="cpu", warmup=2,
                        repeats=5, meter_for=lambda d: (None, "no counter"))
    assert not any("first call" in n for n in plain["notes"])


@pytest.mark.parametrize("extra, want", [
    (["--out", "x.toml"], "--out: only for --calibrate"),
    (["--force"], "--force: only for --calibrate"),
    (["--profile", "x86-avx2,cortex-m7"], "measure compares one profile"),
    (["--warmup", "-1"], "argument --warmup: -1 must be >= 0"),
])
def test_flags_that_would_do_nothing_are_refused(user_file, capsys, extra, want):
    argv = ["measure", f"{user_file}:make", "--input-shape", "1,16", "--device", "cpu",
            "--repeats", "2"]
    if "--profile" not in extra:
        argv += ["--profile", "x86-avx2"]
    try:
        rc = main(argv + extra)
    except SystemExit as exc:   # argparse's own refusal
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and want in err, err


@pytest.mark.parametrize("extra", [["--input-shape", "1,16"], ["--warmup", "2"],
                                   ["--seed", "3"], ["--input-dtype", "int64"]])
def test_calibrate_refuses_model_options(tmp_path, capsys, extra):
    import deploy.calibrate as cal
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("measured"))
        assert main(["measure", "--calibrate", "--profile", "x86-avx2", "--out",
                     str(tmp_path / "m.toml"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "not used by --calibrate" in err and extra[0] in err


@pytest.fixture
def quick_calibration(monkeypatch):
    """calibrate() with its microbenchmarks replaced by fixed timings (a Hockney curve of
    peak 1e10 MAC/s, launch 5 us) and no energy meter: the document it writes, at once."""
    import numpy as np

    import deploy.calibrate as cal
    monkeypatch.setattr(cal, "dispatch_s", lambda **k: 5e-6)
    monkeypatch.setattr(cal, "gemm_times", lambda sizes, **k: np.array(
        [5e-6 + (float(n) ** 3 + 1e4) / 1e10 for n in sizes]))
    monkeypatch.setattr(cal, "energy_meter", lambda device: (None, "no counter"))
    monkeypatch.setattr(cal, "machine_name", lambda: "test-vm")
    return cal


def test_calibrate_leaves_a_users_tmp_file_alone_and_makes_missing_folders(
        tmp_path, quick_calibration):
    # write_profile wrote OUT.tmp and renamed it: a user's file of that name was destroyed
    cal = quick_calibration
    doc, _ = cal.calibrate("x86-avx2")
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "mine.toml.tmp").write_text("the user's notes")
    cal.write_profile(doc, folder / "mine.toml")
    assert (folder / "mine.toml.tmp").read_text() == "the user's notes"
    assert (folder / "mine.toml").read_text().startswith(cal.MARKER)
    assert sorted(p.name for p in folder.iterdir()) == ["mine.toml", "mine.toml.tmp"]
    deeper = tmp_path / "a" / "b" / "mine.toml"    # missing folders are made
    cal.write_profile(doc, deeper)
    assert deeper.read_text().startswith(cal.MARKER)


def test_calibrate_out_under_a_file_is_one_line_before_measuring(tmp_path, capsys):
    import deploy.calibrate as cal
    (tmp_path / "afile").write_text("x")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("measured first"))
        assert main(["measure", "--calibrate", "--profile", "x86-avx2", "--out",
                     str(tmp_path / "afile" / "x.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a file, not a directory" in err


def test_recalibrating_names_the_machine_once(tmp_path, quick_calibration):
    # "...; calibrated on vm (...); calibrated on vm (...)" grew by one suffix per run
    cal = quick_calibration
    first = tmp_path / "mine.toml"
    doc, _ = cal.calibrate("x86-avx2")
    cal.write_profile(doc, first)
    again, _ = cal.calibrate(str(first))
    assert again["description"].count("calibrated on") == 1
    assert again["description"].endswith("; calibrated on test-vm")


def test_the_batch_of_one_call_is_the_samples_the_count_read():
    # a sequence-first LSTM on (50, 2, 6): 50 time steps of 2 samples; the header said
    # "a batch of 50" (dim 0) while the count priced 2 samples
    r = run_measure(torch.nn.LSTM(6, 8), (50, 2, 6), "x86-avx2", device="cpu", warmup=1,
                    repeats=2, meter_for=lambda d: (None, "no counter"))
    assert r["batch"] == 2
