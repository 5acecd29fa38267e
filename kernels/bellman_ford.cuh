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
// delta = 0 (several PEs by default, or asked for) turns it off: thr = INT64_MAX, nothing goes far.
//
// Host-driven phases (the NVSHMEM build, ph[P_HOST] = 1; QueueSSSP(multi_pe_phases=True) on
// several PEs, or on one PE with use_nvshmem=True): thr is one global value for all PEs, the same near/far rule, but
// warp 0 never changes the phase in device code. When the termination test sees no item queued
// or in flight anywhere, every PE ends its launch (ctl[FINISHED]) with its far piles kept; the
// host takes the smallest pile key and the largest pile count over the PEs (MPI), and if a pile
// holds anything sets the same next thr on every PE (max(thr, min key) + delta), flips the
// phase, counts this PE's scan tasks in its SENT and relaunches after a barrier (so no PE can
// see a quiescence before every PE's tasks are counted); warp 0 of each PE queues those tasks
// (ph[P_TASKS] tasks over ph[P_TCNT] entries of the previous pile) at its first idle look. A
// remote relaxation lands above thr on the owner in every remote mode: enqueue and batch items
// are applied by the owner through mark() (near or far, as local ones); in atomic mode the
// sender knows thr: below it, it swaps the owner's flag to near and enqueues unless it was near
// already (a far-pile entry is then stale, as after a local near mark); at or above it, it
// enqueues the vertex only if its flag was 0 (in a pile already: the pile's scan task reads the
// current distance), and the owner, dequeuing a rescan whose key is at or above thr, puts it in
// its far pile instead of scanning it (counted DONE like any item). The pile's smallest key can
// then be stale (too large: a remote minimum lowered a piled vertex), which only makes the next
// thr larger, never skips a vertex (its key is below it).
//
// Phases changed by the PEs' kernels together instead (35e4907, reverted; session11_x2/call5, call6):
// at a global quiescence every PE read the peers' piles, set the same next threshold and waited
// for every PE's announcement of the new phase before its scan tasks. On 2 PEs (one per GPU) it
// gave the 1-PE relaxation counts on road-FLA (6.3 M against 17-25 M without phases) and the same
// answers, but no speed: 42.0 / 40.6 ms against 34.0 / 48.0 ms without phases and 37.6 / 37.6 ms on
// one PE (uniform / shifted weights); on 4 PEs sharing the 2 GPUs the phase tests stalled.
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
//                the head is enqueued into the owner's segment (see "Remote atomic relaxations");
//   3 "atomic_fetch": the same as before session 7 (a fetch before the CAS loop, a swap of the
//                flag always, one queue reservation per lane), kept for A/B timings;
//   1 "enqueue": the item (head, candidate, tail) is enqueued into the owner's segment; the owner
//                applies it (local atomic minimum) and enqueues the head locally if it improved;
//   2 "batch":   no remote access per arc. A candidate below the ghost key (below) claims it locally
//                (t's pair (key, tail) = (candidate, its tail), one 16-byte CAS loop on sm_90, see
//                claim_pair) and, if t is not in the outbox of t's owner
//                yet (flag[t], swapped to 1), appends t there; otherwise the claim is coalesced into
//                the entry already queued. A warp ships an outbox (one lock per destination) once it
//                holds flush_min entries, warp 0 whatever it holds after each of its items or idle
//                looks (one warp: entries gather between its looks instead of leaving one by one,
//                and none waits long): it takes up to DG_BF_BATCH entries,
//                clears each flag[t] and then reads t's pair (so a claim made before the
//                clear is in what it reads, and one after it appends t again), writes the items
//                (owner's local id, candidate, tail) to a staging buffer and sends them with one
//                nvshmemx_putmem_signal_warp into the owner's inbox ring for this source (R items),
//                the signal the count of items written. The owner's warps take up to 32 items at a
//                time from an inbox (claim by CAS, read, release in order, then credit the sender with a
//                remote add: the sender writes only R items past its credit) and apply them as enqueue
//                mode does. An outbox entry counts in SENT from its append; the owner counts the item
//                in DONE when applied, so termination waits for outboxes and inboxes alike.
// Ghost keys (ghost_on, any mode; always on in batch mode, whose outboxes they are): ghost[t] (local, indexed by global id, +inf at a run's
// start) is the smallest key this PE sent for t or read back from t's owner. The owner's key of
// t only decreases and is at most every key sent to it once that relaxation is applied, so a
// candidate that is not below ghost[t] cannot improve t: it is dropped without a remote access.
// A candidate below it claims the send with a local atomicMin first (a lane of this PE that
// loses the race to a smaller candidate drops its own; batch mode: a CAS on the pair of key
// and tail, ghost[2t] and ghost[2t + 1]). Only non-improving relaxations are
// dropped, so distances, negative-cycle detection and termination are unchanged; a run that
// aborts raises, and the next run starts from +inf again.
//
// Remote atomic relaxations (remote_mode 0): each is a chain of round trips to the owner, one
// after the other, and a warp waits for its slowest lane. The CAS loop's first CAS expects the
// ghost key returned by the local atomicMin that claimed the send (+inf without ghost keys), not a
// fetched value: when this PE's last key for t is still the owner's (t lowered by nobody else
// since), one round trip instead of a fetch and a CAS; otherwise the failed CAS returns the
// owner's key (which refreshes the ghost key, as the fetch did) and the loop goes on from it. A CAS
// that replaced +inf is the first improvement of t: nobody has queued t, so the flag is set
// without fetching it (a store to the owner, delivered before the enqueue that follows by the
// queue's nvshmem_fence; no phases only: a far flag could have been set meanwhile) and t is
// enqueued; else the flag is swapped and its old value says whether to enqueue (a set without
// the fetch would enqueue t at every improvement, as remote "enqueue" does). Should the owner lower
// t locally between that CAS and the store, t is queued twice: one extra rescan, never a missed
// one. The lanes' remote enqueues take one reservation per destination (push_remote_warp).
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
//   far[2][far_cap] int32 local ids: the far piles; ph[16] i64: thr, phase (pile = phase & 1),
//             count of pile 0 and 1, smallest key put in pile 0 and 1, delta (key units; the
//             double's bits for float keys), +inf's key, host-driven phases (1) or not, scan
//             tasks to queue at the launch's start and the previous pile's entries they cover
//   ctr[24]   u64 symmetric: SENT at 0, DONE at 8, STOPREQ at 16 (one 64-byte line each)
//   ctl[24]   i64 local: scans, arcs, below, finished, stop, abort (an int: dgq::Spin), items, then
//             counters of remote relaxations (several PEs): dropped by the ghost keys, claims (sent
//             remotely, or claimed into an outbox), coalesced (claims into an entry already queued),
//             shipped (outbox entries put), applied (remote items applied here), flushes (puts);
//             atomic modes: CASes that found another key, remote minima that lowered the owner's
//             key (wins), remote enqueues (any mode but batch), wins from +inf (flag set unfetched)
//   ghost[n]  i64 local, by global id (several PEs, ghost_on): see "Ghost keys" above; batch mode:
//             pairs KeyTail[n] in the same 16 n bytes (key and tail of a claim, claimed together by
//             a 16-byte CAS on sm_90: a key never pairs with another claim's tail; bellman_ford_pairs.cuh)
// Batch mode only (else unused): bst[6][npes] i64 local words, one 64-byte line each: outbox head,
//   tail, items shipped, lock (per destination); inbox claimed, released (per source);
//   oint: flag[n] int (1 while t is in an outbox), then obuf[npes][C] int (t + 1, 0 = empty);
//   bsym[2][npes] u64 symmetric lines: credit[p] (items of mine that p has taken, added by p),
//   sig[p] (items p has put in my inbox, set by p); inbox[npes][R] Item symmetric (ring per source);
//   stage[npes][DG_BF_BATCH] Item symmetric (the put's source, per destination).
#ifndef DISTGRAPH_BELLMAN_FORD_CUH
#define DISTGRAPH_BELLMAN_FORD_CUH

#include "broker_queue.cuh"
#ifdef DISTGRAPH_WITH_NVSHMEM
#include "bellman_ford_pairs.cuh"  // batch mode's (key, tail) claims: a 16-byte CAS (sm_90)
#endif

#ifndef DG_BF_FLOAT
#define DG_BF_FLOAT 0
#endif
#ifndef DG_BF_BLOCK
#define DG_BF_BLOCK 128
#endif
#ifndef DG_BF_BATCH
#define DG_BF_BATCH 1024  // most outbox entries shipped by one put (batch mode)
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
enum { C_SCANS = 0, C_ARCS = 1, C_BELOW = 2, C_FINISHED = 3, C_STOP = 4, C_ABORT = 5, C_ITEMS = 6,
       C_DROPPED = 7, C_CLAIMS = 8, C_COALESCED = 9, C_SHIPPED = 10, C_APPLIED = 11, C_FLUSHES = 12,
       C_CASFAIL = 13, C_RWINS = 14, C_RPUSH = 15, C_RFIRST = 16 };
enum { R_ATOMIC = 0, R_ENQUEUE = 1, R_BATCH = 2, R_ATOMIC_FETCH = 3 };  // remote_mode
enum { B_OHEAD = 0, B_OTAIL = 1, B_OSENT = 2, B_OLOCK = 3, B_RCLAIM = 4, B_RDONE = 5 };
enum { P_THR = 0, P_PHASE = 1, P_CNT = 2, P_FMIN = 4, P_DELTA = 6, P_INF = 7, P_HOST = 8, P_TASKS = 9,
       P_TCNT = 10 };
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
// Fetch-and-minimum on another PE's element: NVSHMEM has no atomic min, so a CAS loop whose
// first CAS expects guess. Returns the value v replaced (then v < it), or the owner's value,
// not above v (nothing written); fails counts the CASes that found another value. A current
// guess costs one round trip; a stale one fails and returns the value, which the next CAS
// expects (keys only decrease within a run: no ABA). With guess >= the value, v >= guess
// writes nothing and returns guess (only for guess = +inf: then v cannot lower anything).
__device__ __forceinline__ i64 remote_min_from(i64* p, i64 v, i64 guess, int pe, unsigned& fails) {
    i64 old = guess;
    while (v < old) {
        const i64 seen = nvshmem_longlong_atomic_compare_swap((long long*)p, old, v, pe);
        if (seen == old) break;
        old = seen;
        ++fails;
    }
    return old;
}

// The same from a fetched value (remote "atomic_fetch", the path before session 7: one more
// round trip per call, kept for A/B timings).
__device__ __forceinline__ i64 remote_min(i64* p, i64 v, int pe, unsigned& fails) {
    return remote_min_from(p, v, nvshmem_longlong_atomic_fetch((long long*)p, pe), pe, fails);
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

// The lanes with want enqueue x into PE s's segment, one reservation (warp-collective), counted
// in this PE's SENT first.
template <bool BQ>
__device__ bool push_to(const dgq::Queue<Item>& q, int s, bool want, const Item& x, u64* ctr) {
    unsigned m = __ballot_sync(DGBF_FULL, want);
    if (m == 0) return true;
    if ((int)(threadIdx.x & 31) == __ffs(m) - 1) {
        atomicAdd(ctr + SENT, (u64)__popc(m));
        DGBF_FENCE();
    }
    __syncwarp();
    dgq::Spin spin(q.abort);
    while (true) {
        int st = q.template enqueue_warp<BQ>(s, want, x);
        if (st == DGQ_OK) return true;
        if (st == DGQ_ABORTED) return false;
        if (!spin.wait()) return false;
    }
}

// The lanes with want enqueue x into this PE's segment, one reservation (warp-collective).
template <bool BQ>
__device__ __forceinline__ bool push_local(const dgq::Queue<Item>& q, bool want, const Item& x, u64* ctr) {
    return push_to<BQ>(q, q.my_pe, want, x, ctr);
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

// The lanes with o >= 0 enqueue x into PE o's segment (warp-collective): one reservation per
// destination (remote "atomic": the lanes' pushes used to reserve one slot each, each lane its
// own round trips on the owner's count and tail words).
template <bool BQ>
__device__ bool push_remote_warp(const dgq::Queue<Item>& q, int o, const Item& x, u64* ctr) {
    bool ok = true;
    for (unsigned left = __ballot_sync(DGBF_FULL, o >= 0); left;) {
        const int od = __shfl_sync(DGBF_FULL, o, __ffs(left) - 1);
        const bool mine = o == od;
        left &= ~__ballot_sync(DGBF_FULL, mine);
        ok = push_to<BQ>(q, od, mine, x, ctr) && ok;
    }
    return ok;
}
#endif

// Batch mode state (see the header); built by the worker from its arguments.
struct Batch {
    i64* bst;
    int* flag;
    int* obuf;
    i64* ghost;  // (key, tail) pairs (bellman_ford_pairs.cuh): pair t at ghost[2t], ghost[2t + 1]
    u64* bsym;
    Item* inbox;
    Item* stage;
    i64 R, C, flush_min;
    const i64* offsets;
    int npes, my_pe;
    __device__ __forceinline__ i64* w(int f, int p) const { return bst + ((i64)f * npes + p) * 8; }
    __device__ __forceinline__ u64* credit(int p) const { return bsym + (i64)p * 8; }
    __device__ __forceinline__ u64* sig(int p) const { return bsym + ((i64)npes + p) * 8; }
};

#ifdef DISTGRAPH_WITH_NVSHMEM
// The lanes with app append global id t (claimed, flag set by them) to the outbox of PE o
// (warp-collective): counted in SENT first, one tail reservation per destination.
__device__ bool batch_append(const Batch& b, bool app, int o, i64 t, u64* ctr, int* abort_flag) {
    const unsigned m = __ballot_sync(DGBF_FULL, app);
    if (m == 0) return true;
    const int lane = threadIdx.x & 31;
    if (lane == __ffs(m) - 1) {
        atomicAdd(ctr + SENT, (u64)__popc(m));
        DGBF_FENCE();
    }
    __syncwarp();
    i64 idx = 0;
    for (unsigned left = m; left;) {
        const int lead = __ffs(left) - 1;
        const int od = __shfl_sync(DGBF_FULL, o, lead);
        const unsigned mo = __ballot_sync(DGBF_FULL, app && o == od);
        i64 base = 0;
        if (lane == lead) base = (i64)atomicAdd((u64*)b.w(B_OTAIL, od), (u64)__popc(mo));
        base = __shfl_sync(DGBF_FULL, base, lead);
        if ((mo >> lane) & 1u) idx = base + __popc(mo & ((1u << lane) - 1));
        left &= ~mo;
    }
    bool ok = true;
    if (app) {
        // the slot's previous entry (idx - C) is shipped already: at most n_o entries are queued
        // (one per flagged vertex) and C > n_o + DG_BF_BATCH; the wait is a safety net
        int* slot = b.obuf + (i64)o * b.C + (idx & (b.C - 1));
        dgq::Spin spin(abort_flag);
        while (vloadi(slot) != 0)
            if (!spin.wait()) {
                ok = false;
                break;
            }
        if (ok) atomicExch(slot, (int)(t + 1));
    }
    return ok;
}

// Ships up to DG_BF_BATCH entries of the outbox for PE o if it holds at least need and its lock
// is free (warp-collective); false when aborted. Never waits for the owner: without credit the
// entries stay for a later flush.
__device__ bool batch_flush(const Batch& b, int o, i64 need, i64* ctl, int* abort_flag) {
    const int lane = threadIdx.x & 31;
    int go = 0;
    i64 h = 0, sent = 0, k = 0;
    if (lane == 0) {
        i64* lock = b.w(B_OLOCK, o);
        if (vload(b.w(B_OTAIL, o)) - vload(b.w(B_OHEAD, o)) >= need && vload(lock) == 0 &&
            atomicCAS((u64*)lock, 0ull, 1ull) == 0ull) {
            __threadfence();
            h = vload(b.w(B_OHEAD, o));
            sent = vload(b.w(B_OSENT, o));
            const i64 room = b.R - (sent - (i64)*(const volatile u64*)b.credit(o));
            const i64 end = b.R - (sent & (b.R - 1));  // one put, no wrap-around
            k = vload(b.w(B_OTAIL, o)) - h;
            if (k > room) k = room;
            if (k > end) k = end;
            if (k > DG_BF_BATCH) k = DG_BF_BATCH;
            if (k > 0) go = 1;
            else atomicExch((u64*)lock, 0ull);
        }
    }
    go = __shfl_sync(DGBF_FULL, go, 0);
    if (!go) return true;
    h = __shfl_sync(DGBF_FULL, h, 0);
    sent = __shfl_sync(DGBF_FULL, sent, 0);
    k = __shfl_sync(DGBF_FULL, k, 0);
    Item* st = b.stage + (i64)o * DG_BF_BATCH;
    const i64 olo = b.offsets[o];
    bool ok = true;
    for (i64 j0 = 0; j0 < k; j0 += 32) {
        const i64 j = j0 + lane;
        if (j < k && ok) {
            int* slot = b.obuf + (i64)o * b.C + ((h + j) & (b.C - 1));
            int x;
            dgq::Spin spin(abort_flag);
            while ((x = vloadi(slot)) == 0)  // reserved by an appender that has not written yet
                if (!spin.wait()) {
                    ok = false;
                    break;
                }
            if (ok) {
                *(volatile int*)slot = 0;
                const i64 t = (i64)x - 1;
                atomicExch(b.flag + t, 0);  // a later claim appends t again
                __threadfence();            // ... and every earlier one is in what is read now
                const KeyTail kt = read_pair((KeyTail*)b.ghost + t);
                st[j] = Item{t - olo, kt.key, kt.tail};
            }
        }
    }
    if (!__all_sync(DGBF_FULL, ok)) {
        if (lane == 0) atomicExch((u64*)b.w(B_OLOCK, o), 0ull);
        return false;
    }
    __syncwarp();
    nvshmemx_putmem_signal_warp(b.inbox + (i64)b.my_pe * b.R + (sent & (b.R - 1)), st, (size_t)k * sizeof(Item),
                                (uint64_t*)b.sig(b.my_pe), (uint64_t)(sent + k), NVSHMEM_SIGNAL_SET, o);
    if (lane == 0) {
        *(volatile i64*)b.w(B_OSENT, o) = sent + k;
        *(volatile i64*)b.w(B_OHEAD, o) = h + k;
        atomicAdd((u64*)(ctl + C_SHIPPED), (u64)k);
        atomicAdd((u64*)(ctl + C_FLUSHES), 1ull);
        __threadfence();
        atomicExch((u64*)b.w(B_OLOCK, o), 0ull);
    }
    __syncwarp();
    return true;
}

// Takes up to 32 items from one source's inbox (round robin from rr), one per lane, into it
// and got (warp-collective); false when aborted. Claims by CAS, reads, releases in claim order
// (the sender's credit must cover read slots only), then credits the sender.
__device__ bool batch_drain(const Batch& b, int& rr, Item& it, bool& got, int* abort_flag) {
    const int lane = threadIdx.x & 31;
    int src = -1;
    i64 c = 0, k = 0;
    if (lane == 0) {
        for (int i = 0; i < b.npes && src < 0; ++i) {
            const int p = (rr + i) % b.npes;
            if (p == b.my_pe) continue;
            const i64 s = (i64)*(const volatile u64*)b.sig(p);
            i64* cl = b.w(B_RCLAIM, p);
            i64 cc = vload(cl);
            while (cc < s) {
                const i64 kk = s - cc < 32 ? s - cc : 32;
                const i64 seen = (i64)atomicCAS((u64*)cl, (u64)cc, (u64)(cc + kk));
                if (seen == cc) {
                    src = p;
                    c = cc;
                    k = kk;
                    break;
                }
                cc = seen;
            }
        }
        rr = rr + 1 < b.npes ? rr + 1 : 0;
        __threadfence();  // the items are read after the signal that covers them
    }
    src = __shfl_sync(DGBF_FULL, src, 0);
    if (src < 0) return true;
    c = __shfl_sync(DGBF_FULL, c, 0);
    k = __shfl_sync(DGBF_FULL, k, 0);
    if (lane < k) {
        const volatile i64* x = (const volatile i64*)(b.inbox + (i64)src * b.R + ((c + lane) & (b.R - 1)));
        it = Item{x[0], x[1], x[2]};
        got = true;
    }
    __syncwarp();
    bool ok = true;
    if (lane == 0) {
        __threadfence();
        i64* done = b.w(B_RDONE, src);
        dgq::Spin spin(abort_flag);
        while (vload(done) != c)
            if (!spin.wait()) {
                ok = false;
                break;
            }
        if (ok) {
            atomicExch((u64*)done, (u64)(c + k));
            nvshmem_ulonglong_atomic_add(b.credit(b.my_pe), (unsigned long long)k, src);
        }
    }
    return __shfl_sync(DGBF_FULL, (int)ok, 0) != 0;
}
#endif

// Warp 0, idle (warp-collective): all DONE counters, then all SENT counters; equal sums
// mean no item is queued or in flight. Then an empty far pile (or host-driven phases: the host
// changes the phase between launches) ends the launch; otherwise the threshold rises past the
// pile's smallest key and the pile is handed out as scan tasks. Host-driven phases: the scan
// tasks of a phase the host began (ph[P_TASKS], counted in SENT by the host before the launch, so
// no PE can see a quiescence first) are handed out here at warp 0's first idle look.
template <bool BQ>
__device__ bool poll_termination(const dgq::Queue<Item>& q, u64* ctr, i64* ctl, i64* ph, int npes, int my_pe) {
    const int lane = threadIdx.x & 31;
    i64 ntasks = 0, cnt = 0, chunk = 0;
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (lane == 0 && vload(ph + P_TASKS) > 0) {
        ntasks = vload(ph + P_TASKS);
        cnt = vload(ph + P_TCNT);
        chunk = (cnt + ntasks - 1) / ntasks;
        ph[P_TASKS] = 0;
    } else
#endif
    if (lane == 0) {
        u64 d = 0, s = 0;
        for (int p = 0; p < npes; ++p) d += dgq::amo_fetch(ctr + DONE, p, my_pe);
        DGBF_FENCE();
        for (int p = 0; p < npes; ++p) s += dgq::amo_fetch(ctr + SENT, p, my_pe);
        if (s == d) {
            const int cur = (int)(vload(ph + P_PHASE) & 1);
            cnt = vload(ph + P_CNT + cur);
            if (cnt == 0 || vload(ph + P_HOST) != 0) {
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

template <bool BQ, bool BATCH>
__device__ void worker(const i64* __restrict__ indptr, const int* __restrict__ indices, const i64* __restrict__ w,
                       i64* dist, i64* pred, int* inq, Item* ring, u64* tickets, u64* meta, u64 N,
                       const i64* __restrict__ offsets, int npes, int my_pe, u64* ctr, i64* ctl, i64 bound_key,
                       i64 scan_limit, int remote_mode, i64* ph, int* far, i64 far_cap, int keep_flag,
                       unsigned idle_max, i64 split, i64* ghost, int ghost_on, i64* bst, int* oint, u64* bsym,
                       Item* inbox, Item* stage, i64 ring_in, i64 obox_cap, i64 flush_min) {
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
    const bool batch = BATCH && remote_mode == 2 && npes > 1;  // its own kernels (registers)
    const i64 nall = offsets[npes];
    const Batch bb{bst, oint, oint + nall, ghost, bsym, inbox, stage, ring_in, obox_cap,
                   flush_min, offsets, npes, my_pe};
    int rr = (int)(gwarp % (npes > 0 ? npes : 1));  // first inbox this warp looks at
    (void)batch;
    (void)bb;
    (void)rr;
#ifdef DISTGRAPH_WITH_NVSHMEM
    // host-driven phases (the NVSHMEM build only): thr is global, the host changes the phase
    // (poll_termination hands out its scan tasks); rescans at or above thr go far (remote heads)
    const bool hp = vload(ph + P_HOST) != 0;
    const i64 infk = ph[P_INF];  // the key of +inf: every distance at a run's start
#endif
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
#ifdef DISTGRAPH_WITH_NVSHMEM
            // batch mode: relaxations shipped here first (they free the senders' credit)
            if (batch && !batch_drain(bb, rr, it, got, abort_flag)) {
                if (lane == 0) atomicExch(abort_flag, 1);
                break;
            }
            if (!__any_sync(DGBF_FULL, got))
#endif
            {
                int st = q.template dequeue_warp<BQ>(my_pe, true, it, got);
                if (st == DGQ_ABORTED) break;
            }
        }
        unsigned gm = __ballot_sync(DGBF_FULL, got);
        if (gm == 0) {
#ifdef DISTGRAPH_WITH_NVSHMEM
            if (batch) {  // warp 0 ships whatever an outbox holds, the others flush_min entries
                bool fok = true;
                for (int o = 0; o < npes; ++o)
                    if (o != my_pe) fok = batch_flush(bb, o, gwarp == 0 ? 1 : flush_min, ctl, abort_flag) && fok;
                if (!fok) {
                    if (lane == 0) atomicExch(abort_flag, 1);
                    break;
                }
            }
#endif
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
        // (1) remote relaxations (enqueue and batch modes), one per lane: applied here
        const bool rem = got && it.u >= 0;
        const unsigned remm = __ballot_sync(DGBF_FULL, rem);
        if (remm) {
            int want = 0;
            if (rem && it.cand < vload(dist + it.v)) {
                const i64 old = atomicMin((long long*)(dist + it.v), (long long)it.cand);
                if (it.cand < old) {
                    pred[it.v] = it.u;
                    if (it.cand < bound_key) below = 1;
                    want = mark(inq, it.v, it.cand, thr, cur, ph);
                }
            }
            ok = queue_near<BQ>(q, want == 1, it.v, ctr, keep, nx, has_nx) && ok;  // warp-collective
            ok = far_append(want == 2, it.v, far, ph, cur, far_cap) && ok;
            if (lane == 0) atomicAdd((u64*)(ctl + C_APPLIED), (u64)__popc(remm));
        }
        // scan tasks, one after the other, by the whole warp
        unsigned special = __ballot_sync(DGBF_FULL, got && it.u == -2);
        while (special) {
            const int sl = __ffs(special) - 1;
            special &= special - 1;
            const i64 v = __shfl_sync(DGBF_FULL, it.v, sl);
            const i64 cand = __shfl_sync(DGBF_FULL, it.cand, sl);
            {  // far entries [v, cand) of the previous pile: near now, or kept
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
            }
        }
        // (2) rescans and arc chunks: all their arcs as one list, 32 arcs per step. A vertex of
        // more than split out-arcs scans its first split here and hands the others out as
        // chunk items (u = -3 - k: arcs [k split, (k + 1) split)), which any warp scans with
        // the vertex's distance at that time
        bool resc = got && it.u == -1;
        const bool chunk = got && it.u <= -3;
        if (resc) atomicExch(inq + it.v, 0);  // a later improvement enqueues v again
        __threadfence();
#ifdef DISTGRAPH_WITH_NVSHMEM
        if (hp) {  // host-driven phases: a rescan at or above thr (a remote head) goes far instead
            bool div = false;
            if (resc) {
                const i64 dv = vload(dist + it.v);
                if (dv >= thr) {
                    resc = false;
                    div = mark(inq, it.v, dv, thr, cur, ph) == 2;
                }
            }
            ok = far_append(div, it.v, far, ph, cur, far_cap) && ok;
        }
#endif
        const bool mine = resc || chunk;
        const i64 v = mine ? it.v : 0;
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
#ifdef DISTGRAPH_WITH_NVSHMEM
        // this lane's remote candidates (counters): dropped, claimed, coalesced; atomic modes:
        // failed CASes, minima that lowered the owner's key, of those from +inf, pushes
        unsigned ndrop = 0, nclaim = 0, ncoal = 0, nfail = 0, nwin = 0, nfirst = 0, npush = 0;
#endif
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
            bool app = false;  // batch: append tg to the outbox of PE bo
            int bo = 0;
            i64 tg = 0;
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
                    i64 guess = infk;  // the owner's key as far as this PE knows (+inf: nothing known)
                    if (batch) {  // key and tail claimed together (the batch kernels' ghost pairs)
                        send = claim_pair((KeyTail*)ghost + t, ck, ug);
                    } else if (ghost_on) {
                        send = false;
                        if (ck < vload(ghost + t)) {
                            guess = (i64)atomicMin((long long*)(ghost + t), (long long)ck);
                            send = ck < guess;
                        }
                    }
                    ndrop += !send;
                    nclaim += send;
                    if (!send) {
                    } else if (batch) {  // claimed locally: into the outbox, or coalesced
                        __threadfence();  // the claim before the flag, which a flusher clears first
                        app = atomicExch(bb.flag + t, 1) == 0;
                        ncoal += !app;
                        bo = o;
                        tg = t;
                    } else if (!BATCH && (remote_mode == R_ATOMIC || remote_mode == R_ATOMIC_FETCH)) {
                        // atomic: the first CAS expects the ghost key (or +inf), see "Remote atomic
                        // relaxations" in the header; atomic_fetch: fetches the owner's key first
                        const bool fetch = remote_mode == R_ATOMIC_FETCH;
                        const i64 old = fetch ? remote_min(dist + rl, ck, o, nfail)
                                              : remote_min_from(dist + rl, ck, guess, o, nfail);
                        if (ghost_on && old < ck) atomicMin((long long*)(ghost + t), (long long)old);
                        if (ck < old) {
                            ++nwin;
                            nvshmem_longlong_p((long long*)(pred + rl), ug, o);
                            if (ck < bound_key) below = 1;
                            bool enq;
                            if (!fetch && !hp && old == infk) {
                                // first key of t (no phases): nobody lowered t before this CAS, so
                                // nobody queued it; the flag is set without waiting for its old value
                                ++nfirst;
                                nvshmem_int_atomic_set(inq + rl, I_NEAR, o);
                                enq = true;
                            } else {
                                // near: queued unless queued already (a far flag: only with host-driven
                                // phases, its pile entry goes stale); far (host-driven phases only): queued
                                // if in no pile, the owner moves it to its pile (see the header)
                                enq = ck < thr ? nvshmem_int_atomic_swap(inq + rl, I_NEAR, o) != I_NEAR
                                               : nvshmem_int_atomic_compare_swap(inq + rl, 0, I_NEAR, o) == 0;
                            }
                            if (enq) {
                                rowner = o;
                                rx.v = rl;
                            }
                        }
                    } else if (!BATCH) {  // enqueue (the batch kernels run remote_mode 2 only)
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
            if (batch) ok = batch_append(bb, app, bo, tg, ctr, abort_flag) && ok;  // warp-collective
            npush += rowner >= 0;
            if (!BATCH && remote_mode == R_ATOMIC) {  // one reservation per destination (warp-collective)
                ok = push_remote_warp<BQ>(q, rowner, rx, ctr) && ok;
            } else if (rowner >= 0 && !push_remote<BQ>(q, rowner, rx, ctr)) {
                ok = false;
            }
            ok = __all_sync(DGBF_FULL, ok);
#endif
        }
#ifdef DISTGRAPH_WITH_NVSHMEM
        if (npes > 1) {
            ndrop = __reduce_add_sync(DGBF_FULL, ndrop);
            nclaim = __reduce_add_sync(DGBF_FULL, nclaim);
            ncoal = __reduce_add_sync(DGBF_FULL, ncoal);
            nfail = __reduce_add_sync(DGBF_FULL, nfail);
            nwin = __reduce_add_sync(DGBF_FULL, nwin);
            nfirst = __reduce_add_sync(DGBF_FULL, nfirst);
            npush = __reduce_add_sync(DGBF_FULL, npush);
            if (lane == 0) {
                if (ndrop) atomicAdd((u64*)(ctl + C_DROPPED), (u64)ndrop);
                if (nclaim) atomicAdd((u64*)(ctl + C_CLAIMS), (u64)nclaim);
                if (ncoal) atomicAdd((u64*)(ctl + C_COALESCED), (u64)ncoal);
                if (nfail) atomicAdd((u64*)(ctl + C_CASFAIL), (u64)nfail);
                if (nwin) atomicAdd((u64*)(ctl + C_RWINS), (u64)nwin);
                if (nfirst) atomicAdd((u64*)(ctl + C_RFIRST), (u64)nfirst);
                if (npush) atomicAdd((u64*)(ctl + C_RPUSH), (u64)npush);
            }
        }
#endif
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
#ifdef DISTGRAPH_WITH_NVSHMEM
        if (batch) {  // ship the outboxes that hold flush_min entries (warp 0: any)
            for (int o = 0; o < npes; ++o)
                if (o != my_pe) ok = batch_flush(bb, o, gwarp == 0 ? 1 : flush_min, ctl, abort_flag) && ok;
        }
#endif
        if (!__all_sync(DGBF_FULL, ok)) {
            if (lane == 0) atomicExch(abort_flag, 1);
            break;
        }
    }
}

}  // namespace dgbf

#define DGBF_KERNEL(NAME, BQ, BATCH, MINB)                                                                     \
    extern "C" __global__ void __launch_bounds__(DG_BF_BLOCK, MINB)                                            \
        NAME(const long long* indptr, const int* indices, const long long* w, long long* dist, long long* pred, \
             int* inq, dgbf::Item* ring, unsigned long long* tickets, unsigned long long* meta,                  \
             unsigned long long N, const long long* offsets, int npes, int my_pe, unsigned long long* ctr,      \
             long long* ctl, long long bound_key, long long scan_limit, int remote_mode, long long* ph,         \
             int* far, long long far_cap, int keep, unsigned idle_max, long long split, long long* ghost,        \
             int ghost_on, long long* bst, int* oint, unsigned long long* bsym, dgbf::Item* inbox,              \
             dgbf::Item* stage, long long ring_in, long long obox_cap, long long flush_min) {                   \
        dgbf::worker<BQ, BATCH>(indptr, indices, w, dist, pred, inq, ring, tickets, meta, N, offsets, npes, my_pe, ctr, \
                         ctl, bound_key, scan_limit, remote_mode, ph, far, far_cap, keep, idle_max, split, ghost, \
                         ghost_on, bst, oint, bsym, inbox, stage, ring_in, obox_cap, flush_min);               \
    }

// 3 blocks per SM (128 threads, at most 168 registers): with the bound 1, ptxas of CUDA 13.0 gave
// the NVSHMEM build of session 7 (remote_min_from, push_remote_warp, counters) 168 / 176 registers
// (BWD / BQ: 3 / 2 blocks per SM), with it 154 / 153 and no spills (sm_90); before, 146 / 152 either way
DGBF_KERNEL(distgraph_bf_queue_bq, true, false, 3)
DGBF_KERNEL(distgraph_bf_queue_bwd, false, false, 3)
#ifdef DISTGRAPH_WITH_NVSHMEM
// remote_mode 2 (batch): kernels of their own, so that the batch code's registers do not lower
// the occupancy of the others; DG_BF_BATCH_MINB blocks per SM (3, as the others get at 144-146
// registers; without the bound ptxas of CUDA 13.0 gave the batch kernels 202-208 registers, 2 blocks
// per SM, and with it 145-154 and no spills, sm_90)
#ifndef DG_BF_BATCH_MINB
#define DG_BF_BATCH_MINB 3
#endif
DGBF_KERNEL(distgraph_bf_queue_bq_batch, true, true, DG_BF_BATCH_MINB)
DGBF_KERNEL(distgraph_bf_queue_bwd_batch, false, true, DG_BF_BATCH_MINB)
#endif

#endif  // DISTGRAPH_BELLMAN_FORD_CUH
