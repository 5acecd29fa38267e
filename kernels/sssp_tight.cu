// sssp_tight.cu: the canonical shortest-path predecessors of a finished SSSP run, on the GPU.
//
// The predecessor of a reached vertex v is the smallest tail u of a tight arc u -> v
// (d[u] + w == d[v], both finite), as _tight_min_pred in
// distgraph/backends/cpu/bellman_ford.py computes it on the host: it depends on the distances
// only, so it is the same for any driver, backend and number of PEs. One warp per tail vertex
// of this PE's block (lanes over its arcs), best[v] = min(best[v], u) by a 64-bit atomicMin;
// the host reduces best over the PEs (MPI min) and walks it for a cycle of tight arcs.
//
// Sums as the CPU forms them: int64 added with wrap-around (numba's int64 +), float64 added
// once (IEEE, no contraction possible for a single add).
//
// Arguments: indptr (int64, nl + 1, from 0), indices (int32 heads), w (the weights as stored:
// int64, int32, float64 or float32; ignored when unit != 0: every arc weighs 1), d (the whole distance array, n),
// nl, lo (this block's first vertex), inf (the unreached sentinel), best (uint64, n; the
// caller fills it with UINT64_MAX), names (int64, n, or null): when given, a tail u is compared
// and kept as names[u] (a renamed graph's tails by the caller's ids, RoundsSSSP's relabel).

template <typename T>
__device__ __forceinline__ T dg_tight_add(T a, T b) { return a + b; }

template <>
__device__ __forceinline__ long long dg_tight_add<long long>(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);  // wraps as numba's int64 +
}

template <typename T, typename WT>
__device__ void dg_tight_pred(const long long *__restrict__ indptr, const int *__restrict__ indices,
                              const WT *__restrict__ w, int unit, const T *__restrict__ d, long long nl,
                              long long lo, T inf, unsigned long long *__restrict__ best,
                              const long long *__restrict__ names) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long ul = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; ul < nl; ul += warps) {
        const T du = d[ul + lo];
        if (du == inf) continue;
        const unsigned long long u = (unsigned long long)(names ? names[ul + lo] : ul + lo);
        const long long end = indptr[ul + 1];
        for (long long k = indptr[ul] + lane; k < end; k += 32) {
            const int v = indices[k];
            const T dv = d[v];
            if (dv != inf && dg_tight_add<T>(du, unit ? (T)1 : (T)w[k]) == dv && u < best[v])
                atomicMin(best + v, u);
        }
    }
}

// One kernel per weight dtype as stored (_Block: int32 and float32 stay 4 bytes), named by it;
// the work dtype T is int64 for integer weights, float64 for float ones (exact widenings).
#define DG_TIGHT_KERNEL(SFX, T, WT)                                                                        \
    extern "C" __global__ void distgraph_sssp_tight_pred_##SFX(const long long *indptr, const int *indices, \
                                                               const WT *w, int unit, const T *d,          \
                                                               long long nl, long long lo, T inf,          \
                                                               unsigned long long *best,                   \
                                                               const long long *names) {                   \
        dg_tight_pred<T, WT>(indptr, indices, w, unit, d, nl, lo, inf, best, names);                       \
    }

DG_TIGHT_KERNEL(i64, long long, long long)
DG_TIGHT_KERNEL(i32, long long, int)
DG_TIGHT_KERNEL(f64, double, double)
DG_TIGHT_KERNEL(f32, double, float)
