"""The model layer's exceptions (datasets)."""

from hw_profiles.errors import NeuroedgeError


class DatasetError(NeuroedgeError):
    """A dataset is missing, corrupt or asked for with bad arguments."""
