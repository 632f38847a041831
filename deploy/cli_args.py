"""The command line's argument types and shared options, for every ``neuroedge`` command.

``deploy.cli`` builds the parser; the commands that live in their own modules
(``deploy.estimate_cli``, ``deploy.sweep_cli``) take their argument types from here too, so
no sub-command imports the CLI that imports it. An argument type raises
``argparse.ArgumentTypeError`` (argparse turns it into the one-line usage error); the
profile loaders raise ``ProfileError`` before any work starts.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from deploy.errors import RunFileError
from hw_profiles.errors import NeuroedgeError, ProfileError

SEED_MAX = 2**32 - 1       # numpy's SeedSequence-free legacy seeding and torch both take this
MIN_WIDTH = 40             # narrower terminals cannot hold a table of figures
PRESETS = ("quick", "full")   # models.registry.PRESETS, spelled here so that building the
                              # parser imports no model (tests check the two agree)
INPUT_DTYPES = ("float32", "int64")   # --input-dtype: float32 values, or int64 token ids
                                      # for a language model (deploy.estimate.token_ids)


# -- argument types -------------------------------------------------------------------------
def parse_seed(text: str) -> int:
    """An argparse type: an integer seed in 0..:data:`SEED_MAX`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer seed; seeds are "
                                         f"integers 0..{SEED_MAX}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{value} is out of range; seeds are integers "
                                         f"0..{SEED_MAX}")
    return value


def _whole_number_at_least(text: str, low: int) -> int:
    """``text`` as an integer >= ``low``, else argparse's one-line refusal."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give a whole "
                                         f"number >= {low}") from None
    if v < low:
        raise argparse.ArgumentTypeError(f"{v} must be >= {low}")
    return v


def parse_positive(text: str) -> int:
    """An argparse type: a whole number >= 1 (counts of workers, steps, samples)."""
    return _whole_number_at_least(text, 1)


def parse_nonnegative(text: str) -> int:
    """An argparse type: a whole number >= 0 (warm-up calls)."""
    return _whole_number_at_least(text, 0)


def parse_positive_float(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (a time step)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give seconds > 0, "
                                         "e.g. 0.001") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds > 0")
    return v


def parse_width(text: str) -> int:
    """An argparse type: characters per line of a terminal report, at least :data:`MIN_WIDTH`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer width") from None
    if value < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{value} is too narrow; give at least {MIN_WIDTH} "
                                         "characters")
    return value


def add_width(p: argparse.ArgumentParser) -> None:
    """``--width N`` on a command that prints tables (``profiles``, ``models``, ``estimate``)."""
    p.add_argument("--width", type=parse_width, default=None, metavar="N",
                   help="characters per line (default: the terminal's width, or $COLUMNS; "
                        f"at least {MIN_WIDTH}); a table that does not fit is printed as lines")


def _is_dir(text: str, what: str, error) -> bool:
    """Whether path ``text`` names a directory; a path the system cannot even look up (a
    name over 255 bytes: ENAMETOOLONG, which ``Path.is_dir`` raises) is one ``error`` line
    naming ``what``, not a traceback."""
    try:
        return Path(text).is_dir()
    except OSError as exc:
        from hw_profiles.loader import clipped
        raise error(f"{what} {clipped(text, 60)!r}: {exc.strerror or exc}; give a shorter "
                    "path") from None


def parse_run_file(text: str) -> str:
    """A run file argument: a directory is refused with a RunFileError that says so."""
    if _is_dir(text, "run file", RunFileError):
        raise RunFileError(f"run file {text!r} is a directory; pass the path of a run file "
                           "(.h5) written by 'neuroedge simulate'")
    return text


# -- profiles -------------------------------------------------------------------------------
def load_profile(text: str, option: str = "profile"):
    """A profile by name or path, with a directory named as such (not "does not exist")."""
    import hw_profiles
    if _is_dir(text, option, ProfileError):
        raise ProfileError(f"{option} {text!r} is a directory; pass a shipped profile name "
                           f"or the path of a .toml file")
    return hw_profiles.load(text)


def load_profiles(text: str, option: str) -> list:
    """Every profile of a comma-separated list, loaded now; the same profile twice is an error
    (``hw_profiles.load_many``: same label; a shipped ``a100`` and a user's file named
    ``a100`` are two profiles, shown by their labels)."""
    import hw_profiles
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise NeuroedgeError(f"{option} {text!r}: expected a comma-separated list of "
                             "profile names or paths, e.g. a100,h100,x86-avx2")
    for name in names:
        if _is_dir(name, f"{option} entry", ProfileError):
            raise ProfileError(f"{option} entry {name!r} is a directory; pass a shipped "
                               "profile name or the path of a .toml file")
    try:
        return hw_profiles.load_many(names)
    except ProfileError as exc:
        raise ProfileError(f"{option}: {exc}") from None


def check_realtime(realtime: bool, profiles) -> None:
    """``--realtime`` needs a neuromorphic step-time model on the run's profile (checked
    before any work; other profiles in a comparison are priced without pacing)."""
    for p in profiles:
        if realtime and not p.core_op_ns:
            raise ProfileError(f"--realtime: profile {p.label!r} ({p.kind}) has no per-core "
                               "step-time model ([core_op_ns], [step_sync]); real-time pacing "
                               "applies to neuromorphic profiles such as loihi2 or truenorth")


# -- option groups --------------------------------------------------------------------------
def add_training_options(p: argparse.ArgumentParser, seed_default) -> None:
    """--preset / --full / --set / --seed: how a model is trained (simulate, export)."""
    p.add_argument("--preset", choices=PRESETS, default=None,
                   help="quick (default: seconds to a few minutes) or full (the "
                        "paper's scale)")
    p.add_argument("--full", action="store_true", help="the same as --preset full")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change one setting of the model's config (repeatable, e.g. --set "
                        "epochs=3); 'neuroedge models' lists the settings")
    p.add_argument("--seed", type=parse_seed, default=seed_default,
                   help=f"0..{SEED_MAX} (default 0)")


def add_report_options(p: argparse.ArgumentParser, json_help: str) -> None:
    """How a command shows its report: --width, --all, --sources, --json, --quiet."""
    p.add_argument("--width", type=parse_width, default=None, metavar="N",
                   help="characters per line of the terminal report (default: the terminal's "
                        f"width; at least {MIN_WIDTH})")
    p.add_argument("--all", dest="full_report", action="store_true",
                   help="the long report: every table and every row (default: the headline "
                        "and what fits in 60 lines)")
    p.add_argument("--sources", action="store_true",
                   help="append the citation of every profile entry the figures use")
    p.add_argument("--json", metavar="PATH", help=json_help + "; '-' writes it to stdout "
                   "(the report then goes to stderr)")
    p.add_argument("--quiet", action="store_true",
                   help="print nothing but errors (files are still written; --json - still "
                        "goes to stdout)")
