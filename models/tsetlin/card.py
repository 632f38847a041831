"""The Tsetlin machine's card: its config, presets and the three contract functions.

``simulate`` trains :class:`models.tsetlin.model.TsetlinMachine` on booleanised data
(``data.py``) on a BitwiseDevice and tests it; every op of training (``train``) and
inference (``infer``) lands in the device's ledger, so the run prices per training sample
and per inference on any bitwise profile. ``artifact`` rebuilds the trained include masks
as the engine's ClauseLayer for the C exporter, without training. This file stays light
(no numba): ``neuroedge models`` imports every card.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.registry import Card, Outcome, Study, Trained, register
from sim.errors import ModelError

if TYPE_CHECKING:   # the engine, imported only for the annotation (cards stay light)
    from sim.bitwise.device import BitwiseDevice

N_GOLDEN = 16
"""Test samples a run keeps (packed) as the golden inputs of its C export."""


@dataclass
class TsetlinConfig:
    """Hyperparameters; defaults are the Noisy XOR demo of pyTsetlinMachine."""

    clauses: int = 10             # per class (pyTsetlinMachine NoisyXORDemo: 10)
    T: int = 15                   # vote target
    s: float = 3.9                # specificity
    state_bits: int = 8           # N = 128 states per action (bit-plane code default)
    boost_true_positive: bool = False
    polarity: str = "alternate"   # "alternate": +,-,+,... ; "positive": the convergence paper's
    epochs: int = 200
    limit_train: int | None = None  # keep the first this many training samples (None: all)
    limit_test: int | None = None   # ... and test samples
    seed: int = 0

    def __post_init__(self):
        if int(self.clauses) < 1 or (self.polarity == "alternate" and self.clauses % 2):
            raise ModelError(f"TsetlinConfig.clauses = {self.clauses}: need >= 1 (an even "
                             "number with polarity='alternate')")
        if int(self.T) < 1:
            raise ModelError(f"TsetlinConfig.T = {self.T}: the vote target must be an integer "
                             ">= 1")
        if not self.s >= 1.0:
            raise ModelError(f"TsetlinConfig.s = {self.s}: the specificity must be >= 1")
        if not 2 <= int(self.state_bits) <= 16:
            raise ModelError(f"TsetlinConfig.state_bits = {self.state_bits}: use 2..16")
        if self.polarity not in ("alternate", "positive"):
            raise ModelError(f"TsetlinConfig.polarity = {self.polarity!r}: 'alternate' or "
                             "'positive'")
        if int(self.epochs) < 1:
            raise ModelError(f"TsetlinConfig.epochs = {self.epochs}: must be >= 1")
        for name in ("limit_train", "limit_test"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise ModelError(f"TsetlinConfig.{name} = {v}: must be >= 1 (or None: all)")

    def check_device(self, profile, dataset: str) -> None:
        """Refuse, before any data is loaded, a ``profile`` whose writable memory cannot
        hold this machine's automata on ``dataset`` (``runner.prepare`` calls it;
        ``simulate`` reserves the same bytes for the machine it built)."""
        from sim.bitwise.device import check_state_fits, check_word_bits
        from sim.errors import HardwareLimitError
        need = train_state_bytes(self, dataset, check_word_bits(profile))
        try:
            check_state_fits(profile, need, scope="train", who="runner.prepare")
        except HardwareLimitError as exc:   # say which setting fits, and where this one does
            raise HardwareLimitError(f"{exc}: {self._what_fits(profile, dataset)}") from None

    def _what_fits(self, profile, dataset: str) -> str:
        """The most clauses per class ``profile``'s writable memory holds (even, as
        'alternate' polarity needs) and the shipped bitwise profiles that hold this config."""
        import hw_profiles
        from sim.bitwise.device import check_state_fits, check_word_bits
        from sim.errors import NeuroedgeError
        from sim.execution.mcu import WRITABLE

        def fits(prof) -> bool:
            try:
                check_state_fits(prof, train_state_bytes(self, dataset, check_word_bits(prof)))
            except NeuroedgeError:   # too small (HardwareLimitError), or no usable word width
                return False
            return True
        per_clause = train_state_bytes(self, dataset, check_word_bits(profile)) // int(self.clauses)
        writable = sum(int(level.capacity_bytes.value) for key, level in profile.memory.items()
                       if key in WRITABLE)
        most = writable // per_clause
        if self.polarity == "alternate":
            most -= most % 2
        hint = (f"at most {most} clauses per class fit on {profile.name} (--set clauses={most})"
                if most >= 1 else f"not one clause per class fits on {profile.name}")
        shipped = [p.name for p in map(hw_profiles.load, hw_profiles.available())
                   if p.kind == "bitwise" and fits(p)]
        return hint + (f", or run it on {', '.join(shipped)}" if shipped else
                       "; no shipped bitwise profile holds it")


def train_state_bytes(cfg: TsetlinConfig, dataset: str, word_bits: int) -> int:
    """Bytes of the automata a machine keeps on ``dataset`` (its bit-plane state, written at
    every update): classes x clauses x ``state_bits`` planes x the words of the 2 o literals
    (digits, 32-bit words: 10 x 100 x 8 x 6 words x 4 B = 384,000 B)."""
    from models.tsetlin.data import FEATURES
    o, n_classes = FEATURES[dataset]
    words = -(-2 * o // word_bits)
    return n_classes * int(cfg.clauses) * int(cfg.state_bits) * words * (word_bits // 8)


PRESETS = {
    # quick: seconds (the CLI default); Fashion-MNIST on its first 5,000 / 1,000 images.
    # Noisy XOR is the pyTsetlinMachine demo in both (200 epochs take ~1 s).
    "quick": {"noisy-xor": {"clauses": 10, "T": 15, "s": 3.9, "epochs": 200},
              "digits": {"clauses": 100, "T": 10, "s": 5.0, "epochs": 10},
              "fashion-mnist": {"clauses": 200, "T": 15, "s": 10.0, "epochs": 2,
                                "limit_train": 5000, "limit_test": 1000}},
    "full": {"noisy-xor": {"clauses": 10, "T": 15, "s": 3.9, "epochs": 200},
             "digits": {"clauses": 400, "T": 20, "s": 5.0, "epochs": 40},
             "fashion-mnist": {"clauses": 1000, "T": 25, "s": 10.0, "epochs": 10}},
}


def load_data(dataset: str, cfg: TsetlinConfig):
    """Booleans for ``dataset`` (``data.py``); Noisy XOR is drawn with the run's seed."""
    from models.tsetlin import data
    return data.load(dataset, cfg.seed, cfg.limit_train, cfg.limit_test)


def simulate(cfg: TsetlinConfig, device: BitwiseDevice, data, progress=None) -> Outcome:
    """Train a Tsetlin machine on ``data`` on ``device`` (a BitwiseDevice) and test it
    (``model.simulate``)."""
    from models.tsetlin import model
    return model.simulate(cfg, device, data, progress)


def experiment(preset: str, seed: int, profiles, progress=None) -> Study:
    """Noisy XOR runs and the convergence study of the 2-bit operators (``experiment.py``)."""
    from models.tsetlin.experiment import study
    return study(preset, seed, profiles, progress)


def artifact(trained: Trained, target: str):
    """The trained clause layer + golden inputs (target ``c``), from the arrays only."""
    from models.tsetlin.model import clause_layer
    from sim.artifacts import BitwiseArtifact
    if target != "c":
        raise ModelError(f"tsetlin artifact: target {target!r}; the Tsetlin machine exports "
                         "to 'c' only")
    layer = clause_layer(trained.arrays["include"], trained.arrays["polarity"],
                         trained.meta["word_bits"])
    return BitwiseArtifact([layer], trained.arrays["golden_x"], trained.meta["profile"])


METRICS = {"test_accuracy": "1", "energy_per_train_sample_j": "J",
           "energy_per_inference_j": "J", "included_literals_per_clause": "literals",
           "state_bytes": "B", "model_bytes": "B"}
"""Metric units: the two energies are the run's own pricing on its profile."""

CARD = Card(
    name="tsetlin",
    title="The Tsetlin Machine (Granmo 2018) + Convergence Analysis of Tsetlin Machines "
          "under Noise-Free and Noisy Training Conditions (ICLR 2026)",
    reference="Granmo, arXiv:1804.01508; Jiao, Zhang, Granmo et al., ICLR 2026, "
              "OpenReview feOrSQdD9Y",
    claim="a bit-plane TM learns Noisy XOR to 100% and converges to absorbing x1 AND x2 "
          "clauses; OR with T > floor(m/2) never absorbs",
    device_kinds=("bitwise",),
    datasets=("digits", "fashion-mnist", "noisy-xor"),
    config=TsetlinConfig,
    presets=PRESETS,
    # STM32L4R5 (a Cortex-M4 with 640 KB of SRAM): the quick digits machine's 384,000 B
    # of automata do not fit the generic cortex-m4's 192 KB (nor cortex-m7's 320 KB)
    default_profile="stm32l4r5",
    default_dataset="digits",
    exports=("c",),
    export_dataset="digits",
    study_profiles={"bitwise": "cortex-m4"},
    metrics=METRICS,
    main_metric="test_accuracy",
)
METHOD = register(CARD, simulate=simulate, experiment=experiment, artifact=artifact,
                  load_data=load_data)
