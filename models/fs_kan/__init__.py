"""FS-KAN (arXiv:2509.24472): permutation-equivariant KA networks by function sharing."""
