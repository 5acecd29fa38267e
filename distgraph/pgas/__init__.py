"""PGAS layer: symmetric arrays, put/get/signal, barrier; NVSHMEM (GPU) and MPI-3 RMA (CPU)."""
