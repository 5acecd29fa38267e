"""CPU kernels (numpy / numba)."""
