"""The simulation layer's exceptions (ledgers, pricing, hardware limits, bad model input)."""

from hw_profiles.errors import NeuroedgeError


class LedgerError(NeuroedgeError):
    """A ledger count is invalid (unknown op, negative count, bad scope)."""


class PricingError(NeuroedgeError):
    """A ledger cannot be priced on a profile (op or memory level not in the profile)."""


class HardwareLimitError(NeuroedgeError):
    """A model does not fit the hardware described by a profile."""


class ModelError(NeuroedgeError):
    """A model is unknown, misconfigured or given input of the wrong shape."""


class NotExportable(ModelError):
    """A trained model that is whole and valid but of a kind the target cannot take (a
    recurrent BEP-TT network for the feed-forward C export): not a corrupt run file."""
