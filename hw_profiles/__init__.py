"""Hardware profiles: plain data loaded from TOML, validated once (see SCHEMA.md)."""
from hw_profiles.errors import NeuroedgeError, ProfileError
from hw_profiles.loader import available, from_dict, label_for, load, load_many, loads
from hw_profiles.ops import OP_CODES, OP_NAMES, OPS
from hw_profiles.profile import (
    KINDS,
    MEMORY_LEVELS,
    PROVENANCES,
    HardwareProfile,
    MemoryLevel,
    Quantity,
    Source,
)

__all__ = ["load", "load_many", "label_for", "loads", "from_dict", "available",
           "HardwareProfile", "Quantity",
           "MemoryLevel", "Source", "ProfileError", "NeuroedgeError", "OPS", "OP_NAMES",
           "OP_CODES", "KINDS", "MEMORY_LEVELS", "PROVENANCES"]
