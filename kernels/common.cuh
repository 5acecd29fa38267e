// common.cuh -- small device helpers shared by distgraph kernels.
//
// * dg_bmma_and_popc: one binary tensor-core MMA, m8n8k128 with AND + POPC (sm_75+),
//   accumulator zero.  Fragment ownership (verified bit-exact on the H200 against numpy
//   popcounts, see shared/notes/gpu-stack.md): lane t holds A row t/4, 32-bit word t%4;
//   B column t/4, word t%4; D row t/4, columns 2(t%4) and 2(t%4)+1.
// * dg_warp_inclusive_scan: inclusive prefix sum over the 32 lanes of a full warp.
// * dg_warp_sum: the sum over a full warp, in every lane.
// * dg_recip_fixed: round(2^64 / L) for L >= 2, exactly as recip_fixed in
//   distgraph/backends/cpu/bits.py (the harmonic sums' fixed point of msbfs.cu, msbfs_wave.cu).
//
// Standalone: no host headers, so NVRTC (CuPy) and nvcc both compile it.
#ifndef DISTGRAPH_COMMON_CUH
#define DISTGRAPH_COMMON_CUH

#define DG_FULL_MASK 0xffffffffu

__device__ __forceinline__ unsigned dg_lane_id() {
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

// D = popc(A AND B) for an 8x128 by 128x8 bit product; this lane's two outputs in d0, d1.
__device__ __forceinline__ void dg_bmma_and_popc(unsigned a, unsigned b, int &d0, int &d1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    int c0 = 0, c1 = 0;
    asm volatile(
        "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc {%0,%1}, {%2}, {%3}, {%4,%5};"
        : "=r"(d0), "=r"(d1)
        : "r"(a), "r"(b), "r"(c0), "r"(c1));
#else
    // Pre-Turing fallback with the same ownership of outputs (not used on sm_90).
    unsigned lane = dg_lane_id();
    int row = lane >> 2, col0 = 2 * (lane & 3);
    d0 = 0; d1 = 0;
    for (int w = 0; w < 4; ++w) {
        unsigned aw = __shfl_sync(DG_FULL_MASK, a, row * 4 + w);
        unsigned b0 = __shfl_sync(DG_FULL_MASK, b, col0 * 4 + w);
        unsigned b1 = __shfl_sync(DG_FULL_MASK, b, (col0 + 1) * 4 + w);
        d0 += __popc(aw & b0);
        d1 += __popc(aw & b1);
    }
#endif
}

__device__ __forceinline__ unsigned dg_warp_inclusive_scan(unsigned x) {
    unsigned lane = dg_lane_id();
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        unsigned y = __shfl_up_sync(DG_FULL_MASK, x, d);
        if (lane >= (unsigned)d) x += y;
    }
    return x;
}

__device__ __forceinline__ unsigned long long dg_recip_fixed(unsigned long long L) {
    const unsigned long long all = ~0ull;
    unsigned long long q = all / L;
    unsigned long long rem = all - q * L + 1ull;
    if (rem == L) { q += 1ull; rem = 0ull; }
    if (rem + rem >= L) q += 1ull;
    return q;
}

__device__ __forceinline__ unsigned long long dg_warp_sum(unsigned long long x) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(DG_FULL_MASK, x, d);
    return x;
}

#endif  // DISTGRAPH_COMMON_CUH
