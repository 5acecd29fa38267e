// bf_rounds.cu: one round of the round-based Bellman-Ford (Jacobi or asynchronous) as fused kernels, for
// RoundsSSSP(engine="kernel") in distgraph/backends/gpu/bellman_ford.py (the CuPy baseline,
// engine="cupy", spends its rounds in ~20 array operations and host syncs, not in relaxing
// arcs: benchmarks/results/session14/README.md).
//
// A round relaxes the out-arcs of this PE's frontier vertices (those whose distance changed in
// the previous round) from the distances at the start of the round, `dist` (Jacobi; the
// asynchronous rounds below read their latest candidates), into `cand` (a copy
// of `dist`, made by the host's CuPy loop or by the settle kernels below), by a 64-bit
// atomicMin; a second kernel, when tails are kept (negative weights, once a negative cycle is
// proven), writes a winning tail into `pred` for every vertex the round lowered (any tail whose
// candidate equals the new key: racing writers all write winners). One warp per frontier vertex,
// lanes over its arcs, but for hubs (`bigdeg` arcs or more), whose arcs a second kernel spreads
// over the grid in pieces of `bigdeg`, a block each; lane 0 adds the warp's vertices' degrees to
// `count` (the relaxations) once, at the end.
//
// Asynchronous rounds (rel not null; never with the tails pass): a vertex's arcs are relaxed
// from its latest candidate, cand[u] as this round's atomicMins left it (read from L2), not
// from dist[u], and rel[u - lo] keeps the distance they were last relaxed from: a frontier
// vertex whose candidate is still that one is skipped (its arcs gave all they can). Any value
// read is the weight of a walk and at most dist[u], so after round r every vertex is at most
// the shortest walk of r arcs, as in the Jacobi rounds: the same distances and stops (a
// negative cycle may be proven by the other rule, and sooner), rounds no more than Jacobi's,
// fewer relaxations (Kronecker 22 and 23, [1, 255]: 1.55-1.59x fewer on one H200, 1.3x on two),
// but rounds and relaxations that vary from run to run. rel must start as the key of +inf (no
// frontier vertex's). (On several PEs, reading the peers' copies of cand[u] as well, over
// NVLink, cut the relaxations by 8% but made the rounds slower:
// benchmarks/results/session17/README.md.)
//
// Distances are 64-bit keys as in bellman_ford.cuh: the int64 distance for integer weights; for
// float64 weights the "ordered int" of the double (negative ones with the 63 low bits flipped),
// so a signed atomicMin orders keys as the doubles; +inf is INT64_MAX or the key of +inf. Sums:
// int64 with wrap-around, float64 added once, as the CPU backend forms them.
//
// Arguments: indptr (int64, block rows from 0), indices (int32 global heads), w (the weights as
// _Block stores them: int64, int32, float64 or float32, the kernel's suffix; ignored when
// unit != 0: every arc weighs 1), front (int64 global ids of this
// PE's frontier), nfront, lo (the block's first vertex), dist, cand, pred (int64, n), count,
// nfp: when not null, the frontier's length is *nfp, read on the device (written by the last
// round's settle kernel: the host launches the next round without waiting to learn it), and
// rel (the block's vertices; null: Jacobi rounds).
//
// The settle loop (RoundsSSSP's kernels, _PeerPull in the module, one PE or several) without
// replicated distances: each PE's arrays are final only on its own vertices [lo, hi); a
// candidate for another PE's vertex lowers this PE's own copy (an upper bound of the owner's).
// distgraph_bf_round_mark_* marks the chunk of 32 vertices of every vertex it lowers in `flags`
// (its own block's too, since session 17: the settle skips the chunks no PE lowered). After a
// barrier the owner's distgraph_bf_round_settle pulls, for every peer whose flag of the chunk
// is set, the peer's candidates (256 contiguous bytes over NVLink) and takes the smaller, with
// the peer's tail (written by the peer's own tails pass: the tails kernel compares with the
// local arrays only). So only chunks that a peer lowered cross NVLink, once per round (a chunk
// across two blocks may be pulled for nothing: its flag says the peer lowered its own part).
// The same kernel lists the next frontier and starts the next round's arrays on the block, and
// distgraph_bf_round_settle_chunks on the chunks this PE lowered elsewhere (and clears the next
// round's flags; one PE runs both too, with no peer).
#include <cooperative_groups.h>

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

// An arc's weight as stored (_Block keeps int32 and float32 weights 4 bytes wide: a round reads
// 8 bytes an arc, not 12) as the 64-bit addend: the int64 value, or the float64's bits.
__device__ __forceinline__ dg_i64 dg_rk_wbits(int x) { return (dg_i64)x; }
__device__ __forceinline__ dg_i64 dg_rk_wbits(dg_i64 x) { return x; }
__device__ __forceinline__ dg_i64 dg_rk_wbits(float x) { return __double_as_longlong((double)x); }
__device__ __forceinline__ dg_i64 dg_rk_wbits(double x) { return __double_as_longlong(x); }

// One arc (u, v) of a round. TAILS: the tails pass; MARK: flag the chunk of any vertex this
// round lowered here (the block's too: the settle skips the chunks no PE flagged).
template <bool F, bool TAILS, bool MARK, typename WT>
__device__ __forceinline__ void dg_rk_arc(dg_i64 u, dg_i64 du, dg_i64 k, const int *__restrict__ indices,
                                          const WT *__restrict__ w, int unit, dg_i64 lo, dg_i64 hi,
                                          const dg_i64 *__restrict__ dist, dg_i64 *cand, dg_i64 *pred, int *flags) {
    const int v = indices[k];
    const dg_i64 c = dg_rk_relax<F>(du, unit ? 1 : dg_rk_wbits(w[k]));
    if (TAILS) {
        if (c == cand[v] && c < dist[v]) pred[v] = u;
    } else if (c < cand[v]) {
        atomicMin(cand + v, c);
        if (MARK && !flags[v >> 5]) flags[v >> 5] = 1;  // its chunk lowered this round, here
    }
}

// A warp per frontier vertex of fewer than `bigdeg` arcs; the others (hubs: one warp would hold
// the round for all of a hub's arcs) are listed in big[*nbig], in pieces of `bigdeg` arcs, by
// the relaxation (not the tails pass, which runs on the same frontier) and left to dg_rk_big.
// Lane 0 counts the warp's relaxations, added once at the end (one counter: an atomicAdd per
// frontier vertex would queue up millions on one address in a large round).
template <bool F, bool TAILS, bool MARK, typename WT>
__device__ void dg_rk_round(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                            const WT *__restrict__ w, int unit, const dg_i64 *__restrict__ front,
                            dg_i64 nfront, dg_i64 lo, dg_i64 hi, const dg_i64 *__restrict__ dist, dg_i64 *cand,
                            dg_i64 *pred, unsigned long long *count, int *flags, dg_i64 *big,
                            unsigned long long *nbig, dg_i64 bigdeg, const unsigned long long *nfp, dg_i64 *rel) {
    const int lane = threadIdx.x & 31;
    const dg_i64 warps = ((dg_i64)gridDim.x * blockDim.x) >> 5;
    const dg_i64 nf = nfp ? (dg_i64)*nfp : nfront;
    unsigned long long arcs = 0;  // this warp's relaxations (one atomicAdd at the end, not one per vertex)
    for (dg_i64 i = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < nf; i += warps) {
        const dg_i64 u = front[i];
        const dg_i64 beg = indptr[u - lo], end = indptr[u - lo + 1];
        dg_i64 du;
        if (!TAILS && rel) {  // asynchronous: u's latest candidate (from L2: this round's atomicMins)
            dg_i64 x = 0;
            int skip = 0;
            if (lane == 0) {
                x = __ldcg(cand + u);
                skip = x == rel[u - lo];  // its arcs were relaxed with this distance already
                if (!skip) rel[u - lo] = x;
            }
            du = __shfl_sync(0xffffffffu, x, 0);
            if (__shfl_sync(0xffffffffu, skip, 0)) continue;
        } else {
            du = dist[u];
        }
        arcs += (unsigned long long)(end - beg);
        if (end - beg >= bigdeg) {  // listed as pieces of bigdeg arcs: u | piece << 32
            if (!TAILS) {
                const dg_i64 np = (end - beg + bigdeg - 1) / bigdeg;
                unsigned long long at = 0;
                if (lane == 0) at = atomicAdd(nbig, (unsigned long long)np);
                at = __shfl_sync(0xffffffffu, at, 0);
                for (dg_i64 p = lane; p < np; p += 32) big[at + p] = u | (p << 32);
            }
            continue;
        }
        for (dg_i64 k = beg + lane; k < end; k += 32)
            dg_rk_arc<F, TAILS, MARK, WT>(u, du, k, indices, w, unit, lo, hi, dist, cand, pred, flags);
    }
    if (!TAILS && lane == 0 && arcs) atomicAdd(count, arcs);
}

// The listed pieces of the hubs' arcs, a block per piece (coalesced; the pieces of one hub
// spread over the grid, so the round waits for no single warp or block).
template <bool F, bool TAILS, bool MARK, typename WT>
__device__ void dg_rk_big(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                          const WT *__restrict__ w, int unit, dg_i64 lo, dg_i64 hi,
                          const dg_i64 *__restrict__ dist, dg_i64 *cand, dg_i64 *pred, int *flags,
                          const dg_i64 *__restrict__ big, const unsigned long long *nbig, dg_i64 bigdeg,
                          const dg_i64 *rel) {
    const unsigned long long nb = *nbig;
    for (unsigned long long j = blockIdx.x; j < nb; j += gridDim.x) {
        const dg_i64 e = big[j], u = e & 0xffffffffLL;
        // asynchronous: the hub's latest candidate, at most the rel[u] it was listed with
        const dg_i64 du = !TAILS && rel ? __ldcg(cand + u) : dist[u];
        const dg_i64 beg = indptr[u - lo] + (e >> 32) * bigdeg, last = indptr[u - lo + 1];
        const dg_i64 end = beg + bigdeg < last ? beg + bigdeg : last;
        for (dg_i64 k = beg + threadIdx.x; k < end; k += blockDim.x)
            dg_rk_arc<F, TAILS, MARK, WT>(u, du, k, indices, w, unit, lo, hi, dist, cand, pred, flags);
    }
}

// Every kernel takes the same arguments (the header's; hi: the block's end; flags: MARK's chunk
// flags; big, nbig, bigdeg: the hub list, its length (zeroed by the host before the round's
// relaxation, or by the last settle kernel) and the degree from which a vertex is a hub; nfp:
// the frontier's length on the device, or null).
#define DG_RK_ARGS(WT)                                                                                   \
    const dg_i64 *indptr, const int *indices, const WT *w, int unit, const dg_i64 *front, dg_i64 nfront,     \
        dg_i64 lo, dg_i64 hi, const dg_i64 *dist, dg_i64 *cand, dg_i64 *pred, unsigned long long *count,    \
        int *flags, dg_i64 *big, unsigned long long *nbig, dg_i64 bigdeg, const unsigned long long *nfp,  \
        dg_i64 *rel
#define DG_RK_KERNELS(WHAT, SFX, F, TAILS, MARK, WT)                                                   \
    extern "C" __global__ void distgraph_bf_round_##WHAT##_##SFX(DG_RK_ARGS(WT)) {                      \
        dg_rk_round<F, TAILS, MARK, WT>(indptr, indices, w, unit, front, nfront, lo, hi, dist, cand,    \
                                        pred, count, flags, big, nbig, bigdeg, nfp, rel);               \
    }                                                                                                   \
    extern "C" __global__ void distgraph_bf_round_##WHAT##_big_##SFX(DG_RK_ARGS(WT)) {                  \
        dg_rk_big<F, TAILS, MARK, WT>(indptr, indices, w, unit, lo, hi, dist, cand, pred, flags, big,   \
                                      nbig, bigdeg, rel);                                               \
    }
// named by the weights' dtype as stored (i64, i32: integer keys; f64, f32: float keys)
#define DG_RK_KERNELS_ALL(WHAT, TAILS, MARK)            \
    DG_RK_KERNELS(WHAT, i64, false, TAILS, MARK, dg_i64) \
    DG_RK_KERNELS(WHAT, i32, false, TAILS, MARK, int)    \
    DG_RK_KERNELS(WHAT, f64, true, TAILS, MARK, double)  \
    DG_RK_KERNELS(WHAT, f32, true, TAILS, MARK, float)

DG_RK_KERNELS_ALL(relax, false, false)
DG_RK_KERNELS_ALL(tails, true, false)
DG_RK_KERNELS_ALL(mark, false, true)

// The end of a round on this PE, after the barrier (every PE's relaxation, tails and flags are
// written), in two kernels. ptrs holds three tables of npes device addresses: the PEs'
// candidates of this round, their flags, their tails (pred null: no tails).
//
// distgraph_bf_round_settle, a thread per vertex of this PE's block [lo, hi), skipping those
// whose chunk no PE flagged (they are as they were): the pull (every peer that flagged the
// vertex's chunk; the first smallest candidate wins, the owner's own on a tie, then the first
// peer in PE order, with the peer's tail); `dist` (this round's start, the next round's
// candidates) takes the candidate; if the round lowered it, its id into `front` (res[0] counts
// them, one atomicAdd per block and pass; res[1] = 1 when one was unreached, for the probe) and
// its key into res[2], the smallest key of the block so far (for the negative-cycle bound:
// res_next[2], the last round's, is taken in; a key changes only when its vertex is lowered).
// `res` must start as {0, 0, x}, x INT64_MAX or a distance of the run (_pull_loop starts round
// 0's row at 0, the source's, on every PE: never below the bound, which is negative); the
// kernel sets the next round's results `res_next`
// (the other of two, which this round's relaxation read its frontier's length from) so, and
// zeroes the hub list's length `nbig`: the next round needs no reset from the host. One PE:
// npes = 1, nothing is pulled.
//
// distgraph_bf_round_settle_chunks (one PE or several), a thread per chunk of 32 vertices: the next
// round's flags (`clear`) are zeroed, and in the chunks this PE lowered (`mine`: its flags of
// this round) its copies of other PEs' vertices take the candidates, a warp per chunk; elsewhere
// they are equal already. So a round's end costs this PE its block and the chunks it touched,
// not a pass over all n vertices.
extern "C" __global__ void distgraph_bf_round_settle(dg_i64 lo, dg_i64 hi, int me, int npes,
                                                     const dg_i64 *__restrict__ ptrs, dg_i64 *cand, dg_i64 *dist,
                                                     dg_i64 *pred, dg_i64 *front, unsigned long long *res,
                                                     dg_i64 inf, unsigned long long *res_next,
                                                     unsigned long long *nbig) {
    const int lane = threadIdx.x & 31;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        // res[2] is the smallest key so far: the last round's (res_next's, kept) and, below, this
        // round's lowered vertices' (a vertex's key changes only when it is lowered)
        atomicMin(reinterpret_cast<long long *>(res + 2), (long long)res_next[2]);
        res_next[0] = 0, res_next[1] = 0;
        *nbig = 0;
    }
    const int *mine = reinterpret_cast<const int *>(ptrs[npes + me]);  // this PE's flags of the round
    const dg_i64 stride = (dg_i64)gridDim.x * blockDim.x;
    const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    __shared__ unsigned before[32];         // each warp's first slot in the block's part of `front`
    __shared__ unsigned long long start;  // the block's part, one atomicAdd per block and pass
    dg_i64 low = 0x7fffffffffffffffLL;  // this thread's smallest key of the block
    bool fresh = false;                 // this thread reached a vertex for the first time
    for (dg_i64 base = lo + (dg_i64)blockIdx.x * blockDim.x; base < hi; base += stride) {  // block-uniform
        const dg_i64 v = base + threadIdx.x;
        bool lowered = false;
        // a chunk no PE lowered this round (no flag set) is left as it is: small rounds read
        // the flags, not the block's distances
        bool touched = v < hi && mine[v >> 5];
        for (int q = 0; q < npes && v < hi && !touched; ++q)
            touched = q != me && reinterpret_cast<const int *>(ptrs[npes + q])[v >> 5];
        if (!__syncthreads_or(touched)) continue;  // none of the block's pass: no shared state used
        if (touched) {
            dg_i64 c = cand[v];
            const dg_i64 d = dist[v];
            int from = -1;
            for (int q = 0; q < npes; ++q) {
                if (q == me || !reinterpret_cast<const int *>(ptrs[npes + q])[v >> 5]) continue;
                const dg_i64 x = reinterpret_cast<const dg_i64 *>(ptrs[q])[v];
                if (x < c) c = x, from = q;
            }
            if (from >= 0) {
                cand[v] = c;
                if (pred) pred[v] = reinterpret_cast<const dg_i64 *>(ptrs[2 * npes + from])[v];
            }
            lowered = c < d;
            fresh |= lowered && d == inf;
            low = c < low ? c : low;
            if (lowered) dist[v] = c;
        }
        // the lowered vertices into `front`: counted per warp, placed per block
        const unsigned m = __ballot_sync(0xffffffffu, lowered);
        if (lane == 0) before[warp] = __popc(m);
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned total = 0;
            for (int j = 0; j < nwarps; ++j) {
                const unsigned c = before[j];
                before[j] = total;
                total += c;
            }
            start = total ? atomicAdd(res, (unsigned long long)total) : 0;
        }
        __syncthreads();
        if (lowered) front[start + before[warp] + __popc(m & ((1u << lane) - 1u))] = v;
        __syncthreads();  // `before` and `start` are read before the next pass writes them
    }
    if (__any_sync(0xffffffffu, fresh) && lane == 0) res[1] = 1;
    for (int o = 16; o; o >>= 1) {
        const dg_i64 x = __shfl_xor_sync(0xffffffffu, low, o);
        low = x < low ? x : low;
    }
    if (lane == 0) atomicMin(reinterpret_cast<long long *>(res + 2), low);
}

extern "C" __global__ void distgraph_bf_round_settle_chunks(dg_i64 n, dg_i64 lo, dg_i64 hi,
                                                            const int *__restrict__ mine,
                                                            const dg_i64 *__restrict__ cand, dg_i64 *dist,
                                                            int *clear, dg_i64 nflags) {
    const int lane = threadIdx.x & 31;
    const dg_i64 stride = (dg_i64)gridDim.x * blockDim.x;
    for (dg_i64 base = (dg_i64)blockIdx.x * blockDim.x + (threadIdx.x & ~31); base < nflags; base += stride) {
        const dg_i64 j = base + lane;  // warp-uniform loop: `base` is the warp's first chunk
        bool todo = false;
        if (j < nflags) {
            clear[j] = 0;
            todo = mine[j] && (j * 32 < lo || j * 32 + 32 > hi);  // lowered here, not all of the block
        }
        for (unsigned m = __ballot_sync(0xffffffffu, todo); m; m &= m - 1) {
            const dg_i64 v = (base + __ffs(m) - 1) * 32 + lane;  // the warp copies the chunk
            if (v < n && (v < lo || v >= hi)) {
                const dg_i64 c = cand[v];
                if (c != dist[v]) dist[v] = c;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batched rounds: up to 32 sources at once on one PE (RoundsSSSP.run_batch; several groups of
// them in step, dg_bk_persist below). `dist` holds nb
// keys per vertex, vertex-major (dist[v * nb + b]: source b's distance at v), so one arc read
// relaxes every source that needs it and their nb distances at the head share one or two
// 128-byte lines (one source's rounds touch a 32-byte sector per relaxation for 8 bytes).
// act[v] / nact[v]: the bits of the sources whose distance at v changed, for this round's
// frontier / the next; `front` lists this round's vertices once each (*nfp of them), `next`
// the next round's: whoever sets the first bit of a vertex's nact appends it (warp-aggregated).
// Rounds are asynchronous: a vertex's arcs are relaxed from its latest keys (__ldcg: L2), so
// every value read is a walk's weight, at most the Jacobi round's (the same distances; a
// change made during the round sets the vertex's bit for the next round). A frontier vertex's
// act is zeroed as it is read (by parity the array is the next round's nact). count[b] (b < 32):
// source b's relaxations, summed per block. rel (n * nb keys, or null: off) keeps the key
// each (vertex, source) had when its arcs were last relaxed: a frontier vertex's source whose
// key is still that one is dropped from its mask (its arcs gave all they can; as RoundsSSSP's
// asynchronous rounds do for one source). rel must start as the key of +inf.
// Past the first rounds the host queues rounds without reading anything back between them (in
// one persistent launch of up to 512, dg_bk_persist, or 30 at a time as CUDA graphs: deep graphs
// need thousands), so each round's first kernel resets the counters the round after it appends
// to: *zero (the
// frontier length the next round's kernels append to; the host rotates three) and zbig[0..1]
// (the next round's hub pieces and mid list; two pairs), and counts itself in *nrounds if its
// frontier was not empty. A round with an empty frontier does nothing else (its advance finds
// no far list either).
//
// A round is two passes and the advance. The first (dg_bk_round) takes up to 32 frontier vertices a
// warp and deals the (source, arc) pairs of the thin ones over the lanes; it lists the others
// for the second (dg_bk_big): in the mid list (a warp each, dg_bk_range: the lanes dealt over
// (arc, source) pairs of a vertex u with p sources in its mask, 32 / p arcs at once, p lanes
// each reading the head's p keys side by side) or, for vertices of `bigdeg` arcs or more, in
// pieces of bigdeg arcs (big[j] = u | piece << 32, bigm[j] = its mask), a block each.
// Near-far (ph, far0 / far1, farm; off while the threshold is INT64_MAX): a frontier vertex's
// source whose key is at or past the threshold waits: its bit goes to farm[u], and u to the far
// list of the phase (once). When a round leaves no frontier, dg_bk_advance makes the next
// round a far round: it reads that list, with the masks in farm, and the threshold moves to the
// list's smallest key plus delta; later rounds append to the other list. Every deferred source
// is relaxed later, so the distances are the same; a road network's relaxations fell 8-10x.
// K: the keys' type, dg_i64 (as above) or, for integer weights, int (4 bytes a key: a
// vertex's 32 keys fill one 128-byte line; INT_MAX is +inf). With int keys a sum is formed in
// 64 bits and one outside [INT_MIN, INT_MAX) is not stored: *ovf is set (dg_bk_lower), and
// the host runs the batch again with 64-bit keys.
// A candidate c against the head's key `cur` as read (maybe stale: never below the current
// key): whether to try the atomicMin. A key below `bound` (ph's; with negative weights -B - 1,
// B the sum of their magnitudes, as the single-source rounds' bound; INT64_MIN without) is a
// walk's weight that no walk without a negative cycle reaches (-inf, or a key that wrapped
// around, included): source b's bit goes to *cyc, the host runs it alone, which finds the cycle.
// With int keys a sum that does not fit sets *ovf where it
// might matter: below INT_MIN, or at INT_MAX or more against an unreached head (a reached head
// holds a smaller key than any such sum).
template <typename K>
__device__ __forceinline__ bool dg_bk_lower(dg_i64 c, dg_i64 cur, unsigned *ovf, dg_i64 bound,
                                            unsigned long long *cyc, int b) {
    if (c < bound) {  // the weight of a walk through a negative cycle: source b is not settled
        atomicOr(cyc, 1ull << b);
        return false;
    }
    if (sizeof(K) == 8) return c < cur;
    if (c < -0x80000000LL || (c >= 0x7fffffffLL && cur == 0x7fffffffLL)) {
        *ovf = 1u;
        return false;
    }
    return c < cur;
}

// The batched rounds' near-far state ph[] (int64): the threshold key (INT64_MAX: off), the far
// list appended to (0 or 1), whether this round reads the other far list (a far round), the
// two lists' lengths and smallest keys, the negative-cycle bound key (dg_bk_lower), delta (the
// weights' addend: the int64 value or the float64's bits), the phases begun, the bits of the
// sources that went below the bound.
#define DG_BK_THR 0
#define DG_BK_FSEL 1
#define DG_BK_FROUND 2
#define DG_BK_NFAR 3
#define DG_BK_FMIN 5
#define DG_BK_BOUND 7
#define DG_BK_DELTA 8
#define DG_BK_PHASES 9
#define DG_BK_CYCLE 10

// Appends v (where app) to the next frontier, one atomicAdd per warp.
__device__ __forceinline__ void dg_bk_append(bool app, int v, int lane, int *next, unsigned long long *nnext) {
    const unsigned want = __ballot_sync(0xffffffffu, app);
    if (want) {
        const int leader = __ffs(want) - 1;
        unsigned long long base = 0;
        if (lane == leader) base = atomicAdd(nnext, (unsigned long long)__popc(want));
        base = __shfl_sync(0xffffffffu, base, leader);
        if (app) next[base + __popc(want & ((1u << lane) - 1u))] = v;
    }
}

// Arc k relaxed for source b from du (its key at the tail): v is the head; true when this
// lowered v's key and set the first of v's bits for the next round (whoever does appends v).
template <bool F, typename WT, typename K>
__device__ __forceinline__ bool dg_bk_arc(dg_i64 du, dg_i64 k, int b, int nb, const int *__restrict__ indices,
                                          const WT *__restrict__ w, int unit, K *dist, unsigned *nact, unsigned *ovf,
                                          dg_i64 bound, unsigned long long *cyc, int &v) {
    v = indices[k];
    const dg_i64 c = dg_rk_relax<F>(du, unit ? 1 : dg_rk_wbits(w[k]));
    K *at = dist + (dg_i64)v * nb + b;
    // a plain read first: it may be stale, but never below the current key
    return dg_bk_lower<K>(c, (dg_i64)*at, ovf, bound, cyc, b) && (K)c < atomicMin(at, (K)c) &&
           atomicOr(nact + v, 1u << b) == 0u;
}

template <bool F, typename WT, typename K>
__device__ __forceinline__ void dg_bk_range(dg_i64 u, unsigned m, dg_i64 beg, dg_i64 end, int lane, int nb,
                                            const int *__restrict__ indices, const WT *__restrict__ w, int unit,
                                            K *dist, unsigned *nact, int *next, unsigned long long *nnext,
                                            unsigned *ovf, dg_i64 bound, unsigned long long *cyc) {
    const int p = __popc(m);
    const int q = 32 / p;  // arcs per step
    const int slot = lane / p, si = lane - slot * p;
    const bool valid = slot < q;
    unsigned mm = m;
    for (int i = 0; i < si; ++i) mm &= mm - 1;
    const int b = __ffs(mm) - 1;  // this lane's source: the si-th set bit of m
    const dg_i64 du = valid ? (dg_i64)__ldcg(dist + u * nb + b) : 0;
    for (dg_i64 k0 = beg; k0 < end; k0 += q) {  // warp-uniform: every lane runs every step
        const dg_i64 k = k0 + slot;
        int v = 0;
        const bool app = valid && k < end && dg_bk_arc<F, WT, K>(du, k, b, nb, indices, w, unit, dist, nact, ovf,
                                                                 bound, cyc, v);
        dg_bk_append(app, v, lane, next, nnext);
    }
}

// A round. A warp takes 32 frontier vertices at once (fewer when the frontier is small: vpw),
// a lane each. The (source, arc) pairs of
// its thin vertices (arcs times mask's sources at most `thin`: a road network's, whose sources'
// wavefronts seldom meet) are dealt over the warp's lanes, 32 at a time; the others go to the
// mid list (distgraph_bf_batch_big_*: a warp each, dg_bk_range) or, hubs, in pieces to the
// big list (a block each). thin = 0: every vertex by a warp of the second pass.
template <bool F, typename WT, typename K>
__device__ void dg_bk_round(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                            const WT *__restrict__ w, int unit, const int *front,
                            const unsigned long long *nfp, int nb, K *dist, unsigned *act, unsigned *nact,
                            int *next, unsigned long long *nnext, dg_i64 *big, unsigned *bigm,
                            unsigned long long *nbig, dg_i64 bigdeg, unsigned long long *count, K *rel,
                            unsigned *ovf, unsigned long long *zero, unsigned long long *zbig,
                            unsigned long long *nrounds, int thin, int *mid, unsigned *midm, dg_i64 *ph,
                            int *far0, int *far1, unsigned *farm, int bid, int nblk) {
    __shared__ unsigned long long relax[32];  // this block's relaxations per source
    unsigned long long *nmid = nbig + 1;
    // near-far (ph: DG_BK_*): this round reads the far list of the last phase when the last
    // round left no frontier; a source's key at or past the threshold goes far
    const bool fround = ph[DG_BK_FROUND] != 0;
    const int fs = (int)ph[DG_BK_FSEL];
    const dg_i64 thr = ph[DG_BK_THR];
    int *const fapp = fs ? far1 : far0;  // the far list this round appends to
    const int *const src = fround ? (fs ? far0 : far1) : front;  // (a far round: the other one)
    unsigned long long *const nfar = (unsigned long long *)(ph + DG_BK_NFAR + fs);
    const dg_i64 bound = ph[DG_BK_BOUND];
    unsigned long long *const cyc = (unsigned long long *)(ph + DG_BK_CYCLE);
    const int lane = threadIdx.x & 31;
    const dg_i64 warps = ((dg_i64)nblk * blockDim.x) >> 5;
    const dg_i64 nf = (dg_i64)*nfp;
    if (threadIdx.x < 32) relax[threadIdx.x] = 0ull;
    if (bid == 0 && threadIdx.x == 0) {  // the next round's counters (no host memset between rounds)
        *zero = 0ull;
        zbig[0] = 0ull;
        zbig[1] = 0ull;
        if (nf) *nrounds += 1ull;
    }
    __syncthreads();
    // vertices a warp: 32 for a large frontier, fewer for a small one (a road network's: one
    // warp's pairs, dealt 32 at a time, are a chain of dependent accesses each; spread thinner,
    // every warp of the grid takes a share)
    const int vpw = (int)(nf >= warps * 32 ? 32 : (nf + warps - 1) / warps);
    for (dg_i64 i0 = (((dg_i64)bid * blockDim.x + threadIdx.x) >> 5) * vpw; i0 < nf; i0 += warps * vpw) {
        const dg_i64 i = i0 + lane;
        dg_i64 u = 0, beg = 0, end = 0;
        unsigned m = 0;
        unsigned fm = 0;  // the lane's far sources
        dg_i64 fmin = 0x7fffffffffffffffLL;
        if (lane < vpw && i < nf) {
            u = src[i];
            // (a list holds a vertex once: this lane alone reads and clears its mask)
            if (fround) {
                m = farm[u];
                farm[u] = 0u;
            } else {
                m = act[u];
                act[u] = 0u;  // (the next round's nact)
            }
            if (thr != 0x7fffffffffffffffLL) {
                for (unsigned mm = m; mm; mm &= mm - 1) {
                    const int b = __ffs(mm) - 1;
                    const dg_i64 x = (dg_i64)__ldcg(dist + u * nb + b);
                    if (x >= thr) {
                        fm |= 1u << b;
                        fmin = x < fmin ? x : fmin;
                    }
                }
                m &= ~fm;
            }
            if (rel && m) {  // skip the sources whose key at u its arcs were relaxed from already
                for (unsigned mm = m; mm; mm &= mm - 1) {
                    const int b = __ffs(mm) - 1;
                    const K x = __ldcg(dist + u * nb + b);
                    if (x == rel[u * nb + b]) m &= ~(1u << b);
                    else rel[u * nb + b] = x;
                }
            }
            if (m) {
                beg = indptr[u];
                end = indptr[u + 1];
                for (unsigned mm = m; mm; mm &= mm - 1) atomicAdd(relax + (__ffs(mm) - 1), (unsigned long long)(end - beg));
            }
        }
        // the far sources: into u's far mask, u into the far list once (whoever sets its first bit)
        const bool fapp1 = fm && atomicOr(farm + u, fm) == 0u;
        dg_bk_append(fapp1, (int)u, lane, fapp, nfar);
        for (int o = 16; o; o >>= 1) {
            const dg_i64 y = __shfl_xor_sync(0xffffffffu, fmin, o);
            fmin = y < fmin ? y : fmin;
        }
        if (lane == 0 && fmin != 0x7fffffffffffffffLL) atomicMin(ph + DG_BK_FMIN + fs, fmin);
        const int p = __popc(m);
        const bool heavy = m && (end - beg) * p > thin;
        // thin vertices: the warp's (vertex, source, arc) triples dealt over its lanes, 32 at a
        // time (a lane's triple: the owner lane whose running sum of work passes its index)
        const unsigned work = heavy ? 0u : (unsigned)((end - beg) * p);
        unsigned incl = work;
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += y;
        }
        const unsigned total = __shfl_sync(0xffffffffu, incl, 31), excl = incl - work;
        const int deg = (int)(end - beg);
        for (unsigned t0 = 0; t0 < total; t0 += 32) {
            const unsigned t = t0 + lane;
            int o = 0;  // the lanes whose running sum is at most t
            for (int step = 16; step; step >>= 1)
                if (__shfl_sync(0xffffffffu, incl, o + step - 1) <= t) o += step;
            const int ou = __shfl_sync(0xffffffffu, (int)u, o), od = __shfl_sync(0xffffffffu, deg, o);
            const dg_i64 ob = __shfl_sync(0xffffffffu, beg, o);
            const unsigned om = __shfl_sync(0xffffffffu, m, o), oe = __shfl_sync(0xffffffffu, excl, o);
            bool app = false;
            int v = 0;
            if (t < total) {
                const unsigned idx = t - oe;
                const unsigned si = idx / (unsigned)od;  // the owner's si-th source, its arc idx % od
                const dg_i64 k = ob + (idx - si * (unsigned)od);
                unsigned mm = om;
                for (unsigned q = 0; q < si; ++q) mm &= mm - 1;
                const int b = __ffs(mm) - 1;
                const dg_i64 du = (dg_i64)__ldcg(dist + (dg_i64)ou * nb + b);
                app = dg_bk_arc<F, WT, K>(du, k, b, nb, indices, w, unit, dist, nact, ovf, bound, cyc, v);
            }
            dg_bk_append(app, v, lane, next, nnext);
        }
        // the others for distgraph_bf_batch_big_*: a hub in pieces, the rest in the mid list
        const bool hub = heavy && end - beg >= bigdeg;
        if (hub) {
            const dg_i64 np = (end - beg + bigdeg - 1) / bigdeg;
            const unsigned long long at = atomicAdd(nbig, (unsigned long long)np);
            for (dg_i64 q = 0; q < np; ++q) big[at + q] = u | (q << 32), bigm[at + q] = m;
        }
        const bool md = heavy && !hub;
        const unsigned want = __ballot_sync(0xffffffffu, md);
        if (want) {
            const int leader = __ffs(want) - 1;
            unsigned long long base = 0;
            if (lane == leader) base = atomicAdd(nmid, (unsigned long long)__popc(want));
            base = __shfl_sync(0xffffffffu, base, leader);
            if (md) {
                const unsigned long long j = base + __popc(want & ((1u << lane) - 1u));
                mid[j] = (int)u;
                midm[j] = m;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x < 32 && relax[threadIdx.x]) atomicAdd(count + threadIdx.x, relax[threadIdx.x]);
}

// The round's second pass: the mid list's vertices, a warp each (dg_bk_range), then the listed
// pieces of hubs, a block each, the block's warps splitting the piece's arcs.
template <bool F, typename WT, typename K>
__device__ void dg_bk_big(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                          const WT *__restrict__ w, int unit, int nb, K *dist, unsigned *nact, int *next,
                          unsigned long long *nnext, const dg_i64 *big,
                          const unsigned *bigm, const unsigned long long *nbig, dg_i64 bigdeg,
                          unsigned *ovf, const int *mid, const unsigned *midm,
                          dg_i64 *ph, int bid, int nblk) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const dg_i64 bound = ph[DG_BK_BOUND];
    unsigned long long *const cyc = (unsigned long long *)(ph + DG_BK_CYCLE);
    const dg_i64 warps = ((dg_i64)nblk * blockDim.x) >> 5;
    const dg_i64 nmid = (dg_i64)nbig[1];
    for (dg_i64 j = ((dg_i64)bid * blockDim.x + threadIdx.x) >> 5; j < nmid; j += warps) {
        const dg_i64 u = mid[j];
        dg_bk_range<F, WT, K>(u, midm[j], indptr[u], indptr[u + 1], lane, nb, indices, w, unit, dist, nact, next,
                              nnext, ovf, bound, cyc);
    }
    const unsigned long long total = nbig[0];
    for (unsigned long long j = bid; j < total; j += nblk) {
        const dg_i64 e = big[j], u = e & 0xffffffffLL;
        const dg_i64 beg = indptr[u] + (e >> 32) * bigdeg, last = indptr[u + 1];
        const dg_i64 end = beg + bigdeg < last ? beg + bigdeg : last;
        const dg_i64 per = (end - beg + nw - 1) / nw;
        const dg_i64 wb = beg + warp * per, we = wb + per < end ? wb + per : end;
        if (wb < we)
            dg_bk_range<F, WT, K>(u, bigm[j], wb, we, lane, nb, indices, w, unit, dist, nact, next, nnext, ovf,
                                  bound, cyc);
    }
}

// After a round's two passes (one thread): no next frontier but a far list: the next round
// reads that list (a far round), the threshold moves past its smallest key by delta, and later
// rounds append to the other list (emptied by now). (A kernel of its own: the passes' blocks
// counting themselves out on one word cost more than the round on a road network.)
template <bool F>
__device__ void dg_bk_advance(unsigned long long *nnext, dg_i64 *ph, int bid) {
    if (bid != 0 || threadIdx.x != 0) return;
    const int fs = (int)ph[DG_BK_FSEL];
    const unsigned long long nfar = (unsigned long long)ph[DG_BK_NFAR + fs];
    if (*nnext == 0ull && nfar) {
        const dg_i64 thr = ph[DG_BK_THR], fmin = ph[DG_BK_FMIN + fs];
        const dg_i64 base = thr > fmin ? thr : fmin, d = ph[DG_BK_DELTA];
        dg_i64 nt;
        if (F) nt = dg_rk_relax<true>(base, d);
        else nt = base > 0x7fffffffffffffffLL - d ? 0x7fffffffffffffffLL : base + d;
        ph[DG_BK_THR] = nt > base ? nt : base + 1;
        *nnext = nfar;
        ph[DG_BK_FSEL] = fs ^ 1;
        ph[DG_BK_NFAR + (fs ^ 1)] = 0;  // (read by the far round before this one)
        ph[DG_BK_FMIN + (fs ^ 1)] = 0x7fffffffffffffffLL;
        ph[DG_BK_FROUND] = 1;
        ph[DG_BK_PHASES] += 1;
    } else {
        ph[DG_BK_FROUND] = 0;
    }
}
extern "C" __global__ void distgraph_bf_batch_advance_int(unsigned long long *nnext, dg_i64 *ph) {
    dg_bk_advance<false>(nnext, ph, blockIdx.x);
}
extern "C" __global__ void distgraph_bf_batch_advance_float(unsigned long long *nnext, dg_i64 *ph) {
    dg_bk_advance<true>(nnext, ph, blockIdx.x);
}

#define DG_BK_ARGS(WT, K)                                                                                \
    const dg_i64 *indptr, const int *indices, const WT *w, int unit, const int *front,                  \
        const unsigned long long *nfp, int nb, K *dist, unsigned *act, unsigned *nact, int *next,       \
        unsigned long long *nnext, dg_i64 *big, unsigned *bigm, unsigned long long *nbig, dg_i64 bigdeg, \
        unsigned long long *count, K *rel, unsigned *ovf, unsigned long long *zero, unsigned long long *zbig,   \
        unsigned long long *nrounds, int thin, int *mid, unsigned *midm, dg_i64 *ph, int *far0, int *far1,      \
        unsigned *farm
#define DG_BK_KERNELS(SFX, F, WT, K)                                                                    \
    extern "C" __global__ void distgraph_bf_batch_round_##SFX(DG_BK_ARGS(WT, K)) {                       \
        dg_bk_round<F, WT, K>(indptr, indices, w, unit, front, nfp, nb, dist, act, nact, next, nnext, big, \
                              bigm, nbig, bigdeg, count, rel, ovf, zero, zbig, nrounds, thin, mid, midm, ph, far0,  \
                              far1, farm, blockIdx.x, gridDim.x);                                        \
    }                                                                                                    \
    extern "C" __global__ void distgraph_bf_batch_big_##SFX(DG_BK_ARGS(WT, K)) {                         \
        dg_bk_big<F, WT, K>(indptr, indices, w, unit, nb, dist, nact, next, nnext, big, bigm, nbig,      \
                            bigdeg, ovf, mid, midm, ph, blockIdx.x, gridDim.x);                          \
    }

// The same rounds as one cooperative launch (RoundsSSSP.run_batch past its first rounds on a
// deep graph, BATCH_PERSIST): `steps` rounds from round r0 at most, the passes and the advance
// of each separated by grid syncs, so a round costs no launches, for `ngroups` batches at once
// (BATCH_GROUPS: a deep graph's round is mostly the latency of chains of dependent accesses, so
// the groups' rounds share much of its time and its syncs: on road-FLA four groups' round took
// about twice one group's). The grid is split into ngroups
// runs of blocks, each group's rounds on its own (bid, nblk: the block's index in its run, the
// run's length); tab holds each group's DG_BG_LEN words (its arrays' addresses and nb, below).
// The arrays that alternate (front0/front1, act0/act1, the halves of nbig) and the three
// frontier lengths in cnt[0..2] rotate by the round's number as the host's rargs do; cnt[3] is
// the overflow flag of 4-byte keys, cnt[4] the rounds with work. The second pass and its sync
// are skipped in a round whose first pass listed no mid vertex or hub piece in any group (a road
// network's usual round). A group leaves `live` (its bit) after a round that leaves it no
// frontier (no far list either: the advance made that the next frontier) or that overflowed,
// every block reading the same words (the overflow flags before the advance's sync, which a
// fast block's next round could set after it); cnt[5] = the rounds it ran in this launch.
// The launch ends when no group is live or after `steps` rounds. Block 0's first thread adds the
// nanoseconds from a round's start to the end of its first pass's sync, of the second pass's
// (where it ran), of the advance's, and the rounds that ran a second pass to the launch's first
// group's cnt[8..11] (its row has 16 words; the host sums the groups' rows). Every block must be resident
// (a cooperative launch, at most the occupancy's blocks, at least ngroups). The lists written
// and read within the launch (front, mid, big) are not __restrict__: no read-only path.
__device__ __forceinline__ unsigned long long dg_bk_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define DG_BG_LEN 18  // tab: dist, front0, front1, act0, act1, cnt, big, bigm, nbig, count, rel, mid, midm, ph,
//                       far0, far1, farm (addresses), nb
template <bool F, typename WT, typename K>
__device__ void dg_bk_persist(const dg_i64 *__restrict__ indptr, const int *__restrict__ indices,
                              const WT *__restrict__ w, int unit, const dg_i64 *__restrict__ tab, int ngroups,
                              unsigned live, dg_i64 bigdeg, int thin, dg_i64 r0, dg_i64 steps) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const int G = (int)gridDim.x;
    if (G < ngroups) __trap();  // (a group without a block: the host launches ngroups blocks or more)
    const int g = (int)(((long long)blockIdx.x * ngroups) / G);  // this block's group
    const int b0 = (int)(((long long)g * G + ngroups - 1) / ngroups);  // its run of blocks [b0, b1)
    const int b1 = (int)(((long long)(g + 1) * G + ngroups - 1) / ngroups);
    const int bid = (int)blockIdx.x - b0, nblk = b1 - b0;
    const dg_i64 *t = tab + (dg_i64)g * DG_BG_LEN;
    K *const dist = (K *)t[0];
    int *const front0 = (int *)t[1], *const front1 = (int *)t[2];
    unsigned *const act0 = (unsigned *)t[3], *const act1 = (unsigned *)t[4];
    unsigned long long *const cnt = (unsigned long long *)t[5];
    dg_i64 *const big = (dg_i64 *)t[6];
    unsigned *const bigm = (unsigned *)t[7];
    unsigned long long *const nbig = (unsigned long long *)t[8], *const count = (unsigned long long *)t[9];
    K *const rel = (K *)t[10];
    int *const mid = (int *)t[11];
    unsigned *const midm = (unsigned *)t[12];
    dg_i64 *const ph = (dg_i64 *)t[13];
    int *const far0 = (int *)t[14], *const far1 = (int *)t[15];
    unsigned *const farm = (unsigned *)t[16];
    const int nb = (int)t[17];
    unsigned *const ovf = (unsigned *)(cnt + 3);
    const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
    unsigned long long tp[4] = {0ull, 0ull, 0ull, 0ull}, ta = lead ? dg_bk_clock() : 0ull, tb;
    dg_i64 s = 0;
    while (s < steps && live) {
        const dg_i64 r = r0 + s;
        const int e = (int)(r & 1), c0 = (int)(r % 3), c1 = (int)((r + 1) % 3), c2 = (int)((r + 2) % 3);
        const bool mine = (live >> g) & 1u;
        int *const fr = e ? front1 : front0, *const nx = e ? front0 : front1;
        unsigned *const ac = e ? act1 : act0, *const na = e ? act0 : act1;
        if (mine)
            dg_bk_round<F, WT, K>(indptr, indices, w, unit, fr, cnt + c0, nb, dist, ac, na, nx, cnt + c1, big, bigm,
                                  nbig + 2 * e, bigdeg, count, rel, ovf, cnt + c2, nbig + 2 - 2 * e, cnt + 4, thin,
                                  mid, midm, ph, far0, far1, farm, bid, nblk);
        grid.sync();
        if (lead) tb = dg_bk_clock(), tp[0] += tb - ta, ta = tb;
        bool two = false;  // a mid vertex or a hub's piece listed in a live group
        for (int h = 0; h < ngroups; ++h) {
            const unsigned long long *nh = (const unsigned long long *)tab[(dg_i64)h * DG_BG_LEN + 8] + 2 * e;
            if ((live >> h) & 1u && (nh[0] | nh[1])) two = true;
        }
        if (two) {
            if (mine)
                dg_bk_big<F, WT, K>(indptr, indices, w, unit, nb, dist, na, nx, cnt + c1, big, bigm, nbig + 2 * e,
                                    bigdeg, ovf, mid, midm, ph, bid, nblk);
            grid.sync();
            if (lead) tb = dg_bk_clock(), tp[1] += tb - ta, ta = tb, tp[3] += 1ull;
        }
        // the overflow flags, read here: final (the passes are done; the advance does not write
        // them) and not yet set by the next round's first pass, which a fast block may begin
        // right after the advance's sync
        unsigned over = 0u;
        for (int h = 0; h < ngroups; ++h) {
            const unsigned long long *ch = (const unsigned long long *)tab[(dg_i64)h * DG_BG_LEN + 5];
            if ((live >> h) & 1u && *(const unsigned *)(ch + 3)) over |= 1u << h;
        }
        if (mine) dg_bk_advance<F>(cnt + c1, ph, bid);
        grid.sync();
        if (lead) tb = dg_bk_clock(), tp[2] += tb - ta, ta = tb;
        ++s;
        // (the same words on every block, all agree: cnt[c1] is written by the advance before the
        // sync, and by no round before round r + 2's first pass zeroes it)
        for (int h = 0; h < ngroups; ++h) {
            unsigned long long *ch = (unsigned long long *)tab[(dg_i64)h * DG_BG_LEN + 5];
            if ((live >> h) & 1u && (ch[c1] == 0ull || (over >> h) & 1u)) {
                live &= ~(1u << h);
                if (lead) ch[5] = (unsigned long long)s;
            }
        }
    }
    if (lead) {
        for (int h = 0; h < ngroups; ++h)
            if ((live >> h) & 1u) ((unsigned long long *)tab[(dg_i64)h * DG_BG_LEN + 5])[5] = (unsigned long long)s;
        unsigned long long *c = (unsigned long long *)tab[5];  // the first live group's row: the time's shares
        for (int k = 0; k < 4; ++k) c[8 + k] += tp[k];
    }
}
#ifndef DG_BP_MINB  // (resident blocks an SM asked of the compiler: 4 spills ~300 bytes of a group's addresses to L1)
#define DG_BP_MINB 4
#endif
#define DG_BP_KERNEL(SFX, F, WT, K)                                                                             \
    extern "C" __global__ void __launch_bounds__(256, DG_BP_MINB) distgraph_bf_batch_persist_##SFX(           \
        const dg_i64 *indptr, const int *indices, const WT *w, int unit, const dg_i64 *tab, int ngroups,      \
        unsigned live, dg_i64 bigdeg, int thin, dg_i64 r0, dg_i64 steps) {                                   \
        dg_bk_persist<F, WT, K>(indptr, indices, w, unit, tab, ngroups, live, bigdeg, thin, r0, steps);        \
    }
// named by the weights' dtype as stored and, for 4-byte keys, _k32
DG_BK_KERNELS(i64, false, dg_i64, dg_i64)
DG_BK_KERNELS(i32, false, int, dg_i64)
DG_BK_KERNELS(f64, true, double, dg_i64)
DG_BK_KERNELS(f32, true, float, dg_i64)
DG_BK_KERNELS(i64_k32, false, dg_i64, int)
DG_BK_KERNELS(i32_k32, false, int, int)
DG_BP_KERNEL(i64, false, dg_i64, dg_i64)
DG_BP_KERNEL(i32, false, int, dg_i64)
DG_BP_KERNEL(f64, true, double, dg_i64)
DG_BP_KERNEL(f32, true, float, dg_i64)
DG_BP_KERNEL(i64_k32, false, dg_i64, int)
DG_BP_KERNEL(i32_k32, false, int, int)
