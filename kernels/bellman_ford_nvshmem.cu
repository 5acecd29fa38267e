// distgraph-compile: nvshmem
// bellman_ford_nvshmem.cu: queue-driven Bellman-Ford SSSP on several PEs with device-side
// NVSHMEM (remote atomic minimum or remote enqueue, distributed termination), built with
// nvcc -rdc=true and linked against libnvshmem_device (distgraph/backends/gpu/nvshmem_build.py).
// The algorithm, the state arrays and the kernel arguments are described in bellman_ford.cuh.
#ifndef DISTGRAPH_WITH_NVSHMEM
#define DISTGRAPH_WITH_NVSHMEM 1
#endif
#include "bellman_ford.cuh"
