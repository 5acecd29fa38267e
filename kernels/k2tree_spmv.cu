// k2tree_spmv.cu -- semiring SpMV on a k2-tree (and on CSR, for comparison).
//
// Tosoni & Mencagli, "A GPU Engine for Sparse Matrix-Vector Products on
// k2-Tree-Compressed Graphs", arXiv:2611.03610, Algorithm 1 (level-synchronous
// descent), Sec. 3.2 (child offsets from a scan or a sampled directory), 3.4 (tiles),
// 3.5 (cached last internal level, k2+F), 3.6 (left products, batches), Table 1.
//
// The host (distgraph/backends/gpu/k2tree_spmv.py) plans the tiles once: a tile is a
// range of nodes of one level with at most M children; it launches, depth-first,
// one `expand` per tile of an internal level and one `leaves` per tile of the last
// internal level L-2 (the leaves are visited in place, never written to a frontier).
// With the frontier cached, a product is one `leaves` over the whole level L-2.
// With directory offsets and S = 256 the `_blk` kernels replace `expand` and `leaves`.
//
// Encodings
//   sig[]      uint8, two 4-bit signatures per byte, node g = (sig[g>>1] >> 4*(g&1)) & 15,
//              level order (the bitstring T of the paper).
//   dir[]      dir_t (uint32; uint64 with -DDIR_T="unsigned long long" for trees of
//              2^32 nodes or more): dir[i] = first child (global node id) of node i*S; any node adds
//              the popcount of the signatures between node (g/S)*S and g.
//   codes[]    uint64 Morton codes of the nodes of a tile (row bits odd, column bits
//              even, two bits b1 b0 per level below the root).
//   delta[], base[]  the compact cached frontier (block kernels): code of node g of
//              level L-2 = base[g / 256 - first block] + delta[g - first node], base
//              uint64 per aligned block of 256 nodes (the code of its first node of
//              the level), delta uint32 per node: 4 bytes per node instead of 8.
//   scan[]     int32, inclusive scan of the fan-outs of a tile (offsets = scan - own),
//              used instead of dir when use_dir == 0.
//   x, y       n x B row-major (B vectors of a batch); y holds the semiring's zero
//              before a product. Right product: cell (r, c) adds x[c] into y[r]; left:
//              x[r] into y[c].
//
// Semirings (#define SEMIRING: 0 plus_times, 1 lor_land, 2 min_plus; VALUE_T the
// element type) are functors: the thread kernels issue one atomic per non-zero
// (atomicAdd; a plain store of 1, every racing writer storing the same value; an atomic
// minimum by compare-and-swap); the block kernels first combine in registers the cells
// of a 4 x 4 block that update the same entry of y.
//
// Thread kernels (one thread per node; offsets from the directory by a popcount loop,
// or from a scan), the first version, kept for scan offsets and S != 256:
// __global__ distgraph_k2tree_fanout  (sig, g0, n, fan)              fan[t] = popcount(sig of g0+t)
// __global__ distgraph_k2tree_expand  (sig, dir, S, use_dir, scan, in, g0, n, child0, out)
//            child codes of nodes g0..g0+n-1 (codes in[]) into out[first_child - child0 ...]
// __global__ distgraph_k2tree_leaves  (sig, dir, S, use_dir, scan, codes, g0, n, leaf0, x, y, B, left)
//            one thread per (node of level L-2, vector); leaf0 is the first leaf of g0 (scan mode)
//
// Block kernels (directory offsets, S = 256, a block per directory sample: offsets
// from dir[b] + a block scan of the fan-outs; see "block kernels" below), the default:
// __global__ distgraph_k2tree_expand_blk  (sig, dir, in, g0, n, child0, out)
// __global__ distgraph_k2tree_leaves_blk  (sig, dir, codes, delta, base, g0, n, x, y, B, left)
// and, for single vectors (the default there where the prefetching leaves below do not run),
// the leaves with K = 2, 4 (default) or 8 aligned chunks of 256 nodes per block, every step
// done for K nodes at once (see "leaves, K chunks per block"):
// __global__ distgraph_k2tree_leaves_k2/_k4/_k8 (sig, dir, codes, delta, base, g0, n, x, y, left)
// and the same with the updates of a block combined in a shared-memory table before y
// (one atomic per distinct row of the block; aggregate=True, not the default):
// __global__ distgraph_k2tree_leaves_k2_agg/_k4_agg/_k8_agg (same arguments)
// and with each 4 x 4 block's 4 inputs loaded with its code, before the scan (prefetch; see
// "leaves with each block's inputs loaded with its code"):
// __global__ distgraph_k2tree_leaves_k2_pre/_k4_pre (sig, dir, codes, delta, base, g0, n, x, nin, y, left,
//            hub, yhub)  (hub > 0: y's first hub entries at yhub[r * DG_K2_HUB_PAD], then
// __global__ distgraph_k2tree_hub_fold (y, yhub, hub)  folds them into y and resets them)
// and, K = 4, with runs of adjacent lanes that update the same entry of y combined first:
// __global__ distgraph_k2tree_leaves_k4_pre_lanes (same arguments)
// the default for single vectors wherever they apply (DeviceMatrix prefetch="auto",
// lane_combine="auto": K = 2 or 4, not aggregate, x aligned): k2+F on an H200, time relative
// to cuSPARSE on kron 21/22/23, right 2.36/2.61/2.65x with leaves_k4, 2.21/2.46/2.52x with
// _k4_pre, 1.98/2.11/2.05x with _k4_pre_lanes; left 1.33/1.61/1.57x, 1.19/1.49/1.48x,
// 1.20/1.40/1.32x (benchmarks/results/session6_x2/call6/h2/h2_k2tree_summary.json).
// The alternative measured in benchmarks/gpu_k2tree_bench.py:
// __global__ distgraph_k2tree_expand2_blk (sig, dir, in, g0, n, gchild0, out)
//            two levels per launch: grandchildren codes, the middle level never written.
// Removed after measurement (benchmarks/results/k2tree_gpu.json): leaves with
// warp-aggregated updates by __match_any_sync (1.14-3.15x the block kernel's time on
// every graph; rows k2_warp/k2F_warp, commit 4de3042), leaves with the updates of a
// block combined in a shared-memory hash table (0.96-1.41x; k2_hash/k2F_hash, 84cd318)
// and a "band" kernel for k2+F (nodes of level L-2 grouped by bands of 2^h rows,
// updates combined per band in shared memory, one coalesced atomic per row and block:
// no scattered atomics at all, yet 0.98-1.07x the block kernel's time on kron 20-23,
// 1.18x the 4-chunk leaves' on kron:20; rows k2F_band*, commits f20ed2c/edcde2a): the
// single-vector leaves are bound by the latency of their chain of dependent loads, not
// by the atomics. Also removed: the prefetching leaves with the lanes of a warp grouped by
// output row (__match_any_sync) and each group's outputs combined in shared memory
// (lane_combine="warp", commit 365dae1), 1.21-1.45x the default leaves' time on
// degree-ordered kron 20-24, where hub rows fill whole warps
// (benchmarks/results/session8_x2/call2/); and runs of adjacent lanes with the same block row
// combining all four outputs by shuffles (lane_combine="rows", commit 8a98c34), 1.18-1.29x
// there and 1.04-1.05x unreordered (session8_x2/call5/).
//
// CSR, the baseline with the same semirings (left products run it on the CSR of A^T):
// __global__ distgraph_csr_rows        (indptr, indices, nrows, x, y, B)
//            one thread per (row, vector), the row combined in a register, stored once.
// __global__ distgraph_csr_rows_vector (indptr, indices, nrows, x, y, W)
//            B = 1: W lanes per row (CSR-vector), combined by shuffles, one store per row.

#ifndef SEMIRING
#define SEMIRING 0
#endif
#ifndef VALUE_T
#define VALUE_T float
#endif
#ifndef DIR_T  // the directory's entries: 32-bit up to 2^32 nodes, 64-bit past that
#define DIR_T unsigned int
#endif

typedef VALUE_T value_t;
typedef DIR_T dir_t;
typedef unsigned long long u64;
typedef long long i64;

// ------------------------------------------------------------------ atomics
__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(i64 *p, i64 v) { atomicAdd((u64 *)p, (u64)v); }

__device__ __forceinline__ void atomic_min(float *p, float v) {
    int *a = (int *)p;
    int old = *a;
    while (__int_as_float(old) > v) {
        int prev = atomicCAS(a, old, __float_as_int(v));
        if (prev == old) break;
        old = prev;
    }
}
__device__ __forceinline__ void atomic_min(double *p, double v) {
    u64 *a = (u64 *)p;
    u64 old = *a;
    while (__longlong_as_double((i64)old) > v) {
        u64 prev = atomicCAS(a, old, (u64)__double_as_longlong(v));
        if (prev == old) break;
        old = prev;
    }
}

// ---------------------------------------------------------------- semirings
// update(y, x): one atomic y (+)= w (x) x. combine(a, x): a (+) x in a register (the
// first x of a run starts it, so no identity is needed). flush(y, a): y (+)= w (x) a
// atomically; store(y, a): the same by the only writer of y. combine_shared(s, a):
// s (+)= a atomically in shared memory (s starts at zero(); flush applies w later).
template <typename T> struct Inf;  // the largest value: min_plus's zero
template <> struct Inf<float> { __device__ static __forceinline__ float get() { return __int_as_float(0x7f800000); } };
template <> struct Inf<double> {
    __device__ static __forceinline__ double get() { return __longlong_as_double(0x7ff0000000000000LL); }
};
template <> struct Inf<long long> { __device__ static __forceinline__ long long get() { return 0x7fffffffffffffffLL; } };
template <> struct Inf<unsigned char> { __device__ static __forceinline__ unsigned char get() { return 255; } };

// zero(): the identity of the addition.
template <typename T> struct PlusTimes {
    __device__ static __forceinline__ T zero() { return (T)0; }
    __device__ static __forceinline__ void update(T *y, T x) { atomic_add(y, x); }
    __device__ static __forceinline__ T combine(T a, T x) { return a + x; }
    __device__ static __forceinline__ void flush(T *y, T a) { atomic_add(y, a); }
    __device__ static __forceinline__ void store(T *y, T a) { *y += a; }
    __device__ static __forceinline__ void combine_shared(T *s, T a) { atomic_add(s, a); }
};
template <typename T> struct LorLand {
    __device__ static __forceinline__ T zero() { return (T)0; }
    __device__ static __forceinline__ void update(T *y, T x) { if (x) *(volatile T *)y = (T)1; }
    __device__ static __forceinline__ T combine(T a, T x) { return (a || x) ? (T)1 : (T)0; }
    __device__ static __forceinline__ void flush(T *y, T a) { if (a) *(volatile T *)y = (T)1; }
    __device__ static __forceinline__ void store(T *y, T a) { if (a) *y = (T)1; }
    __device__ static __forceinline__ void combine_shared(T *s, T a) { if (a) *(volatile T *)s = (T)1; }
};
template <typename T> struct MinPlus {
    __device__ static __forceinline__ T zero() { return Inf<T>::get(); }
    __device__ static __forceinline__ void update(T *y, T x) {
        T v = x + (T)1;
        if (v < *(volatile T *)y) atomic_min(y, v);
    }
    __device__ static __forceinline__ T combine(T a, T x) { return x < a ? x : a; }
    __device__ static __forceinline__ void flush(T *y, T a) { update(y, a); }
    __device__ static __forceinline__ void store(T *y, T a) {
        T v = a + (T)1;
        if (v < *y) *y = v;
    }
    __device__ static __forceinline__ void combine_shared(T *s, T a) {
        if (a < *(volatile T *)s) atomic_min(s, a);
    }
};
template <int S, typename T> struct Pick;
template <typename T> struct Pick<0, T> { typedef PlusTimes<T> type; };
template <typename T> struct Pick<1, T> { typedef LorLand<T> type; };
template <typename T> struct Pick<2, T> { typedef MinPlus<T> type; };
typedef Pick<SEMIRING, value_t>::type Semiring;

// ------------------------------------------------------------------ helpers
__device__ __forceinline__ int nib(const unsigned char *sig, i64 g) { return (sig[g >> 1] >> ((g & 1) << 2)) & 15; }

__device__ __forceinline__ i64 compact(u64 v) {
    v &= 0x5555555555555555ULL;
    v = (v | (v >> 1)) & 0x3333333333333333ULL;
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FFULL;
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFFULL;
    v = (v | (v >> 16)) & 0x00000000FFFFFFFFULL;
    return (i64)v;
}

// First child of node g from the sampled directory (Sec. 3.2): the sample of its block
// plus the popcount of the signatures before it in the block, 8 at a time.
__device__ __forceinline__ i64 first_child(const unsigned char *sig, const dir_t *dir, int S, i64 g) {
    i64 b = g / S;
    i64 c = dir[b];
    i64 h = b * S;
    if ((S & 7) == 0)
        for (; h + 8 <= g; h += 8) c += __popc(*(const unsigned int *)(sig + (h >> 1)));
    for (; h + 2 <= g; h += 2) c += __popc(sig[h >> 1]);
    if (h < g) c += __popc(sig[h >> 1] & 15);
    return c;
}

// ------------------------------------------------------------------ kernels
extern "C" __global__ void distgraph_k2tree_fanout(const unsigned char *sig, i64 g0, i64 n, int *fan) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) fan[t] = __popc(nib(sig, g0 + t));
}

extern "C" __global__ void distgraph_k2tree_expand(const unsigned char *sig, const dir_t *dir, int S,
                                                   int use_dir, const int *scan, const u64 *in, i64 g0, i64 n,
                                                   i64 child0, u64 *out) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    i64 g = g0 + t;
    int s = nib(sig, g);
    i64 o = use_dir ? first_child(sig, dir, S, g) - child0 : (i64)(scan[t] - __popc(s));
    u64 code = in[t] << 2;
#pragma unroll
    for (int b = 0; b < 4; ++b)
        if ((s >> b) & 1) out[o++] = code | (u64)b;
}

extern "C" __global__ void distgraph_k2tree_leaves(const unsigned char *sig, const dir_t *dir, int S,
                                                   int use_dir, const int *scan, const u64 *codes, i64 g0, i64 n,
                                                   i64 leaf0, const value_t *__restrict__ x, value_t *y, int B,
                                                   int left) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 node = t / B;
    int k = (int)(t - node * B);
    if (node >= n) return;
    i64 g = g0 + node;
    int s = nib(sig, g);
    i64 c = use_dir ? first_child(sig, dir, S, g) : leaf0 + (i64)(scan[node] - __popc(s));
    u64 code = codes[node] << 2;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
        if (!((s >> b) & 1)) continue;
        int lam = nib(sig, c++);
        u64 leaf = code | (u64)b;
        i64 r = compact(leaf >> 1) << 1;
        i64 col = compact(leaf) << 1;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            if (!((lam >> q) & 1)) continue;
            i64 i = r + (q >> 1), j = col + (q & 1);
            if (left) { i64 tmp = i; i = j; j = tmp; }
            Semiring::update(&y[i * B + k], x[j * B + k]);
        }
    }
}

extern "C" __global__ void distgraph_csr_rows(const i64 *indptr, const int *indices, i64 nrows,
                                              const value_t *__restrict__ x, value_t *y, int B) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 i = t / B;
    int k = (int)(t - i * B);
    if (i >= nrows) return;
    i64 a = indptr[i], b = indptr[i + 1];
    if (a == b) return;
    value_t acc = x[(i64)indices[a] * B + k];
    for (i64 jj = a + 1; jj < b; ++jj) acc = Semiring::combine(acc, x[(i64)indices[jj] * B + k]);
    Semiring::store(&y[i * B + k], acc);  // the thread owns y[i, k]: no atomic
}

// CSR, one vector (B = 1): W lanes per row (W a power of two <= 32 picked by the host
// from the mean degree), each lane combines every W-th entry of the row, then the W
// partial results are combined by shuffles and the group's first lane stores y[i].
__device__ __forceinline__ float shfl_down_val(float v, int o, int w) { return __shfl_down_sync(0xffffffffu, v, o, w); }
__device__ __forceinline__ double shfl_down_val(double v, int o, int w) { return __shfl_down_sync(0xffffffffu, v, o, w); }
__device__ __forceinline__ i64 shfl_down_val(i64 v, int o, int w) { return __shfl_down_sync(0xffffffffu, v, o, w); }
__device__ __forceinline__ unsigned char shfl_down_val(unsigned char v, int o, int w) {
    return (unsigned char)__shfl_down_sync(0xffffffffu, (int)v, o, w);
}

extern "C" __global__ void distgraph_csr_rows_vector(const i64 *indptr, const int *indices, i64 nrows,
                                                     const value_t *__restrict__ x, value_t *y, int W) {
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 i = t / W;
    int lane = (int)(t - i * W);
    bool row = i < nrows;  // every lane stays for the shuffles
    i64 a = row ? indptr[i] : 0, b = row ? indptr[i + 1] : 0;
    value_t acc = (value_t)0;
    bool has = false;
    for (i64 jj = a + lane; jj < b; jj += W) {
        value_t v = x[indices[jj]];
        acc = has ? Semiring::combine(acc, v) : v;
        has = true;
    }
    for (int o = W >> 1; o; o >>= 1) {
        value_t u = shfl_down_val(acc, o, W);
        int h = __shfl_down_sync(0xffffffffu, (int)has, o, W);
        if (h) {
            acc = has ? Semiring::combine(acc, u) : u;
            has = true;
        }
    }
    if (row && lane == 0 && has) Semiring::store(&y[i], acc);
}

// ------------------------------------------------- block kernels (directory, S = 256)
// A block of 256 threads takes the 256 nodes [256 b, 256 b + 256) aligned with one
// directory sample, so dir[b] is the first child of its first node and a block-wide
// exclusive scan of the fan-outs (popc of each signature) gives every other node's:
// one directory load per block instead of a popcount loop over up to S/2 bytes per
// thread. Nodes of the block outside the tile [g0, g0 + n) still count in the scan
// when they precede it, and are not visited. Launch: grid = the aligned blocks that
// meet [g0, g0 + n), block = 256.

#define DG_K2_BLOCK 256

// The code of node g0 + i of a leaves launch: codes[i], or, with the compact cached
// frontier (delta != 0), base[blockIdx.x] + delta[i] (base: the code of the first
// node of the level in each aligned block of the launch; delta: 32-bit offsets).
__device__ __forceinline__ u64 node_code(const u64 *codes, const unsigned int *delta, const u64 *base, i64 i) {
    return delta ? base[blockIdx.x] + (u64)delta[i] : codes[i];
}

__device__ __forceinline__ int block_exclusive_scan(int v) {
    __shared__ int warp_total[DG_K2_BLOCK / 32];
    const unsigned full = 0xffffffffu;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(full, x, o);
        if (lane >= o) x += u;
    }
    if (lane == 31) warp_total[w] = x;
    __syncthreads();
    if (w == 0) {
        int u = lane < DG_K2_BLOCK / 32 ? warp_total[lane] : 0;
#pragma unroll
        for (int o = 1; o < DG_K2_BLOCK / 32; o <<= 1) {
            int z = __shfl_up_sync(full, u, o);
            if (lane >= o) u += z;
        }
        if (lane < DG_K2_BLOCK / 32) warp_total[lane] = u;
    }
    __syncthreads();
    return x - v + (w ? warp_total[w - 1] : 0);
}

// The up to 16 cells under a node of level L-2 (code: the Morton code of its 4 x 4
// block; s: its signature; leaf: the global id of its first leaf), for vector k.
// Right product: the cells of one row are combined in a register and y gets one
// atomic per non-empty row of the block (left: per column), not one per cell.
template <bool LEFT>
__device__ __forceinline__ void visit_block(const unsigned char *sig, u64 code, int s, i64 leaf,
                                            const value_t *__restrict__ x, value_t *y, int B, int k) {
    i64 R = compact(code >> 1) << 2, C = compact(code) << 2;
    value_t acc[4];
    bool any[4] = {false, false, false, false};
    i64 in0 = LEFT ? R : C, out0 = LEFT ? C : R;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
        if (!((s >> b) & 1)) continue;
        int lam = nib(sig, leaf++);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            if (!((lam >> q) & 1)) continue;
            int dr = 2 * (b >> 1) + (q >> 1), dc = 2 * (b & 1) + (q & 1);
            int o = LEFT ? dc : dr, i = LEFT ? dr : dc;  // compile-time: acc stays in registers
            value_t v = x[(in0 + i) * B + k];
            acc[o] = any[o] ? Semiring::combine(acc[o], v) : v;
            any[o] = true;
        }
    }
#pragma unroll
    for (int o = 0; o < 4; ++o)
        if (any[o]) Semiring::flush(&y[(out0 + o) * B + k], acc[o]);
}

extern "C" __global__ void distgraph_k2tree_expand_blk(const unsigned char *sig, const dir_t *dir,
                                                       const u64 *in, i64 g0, i64 n, i64 child0, u64 *out) {
    i64 blk = g0 / DG_K2_BLOCK + blockIdx.x;
    i64 g = blk * DG_K2_BLOCK + threadIdx.x;
    int s = g < g0 + n ? nib(sig, g) : 0;
    int before = block_exclusive_scan(__popc(s));
    if (g < g0 || g >= g0 + n) return;
    i64 o = (i64)dir[blk] + before - child0;
    u64 code = in[g - g0] << 2;
#pragma unroll
    for (int b = 0; b < 4; ++b)
        if ((s >> b) & 1) out[o++] = code | (u64)b;
}

// Two levels in one launch (tree-only, levels_per_step=2): the nodes [g0, g0 + n) of
// level d write the codes of their grandchildren (level d + 2) to out[first grandchild
// - gchild0 ...]; level d + 1 is never written. A block's children are the at most
// 1024 nodes [c_lo, c_hi) of level d + 1 (c_lo = dir[b]); the block loads the
// signatures of [A, c_hi), A = c_lo rounded down to a directory sample (at most 1279
// nodes, 5 per thread), and a second block scan from dir[A / 256] gives each child's
// first child.
extern "C" __global__ void distgraph_k2tree_expand2_blk(const unsigned char *sig, const dir_t *dir,
                                                        const u64 *in, i64 g0, i64 n, i64 gchild0, u64 *out) {
    __shared__ unsigned char s_sig1[5 * DG_K2_BLOCK];
    __shared__ dir_t s_fc1[5 * DG_K2_BLOCK];
    __shared__ int s_total;
    i64 blk = g0 / DG_K2_BLOCK + blockIdx.x;
    i64 g = blk * DG_K2_BLOCK + threadIdx.x;
    int s = g < g0 + n ? nib(sig, g) : 0;
    int before = block_exclusive_scan(__popc(s));
    if (threadIdx.x == DG_K2_BLOCK - 1) s_total = before + __popc(s);
    __syncthreads();  // s_total; and the second scan reuses the first one's shared words
    i64 c_lo = dir[blk];
    i64 A = (c_lo / DG_K2_BLOCK) * DG_K2_BLOCK;
    int cnt = (int)(c_lo + s_total - A);
    int loc[5];
    int sum = 0;
#pragma unroll
    for (int k = 0; k < 5; ++k) {
        int e = 5 * threadIdx.x + k;
        loc[k] = e < cnt ? nib(sig, A + e) : 0;
        sum += __popc(loc[k]);
    }
    i64 run = (i64)block_exclusive_scan(sum) + (i64)dir[A / DG_K2_BLOCK];
#pragma unroll
    for (int k = 0; k < 5; ++k) {
        int e = 5 * threadIdx.x + k;
        if (e < cnt) {
            s_sig1[e] = (unsigned char)loc[k];
            s_fc1[e] = (dir_t)run;
        }
        run += __popc(loc[k]);
    }
    __syncthreads();
    if (g < g0 || g >= g0 + n) return;
    u64 code = in[g - g0] << 2;
    i64 c = c_lo + before;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
        if (!((s >> b) & 1)) continue;
        int e = (int)(c - A);
        int s1 = s_sig1[e];
        i64 o = (i64)s_fc1[e] - gchild0;
        u64 cc = (code | (u64)b) << 2;
#pragma unroll
        for (int b2 = 0; b2 < 4; ++b2)
            if ((s1 >> b2) & 1) out[o++] = cc | (u64)b2;
        ++c;
    }
}

extern "C" __global__ void distgraph_k2tree_leaves_blk(const unsigned char *sig, const dir_t *dir,
                                                       const u64 *codes, const unsigned int *delta,
                                                       const u64 *base, i64 g0, i64 n,
                                                       const value_t *__restrict__ x, value_t *y, int B,
                                                       int left) {
    __shared__ u64 s_code[DG_K2_BLOCK];
    __shared__ dir_t s_leaf[DG_K2_BLOCK];
    __shared__ unsigned char s_sig[DG_K2_BLOCK];
    i64 blk = g0 / DG_K2_BLOCK + blockIdx.x;
    i64 g = blk * DG_K2_BLOCK + threadIdx.x;
    int s = g < g0 + n ? nib(sig, g) : 0;
    int before = block_exclusive_scan(__popc(s));
    bool mine = g >= g0 && g < g0 + n;
    i64 leaf = (i64)dir[blk] + before;
    if (B == 1) {
        if (mine && s) {
            u64 code = node_code(codes, delta, base, g - g0);
            if (left) visit_block<true>(sig, code, s, leaf, x, y, 1, 0);
            else visit_block<false>(sig, code, s, leaf, x, y, 1, 0);
        }
        return;
    }
    // a batch: (node, vector) pairs with the vector fastest, so adjacent threads
    // touch adjacent entries of the n x B rows of x and y
    int t = threadIdx.x;
    s_sig[t] = mine ? (unsigned char)s : 0;
    s_leaf[t] = (dir_t)leaf;
    s_code[t] = mine ? node_code(codes, delta, base, g - g0) : 0;
    __syncthreads();
    for (int p = t; p < DG_K2_BLOCK * B; p += DG_K2_BLOCK) {
        int i = p / B, k = p - i * B;
        int si = s_sig[i];
        if (!si) continue;
        if (left) visit_block<true>(sig, s_code[i], si, (i64)s_leaf[i], x, y, B, k);
        else visit_block<false>(sig, s_code[i], si, (i64)s_leaf[i], x, y, B, k);
    }
}

// ------------------------------------------- leaves, K chunks per block (one vector)
// The leaves of a single-vector product are latency-bound: per node of level L-2 a
// chain of dependent loads (its signature, the block scan, its code, its leaves'
// signatures, x) and one node per thread. Here a block of 256 threads takes K aligned
// chunks of 256 nodes (thread t: nodes t, t + 256, ..., of chunks cb .. cb+K-1) and
// runs each step for all K nodes before the next, so every thread has K independent
// loads in flight per step: (1) signatures, codes, directory samples; (2) K block scans
// sharing one barrier (each thread adds the totals of the warps before it); (3) the
// leaves' signatures (up to 4 nibbles per node, packed in 16 bits: bit 4b+q = cell
// (b, q) of the 4 x 4 block); (4) x at the first cell of every node; (5) the rest of
// each node's cells and the atomic updates, as visit_block. Nodes of a chunk before g0
// count in its scan and are not visited. Launch: grid = ceil(chunks meeting
// [g0, g0 + n) / K), block = 256; codes as the _blk kernels (delta/base: base index =
// chunk - g0 / 256).
//
// Aggregated variant (AGG, kernels distgraph_k2tree_leaves_k<K>_agg, DeviceMatrix
// aggregate=True): step (5) does not update y; it combines each row (column) of a 4 x 4
// block into a shared-memory table of K * DG_K2_AGG_SLOTS slots keyed by the index of y
// (open addressing: multiplicative hash, linear probing over at most DG_K2_AGG_PROBES
// slots; a key that finds no slot updates y directly), then, after a barrier, each
// occupied slot is one atomic on y: one per distinct row (column) of the block instead
// of one per row of every 4 x 4 block. Kronecker graphs hit their hub rows many times
// within the 1024 Morton-consecutive nodes of a block: 54.5% of the right product's
// updates on kron:21 (57.5% on kron:20, 62.9% on kron:18) repeat a row already updated
// in their block with K = 4, against 28.3% within a warp step
// (benchmarks/results/k2tree_agg_count.json, counted on the host from the tree). The
// table trades those scattered atomics on y for shared-memory ones (float adds in shared
// memory are compare-and-swap loops on sm_90). It is cleared before the barrier of step
// (2). Indices of y must be below 2^32 - 1 (the empty key). Measured slower, so the default
// stays the atomics straight to y: the right product at K = 4 takes 12.4/13.6/13.5x
// cuSPARSE's time on kron 21/22/23 against 2.36/2.60/2.68x without the table (H200,
// benchmarks/results/k2tree_gpu_agg.json).
#ifndef DG_K2_AGG_SLOTS  // slots of the table per chunk of 256 nodes (a power of two)
#define DG_K2_AGG_SLOTS 256
#endif
#ifndef DG_K2_AGG_PROBES
#define DG_K2_AGG_PROBES 8
#endif
#define DG_K2_EMPTY 0xffffffffu

__host__ __device__ constexpr int dg_ilog2(int v) { return v > 1 ? 1 + dg_ilog2(v >> 1) : 0; }

// y[key] (+)= a through the table (key: its slot by hash, then the next ones).
template <int SLOTS>
__device__ __forceinline__ void agg_put(unsigned int *s_key, value_t *s_val, value_t *__restrict__ y,
                                        i64 idx, value_t a) {
    const unsigned int key = (unsigned int)idx;
    unsigned int h = (key * 2654435761u) >> (32 - dg_ilog2(SLOTS));
#pragma unroll 1
    for (int p = 0; p < DG_K2_AGG_PROBES; ++p) {
        unsigned int k = *(volatile unsigned int *)&s_key[h];
        if (k == DG_K2_EMPTY) {
            k = atomicCAS(&s_key[h], DG_K2_EMPTY, key);
            if (k == DG_K2_EMPTY) k = key;
        }
        if (k == key) {
            Semiring::combine_shared(&s_val[h], a);
            return;
        }
        h = (h + 1) & (SLOTS - 1);
    }
    Semiring::flush(&y[idx], a);
}

template <int K, bool LEFT, bool AGG = false>
__device__ __forceinline__ void leaves_multi(const unsigned char *__restrict__ sig,
                                             const dir_t *__restrict__ dir, const u64 *__restrict__ codes,
                                             const unsigned int *__restrict__ delta, const u64 *__restrict__ base,
                                             i64 g0, i64 n, const value_t *__restrict__ x,
                                             value_t *__restrict__ y, unsigned int *s_key = nullptr,
                                             value_t *s_val = nullptr) {
    __shared__ int wsum[K][DG_K2_BLOCK / 32];
    constexpr int SLOTS = K * DG_K2_AGG_SLOTS;  // AGG: the table s_key/s_val (the kernel's shared memory)
    static_assert((SLOTS & (SLOTS - 1)) == 0, "DG_K2_AGG_SLOTS must be a power of two");
    if constexpr (AGG) {  // cleared before the barrier of step (2)
#pragma unroll
        for (int i = threadIdx.x; i < SLOTS; i += DG_K2_BLOCK) {
            s_key[i] = DG_K2_EMPTY;
            s_val[i] = Semiring::zero();
        }
    }
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 c0 = g0 / DG_K2_BLOCK, clast = (g0 + n - 1) / DG_K2_BLOCK;
    const i64 cb = c0 + (i64)blockIdx.x * K;
    int s[K], vis[K], incl[K], lam[K];
    u64 code[K];
    i64 first[K];
    // (1) signatures, codes, directory samples
#pragma unroll
    for (int j = 0; j < K; ++j) {
        i64 g = (cb + j) * DG_K2_BLOCK + threadIdx.x;
        s[j] = g < g0 + n ? nib(sig, g) : 0;
        bool mine = g >= g0 && g < g0 + n;
        vis[j] = mine ? s[j] : 0;
        code[j] = mine ? (delta ? base[cb + j - c0] + (u64)delta[g - g0] : codes[g - g0]) : 0;
        first[j] = cb + j <= clast ? (i64)dir[cb + j] : 0;
    }
    // (2) K block scans of the fan-outs, one barrier
#pragma unroll
    for (int j = 0; j < K; ++j) {
        int v = __popc(s[j]);
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(full, v, o);
            if (lane >= o) v += u;
        }
        incl[j] = v;
        if (lane == 31) wsum[j][w] = v;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < K; ++j) {
        int off = 0;
        for (int v = 0; v < w; ++v) off += wsum[j][v];
        first[j] += off + incl[j] - __popc(s[j]);
    }
    // (3) the leaves' signatures
#pragma unroll
    for (int j = 0; j < K; ++j) {
        int p = 0;
        i64 l = first[j];
#pragma unroll
        for (int b = 0; b < 4; ++b)
            if ((vis[j] >> b) & 1) p |= nib(sig, l++) << (4 * b);
        lam[j] = p;
    }
    // (4) x at the first cell of every node
    value_t v0[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
        v0[j] = Semiring::zero();
        if (lam[j]) {
            int c = __ffs(lam[j]) - 1, b = c >> 2, q = c & 3;
            int dr = 2 * (b >> 1) + (q >> 1), dc = 2 * (b & 1) + (q & 1);
            i64 in0 = LEFT ? compact(code[j] >> 1) << 2 : compact(code[j]) << 2;
            v0[j] = x[in0 + (LEFT ? dr : dc)];
        }
    }
    // (5) the other cells, combined per row (column) of the block, and the updates
#pragma unroll
    for (int j = 0; j < K; ++j) {
        int m = lam[j];
        if (!m) continue;
        int c1 = __ffs(m) - 1;
        i64 R = compact(code[j] >> 1) << 2, C = compact(code[j]) << 2;
        i64 in0 = LEFT ? R : C, out0 = LEFT ? C : R;
        value_t acc[4];
        bool any[4] = {false, false, false, false};
#pragma unroll
        for (int b = 0; b < 4; ++b) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                if (!((m >> (4 * b + q)) & 1)) continue;
                int dr = 2 * (b >> 1) + (q >> 1), dc = 2 * (b & 1) + (q & 1);
                int o = LEFT ? dc : dr, i = LEFT ? dr : dc;
                value_t v = (4 * b + q == c1) ? v0[j] : x[in0 + i];
                acc[o] = any[o] ? Semiring::combine(acc[o], v) : v;
                any[o] = true;
            }
        }
#pragma unroll
        for (int o = 0; o < 4; ++o) {
            if (!any[o]) continue;
            if constexpr (AGG)
                agg_put<SLOTS>(s_key, s_val, y, out0 + o, acc[o]);
            else
                Semiring::flush(&y[out0 + o], acc[o]);
        }
    }
    if constexpr (AGG) {  // (6) one update of y per occupied slot
        __syncthreads();
#pragma unroll
        for (int i = threadIdx.x; i < SLOTS; i += DG_K2_BLOCK) {
            unsigned int k = s_key[i];
            if (k != DG_K2_EMPTY) Semiring::flush(&y[k], s_val[i]);
        }
    }
}

extern "C" __global__ void distgraph_k2tree_leaves_k2(const unsigned char *__restrict__ sig,
                                                      const dir_t *__restrict__ dir,
                                                      const u64 *__restrict__ codes,
                                                      const unsigned int *__restrict__ delta,
                                                      const u64 *__restrict__ base, i64 g0, i64 n,
                                                      const value_t *__restrict__ x, value_t *__restrict__ y,
                                                      int left) {
    if (left)
        leaves_multi<2, true>(sig, dir, codes, delta, base, g0, n, x, y);
    else
        leaves_multi<2, false>(sig, dir, codes, delta, base, g0, n, x, y);
}

extern "C" __global__ void distgraph_k2tree_leaves_k4(const unsigned char *__restrict__ sig,
                                                      const dir_t *__restrict__ dir,
                                                      const u64 *__restrict__ codes,
                                                      const unsigned int *__restrict__ delta,
                                                      const u64 *__restrict__ base, i64 g0, i64 n,
                                                      const value_t *__restrict__ x, value_t *__restrict__ y,
                                                      int left) {
    if (left)
        leaves_multi<4, true>(sig, dir, codes, delta, base, g0, n, x, y);
    else
        leaves_multi<4, false>(sig, dir, codes, delta, base, g0, n, x, y);
}

extern "C" __global__ void distgraph_k2tree_leaves_k8(const unsigned char *__restrict__ sig,
                                                      const dir_t *__restrict__ dir,
                                                      const u64 *__restrict__ codes,
                                                      const unsigned int *__restrict__ delta,
                                                      const u64 *__restrict__ base, i64 g0, i64 n,
                                                      const value_t *__restrict__ x, value_t *__restrict__ y,
                                                      int left) {
    if (left)
        leaves_multi<8, true>(sig, dir, codes, delta, base, g0, n, x, y);
    else
        leaves_multi<8, false>(sig, dir, codes, delta, base, g0, n, x, y);
}

// The same with the updates of a block combined in shared memory first (AGG above).
extern "C" __global__ void distgraph_k2tree_leaves_k2_agg(const unsigned char *__restrict__ sig,
                                                          const dir_t *__restrict__ dir,
                                                          const u64 *__restrict__ codes,
                                                          const unsigned int *__restrict__ delta,
                                                          const u64 *__restrict__ base, i64 g0, i64 n,
                                                          const value_t *__restrict__ x,
                                                          value_t *__restrict__ y, int left) {
    __shared__ unsigned int s_key[2 * DG_K2_AGG_SLOTS];
    __shared__ value_t s_val[2 * DG_K2_AGG_SLOTS];
    if (left)
        leaves_multi<2, true, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
    else
        leaves_multi<2, false, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
}

extern "C" __global__ void distgraph_k2tree_leaves_k4_agg(const unsigned char *__restrict__ sig,
                                                          const dir_t *__restrict__ dir,
                                                          const u64 *__restrict__ codes,
                                                          const unsigned int *__restrict__ delta,
                                                          const u64 *__restrict__ base, i64 g0, i64 n,
                                                          const value_t *__restrict__ x,
                                                          value_t *__restrict__ y, int left) {
    __shared__ unsigned int s_key[4 * DG_K2_AGG_SLOTS];
    __shared__ value_t s_val[4 * DG_K2_AGG_SLOTS];
    if (left)
        leaves_multi<4, true, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
    else
        leaves_multi<4, false, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
}

extern "C" __global__ void distgraph_k2tree_leaves_k8_agg(const unsigned char *__restrict__ sig,
                                                          const dir_t *__restrict__ dir,
                                                          const u64 *__restrict__ codes,
                                                          const unsigned int *__restrict__ delta,
                                                          const u64 *__restrict__ base, i64 g0, i64 n,
                                                          const value_t *__restrict__ x,
                                                          value_t *__restrict__ y, int left) {
    __shared__ unsigned int s_key[8 * DG_K2_AGG_SLOTS];
    __shared__ value_t s_val[8 * DG_K2_AGG_SLOTS];
    if (left)
        leaves_multi<8, true, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
    else
        leaves_multi<8, false, true>(sig, dir, codes, delta, base, g0, n, x, y, s_key, s_val);
}

// ------------------------- leaves with each block's inputs loaded with its code (one vector)
// The same product as leaves_multi (K = 2 or 4 aligned chunks of 256 nodes per block of
// 256 threads), with a shorter chain of dependent loads and fewer instructions per node:
// (1) with the signatures and directory samples, each node's code, its row and column (an
//     unshuffle of two 32-bit halves instead of two 64-bit compactions) and at once the 4
//     entries of x its 4 x 4 block can read (x[C .. C+3], left: x[R .. R+3]) in one vector
//     load (16 bytes for float, 2 x 16 for double and int64, 4 for bool; scalar loads at
//     the end of x), so x no longer waits for the scan and the leaves' signatures: the
//     chain is {signature -> scan -> leaves' signatures} beside {code -> x}, two loads
//     deep instead of three (signature, leaves' signatures, x; then the other cells' x);
// (2) the K block scans in one: the K fan-outs (at most 4 each, so at most 128 per warp
//     and chunk) packed in the bytes of one word, one warp scan for all K, the totals of
//     the warps before taken by two __reduce_add_sync (16-bit fields) instead of a loop;
// (3) the leaves' signatures as leaves_multi (16 bits, bit 4b+q = cell (b, q));
// (4) the cells regrouped by output (bits permuted: bit 4o + i, o the row of the block and
//     i the column, left the transpose), each non-empty row combined from the registers of
//     (1) and one atomic update of y, as leaves_multi.
// x must start on a 16-byte boundary (bool: 4; the host checks, else it runs leaves_multi);
// nin is its length. Launch as leaves_multi (grid = ceil(chunks meeting [g0, g0 + n) / K), block 256).
// Kernels distgraph_k2tree_leaves_k2_pre/_k4_pre (sig, dir, codes, delta, base, g0, n, x,
// nin, y, left, hub, yhub); DeviceMatrix(prefetch=True, or "auto", the default). With LANES
// (distgraph_k2tree_leaves_k4_pre_lanes, lane_combine) step (5) below combines runs of
// adjacent lanes first. All three entries are leaves_pre<K, LEFT, LANES> through
// leaves_pre_entry<K, LANES>; only LANES tells _k4_pre_lanes from _k4_pre.

// even bits of v to bits 0..15, odd bits to bits 16..31 (four delta swaps)
__device__ __forceinline__ unsigned int unzip32(unsigned int v) {
    unsigned int t;
    t = (v ^ (v >> 1)) & 0x22222222u;
    v ^= t ^ (t << 1);
    t = (v ^ (v >> 2)) & 0x0C0C0C0Cu;
    v ^= t ^ (t << 2);
    t = (v ^ (v >> 4)) & 0x00F000F0u;
    v ^= t ^ (t << 4);
    t = (v ^ (v >> 8)) & 0x0000FF00u;
    v ^= t ^ (t << 8);
    return v;
}

// The entries i0 .. i0+3 of x (zero() past its end nin); x + i0 aligned to 4 entries.
__device__ __forceinline__ void ld4(const float *p, float *v) {
    float4 q = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void ld4(const double *p, double *v) {
    double2 a = __ldg(reinterpret_cast<const double2 *>(p)), b = __ldg(reinterpret_cast<const double2 *>(p) + 1);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ __forceinline__ void ld4(const long long *p, long long *v) {
    longlong2 a = __ldg(reinterpret_cast<const longlong2 *>(p)), b = __ldg(reinterpret_cast<const longlong2 *>(p) + 1);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ __forceinline__ void ld4(const unsigned char *p, unsigned char *v) {
    uchar4 q = __ldg(reinterpret_cast<const uchar4 *>(p));
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load_inputs(const value_t *__restrict__ x, i64 i0, i64 nin, value_t *v) {
    if (i0 + 4 <= nin) {
        ld4(x + i0, v);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = i0 + i < nin ? x[i0 + i] : Semiring::zero();
    }
}

// shfl_up of a value of y (all lanes)
__device__ __forceinline__ float shfl_up_val(float v, int o) { return __shfl_up_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double shfl_up_val(double v, int o) { return __shfl_up_sync(0xffffffffu, v, o); }
__device__ __forceinline__ i64 shfl_up_val(i64 v, int o) { return __shfl_up_sync(0xffffffffu, v, o); }
__device__ __forceinline__ unsigned char shfl_up_val(unsigned char v, int o) {
    return (unsigned char)__shfl_up_sync(0xffffffffu, (int)v, o);
}

// Padded hub outputs (DeviceMatrix(hub_outputs=H)): entries r < hub of y are accumulated at
// yhub[r * DG_K2_HUB_PAD] instead, each in a line of its own (128 bytes of float; bool: 32
// bytes, four to a line), and folded into y after
// the leaves (distgraph_k2tree_hub_fold, which also resets them). With the hubs renumbered
// first (degree order), the atomics of the hub rows would otherwise hit a few lines of y
// from every SM at once. hub = 0: y only (the default).
#ifndef DG_K2_HUB_PAD
#define DG_K2_HUB_PAD 32
#endif
__device__ __forceinline__ value_t *yref(value_t *__restrict__ y, value_t *__restrict__ yhub, i64 hub, i64 r) {
    return r < hub ? yhub + r * DG_K2_HUB_PAD : y + r;
}

extern "C" __global__ void distgraph_k2tree_hub_fold(value_t *__restrict__ y, value_t *__restrict__ yhub, i64 hub) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= hub) return;
    value_t *h = yhub + r * DG_K2_HUB_PAD;
    y[r] = Semiring::combine(y[r], *h);
    *h = Semiring::zero();
}

template <int K, bool LEFT, bool LANES = false>
__device__ __forceinline__ void leaves_pre(const unsigned char *__restrict__ sig, const dir_t *__restrict__ dir,
                                           const u64 *__restrict__ codes, const unsigned int *__restrict__ delta,
                                           const u64 *__restrict__ base, i64 g0, i64 n,
                                           const value_t *__restrict__ x, i64 nin, value_t *__restrict__ y,
                                           i64 hub, value_t *__restrict__ yhub) {
    static_assert(K >= 1 && K <= 4, "the packed scan holds up to 4 chunks");
    __shared__ unsigned int wsum[DG_K2_BLOCK / 32];
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 c0 = g0 / DG_K2_BLOCK, clast = (g0 + n - 1) / DG_K2_BLOCK;
    const i64 cb = c0 + (i64)blockIdx.x * K;
    int s[K], vis[K], lam[K];
    unsigned int ob[K];  // the row (left: column) of the block: y's entries ob * 4 .. ob * 4 + 3
    i64 first[K];
    value_t xv[K][4];
    // (1) signatures, directory samples, codes and the inputs of each block
#pragma unroll
    for (int j = 0; j < K; ++j) {
        i64 g = (cb + j) * DG_K2_BLOCK + threadIdx.x;
        bool mine = g >= g0 && g < g0 + n;
        s[j] = g < g0 + n ? nib(sig, g) : 0;
        vis[j] = mine ? s[j] : 0;
        first[j] = cb + j <= clast ? (i64)dir[cb + j] : 0;
        ob[j] = 0;
        if (mine) {
            u64 code = delta ? base[cb + j - c0] + (u64)delta[g - g0] : codes[g - g0];
            unsigned int lo = unzip32((unsigned int)code), hi = unzip32((unsigned int)(code >> 32));
            unsigned int col = __byte_perm(lo, hi, 0x5410), row = __byte_perm(lo, hi, 0x7632);
            ob[j] = LEFT ? col : row;
            load_inputs(x, (i64)(LEFT ? row : col) << 2, nin, xv[j]);
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) xv[j][i] = Semiring::zero();
        }
    }
    // (2) the K block scans of the fan-outs: byte j of a word holds chunk j's count
    unsigned int p = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) p |= (unsigned int)__popc(s[j]) << (8 * j);
    unsigned int incl = p;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        unsigned int u = __shfl_up_sync(full, incl, o);
        if (lane >= o) incl += u;
    }
    if (lane == 31) wsum[w] = incl;
    __syncthreads();
    const unsigned int q = lane < w ? wsum[lane] : 0u;  // the totals of the warps before this one
    const unsigned int even = __reduce_add_sync(full, q & 0x00ff00ffu);  // chunks 0, 2 in 16-bit fields
    const unsigned int odd = __reduce_add_sync(full, (q >> 8) & 0x00ff00ffu);  // chunks 1, 3
    const unsigned int excl = incl - p;
#pragma unroll
    for (int j = 0; j < K; ++j)
        first[j] += (i64)((excl >> (8 * j)) & 255u) + (i64)((((j & 1) ? odd : even) >> (16 * (j >> 1))) & 0xffffu);
    // (3) the leaves' signatures
#pragma unroll
    for (int j = 0; j < K; ++j) {
        int m = 0;
        i64 l = first[j];
#pragma unroll
        for (int b = 0; b < 4; ++b)
            if ((vis[j] >> b) & 1) m |= nib(sig, l++) << (4 * b);
        lam[j] = m;
    }
    // (4) cells by output (bit 4o + i), each non-empty output combined and updated once
#pragma unroll
    for (int j = 0; j < K; ++j) {
        unsigned int m = (unsigned int)lam[j];
        if (!LANES && !m) continue;  // LANES: every lane takes part in the shuffles below
        unsigned int t = (m ^ (m >> 2)) & 0x0C0Cu;  // bit 4b+q -> bit 4 dr + dc
        m ^= t ^ (t << 2);
        if (LEFT) {  // the transpose: bit 4 dc + dr
            t = (m ^ (m >> 3)) & 0x0A0Au;
            m ^= t ^ (t << 3);
            t = (m ^ (m >> 6)) & 0x00CCu;
            m ^= t ^ (t << 6);
        }
        const int o1 = m ? (__ffs(m) - 1) >> 2 : 0;  // LANES: the first output goes through (5)
        value_t v1 = Semiring::zero();
#pragma unroll
        for (int o = 0; o < 4; ++o) {
            const unsigned int r = (m >> (4 * o)) & 15u;
            if (!r) continue;
            value_t acc = xv[j][0];
            bool any = false;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                if (!((r >> i) & 1)) continue;
                acc = any ? Semiring::combine(acc, xv[j][i]) : xv[j][i];
                any = true;
            }
            if (LANES && o == o1)
                v1 = acc;
            else
                Semiring::flush(yref(y, yhub, hub, ((i64)ob[j] << 2) + o), acc);
        }
        if constexpr (LANES) {
            // (5) runs of adjacent lanes whose first output is the same entry of y are
            // combined (a segmented inclusive scan, Hillis-Steele within each run) and the
            // run's last lane updates y once. key: that entry, -1 for a lane without one.
            const i64 key = m ? ((i64)ob[j] << 2) + o1 : -1;
            const i64 kup = __shfl_up_sync(full, key, 1);
            const unsigned heads = __ballot_sync(full, lane == 0 || kup != key);
            const int start = 31 - __clz(heads & ((2u << lane) - 1u));  // first lane of this lane's run
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                value_t u = shfl_up_val(v1, off);
                if (lane - off >= start) v1 = Semiring::combine(v1, u);
            }
            const bool last = lane == 31 || ((heads >> (lane + 1)) & 1u);
            if (key >= 0 && last) Semiring::flush(yref(y, yhub, hub, key), v1);
        }
    }
}

// The entries: K and LANES fixed at compile time, the direction (left) picked per launch.
template <int K, bool LANES>
__device__ __forceinline__ void leaves_pre_entry(const unsigned char *__restrict__ sig, const dir_t *__restrict__ dir,
                                                 const u64 *__restrict__ codes,
                                                 const unsigned int *__restrict__ delta, const u64 *__restrict__ base,
                                                 i64 g0, i64 n, const value_t *__restrict__ x, i64 nin,
                                                 value_t *__restrict__ y, int left, i64 hub,
                                                 value_t *__restrict__ yhub) {
    if (left)
        leaves_pre<K, true, LANES>(sig, dir, codes, delta, base, g0, n, x, nin, y, hub, yhub);
    else
        leaves_pre<K, false, LANES>(sig, dir, codes, delta, base, g0, n, x, nin, y, hub, yhub);
}

extern "C" __global__ void distgraph_k2tree_leaves_k2_pre(const unsigned char *__restrict__ sig,
                                                          const dir_t *__restrict__ dir,
                                                          const u64 *__restrict__ codes,
                                                          const unsigned int *__restrict__ delta,
                                                          const u64 *__restrict__ base, i64 g0, i64 n,
                                                          const value_t *__restrict__ x, i64 nin,
                                                          value_t *__restrict__ y, int left, i64 hub,
                                                          value_t *__restrict__ yhub) {
    leaves_pre_entry<2, false>(sig, dir, codes, delta, base, g0, n, x, nin, y, left, hub, yhub);
}

extern "C" __global__ void distgraph_k2tree_leaves_k4_pre(const unsigned char *__restrict__ sig,
                                                          const dir_t *__restrict__ dir,
                                                          const u64 *__restrict__ codes,
                                                          const unsigned int *__restrict__ delta,
                                                          const u64 *__restrict__ base, i64 g0, i64 n,
                                                          const value_t *__restrict__ x, i64 nin,
                                                          value_t *__restrict__ y, int left, i64 hub,
                                                          value_t *__restrict__ yhub) {
    leaves_pre_entry<4, false>(sig, dir, codes, delta, base, g0, n, x, nin, y, left, hub, yhub);
}

// The same with runs of adjacent lanes updating the same entry of y combined first ((5)
// above; DeviceMatrix(prefetch=True, lane_combine=True), the default at K = 4). Of the right
// product's updates on kron:18, 15.0% go to the entry the previous node (lane) updated (16.7%
// on kron:16; counted on the host from the Morton-sorted arcs, not in a results file).
extern "C" __global__ void distgraph_k2tree_leaves_k4_pre_lanes(const unsigned char *__restrict__ sig,
                                                                const dir_t *__restrict__ dir,
                                                                const u64 *__restrict__ codes,
                                                                const unsigned int *__restrict__ delta,
                                                                const u64 *__restrict__ base, i64 g0, i64 n,
                                                                const value_t *__restrict__ x, i64 nin,
                                                                value_t *__restrict__ y, int left, i64 hub,
                                                          value_t *__restrict__ yhub) {
    leaves_pre_entry<4, true>(sig, dir, codes, delta, base, g0, n, x, nin, y, left, hub, yhub);
}
