// queue_bench.cu: the queue benchmarks and history recorder on one GPU without NVSHMEM
// (every segment index must be 0 == my_pe; see queue_bench.cuh for the kernels).
#include "queue_bench.cuh"

DGQ_BENCH_KERNELS(bq, true)
DGQ_BENCH_KERNELS(bwd, false)
