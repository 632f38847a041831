"""neuroedge's exception types: one base class, one subclass per layer.

They live in the lowest layer (``hw_profiles``) so every package can raise them
without breaking the one-way import rule ``hw_profiles <- sim <- models <- deploy``.
Messages name the input, what is wrong and what would be right.
"""


class NeuroedgeError(Exception):
    """Base class of every error neuroedge raises on purpose.

    The CLI prints these as one line and exits non-zero; anything else is a bug
    and keeps its traceback.
    """


class ProfileError(NeuroedgeError):
    """A hardware profile is malformed, unknown or inconsistent."""


class LedgerError(NeuroedgeError):
    """A ledger count is invalid (unknown op, negative count, bad scope)."""


class PricingError(NeuroedgeError):
    """A ledger cannot be priced on a profile (op or memory level not in the profile)."""


class HardwareLimitError(NeuroedgeError):
    """A model does not fit the hardware described by a profile."""


class DatasetError(NeuroedgeError):
    """A dataset is missing, corrupt or asked for with bad arguments."""


class ModelError(NeuroedgeError):
    """A model is unknown, misconfigured or given input of the wrong shape."""


class RunFileError(NeuroedgeError):
    """A run file is corrupt, foreign, truncated or of an unsupported format version."""


class ExportError(NeuroedgeError):
    """An export target is unknown or an exported model disagrees with the simulator."""


class ReportError(NeuroedgeError):
    """A report cannot be built from what it was given (no reports, missing directory)."""


class OutputError(NeuroedgeError):
    """An output path cannot be written safely (a directory, an existing file without
    ``--force``, an input of the same command, an unwritable place)."""
