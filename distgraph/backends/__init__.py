"""Backend runners: ``cpu/`` (numpy, scipy, numba) and ``gpu/`` (CuPy + kernels/*.cu).
The CPU path never imports CuPy or nvshmem4py."""
