// msbfs_wave.cu -- closeness sums of 256-source batches on undirected graphs by a distance-profile
// wave (prototype, distgraph/backends/gpu/msbfs_wave.py; host model benchmarks/msbfs_profile_model.py).
//
// The bit-parallel MS-BFS (msbfs.cu) visits a vertex once per level that brings it new bits: on
// road networks about 20 times per batch of sources in a compact ball. Here a vertex v is visited
// once, at its base level b(v) = min_s d(s, v) (a BFS from all the batch's sources at once), and
// holds its profile: 256 bytes, byte c = d(srcs[c], v) - b(v) (255: not reached). Neighbours'
// bases differ by at most one, so a neighbour u offers v the offsets of u plus b(u) + 1 - b(v)
// in {0, 1, 2}, added with byte saturation (__vaddus4) and combined by byte minimum (__vminu4),
// four sources per 32-bit word, a group of 8 lanes per vertex (lane q: words 8q .. 8q + 7, two
// 16-byte loads), four groups per warp; a group reads its vertex's neighbour ids and bases a lane
// each and loads up to WV_NB neighbour profiles at once (the first version, a warp per vertex and
// one neighbour after another, spent about 90 us per level on road-NY in dependent loads).
//
// Level L + 1 of a batch: (1) pull: each vertex of the level takes the minimum over its
// neighbours of base L, and gives its neighbours without a base base L + 2 (atomicCAS), appended
// to the order list (discovery; level 1's from the sources, before); (2) push: each vertex of the
// level offers its profile to every neighbour pulled already (levels <= L + 1), by a per-word CAS loop of byte minima; a
// neighbour so lowered goes on a worklist (a flag per vertex dedups), and the worklist's
// vertices push in turn, round after round, until no profile changes. Every arc between visited
// vertices is thus consistent when the wave moves on (a label-correcting search ordered by
// base). A pull may read a profile that a later push lowers; that push then reaches the puller
// too (it has a base by then), so the exactness comes from the push-back: at the end every arc
// is consistent and the profiles are the exact distances. Level 0: the sources (offset 0 at their
// own byte), then their push rounds.
//
// Finite offsets are kept at 254 at most while the wave runs (min(254, x) of an upper bound is an
// upper bound, and the fixed point is min(254, the true offset): along a shortest path each step
// adds s >= 0). An offset of 254 may stand for more: the batch (sources far apart, or a temporary
// upper bound) stops at the end of the level where a push first writes one over a 255, adds
// nothing, and runs another way (the host's bit-parallel kernel, or two halves with 2-byte
// offsets); the sums pass checks the final offsets for 254 too. Then the per-source sums, a thread
// per SPT bytes (sources) reading them from every visited vertex (coalesced, the vertices
// staged in shared memory): farness, reach and the harmonic sum of round(2^64 / d) (recip[d];
// 2^64 for d = 1) in three 32-bit limbs (top, mid, lo: the host's h0, h1, h2, a value of
// h0 + h1 / 2^32 + h2 / 2^64), added at the source vertex (the symmetric sums of msbfs.cu's
// per_source mode 2: over all sources they are the per-vertex sums).
//
// State per slot (a block): prof[n * 64] words (a vertex's written whole before it is read, by
// the sources' set-up or by its pull: never reset), base[n] (-1 between batches: reset after the
// sums), order[n], wl[2 * n], inwl[n] (0 between batches).

#include "common.cuh"  // dg_recip_fixed

typedef long long wv_i64;
typedef unsigned long long wv_u64;

#ifndef DG_WV_BLOCK
#define DG_WV_BLOCK 512
#endif
#ifndef DG_WV_MINB
#define DG_WV_MINB 1  // resident blocks per SM the registers are capped for (batches at once per SM)
#endif
#ifndef DG_WV_UNR
#define DG_WV_UNR 8  // visited vertices in flight per thread in the sums pass
#endif
#ifndef DG_WV_SPT
#define DG_WV_SPT 4  // sources per thread in the sums pass: 1, 2 or 4 (bytes of one load)
#endif
#ifndef DG_WV_NB
#define DG_WV_NB 4  // neighbours whose profiles a group loads at once
#endif
#define WV_FULL 0xffffffffu
#define WV_NB DG_WV_NB
#define WV_SCH 512          // visited vertices staged in shared memory per chunk of the sums pass
#ifndef DG_WV_RSH
#define DG_WV_RSH 2048  // entries of the reciprocal table kept in shared memory (16 KB; 0: none)
#endif
#ifndef DG_WV_FSUMS
#define DG_WV_FSUMS 1  // the sums pass's fast path (1-byte offsets, none 254 or 255, base in the
                       // shared table; compiled only with DG_WV_RSH >= 512)
#endif
#ifndef DG_WV_ELL
#define DG_WV_ELL 0  // ell: a vertex's first 8 neighbours (-1 past its degree), read beside indptr
#endif
#ifndef DG_WV_GSYNC
#define DG_WV_GSYNC 1  // a group __syncwarp between the CAS loops and lane 0's worklist flag
#endif

// A lane's quarter of a profile: words 8q .. 8q + 7 of the 64 (q: the lane in its group of 8).
struct wv8 {
    uint4 a, b;
};

__device__ __forceinline__ wv8 wv_load(const unsigned* P, int v, unsigned q) {
    const uint4* p = reinterpret_cast<const uint4*>(P + (wv_i64)v * 64) + 2 * q;
    wv8 r;
    r.a = __ldcg(p);
    r.b = __ldcg(p + 1);
    return r;
}

__device__ __forceinline__ void wv_store(unsigned* P, int v, unsigned q, const wv8& x) {
    uint4* p = reinterpret_cast<uint4*>(P + (wv_i64)v * 64) + 2 * q;
    __stcg(p, x.a);
    __stcg(p + 1, x.b);
}

// Offsets of W bytes (1: 256 sources per profile, 4 per word; 2: 128 sources, 2 per word, for a
// batch whose byte offsets overflowed): the SIMD-within-a-word minimum, saturating add, equality.
template <int W>
__device__ __forceinline__ unsigned wv_vmin(unsigned x, unsigned y) {
    return W == 1 ? __vminu4(x, y) : __vminu2(x, y);
}
template <int W>
__device__ __forceinline__ unsigned wv_vadd(unsigned x, unsigned y) {
    return W == 1 ? __vaddus4(x, y) : __vaddus2(x, y);
}
template <int W>
__device__ __forceinline__ unsigned wv_veq(unsigned x, unsigned y) {
    return W == 1 ? __vcmpeq4(x, y) : __vcmpeq2(x, y);
}
// finite offsets are kept at 254 (W = 1) or 65534 (W = 2) at most while the wave runs
template <int W>
__device__ __forceinline__ constexpr unsigned wv_cap() {
    return W == 1 ? 0xfefefefeu : 0xfffefffeu;
}
template <int W>
__device__ __forceinline__ constexpr unsigned wv_ones() {
    return W == 1 ? 0x01010101u : 0x00010001u;
}

template <int W>
__device__ __forceinline__ uint4 wv_min(uint4 x, uint4 y) {
    return make_uint4(wv_vmin<W>(x.x, y.x), wv_vmin<W>(x.y, y.y), wv_vmin<W>(x.z, y.z), wv_vmin<W>(x.w, y.w));
}

// offsets of a neighbour one side of an arc: + s (0, 1, 2) per field, finite ones kept <= the cap
template <int W>
__device__ __forceinline__ unsigned wv_shift1(unsigned w, unsigned s4) {
    return wv_vmin<W>(wv_vadd<W>(w, s4), wv_cap<W>()) | wv_veq<W>(w, WV_FULL);
}

template <int W>
__device__ __forceinline__ uint4 wv_shift(uint4 w, unsigned s4) {
    return make_uint4(wv_shift1<W>(w.x, s4), wv_shift1<W>(w.y, s4), wv_shift1<W>(w.z, s4), wv_shift1<W>(w.w, s4));
}

// bytes where candidate c holds 254 and the word last seen, old, holds 255 (W = 1)
__device__ __forceinline__ unsigned wv_cap254(unsigned c, unsigned old) {
    return __vcmpeq4(c, 0xfefefefeu) & __vcmpeq4(old, WV_FULL);
}

// *p = fieldwise min(*p, c), *p last seen as old (an upper bound: the words only go down); true if
// lowered.  W = 1: a byte of 254 written over a 255 (finite offsets are at most 254, so a 254 where
// there was none) sets *s_clamp: the batch gives up its bytes (a candidate of 254 that lowers
// nothing, such as an offset pushed back to the vertex it came from, does not).  Checked on the
// word the CAS replaced, so only where a push writes (rare: the fixes), not per candidate.
template <int W>
__device__ __forceinline__ bool wv_lower(unsigned* p, unsigned old, unsigned c, int* s_clamp) {
    unsigned nv = wv_vmin<W>(old, c);
    while (nv != old) {
        const unsigned prev = atomicCAS(p, old, nv);
        if (prev == old) {
            if (W == 1 && wv_cap254(c, old)) *(volatile int*)s_clamp = 1;
            return true;
        }
        old = prev;
        nv = wv_vmin<W>(old, c);
    }
    return false;
}

template <int W>
__device__ __forceinline__ bool wv_lower4(unsigned* p, uint4 o, uint4 c, int* s_clamp) {
    bool ch = wv_lower<W>(p, o.x, c.x, s_clamp);
    ch = wv_lower<W>(p + 1, o.y, c.y, s_clamp) || ch;
    ch = wv_lower<W>(p + 2, o.z, c.z, s_clamp) || ch;
    return wv_lower<W>(p + 3, o.w, c.w, s_clamp) || ch;
}

// Lane q's entry of v's ELL row (its first 8 neighbours, -1 past its degree), read beside the arc
// range rather than after it (DG_WV_ELL; -1 without it), and lane q's neighbour among the arcs
// [eb, eb + 8) of the vertex whose arcs start at e0: the first 8 from that row.
__device__ __forceinline__ int wv_ell_row(const int* __restrict__ ell, int v, unsigned q) {
#if DG_WV_ELL
    return ell[(wv_i64)v * 8 + q];
#else
    (void)ell, (void)v, (void)q;
    return -1;
#endif
}

__device__ __forceinline__ int wv_arc(const int* __restrict__ indices, int x0, wv_i64 eb, wv_i64 e0, unsigned q) {
#if DG_WV_ELL
    return eb == e0 ? x0 : indices[eb + q];
#else
    (void)x0, (void)e0;
    return indices[eb + q];
#endif
}

// Group (8 lanes, mask gm) offers the profile of v to v's neighbours with a base of at most lmax
// (pulled already; those of the next level are discovered but not pulled); those lowered go on
// list out (a flag per vertex dedups).  The neighbours' ids and bases are read a lane each,
// their profiles WV_NB at a time; a word is written (CAS) only where it goes down.
template <int W>
__device__ __forceinline__ void wv_push(int v, const wv_i64* __restrict__ indptr, const int* __restrict__ indices,
                                        const int* __restrict__ ell,
                                        unsigned* P, const int* B, int* inwl, int* out, unsigned* out_n,
                                        unsigned gm, unsigned q, int* s_clamp, int lmax) {
    const wv8 w = wv_load(P, v, q);
    const int bv = B[v];
    const wv_i64 e0 = indptr[v], e1 = indptr[v + 1];
    const int x0 = wv_ell_row(ell, v, q);
    for (wv_i64 eb = e0; eb < e1; eb += 8) {
        const int m = (int)min((wv_i64)8, e1 - eb);
        int x = -1, bx = -1;
        if ((int)q < m) {
            x = wv_arc(indices, x0, eb, e0, q);
            bx = x == v ? -1 : B[x];
        }
        for (int j = 0; j < m; j += WV_NB) {
            int xs[WV_NB];
            unsigned s4[WV_NB];
            wv8 o[WV_NB];
#pragma unroll
            for (int k = 0; k < WV_NB; ++k) {
                const int xk = __shfl_sync(gm, x, (j + k) & 7, 8), bk = __shfl_sync(gm, bx, (j + k) & 7, 8);
                xs[k] = j + k < m && bk >= 0 && bk <= lmax ? xk : -1;  // pulled already
                s4[k] = (unsigned)(bv + 1 - bk) * wv_ones<W>();
                if (xs[k] >= 0) o[k] = wv_load(P, xs[k], q);
            }
#pragma unroll
            for (int k = 0; k < WV_NB; ++k) {
                if (xs[k] < 0) continue;  // group-uniform
                unsigned* px = P + (wv_i64)xs[k] * 64 + 8 * q;
                const uint4 ca = wv_shift<W>(w.a, s4[k]), cb = wv_shift<W>(w.b, s4[k]);
                bool ch = wv_lower4<W>(px, o[k].a, ca, s_clamp);
                ch = wv_lower4<W>(px + 4, o[k].b, cb, s_clamp) || ch;
                const bool any = __any_sync(gm, ch);
#if DG_WV_GSYNC
                __syncwarp(gm);  // the group's CAS results before lane 0 flags the vertex
#endif
                if (any && q == 0u) {
                    __threadfence_block();  // a slot's state is its block's alone
                    if (atomicExch(inwl + xs[k], 1) == 0) out[atomicAdd(out_n, 1u)] = xs[k];
                }
            }
        }
    }
}

// Group: the profile of a new vertex v of level L + 1, the byte minimum over its neighbours of
// level L; its neighbours without a base get level L + 2 and go on the order list.
template <int W>
__device__ __forceinline__ void wv_pull(int v, int L, const wv_i64* __restrict__ indptr,
                                        const int* __restrict__ indices, const int* __restrict__ ell, unsigned* P, int* B,
                                        unsigned gm,
                                        unsigned q, int* O, unsigned* cnt) {
    wv8 acc;
    acc.a = acc.b = make_uint4(WV_FULL, WV_FULL, WV_FULL, WV_FULL);
    const wv_i64 e0 = indptr[v], e1 = indptr[v + 1];
    const int x0 = wv_ell_row(ell, v, q);
    for (wv_i64 eb = e0; eb < e1; eb += 8) {
        const int m = (int)min((wv_i64)8, e1 - eb);
        int x = -1;
        if ((int)q < m) {
            x = wv_arc(indices, x0, eb, e0, q);
            const int bx = B[x];
            // a neighbour without a base is at level L + 2: discovered here (one pass and one
            // barrier less per level than a discovery pass of its own)
            if (bx < 0 && atomicCAS(B + x, -1, L + 2) == -1) O[atomicAdd(cnt, 1u)] = x;
            if (bx != L) x = -1;
        }
        for (int j = 0; j < m; j += WV_NB) {
            wv8 o[WV_NB];
#pragma unroll
            for (int k = 0; k < WV_NB; ++k) {
                const int xk = __shfl_sync(gm, x, (j + k) & 7, 8);
                o[k].a = o[k].b = make_uint4(WV_FULL, WV_FULL, WV_FULL, WV_FULL);
                if (j + k < m && xk >= 0) o[k] = wv_load(P, xk, q);
            }
#pragma unroll
            for (int k = 0; k < WV_NB; ++k) {
                acc.a = wv_min<W>(acc.a, o[k].a);
                acc.b = wv_min<W>(acc.b, o[k].b);
            }
        }
    }
    wv_store(P, v, q, acc);
}

// Push the vertices order[lo, hi) (base lmax), then the worklist rounds until no profile changes
// (block).  Round r >= 1 reads list (r - 1) & 1 of s_wn[(r - 1) % 3] entries, writes list r & 1
// counting in s_wn[r % 3] (zeroed in round r - 1) and zeroes s_wn[(r + 1) % 3] (read in round
// r - 1, before its barrier): one barrier per round.  s_wn[0..2] are 0 at entry and at exit.
template <int W>
__device__ void wv_push_level(const int* O, int lo, int hi, const wv_i64* __restrict__ indptr,
                              const int* __restrict__ indices, const int* __restrict__ ell, unsigned* P, const int* B,
                              int* inwl, int* wl, int n,
                              unsigned* s_wn, unsigned long long* s_rounds, unsigned long long* s_fixes,
                              int* s_clamp, int lmax) {
    const unsigned lane = threadIdx.x & 31u, q = lane & 7u, gm = 0xffu << (lane & 24u);
    const int grp = threadIdx.x >> 3, ngrp = blockDim.x >> 3;
    for (int i = lo + grp; i < hi; i += ngrp)
        wv_push<W>(O[i], indptr, indices, ell, P, B, inwl, wl, &s_wn[0], gm, q, s_clamp, lmax);
    __syncthreads();
    for (int r = 1;; ++r) {
        const int k = (int)*(volatile unsigned*)&s_wn[(r - 1) % 3];
        if (k == 0) break;  // block-uniform
        if (threadIdx.x == 0) {
            s_wn[(r + 1) % 3] = 0u;
            *s_rounds += 1ull;
            *s_fixes += (unsigned long long)k;
        }
        const int* in = wl + (wv_i64)((r - 1) & 1) * n;
        int* out = wl + (wv_i64)(r & 1) * n;
        for (int i = grp; i < k; i += ngrp) {
            const int x = in[i];
            if (q == 0u) {
                atomicExch(inwl + x, 0);
                __threadfence_block();
            }
            __syncwarp(gm);
            wv_push<W>(x, indptr, indices, ell, P, B, inwl, out, &s_wn[r % 3], gm, q, s_clamp, lmax);
        }
        __syncthreads();
    }
    // every thread has read the zero count; the other two may be left over from the last rounds
    if (threadIdx.x == 0) s_wn[0] = s_wn[1] = s_wn[2] = 0u;
}

// A block's shared state (one slot).
struct wv_shared {
    unsigned cnt, wn[3];
    int clamp;                         // W = 1: an offset reached 254 (the batch stops, to run with 2 bytes)
    unsigned long long rounds, fixes;  // worklist rounds run, vertices pushed again
    long long t0, t_wave, t_sums;      // thread 0: cycles in the wave, in the sums
    int v[WV_SCH], b[WV_SCH];
#if DG_WV_RSH > 0
    wv_u64 recip[DG_WV_RSH];           // round(2^64 / d) for d < DG_WV_RSH (the first entries of the table)
#endif
};

// round(2^64 / d): from shared memory for d < DG_WV_RSH, else the global table, else computed
__device__ __forceinline__ wv_u64 wv_recip(wv_u64 d, const wv_shared& sh, const wv_u64* __restrict__ recip,
                                           int rmax) {
#if DG_WV_RSH > 0
    if (d < (wv_u64)DG_WV_RSH) return sh.recip[d];
#endif
    return d < (wv_u64)rmax ? __ldg(recip + d) : dg_recip_fixed(d);
}

// h[0..2] (lo, mid, top: 32-bit limbs of a 96-bit sum) += t
__device__ __forceinline__ void wv_acc(unsigned* h, wv_u64 t) {
    asm("add.cc.u32 %0, %0, %3;\n\taddc.cc.u32 %1, %1, %4;\n\taddc.u32 %2, %2, 0;"
        : "+r"(h[0]), "+r"(h[1]), "+r"(h[2])
        : "r"((unsigned)t), "r"((unsigned)(t >> 32)));
}

// One batch, the sources bs[0, nsrc) (nsrc <= 256 / W), with W-byte offsets: the wave, then the
// per-source sums, added unless a final offset is at the cap (then it returns true and adds
// nothing). With W = 1 the wave stops at the end of the level where a push first writes a 254
// (it returns true, adding nothing): on road-NY that is as early a sign as any of a batch whose
// offsets overflow a byte (call 9 of session 11 flagged as many batches on offsets passing 254 on
// the way as session 12 on final ones). The bases are reset for the next batch.
template <int W>
__device__ bool wv_batch(const int* __restrict__ bs, int nsrc, const wv_i64* __restrict__ indptr,
                         const int* __restrict__ indices, const int* __restrict__ ell, int n, unsigned* P, int* B,
                         int* O, int* WL, int* IN,
                         const wv_u64* __restrict__ recip, int rmax, wv_u64* far, wv_u64* reach, wv_u64* h0,
                         wv_u64* h1, wv_u64* h2, const int* __restrict__ leaf, wv_shared& sh, wv_i64& levels) {
    const unsigned lane = threadIdx.x & 31u, q = lane & 7u, gm = 0xffu << (lane & 24u);
    const int grp = threadIdx.x >> 3, ngrp = blockDim.x >> 3;
    // level 0: the sources, offset 0 in their own field (a profile is written whole before it is
    // read: by this, or by the pull of its level; nothing is reset between batches but the bases)
    for (int i = threadIdx.x; i < nsrc * 64; i += blockDim.x) P[(wv_i64)bs[i >> 6] * 64 + (i & 63)] = WV_FULL;
    __syncthreads();
    for (int c = threadIdx.x; c < nsrc; c += blockDim.x) {
        const int s = bs[c];
        B[s] = 0;
        if (W == 1) reinterpret_cast<unsigned char*>(P)[(wv_i64)s * 256 + c] = 0;
        else reinterpret_cast<unsigned short*>(P)[(wv_i64)s * 128 + c] = 0;
        O[c] = s;
    }
    if (threadIdx.x == 0) {
        sh.cnt = (unsigned)nsrc;
        sh.clamp = 0;
    }
    __syncthreads();
    // discovery of level 1 (later levels are discovered by the pull of the level before); the
    // end of a level's range is read after a barrier that follows its appends and before the
    // barriers of a push_level that precede the next appends: no barrier of its own
    for (int i = threadIdx.x; i < nsrc; i += blockDim.x) {
        const int v = O[i];
        for (wv_i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
            const int u = indices[e];
            if (B[u] < 0 && atomicCAS(B + u, -1, 1) == -1) O[atomicAdd(&sh.cnt, 1u)] = u;
        }
    }
    __syncthreads();
    int hi = nsrc, nhi = (int)sh.cnt, L = 0;
    wv_push_level<W>(O, 0, hi, indptr, indices, ell, P, B, IN, WL, n, sh.wn, &sh.rounds, &sh.fixes, &sh.clamp, 0);
    bool gave_up = W == 1 && *(volatile int*)&sh.clamp;  // block-uniform: read after push_level's barrier
    while (!gave_up && nhi > hi) {  // level L + 1: order[hi, nhi)
        for (int i = hi + grp; i < nhi; i += ngrp) wv_pull<W>(O[i], L, indptr, indices, ell, P, B, gm, q, O, &sh.cnt);
        __syncthreads();
        const int next = (int)sh.cnt;  // the end of level L + 2
        wv_push_level<W>(O, hi, nhi, indptr, indices, ell, P, B, IN, WL, n, sh.wn, &sh.rounds, &sh.fixes, &sh.clamp,
                         L + 1);
        gave_up = W == 1 && *(volatile int*)&sh.clamp;
        hi = nhi;
        nhi = next;
        ++L;
    }
    levels += L;
    const int cnt = (int)sh.cnt;
    if (threadIdx.x == 0) {
        const long long t1 = clock64();
        sh.t_wave += t1 - sh.t0;
        sh.t0 = t1;
    }
    // per-source sums: a thread per LB bytes of a profile (F = LB / W sources), 256 / LB threads
    // per vertex, blockDim LB / 256 groups over the visited vertices staged WV_SCH at a time, UNR
    // of them in flight per thread; a final offset at the cap may stand for more: the batch adds
    // nothing then.  The harmonic terms round(2^64 / d) add up in three 32-bit limbs (lo, mid,
    // top: h2, h1, h0 of the host's fixed point), a carry chain of three instructions.  Fast path
    // (DG_WV_FSUMS, W = 1): a vertex whose F bytes are all finite and below the cap and whose base
    // b is at least 2 with b + 255 inside the shared table: every distance is b + o >= 2, reach
    // and the base part of farness are counted once per vertex (rf, fb), the offsets' part per
    // source in 32 bits (fo, flushed per chunk), the reciprocals read at sh.recip[b + o].  The
    // others take the general path (unreached sources, distance 0 or 1, the cap, large bases).
    bool ovf = gave_up;
    if (!gave_up) {
        constexpr int LB = DG_WV_SPT > W ? DG_WV_SPT : W, F = LB / W, TPV = 256 / LB;
        constexpr unsigned FM = W == 1 ? 0xffu : 0xffffu;
        const int w = threadIdx.x % TPV, g = threadIdx.x / TPV, ng = blockDim.x / TPV;
        wv_u64 f[F];
        unsigned r[F], fo[F], hs[F][3], hl[F][3];  // hl: a folded leaf's harmonic terms (1 / (d + 1))
        int lf[F];  // the leaf folded into the source (-1: none)
        wv_u64 fb = 0ull;  // fast path: the bases of its vertices
        unsigned rf = 0u;  // fast path: its vertices
#pragma unroll
        for (int j = 0; j < F; ++j) {
            f[j] = 0ull, r[j] = fo[j] = 0u;
            hs[j][0] = hs[j][1] = hs[j][2] = hl[j][0] = hl[j][1] = hl[j][2] = 0u;
            lf[j] = leaf != nullptr && F * w + j < nsrc ? leaf[bs[F * w + j]] : -1;
        }
        int cap = 0;
        for (int cb = 0; cb < cnt; cb += WV_SCH) {
            const int cn = min(WV_SCH, cnt - cb);
            __syncthreads();  // the previous chunk read
            for (int i = threadIdx.x; i < cn; i += blockDim.x) {
                const int v = O[cb + i];
                sh.v[i] = v;
                sh.b[i] = B[v];
            }
            __syncthreads();
            for (int i0 = g * DG_WV_UNR; i0 < cn; i0 += ng * DG_WV_UNR) {
                unsigned ww[DG_WV_UNR];
#pragma unroll
                for (int k = 0; k < DG_WV_UNR; ++k) {
                    ww[k] = WV_FULL;
                    if (i0 + k < cn) {
                        const wv_i64 at = (wv_i64)sh.v[i0 + k] * TPV + w;
                        if (LB == 4) ww[k] = __ldcg(P + at);
                        else if (LB == 2) ww[k] = 0xffff0000u | __ldcg(reinterpret_cast<const unsigned short*>(P) + at);
                        else ww[k] = 0xffffff00u | __ldcg(reinterpret_cast<const unsigned char*>(P) + at);
                    }
                }
#pragma unroll
                for (int k = 0; k < DG_WV_UNR; ++k) {
                    if (ww[k] == WV_FULL) continue;
                    const int bb = sh.b[i0 + k];
#if DG_WV_RSH >= 512 && DG_WV_FSUMS
                    constexpr unsigned REAL = LB == 4 ? 0xffffffffu : LB == 2 ? 0xffffu : 0xffu;  // bytes loaded
                    if (W == 1 && (__vcmpgeu4(ww[k], 0xfefefefeu) & REAL) == 0u && bb >= 2 && bb < DG_WV_RSH - 256) {
                        fb += (wv_u64)bb;
                        ++rf;
                        const wv_u64* rp = sh.recip + bb;
#pragma unroll
                        for (int j = 0; j < F; ++j) {
                            const unsigned o = (ww[k] >> (8 * j)) & 0xffu;
                            fo[j] += o;
                            wv_acc(hs[j], rp[o]);
                            if (lf[j] >= 0) wv_acc(hl[j], rp[o + 1]);  // the leaf: one level deeper
                        }
                        continue;
                    }
#endif
                    cap |= wv_veq<W>(ww[k], wv_cap<W>()) != 0u;
#pragma unroll
                    for (int j = 0; j < F; ++j) {
                        const unsigned o = (ww[k] >> (8 * W * j)) & FM;
                        if (o == FM) continue;
                        const wv_u64 d = (wv_u64)(unsigned)bb + o;
                        ++r[j];
                        f[j] += d;
                        if (d == 1) ++hs[j][2];  // 2^64 / 1: one unit of h0
                        else if (d >= 2) wv_acc(hs[j], wv_recip(d, sh, recip, rmax));
                        if (lf[j] >= 0 && d >= 1) wv_acc(hl[j], wv_recip(d + 1, sh, recip, rmax));
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < F; ++j) {  // at most WV_SCH * 253 per chunk: 32 bits hold it
                f[j] += fo[j];
                fo[j] = 0u;
            }
        }
        ovf = __syncthreads_or(cap) != 0;
        if (!ovf) {
#pragma unroll
            for (int j = 0; j < F; ++j) {
                const int c = F * w + j;
                if (c >= nsrc) continue;
                const int s = bs[c];
                const wv_u64 fj = f[j] + fb, rj = (wv_u64)r[j] + rf;
                if (fj) atomicAdd(far + s, fj);
                if (rj) atomicAdd(reach + s, rj);
                if (hs[j][2]) atomicAdd(h0 + s, (wv_u64)hs[j][2]);
                if (hs[j][1]) atomicAdd(h1 + s, (wv_u64)hs[j][1]);
                if (hs[j][0]) atomicAdd(h2 + s, (wv_u64)hs[j][0]);
                if (lf[j] >= 0) {
                    // a vertex whose only neighbour is the source: its sums are the source's, each
                    // distance one more (the source itself at 1: h0), its own term included
                    // (closeness._unfold_leaves takes it off), as GpuMSBFS.fold_leaves adds them
                    const int l = lf[j];
                    atomicAdd(far + l, fj + rj);
                    atomicAdd(reach + l, rj);
                    // the source itself, once (not once per group)
                    if (g == 0 || hl[j][2]) atomicAdd(h0 + l, (wv_u64)hl[j][2] + (g == 0));
                    if (hl[j][1]) atomicAdd(h1 + l, (wv_u64)hl[j][1]);
                    if (hl[j][0]) atomicAdd(h2 + l, (wv_u64)hl[j][0]);
                }
            }
        }
    }
    for (int i = threadIdx.x; i < cnt; i += blockDim.x) B[O[i]] = -1;
    __syncthreads();
    if (threadIdx.x == 0) {
        const long long t1 = clock64();
        sh.t_sums += t1 - sh.t0;
        sh.t0 = t1;
    }
    return ovf;
}

__device__ __forceinline__ long long wv_now() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned wv_ld(const unsigned* p) { return *(const volatile unsigned*)p; }

// Thread 0: the block's next work item. ctl[0]: the next batch; ctl[1], ctl[2]: head and tail of
// the queue of halves to run with 2-byte offsets (entries 2 bt + h, -1 until written); ctl[3]:
// batches taken and not yet done with (a batch may still add halves; a block that reads a stale 0
// and ends leaves them to the others, at worst to the block of that batch). Halves first (they were
// found late), then batches; when neither is left and none is in flight: -1 (the block ends).
// Returns bt >= 0 for a batch, -(2 + 2 bt + h) for a half.
__device__ int wv_take(unsigned* ctl, const int* queue, int nbatches) {
    while (true) {
        const unsigned h = wv_ld(ctl + 1);
        if (h < wv_ld(ctl + 2)) {
            if (atomicCAS(ctl + 1, h, h + 1u) != h) continue;
            int e;
            while ((e = *(const volatile int*)(queue + h)) < 0) __nanosleep(64);
            return -(2 + e);
        }
        if (wv_ld(ctl) < (unsigned)nbatches) {
            atomicAdd(ctl + 3, 1u);  // counted in flight before it is taken
            __threadfence();
            const unsigned b = atomicAdd(ctl, 1u);
            if (b < (unsigned)nbatches) return (int)b;
            atomicSub(ctl + 3, 1u);
            continue;
        }
        __threadfence();  // ctl[0] seen exhausted before ctl[3] is read
        if (wv_ld(ctl + 3) == 0u) {  // every batch done with: its halves are in the queue's tail
            __threadfence();
            if (wv_ld(ctl + 1) >= wv_ld(ctl + 2)) return -1;
            continue;
        }
        __nanosleep(256);
    }
}

// Every batch (256 sources, srcs[256 bt ..], nsrcs[bt] of them), taken by the slots (blocks). A
// batch whose offsets reach 254 stops; with halves = 0 it gets overflow[bt] = 3, for the host to run
// another way; with halves = 1 its two halves of 128 sources go on a queue, to run with 2-byte
// offsets on the next free blocks (before any batch not yet started), and overflow[bt] gets bit h
// set for a half whose offsets reach 65534 too (a graph of that diameter). On road-NY (session 12,
// call 4) a half took about 2.5 times a batch of byte offsets (sources far apart: many fixes), so
// the host's bit-parallel kernel takes such batches by default. stats: levels, cycles in the wave and in the sums (thread 0, summed over the
// blocks), worklist rounds, fixes, batches run with 2 bytes. btime[6 bt ..]: the batch's start and
// end (globaltimer, ns), the end of its last half, the SM that ran the batch, its levels and fixes
// (of the byte run). leaf[v] (caller's leaf folding, or nullptr): the vertex whose only neighbour
// is v, whose sums v's BFS adds too (each distance one more).
extern "C" __global__ void __launch_bounds__(DG_WV_BLOCK, DG_WV_MINB)
distgraph_msbfs_wave_blocks(const wv_i64* __restrict__ indptr, const int* __restrict__ indices, int n,
                            const int* __restrict__ srcs, const int* __restrict__ nsrcs, int nbatches,
                            unsigned* prof, int* base, int* order, int* wl, int* inwl,
                            const wv_u64* __restrict__ recip, int rmax, wv_u64* far, wv_u64* reach, wv_u64* h0,
                            wv_u64* h1, wv_u64* h2, unsigned* ctl, int* queue, int* overflow, wv_i64* stats,
                            wv_i64* btime, int halves, const int* __restrict__ leaf,
                            const int* __restrict__ ell) {
    __shared__ int s_item;
    __shared__ wv_shared sh;
    const wv_i64 slot = blockIdx.x;
    unsigned* P = prof + slot * (wv_i64)n * 64;
    int* B = base + slot * (wv_i64)n;
    int* O = order + slot * (wv_i64)n;
    int* WL = wl + slot * 2 * (wv_i64)n;
    int* IN = inwl + slot * (wv_i64)n;
    wv_i64 levels = 0, again = 0;
#if DG_WV_RSH > 0
    for (int d = threadIdx.x; d < DG_WV_RSH; d += blockDim.x) sh.recip[d] = d < rmax ? recip[d] : dg_recip_fixed(d);
#endif
    if (threadIdx.x == 0) {
        sh.rounds = sh.fixes = 0ull;
        sh.wn[0] = sh.wn[1] = sh.wn[2] = 0u;
        sh.t0 = clock64();
        sh.t_wave = sh.t_sums = 0;
    }
    for (;;) {
        if (threadIdx.x == 0) s_item = wv_take(ctl, queue, nbatches);
        __syncthreads();
        const int it = s_item;
        if (it == -1) break;  // block-uniform
        if (it >= 0) {
            const int nsrc = nsrcs[it];
            const long long ts = wv_now();
            const wv_i64 lv0 = levels;
            const unsigned long long fx0 = sh.fixes;
            const bool wide = wv_batch<1>(srcs + (wv_i64)it * 256, nsrc, indptr, indices, ell, n, P, B, O, WL, IN, recip,
                                          rmax, far, reach, h0, h1, h2, leaf, sh, levels);
            if (threadIdx.x == 0) {
                if (wide && halves) {
                    ++again;
                    const int nh = nsrc > 128 ? 2 : 1;
                    const unsigned t = atomicAdd(ctl + 2, (unsigned)nh);
                    for (int h = 0; h < nh; ++h) *(volatile int*)(queue + t + h) = 2 * it + h;
                } else if (wide) {
                    overflow[it] = 3;  // the whole batch, for the host
                }
                if (btime) {
                    unsigned smid;
                    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
                    btime[6 * (wv_i64)it] = ts;
                    btime[6 * (wv_i64)it + 1] = wv_now();
                    btime[6 * (wv_i64)it + 3] = smid;
                    btime[6 * (wv_i64)it + 4] = levels - lv0;
                    btime[6 * (wv_i64)it + 5] = (wv_i64)(sh.fixes - fx0);
                }
                __threadfence();
                atomicSub(ctl + 3, 1u);
            }
        } else {
            const int e = -(it + 2), bt = e >> 1, h = e & 1, nsrc = nsrcs[bt];
            if (wv_batch<2>(srcs + (wv_i64)bt * 256 + 128 * h, min(nsrc - 128 * h, 128), indptr, indices, ell, n, P, B, O,
                            WL, IN, recip, rmax, far, reach, h0, h1, h2, leaf, sh, levels) &&
                threadIdx.x == 0)
                atomicOr(overflow + bt, 1 << h);
            if (threadIdx.x == 0 && btime) atomicMax((unsigned long long*)btime + 6 * (wv_i64)bt + 2, (unsigned long long)wv_now());
        }
    }
    if (threadIdx.x == 0) {
        atomicAdd((unsigned long long*)stats, (unsigned long long)levels);
        atomicAdd((unsigned long long*)stats + 1, (unsigned long long)sh.t_wave);
        atomicAdd((unsigned long long*)stats + 2, (unsigned long long)sh.t_sums);
        atomicAdd((unsigned long long*)stats + 3, (unsigned long long)sh.rounds);
        atomicAdd((unsigned long long*)stats + 4, (unsigned long long)sh.fixes);
        atomicAdd((unsigned long long*)stats + 5, (unsigned long long)again);
    }
}
