"""FS-KAN (arXiv:2509.24472): permutation-equivariant Kolmogorov-Arnold networks via function sharing.

``groups`` (groups by generators, orbits of index pairs), ``layers`` (FS layers, eqs. 12/13),
``tasks`` (procedural signal sets, Fashion-MNIST point sets), ``model`` (networks, the
matched baseline, simulate/experiment/export and the registered card).
"""
from models.fs_kan.groups import (
                                  Group,
                                  cyclic,
                                  fixed,
                                  generated,
                                  natural,
                                  pair_orbits,
                                  point_orbits,
                                  symmetric,
                                  tuples,
)
from models.fs_kan.layers import FSLayer
from models.fs_kan.model import (
                                  CARD,
                                  FSClassifier,
                                  FSConfig,
                                  FSNet,
                                  experiment,
                                  simulate,
)

__all__ = ["CARD", "FSClassifier", "FSConfig", "FSLayer", "FSNet", "Group", "cyclic",
           "experiment", "fixed", "generated", "natural", "pair_orbits", "point_orbits",
           "simulate", "symmetric", "tuples"]
