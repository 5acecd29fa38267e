// queue_bench.cuh: the queue benchmarks of the multi-GPU queue paper (Sec. IV,
// ../shared/papers/003_2f1f88597b3d0e64.txt) and a history recorder, over broker_queue.cuh.
// Included by queue_bench.cu (single GPU, no NVSHMEM) and queue_bench_nvshmem.cu (any PEs).
//
// Workloads (items are long long values base + j, j the PE-local op index, so that the host
// can check that the values dequeued over all PEs are exactly 0 .. total-1, each once):
//   enq   : ops enqueues over the grid (EnqDeq phase 1)
//   deq   : ops dequeues over the grid, out[j] = the value of the j-th dequeue (phase 2)
//   mixed : even blocks enqueue ops items while odd blocks dequeue ops items (Mixed)
// Segment policy: policy == 0 enqueues into one's own segment; policy == 1 spreads enqueues
// round-robin over the segments ((my_pe + j) % nseg). Dequeues start at one's own segment and
// move to the next one on EMPTY. FULL moves an enqueue to the next segment. Both retry with
// back-off until done or aborted (*abort set by a spin that ran over DGQ_SPIN_LIMIT).
// stats[0] counts FULL/EMPTY answers (retries), stats[1] counts aborted operations.
// Kernels: distgraph_queue_{enq,deq,mixed}_{bq,bwd}[_warp] (_warp: warp-aggregated
// reservations) and distgraph_queue_history_{bq,bwd}.
#ifndef DISTGRAPH_QUEUE_BENCH_CUH
#define DISTGRAPH_QUEUE_BENCH_CUH

#include "broker_queue.cuh"

namespace dgq {

typedef Queue<long long> QLL;

__device__ __forceinline__ QLL make_queue(long long* ring, u64* tickets, u64* meta, u64 N, int nseg,
                                          int my_pe, int* abort) {
    QLL q;
    q.ring = ring; q.tickets = tickets; q.meta = meta; q.N = N; q.nseg = nseg; q.my_pe = my_pe;
    q.abort = abort;
    return q;
}

template <bool BQ>
__device__ void enq_range(const QLL& q, long long ops, long long base, int policy, long long first,
                          long long stride, u64* stats) {
    for (long long j = first; j < ops; j += stride) {
        int s = policy ? (int)((q.my_pe + j) % q.nseg) : q.my_pe;
        Spin spin(q.abort);
        int tries = 0;
        while (true) {
            int st = q.template enqueue<BQ>(s, base + j);
            if (st == DGQ_OK) break;
            if (st == DGQ_ABORTED) { atomicAdd(stats + 1, 1ull); return; }
            atomicAdd(stats, 1ull);
            s = (s + 1) % q.nseg;
            if (++tries % q.nseg == 0 && !spin.wait()) { atomicAdd(stats + 1, 1ull); return; }
        }
    }
}

template <bool BQ>
__device__ void deq_range(const QLL& q, long long ops, long long* out, long long first, long long stride,
                          u64* stats) {
    for (long long j = first; j < ops; j += stride) {
        int s = q.my_pe;
        Spin spin(q.abort);
        int tries = 0;
        while (true) {
            long long x;
            int st = q.template dequeue<BQ>(s, x);
            if (st == DGQ_OK) { out[j] = x; break; }
            if (st == DGQ_ABORTED) { atomicAdd(stats + 1, 1ull); return; }
            atomicAdd(stats, 1ull);
            s = (s + 1) % q.nseg;
            if (++tries % q.nseg == 0 && !spin.wait()) { atomicAdd(stats + 1, 1ull); return; }
        }
    }
}

// Warp-aggregated forms: the loop runs while any lane of the warp has an op left.
template <bool BQ>
__device__ void enq_range_warp(const QLL& q, long long ops, long long base, int policy, long long first,
                               long long stride, u64* stats) {
    long long j = first;
    int s = policy ? (int)((q.my_pe + (first / 32)) % q.nseg) : q.my_pe;
    Spin spin(q.abort);
    int tries = 0;
    while (__any_sync(0xffffffffu, j < ops)) {
        bool want = j < ops;
        int st = q.template enqueue_warp<BQ>(s, want, base + (want ? j : 0));
        if (st == DGQ_ABORTED) { if ((threadIdx.x & 31) == 0) atomicAdd(stats + 1, 1ull); return; }
        if (st == DGQ_OK) {
            if (want) j += stride;
            if (policy) s = (s + 1) % q.nseg;
            tries = 0;
        } else {
            if ((threadIdx.x & 31) == 0) atomicAdd(stats, 1ull);
            s = (s + 1) % q.nseg;
            if (++tries % q.nseg == 0 && !spin.wait()) { if ((threadIdx.x & 31) == 0) atomicAdd(stats + 1, 1ull); return; }
        }
    }
}

template <bool BQ>
__device__ void deq_range_warp(const QLL& q, long long ops, long long* out, long long first, long long stride,
                               u64* stats) {
    long long j = first;
    int s = q.my_pe;
    Spin spin(q.abort);
    int tries = 0;
    while (__any_sync(0xffffffffu, j < ops)) {
        bool want = j < ops;
        long long x = 0;
        bool got = false;
        int st = q.template dequeue_warp<BQ>(s, want, x, got);
        if (st == DGQ_ABORTED) { if ((threadIdx.x & 31) == 0) atomicAdd(stats + 1, 1ull); return; }
        if (got) { out[j] = x; j += stride; }
        if (st != DGQ_OK) {
            if ((threadIdx.x & 31) == 0) atomicAdd(stats, 1ull);
            s = (s + 1) % q.nseg;
            if (++tries % q.nseg == 0 && !spin.wait()) { if ((threadIdx.x & 31) == 0) atomicAdd(stats + 1, 1ull); return; }
        } else {
            tries = 0;
        }
    }
}

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

}  // namespace dgq

#define DGQ_ARGS long long *ring, unsigned long long *tickets, unsigned long long *meta, \
    unsigned long long N, int nseg, int my_pe, int *abort, unsigned long long *stats
#define DGQ_MAKE dgq::make_queue(ring, tickets, meta, N, nseg, my_pe, abort)

#define DGQ_BENCH_KERNELS(SUFFIX, BQ)                                                            \
    extern "C" __global__ void distgraph_queue_enq_##SUFFIX(DGQ_ARGS, long long ops, long long base, \
                                                            int policy) {                        \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;                          \
        dgq::enq_range<BQ>(q, ops, base, policy, t, (long long)gridDim.x * blockDim.x, stats);   \
    }                                                                                            \
    extern "C" __global__ void distgraph_queue_deq_##SUFFIX(DGQ_ARGS, long long ops, long long *out) { \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;                          \
        dgq::deq_range<BQ>(q, ops, out, t, (long long)gridDim.x * blockDim.x, stats);            \
    }                                                                                            \
    extern "C" __global__ void distgraph_queue_mixed_##SUFFIX(DGQ_ARGS, long long ops, long long base, \
                                                              int policy, long long *out) {     \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long nb = gridDim.x / 2 > 0 ? gridDim.x / 2 : 1;                                    \
        long long t = (blockIdx.x / 2) * (long long)blockDim.x + threadIdx.x;                    \
        long long stride = nb * blockDim.x;                                                      \
        if (gridDim.x == 1 || (blockIdx.x & 1) == 0) {                                           \
            if (blockIdx.x / 2 < nb) dgq::enq_range<BQ>(q, ops, base, policy, t, stride, stats); \
        }                                                                                        \
        if (gridDim.x == 1 || (blockIdx.x & 1) == 1)                                             \
            dgq::deq_range<BQ>(q, ops, out, t, stride, stats);                                   \
    }                                                                                            \
    extern "C" __global__ void distgraph_queue_enq_##SUFFIX##_warp(DGQ_ARGS, long long ops,      \
                                                                   long long base, int policy) { \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;                          \
        dgq::enq_range_warp<BQ>(q, ops, base, policy, t, (long long)gridDim.x * blockDim.x, stats); \
    }                                                                                            \
    extern "C" __global__ void distgraph_queue_deq_##SUFFIX##_warp(DGQ_ARGS, long long ops,      \
                                                                   long long *out) {             \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;                          \
        dgq::deq_range_warp<BQ>(q, ops, out, t, (long long)gridDim.x * blockDim.x, stats);       \
    }                                                                                            \
    extern "C" __global__ void distgraph_queue_mixed_##SUFFIX##_warp(DGQ_ARGS, long long ops,    \
                                                                     long long base, int policy, \
                                                                     long long *out) {           \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long nb = gridDim.x / 2 > 0 ? gridDim.x / 2 : 1;                                    \
        long long t = (blockIdx.x / 2) * (long long)blockDim.x + threadIdx.x;                    \
        long long stride = nb * blockDim.x;                                                      \
        if (gridDim.x == 1 || (blockIdx.x & 1) == 0) {                                           \
            if (blockIdx.x / 2 < nb) dgq::enq_range_warp<BQ>(q, ops, base, policy, t, stride, stats); \
        }                                                                                        \
        if (gridDim.x == 1 || (blockIdx.x & 1) == 1)                                             \
            dgq::deq_range_warp<BQ>(q, ops, out, t, stride, stats);                              \
    }                                                                                            \
    /* History: thread t does `per` ops on segment seg; mode 0: enqueue when (t + i) is even,  \
       dequeue otherwise; mode 1: enqueue only; mode 2: dequeue only. Values base + t*per + i; \
       rec[5 * k + ...] = inv, resp, op (0 enq, 1 deq), value (-1: EMPTY), status. */          \
    extern "C" __global__ void distgraph_queue_history_##SUFFIX(DGQ_ARGS, int seg, int per,      \
                                                                long long base, int mode,        \
                                                                long long *rec) {                \
        dgq::QLL q = DGQ_MAKE;                                                                   \
        long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;                          \
        for (int i = 0; i < per; ++i) {                                                          \
            long long *r = rec + 5 * (t * per + i);                                              \
            long long v = base + t * per + i;                                                    \
            long long x = -1;                                                                    \
            bool enq = mode == 1 || (mode == 0 && ((t + i) & 1) == 0);                         \
            unsigned long long t0 = dgq::globaltimer();                                          \
            int st = enq ? q.template enqueue<BQ>(seg, v) : q.template dequeue<BQ>(seg, x);      \
            unsigned long long t1 = dgq::globaltimer();                                          \
            r[0] = (long long)t0; r[1] = (long long)t1; r[2] = enq ? 0 : 1;                      \
            r[3] = enq ? v : (st == DGQ_OK ? x : -1); r[4] = st;           \
            if (st == DGQ_ABORTED) atomicAdd(stats + 1, 1ull);                                   \
        }                                                                                        \
    }

#endif  // DISTGRAPH_QUEUE_BENCH_CUH
