// bf_rounds.cu: one round of the round-based Bellman-Ford (Jacobi) as fused kernels, for
// RoundsSSSP(engine="kernel") in distgraph/backends/gpu/bellman_ford.py (the CuPy baseline,
// engine="cupy", spends its rounds in ~20 array operations and host syncs, not in relaxing
// arcs: benchmarks/results/session14/README.md).
//
// A round relaxes the out-arcs of this PE's frontier vertices (those whose distance changed in
// the previous round) from the distances at the start of the round, `dist`, into `cand` (a copy
// of `dist` made by the host), by a 64-bit atomicMin; a second kernel, with negative weights,
// writes a winning tail into `pred` for every vertex the round lowered (any tail whose candidate
// equals the new key: racing writers all write winners). One warp per frontier vertex, lanes
// over its arcs; lane 0 adds the vertex's degree to `count` (the relaxations).
//
// Distances are 64-bit keys as in bellman_ford.cuh: the int64 distance for integer weights; for
// float64 weights the "ordered int" of the double (negative ones with the 63 low bits flipped),
// so a signed atomicMin orders keys as the doubles; +inf is INT64_MAX or the key of +inf. Sums:
// int64 with wrap-around, float64 added once, as the CPU backend forms them.
//
// Arguments: indptr (int64, block rows from 0), indices (int32 global heads), w (int64 weights
// or float64 bits; ignored when unit != 0: every arc weighs 1), front (int64 global ids of this
// PE's frontier), nfront, lo (the block's first vertex), dist, cand, pred (int64, n), count.
//
// The push kernels (distgraph_bf_round_push_*, RoundsSSSP's distributed rounds by default,
// _PeerPush in the module) are the same round on one of several PEs that share no replicated
// distances: each PE's `cand` is final only on its own vertices [lo, hi). A candidate for
// another PE's vertex v is first taken into the local `cand` (an upper bound of the owner's:
// every local lowering is also sent), and only when it lowered it, sent to the owner by a
// 64-bit atomicMin on the owner's `cand` through its NVSHMEM peer mapping (NVLink; a RED, no
// round trip). `ptrs` holds three tables of npes device addresses: the PEs' cand arrays of
// this round, their dist arrays, their pred arrays; `bounds` the npes + 1 block boundaries.
// The push tails kernel runs after every PE's pushes have landed (a barrier between): a tail
// whose candidate equals the local `cand` (which it must, to be the owner's winner) checks the
// owner's cand and dist and writes the owner's pred.

typedef long long dg_i64;

template <bool F>
__device__ __forceinline__ dg_i64 dg_rk_relax(dg_i64 dk, dg_i64 wbits) {
    if (F) {
        const dg_i64 flip = 0x7fffffffffffffffLL;
        const double du = __longlong_as_double(dk >= 0 ? dk : dk ^ flip);
        const dg_i64 b = __double_as_longlong(du + __longlong_as_double(wbits));
        return b >= 0 ? b : b ^ flip;
    }
    return (dg_i64)((unsigned long long)dk + (unsigned long long)wbits);
}

__device__ __forceinline__ int dg_rk_owner(const dg_i64 *bounds, int npes, dg_i64 v) {
    int q = 0;
    while (q + 1 < npes && v >= bounds[q + 1]) ++q;
    return q;
}

// PUSH: hi, ptrs, bounds and npes as in the header; without it all of n is this PE's.
template <bool F, bool TAILS, bool PUSH>
__device__ void dg_rk_round(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                            const dg_i64 *__restrict__ w, int unit, const dg_i64 *__restrict__ front,
                            dg_i64 nfront, dg_i64 lo, dg_i64 hi, const dg_i64 *__restrict__ dist, dg_i64 *cand,
                            dg_i64 *pred, unsigned long long *count, const dg_i64 *__restrict__ ptrs,
                            const dg_i64 *__restrict__ bounds, int npes) {
    const int lane = threadIdx.x & 31;
    const dg_i64 warps = ((dg_i64)gridDim.x * blockDim.x) >> 5;
    for (dg_i64 i = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < nfront; i += warps) {
        const dg_i64 u = front[i];
        const dg_i64 du = dist[u];
        const dg_i64 beg = indptr[u - lo], end = indptr[u - lo + 1];
        if (!TAILS && lane == 0) atomicAdd(count, (unsigned long long)(end - beg));
        for (dg_i64 k = beg + lane; k < end; k += 32) {
            const int v = indices[k];
            const dg_i64 c = dg_rk_relax<F>(du, unit ? 1 : w[k]);
            if (TAILS) {
                if (c != cand[v]) continue;
                if (!PUSH || (v >= lo && v < hi)) {
                    if (c < dist[v]) pred[v] = u;
                } else {  // the owner's final candidate and its distance at the round's start
                    const int q = dg_rk_owner(bounds, npes, v);
                    const dg_i64 *qc = reinterpret_cast<const dg_i64 *>(ptrs[q]);
                    const dg_i64 *qd = reinterpret_cast<const dg_i64 *>(ptrs[npes + q]);
                    if (c == qc[v] && c < qd[v]) reinterpret_cast<dg_i64 *>(ptrs[2 * npes + q])[v] = u;
                }
            } else if (c < cand[v]) {
                const dg_i64 old = atomicMin(cand + v, c);
                if (PUSH && c < old && (v < lo || v >= hi))
                    atomicMin(reinterpret_cast<dg_i64 *>(ptrs[dg_rk_owner(bounds, npes, v)]) + v, c);
            }
        }
    }
}

#define DG_RK_KERNEL(NAME, F, TAILS)                                                                  \
    extern "C" __global__ void NAME(const dg_i64 *indptr, const int *indices, const dg_i64 *w, int unit, \
                                    const dg_i64 *front, dg_i64 nfront, dg_i64 lo, const dg_i64 *dist,     \
                                    dg_i64 *cand, dg_i64 *pred, unsigned long long *count) {             \
        dg_rk_round<F, TAILS, false>(indptr, indices, w, unit, front, nfront, lo, 0, dist, cand, pred,   \
                                     count, nullptr, nullptr, 1);                                        \
    }

#define DG_RK_PUSH_KERNEL(NAME, F, TAILS)                                                             \
    extern "C" __global__ void NAME(const dg_i64 *indptr, const int *indices, const dg_i64 *w, int unit, \
                                    const dg_i64 *front, dg_i64 nfront, dg_i64 lo, dg_i64 hi,             \
                                    const dg_i64 *dist, dg_i64 *cand, dg_i64 *pred,                      \
                                    unsigned long long *count, const dg_i64 *ptrs, const dg_i64 *bounds, \
                                    int npes) {                                                          \
        dg_rk_round<F, TAILS, true>(indptr, indices, w, unit, front, nfront, lo, hi, dist, cand, pred,   \
                                    count, ptrs, bounds, npes);                                          \
    }

DG_RK_KERNEL(distgraph_bf_round_relax_i64, false, false)
DG_RK_KERNEL(distgraph_bf_round_relax_f64, true, false)
DG_RK_KERNEL(distgraph_bf_round_tails_i64, false, true)
DG_RK_KERNEL(distgraph_bf_round_tails_f64, true, true)
DG_RK_PUSH_KERNEL(distgraph_bf_round_push_relax_i64, false, false)
DG_RK_PUSH_KERNEL(distgraph_bf_round_push_relax_f64, true, false)
DG_RK_PUSH_KERNEL(distgraph_bf_round_push_tails_i64, false, true)
DG_RK_PUSH_KERNEL(distgraph_bf_round_push_tails_f64, true, true)
