// bvss_bfs.cu -- single-source BFS on tensor cores over BVSS (BLEST, Sec. 3 and 5).
//
// One persistent cooperative kernel runs a whole BFS: it initializes the state, then
// loops over levels with grid-wide syncs between phases (no host round trip per level).
// The work queue holds virtual slice sets (VSS, 128 slices each) of the slice sets that
// contain a frontier vertex; a warp takes one VSS at a time, multiplies its 128 8-bit
// masks by the 8-bit frontier word of the slice set with two binary MMAs (m8n8k128,
// AND+POPC) in the layout of BLEST Fig. 3 (two slices packed per 32-bit A word, B
// non-zero only in lanes t%9==0 (alpha) and t%9==4 (alpha<<8), so each lane gets the
// dot products of its own four slices in its own D registers), and updates the rows
// whose product is non-zero.  Three update schemes, chosen by `mode`:
//
//   mode 0  BLEST Alg. 2, direct updates: level[u] checked and written at once, the
//           next frontier bit set with atomicOr, whose return value tells whether the
//           slice set of u was seen for the first time (then its VSSs are enqueued).
//   mode 1  BLEST Alg. 3, lazy updates: stage 1 only ORs u into Vnext with an atomic
//           whose result is unused (compiled to RED, no stall); stage 2 sweeps Vnext
//           coalesced: diff = Vcur ^ Vnext are the new vertices (levels written, VSSs
//           enqueued with one warp-aggregated atomicAdd), and counts unvisited ones.
//   mode 2  mode 1 plus BLEST Alg. 4: a level for which #unvisited < eta * |Qcur|
//           (Eq. 6) runs bottom-up on CUDA cores over the CSR of G^T instead (each
//           unvisited vertex looks for an in-neighbour in the frontier), then stage 2.
//           With alpha > 0 the level must also pass an edge test (not in the paper):
//           the in-arcs a bottom-up pass is expected to scan are at most alpha times the
//           in-arcs of the frontier (see stage 1); alpha = 0 is Eq. 6 alone.
//
// State arrays (n vertices, nw = ceil(n/32) words, Ns = ceil(n/8) slice sets):
//   level[n]     int: BFS level, -1 = unreached (the kernel's output).
//   F[3*nw]      three frontier bitmaps, bit v%32 of word v/32; byte s of a bitmap is the
//                8-bit frontier word alpha of slice set s.  Mode 0 rotates them by level
//                (read F[l%3], write F[(l+1)%3], clear F[(l+2)%3]), so a level needs one
//                grid sync; modes 1-2 use F[0] as Fcur, rewritten by stage 2 each level.
//   V[2*nw]      visited bitmaps Vcur, Vnext (modes 1-2).
//   Q[3*qcap]    VSS work queues of int2 (VSS id, its slice set, so a warp need not read
//                virtual_to_real); level l reads Q[l%3] and appends to Q[(l+1)%3].
//   ctr[48]      int counters: ctr[l&3] = queue length of level l; ctr[4 + (l&3)] =
//                #unvisited before level l; ctr[8] = levels run; ctr[9] = bottom-up
//                levels run; ctr[13] = level the grid resumes at after block 0 ran small
//                levels alone, ctr[14] = blocks checked in meanwhile; ctr[16..19] =
//                block 0's queue lengths meanwhile (see `tiny`); ctr[32..41] = five
//                uint64 (mode 2 with alpha > 0): in-arcs of the frontier of level l at
//                [l & 3], of all vertices visited so far at [4]. DG_BFS_NCTR ints.
//   mode         bits 0-1: 0 direct, 1 lazy, 2 lazy + switching; bit 2 (value 4): in
//                lazy stage 1 skip rows already in Vcur (one bitmap read before the RED;
//                not in the paper, measured as an option); bit 3 (value 8): direct mode
//                with the session-1 update code (one row after the other, each with its
//                own level load, atomicOr and queue atomicAdd; kept for A/B runs); bit 4
//                (value 16): direct mode with the visited bitmap instead of the level load
//                (see below).
//   tiny         direct mode only: a level whose queue holds at most `tiny` VSSs is run
//                by block 0 alone, with __syncthreads between levels instead of grid
//                syncs, until the queue grows past `tiny` or empties; the other blocks
//                wait on ctr[13] (the level to resume at).  0 = off.  For high-diameter
//                graphs (roads), where most levels are a few VSSs and a level costs a
//                grid sync plus a chain of dependent memory round trips.
//
// Direct updates (mode 0) of one VSS are issued in three rounds so that a lane's four
// rows overlap their memory latency: (a) level[u] and the VSS range of u's slice set for
// every row with a product, (b) level[u] = l and the atomicOr of every unvisited row,
// (c) one warp-aggregated atomicAdd reserving the queue slots of every slice set seen
// for the first time.  A level is then about five dependent round trips plus one sync.
// With mode bit 16 round (a) is replaced by two atomics issued together: atomicOr on the
// visited bitmap Vcur (its old bit says whether u is new) and atomicExch(sslev[u/8], l)
// (its old value says whether u's slice set was already claimed this level); a slice set
// is claimed by any row with a product, new or not, so some VSSs are enqueued whose
// frontier byte turns out empty (work, not errors) -- one round trip less per level.
//   sslev[Ns]    int: the last level that enqueued each slice set (mode bit 16).
// BVSS inputs (see distgraph/formats/bvss.py): row_ids as int4 per lane (4 rows),
// masks as one 32-bit word per lane (byte c = mask of row c), real_ptrs[Ns+1],
// v2r[Nv] (virtual_to_real; not read: queue entries carry the slice set).  t_indptr /
// t_indices: CSR of G^T (in-neighbours), read only in mode 2.
//
// __global__ distgraph_bfs_persistent(...): inputs above; outputs level[] and ctr[8..9].
// Launch cooperatively with every block co-resident (grid <= SMs * occupancy).
// distgraph_bfs_direct / distgraph_bfs_lazy: the same kernel compiled for the direct
// modes only (mode & 3 == 0) / the lazy modes only (mode & 3 != 0), same arguments.  The
// host launches these: with the direct code (tiny levels, overlapped updates) in the same
// function, the lazy path was compiled into 64 registers instead of 53 and ran 7-11%
// (switch) and 18-36% (lazy) slower than session 1's kernel on kron:22/urand:22 (H200,
// benchmarks/results/gpu_bfs_session3.json); the lazy-only kernel is session 1's lazy path.
//
// __global__ distgraph_bfs_parents(...): the BFS-tree parents once the levels are known
// (a second pass, not part of BLEST): parent[v] = the smallest in-neighbour u of v with
// level[u] == level[v] - 1 (the CPU backend's rule), parent[source] = source, -1 when
// unreached.  Works in whatever ids the CSR of G^T and level[] share (the caller's).
// Each lane scans the first DG_PAR_SERIAL in-neighbours of its vertex; the vertices
// still without a parent are then scanned by the whole warp, 32 in-neighbours at a time
// (ballot, lowest lane = smallest id), so high-degree vertices do not serialize a lane.
//
// Reference: D. Elbek and K. Kaya, "Graph Traversal on Tensor Cores: A BFS Framework for
// Modern GPUs" (BLEST), arXiv:2606.05081, 2026, Alg. 2-4, Eq. 6, Fig. 3.
#include <cooperative_groups.h>

#include "common.cuh"

#ifndef DG_BFS_BLOCK
#define DG_BFS_BLOCK 256
#endif
#ifndef DG_BFS_MIN_BLOCKS
#define DG_BFS_MIN_BLOCKS 4
#endif

// ctr[] length (ints): the int counters below, then five 64-bit arc counters at ctr[32..41]
#define DG_BFS_NCTR 48

#ifndef DG_BFS_BU_CHUNK  // in-arcs per round of the bottom-up scan (Alg. 4), see stage 1
#define DG_BFS_BU_CHUNK 1
#endif
#ifndef DG_BFS_BU_LIST  // 1: bottom-up levels hand vertices to idle lanes (dg_bottom_up_list)
#define DG_BFS_BU_LIST 0
#endif
#ifndef DG_BFS_BU_GROUP  // consecutive words a warp takes at a time in that mode
#define DG_BFS_BU_GROUP 8
#endif
#ifndef DG_PAR_SERIAL
#define DG_PAR_SERIAL 32
#endif

namespace cg = cooperative_groups;

// Level timing, for profiling only (a build with DG_BFS_LEVEL_NS = N defined; the default
// build has none of it): thread 0 of the grid stores %globaltimer when level l starts
// (l <= N), that level's queue length (VSSs) and its kind (0 direct, 1 lazy top-down,
// 2 bottom-up, 3 run by block 0 alone: `tiny`); entry l of the level after the last holds
// the end. A level's time is ns[l + 1] - ns[l] where both were stored. The host reads
// them with RawModule.get_global (benchmarks/gpu_bfs.py --level-profile).
#ifdef DG_BFS_LEVEL_NS
__device__ unsigned long long dg_level_ns[DG_BFS_LEVEL_NS + 1];
__device__ int dg_level_nq[DG_BFS_LEVEL_NS + 1];
__device__ int dg_level_kind[DG_BFS_LEVEL_NS + 1];
__device__ __forceinline__ unsigned long long dg_bfs_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define DG_BFS_STAMP(l, nq, kind)                                                     \
    do {                                                                                \
        if (tid == 0 && (l) >= 0 && (l) <= DG_BFS_LEVEL_NS) {                           \
            dg_level_ns[l] = dg_bfs_now();                                              \
            dg_level_nq[l] = (nq);                                                      \
            dg_level_kind[l] = (kind);                                                  \
        }                                                                               \
    } while (0)
#define DG_BFS_KIND(l, kind)                                                          \
    do {                                                                                \
        if (tid == 0 && (l) >= 0 && (l) <= DG_BFS_LEVEL_NS) dg_level_kind[l] = (kind);  \
    } while (0)
#else
#define DG_BFS_STAMP(l, nq, kind) do { } while (0)
#define DG_BFS_KIND(l, kind) do { } while (0)
#endif

// The four dot products of this lane's slices (columns 0..3 of the VSS matrix).
__device__ __forceinline__ void dg_vss_products(unsigned mask, unsigned alpha, unsigned lane, int &d0,
                                                int &d1, int &d2, int &d3) {
    unsigned m9 = lane % 9u;
    unsigned fragb = (m9 == 0u) ? alpha : ((m9 == 4u) ? (alpha << 8) : 0u);
    dg_bmma_and_popc(mask & 0xffffu, fragb, d0, d1);   // slices 0, 1 of the lane
    dg_bmma_and_popc(mask >> 16, fragb, d2, d3);       // slices 2, 3 of the lane
}

// Alg. 2 lines 27-38 for one row u with product d.
__device__ __forceinline__ void dg_direct_update(int u, int d, int l, int *level, unsigned *fnext,
                                                 const int *__restrict__ real_ptrs, int2 *qn,
                                                 int *qn_size) {
    if (d == 0) return;
    const int ss = u >> 3;
    // the VSS range is loaded together with level[u] (one memory round trip, not two)
    const int lv = level[u];
    const int s = real_ptrs[ss], e = real_ptrs[ss + 1];
    if (lv >= 0) return;
    level[u] = l;
    unsigned old = atomicOr(&fnext[u >> 5], 1u << (u & 31));
    if (((old >> (u & 24)) & 0xffu) == 0u && e > s) {  // first vertex of its slice set this level
        int p = atomicAdd(qn_size, e - s);
        for (int v = s; v < e; ++v) qn[p++] = make_int2(v, ss);
    }
}

// Alg. 2 lines 20-38 for one VSS q = (vss, slice set), latency-overlapped (see the top).
// Called by every lane of a warp together (warp-uniform).
__device__ __forceinline__ void dg_direct_vss(int2 q, unsigned lane, int l, const int4 *__restrict__ row_ids,
                                              const unsigned *__restrict__ masks,
                                              const int *__restrict__ real_ptrs, const unsigned char *fcur,
                                              int *level, unsigned *fnext, int2 *qn, int *qn_size) {
    const unsigned alpha = __ldcg(fcur + q.y);
    const int4 u4 = __ldg(row_ids + q.x * 32 + lane);
    const unsigned mk = __ldg(masks + q.x * 32 + lane);
    int d[4];
    dg_vss_products(mk, alpha, lane, d[0], d[1], d[2], d[3]);
    const int u[4] = {u4.x, u4.y, u4.z, u4.w};
    int lv[4], rs[4], re[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // (a) loads, independent of each other
        lv[k] = 0; rs[k] = 0; re[k] = 0;
        if (d[k]) {
            lv[k] = __ldcg(level + u[k]);
            rs[k] = __ldg(real_ptrs + (u[k] >> 3));
            re[k] = __ldg(real_ptrs + (u[k] >> 3) + 1);
        }
    }
    unsigned old[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // (b) writes and atomics, results used only below
        old[k] = DG_FULL_MASK;
        if (d[k] && lv[k] < 0) {
            level[u[k]] = l;
            old[k] = atomicOr(fnext + (u[k] >> 5), 1u << (u[k] & 31));
        }
    }
    unsigned cnt = 0, first = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // first vertex of its slice set in this level?
        if (((old[k] >> (u[k] & 24)) & 0xffu) == 0u && re[k] > rs[k]) {
            first |= 1u << k;
            cnt += (unsigned)(re[k] - rs[k]);
        }
    }
    // (c) one queue reservation per warp
    const unsigned incl = dg_warp_inclusive_scan(cnt);
    const unsigned total = __shfl_sync(DG_FULL_MASK, incl, 31);
    if (total == 0u) return;
    int pos0 = 0;
    if (lane == 31) pos0 = atomicAdd(qn_size, (int)total);
    pos0 = __shfl_sync(DG_FULL_MASK, pos0, 31);
    int p = pos0 + (int)(incl - cnt);
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if ((first >> k) & 1u)
            for (int v = rs[k]; v < re[k]; ++v) qn[p++] = make_int2(v, u[k] >> 3);
}

// Mode bit 16: as dg_direct_vss, with the visited bitmap and slice-set claims (see top).
__device__ __forceinline__ void dg_direct_vss_v(int2 q, unsigned lane, int l, const int4 *__restrict__ row_ids,
                                                const unsigned *__restrict__ masks,
                                                const int *__restrict__ real_ptrs, const unsigned char *fcur,
                                                int *level, unsigned *fnext, unsigned *vis, int *sslev, int2 *qn,
                                                int *qn_size) {
    const unsigned alpha = __ldcg(fcur + q.y);
    const int4 u4 = __ldg(row_ids + q.x * 32 + lane);
    const unsigned mk = __ldg(masks + q.x * 32 + lane);
    int d[4];
    dg_vss_products(mk, alpha, lane, d[0], d[1], d[2], d[3]);
    const int u[4] = {u4.x, u4.y, u4.z, u4.w};
    unsigned ov[4];
    int os[4], rs[4], re[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // atomics and loads, all independent
        ov[k] = DG_FULL_MASK; os[k] = l; rs[k] = 0; re[k] = 0;
        if (d[k]) {
            ov[k] = atomicOr(vis + (u[k] >> 5), 1u << (u[k] & 31));
            os[k] = atomicExch(sslev + (u[k] >> 3), l);
            rs[k] = __ldg(real_ptrs + (u[k] >> 3));
            re[k] = __ldg(real_ptrs + (u[k] >> 3) + 1);
        }
    }
    unsigned cnt = 0, first = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        if (!((ov[k] >> (u[k] & 31)) & 1u)) {  // u is new: label it, frontier bit (RED)
            level[u[k]] = l;
            atomicOr(fnext + (u[k] >> 5), 1u << (u[k] & 31));
        }
        if (os[k] != l && re[k] > rs[k]) {    // this row claimed u's slice set
            first |= 1u << k;
            cnt += (unsigned)(re[k] - rs[k]);
        }
    }
    const unsigned incl = dg_warp_inclusive_scan(cnt);
    const unsigned total = __shfl_sync(DG_FULL_MASK, incl, 31);
    if (total == 0u) return;
    int pos0 = 0;
    if (lane == 31) pos0 = atomicAdd(qn_size, (int)total);
    pos0 = __shfl_sync(DG_FULL_MASK, pos0, 31);
    int p = pos0 + (int)(incl - cnt);
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if ((first >> k) & 1u)
            for (int v = rs[k]; v < re[k]; ++v) qn[p++] = make_int2(v, u[k] >> 3);
}

// One direct-mode level over queue entries w0, w0 + ws, ... (warps) and the clearing of
// the frontier of level l-1 over threads t0, t0 + ts, ... (taken from the far end so
// that the warps with VSSs do not wait).  q0 is entry w0, loaded before nq was known.
__device__ __forceinline__ void dg_direct_level(int l, int nq, int2 q0, int w0, int ws, int t0, int ts,
                                                unsigned lane, int scheme, const int4 *__restrict__ row_ids,
                                                const unsigned *__restrict__ masks,
                                                const int *__restrict__ real_ptrs, int *level, unsigned *F,
                                                int nw, const int2 *qc, int2 *qn, int *qn_size,
                                                const int2 *qold, int nold, unsigned *vis, int *sslev) {
    const unsigned char *fcur = (const unsigned char *)(F + (l % 3) * nw);
    unsigned *fnext = F + ((l + 1) % 3) * nw;
    for (int w = w0; w < nq; w += ws) {
        const int2 q = (w == w0) ? q0 : __ldcg(qc + w);
        if (scheme == 0) {
            dg_direct_vss(q, lane, l, row_ids, masks, real_ptrs, fcur, level, fnext, qn, qn_size);
            continue;
        }
        if (scheme == 2) {
            dg_direct_vss_v(q, lane, l, row_ids, masks, real_ptrs, fcur, level, fnext, vis, sslev, qn, qn_size);
            continue;
        }
        const unsigned alpha = fcur[q.y];
        const int4 u = row_ids[q.x * 32 + lane];
        const unsigned mk = masks[q.x * 32 + lane];
        int d0, d1, d2, d3;
        dg_vss_products(mk, alpha, lane, d0, d1, d2, d3);
        dg_direct_update(u.x, d0, l, level, fnext, real_ptrs, qn, qn_size);
        dg_direct_update(u.y, d1, l, level, fnext, real_ptrs, qn, qn_size);
        dg_direct_update(u.z, d2, l, level, fnext, real_ptrs, qn, qn_size);
        dg_direct_update(u.w, d3, l, level, fnext, real_ptrs, qn, qn_size);
    }
    unsigned char *fold = (unsigned char *)(F + ((l + 2) % 3) * nw);
    for (int i = ts - 1 - t0; i < nold; i += ts) fold[__ldcg(&qold[i].y)] = 0;
}

__device__ __forceinline__ void dg_lazy_mark(int u, int d, unsigned *vnext) {
    if (d != 0) atomicOr(&vnext[u >> 5], 1u << (u & 31));  // result unused: RED
}

// KIND: 0 = any mode, 1 = direct modes only, 2 = lazy modes only (see the top).
// One round of the bottom-up scan (Alg. 4) of an unvisited vertex: in-arcs [p, p +
// DG_BFS_BU_CHUNK) of its row ending at e, their loads, then their frontier words, issued
// together; true if one of them comes from the frontier fcur.
__device__ __forceinline__ bool dg_bu_round(long long p, long long e, const int *__restrict__ t_indices,
                                            const unsigned *fcur) {
    int vs[DG_BFS_BU_CHUNK];
    unsigned fw[DG_BFS_BU_CHUNK];
#pragma unroll
    for (int k = 0; k < DG_BFS_BU_CHUNK; ++k) vs[k] = (p + k < e) ? t_indices[p + k] : -1;
#pragma unroll
    for (int k = 0; k < DG_BFS_BU_CHUNK; ++k) fw[k] = (vs[k] >= 0) ? fcur[vs[k] >> 5] : 0u;
    bool hit = false;
#pragma unroll
    for (int k = 0; k < DG_BFS_BU_CHUNK; ++k)
        if ((fw[k] >> (vs[k] & 31)) & 1u) hit = true;
    return hit;
}

#if DG_BFS_BU_LIST
// Position of the r-th (0-based) set bit of m; r < popc(m).
__device__ __forceinline__ int dg_nth_bit(unsigned m, int r) {
    int pos = 0;
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) {
        const int c = __popc(m & ((1u << s) - 1u));
        if (r >= c) { r -= c; m >>= s; pos += s; }
    }
    return pos;
}

// Bottom-up level (Alg. 4) with a work list per warp (DG_BFS_BU_LIST): the warp walks its
// words (groups of DG_BFS_BU_GROUP consecutive words, grid-strided) and hands their unvisited
// vertices to lanes as lanes fall idle, so a lane whose vertex found a parent (or ran out of
// in-arcs) takes the next vertex at once instead of waiting for the warp's longest scan, as
// one vertex per lane does.  Found vertices are ORed into Vnext with one atomic per word per
// round (lanes grouped by __match_any_sync).
__device__ __forceinline__ void dg_bottom_up_list(unsigned lane, int warp, int nwarps, int n, int nw,
                                                  const long long *__restrict__ t_indptr,
                                                  const int *__restrict__ t_indices, const unsigned *fcur,
                                                  const unsigned *vcur, unsigned *vnext) {
    const int G = DG_BFS_BU_GROUP;
    const unsigned lt = (1u << lane) - 1u;
    int gbase = warp * G, goff = 0;
    bool more = gbase < nw;
    auto unvis = [&](int w) -> unsigned {
        const unsigned valid = (w == nw - 1 && (n & 31)) ? ((1u << (n & 31)) - 1u) : DG_FULL_MASK;
        return ~vcur[w] & valid;
    };
    unsigned supply = more ? unvis(gbase) : 0u;
    int u = -1;
    long long p = 0, e = 0;
    for (;;) {
        unsigned need = __ballot_sync(DG_FULL_MASK, u < 0);
        while (need && more) {
            if (supply == 0u) {
                if (++goff == G) { goff = 0; gbase += nwarps * G; }
                const int w = gbase + goff;
                if (w >= nw) { more = false; break; }
                supply = unvis(w);
                continue;
            }
            const int avail = __popc(supply), want = __popc(need);
            const int r = __popc(need & lt);
            if (((need >> lane) & 1u) && r < avail) {
                u = (gbase + goff) * 32 + dg_nth_bit(supply, r);
                p = t_indptr[u];
                e = t_indptr[u + 1];
            }
            supply = (want >= avail) ? 0u : (supply & ~((1u << dg_nth_bit(supply, want)) - 1u));
            need = __ballot_sync(DG_FULL_MASK, u < 0);
        }
        if (__ballot_sync(DG_FULL_MASK, u >= 0) == 0u) break;  // no vertex left anywhere
        bool hit = false;
        if (u >= 0) {
            hit = dg_bu_round(p, e, t_indices, fcur);
            p += DG_BFS_BU_CHUNK;
        }
        const unsigned hits = __ballot_sync(DG_FULL_MASK, hit);
        if (hit) {
            const int w = u >> 5;
            const unsigned grp = __match_any_sync(hits, w);
            const unsigned bits = __reduce_or_sync(grp, 1u << (u & 31));
            if ((int)lane == __ffs(grp) - 1) atomicOr(vnext + w, bits);
        }
        if (u >= 0 && (hit || p >= e)) u = -1;
    }
}
#endif

template <int KIND>
__device__ __forceinline__ void dg_bfs_persistent(const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks,
                                                  const int *__restrict__ real_ptrs, const int *__restrict__ v2r,
                                                  const long long *__restrict__ t_indptr,
                                                  const int *__restrict__ t_indices, int n, int mode, int eta,
                                                  float alpha, int tiny, int source, int *level, unsigned *F, unsigned *V,
                                                  int2 *Q, int qcap, int *ctr, int *sslev) {
    cg::grid_group grid = cg::this_grid();
    const int nthreads = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;
    const int warp = tid >> 5, nwarps = nthreads >> 5;
    const int nw = (n + 31) >> 5;
    // 0 direct, 1 lazy, 2 lazy + switching (fixed at compile time by KIND 1; KIND 2 needs
    // mode & 3 != 0)
    const int upd = (KIND == 1) ? 0 : (mode & 3);
    const bool filter = (mode & 4) != 0;      // lazy: skip rows already visited (Vcur)
    // direct: 0 new, 1 session 1, 2 bitmap
    const int scheme = (KIND == 2) ? 0 : ((mode & 8) ? 1 : ((mode & 16) ? 2 : 0));
    unsigned *vcur = V, *vnext = V + nw;
    volatile int *vctr = ctr;
    // mode 2: in-arcs of the frontier of level l in arcs[l & 3], of every vertex visited so
    // far in arcs[4] (64-bit, ctr[32..41]; for the edge test that guards Eq. 6, see stage 1)
    unsigned long long *arcs = reinterpret_cast<unsigned long long *>(ctr + 32);
    volatile unsigned long long *varcs = arcs;

    // ---- init (Alg. 2/3 lines 1-5)
    for (int i = tid; i < n; i += nthreads) level[i] = -1;
    for (int i = tid; i < 3 * nw; i += nthreads) F[i] = 0u;
    for (int i = tid; i < 2 * nw; i += nthreads) V[i] = 0u;
    if (scheme == 2)
        for (int i = tid; i < (n + 7) >> 3; i += nthreads) sslev[i] = 0;
    if (tid < DG_BFS_NCTR) ctr[tid] = 0;
    grid.sync();
    {
        int ss = source >> 3;
        int s = real_ptrs[ss], e = real_ptrs[ss + 1];
        for (int i = tid; i < e - s; i += nthreads) Q[1 * qcap + i] = make_int2(s + i, ss);
        if (tid == 0) {
            unsigned bit = 1u << (source & 31);
            level[source] = 0;
            F[(upd == 0 ? 1 : 0) * nw + (source >> 5)] = bit;
            vcur[source >> 5] = bit; vnext[source >> 5] = bit;
            ctr[1] = e - s;       // queue length of level 1
            ctr[4 + 1] = n - 1;   // unvisited before level 1
            if (upd == 2) {
                const unsigned long long d0 = (unsigned long long)(t_indptr[source + 1] - t_indptr[source]);
                arcs[1] = d0;
                arcs[4] = d0;
            }
        }
    }
    grid.sync();

    int l = 1;
    for (;; ++l) {
        const int2 *qc = Q + (l % 3) * qcap;
        // this warp's first queue entry, loaded before the queue length is known (one
        // round trip less per level; an entry past the length is never used)
        int2 q0 = make_int2(0, 0);
        if (KIND != 2 && warp < qcap) q0 = __ldcg(qc + warp);
        const int nq = vctr[l & 3];
        DG_BFS_STAMP(l, nq, (KIND != 2 && upd == 0) ? ((nq <= tiny) ? 3 : 0) : 1);
        if (nq == 0) break;
        int2 *qn = Q + ((l + 1) % 3) * qcap;
        int *qn_size = ctr + ((l + 1) & 3);

        if (KIND != 2 && upd == 0 && nq <= tiny) {
            // ---- small levels on block 0 alone (see `tiny` at the top).  Block 0 keeps
            // its queue lengths in ctr[16..19] (same rotation as ctr[0..3]): the other
            // blocks may still be reading ctr[l&3], so ctr[0..3] are written back only
            // after every other block has checked in (ctr[14]), which by then they have.
            if (blockIdx.x == 0) {
                int *bc = ctr + 16;
                volatile int *vbc = bc;
                if (threadIdx.x == 0) {
                    bc[l & 3] = nq;
                    bc[(l + 1) & 3] = 0;
                    bc[(l + 3) & 3] = vctr[(l + 3) & 3];
                }
                __syncthreads();
                const int bw = (int)(threadIdx.x >> 5), nbw = (int)(blockDim.x >> 5);
                int lb = l, nb = nq;
                for (;;) {
                    const int2 *qcb = Q + (lb % 3) * qcap;
                    int2 q0b = make_int2(0, 0);
                    if (bw < nb) q0b = __ldcg(qcb + bw);
                    const int nold = vbc[(lb + 3) & 3];
                    if (threadIdx.x == 0) bc[(lb + 2) & 3] = 0;
                    dg_direct_level(lb, nb, q0b, bw, nbw, (int)threadIdx.x, (int)blockDim.x, lane, scheme,
                                    row_ids, masks, real_ptrs, level, F, nw, qcb, Q + ((lb + 1) % 3) * qcap,
                                    bc + ((lb + 1) & 3), Q + ((lb + 2) % 3) * qcap, nold, vcur, sslev);
                    __syncthreads();
                    ++lb;
                    nb = vbc[lb & 3];
                    __syncthreads();
                    if (nb == 0 || nb > tiny) break;
                }
                if (threadIdx.x == 0) {
                    while (vctr[14] < (int)gridDim.x - 1) { }
                    ctr[14] = 0;
                    ctr[lb & 3] = nb;
                    ctr[(lb + 1) & 3] = 0;
                    ctr[(lb + 3) & 3] = vbc[(lb + 3) & 3];
                    __threadfence();
                    atomicExch(ctr + 13, lb);  // release: the grid resumes at level lb
                }
            } else if (threadIdx.x == 0) {
                atomicAdd(ctr + 14, 1);        // read ctr[l&3]; block 0 may now reuse it
                while (vctr[13] <= l) __nanosleep(64);
            }
            grid.sync();
            l = vctr[13] - 1;  // the loop's ++l resumes at level ctr[13]
            continue;
        }
        if (tid == 0) { ctr[(l + 2) & 3] = 0; ctr[4 + ((l + 2) & 3)] = 0; arcs[(l + 2) & 3] = 0ull; }

        if (KIND != 2 && upd == 0) {
            // ---- Alg. 2: tensor-core products with direct updates, one phase per level.
            // Frontier buffers rotate: F[l%3] is read, F[(l+1)%3] written, and F[(l+2)%3]
            // (the frontier of level l-1, not read any more) is cleared for level l+1
            // through the queue of level l-1, Q[(l+2)%3], of length ctr[(l+3)&3].
            dg_direct_level(l, nq, q0, warp, nwarps, tid, nthreads, lane, scheme, row_ids, masks, real_ptrs,
                            level, F, nw, qc, qn, qn_size, Q + ((l + 2) % 3) * qcap, vctr[(l + 3) & 3], vcur,
                            sslev);
            grid.sync();
            continue;
        }

        // ---- Stage 1 (Alg. 3 lazy marking, or Alg. 4 bottom-up when Eq. 6 holds)
        unsigned *fcur = F;  // rewritten by stage 2 every level
        const int unvisited = vctr[4 + (l & 3)];
        bool bottom_up = (upd == 2) && ((long long)unvisited < (long long)eta * nq);
        if (bottom_up && alpha > 0.0f) {
            // Edge test (not in BLEST; Beamer's direction-optimizing idea with an estimate of
            // the bottom-up work): an unvisited vertex stops scanning at its first in-arc from
            // the frontier, a fraction mf / m of all arcs, so the pass scans about
            // min(mu, unvisited * m / mf) arcs (mu: in-arcs of unvisited vertices); it runs
            // when that is at most alpha * mf, the arcs a top-down level would touch.  On
            // urand:24 Eq. 6 alone went bottom-up at a level whose frontier is 6% of the
            // vertices: 2.3-2.6 ms against 0.84-0.99 ms top-down (4 sources, gpu_bfs_levels.json).
            const double m = (double)t_indptr[n];
            const double mf = (double)varcs[l & 3];
            const double mu = m - (double)varcs[4];
            const double est = mf > 0.0 ? fmin(mu, (double)unvisited * m / mf) : mu;
            bottom_up = est <= (double)alpha * mf;
        }
        if (!bottom_up) {
            for (int w = warp; w < nq; w += nwarps) {
                const int2 q = (KIND == 2 || w != warp) ? qc[w] : q0;
                const int vss = q.x;
                const unsigned alpha = ((const unsigned char *)fcur)[q.y];
                const int4 u = row_ids[vss * 32 + lane];
                const unsigned mk = masks[vss * 32 + lane];
                int d0, d1, d2, d3;
                dg_vss_products(mk, alpha, lane, d0, d1, d2, d3);
                if (filter) {
                    d0 = d0 && !((vcur[u.x >> 5] >> (u.x & 31)) & 1u);
                    d1 = d1 && !((vcur[u.y >> 5] >> (u.y & 31)) & 1u);
                    d2 = d2 && !((vcur[u.z >> 5] >> (u.z & 31)) & 1u);
                    d3 = d3 && !((vcur[u.w >> 5] >> (u.w & 31)) & 1u);
                }
                dg_lazy_mark(u.x, d0, vnext);
                dg_lazy_mark(u.y, d1, vnext);
                dg_lazy_mark(u.z, d2, vnext);
                dg_lazy_mark(u.w, d3, vnext);
            }
        } else {
            if (tid == 0) ctr[9] += 1;
            DG_BFS_KIND(l, 2);
#if DG_BFS_BU_LIST
            dg_bottom_up_list(lane, warp, nwarps, n, nw, t_indptr, t_indices, fcur, vcur, vnext);
#else
            for (int w = warp; w < nw; w += nwarps) {
                const unsigned unvis = ~vcur[w];
                const int u = w * 32 + (int)lane;
                bool found = false;
                if (((unvis >> lane) & 1u) && u < n) {
                    // DG_BFS_BU_CHUNK in-arcs per round: their loads, then their frontier
                    // words, are issued together, so a round costs two memory round trips
                    // whatever the chunk; one arc per round (chunk 1, BLEST's loop) made a
                    // warp wait for its longest scan one arc-latency chain at a time.
                    const long long e = t_indptr[u + 1];
                    for (long long p = t_indptr[u]; p < e && !found; p += DG_BFS_BU_CHUNK)
                        found = dg_bu_round(p, e, t_indices, fcur);
                }
                const unsigned bal = __ballot_sync(DG_FULL_MASK, found);
                if (lane == 0 && bal) vnext[w] |= bal;  // this warp owns word w
            }
#endif
        }
        grid.sync();

        // ---- Stage 2: frontier finalization (Alg. 3 lines 33-53), one word per thread
        unsigned long long unv = 0, newarcs = 0;
        for (int base = warp * 32; base < nw; base += nwarps * 32) {
            const int t = base + (int)lane;
            unsigned diff = 0u;
            if (t < nw) {
                const unsigned nx = vnext[t];
                diff = vcur[t] ^ nx;
                fcur[t] = diff;
                if (diff) vcur[t] = nx;
                const unsigned valid = (t == nw - 1 && (n & 31)) ? ((1u << (n & 31)) - 1u) : DG_FULL_MASK;
                unv += (unsigned)__popc(~nx & valid);
                for (unsigned d = diff; d; d &= d - 1u) level[t * 32 + __ffs(d) - 1] = l;
                if (upd == 2 && alpha > 0.0f) {
                    // in-arcs of the new vertices: one difference of t_indptr per run of
                    // consecutive new vertices (a full word: two loads instead of 64)
                    for (unsigned d = diff; d;) {
                        const int b0 = __ffs(d) - 1;
                        const unsigned ones = ~(d >> b0);
                        const int len = ones ? __ffs(ones) - 1 : 32;
                        const int u0 = t * 32 + b0;
                        newarcs += (unsigned long long)(t_indptr[u0 + len] - t_indptr[u0]);
                        d = (len == 32) ? 0u : (d & ~(((1u << len) - 1u) << b0));
                    }
                }
            }
            // enqueue the VSSs of every slice set (byte of diff) that gained a vertex
            unsigned cnt = 0;
            if (diff) {
                for (int k = 0; k < 4; ++k)
                    if ((diff >> (8 * k)) & 0xffu) cnt += real_ptrs[4 * t + k + 1] - real_ptrs[4 * t + k];
            }
            const unsigned incl = dg_warp_inclusive_scan(cnt);
            const unsigned total = __shfl_sync(DG_FULL_MASK, incl, 31);
            int pos0 = 0;
            if (lane == 31 && total) pos0 = atomicAdd(qn_size, (int)total);
            pos0 = __shfl_sync(DG_FULL_MASK, pos0, 31);
            if (cnt) {
                int p = pos0 + (int)(incl - cnt);
                for (int k = 0; k < 4; ++k) {
                    if ((diff >> (8 * k)) & 0xffu) {
                        const int e = real_ptrs[4 * t + k + 1];
                        for (int v = real_ptrs[4 * t + k]; v < e; ++v) qn[p++] = make_int2(v, 4 * t + k);
                    }
                }
            }
        }
        unv = dg_warp_sum(unv);
        if (lane == 0 && unv) atomicAdd(ctr + 4 + ((l + 1) & 3), (int)unv);
        if (upd == 2 && alpha > 0.0f) {
            newarcs = dg_warp_sum(newarcs);
            if (lane == 0 && newarcs) {
                atomicAdd(arcs + ((l + 1) & 3), newarcs);
                atomicAdd(arcs + 4, newarcs);
            }
        }
        grid.sync();
    }
    if (tid == 0) ctr[8] = l - 1;
}

#define DG_BFS_ARGS                                                                                        \
    const int4 *__restrict__ row_ids, const unsigned *__restrict__ masks, const int *__restrict__ real_ptrs, \
        const int *__restrict__ v2r, const long long *__restrict__ t_indptr, const int *__restrict__ t_indices, \
        int n, int mode, int eta, float alpha, int tiny, int source, int *level, unsigned *F, unsigned *V,      \
        int2 *Q, int qcap, int *ctr, int *sslev
#define DG_BFS_PASS row_ids, masks, real_ptrs, v2r, t_indptr, t_indices, n, mode, eta, alpha, tiny, source, level, \
                    F, V, Q, qcap, ctr, sslev

extern "C" __global__ void __launch_bounds__(DG_BFS_BLOCK, DG_BFS_MIN_BLOCKS)
distgraph_bfs_persistent(DG_BFS_ARGS) { dg_bfs_persistent<0>(DG_BFS_PASS); }

extern "C" __global__ void __launch_bounds__(DG_BFS_BLOCK, DG_BFS_MIN_BLOCKS)
distgraph_bfs_direct(DG_BFS_ARGS) { dg_bfs_persistent<1>(DG_BFS_PASS); }

extern "C" __global__ void __launch_bounds__(DG_BFS_BLOCK, DG_BFS_MIN_BLOCKS)
distgraph_bfs_lazy(DG_BFS_ARGS) { dg_bfs_persistent<2>(DG_BFS_PASS); }

extern "C" __global__ void __launch_bounds__(256)
distgraph_bfs_parents(const long long *__restrict__ t_indptr, const int *__restrict__ t_indices,
                      const int *__restrict__ level, int n, int source, long long *parent) {
    const unsigned lane = threadIdx.x & 31u;
    const int nthreads = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    // every lane of a warp runs the same number of rounds (warp-uniform loop bound)
    for (int base = tid - (int)lane; base < n; base += nthreads) {
        const int v = base + (int)lane;
        long long par = -1, p = 0, e = 0;
        int want = -2;
        bool open = false;
        if (v < n) {
            const int lv = level[v];
            if (v == source) {
                par = source;
            } else if (lv > 0) {
                want = lv - 1;
                p = t_indptr[v];
                e = t_indptr[v + 1];
                const long long stop = (e - p > DG_PAR_SERIAL) ? p + DG_PAR_SERIAL : e;
                for (; p < stop; ++p) {
                    const int u = t_indices[p];
                    if (level[u] == want) { par = u; break; }
                }
                open = (par < 0) && p < e;  // not found among the first ones: warp scan below
            }
        }
        unsigned pending = __ballot_sync(DG_FULL_MASK, open);
        while (pending) {
            const int src_lane = __ffs(pending) - 1;
            pending &= pending - 1u;
            const long long pp = __shfl_sync(DG_FULL_MASK, p, src_lane);
            const long long ee = __shfl_sync(DG_FULL_MASK, e, src_lane);
            const int ww = __shfl_sync(DG_FULL_MASK, want, src_lane);
            long long found = -1;
            for (long long b = pp; b < ee; b += 32) {
                const long long i = b + lane;
                const bool hit = (i < ee) && level[t_indices[i]] == ww;
                const unsigned bal = __ballot_sync(DG_FULL_MASK, hit);
                if (bal) {
                    found = __shfl_sync(DG_FULL_MASK, (long long)(i < ee ? t_indices[i] : 0), __ffs(bal) - 1);
                    break;
                }
            }
            if ((int)lane == src_lane) par = found;
        }
        if (v < n) parent[v] = par;
    }
}
