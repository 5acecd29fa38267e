// broker_queue.cuh: the Broker Queue (BQ) and the Broker Work Distributor (BWD) as device code,
// one segment per PE in the NVSHMEM symmetric heap (multi-GPU queue, Sec. III-B of
// ../shared/papers/003_2f1f88597b3d0e64.txt), usable from any kernel.
//
// Algorithm: Kerbl, Kenzel, Mueller, Schmalstieg, Steinberger, "The Broker Queue: A Fast,
// Linearizable FIFO Queue for Fine-Granular Work Distribution on the GPU", ICS 2018, as restated
// in ../shared/notes/broker-queue.md, with 64-bit positions and tickets (no wrap-around) and the
// same protocol as the CPU implementation in distgraph/pgas/queue.py (read that docstring first).
//
// State of one segment (symmetric: the same addresses on every PE, each PE owning one copy)
//   meta[24]     unsigned long long: meta[0] = count (the broker, used as a signed value),
//                meta[8] = head, meta[16] = tail (64-bit positions, one 64-byte line each)
//   tickets[N]   unsigned long long: slot P is free for round r when tickets[P] == 2r,
//                full for round r when tickets[P] == 2r + 1
//   ring[N]      T: the slots; position pos is slot pos & (N-1) of round pos / N
//
// Access: segment s of the queue lives on PE s. When s is the calling PE (the fast path) the
// code uses native atomics and volatile loads on the local copy; otherwise NVSHMEM device
// atomics (nvshmem_ulonglong_atomic_*), nvshmem_putmem / nvshmem_getmem and nvshmem_fence.
// Mixing the two on one address is coherent when the peers reach it by load/store (NVLink or
// the same GPU: NVSHMEM's P2P transport is itself native atomics); build with
// -DDGQ_NO_LOCAL_FASTPATH when PEs talk over a network transport. Without
// DISTGRAPH_WITH_NVSHMEM only segment == my_pe is valid (a single-GPU queue, NVRTC-friendly).
//
// Status codes: DGQ_OK, DGQ_FULL, DGQ_EMPTY, DGQ_ABORTED. BWD may return FULL/EMPTY spuriously
// (other threads' reservations and undos move count): callers retry or check termination.
// Every spin loop watches *abort (may be null): a loop that spins more than DGQ_SPIN_LIMIT
// times sets it, and every other loop then gives up with DGQ_ABORTED, so a protocol bug ends
// a kernel instead of hanging the GPU. A thread that passed ensure_* must finish put/take.
//
// Use from another kernel (the handle is distgraph.pgas.queue.BrokerQueue on the NVSHMEM PGAS;
// BrokerQueue.device_args() gives ring, tickets, meta, N, width, nseg):
//   #include "broker_queue.cuh"
//   struct Item { int v; float d; };                       // any trivially copyable T, 4k bytes
//   __global__ void k(Item* ring, unsigned long long* tickets, unsigned long long* meta,
//                     unsigned long long N, int nseg, int my_pe, int* abort) {
//       dgq::Queue<Item> q{ring, tickets, meta, N, nseg, my_pe, abort};
//       Item it{42, 0.5f};
//       int st = q.enqueue<true>(owner_pe, it);                 // BQ; <false>: BWD
//       if (q.dequeue<false>(my_pe, it) == DGQ_EMPTY) { /* BWD: look again or check termination */ }
//   }
// A ring of T is allocated as BrokerQueue(capacity, dtype, width) with width * itemsize == sizeof(T).
#ifndef DISTGRAPH_BROKER_QUEUE_CUH
#define DISTGRAPH_BROKER_QUEUE_CUH

#ifdef DISTGRAPH_WITH_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#endif

#ifndef DGQ_SPIN_LIMIT
#define DGQ_SPIN_LIMIT (1ull << 22)
#endif

#define DGQ_OK 0
#define DGQ_FULL 1
#define DGQ_EMPTY 2
#define DGQ_ABORTED 3

namespace dgq {

typedef unsigned long long u64;
typedef long long i64;

enum { COUNT = 0, HEAD = 8, TAIL = 16, META_SIZE = 24 };

// ---- memory access: local fast path or NVSHMEM -------------------------------------------
__device__ __forceinline__ bool is_local(int pe, int my_pe) {
#if defined(DISTGRAPH_WITH_NVSHMEM) && defined(DGQ_NO_LOCAL_FASTPATH)
    return false;
#else
    return pe == my_pe;
#endif
}

__device__ __forceinline__ u64 amo_fetch_add(u64* p, i64 v, int pe, int my_pe) {
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (!is_local(pe, my_pe)) return nvshmem_ulonglong_atomic_fetch_add(p, (u64)v, pe);
#endif
    return atomicAdd(p, (u64)v);
}

__device__ __forceinline__ u64 amo_fetch(const u64* p, int pe, int my_pe) {
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (!is_local(pe, my_pe)) return nvshmem_ulonglong_atomic_fetch(p, pe);
#endif
    return *(const volatile u64*)p;
}

__device__ __forceinline__ void amo_set(u64* p, u64 v, int pe, int my_pe) {
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (!is_local(pe, my_pe)) { nvshmem_ulonglong_atomic_set(p, v, pe); return; }
#endif
    atomicExch(p, v);
}

template <typename T>
__device__ __forceinline__ void slot_write(T* slot, const T& x, int pe, int my_pe) {
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (!is_local(pe, my_pe)) {
        nvshmem_putmem(slot, &x, sizeof(T), pe);
        nvshmem_fence();  // the slot is delivered before the ticket update that follows
        return;
    }
#endif
    *slot = x;
    __threadfence();
}

template <typename T>
__device__ __forceinline__ T slot_read(const T* slot, int pe, int my_pe) {
    T x;
#ifdef DISTGRAPH_WITH_NVSHMEM
    if (!is_local(pe, my_pe)) {
        nvshmem_getmem(&x, slot, sizeof(T), pe);  // blocking: the data has arrived on return
        return x;
    }
#endif
    __threadfence();
    static_assert(sizeof(T) % 4 == 0, "queue items must be a multiple of 4 bytes");
    const volatile unsigned int* s = (const volatile unsigned int*)slot;
    unsigned int* d = (unsigned int*)&x;
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 4); ++i) d[i] = s[i];
    return x;
}

// Spin helper: back off, count, and give up when aborted or over the limit.
struct Spin {
    unsigned long long n;
    unsigned int ns;
    int* abort;
    __device__ Spin(int* a) : n(0), ns(32), abort(a) {}
    // false: give up (aborted)
    __device__ __forceinline__ bool wait() {
        if (abort != nullptr) {
            if (*(volatile int*)abort) return false;
            if (++n > DGQ_SPIN_LIMIT) { atomicExch(abort, 1); return false; }
        }
        __nanosleep(ns);
        if (ns < 1024) ns <<= 1;
        return true;
    }
};

// ---- one queue: all segments, seen from the calling PE ------------------------------------
template <typename T>
struct Queue {
    T* ring;        // symmetric, N items
    u64* tickets;   // symmetric, N
    u64* meta;      // symmetric, META_SIZE
    u64 N;          // capacity per segment, a power of two
    int nseg;       // segments: PEs 0..nseg-1
    int my_pe;
    int* abort;     // device flag, may be null

    // -- the broker ---------------------------------------------------------------------
    __device__ bool ensure_enqueue(int s, i64 k) const {
        i64 num = (i64)amo_fetch(meta + COUNT, s, my_pe);
        while (num + k <= (i64)N) {
            if ((i64)amo_fetch_add(meta + COUNT, k, s, my_pe) + k <= (i64)N) return true;
            num = (i64)amo_fetch_add(meta + COUNT, -k, s, my_pe) - k;
        }
        return false;
    }

    // Reserves up to k items; returns how many (0: none available).
    __device__ i64 ensure_dequeue(int s, i64 k) const {
        i64 num = (i64)amo_fetch(meta + COUNT, s, my_pe);
        while (num > 0) {
            i64 t = num < k ? num : k;
            i64 old = (i64)amo_fetch_add(meta + COUNT, -t, s, my_pe);
            if (old >= t) return t;
            if (old > 0) { amo_fetch_add(meta + COUNT, t - old, s, my_pe); return old; }
            num = (i64)amo_fetch_add(meta + COUNT, t, s, my_pe) + t;
        }
        return 0;
    }

    // tail - head > N - k, reading tail first: the queue has no room for k at the 2nd read.
    __device__ bool provably_full(int s, i64 k) const {
        i64 t = (i64)amo_fetch(meta + TAIL, s, my_pe);
        i64 h = (i64)amo_fetch(meta + HEAD, s, my_pe);
        return t - h > (i64)N - k;
    }

    // tail - head <= 0, reading head first: the queue is empty at the 2nd read.
    __device__ bool provably_empty(int s) const {
        i64 h = (i64)amo_fetch(meta + HEAD, s, my_pe);
        i64 t = (i64)amo_fetch(meta + TAIL, s, my_pe);
        return t - h <= 0;
    }

    // -- ticketed slot access (after a successful reservation) ----------------------------
    __device__ int put_at(int s, u64 pos, const T& x) const {
        u64 P = pos & (N - 1), r = pos / N;
        Spin spin(abort);
        while (amo_fetch(tickets + P, s, my_pe) != 2 * r)
            if (!spin.wait()) return DGQ_ABORTED;
        slot_write(ring + P, x, s, my_pe);
        amo_set(tickets + P, 2 * r + 1, s, my_pe);
        return DGQ_OK;
    }

    __device__ int take_at(int s, u64 pos, T& x) const {
        u64 P = pos & (N - 1), r = pos / N;
        Spin spin(abort);
        while (amo_fetch(tickets + P, s, my_pe) != 2 * r + 1)
            if (!spin.wait()) return DGQ_ABORTED;
        x = slot_read(ring + P, s, my_pe);
        __threadfence();  // the slot is read before it is handed to the next round's writer
        amo_set(tickets + P, 2 * r + 2, s, my_pe);
        return DGQ_OK;
    }

    // -- single-thread operations on segment s ------------------------------------------
    __device__ int enqueue_bwd(int s, const T& x) const {
        if (!ensure_enqueue(s, 1)) return DGQ_FULL;
        return put_at(s, amo_fetch_add(meta + TAIL, 1, s, my_pe), x);
    }

    __device__ int dequeue_bwd(int s, T& x) const {
        if (!ensure_dequeue(s, 1)) return DGQ_EMPTY;
        return take_at(s, amo_fetch_add(meta + HEAD, 1, s, my_pe), x);
    }

    __device__ int enqueue_bq(int s, const T& x) const {
        Spin spin(abort);
        while (!ensure_enqueue(s, 1)) {
            if (provably_full(s, 1)) return DGQ_FULL;
            if (!spin.wait()) return DGQ_ABORTED;
        }
        return put_at(s, amo_fetch_add(meta + TAIL, 1, s, my_pe), x);
    }

    __device__ int dequeue_bq(int s, T& x) const {
        Spin spin(abort);
        while (!ensure_dequeue(s, 1)) {
            if (provably_empty(s)) return DGQ_EMPTY;
            if (!spin.wait()) return DGQ_ABORTED;
        }
        return take_at(s, amo_fetch_add(meta + HEAD, 1, s, my_pe), x);
    }

    template <bool BQ>
    __device__ __forceinline__ int enqueue(int s, const T& x) const { return BQ ? enqueue_bq(s, x) : enqueue_bwd(s, x); }

    template <bool BQ>
    __device__ __forceinline__ int dequeue(int s, T& x) const { return BQ ? dequeue_bq(s, x) : dequeue_bwd(s, x); }

    // -- warp-aggregated enqueue: the active lanes with want != 0 enqueue one item each into
    //    segment s with one reservation (count and tail move by the number of such lanes).
    //    Must be called by every lane of the active mask; returns the same status to all.
    template <bool BQ>
    __device__ int enqueue_warp(int s, bool want, const T& x) const {
        unsigned active = __activemask();
        unsigned mask = __ballot_sync(active, want);
        if (mask == 0) return DGQ_OK;
        int lane = threadIdx.x & 31;
        int leader = __ffs(mask) - 1;
        i64 k = __popc(mask);
        int st = DGQ_OK;
        u64 base = 0;
        if (lane == leader) {
            Spin spin(abort);
            while (!ensure_enqueue(s, k)) {
                if (!BQ || provably_full(s, k)) { st = DGQ_FULL; break; }
                if (!spin.wait()) { st = DGQ_ABORTED; break; }
            }
            if (st == DGQ_OK) base = amo_fetch_add(meta + TAIL, k, s, my_pe);
        }
        st = __shfl_sync(active, st, leader);
        base = __shfl_sync(active, base, leader);
        int r = DGQ_OK;
        if (st == DGQ_OK && want) r = put_at(s, base + __popc(mask & ((1u << lane) - 1)), x);
        r = __reduce_max_sync(active, st == DGQ_OK ? r : st);
        return r;
    }

    // -- warp-aggregated dequeue: each active lane with want != 0 asks for one item; the
    //    reservation may give fewer (got == false on the lanes left without one). Returns
    //    DGQ_OK if at least one lane got an item, else DGQ_EMPTY (BWD: possibly spurious).
    template <bool BQ>
    __device__ int dequeue_warp(int s, bool want, T& x, bool& got) const {
        unsigned active = __activemask();
        unsigned mask = __ballot_sync(active, want);
        got = false;
        if (mask == 0) return DGQ_EMPTY;
        int lane = threadIdx.x & 31;
        int leader = __ffs(mask) - 1;
        i64 k = __popc(mask);
        i64 m = 0;
        int st = DGQ_OK;
        u64 base = 0;
        if (lane == leader) {
            Spin spin(abort);
            while ((m = ensure_dequeue(s, k)) == 0) {
                if (!BQ || provably_empty(s)) { st = DGQ_EMPTY; break; }
                if (!spin.wait()) { st = DGQ_ABORTED; break; }
            }
            if (st == DGQ_OK) base = amo_fetch_add(meta + HEAD, m, s, my_pe);
        }
        st = __shfl_sync(active, st, leader);
        base = __shfl_sync(active, base, leader);
        m = __shfl_sync(active, m, leader);
        int rank = __popc(mask & ((1u << lane) - 1));
        int r = DGQ_OK;
        if (st == DGQ_OK && want && rank < m) {
            r = take_at(s, base + rank, x);
            got = (r == DGQ_OK);
        }
        r = __reduce_max_sync(active, st == DGQ_OK ? r : st);
        return r;
    }
};

}  // namespace dgq

#endif  // DISTGRAPH_BROKER_QUEUE_CUH
