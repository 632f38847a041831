"""The CLI probe's defects (issue: probe_cli a/, b/, c/, e/), each as its smallest failing
input: every one was a traceback, a refusal only after the training, a message naming the
wrong thing, or a silent acceptance."""
from __future__ import annotations

import shutil
import subprocess
import tomllib

import pytest
import tomli_w

import hw_profiles
from deploy.cli import build_parser, main
from deploy.completion import script
from hw_profiles.errors import NeuroedgeError
from hw_profiles.loader import DATA_DIR
from models import runner
from sim.errors import ModelError, PricingError

LONG = "y" * 300   # longer than a file name may be (255 bytes)


def _doc(name: str) -> dict:
    return tomllib.loads((DATA_DIR / f"{name}.toml").read_text())


def _write(path, doc) -> str:
    path.write_text(tomli_w.dumps(doc))
    return str(path)


def _without_execution(doc: dict) -> dict:
    """``doc`` without [execution], and without the sources only it cited."""
    del doc["execution"]

    def cited(obj):
        if isinstance(obj, dict):
            yield from ([obj["source"]] if isinstance(obj.get("source"), str) else [])
            for v in obj.values():
                yield from cited(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from cited(v)
    used = set(cited({k: v for k, v in doc.items() if k != "sources"}))
    doc["sources"] = {k: v for k, v in doc["sources"].items() if k in used}
    return doc


def _error(capsys) -> str:
    """The one error line the command printed (no traceback, nothing else on stderr)."""
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("neuroedge: error: "), err
    return lines[0]


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a command gets as far as running the model."""
    def execute(*args, **kwargs):
        raise AssertionError("the command trained before refusing its input")
    monkeypatch.setattr(runner, "execute", execute)


# -- item 1: deep nesting ----------------------------------------------------------------------
def test_profiles_show_refuses_a_deeply_nested_file_on_one_line(tmp_path, capsys):
    path = tmp_path / "d500.toml"
    path.write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    assert main(["profiles", "show", str(path)]) == 2
    line = _error(capsys)
    assert "d500.toml" in line and "nested too deeply" in line


# -- item 2: a profile argument too long for a file name ---------------------------------------
def test_a_too_long_hamming_profile_setting_is_one_line(capsys, no_training):
    assert main(["simulate", "conformal_hashing", "--set", f"hamming_profile={LONG}"]) == 2
    line = _error(capsys)
    assert "hamming_profile" in line and "too long" in line and len(line) < 500


def test_profiles_show_of_a_too_long_name_is_one_line(capsys):
    assert main(["profiles", "show", LONG]) == 2
    line = _error(capsys)
    assert "too long" in line.lower() and len(line) < 500


def test_a_too_long_profile_in_a_list_is_one_line():
    with pytest.raises(hw_profiles.ProfileError, match="too long"):
        hw_profiles.load_many(["a100", LONG])


# -- item 3: integers out of range, DiffPC's m ---------------------------------------------------
@pytest.mark.parametrize("model, setting", [
    ("mlp", "hidden=99999999999999999999"),
    ("mlp", "epochs=-99999999999999999999"),
    ("diffpc", "m=100000"),
    ("diffpc", "m=1000"),
    ("diffpc", "m=-99999999999999999999"),
])
def test_out_of_range_integers_are_refused_before_the_run(capsys, no_training, model,
                                                          setting):
    assert main(["simulate", model, "--set", setting]) == 2
    line = _error(capsys)
    key = setting.split("=")[0]
    assert f"--set {key}" in line or f"Config.{key} =" in line, line


def test_the_parser_refuses_integers_outside_int64():
    with pytest.raises(ModelError, match=r"^--set epochs: .*64-bit"):
        runner.parse_overrides("mlp", ["epochs=9223372036854775808"])
    with pytest.raises(ModelError, match=r"^--set epochs: .*64-bit"):
        runner.parse_overrides("mlp", {"epochs": -2**63 - 1})
    assert runner.parse_overrides("mlp", ["epochs=9223372036854775807"]) == \
        {"epochs": 2**63 - 1}


def test_diffpc_m_has_the_range_the_model_runs_in():
    from models.diffpc.card import DiffPCConfig
    for m in (-32, 0, 32):
        assert DiffPCConfig(m=m).m == m
    for m in (-33, 33, 200, 10**20):
        with pytest.raises(ModelError, match=r"DiffPCConfig\.m = "):
            DiffPCConfig(m=m)


# -- item 4: more cores than the mesh ------------------------------------------------------------
def test_profiles_show_refuses_cores_beyond_the_mesh(tmp_path, capsys):
    doc = _doc("loihi")
    doc["limits"]["cores"]["value"] = 2000
    assert main(["profiles", "show", _write(tmp_path / "loihi_overmesh.toml", doc)]) == 2
    line = _error(capsys)
    assert "cores = 2000" in line and "= 128" in line


# -- item 5: a gpu profile without [execution] ---------------------------------------------------
def _noexec(tmp_path, name="a100.toml"):
    return _write(tmp_path / name, _without_execution(_doc("a100")))


def test_simulate_refuses_a_gpu_profile_without_execution_before_training(tmp_path, capsys,
                                                                         no_training):
    path = _noexec(tmp_path)
    assert main(["simulate", "mlp", "--profile", path]) == 2
    line = _error(capsys)
    assert "[execution]" in line and "(file: " in line
    assert "--profile a100" not in line   # the shipped profile is not this file


def test_a_user_file_without_execution_gets_a_hint_for_its_file(tmp_path):
    from sim.execution.gpu_cpu import price
    from sim.ledger import Ledger
    prof = hw_profiles.load(_noexec(tmp_path))
    with pytest.raises(PricingError) as exc:
        price(Ledger(), prof)
    msg = str(exc.value)
    assert prof.label in msg and "--profile a100" not in msg and "[execution]" in msg


def test_an_old_snapshot_without_execution_still_loads_and_points_to_the_shipped_one():
    from sim.execution.gpu_cpu import price
    from sim.ledger import Ledger
    doc = _without_execution(_doc("a100"))
    prof = hw_profiles.from_dict(doc, origin="run file snapshot")   # what an old run holds
    with pytest.raises(PricingError, match=r"--profile a100\)"):
        price(Ledger(), prof)


# -- item 6: pricing errors name the profile's file ----------------------------------------------
def test_a_missing_op_names_the_user_file_not_the_shipped_name(tmp_path):
    from sim.ledger import Ledger
    from sim.pricing import check_prices
    doc = _doc("loihi")
    del doc["energy_pj"]["hop"], doc["throughput"]["hop"]
    prof = hw_profiles.load(_write(tmp_path / "loihi.toml", doc))
    led = Ledger()
    led.add("hop", 5, scope="run")
    with pytest.raises(PricingError) as exc:
        check_prices(led, prof)
    assert f"profile {prof.label!r} has no energy for op(s) hop" in str(exc.value)
    check_prices(led, hw_profiles.load("loihi"))   # the shipped one prices hop


def test_reprice_names_a_non_neuromorphic_file_by_its_label(toy_gpu_path):
    from sim.execution.neuromorphic import reprice
    label = hw_profiles.load(toy_gpu_path).label
    with pytest.raises(PricingError, match=r"\(file: "):
        reprice(lambda prof: None, [toy_gpu_path])
    assert "(file: " in label


# -- item 7: a huge offending value --------------------------------------------------------------
def test_profiles_show_caps_a_huge_offending_value(tmp_path, capsys):
    text = (DATA_DIR / "a100.toml").read_text()
    path = tmp_path / "bigschema.toml"   # the probe's file: a 900,090-character error line
    path.write_text(text.replace("schema_version = 1", "schema_version = [" + "1," * 300_000
                                 + "]", 1))
    assert main(["profiles", "show", str(path)]) == 2
    line = _error(capsys)
    assert "schema_version" in line and len(line) < 300


# -- item 8: DAVE's counted_steps ----------------------------------------------------------------
def test_dave_refuses_negative_counted_steps_naming_it(capsys, no_training):
    from models.dave.card import DaveConfig
    with pytest.raises(ModelError, match=r"DaveConfig\.counted_steps = -1: must be >= 0"):
        DaveConfig(counted_steps=-1)
    assert DaveConfig(counted_steps=0).counted_steps == 0   # counting none is allowed
    assert main(["simulate", "dave", "--set", "counted_steps=-1"]) == 2
    assert "counted_steps" in _error(capsys)


# -- item 9: errors name the setting -------------------------------------------------------------
def test_filter_heads_errors_name_the_flat_setting():
    from models.filter_heads.card import FilterHeadsConfig
    with pytest.raises(ModelError, match=r"FilterHeadsConfig\.search_fmt = 'bad'") as exc:
        FilterHeadsConfig(search_fmt="bad")
    assert "comma, bullet, numbered" in str(exc.value)
    for key, value in (("orders", ("bad",)), ("formats", ("bad",)), ("task_kinds", ("bad",))):
        with pytest.raises(ModelError, match=rf"\.{key} = ") as exc:
            FilterHeadsConfig(**{key: value})
        assert "mask search takes" not in str(exc.value)   # not about the search
    with pytest.raises(ModelError, match="search_pairs") as exc:   # a search setting: named
        FilterHeadsConfig(search_pairs=0)


def test_hamming_profile_errors_name_the_setting():
    from models.conformal_hashing.card import ColaConfig
    with pytest.raises(NeuroedgeError, match=r"^ColaConfig\.hamming_profile: .*'a10'") as exc:
        ColaConfig(hamming_profile="a10")
    assert "a100" in str(exc.value)   # the suggestion is kept


# -- item 10: fish offers files for a profile ----------------------------------------------------
FISH = shutil.which("fish")


@pytest.mark.skipif(FISH is None, reason="no fish on this machine")
@pytest.mark.parametrize("line", ["neuroedge simulate mlp --profile {d}/pre",
                                  "neuroedge profiles show {d}/pre"])
def test_fish_offers_profile_files(tmp_path, line):
    path = tmp_path / "neuroedge.fish"
    path.write_text(script(build_parser(), "fish"))
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "prefix.toml").write_text("")
    cmd = f"source {path}; complete -C '{line.format(d=d)}'"
    out = subprocess.run([FISH, "--no-config", "-c", cmd], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert [ln.split("\t")[0] for ln in out.splitlines()] == [f"{d}/prefix.toml"]


@pytest.mark.skipif(FISH is None, reason="no fish on this machine")
def test_fish_still_offers_profile_names(tmp_path):
    path = tmp_path / "neuroedge.fish"
    path.write_text(script(build_parser(), "fish"))
    out = subprocess.run([FISH, "--no-config", "-c",
                          f"source {path}; complete -C 'neuroedge simulate mlp --profile loihi'"],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert sorted(ln.split("\t")[0] for ln in out.splitlines()) == \
        ["loihi", "loihi-pohoiki-beach", "loihi2"]


# -- item 11: argument errors point to the command's help ----------------------------------------
def _usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return _error(capsys)


def test_profiles_with_a_name_but_no_show_says_use_show(capsys):
    line = _usage_error(capsys, ["profiles", "loihi"])
    assert "profiles show loihi" in line and "invalid choice" not in line
    assert line.endswith("(see 'neuroedge profiles --help')")


def test_argument_errors_point_to_the_subcommand_help(capsys):
    line = _usage_error(capsys, ["simulate", "mlp", "--bogus"])
    assert "unrecognized arguments: --bogus" in line
    assert line.endswith("(see 'neuroedge simulate --help')")
    line = _usage_error(capsys, ["profiles", "show"])
    assert line.endswith("(see 'neuroedge profiles --help')")
    line = _usage_error(capsys, ["profiles", "show", "loihi", "extra"])
    assert line.endswith("(see 'neuroedge profiles --help')")
    line = _usage_error(capsys, ["--bogus"])   # no command: the top-level help
    assert line.endswith("(see 'neuroedge --help')")


# -- item 12: -0.0 -------------------------------------------------------------------------------
def test_profiles_show_prints_negative_zero_as_zero(tmp_path, capsys):
    doc = _doc("a100")
    doc["energy_pj"]["mac_fp32"]["value"] = -0.0
    assert main(["profiles", "show", _write(tmp_path / "nz.toml", doc), "--width", "200"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if "mac_fp32" in ln and "pJ" in ln)
    assert "-0" not in row and " 0 " in row
