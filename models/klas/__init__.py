"""KLAS (KL-divergence-based anchor stitching, ICLR 2026) on a family of three tiny ViTs."""
