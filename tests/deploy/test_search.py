"""deploy.search and ``neuroedge sweep`` with a ``[search]`` table: an Optuna study in SQLite,
one run file per trial, the table, the Pareto front, --resume (after a finished study and
after a killed one), a study database the program did not make, and bad specs."""
from __future__ import annotations

import contextlib
import copy
import itertools
import json
import math
import shutil
import sqlite3
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from deploy import search, search_page, sweep
from deploy.cli import main
from deploy.errors import SweepError
from deploy.runfile import read_run

# mlp on digits with batches of 512: 3 optimizer steps an epoch, a fraction of a second a
# trial. Accuracy is near chance at this size; the test is about the study, not the model.
SPEC = {
    "name": "tiny-search",
    "models": ["mlp"],
    "datasets": ["digits"],
    "profiles": ["a100", "jetson-orin"],
    "search": {"method": "nsga2", "trials": 4,
               "objectives": ["test_accuracy:max", "energy_j:min"],
               "space": {"hidden": {"low": 4, "high": 32, "log": True},
                         "epochs": {"choices": [1, 2]},
                         "batch_size": {"choices": [512]}}},
}


def _spec(**search) -> dict:
    spec = copy.deepcopy(SPEC)
    spec["search"].update(search)
    return spec


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    out = tmp_path_factory.mktemp("search")
    return out, search.run_search(SPEC, out, serial=True)


def _study(out):
    return optuna.load_study(study_name=search.STUDY_NAME,
                             storage=f"sqlite:///{out / search.STUDY_FILE}")


def test_study_runs_and_files(done):
    out, res = done
    study = _study(out)
    trials = study.get_trials(states=(TrialState.COMPLETE,))
    assert [t.number for t in trials] == [0, 1, 2, 3] == res.ran
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE,
                                optuna.study.StudyDirection.MINIMIZE]
    table = sweep.read_table(out / "results.csv")
    assert len(table) == 4 * 2   # 4 trials x 2 profiles
    header = (out / "results.csv").read_text().splitlines()[0]
    assert header.startswith("trial,pareto,key,model,")
    for t in trials:
        assert 4 <= t.params["hidden"] <= 32 and t.params["epochs"] in (1, 2)
        # one run file per trial, named by its number and its settings
        path = out / "runs" / f"{t.user_attrs['run_file']}.h5"
        assert path.name.startswith(f"trial-{t.number:04d}-mlp-digits-a100-quick-seed0-")
        assert f"hidden={t.params['hidden']}" in path.name
        run = read_run(path)
        assert run.metrics["test_accuracy"] == pytest.approx(t.values[0], rel=0, abs=0)
        row = next(r for r in table if r["trial"] == str(t.number) and r["profile"] == "a100")
        # the objective told to Optuna is the table's a100 energy, to the last digit
        assert float(row["energy_j"]) == t.values[1]
        other = next(r for r in table
                     if r["trial"] == str(t.number) and r["profile"] == "jetson-orin")
        assert other["status"] == "ok" and float(other["energy_j"]) != t.values[1]
    assert len(list((out / "runs").glob("*.h5"))) == 4
    assert search.stored_search(out / search.STUDY_FILE) is not None
    page = (out / "summary.html").read_text()
    assert "Pareto front" in page and "NSGA-II (population 2)" in page   # max(2, 4 // 3)


def test_pareto_front_is_the_non_dominated_set(done):
    out, res = done
    table = [r for r in sweep.read_table(out / "results.csv") if r["profile"] == "a100"]
    pts = {int(r["trial"]): (float(r["test_accuracy"]), float(r["energy_j"])) for r in table}

    def dominated(i):   # another trial with accuracy >= and energy <=, better in one
        a, e = pts[i]
        return any(a2 >= a and e2 <= e and (a2 > a or e2 < e)
                   for j, (a2, e2) in pts.items() if j != i)
    front = sorted(i for i in pts if not dominated(i))
    assert front and res.pareto == front
    assert sorted(int(r["trial"]) for r in table if r.get("pareto") == "yes") == front
    # the front itself: sorted by energy, accuracy never falls (a dominated point would)
    by_energy = sorted(front, key=lambda i: pts[i][1])
    assert all(pts[a][0] <= pts[b][0] for a, b in itertools.pairwise(by_energy))


def test_resume_continues_without_redoing(done, tmp_path):
    out, _ = done
    copy_dir = tmp_path / "more"
    shutil.copytree(out, copy_dir)
    before = {p.name: p.stat().st_mtime_ns for p in (copy_dir / "runs").glob("*.h5")}
    res = search.run_search(_spec(trials=5), copy_dir, serial=True, resume=True)
    assert res.kept == 4 and res.ran == [4]          # one more trial, the four kept
    after = {p.name: p.stat().st_mtime_ns for p in (copy_dir / "runs").glob("*.h5")}
    assert {k: after[k] for k in before} == before  # no finished trial ran again
    assert len(after) == 5
    assert len(sweep.read_table(copy_dir / "results.csv")) == 5 * 2
    # a study that already has its trials runs none
    again = search.run_search(_spec(trials=5), copy_dir, serial=True, resume=True)
    assert again.kept == 5 and again.ran == []


def test_interrupted_trial_runs_again_with_its_settings(tmp_path, monkeypatch):
    real = sweep.run_task

    def killed_second(run, runs_dir, profiles, stem=None):
        if stem.startswith("trial-0001"):
            raise KeyboardInterrupt   # before the run file: nothing of trial 1 is left
        return real(run, runs_dir, profiles, stem)
    spec = _spec(method="random", trials=3)
    monkeypatch.setattr(sweep, "run_task", killed_second)
    with pytest.raises(KeyboardInterrupt):
        search.run_search(spec, tmp_path, serial=True)
    study = _study(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.RUNNING]
    assert len(sweep.read_table(tmp_path / "results.csv")) == 2   # trial 0 x 2 profiles
    lost = study.trials[1].params
    monkeypatch.setattr(sweep, "run_task", real)
    res = search.run_search(spec, tmp_path, serial=True, resume=True)
    study = _study(tmp_path)
    # trial 1 failed as interrupted (not counted); trial 2 reran its settings, trial 3 new
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.FAIL,
                                               TrialState.COMPLETE, TrialState.COMPLETE]
    assert study.trials[2].params == lost
    assert res.kept == 1 and res.ran == [2, 3]
    assert sorted({int(r["trial"]) for r in sweep.read_table(tmp_path / "results.csv")}) \
        == [0, 2, 3]


def test_a_trial_whose_run_file_is_whole_is_kept_on_resume(tmp_path, monkeypatch):
    real = sweep.run_task

    def killed_after_writing(run, runs_dir, profiles, stem=None):
        rows = real(run, runs_dir, profiles, stem)
        if stem.startswith("trial-0001"):
            raise KeyboardInterrupt   # the file is whole; the study was never told
        return rows
    spec = _spec(method="random", trials=2)
    monkeypatch.setattr(sweep, "run_task", killed_after_writing)
    with pytest.raises(KeyboardInterrupt):
        search.run_search(spec, tmp_path, serial=True)
    monkeypatch.setattr(sweep, "run_task", real)
    res = search.run_search(spec, tmp_path, serial=True, resume=True)
    assert res.resumed == [1] and res.ran == []   # told from its file, not run again
    assert [t.state for t in _study(tmp_path).trials] == [TrialState.COMPLETE] * 2


@pytest.mark.parametrize("change, message", [
    ({"method": "bayes"}, "search.method = 'bayes': unknown; give one of tpe, nsga2, random"),
    ({"trials": 0}, "search.trials = 0: give an integer from 1 to 10,000"),
    ({"objectives": ["joules:min"]},
     "search.objectives: mlp reports no 'joules'; give one of its metrics (test_accuracy,"),
    ({"objectives": ["test_acuracy:max"]},
     "no 'test_acuracy'; did you mean 'test_accuracy'? give one of its metrics"),
    ({"method": "nsga"}, "search.method = 'nsga': unknown; did you mean 'nsga2'? give one of"),
    ({"objectives": ["energy_j:lowest"]}, "'energy_j:lowest' is not NAME:max or NAME:min"),
    ({"space": {"hidden": {"low": 64, "high": 16}}},
     "search.space.hidden: low = 64 > high = 16; give low <= high"),
    ({"space": {"hiddn": {"low": 4, "high": 16}}},
     "search.space.hiddn: --set hiddn: mlp has no setting 'hiddn'"),
    ({"space": {"epochs": {"choices": [0, 1]}}},
     "search.space.epochs = 0: MLPConfig.epochs = 0: must be >= 1"),
    # the refused key named, not the first key tried with it at its first edge
    ({"space": {"hidden": {"low": 8, "high": 16}, "epochs": {"choices": [0]}}},
     "search.space.epochs = 0: MLPConfig.epochs = 0: must be >= 1"),
    ({"space": {"hidden": {"low": 4, "high": 16, "stride": 2}}},
     "search.space.hidden: unknown key 'stride'; did you mean 'step'? keys are low, high, "
     "log, step, choices"),
    ({"space": {"lr": {"low": 0.0, "high": 0.1, "log": True}}},
     "search.space.lr: log = true needs low > 0"),
    ({"profile": "loihi2"}, "search.profile = 'loihi2': not one of the spec's profiles"),
])
def test_bad_search_is_one_line_before_anything_runs(tmp_path, change, message):
    out = tmp_path / "never"
    with pytest.raises(SweepError) as info:
        search.run_search(_spec(**change), out, serial=True)
    text = str(info.value)
    assert "\n" not in text and message in text, text
    assert not out.exists()   # nothing created: the checks come first


def test_search_spec_refuses_grid_and_several_models():
    with pytest.raises(SweepError, match=r"\[grid\] with \[search\]: give fixed settings"):
        sweep.load_spec({**SPEC, "grid": {"epochs": [1]}})
    with pytest.raises(SweepError, match="a search runs one model"):
        sweep.load_spec({**SPEC, "models": ["mlp", "tsetlin"]})
    with pytest.raises(SweepError, match=r"has a \[search\] table"):
        sweep.run_sweep(SPEC, "unused", serial=True)


def test_a_database_we_did_not_make_is_refused(tmp_path):
    db = tmp_path / search.STUDY_FILE
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE studies (study_id INTEGER, study_name TEXT)")
    con.commit()
    con.close()
    before = db.read_bytes()
    for flags in ({"resume": True}, {"force": True}, {}):
        with pytest.raises(SweepError, match="holds no neuroedge study .* left alone"):
            search.run_search(SPEC, tmp_path, serial=True, **flags)
    assert db.read_bytes() == before
    db.write_text("not a database\n")
    with pytest.raises(SweepError, match="holds no neuroedge study"):
        search.run_search(SPEC, tmp_path, serial=True, force=True)
    assert db.read_text() == "not a database\n"


def test_resume_with_another_search_is_refused(done, tmp_path):
    out, _ = done
    with pytest.raises(SweepError, match="study.db holds a study; give --resume"):
        search.run_search(SPEC, out, serial=True)
    other = _spec(space={"hidden": {"low": 4, "high": 64, "log": True},
                         "epochs": {"choices": [1, 2]}, "batch_size": {"choices": [512]}})
    with pytest.raises(SweepError, match=r"another search \(search.space.hidden.high was 32, "
                                         r"the spec gives 64\)"):
        search.run_search(other, out, serial=True, resume=True)


def test_cli_dry_run_and_one_worker_cluster_equals_serial(tmp_path, capsys):
    """The same single-objective TPE search on a 1-worker LocalCluster and serially: one
    trial in flight either way, so the same settings and the same figures."""
    import tomli_w
    spec = _spec(method="tpe", trials=3, objectives=["energy_j:min"])
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(spec))
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "tpe search of mlp: 3 trials, objectives energy_j:min (priced on a100)",
        "  hidden: 4 .. 32 (log)", "  epochs: one of 1, 2", "  batch_size: one of 512"]
    assert main(["sweep", str(path), "--workers", "1", "--out", str(tmp_path / "c"),
                 "--quiet"]) == 0
    serial = search.run_search(spec, tmp_path / "s", serial=True)
    cluster = _study(tmp_path / "c").trials
    assert [t.params for t in cluster] == [t.params for t in _study(tmp_path / "s").trials]
    assert [t.values for t in cluster] == [t.values for t in _study(tmp_path / "s").trials]
    # one objective: the front is the best trial(s), those at the minimum energy
    energies = [t.values[0] for t in cluster]
    assert serial.pareto == [i for i, e in enumerate(energies) if e == min(energies)]
    assert all(math.isfinite(e) and e > 0 for e in energies)
    bad = tmp_path / "bad.toml"
    bad.write_text(path.read_text().replace("trials = 3", "trials = -1"))
    assert main(["sweep", str(bad), "--serial"]) == 2
    assert "search.trials = -1: give an integer" in capsys.readouterr().err


def _boxes_overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_search_page_legend_is_outside_the_data(done):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    out, res = done
    study = _study(out)
    fig = search_page._plot(study, sweep.load_spec(SPEC).search, res.pareto)
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert not _boxes_overlap(legend, ax.get_window_extent())


def test_a_value_the_model_refuses_fails_its_trial_and_the_search_goes_on(tmp_path,
                                                                          monkeypatch):
    """A value inside the space that the model's Config refuses (the edges are checked up
    front, so the check is skipped here to reach one): the trial fails with the Config's
    message, the others run."""
    monkeypatch.setattr(search, "check_space", lambda spec: None)
    spec = _spec(method="random", trials=3, objectives=["energy_j:min"],
                 space={"lr": {"choices": [-1.0]}, "epochs": {"choices": [1]},
                        "batch_size": {"choices": [512]}})
    res = search.run_search(spec, tmp_path, serial=True)
    assert res.failed == [0, 1, 2] and res.ran == [] and res.pareto == []
    rows = sweep.read_table(tmp_path / "results.csv")
    assert [r["trial"] for r in rows] == ["0", "1", "2"]
    assert all("MLPConfig.lr = -1.0: must be > 0" in r["error"] for r in rows)
    assert "failed" in (tmp_path / "summary.html").read_text()


def test_cli_failed_trials_exit_1_and_stay_failed_on_resume(tmp_path, monkeypatch, capsys):
    """Trials that failed make the exit status 1 with each failure on stderr, --quiet or
    not; resumed, they count as failed, not as trials kept from the study."""
    monkeypatch.setattr(search, "check_space", lambda spec: None)   # to reach lr = -1
    path = tmp_path / "fail.toml"
    path.write_text('models = ["mlp"]\ndatasets = ["digits"]\nprofiles = ["a100"]\n'
                    '[search]\nmethod = "random"\ntrials = 2\n'
                    'objectives = ["energy_j:min"]\n[search.space]\n'
                    'lr = { choices = [-1.0] }\nepochs = { choices = [1] }\n')
    out = str(tmp_path / "out")
    assert main(["sweep", str(path), "--out", out, "--serial", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert [line.split(": ")[1] for line in lines[:2]] == ["trial 0", "trial 1"]
    assert all("MLPConfig.lr = -1.0: must be > 0" in line for line in lines[:2])
    assert lines[2].startswith("neuroedge: 2 of 2 trials failed") and len(lines) == 3
    assert main(["sweep", str(path), "--out", out, "--serial", "--resume"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("0 trials run, 0 kept from the study, 2 failed;")
    assert "neuroedge: 2 of 2 trials failed" in captured.err


def test_a_study_that_cannot_be_written_is_one_line(done, tmp_path, monkeypatch):
    """A study.db the sweep cannot write (read-only, immutable, a read-only mount): one
    line naming the file, not optuna's StorageInternalError traceback. Opened read-only
    here (SQLite's mode=ro) as root may write a file whatever its mode."""
    out, _ = done
    copy_dir = tmp_path / "ro"
    shutil.copytree(out, copy_dir)

    def read_only(path):
        return optuna.storages.RDBStorage(f"sqlite:///file:{path}?mode=ro&uri=true")
    monkeypatch.setattr(search, "_storage", read_only)
    with pytest.raises(SweepError) as info:
        search.run_search(_spec(trials=5), copy_dir, serial=True, resume=True)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{copy_dir / search.STUDY_FILE}: ")
    assert "cannot be written (attempt to write a readonly database)" in text, text


@pytest.mark.parametrize("given", [True, False])
def test_a_search_profile_the_model_does_not_run_on_is_refused_first(tmp_path, given):
    """Objectives priced on a kind the card does not list (mlp: gpu, cpu, bitwise) would
    fail every trial after training it: refused up front, by the card's kind check that a
    grid sweep's simulate profile gets, with nothing created."""
    spec = _spec(objectives=["energy_j:min"], **({"profile": "loihi2"} if given else {}))
    spec.update(profiles=["loihi2", "a100"] if not given else ["a100", "loihi2"],
                simulate_profile="a100")
    out = tmp_path / "never"
    with pytest.raises(SweepError) as info:
        search.run_search(spec, out, serial=True)
    text = str(info.value)
    option = "search.profile" if given else "search.profile (by default the first of profiles)"
    assert "\n" not in text and (f"{option} 'loihi2' is a 'neuromorphic' profile; model "
                                 "'mlp' runs on gpu, cpu, bitwise profiles") in text, text
    assert not out.exists()
    with pytest.raises(SweepError, match="'loihi2' is a 'neuromorphic' profile"):
        search.dry_run_lines(sweep.load_spec(spec))


def _copy(done, tmp_path, name="copy"):
    out, _ = done
    shutil.copytree(out, tmp_path / name)
    return tmp_path / name


def test_resume_with_another_search_profile_is_refused(done, tmp_path):
    """The objectives are priced on the search's profile (here by default the first,
    a100): resuming with profile = "jetson-orin" was accepted and the study mixed
    objectives priced on two chips. Naming the default is the same search."""
    out = _copy(done, tmp_path)
    with pytest.raises(SweepError) as info:
        search.run_search(_spec(profile="jetson-orin"), out, serial=True, resume=True)
    text = str(info.value)
    assert "\n" not in text and ("holds another search (search.profile was 'a100', the "
                                 "spec gives 'jetson-orin')") in text, text
    res = search.run_search(_spec(profile="a100"), out, serial=True, resume=True)
    assert res.kept == 4 and res.ran == []


def test_resume_naming_the_default_dataset_is_the_same_search(done, tmp_path):
    """A study made with datasets = ["digits"] (mlp's default) resumed by a spec naming
    none: was refused as another search (dataset was 'digits', the spec gives None)."""
    out = _copy(done, tmp_path)
    spec = _spec()
    del spec["datasets"]
    res = search.run_search(spec, out, serial=True, resume=True)
    assert res.kept == 4 and res.ran == []
    assert json.loads(search.stored_search(out / search.STUDY_FILE))["dataset"] == "digits"


def test_an_edited_profile_file_is_another_search(tmp_path):
    """A profile TOML whose numbers changed prices the objectives differently: the
    fingerprint holds each profile's digest and the first difference names the file."""
    import hw_profiles
    prof = tmp_path / "mine.toml"
    prof.write_text((Path(hw_profiles.__file__).parent / "data" / "a100.toml").read_text())
    spec = sweep.load_spec({**_spec(), "profiles": [str(prof), "jetson-orin"]})
    made = json.loads(search._fingerprint(spec))
    text = prof.read_text().replace("mac_fp32 = { value = 29.7039,",
                                    "mac_fp32 = { value = 2970.39,")
    assert text != prof.read_text()
    prof.write_text(text)
    now = json.loads(search._fingerprint(spec))
    assert search._first_difference(made, now).startswith(
        f"the numbers of profile {prof} differ from those the study was priced with "
        "(digest sha256:")


def test_a_study_from_before_the_profile_was_recorded_is_refused(done, tmp_path):
    """A version 1 search record (no version key, no search profile, no digests) cannot
    tell which chip its objectives were priced on: refused, the file left as it is."""
    out = _copy(done, tmp_path)
    db = out / search.STUDY_FILE
    old = json.loads(search.stored_search(db))
    for key in ("version", "profile_digests"):
        del old[key]
    del old["search"]["profile"]
    con = sqlite3.connect(db)
    con.execute("UPDATE study_user_attributes SET value_json = ? WHERE key = ?",
                (json.dumps(json.dumps(old, sort_keys=True)), search.MARK))
    con.commit()
    con.close()
    before = db.read_bytes()
    with pytest.raises(SweepError, match=r"made by an earlier neuroedge \(search record "
                                         r"version 1; this one reads 2\)"):
        search.run_search(SPEC, out, serial=True, resume=True)
    assert db.read_bytes() == before


def _alembic_root_page(db) -> tuple[int, int]:
    con = sqlite3.connect(db)
    page = con.execute("SELECT rootpage FROM sqlite_master "
                       "WHERE name = 'alembic_version'").fetchone()[0]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    return (page - 1) * size, size


def _sql(statement):
    def damage(db):
        con = sqlite3.connect(db)
        con.execute(statement)
        con.commit()
        con.close()
    return damage


def _overwrite_page(db):
    at, size = _alembic_root_page(db)
    with open(db, "r+b") as f:
        f.seek(at)
        f.write(b"\xff" * size)


@pytest.mark.parametrize("damage, message", [
    # was: RuntimeError from RDBStorage ("no longer compatible with the table schema")
    (_sql("UPDATE alembic_version SET version_num = 'v2.0.0.a'"),
     "the study's Optuna schema is v2.0.0.a; Optuna {optuna} reads v3.2.0.a; it is left as "
     "it is: resume it with the Optuna that made it, or give another --out"),
    # an older Optuna's schema: optuna's own upgrade is the way on
    (_sql("UPDATE alembic_version SET version_num = 'v3.0.0.d'"),
     "the study's Optuna schema is v3.0.0.d; Optuna {optuna} reads v3.2.0.a; it is left as "
     "it is: upgrade it with `optuna storage upgrade --storage sqlite:///{db}`"),
    # was: TypeError from study.best_trials (Optuna made the table again, empty)
    (_sql("DROP TABLE trial_values"),
     "the study database is damaged (table trial_values is missing); it is left as it is: "
     "give another --out, or --force to start the study again"),
    (_sql("DELETE FROM trial_values WHERE objective = 1"),
     "the study database is damaged (trial 0 is complete but holds 1 of its 2 objective "
     "values)"),
    # was: sqlalchemy DatabaseError ("database disk image is malformed") traceback
    (_overwrite_page, "the study database is damaged ("),
    # was: optuna's AssertionError traceback from storage.get_all_trials
    (_sql("UPDATE trial_values SET value = NULL WHERE objective = 0 AND trial_id = "
          "(SELECT trial_id FROM trials WHERE number = 1)"),
     "the study database is damaged (trial 1 holds objective 0 as NULL of value_type "
     "'FINITE'; Optuna writes a number as FINITE, an infinity as INF_POS or INF_NEG with no "
     "number); it is left as it is"),
    # was: LookupError from SQLAlchemy's Enum ("'NAN' is not among the defined enum values")
    (_sql("UPDATE trial_values SET value_type = 'NAN' WHERE objective = 1 AND trial_id = "
          "(SELECT trial_id FROM trials WHERE number = 2)"),
     "(trial 2 holds objective 1 as "),
    (_sql("UPDATE trial_values SET value = 1.5, value_type = 'INF_POS' WHERE trial_id = "
          "(SELECT trial_id FROM trials WHERE number = 0) AND objective = 1"),
     "(trial 0 holds objective 1 as 1.5 of value_type 'INF_POS';"),
    # rows check_study_file does not look at: caught around Optuna's read of the trials
    (_sql("UPDATE trial_params SET distribution_json = '{oops' WHERE trial_id = "
          "(SELECT trial_id FROM trials WHERE number = 1)"),
     "the study database is damaged (its trials cannot be read back: JSONDecodeError: "),
    (_sql("UPDATE trial_values SET objective = 7 WHERE objective = 1 AND trial_id = "
          "(SELECT trial_id FROM trials WHERE number = 3)"),
     "(its trials cannot be read back: IndexError: list assignment index out of range)"),
])
def test_a_damaged_or_other_optuna_study_is_one_line_and_left_as_it_is(done, tmp_path,
                                                                        damage, message):
    out = _copy(done, tmp_path)
    db = out / search.STUDY_FILE
    damage(db)
    before = db.read_bytes()
    with pytest.raises(SweepError) as info:
        search.run_search(SPEC, out, serial=True, resume=True)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{db}: "), text
    assert message.format(optuna=optuna.__version__, db=db) in text, text
    assert "make it writable" not in text   # not a permission problem
    assert db.read_bytes() == before


def test_a_refused_search_creates_nothing_in_out(tmp_path, monkeypatch):
    """A study.db this program did not make is refused and "left as it is": runs/ and the
    lock file were made beside it all the same. An unreachable --scheduler left runs/, the
    lock and a new study.db. Now --out is as it was."""
    mine = tmp_path / "mine"
    mine.mkdir()
    optuna.create_study(storage=f"sqlite:///{mine / search.STUDY_FILE}", study_name="mine")
    with pytest.raises(SweepError, match="holds no neuroedge study"):
        search.run_search(SPEC, mine, serial=True)
    assert sorted(p.name for p in mine.iterdir()) == [search.STUDY_FILE]

    @contextlib.contextmanager
    def unreachable(workers, scheduler):
        raise SweepError(f"--scheduler {scheduler}: cannot connect (OSError: timed out)")
        yield   # pragma: no cover - a generator, never reached
    monkeypatch.setattr(sweep, "cluster_client", unreachable)
    with pytest.raises(SweepError, match="cannot connect"):
        search.run_search(SPEC, tmp_path / "new", scheduler="tcp://127.0.0.1:1")
    assert not (tmp_path / "new").exists()


def test_a_journal_a_killed_writer_left_is_rolled_back_on_resume(done, tmp_path):
    """A process killed inside a study.db transaction leaves a hot journal: the read-only
    checks cannot read past it (SQLite: "attempt to write a readonly database"), and the
    study is not damaged. SQLite rolls it back (its own recovery, as Optuna's opening
    would) and the resume goes on."""
    import subprocess
    import sys
    out = _copy(done, tmp_path)
    db = out / search.STUDY_FILE
    killed = ("import os, sqlite3, sys\n"
              "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "c.execute('PRAGMA cache_size = 1')\n"   # spill pages to the file mid-write
              "c.execute('BEGIN')\n"
              "c.execute('CREATE TABLE half (x)')\n"
              "for _ in range(2000):\n"
              "    c.execute('INSERT INTO half VALUES (?)', ('y' * 500,))\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", killed, str(db)], check=True)
    assert db.with_name(f"{db.name}-journal").exists()
    res = search.run_search(SPEC, out, serial=True, resume=True)
    assert res.kept == 4 and res.ran == []
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone() \
        == (0,)   # the killed transaction is gone
    con.close()


def test_ctrl_c_while_the_cluster_closes_writes_the_table(tmp_path, monkeypatch):
    """A Ctrl-C while the Dask cluster shut its workers down (after the last trial) left
    no results.csv nor summary.html: the cluster closed outside the ``except
    KeyboardInterrupt`` that writes them (a grid sweep closes its cluster inside it). Here
    the cluster's close raises it; the trials run serially in its place."""
    closed = []

    @contextlib.contextmanager
    def interrupted_on_close(workers, scheduler):
        try:
            yield "client"
        finally:
            closed.append(workers)
            raise KeyboardInterrupt   # as Ctrl-C while the workers shut down

    def serially(study, spec, runs_dir, profiles, label, result, progress, client):
        assert client == "client"
        search._run_serial(study, spec, runs_dir, profiles, label, result, progress)
    monkeypatch.setattr(sweep, "cluster_client", interrupted_on_close)
    monkeypatch.setattr(search, "_run_cluster", serially)
    with pytest.raises(KeyboardInterrupt):
        search.run_search(_spec(method="random", trials=2), tmp_path, workers=2)
    assert closed == [2]
    # both trials finished before the close: 2 trials x 2 profiles
    assert [r["trial"] for r in sweep.read_table(tmp_path / "results.csv")] \
        == ["0", "0", "1", "1"]
    assert "2 of 2 trials finished" in (tmp_path / "summary.html").read_text()


def test_a_ctrl_c_python_drops_inside_a_finaliser_still_stops_the_search(tmp_path,
                                                                         monkeypatch):
    """SIGINT landing while a finaliser runs (distributed's ``Future.__del__`` as a trial's
    future is dropped) raised KeyboardInterrupt inside ``__del__``, where Python prints it
    ("Exception ignored in") and drops it: the search went on and ended with status 0.
    It is noted there and raised once the trial is told: the search stops with its
    table."""
    import signal
    # Python's own handler, as in a fresh `neuroedge sweep` (brian2, once imported by an
    # earlier test, installs its own, which the search leaves alone)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _finaliser_interrupt_stops_the_search(tmp_path, monkeypatch)
    finally:
        signal.signal(signal.SIGINT, previous)


def _finaliser_interrupt_stops_the_search(tmp_path, monkeypatch):
    import signal
    real = sweep.run_task

    class Dropped:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)   # its handler runs inside this __del__

    def interrupted_in_a_finaliser(run, runs_dir, profiles, stem=None):
        rows = real(run, runs_dir, profiles, stem)
        if stem.startswith("trial-0000"):
            Dropped()   # dropped at once: __del__ runs here
        return rows
    monkeypatch.setattr(sweep, "run_task", interrupted_in_a_finaliser)
    with pytest.raises(KeyboardInterrupt):
        search.run_search(_spec(method="random", trials=3), tmp_path, serial=True)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back
    study = _study(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]   # stopped after it
    assert [r["trial"] for r in sweep.read_table(tmp_path / "results.csv")] == ["0", "0"]


def test_a_sigint_outside_a_finaliser_is_raised_at_once():
    import signal
    import sys
    interrupts = search._Interrupts()
    with pytest.raises(KeyboardInterrupt):
        interrupts.handler(signal.SIGINT, sys._getframe())
    assert interrupts.noted


def test_cli_counts_a_trial_told_from_its_run_file_as_kept(tmp_path, monkeypatch, capsys):
    """A trial a killed session left running whose run file is whole is told from that
    file on --resume, not run again: it was counted as run ("1 trials run, 1 kept")."""
    import tomli_w
    real = sweep.run_task

    def killed_after_writing(run, runs_dir, profiles, stem=None):
        rows = real(run, runs_dir, profiles, stem)
        if stem.startswith("trial-0001"):
            raise KeyboardInterrupt   # the file is whole; the study was never told
        return rows
    spec = _spec(method="random", trials=2)
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(spec))
    out = tmp_path / "out"
    monkeypatch.setattr(sweep, "run_task", killed_after_writing)
    with pytest.raises(KeyboardInterrupt):
        search.run_search(spec, out, serial=True)
    monkeypatch.setattr(sweep, "run_task", real)
    assert main(["sweep", str(path), "--serial", "--resume", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(
        "0 trials run, 2 kept from the study (1 recovered from its run file), 0 failed;")


def test_dry_run_shows_the_range_optuna_searches(tmp_path):
    """Optuna lowers a high that is not low + k * step to the last step below it (and
    warns only when the trials run): the dry run showed hidden: 8 .. 17 step 4."""
    spec = _spec(space={"hidden": {"low": 8, "high": 17, "step": 4},
                        "lr": {"low": 0.001, "high": 0.0105, "step": 0.002},
                        "epochs": {"low": 1, "high": 3, "step": 2},
                        "batch_size": {"choices": [512]}})
    lines = search.dry_run_lines(sweep.load_spec(spec))
    assert lines[1:] == ["  hidden: 8 .. 16 step 4 (high = 17 is not on a step from 8)",
                         "  lr: 0.001 .. 0.009 step 0.002 (high = 0.0105 is not on a step "
                         "from 0.001)",
                         "  epochs: 1 .. 3 step 2", "  batch_size: one of 512"]
    with pytest.warns(UserWarning, match="replaced with"):   # Optuna's, when trials run
        assert search.distributions(sweep.load_spec(spec).search)["hidden"].high == 16


@pytest.mark.parametrize("objectives", [["per_inference_j:min", "test_accuracy:max"],
                                        ["energy_j:min"]])
def test_search_page_energy_up_the_y_axis_has_its_unit(objectives):
    """An energy as the first objective is plotted up the y axis: its ticks read 2e-7 .. with
    a bare 1e-7 offset above them; only the x axis had the unit's labels (``200 nJ``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.ticker import EngFormatter
    from optuna.distributions import IntDistribution
    spec = sweep.load_spec(_spec(objectives=objectives))
    study = optuna.create_study(directions=spec.search.directions)
    for i, joules in enumerate([2.1e-7, 2.6e-7, 3.4e-7]):
        study.add_trial(optuna.trial.create_trial(
            params={"hidden": 8 + i}, distributions={"hidden": IntDistribution(4, 32)},
            values=[joules, 0.5 + i / 10][:len(objectives)]))
    fig = search_page._plot(study, spec.search, [0])
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    assert isinstance(ax.yaxis.get_major_formatter(), EngFormatter)
    assert ax.yaxis.get_offset_text().get_text() == ""
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(t.endswith("J") for t in labels), labels
