"""The command line helps a user who mistypes (issue 35 item 4): the closest name in one
line, examples in every ``--help``, a shell completion script, tables that fit 80 columns,
scaled units and no "nan" in what people read."""
from __future__ import annotations

import pytest

from deploy.cli import main
from hw_profiles.errors import did_you_mean, suggestion


def _error(capsys, argv) -> str:
    """The one error line of ``neuroedge ARGV`` (argparse's errors exit; the rest return)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err   # one line
    return err.strip()


def test_did_you_mean_picks_the_closest_or_nothing():
    # difflib ratio 2*M/T: 'a10' vs 'a100' = 2*3/7 = 0.86; vs 'h100' = 2*2/7 = 0.57
    assert did_you_mean("a10", ["h100", "a100", "loihi2"]) == "a100"
    # two letters swapped beats one letter changed at the same score ("mpl" suggested ppl)
    assert did_you_mean("mpl", ["ppl", "mlp", "pc"]) == "mlp"
    assert did_you_mean("A100", ["a100"]) == "a100"          # case is ignored
    assert did_you_mean("zzzz", ["a100", "h100"]) is None   # nothing shares a letter
    assert suggestion("quik", ["quick", "full"]) == "did you mean 'quick'?"
    assert suggestion("quik", ["quick"], "neuroedge models") == \
        "did you mean 'quick'? (neuroedge models lists them)"


@pytest.mark.parametrize("argv, line", [
    (["simulate", "mlpp"],
     "neuroedge: error: unknown model 'mlpp': did you mean 'mlp'? (neuroedge models lists them)"),
    (["simulate", "mlp", "--profile", "a10"],
     "neuroedge: error: unknown hardware profile 'a10': did you mean 'a100'? (neuroedge "
     "profiles lists them)"),
    (["profiles", "show", "a10"],
     "neuroedge: error: unknown hardware profile 'a10': did you mean 'a100'? (neuroedge "
     "profiles lists them)"),
    (["simulate", "mlp", "--dataset", "digitz"],
     "neuroedge: error: model 'mlp' takes datasets digits, fashion-mnist; got 'digitz': did "
     "you mean 'digits'?"),
    (["simulate", "mlp", "--set", "epoch=3"],
     "neuroedge: error: --set epoch: mlp has no setting 'epoch'; did you mean 'epochs'? "
     "(neuroedge models lists them)"),
    (["simulate", "mlp", "--preset", "quik"],
     "neuroedge: error: --preset: invalid choice 'quik'; did you mean 'quick'? (see "
     "'neuroedge simulate --help')"),
    (["export", "mlp", "--target", "onx"],
     "neuroedge: error: --target: invalid choice 'onx'; did you mean 'onnx'? (see "
     "'neuroedge export --help')"),
    (["simulat"],
     "neuroedge: error: command: invalid choice 'simulat'; did you mean 'simulate'? (see "
     "'neuroedge --help')"),
])
def test_a_mistyped_name_gets_the_closest_in_one_line(tmp_path, monkeypatch, capsys, argv,
                                                       line):
    monkeypatch.chdir(tmp_path)
    assert _error(capsys, argv) == line


def test_a_mistyped_stack_gets_the_closest():
    import hw_profiles
    from hw_profiles.errors import NeuroedgeError
    from sim.execution import resolve_stack
    with pytest.raises(NeuroedgeError, match=r"stack 'eger' is not a software stack of "
                                             r"profile 'a100' \(gpu\); did you mean "
                                             r"'eager'\? its stacks are eager, graph, fused$"):
        resolve_stack(hw_profiles.load("a100"), "eger")


def test_nothing_close_still_lists_every_choice(capsys):
    err = _error(capsys, ["simulate", "mlp", "--preset", "zzz"])
    assert err.startswith("neuroedge: error: --preset: invalid choice 'zzz'; choose from "
                          "'quick', 'full'")


# -- units scaled, no "nan" -----------------------------------------------------------------
@pytest.fixture
def costly():
    """tests/data/toy-gpu.toml with mac_fp32 at 7e8 pJ (0.7 mJ) per op."""
    from conftest import TOY_GPU

    import hw_profiles
    text = TOY_GPU.read_text().replace('mac_fp32 = { value = 2.0, unit = "pJ"',
                                       'mac_fp32 = { value = 7e8, unit = "pJ"')
    assert "7e8" in text
    return hw_profiles.loads(text)


def test_op_table_scales_the_price_of_one_op(costly):
    from deploy.formatting import report_tables
    from sim.ledger import Ledger
    from sim.pricing import price
    led = Ledger()
    with led.scope("infer"):
        led.add("mac_fp32", 1000)
        led.add_bytes("offchip", read=4000)
        led.add_samples(10)
    header, rows = report_tables(price(led, costly))["op"]
    by_op = {r[0]: r for r in rows}
    assert header == ("op", "count", "each", "energy", "%")
    # 7e8 pJ = 7e-4 J = 700 uJ each; 1000 x 0.7 mJ = 0.7 J = 700 mJ
    assert by_op["mac_fp32"][1:4] == ("1,000", "700 uJ", "700 mJ")
    # 10 pJ/B stays in pJ; 4000 B = 4 kB; 4000 x 10 pJ = 40 nJ
    read = next(r for k, r in by_op.items() if "read" in k)
    assert read[1:4] == ("4 kB", "10 pJ/B", "40 nJ")
    assert not any("0000" in cell for r in rows for cell in r[2:4])


def test_a_run_without_training_reads_no_training_not_nan(costly):
    import hw_profiles
    from deploy.formatting import NOT_AVAILABLE, comparison_cells, format_energy, significant
    from deploy.terminal import comparison_lines
    from sim.ledger import Ledger
    from sim.pricing import price
    assert format_energy(float("nan")) == NOT_AVAILABLE == significant(float("nan"))
    led = Ledger()
    with led.scope("infer"):
        led.add("flop_fp32", 100)
        led.add_samples(4)
    reports = [price(led, hw_profiles.load("a100")), price(led, costly)]
    text = "\n".join(comparison_lines(reports, 100))
    assert "no training" in text and "nan" not in text.lower()
    # a scope one report sampled and the other did not: an em dash, not "nan J"
    other = Ledger()
    other.add("flop_fp32", 100, scope="train")
    header, rows = comparison_cells([reports[0], price(other, costly)])
    assert rows[1][header.index("infer J/sample")] == NOT_AVAILABLE
    assert "nan" not in repr(rows).lower()


# -- listings at 80 columns -----------------------------------------------------------------
def _listing(capsys, monkeypatch, argv, columns=80) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(argv) == 0
    return capsys.readouterr().out


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_profiles_at_80_columns_keep_every_description_whole(capsys, monkeypatch):
    import hw_profiles
    out = _listing(capsys, monkeypatch, ["profiles"])
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    names = hw_profiles.available()
    # a title, then per profile one facts line and its description in at most 2 lines (a
    # table at 80 columns gave the description one word per line: 10+ lines per profile)
    assert len(lines) <= 1 + 3 * len(names)
    for name in names:
        p = hw_profiles.load(name)
        assert _flat(p.description) in _flat(out)   # never split across cells
        assert f"{name}: {p.kind}, " in out


def test_models_at_80_columns_keep_titles_and_datasets_whole(capsys, monkeypatch):
    import models
    out = _listing(capsys, monkeypatch, ["models"])
    assert max(map(len, out.splitlines())) <= 80
    for m in models.REGISTRY.values():
        assert f"{m.card.name}: {_flat(m.card.title)}" in _flat(out)
        assert f"datasets {', '.join(m.card.datasets)};" in _flat(out)


def test_profile_show_at_80_columns(capsys, monkeypatch):
    out = _listing(capsys, monkeypatch, ["profiles", "show", "a100"])
    long = [ln for ln in out.splitlines() if len(ln) > 80]
    assert all(ln.strip().startswith("https://") for ln in long), long   # URLs stay whole
    assert "energy_pj.mac_fp32 = " in out and " pJ (derived; " in out


def test_profiles_width_is_an_option(capsys, monkeypatch):
    # `profiles --width 160` read 160 as the 'show' action ("invalid choice: '160'")
    out = _listing(capsys, monkeypatch, ["profiles", "--width", "160"], columns=80)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 160 and any(len(ln) > 80 for ln in lines)
    assert "┃ name" in out and "description" in out   # wide enough for the table
    err = _error(capsys, ["profiles", "--width", "20"])
    assert "--width: 20 is too narrow; give at least 40" in err
