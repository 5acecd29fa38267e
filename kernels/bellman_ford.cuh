// bellman_ford.cuh: queue-driven Bellman-Ford SSSP on one or several PEs (GPUs), the device half
// of distgraph/backends/gpu/bellman_ford.py. Compiled twice: kernels/bellman_ford.cu (one PE,
// NVRTC through the loader, no NVSHMEM) and kernels/bellman_ford_nvshmem.cu (several PEs,
// nvcc -rdc + libnvshmem_device through nvshmem_build.py).
//
// Algorithm: Sec. III-C of ../shared/papers/003_2f1f88597b3d0e64.txt (single- and multi-GPU
// Bellman-Ford over the Broker Queue): workers dequeue vertices whose distance improved, relax
// their out-arcs with an atomic minimum on the head's distance, and enqueue a head whose distance
// they lowered (once: an in-queue flag, cleared when the vertex is dequeued, deduplicates).
// Here a worker is a warp: it dequeues up to 32 vertices with one warp-aggregated reservation
// (kernels/broker_queue.cuh, BQ or BWD), then scans them one after the other with the 32 lanes
// striding over the out-arcs, and enqueues the improved heads with one reservation per stride.
//
// Several PEs: PE p owns the vertex block [offsets[p], offsets[p+1]) (1-D partition by arcs),
// its out-arcs, its distances and one queue segment, all in the NVSHMEM symmetric heap. An arc
// whose head another PE owns is relaxed one-sidedly, as chosen by remote_mode:
//   0 "atomic":  compare-and-swap loop on the owner's distance (nvshmem_longlong_atomic_*; NVSHMEM
//                has no fetch-min), then the owner's in-queue flag is swapped and, if it was clear,
//                the head is enqueued into the owner's segment;
//   1 "enqueue": the item (head, candidate, tail) is enqueued into the owner's segment; the owner
//                applies it (local atomic minimum) and enqueues the head locally if it improved.
//
// Distances as 64-bit keys: integer weights are summed in int64 and the key is the distance;
// float weights are summed in float64 and the key is the "ordered int" of the double (bits,
// negative ones with the 63 low bits flipped), so a signed 64-bit atomicMin orders keys as the
// doubles. +inf is the key of +inf (floats) or INT64_MAX (integers).
//
// Termination (distributed, no collectives: several PEs on one GPU forbid them): every PE
// counts the items it enqueued anywhere (ctr[SENT], incremented before the enqueue) and the
// items it finished (ctr[DONE], incremented after the item's own enqueues). Warp 0 of each PE,
// when idle, reads every PE's DONE, then every PE's SENT; equal sums mean that at the instant
// between the two sweeps no item was queued or being processed (SENT >= DONE holds at every
// instant and both only grow), so none ever will be: the PE sets ctl[FINISHED] and its warps end.
//
// Checks (negative weights): a warp that lowers a distance below bound_key (the key of -B-1,
// B = sum of |negative weights|: then the predecessor graph must hold a negative cycle), or that
// brings the PE's scans to scan_limit, asks every PE to stop (ctl[STOP] here, ctr[STOPREQ] on
// PE 0, which warp 0 of every PE polls). Warps stop between items, so the queues keep all the
// remaining work; the host looks for a cycle in pred and relaunches. pred[v] is written after a
// successful minimum, racing with other writers: the host confirms a cycle's weight.
//
// State (per PE; nl = own vertices, local ids v = global - offsets[my_pe])
//   dist[nl]  i64 keys           pred[nl] i64 global tail of the last improvement (-1: none)
//   inq[nl]   int: 1 while the vertex is queued (set by whoever enqueues it)
//   ring/tickets/meta: the queue segment (broker_queue.cuh), items Item{v, cand, u}: u == -1 a
//             vertex to rescan, u >= 0 a remote relaxation (enqueue mode)
//   ctr[24]   u64 symmetric: SENT at 0, DONE at 8, STOPREQ at 16 (one 64-byte line each)
//   ctl[8]    i64 local: scans, arcs, below, finished, stop, abort (an int: dgq::Spin), items
#ifndef DISTGRAPH_BELLMAN_FORD_CUH
#define DISTGRAPH_BELLMAN_FORD_CUH

#include "broker_queue.cuh"

#ifndef DG_BF_FLOAT
#define DG_BF_FLOAT 0
#endif
#ifndef DG_BF_BLOCK
#define DG_BF_BLOCK 128
#endif

#ifdef DISTGRAPH_WITH_NVSHMEM
#define DGBF_FENCE() __threadfence_system()
#else
#define DGBF_FENCE() __threadfence()
#endif

namespace dgbf {

typedef long long i64;
typedef unsigned long long u64;

struct Item {
    i64 v;     // local id at the owner
    i64 cand;  // candidate key (remote relaxation) or 0
    i64 u;     // global tail (remote relaxation) or -1 (rescan v)
};

enum { SENT = 0, DONE = 8, STOPREQ = 16 };
enum { C_SCANS = 0, C_ARCS = 1, C_BELOW = 2, C_FINISHED = 3, C_STOP = 4, C_ABORT = 5, C_ITEMS = 6 };

#define DGBF_FULL 0xffffffffu

__device__ __forceinline__ i64 relax(i64 dk, i64 wbits) {
#if DG_BF_FLOAT
    const i64 flip = 0x7fffffffffffffffLL;
    double du = __longlong_as_double(dk >= 0 ? dk : dk ^ flip);
    i64 b = __double_as_longlong(du + __longlong_as_double(wbits));
    return b >= 0 ? b : b ^ flip;
#else
    return dk + wbits;
#endif
}

__device__ __forceinline__ int owner_of(const i64* offsets, int npes, i64 t) {
    int o = 0;
    while (o + 1 < npes && t >= offsets[o + 1]) ++o;
    return o;
}

__device__ __forceinline__ i64 vload(const i64* p) { return *(const volatile i64*)p; }

#ifdef DISTGRAPH_WITH_NVSHMEM
// Fetch-and-minimum on another PE's element: NVSHMEM has no atomic min, so a CAS loop.
__device__ __forceinline__ i64 remote_min(i64* p, i64 v, int pe) {
    i64 old = nvshmem_longlong_atomic_fetch((long long*)p, pe);
    while (v < old) {
        i64 seen = nvshmem_longlong_atomic_compare_swap((long long*)p, old, v, pe);
        if (seen == old) break;
        old = seen;
    }
    return old;
}
#endif

// Ask every PE to stop at its next item boundary.
__device__ __forceinline__ void request_stop(u64* ctr, i64* ctl, int npes, int my_pe) {
    atomicExch((u64*)(ctl + C_STOP), 1ull);
    if (npes > 1) dgq::amo_set(ctr + STOPREQ, 1ull, 0, my_pe);
}

// The lanes with want enqueue x into this PE's segment, one reservation (warp-collective).
template <bool BQ>
__device__ bool push_local(const dgq::Queue<Item>& q, bool want, const Item& x, u64* ctr) {
    unsigned m = __ballot_sync(DGBF_FULL, want);
    if (m == 0) return true;
    if ((int)(threadIdx.x & 31) == __ffs(m) - 1) {
        atomicAdd(ctr + SENT, (u64)__popc(m));
        DGBF_FENCE();
    }
    __syncwarp();
    dgq::Spin spin(q.abort);
    while (true) {
        int st = q.template enqueue_warp<BQ>(q.my_pe, want, x);
        if (st == DGQ_OK) return true;
        if (st == DGQ_ABORTED) return false;
        if (!spin.wait()) return false;
    }
}

#ifdef DISTGRAPH_WITH_NVSHMEM
// One lane enqueues x into PE o's segment (retrying while it is full).
template <bool BQ>
__device__ bool push_remote(const dgq::Queue<Item>& q, int o, const Item& x, u64* ctr) {
    atomicAdd(ctr + SENT, 1ull);
    DGBF_FENCE();
    dgq::Spin spin(q.abort);
    while (true) {
        int st = q.template enqueue<BQ>(o, x);
        if (st == DGQ_OK) return true;
        if (st == DGQ_ABORTED) return false;
        if (!spin.wait()) return false;
    }
}
#endif

// Lane 0 of warp 0, idle: all DONE counters, then all SENT counters; equal sums end the run.
__device__ void poll_termination(u64* ctr, i64* ctl, int npes, int my_pe) {
    u64 d = 0, s = 0;
    for (int p = 0; p < npes; ++p) d += dgq::amo_fetch(ctr + DONE, p, my_pe);
    DGBF_FENCE();
    for (int p = 0; p < npes; ++p) s += dgq::amo_fetch(ctr + SENT, p, my_pe);
    if (s == d) atomicExch((u64*)(ctl + C_FINISHED), 1ull);
}

template <bool BQ>
__device__ void worker(const i64* __restrict__ indptr, const int* __restrict__ indices, const i64* __restrict__ w,
                       i64* dist, i64* pred, int* inq, Item* ring, u64* tickets, u64* meta, u64 N,
                       const i64* __restrict__ offsets, int npes, int my_pe, u64* ctr, i64* ctl, i64 bound_key,
                       i64 scan_limit, int remote_mode) {
    const int lane = threadIdx.x & 31;
    const i64 gwarp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int* abort_flag = (int*)(ctl + C_ABORT);
    const dgq::Queue<Item> q{ring, tickets, meta, N, npes, my_pe, abort_flag};
    const i64 lo = offsets[my_pe];
    unsigned idle_ns = 32;
    (void)remote_mode;
    while (true) {
        int stop = 0;
        if (lane == 0) {
            stop = (vload(ctl + C_STOP) | vload(ctl + C_FINISHED)) != 0 || *(volatile int*)abort_flag != 0;
            if (!stop && gwarp == 0 && npes > 1 && dgq::amo_fetch(ctr + STOPREQ, 0, my_pe) != 0) {
                atomicExch((u64*)(ctl + C_STOP), 1ull);
                stop = 1;
            }
        }
        if (__shfl_sync(DGBF_FULL, stop, 0)) break;
        Item it;
        bool got = false;
        int st = q.template dequeue_warp<BQ>(my_pe, true, it, got);
        if (st == DGQ_ABORTED) break;
        unsigned gm = __ballot_sync(DGBF_FULL, got);
        if (gm == 0) {
            if (gwarp == 0 && lane == 0) poll_termination(ctr, ctl, npes, my_pe);
            __syncwarp();
            __nanosleep(idle_ns);
            if (idle_ns < 2048) idle_ns <<= 1;
            continue;
        }
        idle_ns = 32;
        const int nitems = __popc(gm);
        i64 scans = 0, arcs = 0;
        int below = 0;
        bool ok = true;
        while (gm) {
            const int sl = __ffs(gm) - 1;
            gm &= gm - 1;
            const i64 v = __shfl_sync(DGBF_FULL, it.v, sl);
            const i64 cand = __shfl_sync(DGBF_FULL, it.cand, sl);
            const i64 u = __shfl_sync(DGBF_FULL, it.u, sl);
            if (u >= 0) {  // a remote relaxation (enqueue mode): apply it here
                bool want = false;
                if (lane == 0) {
                    i64 old = atomicMin((long long*)(dist + v), (long long)cand);
                    if (cand < old) {
                        pred[v] = u;
                        if (cand < bound_key) below = 1;
                        want = atomicExch(inq + v, 1) == 0;
                    }
                }
                Item x{v, 0, -1};
                const bool pushed = push_local<BQ>(q, want, x, ctr);  // warp-collective: always called
                ok = ok && pushed;
                continue;
            }
            if (lane == 0) {
                atomicExch(inq + v, 0);  // a later improvement enqueues v again
                __threadfence();
            }
            __syncwarp();
            const i64 dk = vload(dist + v);
            const i64 ug = lo + v;
            const i64 a = indptr[v], b = indptr[v + 1];
            scans += 1;
            arcs += b - a;
            for (i64 base = a; base < b; base += 32) {
                const i64 k = base + lane;
                bool want = false;
                Item x{0, 0, -1};
#ifdef DISTGRAPH_WITH_NVSHMEM
                int rowner = -1;
                Item rx{0, 0, -1};
#endif
                if (k < b) {
                    const i64 t = indices[k];
                    const i64 ck = relax(dk, w[k]);
                    const int o = npes == 1 ? 0 : owner_of(offsets, npes, t);
                    if (o == my_pe) {
                        const i64 tl = t - lo;
                        if (ck < vload(dist + tl)) {
                            i64 old = atomicMin((long long*)(dist + tl), (long long)ck);
                            if (ck < old) {
                                pred[tl] = ug;
                                if (ck < bound_key) below = 1;
                                want = atomicExch(inq + tl, 1) == 0;
                                x.v = tl;
                            }
                        }
                    }
#ifdef DISTGRAPH_WITH_NVSHMEM
                    else {
                        const i64 tl = t - offsets[o];
                        if (remote_mode == 0) {
                            i64 old = remote_min(dist + tl, ck, o);
                            if (ck < old) {
                                nvshmem_longlong_p((long long*)(pred + tl), ug, o);
                                if (ck < bound_key) below = 1;
                                if (nvshmem_int_atomic_swap(inq + tl, 1, o) == 0) {
                                    rowner = o;
                                    rx.v = tl;
                                }
                            }
                        } else {
                            rowner = o;
                            rx.v = tl;
                            rx.cand = ck;
                            rx.u = ug;
                        }
                    }
#endif
                }
                const bool pushed = push_local<BQ>(q, want, x, ctr);  // warp-collective: always called
                ok = ok && pushed;
#ifdef DISTGRAPH_WITH_NVSHMEM
                if (rowner >= 0 && !push_remote<BQ>(q, rowner, rx, ctr)) ok = false;
                ok = __all_sync(DGBF_FULL, ok);
#endif
            }
        }
        const bool any_below = __any_sync(DGBF_FULL, below);
        if (lane == 0) {
            DGBF_FENCE();  // this item's enqueues (and their SENT) before its DONE
            atomicAdd(ctr + DONE, (u64)nitems);
            atomicAdd((u64*)(ctl + C_ITEMS), (u64)nitems);
            atomicAdd((u64*)(ctl + C_ARCS), (u64)arcs);
            const i64 tot = (i64)atomicAdd((u64*)(ctl + C_SCANS), (u64)scans) + scans;
            if (any_below) {
                atomicExch((u64*)(ctl + C_BELOW), 1ull);
                request_stop(ctr, ctl, npes, my_pe);
            } else if (scan_limit > 0 && tot >= scan_limit && tot - scans < scan_limit) {
                request_stop(ctr, ctl, npes, my_pe);
            }
        }
        if (!__all_sync(DGBF_FULL, ok)) {
            if (lane == 0) atomicExch(abort_flag, 1);
            break;
        }
    }
}

}  // namespace dgbf

#define DGBF_KERNEL(NAME, BQ)                                                                                   \
    extern "C" __global__ void __launch_bounds__(DG_BF_BLOCK)                                                  \
        NAME(const long long* indptr, const int* indices, const long long* w, long long* dist, long long* pred, \
             int* inq, dgbf::Item* ring, unsigned long long* tickets, unsigned long long* meta,                  \
             unsigned long long N, const long long* offsets, int npes, int my_pe, unsigned long long* ctr,      \
             long long* ctl, long long bound_key, long long scan_limit, int remote_mode) {                      \
        dgbf::worker<BQ>(indptr, indices, w, dist, pred, inq, ring, tickets, meta, N, offsets, npes, my_pe, ctr, \
                         ctl, bound_key, scan_limit, remote_mode);                                              \
    }

DGBF_KERNEL(distgraph_bf_queue_bq, true)
DGBF_KERNEL(distgraph_bf_queue_bwd, false)

#endif  // DISTGRAPH_BELLMAN_FORD_CUH
