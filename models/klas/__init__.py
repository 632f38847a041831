"""KLAS: KL-divergence-based anchor stitching (ICLR 2026) on tiny ViTs; see experiment.py."""
