"""deploy.sweep and ``neuroedge sweep``: specs, expansion, serial against a real Dask
LocalCluster, a worker killed mid-run, --resume after an interruption, failing runs."""
from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from deploy import sweep
from deploy.cli import main
from deploy.errors import SweepError
from deploy.outputs import TEMPORARY_MARKER
from deploy.runfile import read_run

# mlp on digits, one epoch: about a second a run. hidden = [2000, 2000] does not fit
# cortex-m4's 1,245,184 B (64*2000 + 2000*2000 + 2000*10 weights + biases, 4 B each, is
# 16.6 MB): TorchDevice.compile raises at run time, after every spec check passed.
SPEC = {
    "name": "tiny",
    "models": ["mlp"],
    "seeds": [0, 1],
    "profiles": ["cortex-m4", "a100"],
    "grid": {"epochs": [1], "mlp": {"hidden": [[8], [2000, 2000]]}},
}
OK = ["mlp-digits-cortex-m4-quick-seed0-epochs=1-hidden=8",
      "mlp-digits-cortex-m4-quick-seed1-epochs=1-hidden=8"]
BAD = ["mlp-digits-cortex-m4-quick-seed0-epochs=1-hidden=2000,2000",
       "mlp-digits-cortex-m4-quick-seed1-epochs=1-hidden=2000,2000"]


@pytest.fixture(scope="module")
def serial_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    res = sweep.run_sweep(SPEC, out, serial=True)
    return out, res


def _spec_error(spec) -> str:
    with pytest.raises(SweepError) as info:
        sweep.expand(spec)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_spec_errors_are_one_line(tmp_path):
    # a key one edit from a spec key is suggested (a misspelt one got only the list)
    assert "unknown key 'seed'; did you mean 'seeds'? keys are name," in \
        _spec_error({**SPEC, "seed": [0]})
    assert "unknown model 'mpl'" in _spec_error({**SPEC, "models": ["mpl"]})
    assert "grid.mlp.hiddn: --set hiddn: mlp has no setting 'hiddn'" in _spec_error(
        {**SPEC, "grid": {"mlp": {"hiddn": [8]}}})
    assert "unknown hardware profile 'a1000'" in _spec_error({**SPEC, "profiles": ["a1000"]})
    assert "seeds holds 'x'; give integers" in _spec_error({**SPEC, "seeds": ["x"]})
    # a value the Config refuses fails at expansion (runner.prepare), before anything runs
    assert "--set epochs=0" not in _spec_error({**SPEC, "grid": {"epochs": [0]}})
    assert "epochs = 0: must be >= 1" in _spec_error({**SPEC, "grid": {"epochs": [0]}})
    # diffpc runs on neuromorphic profiles only: the first profile is a cortex-m4
    text = _spec_error({**SPEC, "models": ["mlp", "diffpc"], "grid": {}})
    assert text.endswith("give [simulate_profile] diffpc = a profile it runs on")
    bad = tmp_path / "bad.toml"
    bad.write_text("models = [\"mlp\"\n")
    assert "not valid TOML" in _spec_error(bad)


def test_expand_order_keys_and_typed_overrides():
    runs = sweep.expand(SPEC)
    # 2 hidden values x 2 seeds, seeds innermost
    assert [r.key for r in runs] == [OK[0], OK[1], BAD[0], BAD[1]]
    assert runs[2].overrides == {"epochs": 1, "hidden": (2000, 2000)}
    assert runs[0].profile == "cortex-m4"


def test_dry_run_lists_one_line_per_run(capsys):
    assert main(["sweep", "--dry-run", "--quiet", _toml_path()]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [OK[0], OK[1], BAD[0], BAD[1]]


def _toml_path():
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "tiny.toml")
    with open(path, "w") as f:
        f.write('name = "tiny"\nmodels = ["mlp"]\nseeds = [0, 1]\n'
                'profiles = ["cortex-m4", "a100"]\n[grid]\nepochs = [1]\n'
                '[grid.mlp]\nhidden = [[8], [2000, 2000]]\n')
    return path


def test_cli_spec_error_exit_2(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('models = ["mlp"]\nprofiles = ["a100"]\n[grid]\nlr = ["fast"]\n')
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("neuroedge: error: sweep spec ")
    assert "'fast' is not a number" in err


def test_failing_run_is_recorded_and_others_go_on(serial_dir):
    out, res = serial_dir
    assert res.simulated == OK and res.failed == BAD
    # one row per run x profile, sorted by key ("hidden=2000,2000" < "hidden=8": '2' < '8')
    assert [(r["key"], r["profile"]) for r in res.rows] == [
        (k, p) for k in sorted(OK + BAD) for p in ("cortex-m4", "a100")]
    for r in res.rows:
        if r["key"] in BAD:
            assert r["status"] == "error"
            assert "exceeds cortex-m4 memory.local.capacity_bytes" in r["error"]
            assert "\n" not in r["error"]
        else:
            assert r["status"] == "ok" and r["error"] == ""
            # the row's figures are the stored run's: its metrics as written in the run
            # file, its ledger priced on the row's profile (the simulate profile as the
            # file stores it, a100 re-priced from the shipped profile)
            run = read_run(out / "runs" / f"{r['key']}.h5")
            assert r["test_accuracy"] == run.metrics["test_accuracy"]
            prof = run.profile if r["profile"] == run.profile.label else r["profile"]
            assert r["energy_j"] == run.ledger.price(prof).total_j > 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(k + ".h5" for k in OK)
    table = sweep.read_table(out / "results.csv")
    assert len(table) == 8
    assert (out / "summary.html").read_text().count("data:image/png;base64,") == 1


def test_pricing_rows_reprice_the_stored_ledger(serial_dir):
    out, res = serial_dir
    run = read_run(out / "runs" / f"{OK[0]}.h5")
    a100 = run.ledger.price("a100")
    row = next(r for r in res.rows if r["key"] == OK[0] and r["profile"] == "a100")
    assert row["energy_j"] == a100.total_j
    assert row["pricing"] == "ledger of cortex-m4 re-priced here"
    assert row["simulate_profile"] == "cortex-m4"
    # every figure says which execution model made it and what it leaves out
    assert row["execution_model"] == a100.execution_model and row["bound"] == a100.bound
    assert row["excludes"] == "; ".join(a100.excluded) != ""
    page = (out / "summary.html").read_text()
    assert "<h2>What these figures are</h2>" in page and a100.execution_model in page


def test_cluster_equals_serial(serial_dir, tmp_path):
    out, _ = serial_dir
    res = sweep.run_sweep(SPEC, tmp_path, workers=2)
    assert res.simulated == OK and res.failed == BAD
    assert (tmp_path / "results.csv").read_text() == (out / "results.csv").read_text()


def test_existing_run_files_need_resume_or_force(serial_dir, tmp_path):
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")
    with pytest.raises(SweepError, match="give --resume to keep them or --force"):
        sweep.run_sweep(SPEC, tmp_path / "s", serial=True)
    # a results.csv the user made in --out is never written over, and nothing runs
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.csv").write_text("my own table\n")
    with pytest.raises(SweepError, match="results.csv exists; give another --out"):
        sweep.run_sweep(SPEC, mine, serial=True)
    assert (mine / "results.csv").read_text() == "my own table\n"
    assert not (mine / "runs").exists()


def test_resume_after_interruption_runs_only_the_rest(serial_dir, tmp_path):
    out, _ = serial_dir
    seen = []

    def stop_after_first(done, total, key, how):
        seen.append((key, how))
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(SPEC, tmp_path, serial=True, progress=stop_after_first)
    # only the finished run's file, and a table of it alone
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [OK[0] + ".h5"]
    assert {r["key"] for r in sweep.read_table(tmp_path / "results.csv")} == {OK[0]}
    kept = (tmp_path / "runs" / f"{OK[0]}.h5").stat().st_mtime_ns
    seen.clear()
    res = sweep.run_sweep(SPEC, tmp_path, serial=True, resume=True,
                          progress=lambda d, t, k, how: seen.append((k, how)))
    assert res.resumed == [OK[0]] and res.simulated == [OK[1]] and res.failed == BAD
    assert (tmp_path / "runs" / f"{OK[0]}.h5").stat().st_mtime_ns == kept
    assert (tmp_path / "results.csv").read_text() == (out / "results.csv").read_text()


def test_resume_reruns_a_truncated_file(serial_dir, tmp_path):
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")
    broken = tmp_path / "s" / "runs" / f"{OK[1]}.h5"
    broken.write_bytes(broken.read_bytes()[:1000])
    # a killed writer's temporary (marked by deploy.outputs) and a directory of the user's
    # with the same name pattern: --resume removes only the first
    ours = tmp_path / "s" / "runs" / f".{OK[1]}.h5.abc123.tmp"
    ours.mkdir()
    (ours / TEMPORARY_MARKER).touch()
    (ours / f"{OK[1]}.h5").write_bytes(b"partial")
    mine = tmp_path / "s" / "runs" / ".notes.tmp"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine\n")
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}
    res = sweep.run_sweep(spec, tmp_path / "s", serial=True, resume=True)
    assert res.resumed == [OK[0]] and res.simulated == [OK[1]]
    read_run(broken)
    assert not ours.exists() and (mine / "keep.txt").read_text() == "mine\n"


def _sampling_inside_and_after() -> tuple[bool, bool]:
    from distributed import get_worker
    sampler = get_worker().periodic_callbacks["profile"]
    with sweep.worker_profiler_paused():
        inside = sampler.is_running()
    return inside, sampler.is_running()


def test_a_run_pauses_the_workers_stack_sampling():
    # dask samples the task thread's frames every 10 ms; a sampled frame keeps a gradient
    # alive, autograd copies it instead of taking it, and the run counts one kernel more
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert client.submit(_sampling_inside_and_after, pure=False).result() == (False, True)
    with sweep.worker_profiler_paused():   # outside a worker: nothing to pause, no error
        pass


def _executing(dask_worker) -> int:
    return len(dask_worker.state.executing)


def test_killed_worker_does_not_lose_the_run(tmp_path):
    from distributed import Client, LocalCluster
    # three epochs of a wider net: a few seconds a run, time to kill its worker mid-run
    spec = {**SPEC, "profiles": ["a100"], "seeds": [0],
            "grid": {"epochs": [3], "mlp": {"hidden": [[256, 256]]}}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        box = {}
        t = threading.Thread(target=lambda: box.update(res=sweep.run_sweep(
            spec, tmp_path / "c", scheduler=cluster.scheduler_address)))
        t.start()
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline:
            busy = [a for a, n in client.run(_executing).items() if n]
            if busy:
                time.sleep(0.3)   # inside the run (training), not at its first line
                killed = client.run(os.getpid)[busy[0]]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.05)
        t.join(120)
        assert killed is not None and not t.is_alive()
        assert killed not in client.run(os.getpid).values()   # the nanny started a new one
    res = box["res"]
    assert [r["status"] for r in res.rows] == ["ok"]
    assert [p.name for p in (tmp_path / "c" / "runs").iterdir()] == [res.rows[0]["key"] + ".h5"]
    # the retried run equals a serial one, bit for bit
    ser = sweep.run_sweep(spec, tmp_path / "s", serial=True)
    assert (tmp_path / "c" / "results.csv").read_text() == \
        (tmp_path / "s" / "results.csv").read_text()
    assert ser.rows[0]["energy_j"] == res.rows[0]["energy_j"]


def test_summary_spread_and_pareto():
    rows = [{"model": "m", "overrides": "a=1", "profile": "p", "status": "ok",
             "main_metric": "acc", "acc": a, "per_inference_j": e}
            for a, e in ((0.5, 1.0), (0.7, 3.0))]
    rows.append({**rows[0], "status": "error", "acc": 0.0})
    (g,) = sweep.summary(rows)
    # mean (0.5 + 0.7) / 2 = 0.6; std sqrt(((0.1)^2 + (0.1)^2) / (2 - 1)) = 0.1414...
    assert g["n"] == 2 and g["mean"] == pytest.approx(0.6)
    assert g["std"] == pytest.approx(math.sqrt(0.02))
    assert (g["min"], g["max"]) == (0.5, 0.7)
    assert g["per_inference_j_mean"] == 2.0
    # (1, 0.5) and (3, 0.7) are both on the front; (2, 0.4) is beaten by (1, 0.5)
    assert sweep.pareto([(3.0, 0.7), (2.0, 0.4), (1.0, 0.5)]) == [2, 0]
    (one,) = sweep.summary(rows[:1])
    assert one["n"] == 1 and math.isnan(one["std"])


def test_example_spec_expands_to_twelve_runs():
    from pathlib import Path
    runs = sweep.expand(Path(__file__).parents[2] / "examples" / "sweep-diffpc.toml")
    # 2 models x 2 hidden sizes x 3 seeds; diffpc simulates on loihi2, pc on a100
    assert len(runs) == 12
    assert {(r.model, r.profile) for r in runs} == {("diffpc", "loihi2"), ("pc", "a100")}
    assert {r.overrides["hidden"] for r in runs} == {(64,), (128,)}


def test_summary_plot_leads_with_every_profile_then_one_panel_each():
    from deploy.sweep import _plot
    g = dict(model="mlp", overrides="hidden=8", mean=0.9, std=0.01,
             per_inference_j_std=0.0)
    groups = [{**g, "profile": "a100", "per_inference_j_mean": 2e-6},
              {**g, "profile": "cortex-m4", "per_inference_j_mean": 1e-8}]
    fig = _plot(groups, "test_accuracy", ["a100", "cortex-m4"])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["every profile", "a100", "cortex-m4"]
    # 2e-6 / 1e-8 = 200 > 10: the joint panel is logarithmic; a single point is not
    assert fig.axes[0].get_xscale() == "log" and fig.axes[1].get_xscale() == "linear"


def test_hostile_specs_are_one_line(tmp_path):
    # the name names the output folder: no path separators, no leading dot or '..'
    for name in ("../escape", "a/b", "..", ".hidden", ""):
        assert "must be a plain file name" in _spec_error({**SPEC, "name": name})
    # seeds as simulate takes them: 0 .. 2**32 - 1
    assert "seeds: seed = -1: out of range" in _spec_error({**SPEC, "seeds": [-1]})
    assert "seed = 99999999999: out of range" in _spec_error({**SPEC, "seeds": [99999999999]})
    assert "profiles names a100 more than once" in _spec_error(
        {**SPEC, "profiles": ["a100", "a100"]})
    assert "seeds names 1 more than once" in _spec_error({**SPEC, "seeds": [1, 1]})
    # 1 model x 1 dataset x 1 preset x 2 seeds x 100 x 100 grid values = 20,000 > 10,000
    big = {**SPEC, "grid": {"epochs": list(range(1, 101)), "lr": [0.001] * 100}}
    assert "the grid gives 20,000 runs; a sweep may have at most 10,000" in _spec_error(big)
    # a spec file must be a regular file (a FIFO would block the read) under 1 MiB
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    assert "not a regular file" in _spec_error(fifo)
    assert "not a regular file" in _spec_error("/dev/zero")
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * (1 << 20) + "\n")
    assert "a spec may have at most 1,048,576" in _spec_error(huge)
    deep = tmp_path / "deep.toml"
    deep.write_text("models = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in _spec_error(deep)


def test_a_scheduler_that_is_not_an_address_is_one_line(tmp_path, capsys):
    with pytest.raises(SweepError, match=r"^--scheduler 'not a url': not a scheduler address"):
        sweep.run_sweep(SPEC, tmp_path / "out", scheduler="not a url")
    assert not (tmp_path / "out").exists()     # refused before anything is written
    # --dry-run runs nothing, yet a bad address is refused there too, through the CLI
    spec = tmp_path / "s.toml"
    spec.write_text('name = "tiny"\nmodels = ["mlp"]\nprofiles = ["a100"]\n')
    capsys.readouterr()
    assert main(["sweep", str(spec), "--scheduler", "bogus", "--dry-run"]) != 0
    out, err = capsys.readouterr()
    assert out == "" and "--scheduler 'bogus': not a scheduler address" in err


def test_a_second_sweep_into_a_folder_being_written_is_refused(serial_dir, tmp_path):
    import fcntl
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")
    with open(tmp_path / "s" / sweep.SWEEP_LOCK, "a") as held:   # a sweep writing there now
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SweepError, match=r"another sweep is writing this folder"):
            sweep.run_sweep(SPEC, tmp_path / "s", serial=True, resume=True)
    # the lock released (as when that sweep's process ends), the same call goes through
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}
    res = sweep.run_sweep(spec, tmp_path / "s", serial=True, resume=True)
    assert res.resumed == OK


def test_bound_column_is_the_energy_bound(tmp_path):
    """A run priced on loihi2 whose ops were counted outside the engine's steps: their time is
    an ideal spread over all cores (a lower bound), so the static energy over it, and the
    row's energy, is a lower bound too, though loihi2's execution model calls itself an
    estimate (the headline says the same: tests/deploy/test_headline.py)."""
    import hw_profiles
    from deploy.runfile import write_run
    from models.registry import RunResult
    from sim.ledger import Ledger
    led = Ledger()
    led.add("synop", 1000, scope="infer")
    led.add_samples(4, scope="infer")
    loihi2 = hw_profiles.load("loihi2")
    path = write_run(tmp_path / "r.h5", RunResult(
        model="mlp", profile=loihi2, dataset="digits", config={}, metrics={"acc": 0.5},
        ledger=led))
    spec = sweep.RunSpec(model="mlp", dataset="digits", preset="quick", seed=0, overrides={},
                         profile="loihi2")
    [row] = sweep.price_rows(spec, "k", path, ["loihi2"])
    assert row["status"] == "ok", row["error"]
    assert led.price(loihi2).bound == "estimate"   # the old column: what this fixes
    assert row["bound"] == "lower bound"
    # 1000 synop x 6.84 pJ + static 0.0539 W x 3.03 ns = 6.84 + 0.163 nJ = 7.01 nJ
    assert row["energy_j"] == pytest.approx(7.01e-9, rel=2e-3)


def test_cli_failed_runs_exit_1_and_are_listed_even_quiet(serial_dir, tmp_path, capsys):
    """A sweep that finished with failed runs is not a success: exit status 1 (2 is a sweep
    refused or stopped), each failure and their count on stderr, --quiet or not."""
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")   # --resume: the OK runs kept, the BAD ones rerun
    code = main(["sweep", _toml_path(), "--out", str(tmp_path / "s"), "--resume", "--serial",
                 "--quiet"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    lines = captured.err.splitlines()
    assert [line.split(": ")[1] for line in lines[:2]] == BAD
    assert all(line.startswith("failed: ") and "exceeds cortex-m4" in line
               for line in lines[:2])
    assert lines[2].startswith("neuroedge: 2 of 4 runs failed") and len(lines) == 3


def test_resume_reruns_a_run_file_that_holds_another_run(serial_dir, tmp_path):
    """A run file is resumed by what it holds, not by its name: seed 1's file copied over
    seed 0's is run again, as a truncated file is (its config says seed 1)."""
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")
    runs = tmp_path / "s" / "runs"
    shutil.copyfile(runs / f"{OK[1]}.h5", runs / f"{OK[0]}.h5")
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}
    res = sweep.run_sweep(spec, tmp_path / "s", serial=True, resume=True)
    assert res.resumed == [OK[1]] and res.simulated == [OK[0]]
    assert read_run(runs / f"{OK[0]}.h5").config["seed"] == 0


def test_pareto_follows_the_metrics_direction_and_keeps_exact_ties():
    # an error (lower is better): (1 J, 5 %) beats (2 J, 9 %) in both; the front was [0, 1]
    # when every metric was taken as higher-is-better
    assert sweep.pareto([(1.0, 5.0), (2.0, 9.0)], "lower") == [0]
    assert sweep.pareto([(1.0, 5.0), (2.0, 9.0)]) == [0, 1]   # an accuracy: both on it
    # (2 J, 6 %) is beaten by (1 J, 5 %); (3 J, 4 %) costs more but errs less: on the front
    assert sweep.pareto([(3.0, 4.0), (2.0, 6.0), (1.0, 5.0)], "lower") == [2, 0]
    # two equal points beat nothing: both stay (the second was dropped, front [0]); a third
    # at the same metric but more energy is beaten by them
    assert sweep.pareto([(1.0, 0.9), (1.0, 0.9), (2.0, 0.9)]) == [0, 1]
    assert sweep.pareto([(1.0, 0.9), (1.0, 0.9)], "lower") == [0, 1]
    with pytest.raises(SweepError, match=r"pareto\(better='neither'\): give 'higher' or "
                                         "'lower'; a metric with no better direction"):
        sweep.pareto([(1.0, 0.9)], "neither")


def _edited_profile(path, factor: float) -> None:
    """The copied a100 TOML with its MAC energy times ``factor`` (29.7039 pJ shipped)."""
    text = path.read_text()
    old = "mac_fp32 = { value = 29.7039, unit = \"pJ\""
    assert old in text
    path.write_text(text.replace(old, f"mac_fp32 = {{ value = {29.7039 * factor!r}, "
                                      "unit = \"pJ\""))


def test_resume_reruns_a_run_simulated_on_a_profile_file_edited_since(tmp_path):
    """--resume compared the profile's label only: a run simulated on a user's TOML that
    was edited afterwards was kept, its row priced on the old numbers (the fresh sweep's
    differed). The run file's snapshot digest is compared with the file as it is now."""
    import hw_profiles
    prof = tmp_path / "myprof.toml"
    prof.write_text((Path(hw_profiles.__file__).parent / "data" / "a100.toml").read_text())
    spec = {"name": "edited", "models": ["mlp"], "profiles": [str(prof)],
            "grid": {"epochs": [1], "hidden": [[8]], "batch_size": [512]}}
    first = sweep.run_sweep(spec, tmp_path / "out", serial=True)
    (key,) = first.simulated
    before = first.rows[0]["energy_j"]
    _edited_profile(prof, 100.0)
    res = sweep.run_sweep(spec, tmp_path / "out", serial=True, resume=True)
    # was: res.resumed == [key] and the row's energy the unedited file's
    assert res.resumed == [] and res.simulated == [key]
    fresh = sweep.run_sweep(spec, tmp_path / "fresh", serial=True)
    assert res.rows[0]["energy_j"] == fresh.rows[0]["energy_j"] > before
    # the file as it is now is the snapshot: a second --resume keeps the run
    again = sweep.run_sweep(spec, tmp_path / "out", serial=True, resume=True)
    assert again.resumed == [key] and again.simulated == []


def test_ctrl_c_lists_runs_that_finished_while_the_cluster_closed(serial_dir, tmp_path,
                                                                   monkeypatch):
    """Ctrl-C of a cluster sweep: a worker may finish its run (a whole run file) after the
    interrupt, its result never told to the sweep. Played serially here: both OK runs
    write their file, only the first is told, then the interrupt. The table listed the
    told run alone (1 key); it lists every whole run file of this sweep (2 keys)."""
    out, _ = serial_dir
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}

    def finished_while_closing(todo, runs_dir, profiles, done):
        rows = [sweep.run_task(run, str(runs_dir), profiles) for run, _ in todo]
        done(todo[0][1], rows[0])
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "_run_serial", finished_while_closing)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(spec, tmp_path, serial=True)
    assert sorted({r["key"] for r in sweep.read_table(tmp_path / "results.csv")}) == OK
    # the same rows as the sweep that was not interrupted, to the byte
    whole = [line for line in (out / "results.csv").read_text().splitlines()
             if "hidden=2000" not in line]
    assert (tmp_path / "results.csv").read_text().splitlines() == whole


def test_ctrl_c_does_not_list_a_file_force_had_yet_to_replace(serial_dir, tmp_path,
                                                              monkeypatch):
    """--force, interrupted before a run was run again: its file is the earlier sweep's,
    not a run that finished now, so the table leaves it out."""
    out, _ = serial_dir
    shutil.copytree(out, tmp_path / "s")
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}

    def first_only(todo, runs_dir, profiles, done):
        done(todo[0][1], sweep.run_task(todo[0][0], str(runs_dir), profiles))
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "_run_serial", first_only)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(spec, tmp_path / "s", serial=True, force=True)
    assert {r["key"] for r in sweep.read_table(tmp_path / "s" / "results.csv")} == {OK[0]}


def test_a_refused_sweep_leaves_out_as_it_found_it(tmp_path, monkeypatch):
    """A --scheduler nobody answers is refused after the checks: runs/ and the lock file
    were left in --out (a folder that did not exist was made). Now taken back; what was
    there before is kept."""
    @contextlib.contextmanager
    def unreachable(workers, scheduler):
        raise SweepError(f"--scheduler {scheduler}: cannot connect (OSError: timed out)")
        yield   # pragma: no cover - a generator, never reached
    monkeypatch.setattr(sweep, "cluster_client", unreachable)
    spec = {**SPEC, "grid": {"epochs": [1], "mlp": {"hidden": [[8]]}}}
    with pytest.raises(SweepError, match="cannot connect"):
        sweep.run_sweep(spec, tmp_path / "new", scheduler="tcp://127.0.0.1:1")
    assert not (tmp_path / "new").exists()   # was: runs/ and .neuroedge-sweep.lock
    mine = tmp_path / "mine"
    (mine / "runs").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine\n")
    with pytest.raises(SweepError, match="cannot connect"):
        sweep.run_sweep(spec, mine, scheduler="tcp://127.0.0.1:1")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "runs"]


@pytest.mark.parametrize("value", [5, ["a note"], {"text": "a note"}, True])
def test_a_description_that_is_not_text_is_one_line(value):
    """``description`` is a note for the reader that nothing uses: ``description = 5`` was
    taken silently where every other key is type-checked."""
    text = _spec_error({**SPEC, "description": value})
    assert f"description = {value!r} must be text; give description = \"...\"" in text
    assert sweep.load_spec({**SPEC, "description": "widths of mlp"}).name == "tiny"
