"""FS-KAN: permutation-equivariant Kolmogorov-Arnold networks via function sharing."""
