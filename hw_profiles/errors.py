"""neuroedge's base exception, and the profile layer's own.

Each layer keeps its exceptions in its own ``errors.py`` (``hw_profiles`` <- ``sim`` <-
``models`` <- ``deploy``), all derived from :class:`NeuroedgeError`, which stays here in the
lowest layer so every package can catch it. Messages name the input, what is wrong and what
would be right.
"""


class NeuroedgeError(Exception):
    """Base class of every error neuroedge raises on purpose.

    The CLI prints these as one line and exits non-zero; anything else is a bug
    and keeps its traceback.
    """


class ProfileError(NeuroedgeError):
    """A hardware profile is malformed, unknown or inconsistent."""
