"""The deployment layer's exceptions (run files, exports, reports, outputs)."""

from hw_profiles.errors import NeuroedgeError


class RunFileError(NeuroedgeError):
    """A run file is corrupt, foreign, truncated or of an unsupported format version."""


class ExportError(NeuroedgeError):
    """An export target is unknown, its packages are missing, or an exported model
    disagrees with the simulator."""


class ReportError(NeuroedgeError):
    """A report cannot be built from what it was given (no reports, missing directory)."""


class SweepError(NeuroedgeError):
    """A sweep spec is malformed (unknown key, model, setting or profile) or its directory
    already holds run files the sweep would replace."""


class OutputError(NeuroedgeError):
    """An output path cannot be written safely (a directory, an existing file without
    ``--force``, an input of the same command, an unwritable place)."""


class DiskFullError(OutputError):
    """The disk refused a write (full, over quota, failing): unlike a bad path, every later
    write to the same place fails too, so a sweep stops at the first one."""
