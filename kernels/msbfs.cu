// msbfs.cu -- multi-source BFS on tensor cores over BVSS (BLEST Alg. 5) with the per-vertex
// sums of exact closeness centrality (BLEST Eq. 7, plus reach counts and harmonic sums).
//
// kappa = 32 * DG_MS_WORDS BFSs run at once (kappa in {32, 64, 128, 256}).  Every vertex u
// owns a kappa-bit element of DG_MS_WORDS uint32 words; bit c (word c/32, bit c%32) belongs
// to the BFS from srcs[c].  Elements are stored at the getVI position
//
//     VI(u) = (u % 8) * rho + u / 8,     rho = ceil(n / 8) slice sets,
//
// so that the elements of consecutive slice sets (handled by consecutive threads in stage 2)
// are contiguous (BLEST Sec. 6.1).  Word j of u's element is at [VI(u) * DG_MS_WORDS + j].
//
// State arrays (nhat = 8 * rho elements, W = DG_MS_WORDS):
//   F[nhat*W]      frontier of the current level (exact for every vertex after each stage 2:
//                  slice sets that were active and are not dirty any more are cleared).
//   Vc[nhat*W]     visited (current), Vn[nhat*W] visited (next, lazily ORed by stage 1).
//   act[rho*W]     activeSets: bit c of slice set s set iff s holds a frontier vertex of BFS c.
//   wasact[rho]    uint8, 1 iff act[s] != 0 (one byte to test instead of W words).
//   dirty[rho]     uint8 dirtySets: 1 iff stage 1 marked a vertex of s in Vn this level.
//   Q[2*qcap]      int2 (VSS id, slice set) work queues; level l reads Q[l&1].
//   ctr[32]        long long counters: ctr[l&3] = queue length of level l; ctr[4] = mu, the
//                  in-arcs of vertices not yet reached by every BFS (bottom-up test);
//                  ctr[8+(l&3)] = out-arcs of the frontier of level l; ctr[12] = levels run;
//                  ctr[13] = bottom-up levels; ctr[16] = active slice sets seen by
//                  distgraph_msbfs_build_queue (partitioned mode).
//   cnt[kappa]     per-source mode: vertices BFS c reached at the current level.
//   G[2*W]         frontier union: G[(l&1)*W ..] = OR of act[s] over all slice sets after the
//                  stage 2 of level l, i.e. the BFSs whose frontier is not empty (bottom-up
//                  target; zeroed by the level that writes it next).
//   heavy[nheavy]  vertices with more than bu_heavy in-arcs, by decreasing in-degree: bottom-up
//                  gives each of them a warp (the others get a thread).
//   stats[4]       levels and bottom-up levels added over launches (read by the host lazily).
// Outputs, added to (never reset by the kernels), uint64:
//   per-vertex mode (per_source = 0), indexed by vertex u:
//     far[u] += l * p, reach[u] += p, harmonic: l == 1: h0[u] += p; l >= 2: h1[u] += p * hi32,
//     h2[u] += p * lo32 of round(2^64 / l), where p = number of BFSs reaching u at level l
//     (l = 0: the sources themselves).  Exactly the fixed-point scheme of
//     distgraph/backends/cpu/bits.py, so sums are bit-identical to the CPU backend.
//   per-source mode (per_source = 1), indexed by c: the same sums over the vertices BFS c
//     reaches.
//
// Levels (Alg. 5): level 0 is the seeding (sources ORed into Vn, their slice sets dirty) and
// a stage 2.  Level l >= 1 is
//   stage 1 (lazy marking): a warp takes a queued VSS of slice set s; lanes 0-7 load the
//     kappa-bit frontier elements of the 8 vertices of s (F[lane*rho + s]); for every BFS c
//     set in act[s] a warp ballot of bit c rebuilds the 8-bit frontier word alpha, and two
//     binary MMAs (m8n8k128 AND+POPC, layout of BLEST Fig. 3) give the products of the 128
//     slices; bit c is accumulated per row in registers.  When many BFSs are active in s
//     (popc(act[s]) > tc_ratio * |frontier vertices of s|), the per-BFS loop costs more than
//     ORing whole kappa-bit elements: each frontier vertex b of s is broadcast from lane b
//     (W shuffles) and ORed into the rows whose slice has bit b (same products, all BFSs
//     at once, on CUDA cores).  Then the bits a row already has in Vn are dropped, the rest
//     flushed with one atomicOr per non-zero word into Vn, and the row's slice set is
//     marked dirty (row by row, or with DG_MS_FLUSH4 a lane's four rows together).  With
//     DG_MS_SPARSE a VSS of at most 32 slices (nearly every VSS of a road network) takes
//     neither loop: lane t takes slice t and ORs the frontier elements of the vertices its
//     mask names, then flushes its one row (dg_ms_sparse_vss; same products).
//   or bottom-up (when use_bu and mf * bu_ratio > mu, the CPU backend's test): every vertex u
//     with target = G & ~Vc[u] != 0 (BFSs that are still running and have not reached u)
//     ORs the frontier elements of its in-neighbours (CSR of G^T) until the target is
//     covered; a thread per vertex, a warp per heavy vertex (the scan of a hub by one
//     thread, one dependent load after another, made every level as slow as the largest
//     degree).
//   stage 2 (frontier finalization) over dirty slice sets: diff = Vc ^ Vn is the new
//     frontier, Vc = Vn, the sums above are added, act/wasact are rewritten and (replicated
//     mode) the VSSs of active slice sets are appended to the next queue.
//
// Kernels:
//   distgraph_msbfs_persistent  one cooperative launch per batch: seeding and all levels,
//                               grid syncs between stages (replicated mode); on small graphs
//                               `ngroups` kappa-source BFS batches at once, each on its part of
//                               the grid with its own state and barrier.
//   distgraph_msbfs_blocks, _pull_blocks, _pull_vertex_blocks
//                               one block per kappa-source batch (block schedule): stage 1 +
//                               stage 2, or a pull level over candidate slice sets or vertices.
//   distgraph_msbfs_seed, _stage1, _bottom_up, _stage2, _build_queue, _flush_sources
//                               the same steps as separate launches, for the partitioned
//                               mode, where the host puts each rank's F/act/wasact words to
//                               its peers (NVSHMEM) between stage 2 and the next queue.
// In partitioned mode a rank's BVSS holds only the slices of its own rows, and stage 2 and
// bottom-up run over its own slice sets [ss_lo, ss_hi).
//
// Reference: D. Elbek and K. Kaya, "Graph Traversal on Tensor Cores: A BFS Framework for
// Modern GPUs" (BLEST), arXiv:2606.05081, 2026, Sec. 6, Alg. 5, Eq. 7.
#include <cooperative_groups.h>

#include "common.cuh"

#ifndef DG_MS_WORDS
#define DG_MS_WORDS 8
#endif
#ifndef DG_MS_BLOCK
#define DG_MS_BLOCK 256
#endif
#ifndef DG_MS_PREFETCH
#define DG_MS_PREFETCH 0  // block mode: software-pipelined stage 1 (dg_ms_stage1_prefetch)
#endif
#ifndef DG_MS_FLUSH4
#define DG_MS_FLUSH4 0  // stage 1 flushes a lane's four rows together (dg_ms_flush_rows4)
#endif
#ifndef DG_MS_SPARSE
#define DG_MS_SPARSE 0  // stage 1 works on VSSs of at most 32 slices one slice per lane (dg_ms_sparse_vss)
#endif
#ifndef DG_MS_MINB
#define DG_MS_MINB 2  // blocks per SM the persistent kernel is compiled for (2: 10% faster than 3-4, kron:18)
#endif
#define DG_MS_KAPPA (32 * DG_MS_WORDS)
// The per-source counts of a level are flushed by one thread per BFS of a block (the
// persistent kernel's tid < DG_MS_BLOCK, the block kernel's threadIdx.x < nsrc), and stage 1
// hands out work by whole warps.
static_assert(DG_MS_BLOCK >= DG_MS_KAPPA && DG_MS_BLOCK % 32 == 0 && DG_MS_BLOCK <= 1024,
              "DG_MS_BLOCK: a multiple of 32 in [kappa, 1024]");

typedef unsigned long long dg_u64;
typedef long long dg_i64;

namespace cg = cooperative_groups;

__device__ __forceinline__ dg_i64 dg_vi(dg_i64 u, dg_i64 rho) { return (u & 7) * rho + (u >> 3); }

// Bits of BFSs that exist (c < nsrc) in word j.
__device__ __forceinline__ unsigned dg_full_word(int j, int nsrc) {
    const int lo = 32 * j;
    if (nsrc >= lo + 32) return DG_FULL_MASK;
    if (nsrc <= lo) return 0u;
    return (1u << (nsrc - lo)) - 1u;
}

// dg_recip_fixed (round(2^64 / L), the harmonic sums' fixed point): common.cuh

// The four products of this lane's slices with the 8-bit frontier word alpha (the layout of
// BLEST Fig. 3, as dg_vss_products in bvss_bfs.cu).
__device__ __forceinline__ void dg_ms_products(unsigned mask, unsigned alpha, unsigned lane, int &d0, int &d1,
                                               int &d2, int &d3) {
    const unsigned m9 = lane % 9u;
    const unsigned fragb = (m9 == 0u) ? alpha : ((m9 == 4u) ? (alpha << 8) : 0u);
    dg_bmma_and_popc(mask & 0xffffu, fragb, d0, d1);
    dg_bmma_and_popc(mask >> 16, fragb, d2, d3);
}

// Load one kappa-bit element (W words, aligned to its size) with vector loads.
__device__ __forceinline__ void dg_ms_load(const unsigned *p, unsigned (&v)[DG_MS_WORDS]) {
#if DG_MS_WORDS == 8
    const uint4 a = reinterpret_cast<const uint4 *>(p)[0], b = reinterpret_cast<const uint4 *>(p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
#elif DG_MS_WORDS == 4
    const uint4 a = reinterpret_cast<const uint4 *>(p)[0];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
#elif DG_MS_WORDS == 2
    const uint2 a = reinterpret_cast<const uint2 *>(p)[0];
    v[0] = a.x; v[1] = a.y;
#else
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) v[j] = p[j];
#endif
}

__device__ __forceinline__ void dg_ms_store(unsigned *p, const unsigned (&v)[DG_MS_WORDS]) {
#if DG_MS_WORDS == 8
    reinterpret_cast<uint4 *>(p)[0] = make_uint4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<uint4 *>(p)[1] = make_uint4(v[4], v[5], v[6], v[7]);
#elif DG_MS_WORDS == 4
    reinterpret_cast<uint4 *>(p)[0] = make_uint4(v[0], v[1], v[2], v[3]);
#elif DG_MS_WORDS == 2
    reinterpret_cast<uint2 *>(p)[0] = make_uint2(v[0], v[1]);
#else
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) p[j] = v[j];
#endif
}

// How stage 1 marks a slice set dirty: a byte per slice set (grid-wide modes, where stage 2
// scans every slice set), or a bit per slice set plus a list of the sets marked this level
// (block mode, where stage 2 visits only the listed sets; `count` is a shared counter).
struct dg_ms_mark_byte {
    unsigned char *dirty;
    __device__ __forceinline__ void operator()(dg_i64 ss) const { dirty[ss] = 1; }
    __device__ __forceinline__ void mark4(const dg_i64 (&ss)[4], const bool (&need)[4]) const {
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (need[r]) dirty[ss[r]] = 1;
    }
};
struct dg_ms_mark_list {
    unsigned *bits;
    int *list;
    unsigned *count;
    __device__ __forceinline__ void operator()(dg_i64 ss) const {
        const unsigned bit = 1u << (ss & 31);
        unsigned *w = bits + (ss >> 5);
        if (*w & bit) return;  // bits are only set during stage 1: a set bit is final
        if (!(atomicOr(w, bit) & bit)) list[atomicAdd(count, 1u)] = (int)ss;
    }
    // The same for the sets ss[r] with need[r], their bit words read together and their
    // atomics issued together (one round trip each instead of one per set).
    __device__ __forceinline__ void mark4(const dg_i64 (&ss)[4], const bool (&need)[4]) const {
        unsigned have[4], old[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) have[r] = need[r] ? bits[ss[r] >> 5] : ~0u;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const unsigned bit = 1u << (ss[r] & 31);
            old[r] = (have[r] & bit) ? bit : atomicOr(bits + (ss[r] >> 5), bit);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (!(old[r] & (1u << (ss[r] & 31)))) list[atomicAdd(count, 1u)] = (int)ss[r];
    }
};

// Flush a row's register buffer: drop the bits u already has in Vn (a possibly stale read
// only drops fewer), OR the rest into Vn, mark u's slice set dirty.
template <class Mark>
__device__ __forceinline__ void dg_ms_flush_row(int u, unsigned (&M)[DG_MS_WORDS], dg_i64 rho, unsigned *Vn,
                                                const Mark &mark) {
    unsigned any = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) any |= M[j];
    if (!any) return;
    const dg_i64 base = dg_vi(u, rho) * DG_MS_WORDS;
    unsigned have[DG_MS_WORDS];
    dg_ms_load(Vn + base, have);
    any = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) {
        M[j] &= ~have[j];
        any |= M[j];
    }
    if (!any) return;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j)
        if (M[j]) atomicOr(&Vn[base + j], M[j]);  // result unused: RED
    mark((dg_i64)(u >> 3));
}

// dg_ms_flush_row for a lane's four rows at once (DG_MS_FLUSH4): their Vn words are loaded
// together, then the new bits ORed in, then the slice sets marked.  dg_ms_flush_row row by
// row waits for each row's Vn words (and its mark's bit word) before the next row's load can
// be issued, since the next load may read words its atomics wrote: up to 4 * 3 device-memory
// round trips per VSS, against 3 here.  A row's read may now miss bits another of the four
// rows just ORed (same vertex: never within one VSS), which only drops fewer bits (marking
// twice is harmless): the same Vn and the same dirty sets.
__device__ __forceinline__ unsigned dg_ms_any(const unsigned (&M)[DG_MS_WORDS]) {
    unsigned a = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) a |= M[j];
    return a;
}

__device__ __forceinline__ bool dg_ms_drop_red(unsigned (&M)[DG_MS_WORDS], const unsigned (&have)[DG_MS_WORDS],
                                               unsigned *p) {
    unsigned any = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) {
        M[j] &= ~have[j];
        any |= M[j];
    }
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j)
        if (M[j]) atomicOr(p + j, M[j]);  // result unused: RED
    return any != 0u;
}

template <class Mark>
__device__ __forceinline__ void dg_ms_flush_rows4(const int4 u, unsigned (&M0)[DG_MS_WORDS],
                                                  unsigned (&M1)[DG_MS_WORDS], unsigned (&M2)[DG_MS_WORDS],
                                                  unsigned (&M3)[DG_MS_WORDS], dg_i64 rho, unsigned *Vn,
                                                  const Mark &mark) {
    const bool n0 = dg_ms_any(M0) != 0u, n1 = dg_ms_any(M1) != 0u, n2 = dg_ms_any(M2) != 0u,
               n3 = dg_ms_any(M3) != 0u;
    if (!(n0 || n1 || n2 || n3)) return;
    const dg_i64 b0 = dg_vi(u.x, rho) * DG_MS_WORDS, b1 = dg_vi(u.y, rho) * DG_MS_WORDS,
                 b2 = dg_vi(u.z, rho) * DG_MS_WORDS, b3 = dg_vi(u.w, rho) * DG_MS_WORDS;
    unsigned h0[DG_MS_WORDS], h1[DG_MS_WORDS], h2[DG_MS_WORDS], h3[DG_MS_WORDS];
    if (n0) dg_ms_load(Vn + b0, h0);  // the four loads before any atomic: one round trip
    if (n1) dg_ms_load(Vn + b1, h1);
    if (n2) dg_ms_load(Vn + b2, h2);
    if (n3) dg_ms_load(Vn + b3, h3);
    const bool m[4] = {n0 && dg_ms_drop_red(M0, h0, Vn + b0), n1 && dg_ms_drop_red(M1, h1, Vn + b1),
                       n2 && dg_ms_drop_red(M2, h2, Vn + b2), n3 && dg_ms_drop_red(M3, h3, Vn + b3)};
    const dg_i64 ss[4] = {(dg_i64)(u.x >> 3), (dg_i64)(u.y >> 3), (dg_i64)(u.z >> 3), (dg_i64)(u.w >> 3)};
    mark.mark4(ss, m);
}

// ---- Stage 1 of a sparse VSS (DG_MS_SPARSE): at most 32 slices, i.e. lanes 8-31 hold no slice
// (slice k is lane k/4's row k%4, and a VSS's slices come first, padding after).  On road-like
// graphs that is nearly every VSS: a slice set of 8 vertices of degree ~3 has ~22 slices, and the
// 128-slice layout leaves ~106 of them padding.  There the layout costs more than the products:
// the MMA loop runs 2 BMMAs and ~28 instructions (SASS of nvcc 13.0, sm_90) per active BFS, the
// CUDA-core path 8 shuffles and 32 predicated ORs per frontier vertex, both for 4 rows a lane, and
// the flush waits for up to 4 rows' Vn loads one after the other (and, with dirty bits in device
// memory, 2 more round trips per row for the mark), although lanes 6-31 hold nothing.
// Here lane t takes slice t (its row id and mask shuffled from lane t/4), ORs the frontier
// elements of the frontier vertices its mask names -- shuffled from lanes 0-7 whole, 8 words,
// one vertex per step, the warp stepping as often as the largest popc(mask & fmask) of a lane
// (1-2 on road graphs: a vertex rarely has more in-neighbours in one slice set) -- and flushes
// its one row: a single Vn round trip per VSS for all lanes together.  The products are the MMA
// loop's: row t gets bit c iff some vertex b of its mask has bit c in its frontier element (any
// such c is in act[s], the OR of the set's frontier elements), as in the CUDA-core path.
template <class Mark>
__device__ __forceinline__ void dg_ms_sparse_vss(const int4 u, const unsigned mk, const unsigned (&fv)[DG_MS_WORDS],
                                                 unsigned fmask, dg_i64 rho, unsigned *Vn, const Mark &mark,
                                                 unsigned lane) {
    const int from = (int)(lane >> 2);
    const unsigned c = lane & 3u;
    const int rx = __shfl_sync(DG_FULL_MASK, u.x, from), ry = __shfl_sync(DG_FULL_MASK, u.y, from),
              rz = __shfl_sync(DG_FULL_MASK, u.z, from), rw = __shfl_sync(DG_FULL_MASK, u.w, from);
    const int row = c == 0u ? rx : (c == 1u ? ry : (c == 2u ? rz : rw));
    unsigned m = (__shfl_sync(DG_FULL_MASK, mk, from) >> (8u * c)) & fmask;  // fmask: bits 0-7 only
    unsigned M[DG_MS_WORDS];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) M[j] = 0u;
    while (__any_sync(DG_FULL_MASK, m != 0u)) {  // warp-uniform
        // a lane with nothing left reads lane 8, whose fv is zero (lanes 8-31 load none)
        const int b = m ? __ffs(m) - 1 : 8;
        m &= m - 1u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) M[j] |= __shfl_sync(DG_FULL_MASK, fv[j], b);
    }
    dg_ms_flush_row(row, M, rho, Vn, mark);  // padding (mask 0) and rows not reached: nothing
}

// ---- Stage 1: lazy marking over the queue (Alg. 5 lines 6-36)
template <class Mark>
__device__ __forceinline__ void dg_ms_stage1(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks,
                                             const unsigned *F, const unsigned *act, unsigned *Vn,
                                             const Mark &mark, const int2 *qc, dg_i64 nq, dg_i64 rho,
                                             int tc_ratio, dg_i64 warp, dg_i64 nwarps, unsigned lane) {
#if DG_MS_SPARSE
    // the warp's next queue entry is loaded while it works on the current VSS: one dependent
    // round trip less per VSS (a sparse VSS's chain is then its inputs, its Vn words, its mark)
    int2 qnext = warp < nq ? qc[warp] : make_int2(0, 0);
#endif
    for (dg_i64 w = warp; w < nq; w += nwarps) {
#if DG_MS_SPARSE
        const int2 q = qnext;
        if (w + nwarps < nq) qnext = qc[w + nwarps];
#else
        const int2 q = qc[w];
#endif
        const dg_i64 vss = q.x, ss = q.y;
        unsigned fv[DG_MS_WORDS], M0[DG_MS_WORDS], M1[DG_MS_WORDS], M2[DG_MS_WORDS], M3[DG_MS_WORDS];
        const dg_i64 fbase = ((dg_i64)(lane & 7u) * rho + ss) * DG_MS_WORDS;
        unsigned fany = 0u;
        if (lane < 8u) dg_ms_load(F + fbase, fv);  // lanes 8-31 issue no load
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            if (lane >= 8u) fv[j] = 0u;
            fany |= fv[j];
            M0[j] = M1[j] = M2[j] = M3[j] = 0u;
        }
        const unsigned fmask = __ballot_sync(DG_FULL_MASK, fany != 0u) & 0xffu;  // frontier vertices of ss
        const int4 u = row_ids[vss * 32 + lane];
        const unsigned mk = masks[vss * 32 + lane];
#if DG_MS_SPARSE
        if (__ballot_sync(DG_FULL_MASK, lane >= 8u && mk != 0u) == 0u) {  // warp-uniform
            dg_ms_sparse_vss(u, mk, fv, fmask, rho, Vn, mark, lane);
            continue;
        }
#endif
        int nact = 0;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) nact += __popc(act[ss * DG_MS_WORDS + j]);  // warp-uniform
        if (nact > tc_ratio * __popc(fmask)) {
            // many active BFSs: OR whole elements of the frontier vertices (CUDA cores)
            for (unsigned fb = fmask; fb; fb &= fb - 1u) {
                const int b = __ffs(fb) - 1;
                const bool r0 = (mk >> b) & 1u, r1 = (mk >> (8 + b)) & 1u, r2 = (mk >> (16 + b)) & 1u,
                           r3 = (mk >> (24 + b)) & 1u;
#pragma unroll
                for (int j = 0; j < DG_MS_WORDS; ++j) {
                    const unsigned v = __shfl_sync(DG_FULL_MASK, fv[j], b);
                    if (r0) M0[j] |= v;
                    if (r1) M1[j] |= v;
                    if (r2) M2[j] |= v;
                    if (r3) M3[j] |= v;
                }
            }
        } else {
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            unsigned B = act[ss * DG_MS_WORDS + j];  // the same address in every lane: warp-uniform
            while (B) {
                const int c = __ffs(B) - 1;
                B &= B - 1u;
                const unsigned alpha = __ballot_sync(DG_FULL_MASK, (fv[j] >> c) & 1u) & 0xffu;
                int d0, d1, d2, d3;
                dg_ms_products(mk, alpha, lane, d0, d1, d2, d3);
                const unsigned bit = 1u << c;
                if (d0) M0[j] |= bit;
                if (d1) M1[j] |= bit;
                if (d2) M2[j] |= bit;
                if (d3) M3[j] |= bit;
            }
        }
        }
#if DG_MS_FLUSH4
        dg_ms_flush_rows4(u, M0, M1, M2, M3, rho, Vn, mark);
#else
        dg_ms_flush_row(u.x, M0, rho, Vn, mark);
        dg_ms_flush_row(u.y, M1, rho, Vn, mark);
        dg_ms_flush_row(u.z, M2, rho, Vn, mark);
        dg_ms_flush_row(u.w, M3, rho, Vn, mark);
#endif
    }
}

// ---- Stage 1, software-pipelined (block mode with DG_MS_PREFETCH).  dg_ms_vss is the loop body of
// dg_ms_stage1 above, kept apart so that the grid kernels measured with dg_ms_stage1 compile as
// before (one shared body changed their register counts); merge them once both are measured.
// The work on one queued VSS `vss` of slice set ss: fv = the frontier element of vertex
// lane of ss (lanes 0-7; zero in lanes 8-31), u, mk = this lane's 4 row ids and slice masks,
// aw = act[ss] (warp-uniform).
template <class Mark>
__device__ __forceinline__ void dg_ms_vss(unsigned (&fv)[DG_MS_WORDS], const int4 u, const unsigned mk,
                                          const unsigned (&aw)[DG_MS_WORDS], unsigned *Vn, const Mark &mark,
                                          dg_i64 rho, int tc_ratio, unsigned lane) {
    unsigned M0[DG_MS_WORDS], M1[DG_MS_WORDS], M2[DG_MS_WORDS], M3[DG_MS_WORDS];
    unsigned fany = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) {
        fany |= fv[j];
        M0[j] = M1[j] = M2[j] = M3[j] = 0u;
    }
    const unsigned fmask = __ballot_sync(DG_FULL_MASK, fany != 0u) & 0xffu;  // frontier vertices of ss
#if DG_MS_SPARSE
    if (__ballot_sync(DG_FULL_MASK, lane >= 8u && mk != 0u) == 0u) {  // warp-uniform
        dg_ms_sparse_vss(u, mk, fv, fmask, rho, Vn, mark, lane);
        return;
    }
#endif
    int nact = 0;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) nact += __popc(aw[j]);
    if (nact > tc_ratio * __popc(fmask)) {
        // many active BFSs: OR whole elements of the frontier vertices (CUDA cores)
        for (unsigned fb = fmask; fb; fb &= fb - 1u) {
            const int b = __ffs(fb) - 1;
            const bool r0 = (mk >> b) & 1u, r1 = (mk >> (8 + b)) & 1u, r2 = (mk >> (16 + b)) & 1u,
                       r3 = (mk >> (24 + b)) & 1u;
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) {
                const unsigned v = __shfl_sync(DG_FULL_MASK, fv[j], b);
                if (r0) M0[j] |= v;
                if (r1) M1[j] |= v;
                if (r2) M2[j] |= v;
                if (r3) M3[j] |= v;
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            unsigned B = aw[j];
            while (B) {
                const int c = __ffs(B) - 1;
                B &= B - 1u;
                const unsigned alpha = __ballot_sync(DG_FULL_MASK, (fv[j] >> c) & 1u) & 0xffu;
                int d0, d1, d2, d3;
                dg_ms_products(mk, alpha, lane, d0, d1, d2, d3);
                const unsigned bit = 1u << c;
                if (d0) M0[j] |= bit;
                if (d1) M1[j] |= bit;
                if (d2) M2[j] |= bit;
                if (d3) M3[j] |= bit;
            }
        }
    }
#if DG_MS_FLUSH4
    dg_ms_flush_rows4(u, M0, M1, M2, M3, rho, Vn, mark);
#else
    dg_ms_flush_row(u.x, M0, rho, Vn, mark);
    dg_ms_flush_row(u.y, M1, rho, Vn, mark);
    dg_ms_flush_row(u.z, M2, rho, Vn, mark);
    dg_ms_flush_row(u.w, M3, rho, Vn, mark);
#endif
}

// The inputs of dg_ms_vss for queue entry q.
__device__ __forceinline__ void dg_ms_vss_load(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks,
                                               const unsigned *F, const unsigned *act, const int2 q, dg_i64 rho,
                                               unsigned lane, unsigned (&fv)[DG_MS_WORDS], int4 &u, unsigned &mk,
                                               unsigned (&aw)[DG_MS_WORDS]) {
    const dg_i64 vss = q.x, ss = q.y;
    if (lane < 8u) {
        dg_ms_load(F + ((dg_i64)lane * rho + ss) * DG_MS_WORDS, fv);  // lanes 8-31 issue no load
    } else {
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) fv[j] = 0u;
    }
    u = row_ids[vss * 32 + lane];
    mk = masks[vss * 32 + lane];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) aw[j] = act[ss * DG_MS_WORDS + j];  // the same address in every lane
}

// Stage 1 software-pipelined: the queue entry two VSSs
// ahead and the inputs of the next VSS are loaded before the current one is worked on, so a
// warp waits for device memory about once per VSS (its Vn reads) instead of three times.
template <class Mark>
__device__ __forceinline__ void dg_ms_stage1_prefetch(const int4 *__restrict__ row_ids,
                                                      const unsigned *__restrict__ masks, const unsigned *F,
                                                      const unsigned *act, unsigned *Vn, const Mark &mark,
                                                      const int2 *qc, dg_i64 nq, dg_i64 rho, int tc_ratio,
                                                      dg_i64 warp, dg_i64 nwarps, unsigned lane) {
    dg_i64 w = warp;
    if (w >= nq) return;  // warp-uniform
    unsigned fv[DG_MS_WORDS], aw[DG_MS_WORDS];
    int4 u;
    unsigned mk;
    dg_ms_vss_load(row_ids, masks, F, act, qc[w], rho, lane, fv, u, mk, aw);
    int2 qn = w + nwarps < nq ? qc[w + nwarps] : make_int2(0, 0);
    for (; w < nq; w += nwarps) {
        const bool more = w + nwarps < nq;  // warp-uniform
        const int2 qnn = w + 2 * nwarps < nq ? qc[w + 2 * nwarps] : make_int2(0, 0);
        unsigned fv2[DG_MS_WORDS], aw2[DG_MS_WORDS];
        int4 u2 = make_int4(0, 0, 0, 0);
        unsigned mk2 = 0u;
        if (more) dg_ms_vss_load(row_ids, masks, F, act, qn, rho, lane, fv2, u2, mk2, aw2);
        dg_ms_vss(fv, u, mk, aw, Vn, mark, rho, tc_ratio, lane);
        if (more) {
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) {
                fv[j] = fv2[j];
                aw[j] = aw2[j];
            }
            u = u2;
            mk = mk2;
        }
        qn = qnn;
    }
}

// ---- Bottom-up on CUDA cores: every vertex u of [v_lo, v_hi) with target = G & ~Vc[u] != 0
// pulls the frontier elements of its in-neighbours until the target is covered.  Vertices
// with at most bu_heavy in-arcs get a thread; the heavy ones (list `heavy`) a warp each.
// Vn == Vc when it starts, so Vn is written plainly.
__device__ __forceinline__ bool dg_ms_covers(const unsigned (&acc)[DG_MS_WORDS], const unsigned (&tgt)[DG_MS_WORDS]) {
    bool c = true;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) c &= ((acc[j] & tgt[j]) == tgt[j]);
    return c;
}

__device__ __forceinline__ void dg_ms_bottom_up(const dg_i64 *__restrict__ t_indptr,
                                                const int *__restrict__ t_indices, const unsigned *F,
                                                const unsigned *Vc, unsigned *Vn, unsigned char *dirty,
                                                const unsigned *G, const int *__restrict__ heavy, dg_i64 nheavy,
                                                dg_i64 bu_heavy, dg_i64 v_lo, dg_i64 v_hi, dg_i64 rho, dg_i64 tid,
                                                dg_i64 nthreads) {
    const unsigned lane = threadIdx.x & 31u;
    const dg_i64 warp = tid >> 5, nwarps = nthreads >> 5;
    unsigned g[DG_MS_WORDS];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) g[j] = G[j];
    // heavy vertices: a warp each, 32 in-neighbours per step
    for (dg_i64 i = warp; i < nheavy; i += nwarps) {
        const dg_i64 u = heavy[i];
        if (u < v_lo || u >= v_hi) continue;  // warp-uniform
        const dg_i64 base = dg_vi(u, rho) * DG_MS_WORDS;
        unsigned cur[DG_MS_WORDS], tgt[DG_MS_WORDS], acc[DG_MS_WORDS], all[DG_MS_WORDS];
        dg_ms_load(Vc + base, cur);
        unsigned any = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            tgt[j] = g[j] & ~cur[j];
            any |= tgt[j];
            acc[j] = all[j] = 0u;
        }
        if (!any) continue;
        const dg_i64 e = t_indptr[u + 1];
        for (dg_i64 p0 = t_indptr[u]; p0 < e; p0 += 32) {
            const dg_i64 p = p0 + lane;
            if (p < e) {
                unsigned f[DG_MS_WORDS];
                dg_ms_load(F + dg_vi(t_indices[p], rho) * DG_MS_WORDS, f);
#pragma unroll
                for (int j = 0; j < DG_MS_WORDS; ++j) acc[j] |= f[j];
            }
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) all[j] = __reduce_or_sync(DG_FULL_MASK, acc[j]);
            if (dg_ms_covers(all, tgt)) break;  // warp-uniform
        }
        any = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) any |= all[j] & tgt[j];
        if (any && lane == 0) {
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) Vn[base + j] = cur[j] | all[j];
            dirty[u >> 3] = 1;
        }
    }
    // the others: a thread each
    for (dg_i64 u = v_lo + tid; u < v_hi; u += nthreads) {
        const dg_i64 s = t_indptr[u], e = t_indptr[u + 1];
        if (e - s > bu_heavy || e == s) continue;
        const dg_i64 base = dg_vi(u, rho) * DG_MS_WORDS;
        unsigned cur[DG_MS_WORDS], tgt[DG_MS_WORDS], acc[DG_MS_WORDS];
        dg_ms_load(Vc + base, cur);
        unsigned any = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            tgt[j] = g[j] & ~cur[j];
            any |= tgt[j];
            acc[j] = 0u;
        }
        if (!any) continue;
        for (dg_i64 p = s; p < e; ++p) {
            unsigned f[DG_MS_WORDS];
            dg_ms_load(F + dg_vi(t_indices[p], rho) * DG_MS_WORDS, f);
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) acc[j] |= f[j];
            if (dg_ms_covers(acc, tgt)) break;
        }
        any = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) any |= acc[j] & tgt[j];
        if (any) {
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) Vn[base + j] = cur[j] | acc[j];
            dirty[u >> 3] = 1;
        }
    }
}

// ---- Stage 2: frontier finalization over slice sets [ss_lo, ss_hi) (Alg. 5 lines 38-57).
// Warp-collective (the enqueue uses a warp scan): every lane of a warp must call it.
// scnt: the block's shared per-source counters (per-source mode), zeroed by the caller.
__device__ __forceinline__ void dg_ms_stage2(
    const int *__restrict__ real_ptrs, const dg_i64 *__restrict__ t_indptr, const dg_i64 *__restrict__ h_indptr,
    unsigned *F, unsigned *Vc, const unsigned *Vn, unsigned *act, unsigned char *wasact, unsigned char *dirty,
    int2 *qn, dg_i64 *qn_size, dg_i64 *ctr, int n, dg_i64 rho, dg_i64 ss_lo, dg_i64 ss_hi, int level, int nsrc,
    int per_source, int enqueue, int use_bu, dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2,
    unsigned *scnt, unsigned *G, int atomic_sums, dg_i64 warp, dg_i64 nwarps, unsigned lane) {
    const dg_u64 rf = level >= 2 ? dg_recip_fixed((dg_u64)level) : 0ull;
    const dg_u64 rhi = rf >> 32, rlo = rf & 0xffffffffull;
    dg_u64 mf = 0ull;   // out-arcs of new frontier vertices (bottom-up test)
    dg_i64 fin = 0;     // in-arcs of vertices that every BFS has now reached
    unsigned gor[DG_MS_WORDS];  // OR of this lane's new act words (frontier union G)
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) gor[j] = 0u;
    for (dg_i64 b0 = ss_lo + warp * 32; b0 < ss_hi; b0 += nwarps * 32) {
        const dg_i64 ss = b0 + lane;
        unsigned A[DG_MS_WORDS];
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) A[j] = 0u;
        bool active = false;
        if (ss < ss_hi) {
            if (dirty[ss]) {
                dirty[ss] = 0;
                for (int b = 0; b < 8; ++b) {
                    const dg_i64 u = ss * 8 + b;
                    if (u >= n) break;
                    const dg_i64 base = ((dg_i64)b * rho + ss) * DG_MS_WORDS;
                    unsigned p = 0u;
                    bool done = true;
                    unsigned nx[DG_MS_WORDS], diff[DG_MS_WORDS];
                    dg_ms_load(Vn + base, nx);
                    dg_ms_load(Vc + base, diff);
#pragma unroll
                    for (int j = 0; j < DG_MS_WORDS; ++j) {
                        diff[j] ^= nx[j];
                        if (diff[j]) {
                            A[j] |= diff[j];
                            p += __popc(diff[j]);
                            if (per_source)
                                for (unsigned d = diff[j]; d; d &= d - 1u) atomicAdd(&scnt[32 * j + __ffs(d) - 1], 1u);
                        }
                        done &= (nx[j] == dg_full_word(j, nsrc));
                    }
                    dg_ms_store(F + base, diff);
                    if (p) dg_ms_store(Vc + base, nx);
                    if (p) {
                        if (!per_source && atomic_sums) {  // several groups share the sums
                            atomicAdd(&far[u], (dg_u64)level * p);
                            atomicAdd(&reach[u], (dg_u64)p);
                            if (level == 1) atomicAdd(&h0[u], (dg_u64)p);
                            else if (level >= 2) { atomicAdd(&h1[u], p * rhi); atomicAdd(&h2[u], p * rlo); }
                        } else if (!per_source) {
                            far[u] += (dg_u64)level * p;
                            reach[u] += p;
                            if (level == 1) h0[u] += p;
                            else if (level >= 2) { h1[u] += p * rhi; h2[u] += p * rlo; }
                        }
                        if (use_bu) {
                            mf += (dg_u64)(h_indptr[u + 1] - h_indptr[u]);
                            if (done) fin += t_indptr[u + 1] - t_indptr[u];
                        }
                    }
                }
#pragma unroll
                for (int j = 0; j < DG_MS_WORDS; ++j) {
                    act[ss * DG_MS_WORDS + j] = A[j];
                    active |= (A[j] != 0u);
                    gor[j] |= A[j];
                }
                wasact[ss] = active ? 1 : 0;
            } else if (wasact[ss]) {
                // active at the previous level, nothing new now: clear its frontier words
                wasact[ss] = 0;
#pragma unroll
                for (int j = 0; j < DG_MS_WORDS; ++j) act[ss * DG_MS_WORDS + j] = 0u;
                for (int b = 0; b < 8; ++b) {
                    unsigned z[DG_MS_WORDS];
#pragma unroll
                    for (int j = 0; j < DG_MS_WORDS; ++j) z[j] = 0u;
                    dg_ms_store(F + ((dg_i64)b * rho + ss) * DG_MS_WORDS, z);
                }
            }
        }
        if (enqueue) {
            // append the VSSs of every slice set that became active (one atomic per warp)
            const unsigned cnt = active ? (unsigned)(real_ptrs[ss + 1] - real_ptrs[ss]) : 0u;
            const unsigned incl = dg_warp_inclusive_scan(cnt);
            const unsigned total = __shfl_sync(DG_FULL_MASK, incl, 31);
            dg_i64 pos0 = 0;
            if (lane == 31 && total) pos0 = (dg_i64)atomicAdd((dg_u64 *)qn_size, (dg_u64)total);
            pos0 = __shfl_sync(DG_FULL_MASK, pos0, 31);
            if (cnt) {
                dg_i64 p = pos0 + (dg_i64)(incl - cnt);
                const int e = real_ptrs[ss + 1];
                for (int v = real_ptrs[ss]; v < e; ++v) qn[p++] = make_int2(v, (int)ss);
            }
        }
    }
    if (use_bu) {
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            const unsigned o = __reduce_or_sync(DG_FULL_MASK, gor[j]);
            if (lane == 0 && o) atomicOr(&G[j], o);
        }
        mf = dg_warp_sum(mf);
        const dg_u64 f = dg_warp_sum((dg_u64)fin);
        if (lane == 0) {
            if (mf) atomicAdd((dg_u64 *)&ctr[8 + (level & 3)], mf);
            if (f) atomicAdd((dg_u64 *)&ctr[4], (dg_u64)(-(dg_i64)f));
        }
    }
}

// Per-source mode: add the counts of level `level` to the per-source sums, reset them.
__device__ __forceinline__ void dg_ms_flush_sources(unsigned *cnt, int level, int nsrc, dg_u64 *far, dg_u64 *reach,
                                                    dg_u64 *h0, dg_u64 *h1, dg_u64 *h2, dg_i64 tid) {
    if (tid >= nsrc) return;
    const dg_u64 q = cnt[tid];
    if (!q) return;
    cnt[tid] = 0u;
    far[tid] += (dg_u64)level * q;
    reach[tid] += q;
    if (level == 1) {
        h0[tid] += q;
    } else if (level >= 2) {
        const dg_u64 rf = dg_recip_fixed((dg_u64)level);
        h1[tid] += q * (rf >> 32);
        h2[tid] += q * (rf & 0xffffffffull);
    }
}

__device__ __forceinline__ void dg_ms_block_counts_begin(unsigned *scnt, int per_source) {
    if (per_source)
        for (int i = threadIdx.x; i < DG_MS_KAPPA; i += blockDim.x) scnt[i] = 0u;
    __syncthreads();
}

__device__ __forceinline__ void dg_ms_block_counts_end(unsigned *scnt, unsigned *cnt, int per_source) {
    __syncthreads();
    if (per_source)
        for (int i = threadIdx.x; i < DG_MS_KAPPA; i += blockDim.x)
            if (scnt[i]) atomicAdd(&cnt[i], scnt[i]);
}

__device__ __forceinline__ void dg_ms_seed(const int *__restrict__ srcs, int nsrc, dg_i64 rho, unsigned *Vn,
                                           unsigned char *dirty, dg_i64 tid) {
    if (tid < nsrc) {
        const int s = srcs[tid];
        atomicOr(&Vn[dg_vi(s, rho) * DG_MS_WORDS + (tid >> 5)], 1u << (tid & 31));
        dirty[s >> 3] = 1;
    }
}

// ================================================================= replicated mode
// The barrier of one group of blocks (the grid's barrier when there is one group): the
// pattern of cooperative_groups' grid sync on a counter and a generation word of its own.
// Every block of the group must be resident (cooperative launch).
__device__ __forceinline__ void dg_ms_group_sync(cg::grid_group &grid, int ngroups, unsigned *bar,
                                                 unsigned nblocks) {
    if (ngroups == 1) {
        grid.sync();
        return;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned *gen = bar + 1;
        const unsigned g0 = *gen;  // read before arriving: the last arrival changes it
        __threadfence();
        if (atomicAdd(bar, 1u) == nblocks - 1u) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g0) asm volatile("nanosleep.u32 32;");
        }
        __threadfence();
    }
    __syncthreads();
}

// One launch runs `ngroups` independent kappa-source MS-BFSs: the grid's blocks are cut into
// ngroups equal groups, group g runs sources srcs[g*kappa .. g*kappa + nsrcs[g]) on its own
// copy of every state array (F, Vc, Vn: 8*rho*W words each; act: rho1*W; wasact, dirty:
// rho1 bytes; Q: 2*qcap int2; ctr: 32; cnt: kappa; G: 2*W; bar: 2) with a barrier of its own,
// so graphs whose levels cannot fill the GPU run several launches' worth at once.  Per-vertex
// sums are shared (atomic adds when ngroups > 1); per-source sums of group g start at
// far + g*kappa.  State arrays zeroed by the host; ctr[4] of every group = in-arcs of all
// vertices (mu) when use_bu.
extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK, DG_MS_MINB)
distgraph_msbfs_persistent(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks,
                           const int *__restrict__ real_ptrs, const dg_i64 *__restrict__ t_indptr,
                           const int *__restrict__ t_indices, const dg_i64 *__restrict__ h_indptr, int n,
                           const int *__restrict__ srcs, const int *__restrict__ nsrcs, int per_source, int use_bu,
                           int bu_ratio, unsigned *F, unsigned *Vc, unsigned *Vn, unsigned *act,
                           unsigned char *wasact, unsigned char *dirty, int2 *Q, dg_i64 qcap, dg_i64 *ctr,
                           unsigned *cnt, dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2,
                           unsigned *G, const int *__restrict__ heavy, dg_i64 nheavy, dg_i64 bu_heavy, int tc_ratio,
                           dg_i64 *stats, int ngroups, unsigned *bar) {
    __shared__ unsigned scnt[DG_MS_KAPPA];
    cg::grid_group grid = cg::this_grid();
    const dg_i64 rho = ((dg_i64)n + 7) >> 3;
    // ---- this block's group and the group's copies of the state
    const unsigned bpg = gridDim.x / (unsigned)ngroups;
    const int grp = (int)(blockIdx.x / bpg);
    if (grp >= ngroups) return;  // never: the host makes gridDim.x a multiple of ngroups
    {
        const dg_i64 nhw = 8 * rho * DG_MS_WORDS, rho1 = rho > 0 ? rho : 1;
        F += grp * nhw;
        Vc += grp * nhw;
        Vn += grp * nhw;
        act += grp * rho1 * DG_MS_WORDS;
        wasact += grp * rho1;
        dirty += grp * rho1;
        Q += grp * 2 * qcap;
        ctr += grp * 32;
        cnt += grp * DG_MS_KAPPA;
        G += grp * 2 * DG_MS_WORDS;
        srcs += grp * DG_MS_KAPPA;
        bar += grp * 2;
        if (per_source) {
            far += grp * DG_MS_KAPPA;
            reach += grp * DG_MS_KAPPA;
            h0 += grp * DG_MS_KAPPA;
            h1 += grp * DG_MS_KAPPA;
            h2 += grp * DG_MS_KAPPA;
        }
    }
    const int nsrc = nsrcs[grp];
    const int atomic_sums = ngroups > 1 && !per_source;
    const dg_i64 nthreads = (dg_i64)bpg * blockDim.x;
    const dg_i64 tid = (dg_i64)(blockIdx.x - grp * bpg) * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;
    const dg_i64 warp = tid >> 5, nwarps = nthreads >> 5;
    volatile dg_i64 *vctr = ctr;

    dg_ms_seed(srcs, nsrc, rho, Vn, dirty, tid);
    dg_ms_group_sync(grid, ngroups, bar, bpg);
    dg_ms_block_counts_begin(scnt, per_source);
    dg_ms_stage2(real_ptrs, t_indptr, h_indptr, F, Vc, Vn, act, wasact, dirty, Q + qcap, ctr + 1, ctr, n, rho, 0,
                 rho, 0, nsrc, per_source, 1, use_bu, far, reach, h0, h1, h2, scnt, G, atomic_sums, warp, nwarps,
                 lane);
    dg_ms_block_counts_end(scnt, cnt, per_source);
    dg_ms_group_sync(grid, ngroups, bar, bpg);
    int l = 1;
    for (;; ++l) {
        if (per_source && tid < DG_MS_BLOCK) dg_ms_flush_sources(cnt, l - 1, nsrc, far, reach, h0, h1, h2, tid);
        const dg_i64 nq = vctr[l & 3];
        if (nq == 0) break;
        if (tid == 0) { ctr[(l + 1) & 3] = 0; ctr[8 + ((l + 1) & 3)] = 0; }
        // G[l&1] is written by this level's stage 2; its last reader was level l-1's bottom-up
        if (tid < DG_MS_WORDS) G[(l & 1) * DG_MS_WORDS + tid] = 0u;
        const bool bottom_up = use_bu && (vctr[8 + ((l - 1) & 3)] * (dg_i64)bu_ratio > vctr[4]);
        if (bottom_up) {
            if (tid == 0) ctr[13] += 1;
            dg_ms_bottom_up(t_indptr, t_indices, F, Vc, Vn, dirty, G + ((l - 1) & 1) * DG_MS_WORDS, heavy, nheavy,
                            bu_heavy, 0, n, rho, tid, nthreads);
        } else {
            dg_ms_stage1(row_ids, masks, F, act, Vn, dg_ms_mark_byte{dirty}, Q + (l & 1) * qcap, nq, rho, tc_ratio,
                         warp, nwarps, lane);
        }
        dg_ms_group_sync(grid, ngroups, bar, bpg);
        dg_ms_block_counts_begin(scnt, per_source);
        dg_ms_stage2(real_ptrs, t_indptr, h_indptr, F, Vc, Vn, act, wasact, dirty, Q + ((l + 1) & 1) * qcap,
                     ctr + ((l + 1) & 3), ctr, n, rho, 0, rho, l, nsrc, per_source, 1, use_bu, far, reach, h0, h1,
                     h2, scnt, G + (l & 1) * DG_MS_WORDS, atomic_sums, warp, nwarps, lane);
        dg_ms_block_counts_end(scnt, cnt, per_source);
        dg_ms_group_sync(grid, ngroups, bar, bpg);
    }
    if (tid == 0) {
        ctr[12] = l - 1;
        atomicAdd((dg_u64 *)&stats[0], (dg_u64)(l - 1));
        atomicAdd((dg_u64 *)&stats[1], (dg_u64)ctr[13]);
    }
}

// ================================================================= block mode
// Profiling build (DG_MS_PROFILE = N levels defined; the default build has none of it):
// every batch bt < DG_MS_PROFILE_BATCHES stores its start and end (%globaltimer), its levels
// and its block; the first batch of block 0 also stores, for each level l <= N, when stage 2
// of level l starts (t2) with the active and dirty slice sets it visits, and when stage 1
// of level l starts (t1, l >= 1) with its queue length (VSSs). Read with
// RawModule.get_global (benchmarks/gpu_closeness.py --block-profile).
#ifdef DG_MS_PROFILE
#ifndef DG_MS_PROFILE_BATCHES
#define DG_MS_PROFILE_BATCHES 65536
#endif
__device__ unsigned long long dg_ms_prof_t2[DG_MS_PROFILE + 1], dg_ms_prof_t1[DG_MS_PROFILE + 1];
__device__ long long dg_ms_prof_na[DG_MS_PROFILE + 1], dg_ms_prof_nd[DG_MS_PROFILE + 1],
    dg_ms_prof_nq[DG_MS_PROFILE + 1];
__device__ unsigned long long dg_ms_prof_batch_ns[2 * DG_MS_PROFILE_BATCHES];
__device__ int dg_ms_prof_batch_levels[DG_MS_PROFILE_BATCHES], dg_ms_prof_batch_block[DG_MS_PROFILE_BATCHES];
__device__ int dg_ms_prof_first_batch;
__device__ __forceinline__ unsigned long long dg_ms_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define DG_MS_PROF(stmt) do { stmt; } while (0)
#else
#define DG_MS_PROF(stmt) do { } while (0)
#endif
// One block per kappa-source batch, for graphs whose levels cannot fill the GPU (small or
// high-diameter graphs: a grid barrier per stage then costs more than the stage).  Block
// `slot` = blockIdx.x owns one copy of the state and takes batches from the counter `next`
// until all `nbatches` are done; its levels are separated by __syncthreads only, so the
// 132 SMs run their own batches side by side.  Stage 1 lists the slice sets it marks dirty
// (a bit per set in `dbits`, the list `dlist`, its length in shared memory), and stage 2
// visits only those and the sets active at the previous level (list `alist`, to clear the
// ones no longer active): a level costs what its frontier costs, not rho.  No bottom-up
// levels.  blockDim.x = DG_MS_BLOCK (256, 512 or 1024, GpuMSBFS(block_threads=...)): nothing
// here depends on the number of warps (stage 1 deals the queue to warp, warp + nwarps, ...;
// stage 2 and the clean-up loop over blockDim.x), and the per-source flush needs blockDim.x
// >= kappa.  DG_MS_MINB is then the blocks per SM whose register cap the kernel is built
// for.  After a batch's last level F, act and dbits are zero again and the block zeroes Vc
// and Vn, so the slot is clean for its next batch (the host zeroes the state once).
//
// Per-slot state (rho1 = max(rho, 1)): F, Vc, Vn: 8*rho*W words each; act: rho1*W words;
// dbits: dbw words (or, shared_dbits = 1, dbw words of dynamic shared memory); lists: 3*rho1 ints (dlist, then alist[0], alist[1]: the sets active
// after even / odd levels); Q: 2*qcap int2.  srcs: batch b's sources at b*kappa, nsrcs[b]
// of them.  Sums, added to:
//   per_source = 0: per vertex, far[u] etc. (atomic adds: all blocks share them);
//   per_source = 1: per source, BFS c of batch b at index b*kappa + c (plain adds: a batch
//                   belongs to one block);
//   per_source = 2: per source, added at the source's vertex srcs[b*kappa + c] (atomic adds).
//                   On a symmetric graph, once every vertex with arcs has been a source this
//                   is the per-vertex sum of mode 0 (d(s, v) = d(v, s)), at a shared-memory
//                   atomic per reached pair instead of four global 64-bit atomics per
//                   (vertex, level) -- the sums of BLEST Eq. 7.
// stats[0] += levels run (over all batches).

// Clear slice set ss of the frontier (no longer active).
__device__ __forceinline__ void dg_ms_clear_set(dg_i64 ss, dg_i64 rho, unsigned *F, unsigned *act) {
    unsigned z[DG_MS_WORDS];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) z[j] = 0u;
    dg_ms_store(act + ss * DG_MS_WORDS, z);
    for (int b = 0; b < 8; ++b) dg_ms_store(F + ((dg_i64)b * rho + ss) * DG_MS_WORDS, z);
}

// Stage 2 of one dirty slice set ss at level `level` (block mode): the new frontier
// diff = Vc ^ Vn of its vertices, Vc = Vn, the sums, act[ss]; an active set is listed in
// `anew` and its VSSs appended to the next queue (counters in shared memory).
__device__ __forceinline__ void dg_ms_finalize_set(const int *__restrict__ real_ptrs, dg_i64 ss, int n, dg_i64 rho,
                                                   int level, dg_u64 rhi, dg_u64 rlo, int per_source, unsigned *F,
                                                   unsigned *Vc, const unsigned *Vn, unsigned *act, int *anew,
                                                   unsigned *an_size, int2 *qn, unsigned *qn_size, unsigned *scnt,
                                                   dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2) {
    unsigned A[DG_MS_WORDS];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) A[j] = 0u;
    for (int b = 0; b < 8; ++b) {
        const dg_i64 u = ss * 8 + b;
        if (u >= n) break;
        const dg_i64 base = ((dg_i64)b * rho + ss) * DG_MS_WORDS;
        unsigned nx[DG_MS_WORDS], diff[DG_MS_WORDS];
        dg_ms_load(Vn + base, nx);
        dg_ms_load(Vc + base, diff);
        unsigned p = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            diff[j] ^= nx[j];
            if (diff[j]) {
                A[j] |= diff[j];
                p += __popc(diff[j]);
                if (per_source)
                    for (unsigned d = diff[j]; d; d &= d - 1u) atomicAdd(&scnt[32 * j + __ffs(d) - 1], 1u);
            }
        }
        dg_ms_store(F + base, diff);
        if (p) {
            dg_ms_store(Vc + base, nx);
            if (!per_source) {
                atomicAdd(&far[u], (dg_u64)level * p);
                atomicAdd(&reach[u], (dg_u64)p);
                if (level == 1) atomicAdd(&h0[u], (dg_u64)p);
                else if (level >= 2) { atomicAdd(&h1[u], p * rhi); atomicAdd(&h2[u], p * rlo); }
            }
        }
    }
    unsigned any = 0u;
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) any |= A[j];
    dg_ms_store(act + ss * DG_MS_WORDS, A);
    if (!any) return;
    anew[atomicAdd(an_size, 1u)] = (int)ss;
    const int e = real_ptrs[ss + 1];
    const unsigned cnt = (unsigned)(e - real_ptrs[ss]);
    if (!cnt) return;
    dg_i64 p = atomicAdd(qn_size, cnt);
    for (int v = real_ptrs[ss]; v < e; ++v) qn[p++] = make_int2(v, (int)ss);
}

// q vertices at level L >= 0 added to the sums at vertex `at` with atomics (rf = round(2^64 / L)
// for L >= 2): farness, reach, and the harmonic sum's limbs (h0: the 1/1 terms).
__device__ __forceinline__ void dg_ms_atomic_level(dg_i64 at, int L, dg_u64 q, dg_u64 rf, dg_u64 *far,
                                                   dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2) {
    if (L) atomicAdd(&far[at], (dg_u64)L * q);
    atomicAdd(&reach[at], q);
    if (L == 1) atomicAdd(&h0[at], q);
    else if (L >= 2) { atomicAdd(&h1[at], q * (rf >> 32)); atomicAdd(&h2[at], q * (rf & 0xffffffffull)); }
}

// Block schedule, per-source modes (per_source 1 or 2): thread c < nsrc adds BFS c's count of
// level l (scnt[c], then zeroed) to its sums, rf = round(2^64 / l) for l >= 2: per_source 1 at
// the batch position bt * kappa + c (plain adds: the batch belongs to the block), 2 at its
// source vertex bs[c] (atomic adds: every block adds there).  Folded leaves (per_source 2, leaf
// not null): when leaf[bs[c]] = f >= 0, f is a vertex whose only neighbour is bs[c] (H
// symmetric), which is at distance l + 1 from what bs[c] reaches at level l: the count is
// added at f as level l + 1 too (the host takes f's own term, 2, and its 1/2, off afterwards:
// distgraph/algorithms/closeness.py, _unfold_leaves).
__device__ __forceinline__ void dg_ms_block_flush_counts(unsigned *scnt, int per_source, int nsrc, int bt,
                                                         const int *bs, int l, dg_u64 rf, dg_u64 *far,
                                                         dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2,
                                                         const int *__restrict__ leaf) {
    if ((int)threadIdx.x >= nsrc) return;
    const int c = threadIdx.x;
    const dg_u64 q = scnt[c];
    if (!q) return;
    scnt[c] = 0u;
    const dg_i64 at = per_source == 1 ? (dg_i64)bt * DG_MS_KAPPA + c : (dg_i64)bs[c];
    if (per_source == 1) {
        far[at] += (dg_u64)l * q;
        reach[at] += q;
        if (l == 1) h0[at] += q;
        else if (l >= 2) { h1[at] += q * (rf >> 32); h2[at] += q * (rf & 0xffffffffull); }
    } else {
        dg_ms_atomic_level(at, l, q, rf, far, reach, h0, h1, h2);
        if (leaf) {
            const int f = leaf[at];
            if (f >= 0)
                dg_ms_atomic_level(f, l + 1, q, l >= 1 ? dg_recip_fixed((dg_u64)l + 1) : 0ull, far, reach, h0, h1, h2);
        }
    }
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK, DG_MS_MINB)
distgraph_msbfs_blocks(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks,
                       const int *__restrict__ real_ptrs, int n, const int *__restrict__ srcs,
                       const int *__restrict__ nsrcs, int nbatches, int per_source, int tc_ratio, unsigned *F,
                       unsigned *Vc, unsigned *Vn, unsigned *act, unsigned *dbits, dg_i64 dbw, int shared_dbits,
                       int *lists, int2 *Q, dg_i64 qcap, dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1,
                       dg_u64 *h2, const int *__restrict__ leaf, unsigned *next, dg_i64 *stats) {
    extern __shared__ unsigned s_dyn[];  // the dirty bits when shared_dbits (dbw words)
    __shared__ unsigned scnt[DG_MS_KAPPA];
    __shared__ unsigned s_dn, s_qn[2], s_an[2];
    __shared__ int s_batch;
    const dg_i64 rho = ((dg_i64)n + 7) >> 3, rho1 = rho > 0 ? rho : 1;
    const dg_i64 nhw = 8 * rho * DG_MS_WORDS;
    {
        const dg_i64 slot = blockIdx.x;
        F += slot * nhw;
        Vc += slot * nhw;
        Vn += slot * nhw;
        act += slot * rho1 * DG_MS_WORDS;
        if (shared_dbits) {  // stage 1 marks without a round trip to global memory
            dbits = s_dyn;
            for (dg_i64 i = threadIdx.x; i < dbw; i += blockDim.x) dbits[i] = 0u;
        } else {
            dbits += slot * dbw;
        }
        lists += slot * 3 * rho1;
        Q += slot * 2 * qcap;
    }
    int *dlist = lists, *alist = lists + rho1;
    const unsigned lane = threadIdx.x & 31u;
    const dg_i64 warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const dg_ms_mark_list mark{dbits, dlist, &s_dn};
    for (int i = threadIdx.x; i < DG_MS_KAPPA; i += blockDim.x) scnt[i] = 0u;
    dg_i64 levels_run = 0;
#ifdef DG_MS_PROFILE
    bool prof_done = false;  // block 0's first batch is profiled level by level
#endif
    for (;;) {
        if (threadIdx.x == 0) {
            s_batch = (int)atomicAdd(next, 1u);
            s_dn = 0u;
            s_qn[0] = s_qn[1] = 0u;
            s_an[0] = s_an[1] = 0u;
        }
        __syncthreads();
        const int bt = s_batch;
        if (bt >= nbatches) break;  // block-uniform
#ifdef DG_MS_PROFILE
        const bool prof_levels = blockIdx.x == 0 && !prof_done;
        if (threadIdx.x == 0 && bt < DG_MS_PROFILE_BATCHES) {
            dg_ms_prof_batch_ns[2 * bt] = dg_ms_now();
            dg_ms_prof_batch_block[bt] = blockIdx.x;
        }
        if (threadIdx.x == 0 && prof_levels) dg_ms_prof_first_batch = bt;
#endif
        const int nsrc = nsrcs[bt];
        const int *bs = srcs + (dg_i64)bt * DG_MS_KAPPA;
        // level 0: the sources (stage 1's part)
        for (int c = threadIdx.x; c < nsrc; c += blockDim.x) {
            const int s = bs[c];
            atomicOr(&Vn[dg_vi(s, rho) * DG_MS_WORDS + (c >> 5)], 1u << (c & 31));
            mark((dg_i64)(s >> 3));
        }
        __syncthreads();
        int l = 0;
        for (;;) {
            // ---- stage 2 of level l over the sets active at level l-1 (cleared unless dirty)
            // and the dirty ones
            const dg_u64 rf = l >= 2 ? dg_recip_fixed((dg_u64)l) : 0ull;
            const dg_i64 na = s_an[(l + 1) & 1], nd = s_dn;
            DG_MS_PROF(if (prof_levels && threadIdx.x == 0 && l <= DG_MS_PROFILE) {
                dg_ms_prof_t2[l] = dg_ms_now();
                dg_ms_prof_na[l] = na;
                dg_ms_prof_nd[l] = nd;
            });
            const int *aold = alist + ((l + 1) & 1) * rho1;
            for (dg_i64 i = threadIdx.x; i < na + nd; i += blockDim.x) {
                if (i < na) {
                    const dg_i64 ss = aold[i];
                    if (!(dbits[ss >> 5] & (1u << (ss & 31)))) dg_ms_clear_set(ss, rho, F, act);
                } else {
                    dg_ms_finalize_set(real_ptrs, dlist[i - na], n, rho, l, rf >> 32, rf & 0xffffffffull,
                                       per_source, F, Vc, Vn, act, alist + (l & 1) * rho1, &s_an[l & 1],
                                       Q + ((l + 1) & 1) * qcap, &s_qn[(l + 1) & 1], scnt, far, reach, h0, h1, h2);
                }
            }
            __syncthreads();
            // ---- end of level l: dirty bits back to zero, per-source counts of level l
            for (dg_i64 i = threadIdx.x; i < nd; i += blockDim.x) dbits[dlist[i] >> 5] = 0u;
            if (per_source)
                dg_ms_block_flush_counts(scnt, per_source, nsrc, bt, bs, l, rf, far, reach, h0, h1, h2, leaf);
            if (threadIdx.x == 0) s_dn = 0u;
            __syncthreads();
            ++l;
            const dg_i64 nq = s_qn[l & 1];
            if (nq == 0) break;  // block-uniform
            if (threadIdx.x == 0) {
                s_qn[(l + 1) & 1] = 0u;
                s_an[l & 1] = 0u;
            }
            // ---- stage 1 of level l
            DG_MS_PROF(if (prof_levels && threadIdx.x == 0 && l <= DG_MS_PROFILE) {
                dg_ms_prof_t1[l] = dg_ms_now();
                dg_ms_prof_nq[l] = nq;
            });
#if DG_MS_PREFETCH
            dg_ms_stage1_prefetch(row_ids, masks, F, act, Vn, mark, Q + (l & 1) * qcap, nq, rho, tc_ratio, warp,
                                  nwarps, lane);
#else
            dg_ms_stage1(row_ids, masks, F, act, Vn, mark, Q + (l & 1) * qcap, nq, rho, tc_ratio, warp, nwarps,
                         lane);
#endif
            __syncthreads();
        }
        // ---- clean the slot for the next batch: sets still active (no VSS to push), Vc, Vn
        const dg_i64 na = s_an[(l + 1) & 1];
        const int *alast = alist + ((l + 1) & 1) * rho1;
        for (dg_i64 i = threadIdx.x; i < na; i += blockDim.x) dg_ms_clear_set(alast[i], rho, F, act);
        const uint4 z4 = make_uint4(0u, 0u, 0u, 0u);
        for (dg_i64 i = threadIdx.x; i < nhw / 4; i += blockDim.x) {
            reinterpret_cast<uint4 *>(Vc)[i] = z4;
            reinterpret_cast<uint4 *>(Vn)[i] = z4;
        }
        DG_MS_PROF(if (threadIdx.x == 0 && bt < DG_MS_PROFILE_BATCHES) {
            dg_ms_prof_batch_ns[2 * bt + 1] = dg_ms_now();
            dg_ms_prof_batch_levels[bt] = l;
        }; prof_done = true);
        levels_run += l - 1;
        __syncthreads();
    }
    if (threadIdx.x == 0 && levels_run) atomicAdd((dg_u64 *)&stats[0], (dg_u64)levels_run);
}

// ================================================================= block mode, pull (road-like graphs)
// distgraph_msbfs_pull_blocks: the block schedule (one block per kappa-source batch, as
// distgraph_msbfs_blocks) with a pull level instead of stage 1 + stage 2, for graphs whose
// VSSs are nearly all sparse (road networks: no tensor-core product pays there, see
// dg_ms_sparse_vss).  Level l + 1 is one pass over the candidate slice sets -- the sets
// that hold an out-neighbour of a vertex of a set active at level l (set graph sg_ptr /
// sg_idx, built by the host from the arcs v -> u as v/8 -> u/8) -- with a thread per
// candidate vertex u:
//     new = (OR of F_l[v] over the in-neighbours v of u) & ~Vc[u];  Vc[u] |= new;
//     F_{l+1}[u] = new;  the sums of level l + 1 for the popc(new) BFSs that reach u.
// Each u is written by its one thread: no atomics on the state, no Vn (the push of stage
// 1 ORs candidate rows into Vn with an atomic per non-zero word, then stage 2 reads Vn and
// Vc of every dirty set back: two passes, 3 state arrays and the atomics per level),
// two block barriers per level instead of four.  A vertex already reached by every BFS of
// the batch reads no in-neighbour.  F is double-buffered (F0 = the slot's F, F1 = its Vn);
// the frontier of level l is cleared, set by set, while the candidates of level l + 2 are
// marked.  Candidate bits: two bit arrays (level parity) of cbw words each, in dynamic
// shared memory when shared_cb (else cb, per slot).  lists (per slot, 3 * rho1 ints): the
// sets active at even / odd levels, then the candidates.  Sums and per_source as in
// distgraph_msbfs_blocks (bit-identical).  ell[u]: u's first four in-neighbours (-1: none), so
// that their frontier elements are loaded without waiting for an index load; a vertex with more
// reads the rest from t_indptr / t_indices (Nsight Compute on road-NY: the kernel is latency-bound,
// 77% of its stalls wait on L1TEX: each dependent load of a vertex's chain costs a level time).
// Per-source counts: a loop over each new bit with a shared atomic (the most executed line on
// road-NY, 13% of the source-attributed stall samples, benchmarks/results/session8_x2/call3/ncu/).
// Counting a warp's bits by a 32 x 32 transpose across the lanes instead (59ad04d, reverted) was
// not faster: road-NY 1.576 s against 1.527 s (8 more spilled bytes), cond-mat-2005 16.1 ms
// (session8_x2/call6/).  With the per-vertex candidates the loop holds 25% of the stall samples
// (session10_x2/call5/ncu/pull-source-top-lines.txt).  Per-vertex sums kept per block and batch
// without atomics instead, added to the outputs once per batch (batch_sums, 010bc9c, reverted):
// exact, but road-NY 1.79 s against 1.17 s (session10_x2/call7/; each update waits for its load).
// Lanes whose new bits are identical (__match_any_sync per word) counting once with the group's
// size (group_counts, 851f9a9, reverted): a host count puts 63-90% of road-NY's count atomics in
// such groups when a warp's vertices are neighbours in the numbering, 17-40% when shuffled
// (benchmarks/results/msbfs_count_groups_roadNY.json), but the loop's iterations stay; exact (277
// GPU tests passed), road-NY 1.216 s against 1.207 s, cond-mat-2005 17.2 against 16.6 ms
// (session11_x2/call1/).
__device__ __forceinline__ void dg_ms_or_elem(unsigned (&acc)[DG_MS_WORDS], const unsigned *p) {
    unsigned v[DG_MS_WORDS];
    dg_ms_load(p, v);
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) acc[j] |= v[j];
}

// The pull kernels' per-block setup: this block's slot of F0, F1, Vc, its candidate bits (cbs words,
// in dynamic shared memory when shared_cb, zeroed there) and its nlists lists of nl ints.
__device__ __forceinline__ void dg_ms_pull_slot(unsigned *&F0, unsigned *&F1, unsigned *&Vc, unsigned *&cb,
                                                unsigned *s_dyn, dg_i64 cbs, int shared_cb, int *&lists,
                                                int nlists, dg_i64 nl, dg_i64 nhw) {
    const dg_i64 slot = blockIdx.x;
    F0 += slot * nhw;
    F1 += slot * nhw;
    Vc += slot * nhw;
    if (shared_cb) {
        cb = s_dyn;
        for (dg_i64 i = threadIdx.x; i < cbs; i += blockDim.x) cb[i] = 0u;
    } else {
        cb += slot * cbs;
    }
    lists += slot * nlists * nl;
}

// The next batch of a pull kernel's block (every thread gets it), its list counters (3 each) reset.
__device__ __forceinline__ int dg_ms_pull_claim(unsigned *next, int *s_batch, unsigned *s_na, unsigned *s_nc) {
    if (threadIdx.x == 0) {
        *s_batch = (int)atomicAdd(next, 1u);
        s_na[0] = s_na[1] = s_na[2] = 0u;
        s_nc[0] = s_nc[1] = s_nc[2] = 0u;
    }
    __syncthreads();
    return *s_batch;
}

// The frontier of the previous level cleared in Fn (the nao entries of fo: slice sets, all 8 of
// their vertices, when SETS; else vertices) and the nco candidate bits of clist in cbo.  (Loading
// four list entries per thread before storing, d99342c, reverted, did not change road-NY's time:
// 1.206 s, session10_x2/call8/, against 1.17-1.22 s.)
template <bool SETS>
__device__ __forceinline__ void dg_ms_pull_clear(unsigned *Fn, const int *fo, dg_i64 nao, dg_i64 rho, unsigned *cbo,
                                                 const int *clist, dg_i64 nco) {
    unsigned z[DG_MS_WORDS];
#pragma unroll
    for (int j = 0; j < DG_MS_WORDS; ++j) z[j] = 0u;
    for (dg_i64 i = threadIdx.x; i < (SETS ? 8 * nao : nao); i += blockDim.x)
        dg_ms_store(Fn + (SETS ? (i & 7) * rho + fo[i >> 3] : dg_vi(fo[i], rho)) * DG_MS_WORDS, z);
    for (dg_i64 i = threadIdx.x; i < nco; i += blockDim.x) cbo[clist[i] >> 5] = 0u;
}

// Level 0 of a pull batch: the sources into Vc and F0, their sums (or counts), and the list of
// level 0: each key s >> shift once (the set of each source, shift 3, or the vertex, shift 0),
// deduplicated by the bits dedup, cleared again after a block barrier.  The clearing zeroes whole
// words and ends without a barrier: a caller that sets bits of dedup next must put one between
// (distgraph_msbfs_pull_vertex_blocks does; the set kernel's level loop has one before it marks).
__device__ __forceinline__ void dg_ms_pull_seed(const int *bs, int nsrc, dg_i64 rho, int shift, unsigned *Vc,
                                                unsigned *F0, unsigned *dedup, int *list, unsigned *count,
                                                int per_source, unsigned *scnt, dg_u64 *reach) {
    for (int c = threadIdx.x; c < nsrc; c += blockDim.x) {
        const int s = bs[c];
        const dg_i64 at = dg_vi(s, rho) * DG_MS_WORDS + (c >> 5);
        atomicOr(&Vc[at], 1u << (c & 31));
        atomicOr(&F0[at], 1u << (c & 31));
        const int key = s >> shift;
        const unsigned bit = 1u << (key & 31);
        if (!(atomicOr(dedup + (key >> 5), bit) & bit)) list[atomicAdd(count, 1u)] = key;
        if (per_source) atomicAdd(&scnt[c], 1u);
        else atomicAdd(&reach[s], 1ull);
    }
    __syncthreads();
    for (dg_i64 i = threadIdx.x; i < *count; i += blockDim.x) dedup[list[i] >> 5] = 0u;
}

// One vertex u of a pull level (both pull kernels): new = (OR of Fc over u's in-neighbours) &
// ~Vc[u]; when new is not empty, Vc[u] |= new, Fn[u] = new and the sums of level L; returns
// whether u got new bits.  base: u's element, dg_vi(u, rho) * DG_MS_WORDS.
__device__ __forceinline__ bool dg_ms_pull_one(int u, dg_i64 base, const dg_i64 *__restrict__ t_indptr,
                                               const int *__restrict__ t_indices, const int4 *__restrict__ ell,
                                               const unsigned *Fc, unsigned *Fn, unsigned *Vc, dg_i64 rho, int nsrc,
                                               int per_source, int L, dg_u64 rf, unsigned *scnt, dg_u64 *far,
                                               dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2) {
    bool got = false;
    // u's visited element and its first in-neighbours, loaded together; the element
    // is read again after the in-neighbours (an L1 hit) rather than held in 8
    // registers across their loads (the 64-register cap of 1024 threads spilled)
    unsigned open = 0u;
    {
        unsigned have[DG_MS_WORDS];
        dg_ms_load(Vc + base, have);
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) open |= dg_full_word(j, nsrc) & ~have[j];
    }
    // the first four in-neighbours (ELL row, -1 padding) need no index load after
    // the visited element: their frontier elements are loaded two by two right away
    const int4 q = ell[u];
    if (open) {
        unsigned acc[DG_MS_WORDS];
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) acc[j] = 0u;
        if (q.x >= 0) dg_ms_or_elem(acc, Fc + dg_vi(q.x, rho) * DG_MS_WORDS);
        if (q.y >= 0) dg_ms_or_elem(acc, Fc + dg_vi(q.y, rho) * DG_MS_WORDS);
        if (q.z >= 0) dg_ms_or_elem(acc, Fc + dg_vi(q.z, rho) * DG_MS_WORDS);
        if (q.w >= 0) {
            dg_ms_or_elem(acc, Fc + dg_vi(q.w, rho) * DG_MS_WORDS);
            // more than four: the rest from the CSR of the transpose
            dg_i64 e = t_indptr[u] + 4;
            const dg_i64 e1 = t_indptr[u + 1];
            for (; e + 2 <= e1; e += 2) {
                const int v0 = t_indices[e], v1 = t_indices[e + 1];
                dg_ms_or_elem(acc, Fc + dg_vi(v0, rho) * DG_MS_WORDS);
                dg_ms_or_elem(acc, Fc + dg_vi(v1, rho) * DG_MS_WORDS);
            }
            if (e < e1) dg_ms_or_elem(acc, Fc + dg_vi(t_indices[e], rho) * DG_MS_WORDS);
        }
        unsigned have[DG_MS_WORDS];
        dg_ms_load(Vc + base, have);
        unsigned pc = 0u;
#pragma unroll
        for (int j = 0; j < DG_MS_WORDS; ++j) {
            acc[j] &= ~have[j];
            pc += __popc(acc[j]);
        }
        if (pc) {
            got = true;
#pragma unroll
            for (int j = 0; j < DG_MS_WORDS; ++j) have[j] |= acc[j];
            dg_ms_store(Vc + base, have);
            dg_ms_store(Fn + base, acc);
            if (per_source) {
#pragma unroll
                for (int j = 0; j < DG_MS_WORDS; ++j)
                    for (unsigned d = acc[j]; d; d &= d - 1u) atomicAdd(&scnt[32 * j + __ffs(d) - 1], 1u);
            } else {
                atomicAdd(&far[u], (dg_u64)L * pc);
                atomicAdd(&reach[u], (dg_u64)pc);
                if (L == 1) atomicAdd(&h0[u], (dg_u64)pc);
                else { atomicAdd(&h1[u], pc * (rf >> 32)); atomicAdd(&h2[u], pc * (rf & 0xffffffffull)); }
            }
        }
    }
    return got;
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK, DG_MS_MINB)
distgraph_msbfs_pull_blocks(const dg_i64 *__restrict__ t_indptr, const int *__restrict__ t_indices,
                            const int4 *__restrict__ ell, const int *__restrict__ sg_ptr, const int *__restrict__ sg_idx, int n,
                            const int *__restrict__ srcs, const int *__restrict__ nsrcs, int nbatches, int per_source,
                            unsigned *F0, unsigned *F1, unsigned *Vc, unsigned *cb, dg_i64 cbw, int shared_cb,
                            int *lists, dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2,
                            const int *__restrict__ leaf, unsigned *next, dg_i64 *stats) {
    extern __shared__ unsigned s_dyn[];  // the candidate bits when shared_cb (2 * cbw words)
    __shared__ unsigned scnt[DG_MS_KAPPA];
    __shared__ unsigned s_na[3], s_nc[3];
    __shared__ int s_batch;
    const dg_i64 rho = ((dg_i64)n + 7) >> 3, rho1 = rho > 0 ? rho : 1;
    const dg_i64 nhw = 8 * rho * DG_MS_WORDS;
    dg_ms_pull_slot(F0, F1, Vc, cb, s_dyn, 2 * cbw, shared_cb, lists, 3, rho1, nhw);
    int *clist = lists + 2 * rho1;  // the sets active at even / odd levels: lists, lists + rho1
    for (int i = threadIdx.x; i < DG_MS_KAPPA; i += blockDim.x) scnt[i] = 0u;
    dg_i64 levels_run = 0;
    for (;;) {
        const int bt = dg_ms_pull_claim(next, &s_batch, s_na, s_nc);
        if (bt >= nbatches) break;  // block-uniform
        const int nsrc = nsrcs[bt];
        const int *bs = srcs + (dg_i64)bt * DG_MS_KAPPA;
        // ---- level 0: the sources (their sets are the active list of level 0; cb[1] dedups)
        dg_ms_pull_seed(bs, nsrc, rho, 3, Vc, F0, cb + cbw, lists, &s_na[0], per_source, scnt, reach);
        int l = 0;
        for (;;) {
            // ---- (a) per-source counts of level l; the frontier of level l - 1 cleared set by
            // set (F of parity l-1, which level l + 1 writes) with its candidate bits; the
            // candidates of level l + 1 marked from the sets active at level l
            const int p = l & 1;
            unsigned *Fc = p ? F1 : F0, *Fn = p ? F0 : F1;
            unsigned *cbn = cb + p * cbw, *cbo = cb + (p ^ 1) * cbw;
            if (per_source)
                dg_ms_block_flush_counts(scnt, per_source, nsrc, bt, bs, l, l >= 2 ? dg_recip_fixed((dg_u64)l) : 0ull,
                                         far, reach, h0, h1, h2, leaf);
            if (l >= 1) dg_ms_pull_clear<true>(Fn, lists + (p ^ 1) * rho1, s_na[p ^ 1], rho, cbo, clist, s_nc[p ^ 1]);
            const dg_i64 na = s_na[p];
            if (na == 0) break;  // block-uniform: no frontier at level l
            __syncthreads();     // (F of parity l-1 and the old candidate list are free now)
            if (threadIdx.x == 0) { s_nc[p ^ 1] = 0u; s_na[p ^ 1] = 0u; }
            {
                const int *a = lists + p * rho1;
                for (dg_i64 i = threadIdx.x; i < na; i += blockDim.x) {
                    const int s = a[i];
                    for (int e = sg_ptr[s]; e < sg_ptr[s + 1]; ++e) {
                        const int t = sg_idx[e];
                        const unsigned bit = 1u << (t & 31);
                        if (cbn[t >> 5] & bit) continue;
                        if (!(atomicOr(cbn + (t >> 5), bit) & bit)) clist[atomicAdd(&s_nc[p], 1u)] = t;
                    }
                }
            }
            __syncthreads();
            // ---- (b) level l + 1: pull over the candidate sets' vertices, a thread each (the 8
            // vertices of a set in 8 consecutive lanes of one warp)
            const dg_i64 nc = s_nc[p];
            const int L = l + 1;
            const dg_u64 rf = L >= 2 ? dg_recip_fixed((dg_u64)L) : 0ull;
            const unsigned lane = threadIdx.x & 31u;
            int *an = lists + (p ^ 1) * rho1;
            const int nc8 = (int)nc * 8;
            for (int i0 = 0; i0 < nc8; i0 += blockDim.x) {
                const int i = i0 + (int)threadIdx.x;
                int ss = 0, u = -1;
                if (i < nc8) {
                    ss = clist[i >> 3];
                    u = ss * 8 + (i & 7);
                    if (u >= n) u = -1;
                }
                bool gotn = false;
                if (u >= 0)
                    gotn = dg_ms_pull_one(u, ((dg_i64)(i & 7) * rho + ss) * DG_MS_WORDS, t_indptr, t_indices, ell, Fc,
                                          Fn, Vc, rho, nsrc, per_source, L, rf, scnt, far, reach, h0, h1, h2);
                // the set is active at level l + 1 iff one of its 8 lanes got new bits: the
                // group's first lane lists it
                const unsigned grp = (__ballot_sync(DG_FULL_MASK, gotn) >> (lane & ~7u)) & 0xffu;
                if (grp && (lane & 7u) == 0u) an[atomicAdd(&s_na[p ^ 1], 1u)] = (int)ss;
            }
            __syncthreads();
            ++l;
        }
        // ---- clean the slot: the last frontier (parity l: zero, nothing new) and candidate bits
        // were cleared in (a); Vc back to zero
        const uint4 z4 = make_uint4(0u, 0u, 0u, 0u);
        for (dg_i64 i = threadIdx.x; i < nhw / 4; i += blockDim.x) reinterpret_cast<uint4 *>(Vc)[i] = z4;
        levels_run += l - 1;  // the deepest level reached (distgraph_msbfs_blocks counts one more when
                              // its last frontier's sets still queue VSSs: an empty last level)
        __syncthreads();
    }
    if (threadIdx.x == 0 && levels_run) atomicAdd((dg_u64 *)&stats[0], (dg_u64)levels_run);
}

// distgraph_msbfs_pull_vertex_blocks: the pull kernel with candidates kept per vertex instead of
// per slice set.  Level l + 1 pulls into exactly the out-neighbours of level l's frontier
// vertices, each once: a bit per vertex (cbw >= n / 32 + 1 words, in dynamic shared memory when
// shared_cb, else cb per slot) dedups them into a list.  The
// slice-set candidates of distgraph_msbfs_pull_blocks evaluate all 8 vertices of every set that
// holds one: 1.4-2.2x more vertices on road-NY (host count,
// benchmarks/results/msbfs_pull_candidates_roadNY.json).  The candidates of level l + 2 are
// marked by the threads of level l + 1's pull, right after a vertex joins the frontier (its
// out-arcs: h_indptr / h_indices, or, when sym_arcs says that H is symmetric, its in-arcs, whose
// first four the thread has just read from ell), instead of a pass of their own over the new
// frontier's list after a block barrier (session 9's kernel: one barrier, one list pass and a
// dependent index load per frontier vertex more per level).  lists (per slot, 4 * max(n, 1)
// ints): the frontier vertices of even / odd levels, then the candidates of even / odd levels;
// list counters rotate over three slots (level L's in slot L % 3), so that the counters a level
// appends to were reset a level earlier.  The bits of level l + 1's candidates are cleared before
// its pull starts (its list stays), so one bit array serves both levels.  The frontier of level
// l - 1 is cleared vertex by vertex.  Same sums (dg_ms_pull_one).
__device__ __forceinline__ void dg_ms_mark(int t, unsigned *cbm, int *kl, unsigned *cnt) {
    const unsigned bit = 1u << (t & 31);
    if (cbm[t >> 5] & bit) return;
    if (!(atomicOr(cbm + (t >> 5), bit) & bit)) kl[atomicAdd(cnt, 1u)] = t;
}

// u's out-neighbours marked as candidates (bits cbm, list kl, counter cnt).
__device__ __forceinline__ void dg_ms_mark_out(int u, int sym_arcs, const int4 *__restrict__ ell,
                                               const dg_i64 *__restrict__ t_indptr, const int *__restrict__ t_indices,
                                               const dg_i64 *__restrict__ h_indptr, const int *__restrict__ h_indices,
                                               unsigned *cbm, int *kl, unsigned *cnt) {
    if (sym_arcs) {
        const int4 q = ell[u];
        if (q.x >= 0) dg_ms_mark(q.x, cbm, kl, cnt);
        if (q.y >= 0) dg_ms_mark(q.y, cbm, kl, cnt);
        if (q.z >= 0) dg_ms_mark(q.z, cbm, kl, cnt);
        if (q.w >= 0) {
            dg_ms_mark(q.w, cbm, kl, cnt);
            for (dg_i64 e = t_indptr[u] + 4, e1 = t_indptr[u + 1]; e < e1; ++e) dg_ms_mark(t_indices[e], cbm, kl, cnt);
        }
    } else {
        for (dg_i64 e = h_indptr[u], e1 = h_indptr[u + 1]; e < e1; ++e) dg_ms_mark(h_indices[e], cbm, kl, cnt);
    }
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK, DG_MS_MINB)
distgraph_msbfs_pull_vertex_blocks(const dg_i64 *__restrict__ t_indptr, const int *__restrict__ t_indices,
                                   const int4 *__restrict__ ell, const dg_i64 *__restrict__ h_indptr,
                                   const int *__restrict__ h_indices, int sym_arcs, int n, const int *__restrict__ srcs,
                                   const int *__restrict__ nsrcs, int nbatches, int per_source, unsigned *F0,
                                   unsigned *F1, unsigned *Vc, unsigned *cb, dg_i64 cbw, int shared_cb, int *lists,
                                   dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2,
                                   const int *__restrict__ leaf, unsigned *next, dg_i64 *stats) {
    extern __shared__ unsigned s_dyn[];  // the candidate bits when shared_cb (cbw words)
    __shared__ unsigned scnt[DG_MS_KAPPA];
    __shared__ unsigned s_na[3], s_nc[3];
    __shared__ int s_batch;
    const dg_i64 rho = ((dg_i64)n + 7) >> 3;
    const dg_i64 nhw = 8 * rho * DG_MS_WORDS, n1 = n > 0 ? n : 1;
    dg_ms_pull_slot(F0, F1, Vc, cb, s_dyn, cbw, shared_cb, lists, 4, n1, nhw);
    int *klist = lists + 2 * n1;  // frontier lists: lists, lists + n1; candidate lists: klist, klist + n1
    for (int i = threadIdx.x; i < DG_MS_KAPPA; i += blockDim.x) scnt[i] = 0u;
    const unsigned lane = threadIdx.x & 31u;
    dg_i64 levels_run = 0;
    for (;;) {
        const int bt = dg_ms_pull_claim(next, &s_batch, s_na, s_nc);
        if (bt >= nbatches) break;  // block-uniform
        const int nsrc = nsrcs[bt];
        const int *bs = srcs + (dg_i64)bt * DG_MS_KAPPA;
        // ---- level 0: the sources, each vertex listed once (its bit dedups, then is cleared);
        // the candidates of level 1 (list klist + n1, counter s_nc[1])
        dg_ms_pull_seed(bs, nsrc, rho, 0, Vc, F0, cb, lists, &s_na[0], per_source, scnt, reach);
        __syncthreads();  // the seed's dedup bits (cb) are cleared before they mark candidates
        for (dg_i64 i = threadIdx.x; i < s_na[0]; i += blockDim.x)
            dg_ms_mark_out(lists[i], sym_arcs, ell, t_indptr, t_indices, h_indptr, h_indices, cb, klist + n1,
                           &s_nc[1]);
        __syncthreads();
        int l = 0;
        for (;;) {
            // ---- (a) per-source counts of level l; the frontier of level l - 1 cleared vertex by
            // vertex (F of parity l - 1, which level l + 1 writes; none at level 0) and the bits of
            // level l + 1's candidates (their list is pulled below)
            const int p = l & 1, c0 = l % 3, c1 = (l + 1) % 3, c2 = (l + 2) % 3;
            unsigned *Fc = p ? F1 : F0, *Fn = p ? F0 : F1;
            if (per_source)
                dg_ms_block_flush_counts(scnt, per_source, nsrc, bt, bs, l, l >= 2 ? dg_recip_fixed((dg_u64)l) : 0ull,
                                         far, reach, h0, h1, h2, leaf);
            dg_ms_pull_clear<false>(Fn, lists + (p ^ 1) * n1, l >= 1 ? s_na[c2] : 0u, rho, cb, klist + (p ^ 1) * n1,
                                    s_nc[c1]);
            const dg_i64 na = s_na[c0];
            if (na == 0) break;  // block-uniform: no frontier at level l (so no candidates of level l + 1)
            __syncthreads();     // (F of parity l - 1 and the candidate bits are free now)
            // slot c2 held level l - 1's frontier count (read above) and becomes level l + 2's; slot
            // c0 held level l's candidate count (done with) and becomes level l + 3's: reset here,
            // after every thread's reads, and appended to only from the next level on
            if (threadIdx.x == 0) { s_na[c2] = 0u; s_nc[c0] = 0u; }
            // ---- (b) level l + 1: pull into each candidate, a thread each; the new frontier's
            // vertices listed with one shared atomic per warp, their out-neighbours marked as the
            // candidates of level l + 2
            const int nc = (int)s_nc[c1];
            const int *kc = klist + (p ^ 1) * n1;
            const int L = l + 1;
            const dg_u64 rf = L >= 2 ? dg_recip_fixed((dg_u64)L) : 0ull;
            int *fnext = lists + (p ^ 1) * n1;
            for (int i0 = 0; i0 < nc; i0 += blockDim.x) {
                const int i = i0 + (int)threadIdx.x;
                const int u = i < nc ? kc[i] : -1;
                bool gotn = false;
                if (u >= 0)
                    gotn = dg_ms_pull_one(u, dg_vi(u, rho) * DG_MS_WORDS, t_indptr, t_indices, ell, Fc, Fn, Vc, rho,
                                          nsrc, per_source, L, rf, scnt, far, reach, h0, h1, h2);
                const unsigned got = __ballot_sync(DG_FULL_MASK, gotn);
                unsigned at = 0u;
                if (lane == 0u && got) at = atomicAdd(&s_na[c1], (unsigned)__popc(got));
                at = __shfl_sync(DG_FULL_MASK, at, 0);
                if (gotn) {
                    fnext[at + __popc(got & ((1u << lane) - 1u))] = u;
                    dg_ms_mark_out(u, sym_arcs, ell, t_indptr, t_indices, h_indptr, h_indices, cb, klist + p * n1,
                                   &s_nc[c2]);
                }
            }
            __syncthreads();
            ++l;
        }
        // ---- clean the slot: the last frontier (parity l: empty), the frontier before it and the
        // candidate bits were cleared in (a); Vc back to zero
        const uint4 z4 = make_uint4(0u, 0u, 0u, 0u);
        for (dg_i64 i = threadIdx.x; i < nhw / 4; i += blockDim.x) reinterpret_cast<uint4 *>(Vc)[i] = z4;
        levels_run += l - 1;  // as distgraph_msbfs_pull_blocks
        __syncthreads();
    }
    if (threadIdx.x == 0 && levels_run) atomicAdd((dg_u64 *)&stats[0], (dg_u64)levels_run);
}

// ================================================================= partitioned mode (stepwise)
extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_seed(const int *__restrict__ srcs, int nsrc, int n, unsigned *Vn, unsigned char *dirty) {
    dg_ms_seed(srcs, nsrc, ((dg_i64)n + 7) >> 3, Vn, dirty, (dg_i64)blockIdx.x * blockDim.x + threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_stage1(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks, int n,
                       const unsigned *F, const unsigned *act, unsigned *Vn, unsigned char *dirty, const int2 *qc,
                       dg_i64 nq, int tc_ratio) {
    const dg_i64 nthreads = (dg_i64)gridDim.x * blockDim.x;
    const dg_i64 tid = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;
    dg_ms_stage1(row_ids, masks, F, act, Vn, dg_ms_mark_byte{dirty}, qc, nq, ((dg_i64)n + 7) >> 3, tc_ratio,
                 tid >> 5, nthreads >> 5, threadIdx.x & 31u);
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_bottom_up(const dg_i64 *__restrict__ t_indptr, const int *__restrict__ t_indices, int n,
                          const unsigned *F, const unsigned *Vc, unsigned *Vn, unsigned char *dirty, dg_i64 v_lo,
                          dg_i64 v_hi, const unsigned *G, const int *__restrict__ heavy, dg_i64 nheavy,
                          dg_i64 bu_heavy) {
    dg_ms_bottom_up(t_indptr, t_indices, F, Vc, Vn, dirty, G, heavy, nheavy, bu_heavy, v_lo, v_hi,
                    ((dg_i64)n + 7) >> 3, (dg_i64)blockIdx.x * blockDim.x + threadIdx.x,
                    (dg_i64)gridDim.x * blockDim.x);
}

// enqueue = 0 in partitioned mode (the queue is built after the exchange).
extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_stage2(const int *__restrict__ real_ptrs, const dg_i64 *__restrict__ t_indptr,
                       const dg_i64 *__restrict__ h_indptr, int n, unsigned *F, unsigned *Vc, const unsigned *Vn,
                       unsigned *act, unsigned char *wasact, unsigned char *dirty, int2 *qn, dg_i64 *ctr,
                       dg_i64 ss_lo, dg_i64 ss_hi, int level, int nsrc, int per_source, int enqueue, int use_bu,
                       unsigned *cnt, dg_u64 *far, dg_u64 *reach, dg_u64 *h0, dg_u64 *h1, dg_u64 *h2, unsigned *G) {
    __shared__ unsigned scnt[DG_MS_KAPPA];
    const dg_i64 nthreads = (dg_i64)gridDim.x * blockDim.x;
    const dg_i64 tid = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;
    dg_ms_block_counts_begin(scnt, per_source);
    dg_ms_stage2(real_ptrs, t_indptr, h_indptr, F, Vc, Vn, act, wasact, dirty, qn, ctr + ((level + 1) & 3), ctr, n,
                 ((dg_i64)n + 7) >> 3, ss_lo, ss_hi, level, nsrc, per_source, enqueue, use_bu, far, reach, h0, h1,
                 h2, scnt, G, 0, tid >> 5, nthreads >> 5, threadIdx.x & 31u);
    dg_ms_block_counts_end(scnt, cnt, per_source);
}

// The queue of the next level from the (replicated) wasact flags of all rho slice sets; the
// number of active slice sets is added to ctr[16].  qn_size = ctr + (level+1)&3, zeroed.
extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_build_queue(const int *__restrict__ real_ptrs, const unsigned char *wasact, int n, int2 *qn,
                            dg_i64 *qn_size, dg_i64 *ctr) {
    const dg_i64 nthreads = (dg_i64)gridDim.x * blockDim.x;
    const dg_i64 tid = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;
    const dg_i64 rho = ((dg_i64)n + 7) >> 3;
    dg_u64 nact = 0ull;
    for (dg_i64 b0 = tid - lane; b0 < rho; b0 += nthreads) {
        const dg_i64 ss = b0 + lane;
        const bool a = ss < rho && wasact[ss];
        nact += a ? 1ull : 0ull;
        const unsigned c = a ? (unsigned)(real_ptrs[ss + 1] - real_ptrs[ss]) : 0u;
        const unsigned incl = dg_warp_inclusive_scan(c);
        const unsigned total = __shfl_sync(DG_FULL_MASK, incl, 31);
        dg_i64 pos0 = 0;
        if (lane == 31 && total) pos0 = (dg_i64)atomicAdd((dg_u64 *)qn_size, (dg_u64)total);
        pos0 = __shfl_sync(DG_FULL_MASK, pos0, 31);
        if (c) {
            dg_i64 p = pos0 + (dg_i64)(incl - c);
            const int e = real_ptrs[ss + 1];
            for (int v = real_ptrs[ss]; v < e; ++v) qn[p++] = make_int2(v, (int)ss);
        }
    }
    nact = dg_warp_sum(nact);
    if (lane == 0 && nact) atomicAdd((dg_u64 *)&ctr[16], nact);
}

extern "C" __global__ void __launch_bounds__(DG_MS_BLOCK)
distgraph_msbfs_flush_sources(unsigned *cnt, int level, int nsrc, dg_u64 *far, dg_u64 *reach, dg_u64 *h0,
                              dg_u64 *h1, dg_u64 *h2) {
    dg_ms_flush_sources(cnt, level, nsrc, far, reach, h0, h1, h2, (dg_i64)blockIdx.x * blockDim.x + threadIdx.x);
}
