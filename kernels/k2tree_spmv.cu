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
//
// Encodings
//   sig[]      uint8, two 4-bit signatures per byte, node g = (sig[g>>1] >> 4*(g&1)) & 15,
//              level order (the bitstring T of the paper).
//   dir[]      uint32: dir[i] = first child (global node id) of node i*S; any node adds
//              the popcount of the signatures between node (g/S)*S and g.
//   codes[]    uint64 Morton codes of the nodes of a tile (row bits odd, column bits
//              even, two bits b1 b0 per level below the root).
//   scan[]     int32, inclusive scan of the fan-outs of a tile (offsets = scan - own),
//              used instead of dir when use_dir == 0.
//   x, y       n x B row-major (B vectors of a batch); y holds the semiring's zero
//              before a product. Right product: cell (r, c) adds x[c] into y[r]; left:
//              x[r] into y[c].
//
// Semirings (#define SEMIRING: 0 plus_times, 1 lor_land, 2 min_plus; VALUE_T the
// element type) are functors, one atomic per non-zero: atomicAdd; a plain store of 1
// (every racing writer stores the same value); an atomic minimum by compare-and-swap.
//
// __global__ distgraph_k2tree_fanout  (sig, g0, n, fan)              fan[t] = popcount(sig of g0+t)
// __global__ distgraph_k2tree_expand  (sig, dir, S, use_dir, scan, in, g0, n, child0, out)
//            child codes of nodes g0..g0+n-1 (codes in[]) into out[first_child - child0 ...]
// __global__ distgraph_k2tree_leaves  (sig, dir, S, use_dir, scan, codes, g0, n, leaf0, x, y, B, left)
//            one thread per (node of level L-2, vector); leaf0 is the first leaf of g0 (scan mode)
// __global__ distgraph_csr_rows       (indptr, indices, nrows, x, y, B)
//            y[i] (+)= x[j] for stored (i, j): one thread per (row, vector); the CSR baseline
//            with the same semirings (left products run it on the CSR of A^T).

#ifndef SEMIRING
#define SEMIRING 0
#endif
#ifndef VALUE_T
#define VALUE_T float
#endif

typedef VALUE_T value_t;
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
template <typename T> struct PlusTimes {
    __device__ static __forceinline__ void update(T *y, T x) { atomic_add(y, x); }
};
template <typename T> struct LorLand {
    __device__ static __forceinline__ void update(T *y, T x) { if (x) *(volatile T *)y = (T)1; }
};
template <typename T> struct MinPlus {
    __device__ static __forceinline__ void update(T *y, T x) {
        T v = x + (T)1;
        if (v < *(volatile T *)y) atomic_min(y, v);
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
__device__ __forceinline__ i64 first_child(const unsigned char *sig, const unsigned int *dir, int S, i64 g) {
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

extern "C" __global__ void distgraph_k2tree_expand(const unsigned char *sig, const unsigned int *dir, int S,
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

extern "C" __global__ void distgraph_k2tree_leaves(const unsigned char *sig, const unsigned int *dir, int S,
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
    for (i64 jj = indptr[i]; jj < indptr[i + 1]; ++jj) Semiring::update(&y[i * B + k], x[(i64)indices[jj] * B + k]);
}
