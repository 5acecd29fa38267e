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
// (kernels/broker_queue.cuh, BQ or BWD), lays their out-arcs end to end (a warp prefix sum of
// the degrees; each lane finds its arc's vertex by a 5-step binary search over the lanes), relaxes
// them 32 at a time, and enqueues the improved heads with one reservation per step. A vertex of
// more than split out-arcs (a hub: one warp would scan it alone for milliseconds, the critical
// path of a phase) scans its first split arcs and enqueues the rest as chunks of split arcs.
//
// Near-far priority (Davidson et al., "Work-efficient parallel GPU methods for single-source
// shortest paths", IPDPS 2014), one PE only: a vertex lowered to a key below the threshold thr
// goes into the queue (near), one at or above thr into a far pile (two piles, used in turn).
// When no item is queued or in flight (the termination test below), warp 0 raises thr to
// max(thr, smallest key put in the pile) + delta and hands the pile out as scan tasks
// (Item.u == -2): each moves its entries below thr to the queue and keeps the others in the
// other pile. Without the priority the FIFO queue scans vertices at keys that are not final
// yet, and rescans them after each later improvement (5-8 scans per arc on road graphs).
// thr is only a priority: any improvement is queued near or far, the run ends when the queue,
// the items in flight and the far pile are all empty, negative weights need no special case.
// delta = 0 (several PEs, or asked for) turns it off: thr = INT64_MAX, nothing goes far.
//
// Kept vertices (keep != 0): a warp keeps up to 32 of the near vertices it lowered (one per
// lane, nx) and scans them at its next turn instead of sending them through the queue; the
// rest are enqueued. On high-diameter graphs the run is a long chain of improvements, and each
// link through the queue costs a reservation, a ticket wait and a sleeping warp's wake-up
// (idle warps sleep 32 ns doubling up to idle_max). Kept items count in SENT as enqueued ones
// do (so termination and phase changes wait for them) and go back to the queue at a stop.
//
// Several PEs: PE p owns the vertex block [offsets[p], offsets[p+1]) (1-D partition by arcs),
// its out-arcs, its distances and one queue segment, all in the NVSHMEM symmetric heap. An arc
// whose head another PE owns is relaxed one-sidedly, as chosen by remote_mode:
//   0 "atomic":  compare-and-swap loop on the owner's distance (nvshmem_longlong_atomic_*; NVSHMEM
//                has no fetch-min), then the owner's in-queue flag is swapped and, if it was clear,
//                the head is enqueued into the owner's segment;
//   1 "enqueue": the item (head, candidate, tail) is enqueued into the owner's segment; the owner
//                applies it (local atomic minimum) and enqueues the head locally if it improved.
// Ghost keys (ghost_on, either mode): ghost[t] (local, indexed by global id, +inf at a run's
// start) is the smallest key this PE sent for t or read back from t's owner. The owner's key of
// t only decreases and is at most every key sent to it once that relaxation is applied, so a
// candidate that is not below ghost[t] cannot improve t: it is dropped without a remote access.
// A candidate below it claims the send with a local atomicMin first (a lane of this PE that
// loses the race to a smaller candidate drops its own). Only non-improving relaxations are
// dropped, so distances, negative-cycle detection and termination are unchanged; a run that
// aborts raises, and the next run starts from +inf again.
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
//   inq[nl]   int: 1 while the vertex is queued (set by whoever enqueues it), 2 + b while it
//             is in far pile b (one PE), 0 else; each pile holds a vertex at most once
//   ring/tickets/meta: the queue segment (broker_queue.cuh), items Item{v, cand, u}: u == -1 a
//             vertex to rescan, u >= 0 a remote relaxation (enqueue mode), u == -2 a scan task
//             for far entries [v, cand) of the previous pile, u <= -3 arc chunk -3 - u of v
//   far[2][far_cap] int32 local ids: the far piles; ph[8] i64: thr, phase (pile = phase & 1),
//             count of pile 0 and 1, smallest key put in pile 0 and 1, delta (key units; the
//             double's bits for float keys), +inf's key
//   ctr[24]   u64 symmetric: SENT at 0, DONE at 8, STOPREQ at 16 (one 64-byte line each)
//   ctl[8]    i64 local: scans, arcs, below, finished, stop, abort (an int: dgq::Spin), items
//   ghost[n]  i64 local, by global id (several PEs, ghost_on): see "Ghost keys" above
#ifndef DISTGRAPH_BELLMAN_FORD_CUH
#define DISTGRAPH_BELLMAN_FORD_CUH

#include "broker_queue.cuh"

#ifndef DG_BF_FLOAT
#define DG_BF_FLOAT 0
#endif
#ifndef DG_BF_BLOCK
#define DG_BF_BLOCK 128
#endif
#ifndef DG_BF_MAX_TASKS
#define DG_BF_MAX_TASKS 1024  // scan tasks per phase change (each at least 64 far entries)
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
    i64 v;     // local id at the owner (rescan, remote relaxation) or first far entry (scan task)
    i64 cand;  // candidate key (remote relaxation), end of the far entries (scan task), or 0
    i64 u;     // global tail (remote relaxation), -1 (rescan v) or -2 (scan task)
};

enum { SENT = 0, DONE = 8, STOPREQ = 16 };
enum { C_SCANS = 0, C_ARCS = 1, C_BELOW = 2, C_FINISHED = 3, C_STOP = 4, C_ABORT = 5, C_ITEMS = 6 };
enum { P_THR = 0, P_PHASE = 1, P_CNT = 2, P_FMIN = 4, P_DELTA = 6, P_INF = 7 };
enum { I_NEAR = 1, I_FAR = 2 };  // in-queue flag values besides 0; I_FAR + b: in far pile b

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

// key + delta (the next threshold), saturating at +inf (the integer maximum for integer keys)
__device__ __forceinline__ i64 add_delta(i64 k, i64 delta, i64 inf) {
#if DG_BF_FLOAT
    (void)inf;
    return relax(k, delta);
#else
    return k >= inf - delta ? inf : k + delta;
#endif
}

__device__ __forceinline__ int owner_of(const i64* offsets, int npes, i64 t) {
    int o = 0;
    while (o + 1 < npes && t >= offsets[o + 1]) ++o;
    return o;
}

__device__ __forceinline__ i64 vload(const i64* p) { return *(const volatile i64*)p; }
__device__ __forceinline__ int vloadi(const int* p) { return *(const volatile int*)p; }

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

// Own vertex t was just lowered to key ck: 1 if the caller must enqueue it (near queue),
// 2 if it must append it to far pile cur, 0 if it is queued already.
__device__ __forceinline__ int mark(int* inq, i64 t, i64 ck, i64 thr, int cur, i64* ph) {
    if (ck < thr) return atomicExch(inq + t, I_NEAR) != I_NEAR ? 1 : 0;
    if (ck < vload(ph + P_FMIN + cur)) atomicMin((long long*)(ph + P_FMIN + cur), (long long)ck);  // one hot word
    return atomicCAS(inq + t, 0, I_FAR + cur) == 0 ? 2 : 0;
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

// The lanes with want enqueue x, already counted in SENT (kept items flushed at a stop).
template <bool BQ>
__device__ bool push_counted(const dgq::Queue<Item>& q, bool want, const Item& x) {
    dgq::Spin spin(q.abort);
    while (true) {
        int st = q.template enqueue_warp<BQ>(q.my_pe, want, x);
        if (st == DGQ_OK) return true;
        if (st == DGQ_ABORTED) return false;
        if (!spin.wait()) return false;
    }
}

// Position of the (r+1)-th set bit of m (r < popc(m)).
__device__ __forceinline__ int nth_bit(unsigned m, int r) {
    int p = 0;
    for (int s = 16; s >= 1; s >>= 1) {
        const int q = p + s - 1;
        const unsigned upto = q >= 31 ? m : (m & ((2u << q) - 1));
        if (__popc(upto) <= r) p += s;
    }
    return p;
}

// The lanes with want have a vertex to queue near (warp-collective). With keep, as many as
// the warp has free slots stay in registers (nx, has_nx: this warp scans them next, without a
// trip through the queue: a shorter critical path on high-diameter graphs); the rest, or all
// without keep, are enqueued. Kept items count in SENT as enqueued ones do.
template <bool BQ>
__device__ bool queue_near(const dgq::Queue<Item>& q, bool want, i64 v, u64* ctr, bool keep, Item& nx,
                           bool& has_nx) {
    if (!keep) return push_local<BQ>(q, want, Item{v, 0, -1}, ctr);
    const int lane = threadIdx.x & 31;
    const unsigned wm = __ballot_sync(DGBF_FULL, want);
    if (wm == 0) return true;
    const unsigned fm = __ballot_sync(DGBF_FULL, !has_nx);
    const int nw = __popc(wm), nf = __popc(fm);
    const unsigned below = (1u << lane) - 1;
    const int rf = __popc(fm & below);  // this free slot takes the rf-th wanting lane's vertex
    const i64 got = __shfl_sync(DGBF_FULL, v, nth_bit(wm, rf < nw ? rf : 0));
    const int nkeep = nw < nf ? nw : nf;
    if (!has_nx && rf < nkeep) {
        nx = Item{got, 0, -1};
        has_nx = true;
    }
    if (lane == 0) {
        atomicAdd(ctr + SENT, (u64)nkeep);
        DGBF_FENCE();
    }
    __syncwarp();
    return push_local<BQ>(q, want && __popc(wm & below) >= nkeep, Item{v, 0, -1}, ctr);
}

// The lanes with want append v to far pile cur (warp-collective). False if the pile is
// full, which the protocol rules out (one entry per vertex per pile): the run aborts.
__device__ __forceinline__ bool far_append(bool want, i64 v, int* far, i64* ph, int cur, i64 cap) {
    unsigned m = __ballot_sync(DGBF_FULL, want);
    if (m == 0) return true;
    const int lane = threadIdx.x & 31, leader = __ffs(m) - 1;
    i64 base = 0;
    if (lane == leader) base = (i64)atomicAdd((u64*)(ph + P_CNT + cur), (u64)__popc(m));
    base = __shfl_sync(DGBF_FULL, base, leader);
    const i64 at = base + __popc(m & ((1u << lane) - 1));
    if (want && at < cap) far[(i64)cur * cap + at] = (int)v;
    return base + __popc(m) <= cap;
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

// Warp 0, idle (warp-collective): all DONE counters, then all SENT counters; equal sums
// mean no item is queued or in flight. Then an empty far pile ends the run; otherwise the
// threshold rises past the pile's smallest key and the pile is handed out as scan tasks.
template <bool BQ>
__device__ bool poll_termination(const dgq::Queue<Item>& q, u64* ctr, i64* ctl, i64* ph, int npes, int my_pe) {
    const int lane = threadIdx.x & 31;
    i64 ntasks = 0, cnt = 0, chunk = 0;
    if (lane == 0) {
        u64 d = 0, s = 0;
        for (int p = 0; p < npes; ++p) d += dgq::amo_fetch(ctr + DONE, p, my_pe);
        DGBF_FENCE();
        for (int p = 0; p < npes; ++p) s += dgq::amo_fetch(ctr + SENT, p, my_pe);
        if (s == d) {
            const int cur = (int)(vload(ph + P_PHASE) & 1);
            cnt = vload(ph + P_CNT + cur);
            if (cnt == 0) {
                atomicExch((u64*)(ctl + C_FINISHED), 1ull);
            } else {  // quiescent: nobody else touches ph until the tasks are queued
                const i64 thr = vload(ph + P_THR), fmin = vload(ph + P_FMIN + cur), inf = ph[P_INF];
                const i64 base = thr > fmin ? thr : fmin;
                i64 nt = add_delta(base, ph[P_DELTA], inf);
                if (nt <= base && base < inf) nt = base + 1;  // float rounding: still the next key up
                ph[P_THR] = nt;
                ph[P_CNT + (cur ^ 1)] = 0;
                ph[P_FMIN + (cur ^ 1)] = inf;
                ph[P_PHASE] += 1;
                ntasks = (cnt + 63) / 64;
                if (ntasks > DG_BF_MAX_TASKS) ntasks = DG_BF_MAX_TASKS;
                chunk = (cnt + ntasks - 1) / ntasks;
                __threadfence();
                atomicAdd(ctr + SENT, (u64)ntasks);
                DGBF_FENCE();
            }
        }
    }
    ntasks = __shfl_sync(DGBF_FULL, ntasks, 0);
    cnt = __shfl_sync(DGBF_FULL, cnt, 0);
    chunk = __shfl_sync(DGBF_FULL, chunk, 0);
    for (i64 t0 = 0; t0 < ntasks; t0 += 32) {
        const i64 t = t0 + lane;
        const i64 e = (t + 1) * chunk;
        Item x{t * chunk, e < cnt ? e : cnt, -2};
        dgq::Spin spin(q.abort);
        while (true) {
            int st = q.template enqueue_warp<BQ>(q.my_pe, t < ntasks, x);
            if (st == DGQ_OK) break;
            if (st == DGQ_ABORTED || !spin.wait()) return false;
        }
    }
    return true;
}

template <bool BQ>
__device__ void worker(const i64* __restrict__ indptr, const int* __restrict__ indices, const i64* __restrict__ w,
                       i64* dist, i64* pred, int* inq, Item* ring, u64* tickets, u64* meta, u64 N,
                       const i64* __restrict__ offsets, int npes, int my_pe, u64* ctr, i64* ctl, i64 bound_key,
                       i64 scan_limit, int remote_mode, i64* ph, int* far, i64 far_cap, int keep_flag,
                       unsigned idle_max, i64 split, i64* ghost, int ghost_on) {
    const int lane = threadIdx.x & 31;
    const i64 gwarp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int* abort_flag = (int*)(ctl + C_ABORT);
    const dgq::Queue<Item> q{ring, tickets, meta, N, npes, my_pe, abort_flag};
    const i64 lo = offsets[my_pe];
    unsigned idle_ns = 32;
    const bool keep = keep_flag != 0;
    Item nx{0, 0, -1};  // this lane's kept vertex (keep), scanned at the warp's next turn
    bool has_nx = false;
    (void)remote_mode;
    (void)ghost;
    (void)ghost_on;
    while (true) {
        int stop = 0;
        if (lane == 0) {
            stop = (vload(ctl + C_STOP) | vload(ctl + C_FINISHED)) != 0 || *(volatile int*)abort_flag != 0;
            if (!stop && gwarp == 0 && npes > 1 && dgq::amo_fetch(ctr + STOPREQ, 0, my_pe) != 0) {
                atomicExch((u64*)(ctl + C_STOP), 1ull);
                stop = 1;
            }
        }
        if (__shfl_sync(DGBF_FULL, stop, 0)) {
            // kept vertices go back to the queue, which keeps all the work across a stop
            const int ab = __shfl_sync(DGBF_FULL, lane == 0 ? *(volatile int*)abort_flag : 0, 0);
            if (!ab && __any_sync(DGBF_FULL, has_nx) && !push_counted<BQ>(q, has_nx, nx) && lane == 0)
                atomicExch(abort_flag, 1);
            break;
        }
        Item it;
        bool got = false;
        if (__any_sync(DGBF_FULL, has_nx)) {  // kept vertices first
            it = nx;
            got = has_nx;
            has_nx = false;
        } else {
            int st = q.template dequeue_warp<BQ>(my_pe, true, it, got);
            if (st == DGQ_ABORTED) break;
        }
        unsigned gm = __ballot_sync(DGBF_FULL, got);
        if (gm == 0) {
            if (gwarp == 0 && !poll_termination<BQ>(q, ctr, ctl, ph, npes, my_pe)) {
                if (lane == 0) atomicExch(abort_flag, 1);
                break;
            }
            __syncwarp();
            __nanosleep(idle_ns);
            if (idle_ns < idle_max) idle_ns <<= 1;
            continue;
        }
        idle_ns = 32;
        const int nitems = __popc(gm);
        // the phase is fixed while any item is in flight (it changes only when all are done)
        const i64 thr = vload(ph + P_THR);
        const int cur = (int)(vload(ph + P_PHASE) & 1);
        int below = 0;
        bool ok = true;
        // (1) scan tasks and remote relaxations, one after the other, by the whole warp
        unsigned special = __ballot_sync(DGBF_FULL, got && (it.u >= 0 || it.u == -2));
        while (special) {
            const int sl = __ffs(special) - 1;
            special &= special - 1;
            const i64 v = __shfl_sync(DGBF_FULL, it.v, sl);
            const i64 cand = __shfl_sync(DGBF_FULL, it.cand, sl);
            const i64 u = __shfl_sync(DGBF_FULL, it.u, sl);
            if (u == -2) {  // far entries [v, cand) of the previous pile: near now, or kept
                const int old = cur ^ 1;
                for (i64 base = v; base < cand; base += 32) {
                    const i64 j = base + lane;
                    bool wn = false, wf = false;
                    i64 x = 0;
                    if (j < cand) {
                        x = far[(i64)old * far_cap + j];
                        if (vloadi(inq + x) == I_FAR + old) {
                            const i64 dx = vload(dist + x);
                            if (dx < thr) {
                                wn = atomicCAS(inq + x, I_FAR + old, I_NEAR) == I_FAR + old;
                            } else if (atomicCAS(inq + x, I_FAR + old, I_FAR + cur) == I_FAR + old) {
                                wf = true;
                                if (dx < vload(ph + P_FMIN + cur))
                                    atomicMin((long long*)(ph + P_FMIN + cur), (long long)dx);
                            }
                        }
                    }
                    ok = queue_near<BQ>(q, wn, x, ctr, keep, nx, has_nx) && ok;
                    ok = far_append(wf, x, far, ph, cur, far_cap) && ok;
                }
                continue;
            }
            // a remote relaxation (enqueue mode): apply it here
            int want = 0;
            if (lane == 0) {
                i64 old = atomicMin((long long*)(dist + v), (long long)cand);
                if (cand < old) {
                    pred[v] = u;
                    if (cand < bound_key) below = 1;
                    want = mark(inq, v, cand, thr, cur, ph);
                }
            }
            ok = queue_near<BQ>(q, want == 1, v, ctr, keep, nx, has_nx) && ok;  // warp-collective: always called
            ok = far_append(want == 2, v, far, ph, cur, far_cap) && ok;
        }
        // (2) rescans and arc chunks: all their arcs as one list, 32 arcs per step. A vertex of
        // more than split out-arcs scans its first split here and hands the others out as
        // chunk items (u = -3 - k: arcs [k split, (k + 1) split)), which any warp scans with
        // the vertex's distance at that time
        const bool resc = got && it.u == -1;
        const bool chunk = got && it.u <= -3;
        const bool mine = resc || chunk;
        const i64 v = mine ? it.v : 0;
        if (resc) atomicExch(inq + v, 0);  // a later improvement enqueues v again
        __threadfence();
        i64 dk = 0, a = 0, deg = 0, nchunks = 0;
        if (mine) {
            dk = vload(dist + v);
            const i64 a0 = indptr[v], b0 = indptr[v + 1];
            if (chunk) {
                a = a0 + (-3 - it.u) * split;
                deg = b0 - a < split ? b0 - a : split;
            } else {
                a = a0;
                deg = b0 - a0;
                if (split > 0 && deg > split) {
                    nchunks = (deg + split - 1) / split;
                    deg = split;
                }
            }
        }
        for (unsigned bm = __ballot_sync(DGBF_FULL, nchunks > 1); bm; bm &= bm - 1) {
            const int sl = __ffs(bm) - 1;
            const i64 bv = __shfl_sync(DGBF_FULL, v, sl), nc = __shfl_sync(DGBF_FULL, nchunks, sl);
            for (i64 c0 = 1; c0 < nc; c0 += 32)
                ok = push_local<BQ>(q, c0 + lane < nc, Item{bv, 0, -3 - (c0 + lane)}, ctr) && ok;
        }
        i64 incl = deg;
        for (int o = 1; o < 32; o <<= 1) {
            const i64 y = __shfl_up_sync(DGBF_FULL, incl, o);
            if (lane >= o) incl += y;
        }
        const i64 total = __shfl_sync(DGBF_FULL, incl, 31);
        const i64 excl = incl - deg;
        const int scans = __popc(__ballot_sync(DGBF_FULL, resc));
        for (i64 base = 0; base < total; base += 32) {
            const i64 k = base + lane;
            int src = 0;  // the lane whose arc range holds k: the first with incl > k
            for (int s = 16; s >= 1; s >>= 1)
                if (__shfl_sync(DGBF_FULL, incl, src + s - 1) <= k) src += s;
            const i64 ai = __shfl_sync(DGBF_FULL, a, src), ei = __shfl_sync(DGBF_FULL, excl, src);
            const i64 di = __shfl_sync(DGBF_FULL, dk, src), vi = __shfl_sync(DGBF_FULL, v, src);
            int want = 0;
            i64 tl = 0;
#ifdef DISTGRAPH_WITH_NVSHMEM
            int rowner = -1;
            Item rx{0, 0, -1};
#endif
            if (k < total) {
                const i64 e = ai + (k - ei);
                const i64 t = indices[e];
                const i64 ck = relax(di, w[e]);
                const i64 ug = lo + vi;
                const int o = npes == 1 ? 0 : owner_of(offsets, npes, t);
                if (o == my_pe) {
                    tl = t - lo;
                    if (ck < vload(dist + tl)) {
                        i64 old = atomicMin((long long*)(dist + tl), (long long)ck);
                        if (ck < old) {
                            pred[tl] = ug;
                            if (ck < bound_key) below = 1;
                            want = mark(inq, tl, ck, thr, cur, ph);
                        }
                    }
                }
#ifdef DISTGRAPH_WITH_NVSHMEM
                else {
                    const i64 rl = t - offsets[o];
                    bool send = true;
                    if (ghost_on) {
                        send = ck < vload(ghost + t) && ck < (i64)atomicMin((long long*)(ghost + t), (long long)ck);
                    }
                    if (!send) {
                    } else if (remote_mode == 0) {
                        i64 old = remote_min(dist + rl, ck, o);
                        if (ghost_on && old < ck) atomicMin((long long*)(ghost + t), (long long)old);
                        if (ck < old) {
                            nvshmem_longlong_p((long long*)(pred + rl), ug, o);
                            if (ck < bound_key) below = 1;
                            if (nvshmem_int_atomic_swap(inq + rl, I_NEAR, o) == 0) {
                                rowner = o;
                                rx.v = rl;
                            }
                        }
                    } else {
                        rowner = o;
                        rx.v = rl;
                        rx.cand = ck;
                        rx.u = ug;
                    }
                }
#endif
            }
            ok = queue_near<BQ>(q, want == 1, tl, ctr, keep, nx, has_nx) && ok;  // warp-collective: always called
            ok = far_append(want == 2, tl, far, ph, cur, far_cap) && ok;
#ifdef DISTGRAPH_WITH_NVSHMEM
            if (rowner >= 0 && !push_remote<BQ>(q, rowner, rx, ctr)) ok = false;
            ok = __all_sync(DGBF_FULL, ok);
#endif
        }
        const bool any_below = __any_sync(DGBF_FULL, below);
        if (lane == 0) {
            DGBF_FENCE();  // this item's enqueues (and their SENT) before its DONE
            atomicAdd(ctr + DONE, (u64)nitems);
            atomicAdd((u64*)(ctl + C_ITEMS), (u64)nitems);
            atomicAdd((u64*)(ctl + C_ARCS), (u64)total);
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
             long long* ctl, long long bound_key, long long scan_limit, int remote_mode, long long* ph,         \
             int* far, long long far_cap, int keep, unsigned idle_max, long long split, long long* ghost,        \
             int ghost_on) {                                                                                    \
        dgbf::worker<BQ>(indptr, indices, w, dist, pred, inq, ring, tickets, meta, N, offsets, npes, my_pe, ctr, \
                         ctl, bound_key, scan_limit, remote_mode, ph, far, far_cap, keep, idle_max, split, ghost, \
                         ghost_on);                                                                             \
    }

DGBF_KERNEL(distgraph_bf_queue_bq, true)
DGBF_KERNEL(distgraph_bf_queue_bwd, false)

#endif  // DISTGRAPH_BELLMAN_FORD_CUH
