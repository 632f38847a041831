"""BEP's card: its config, presets and the three contract functions.

``simulate`` trains BEP (the MLP of ``model.py``) on the static bit sets and BEP-TT (the
RNN of ``model_tt.py``) on the sequence sets of ``data.py`` -- the dataset decides, through
the shape of its inputs ((N, F) or (N, T, F)) -- and tests it. Every op of training
(``train``), held-out checks (``validate``) and testing (``infer``) lands in the device's
ledger, which holds integer and word ops only.

One :class:`BEPConfig` covers both networks: its defaults are the MLP setting, and the
presets of the sequence sets carry the paper's RNN values (:data:`TT_SETTING`). This file
stays light (no numba): ``neuroedge models`` imports every card; the run is in ``run.py``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from sim.errors import ModelError

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.bitwise.device import BitwiseDevice

STATIC = ("random-prototypes", "fashion-mnist", "digits")
SEQUENCES = ("cylinder-bell-funnel", "synthetic-control", "digits-rows")
N_GOLDEN = 16
"""Test samples a run keeps (packed) as the golden inputs of its C export."""


@dataclass
class BEPConfig:
    """Hyperparameters of BEP and BEP-TT, plus how much of the data set to use.

    Defaults are the MLP setting: the paper's MLP values were not retrieved, so gamma_0 = 8,
    nu = 0.5, r = 0.5 were tuned by hand on Random Prototypes (``bench/bep.py``);
    p_r = 0.5 is the paper's RNN value. For BEP-TT ``hidden = (K_s, K_y)`` (state width,
    readout width) and ``local`` must stay False; its preset values are
    :data:`TT_SETTING`.
    """

    hidden: tuple[int, ...] = (64, 64)
    epochs: int = 20
    batch_size: int = 100
    r: float = 0.5           # robustness of the trigger (Eq. 1)
    nu: float = 0.5          # gate width (Eq. 5)
    p_r: float = 0.5         # reinforcement strength (CP+R, Sec. 3.3)
    gamma0: int = 8          # first group size of the mask (Eq. 9)
    patience: int = 2        # epochs without held-out improvement before gamma rises
    val_fraction: float = 0.1
    local: bool = False      # True: the local rule baseline (no propagation; MLP only)
    limit_train: int | None = None  # keep the first this many training samples (None: all)
    limit_test: int | None = None   # ... and test samples
    seed: int = 0

    def __post_init__(self):
        self.hidden = tuple(int(h) for h in self.hidden)
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise ModelError(f"BEPConfig.hidden = {self.hidden}: need >= 1 layer of >= 1 unit")
        for name in ("epochs", "batch_size", "gamma0", "patience"):
            if int(getattr(self, name)) < 1:
                raise ModelError(f"BEPConfig.{name} = {getattr(self, name)}: must be >= 1")
        for name, lo, hi in (("r", 0, 1), ("nu", 0, 1), ("p_r", 0, 1), ("val_fraction", 0, 0.5)):
            v = getattr(self, name)
            if not lo <= v <= hi:
                raise ModelError(f"BEPConfig.{name} = {v}: must lie in [{lo}, {hi}]")
        for name in ("limit_train", "limit_test"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise ModelError(f"BEPConfig.{name} = {v}: must be >= 1 (or None: all)")

    def check_device(self, profile, dataset: str) -> None:
        """Refuse, before any data is loaded, a ``profile`` whose writable memory cannot
        hold this network's training state on ``dataset`` (``runner.prepare`` calls it;
        ``simulate`` reserves the same bytes for the network it built)."""
        from sim.bitwise.device import check_state_fits, check_word_bits
        need = train_state_bytes(self, dataset, check_word_bits(profile))
        if need is not None:
            check_state_fits(profile, need, scope="train", who="runner.prepare")


INPUT_BITS = {"random-prototypes": (1000, False), "fashion-mnist": (28 * 28, False),
              "digits": (64 * 4, False), "cylinder-bell-funnel": (8, True),
              "synthetic-control": (8, True), "digits-rows": (8 * 4, True)}
"""Bits per sample (per time step for a sequence set) and whether the set is a sequence, as
``data.py``'s loaders give them (thermometer codes of 4 levels per pixel, 8 per time step),
known without loading: the training state is checked against the device before any data."""


def state_bytes(shapes, word_bits: int) -> int:
    """Bytes of the training state BEP keeps on a device of ``word_bits``-bit words for
    layers of ``shapes`` ((K_in, K_out) each): per layer the int16 counters ``H``
    (K_out x K_in x 2 B), the packed ``W`` (K_out rows of ceil(K_in / word_bits) words) and
    the packed ``W^T`` (K_in rows of ceil(K_out / word_bits) words), each row padded to whole
    words: the arrays ``model.Layer`` holds. The one formula for the check before the data
    (``train_state_bytes``) and the reservation of the network built (``run.simulate``).

    Examples
    --------
    >>> state_bytes([(40, 16)], 32)   # 640 x 2 B of H + (16 x 2 + 40 x 1) words x 4 B
    1568
    """
    wbytes = word_bits // 8
    return sum(2 * k_in * k_out + (k_out * -(-k_in // word_bits)
                                   + k_in * -(-k_out // word_bits)) * wbytes
               for k_in, k_out in shapes)


def layer_shapes(cfg: BEPConfig, dataset: str) -> list[tuple[int, int]] | None:
    """(K_in, K_out) of each trained matrix of the network ``run.build`` makes for
    ``dataset`` (BEP: ``inputs -> hidden...``; BEP-TT: ``W_xs``, ``W_ss``, ``W_sy``). None
    for a BEP-TT config that is not (state width, readout width): the network refuses that
    itself."""
    bits, sequence = INPUT_BITS[dataset]
    if sequence:
        if len(cfg.hidden) != 2:
            return None
        k_s, k_y = cfg.hidden
        return [(bits, k_s), (k_s, k_s), (k_s, k_y)]
    return list(itertools.pairwise((bits, *cfg.hidden)))


def train_state_bytes(cfg: BEPConfig, dataset: str, word_bits: int) -> int | None:
    """Bytes of the training state (:func:`state_bytes`) of the network ``run.build`` makes
    for ``dataset`` on ``word_bits``-bit words, known without loading the data; None where
    :func:`layer_shapes` is."""
    shapes = layer_shapes(cfg, dataset)
    return None if shapes is None else state_bytes(shapes, word_bits)


TT_SETTING = {"hidden": (120, 64), "batch_size": 20, "nu": 0.05, "gamma0": 15}
"""BEP-TT's values where they differ from the MLP defaults: the paper's RNN runs (r = 0.5,
p_r = 0.5, gamma_0 = 15, nu = 0.05, batch 20; 50 epochs there, fewer here)."""

PRESETS = {
    # quick: seconds on 2 cores (the CLI default); Fashion-MNIST on its first 10,000 / 2,000
    # images. full: `neuroedge simulate bep --preset full`
    "quick": {"random-prototypes": {"hidden": (64, 64), "epochs": 5},
              "digits": {"hidden": (64, 64), "epochs": 10},
              "fashion-mnist": {"hidden": (256, 256), "epochs": 2, "limit_train": 10000,
                                "limit_test": 2000},
              **{name: {**TT_SETTING, "epochs": 5} for name in SEQUENCES}},
    "full": {"random-prototypes": {"hidden": (64, 64), "epochs": 30},
             "digits": {"hidden": (128, 128), "epochs": 30},
             "fashion-mnist": {"hidden": (256, 256), "epochs": 15},
             **{name: {**TT_SETTING, "epochs": 30} for name in SEQUENCES}},
}


def load_data(dataset: str, cfg: BEPConfig):
    """The bit-coded set ``dataset`` (``data.py``), cut to the config's limits."""
    from models.bep import data
    return data.for_config(dataset, cfg.limit_train, cfg.limit_test)


def simulate(cfg: BEPConfig, device: BitwiseDevice, data, progress=None) -> Outcome:
    """Train BEP (or BEP-TT) on ``data`` on ``device`` (a BitwiseDevice) and test it
    (``run.simulate``)."""
    from models.bep import run
    return run.simulate(cfg, device, data, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """BEP against the binary local rule and QAT on Random Prototypes (``experiment.py``)."""
    from models.bep.experiment import study
    return study(preset, seed, profiles, progress)


def artifact(trained: Trained, target: str):
    """The trained BEP MLP as packed layers + golden inputs (target ``c``); no training."""
    from models.bep.model import packed_network
    from sim.artifacts import BitwiseArtifact
    if target != "c":
        raise ModelError(f"bep artifact: target {target!r}; BEP exports to 'c' only")
    return BitwiseArtifact(packed_network(trained), trained.arrays["golden_x"],
                           trained.meta["profile"])


METRICS = {"test_accuracy": "1", "train_error": "1", "weights": "count",
           "state_bits_per_weight": "bits", "state_bytes": "B"}
"""Metric units: accuracy and the training error are fractions of samples."""

CARD = Card(
    name="bep",
    title="BEP: A Binary Error Propagation Algorithm for Binary Neural Networks Training",
    reference="Colombo, Pittorino, Zambon, Baldassi, Roveri & Alippi, ICLR 2026, arXiv:2512.04189",
    claim="binary MLPs/RNNs trained with bits and int16 counters only (no float op in the "
          "ledger); BEP beats the binary local rule on Random Prototypes",
    device_kinds=("bitwise",),
    datasets=("random-prototypes", "fashion-mnist", "digits", "digits-rows",
              "cylinder-bell-funnel", "synthetic-control"),
    config=BEPConfig,
    presets=PRESETS,
    default_profile="cortex-m4",
    default_dataset="random-prototypes",
    exports=("c",),
    export_dataset="digits",
    study_profiles={"bitwise": "cortex-m4"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)
