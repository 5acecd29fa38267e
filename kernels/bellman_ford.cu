// bellman_ford.cu: queue-driven Bellman-Ford SSSP on one GPU (one PE, no NVSHMEM), compiled by
// NVRTC through distgraph/backends/gpu/loader.py. The algorithm, the state arrays and the
// kernel arguments are described in bellman_ford.cuh; kernels/bellman_ford_nvshmem.cu is the
// same code for several PEs. Defines: DG_BF_FLOAT (0: int64 distances, 1: float64), DG_BF_BLOCK.
#include "bellman_ford.cuh"
