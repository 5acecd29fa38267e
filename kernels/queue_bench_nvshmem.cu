// distgraph-compile: nvshmem
// queue_bench_nvshmem.cu: the queue benchmarks and history recorder over NVSHMEM, one queue
// segment per PE (see queue_bench.cuh), plus the device half of the GPU PGAS layer
// (distgraph/pgas/nvshmem.py): host-requested atomics, which this NVSHMEM build does not
// implement on the host. Built with nvcc -rdc=true and linked against libnvshmem_device
// (distgraph/backends/gpu/nvshmem_build.py).
#ifndef DISTGRAPH_WITH_NVSHMEM
#define DISTGRAPH_WITH_NVSHMEM 1
#endif
#include "queue_bench.cuh"

DGQ_BENCH_KERNELS(bq, true)
DGQ_BENCH_KERNELS(bwd, false)

// One atomic on element p of PE pe, for the host: op 0 fetch_add, 1 fetch, 2 set,
// 3 compare_swap (cond); the old value goes to out[0]. Launch with one thread.
extern "C" __global__ void distgraph_pgas_amo(unsigned long long *p, int pe, int op, unsigned long long v,
                                              unsigned long long cond, unsigned long long *out) {
    unsigned long long old = 0;
    switch (op) {
        case 0: old = nvshmem_ulonglong_atomic_fetch_add(p, v, pe); break;
        case 1: old = nvshmem_ulonglong_atomic_fetch(p, pe); break;
        case 2: nvshmem_ulonglong_atomic_set(p, v, pe); break;
        default: old = nvshmem_ulonglong_atomic_compare_swap(p, cond, v, pe); break;
    }
    nvshmem_quiet();
    out[0] = old;
}
