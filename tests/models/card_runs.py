"""What the contract and same-seed tests share about running every registered card: which
cards' quick runs are slow, and the toy profile a card's quick run uses.

``SLOW``: cards whose quick run takes more than ~10 s here; those run only under ``-m
slow``. A card not listed is not slow. Seconds: one quick run through ``runner.run`` on
the toy profile of the card's default kind, wall time on the shared 2-core machine (its
load average in brackets).
"""
from pathlib import Path

import pytest

SLOW = {               # measured 2026-12-01, load ~2: wall s (CPU s)
    "pc": 10,          # 30 epochs of 20 inference iterations (21 s CPU on 2 threads)
    "diffpc": 13,      # 30 epochs of 15 x 8 spike steps per sample on loihi2
    "klas": 16,        # trains the anchor family, the probes and the supernet
    "filter_heads": 25,   # 300 steps, two mask searches, patching
    "trainref": 15,    # MAE pre-training, probe checkpoints, two vote rounds, 4 baselines
    "conformal_hashing": 41,   # 6 counted epochs of 1500 source + target images (9 s idle)
    "decoupled_prototypes": 10,   # 2 x 2 epochs of DINO on 2000 images (75 s at load ~6)
    "geo_inr_id": 16,  # 200 counted Adam steps, kNN/FisherS on 2000 x 256 (6 CPU s on one
                       # thread; 100 s wall with two torch threads at load ~9)
    "geb": 62,         # 5 seeds x 3 arms x 10 online iterations, counted (145 s at load ~11)
    "latent": 236,     # 3 seeds x 3 methods x 20 PPO iterations after a 200-step warm-up
                       # (66 s CPU; 236 s wall at load ~10)
    "apple": 17,       # 3 seeds x 3 policies x 12 rollouts, seed 0 counted (65 s at load ~8)
    "dave": 79,        # MAE, 2 Stage-2 copies, merge, generalist, 6 fresh decoders D (load ~5;
                       # 58 CPU s)
    "screener": 19,    # 2 x 30 SSL steps of two 3D UNets + 6 densities x 100 steps; the first
                       # 2 steps of each loop and the deployed density counted (load ~1;
                       # 33 s at load ~4)
    "ppl": 14,         # 60 Adam steps of 16 32-px figures, 1 counted; counted eval + 4
                       # iterations on 64 occluded images (14 s wall at load 0.5; 49 s wall,
                       # 30 s CPU at load 3.5)
}
# not slow: mlp 4, bep 1, chunk_sparse_attention 5 (11 CPU s), fs_kan 7, snn_cuba 0.2,
# tsetlin 0.3, tversky 6

DATA = Path(__file__).resolve().parents[1] / "data"
KIND_PROFILE = {"gpu": str(DATA / "toy-gpu.toml"), "cpu": "x86-avx2",
                "neuromorphic": str(DATA / "toy-neuro.toml"), "bitwise": "cortex-m4"}
"""A toy (or small shipped) profile per kind; x86-avx2 and cortex-m4 are shipped."""


def param(name: str):
    """``name`` as a pytest parameter, marked slow when its quick run is."""
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


def toy_profile(card) -> str:
    """The toy profile of the kind of ``card``'s default profile. A neuromorphic card runs on
    its own default chip: the 32-neuron toy profile has no spike payload bits (DiffPC's
    ternary spikes need them) and too little synapse memory for the CUBA network; a bitwise
    card on its own default microcontroller too (the Tsetlin machine's training state does
    not fit cortex-m4's SRAM)."""
    from hw_profiles import load
    kind = load(card.default_profile).kind
    return (card.default_profile if kind in ("neuromorphic", "bitwise")
            else KIND_PROFILE[kind])


def missing_data(card) -> str | None:
    """Why the card's default dataset cannot be loaded here (None: it can)."""
    from models.errors import DatasetError
    from models.shared import datasets
    try:
        datasets.check_available(card.default_dataset)
    except DatasetError as exc:
        return f"needs {card.default_dataset}: {exc}"
    return None
