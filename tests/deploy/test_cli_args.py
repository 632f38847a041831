"""deploy.cli_args: the argument types every command shares, and the shared option groups."""
import argparse
import math

import pytest

from deploy.cli_args import (
    MIN_WIDTH,
    SEED_MAX,
    add_report_options,
    add_training_options,
    load_profile,
    load_profiles,
    parse_positive,
    parse_positive_float,
    parse_run_file,
    parse_seed,
    parse_width,
)
from deploy.errors import RunFileError
from hw_profiles.errors import NeuroedgeError, ProfileError


def test_seeds_are_the_integers_numpy_and_torch_both_take():
    assert SEED_MAX == 4_294_967_295                    # 2**32 - 1
    assert parse_seed("0") == 0 and parse_seed(str(SEED_MAX)) == SEED_MAX
    for text, match in (("-1", "-1 is out of range"), (str(SEED_MAX + 1), "out of range"),
                        ("1.5", "'1.5' is not an integer seed")):
        with pytest.raises(argparse.ArgumentTypeError, match=match):
            parse_seed(text)


def test_counts_widths_and_time_steps():
    assert parse_positive("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="0 must be >= 1"):
        parse_positive("0")
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not an integer"):
        parse_positive("x")
    assert parse_positive_float("0.001") == 0.001
    for text in ("0", "-1e-3", "inf", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="finite number of seconds > 0"):
            parse_positive_float(text)
    assert math.isclose(parse_positive_float("1e-4"), 1e-4)
    assert parse_width(str(MIN_WIDTH)) == MIN_WIDTH == 40
    with pytest.raises(argparse.ArgumentTypeError, match="39 is too narrow; give at least 40"):
        parse_width("39")


def test_a_directory_is_named_as_such(tmp_path):
    with pytest.raises(RunFileError, match="is a directory; pass the path of a run file"):
        parse_run_file(str(tmp_path))
    assert parse_run_file("run.h5") == "run.h5"
    with pytest.raises(ProfileError, match="--profile .* is a directory"):
        load_profile(str(tmp_path), "--profile")
    with pytest.raises(ProfileError, match="--compare entry .* is a directory"):
        load_profiles(f"a100,{tmp_path}", "--compare")


def test_profile_lists_load_every_profile_now():
    assert [p.name for p in load_profiles(" a100, loihi2 ,", "--compare")] == ["a100", "loihi2"]
    with pytest.raises(NeuroedgeError, match="--compare ' , ': expected a comma-separated list"):
        load_profiles(" , ", "--compare")
    with pytest.raises(ProfileError, match="^--compare: "):
        load_profiles("a100,a100", "--compare")


def test_the_option_groups():
    p = argparse.ArgumentParser()
    add_training_options(p, seed_default=None)
    add_report_options(p, "write JSON")
    args = p.parse_args(["--preset", "full", "--set", "epochs=3", "--set", "lr=0.1",
                         "--seed", "7", "--width", "80", "--all", "--json", "-"])
    assert (args.preset, args.set, args.seed) == ("full", ["epochs=3", "lr=0.1"], 7)
    assert (args.width, args.full_report, args.json, args.quiet) == (80, True, "-", False)
    assert p.parse_args([]).seed is None
