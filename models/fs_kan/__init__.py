"""FS-KAN (arXiv:2509.24472): permutation-equivariant Kolmogorov-Arnold networks by function sharing."""
