// msbfs_wave.cu -- closeness sums of 256-source batches on undirected graphs by a distance-profile
// wave (prototype, distgraph/backends/gpu/msbfs_wave.py; host model benchmarks/msbfs_profile_model.py).
//
// The bit-parallel MS-BFS (msbfs.cu) visits a vertex once per level that brings it new bits: on
// road networks about 20 times per batch of sources in a compact ball. Here a vertex v is visited
// once, at its base level b(v) = min_s d(s, v) (a BFS from all the batch's sources at once), and
// holds its profile: 256 bytes, byte c = d(srcs[c], v) - b(v) (255: not reached). Neighbours'
// bases differ by at most one, so a neighbour u offers v the offsets of u plus b(u) + 1 - b(v)
// in {0, 1, 2}, added with byte saturation (__vaddus4) and combined by byte minimum (__vminu4),
// four sources per 32-bit word, a warp per vertex (lane t: words t and t + 32).
//
// Level L + 1 of a batch: (1) discovery: the out-neighbours of level L's vertices without a base
// get base L + 1 (atomicCAS) and are appended to the order list; (2) pull: each new vertex takes
// the minimum over its neighbours of base L; (3) push: each new vertex offers its profile to
// every neighbour with a base (levels <= L + 1), by a per-word CAS loop of byte minima; a
// neighbour so lowered goes on a worklist (a flag per vertex dedups), and the worklist's
// vertices push in turn, round after round, until no profile changes. Every arc between visited
// vertices is thus consistent when the wave moves on (a label-correcting search ordered by
// base). A pull may read a profile that a later push lowers; that push then reaches the puller
// too (it has a base by then), so the exactness comes from the push-back: at the end every arc
// is consistent and the profiles are the exact distances. Level 0: the sources (offset 0 at their
// own byte), then their push rounds.
//
// An offset that would pass 254 (a batch whose sources are far apart; also a temporary upper
// bound on the way, before a push lowers it, so a batch can be flagged whose true offsets fit)
// sets the batch's overflow
// flag: its sums are not added and the host runs it another way. Then the per-source sums, a
// thread per source reading its byte of every visited vertex (coalesced): farness, reach and the
// harmonic limbs (h0: distance 1; h1, h2: the high and low halves of round(2^64 / d), recip[d]),
// added at the source vertex (the symmetric sums of msbfs.cu's per_source mode 2: over all
// sources they are the per-vertex sums). The visited vertices' state is reset for the next batch.
//
// State per slot (a block): prof[n * 64] words (all 0xffffffff between batches), base[n]
// (-1 between batches), order[n], wl[2 * n], inwl[n] (0 between batches).

#include "common.cuh"  // dg_recip_fixed

typedef long long wv_i64;
typedef unsigned long long wv_u64;

#ifndef DG_WV_BLOCK
#define DG_WV_BLOCK 1024
#endif
#define WV_FULL 0xffffffffu
#ifndef DG_WV_UNR
#define DG_WV_UNR 8  // visited vertices in flight per thread in the sums pass
#endif


// *p = bytewise min(*p, c); true if a byte was lowered
__device__ __forceinline__ bool wv_min4(unsigned* p, unsigned c) {
    unsigned old = *(volatile unsigned*)p;
    while (true) {
        const unsigned nv = __vminu4(old, c);
        if (nv == old) return false;
        const unsigned prev = atomicCAS(p, old, nv);
        if (prev == old) return true;
        old = prev;
    }
}

// Warp: vertex v offers its profile to its neighbours with a base; lowered ones go on list out.
__device__ __forceinline__ void wv_push(int v, const wv_i64* __restrict__ indptr, const int* __restrict__ indices,
                                        unsigned* P, const int* B, int* inwl, int* out, unsigned* out_n,
                                        int* ovf) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned w0 = *(volatile unsigned*)(P + (wv_i64)v * 64 + lane);
    const unsigned w1 = *(volatile unsigned*)(P + (wv_i64)v * 64 + 32 + lane);
    const int bv = B[v];
    bool over = false;
    for (wv_i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
        const int x = indices[e];
        const int bx = *(volatile const int*)(B + x);
        if (bx < 0 || x == v) continue;  // warp-uniform
        const unsigned s4 = (unsigned)(bv + 1 - bx) * 0x01010101u;
        const unsigned c0 = __vaddus4(w0, s4), c1 = __vaddus4(w1, s4);
        over |= ((__vcmpeq4(c0, WV_FULL) & ~__vcmpeq4(w0, WV_FULL)) | (__vcmpeq4(c1, WV_FULL) & ~__vcmpeq4(w1, WV_FULL)))
                != 0u;
        bool ch = wv_min4(P + (wv_i64)x * 64 + lane, c0);
        ch = wv_min4(P + (wv_i64)x * 64 + 32 + lane, c1) || ch;
        if (__any_sync(WV_FULL, ch) && lane == 0u) {
            __threadfence();
            if (atomicExch(inwl + x, 1) == 0) out[atomicAdd(out_n, 1u)] = x;
        }
    }
    if (__any_sync(WV_FULL, over) && lane == 0u) *ovf = 1;
}

// Push the vertices order[lo, hi), then the worklist rounds until no profile changes (block).
__device__ void wv_push_level(const int* O, int lo, int hi, const wv_i64* __restrict__ indptr,
                              const int* __restrict__ indices, unsigned* P, const int* B, int* inwl, int* wl, int n,
                              unsigned* s_wn, int* s_ovf, unsigned long long* s_rounds,
                              unsigned long long* s_fixes) {
    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const unsigned lane = threadIdx.x & 31u;
    if (threadIdx.x == 0) s_wn[0] = 0u;
    __syncthreads();
    for (int i = lo + warp; i < hi; i += nw) wv_push(O[i], indptr, indices, P, B, inwl, wl, &s_wn[0], s_ovf);
    __syncthreads();
    int cur = 0;
    while (true) {
        const int k = (int)s_wn[cur];
        if (k == 0) break;  // block-uniform
        __syncthreads();    // everyone has read s_wn[cur]
        if (threadIdx.x == 0) {
            s_wn[cur ^ 1] = 0u;
            *s_rounds += 1ull;
            *s_fixes += (unsigned long long)k;
        }
        __syncthreads();
        const int* in = wl + (wv_i64)cur * n;
        int* out = wl + (wv_i64)(cur ^ 1) * n;
        for (int i = warp; i < k; i += nw) {
            const int x = in[i];
            if (lane == 0u) {
                atomicExch(inwl + x, 0);
                __threadfence();
            }
            __syncwarp();
            wv_push(x, indptr, indices, P, B, inwl, out, &s_wn[cur ^ 1], s_ovf);
        }
        __syncthreads();
        cur ^= 1;
    }
}

extern "C" __global__ void __launch_bounds__(DG_WV_BLOCK, 1)
distgraph_msbfs_wave_blocks(const wv_i64* __restrict__ indptr, const int* __restrict__ indices, int n,
                            const int* __restrict__ srcs, const int* __restrict__ nsrcs, int nbatches,
                            unsigned* prof, int* base, int* order, int* wl, int* inwl,
                            const wv_u64* __restrict__ recip, int rmax, wv_u64* far, wv_u64* reach, wv_u64* h0,
                            wv_u64* h1, wv_u64* h2, unsigned* next, int* overflow, wv_i64* stats) {
    __shared__ int s_batch, s_ovf;
    __shared__ unsigned s_cnt, s_wn[2];
    __shared__ unsigned long long s_rounds, s_fixes;  // worklist rounds run, vertices pushed again
    const wv_i64 slot = blockIdx.x;
    unsigned* P = prof + slot * (wv_i64)n * 64;
    int* B = base + slot * (wv_i64)n;
    int* O = order + slot * (wv_i64)n;
    int* WL = wl + slot * 2 * (wv_i64)n;
    int* IN = inwl + slot * (wv_i64)n;
    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const unsigned lane = threadIdx.x & 31u;
    wv_i64 levels = 0;
    long long t0 = clock64(), t_wave = 0, t_sums = 0;  // thread 0: cycles in the wave, in the sums
    if (threadIdx.x == 0) s_rounds = s_fixes = 0ull;
    for (;;) {
        if (threadIdx.x == 0) {
            s_batch = (int)atomicAdd(next, 1u);
            s_cnt = 0u;
            s_ovf = 0;
        }
        __syncthreads();
        const int bt = s_batch;
        if (bt >= nbatches) break;  // block-uniform
        const int nsrc = nsrcs[bt];
        const int* bs = srcs + (wv_i64)bt * 256;
        for (int c = threadIdx.x; c < nsrc; c += blockDim.x) {
            const int s = bs[c];
            B[s] = 0;
            atomicAnd(P + (wv_i64)s * 64 + (c >> 2), ~(0xffu << (8 * (c & 3))));  // offset 0 at byte c
            O[atomicAdd(&s_cnt, 1u)] = s;
        }
        __syncthreads();
        int lo = 0, hi = (int)s_cnt, L = 0;
        wv_push_level(O, lo, hi, indptr, indices, P, B, IN, WL, n, s_wn, &s_ovf, &s_rounds, &s_fixes);
        while (true) {
            // discovery of level L + 1
            for (int i = lo + (int)threadIdx.x; i < hi; i += blockDim.x) {
                const int v = O[i];
                for (wv_i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
                    const int u = indices[e];
                    if (B[u] < 0 && atomicCAS(B + u, -1, L + 1) == -1) O[atomicAdd(&s_cnt, 1u)] = u;
                }
            }
            __syncthreads();
            const int nlo = hi, nhi = (int)s_cnt;
            if (nlo == nhi) break;  // block-uniform
            // pull: each new vertex from its neighbours of level L
            for (int i = nlo + warp; i < nhi; i += nw) {
                const int v = O[i];
                unsigned a0 = WV_FULL, a1 = WV_FULL;
                for (wv_i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
                    const int u = indices[e];
                    if (B[u] != L) continue;  // warp-uniform
                    a0 = __vminu4(a0, P[(wv_i64)u * 64 + lane]);
                    a1 = __vminu4(a1, P[(wv_i64)u * 64 + 32 + lane]);
                }
                P[(wv_i64)v * 64 + lane] = a0;
                P[(wv_i64)v * 64 + 32 + lane] = a1;
            }
            __syncthreads();
            wv_push_level(O, nlo, nhi, indptr, indices, P, B, IN, WL, n, s_wn, &s_ovf, &s_rounds, &s_fixes);
            lo = nlo;
            hi = nhi;
            ++L;
        }
        levels += L;
        const int cnt = (int)s_cnt;
        if (threadIdx.x == 0) {
            const long long t1 = clock64();
            t_wave += t1 - t0;
            t0 = t1;
            if (s_ovf) overflow[bt] = 1;
        }
        // per-source sums (skipped when the batch overflowed), a thread per source in groups of
        // 256 over the visited vertices, UNR of them in flight per thread; each thread then resets
        // its byte of the vertex; the bases are reset after a barrier: the slot is clean after it
        const bool sums_on = !s_ovf;
        {
            const int c = threadIdx.x & 255, g = threadIdx.x >> 8, ng = blockDim.x >> 8;
            unsigned char* Pb = (unsigned char*)P;
            wv_u64 f = 0, r = 0, a = 0, b1 = 0, b2 = 0;
            for (int i0 = g * DG_WV_UNR; i0 < cnt; i0 += ng * DG_WV_UNR) {
                int vv[DG_WV_UNR];
                unsigned oo[DG_WV_UNR];
                int bb[DG_WV_UNR];
#pragma unroll
                for (int k = 0; k < DG_WV_UNR; ++k) vv[k] = i0 + k < cnt ? O[i0 + k] : -1;
#pragma unroll
                for (int k = 0; k < DG_WV_UNR; ++k) {
                    oo[k] = vv[k] >= 0 ? Pb[(wv_i64)vv[k] * 256 + c] : 255u;
                    bb[k] = vv[k] >= 0 ? B[vv[k]] : 0;
                }
#pragma unroll
                for (int k = 0; k < DG_WV_UNR; ++k) {
                    if (vv[k] < 0) continue;
                    Pb[(wv_i64)vv[k] * 256 + c] = 255u;
                    if (oo[k] == 255u || c >= nsrc || !sums_on) continue;
                    const wv_u64 d = (wv_u64)bb[k] + oo[k];
                    ++r;
                    f += d;
                    if (d == 1) {
                        ++a;
                    } else if (d >= 2) {
                        const wv_u64 q = d < (wv_u64)rmax ? recip[d] : dg_recip_fixed(d);
                        b1 += q >> 32;
                        b2 += q & 0xffffffffull;
                    }
                }
            }
            if (c < nsrc && sums_on) {
                const int s = bs[c];
                if (f) atomicAdd(far + s, f);
                if (r) atomicAdd(reach + s, r);
                if (a) atomicAdd(h0 + s, a);
                if (b1) atomicAdd(h1 + s, b1);
                if (b2) atomicAdd(h2 + s, b2);
            }
        }
        __syncthreads();   // every byte read before the bases go
        for (int i = threadIdx.x; i < cnt; i += blockDim.x) B[O[i]] = -1;
        __syncthreads();
        if (threadIdx.x == 0) {
            const long long t1 = clock64();
            t_sums += t1 - t0;
            t0 = t1;
        }
    }
    if (threadIdx.x == 0) {
        atomicAdd((unsigned long long*)stats, (unsigned long long)levels);
        atomicAdd((unsigned long long*)stats + 1, (unsigned long long)t_wave);
        atomicAdd((unsigned long long*)stats + 2, (unsigned long long)t_sums);
        atomicAdd((unsigned long long*)stats + 3, (unsigned long long)s_rounds);
        atomicAdd((unsigned long long*)stats + 4, (unsigned long long)s_fixes);
    }
}
