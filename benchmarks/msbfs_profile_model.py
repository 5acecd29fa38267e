"""A distance-profile wave for closeness on high-diameter graphs (host model, no GPU): how much
of a batch's work a GPU kernel could skip by carrying each vertex's distances to the batch's
sources as small offsets instead of visiting it once per level that brings it new bits.

In a batch of ``kappa`` sources grouped into a compact BFS ball (as closeness() runs them on the
GPU), vertex v's distances d(s, v) lie within a few levels of its base b(v) = min_s d(s, v) (the
spread; road-NY: about 20). The bit-parallel MS-BFS (kernels/msbfs.cu) visits v once per level
l with some d(s, v) = l (the *events*: about 20 per vertex and batch on road-NY) and reads the
in-neighbours' 32-byte frontier words each time. A wave over the base levels instead could
visit v once, at level b(v), and take its whole profile (``kappa`` offsets d(s, v) - b(v), one
byte each while the spread is below 255) as the element-wise minimum of its lower neighbours'
profiles plus one. That is exact for the pairs (s, v) whose shortest paths reach v from a
neighbour of smaller base; the others (paths that come around the ball, and the ball's own
vertices) are fixed as a label-correcting search would: here each vertex, at its visit, takes the
minimum over all its neighbours (pull) and pushes improvements to the neighbours visited already,
which push on (a worklist), so every arc ends consistent and the estimates are the distances.
The model runs that sequentially (numba) and checks the result against scipy.

Per batch: the wave's levels, the spread (mean, max), the fixes (improvements of a vertex after
its visit) and the arcs they read, and bytes moved by the bit kernel (events x (in-arcs + 3) x
kappa / 8) against the wave (each vertex: its neighbours' profiles read, its own written, ``kappa``
bytes each; its first push compares with the profiles it has just read, not counted again) and
its fixes. The model visits a level's vertices one after the other (later ones see earlier ones):
a level-synchronous kernel's counts differ, this is an estimate, not a bound.

    python benchmarks/msbfs_profile_model.py road-NY.gr.xz --batches 0 516 1029 \\
        --out benchmarks/results/msbfs_profile_model_roadNY.json
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import run_ball_model  # noqa: E402

INF = np.int32(2**30)


def _wave_kernel():
    from numba import njit

    @njit(cache=True)
    def wave(indptr, indices, order, sources, k):
        """Visit the vertices in ``order`` (increasing base level); each takes its profile from all
        its neighbours (pull), then pushes improvements to its neighbours visited already, and
        every vertex improved so pushes on (a worklist). Returns the estimates (n x k) and the
        counts: arcs read by the wave, improvements after a vertex's visit, arcs they read."""
        n = indptr.shape[0] - 1
        est = np.full((n, k), INF, np.int32)
        for j in range(k):
            est[sources[j], j] = 0
        done = np.zeros(n, np.bool_)
        stack = np.empty(n * 4 + 16, np.int64)
        wave_arcs = 0
        fixes = 0
        fix_arcs = 0
        for i in range(order.shape[0]):
            v = order[i]
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                wave_arcs += 1
                for j in range(k):
                    c = est[u, j] + 1
                    if est[u, j] < INF and c < est[v, j]:
                        est[v, j] = c
            done[v] = True
            top = 0
            stack[top] = v
            top += 1
            first = True
            while top > 0:
                top -= 1
                y = stack[top]
                for e in range(indptr[y], indptr[y + 1]):
                    x = indices[e]
                    if not done[x]:
                        continue
                    if not first:
                        fix_arcs += 1
                    better = False
                    for j in range(k):
                        if est[y, j] < INF and est[y, j] + 1 < est[x, j]:
                            est[x, j] = est[y, j] + 1
                            better = True
                    if better:
                        fixes += 1
                        if top >= stack.shape[0]:
                            stack = np.concatenate((stack, np.empty(stack.shape[0], np.int64)))
                        stack[top] = x
                        top += 1
                first = False
        return est, wave_arcs, fixes, fix_arcs

    return wave


_WAVE = None


def batch_model(A, sources):
    """One batch: exact distances (scipy) against the wave's, and the counts of both kernels."""
    from scipy.sparse.csgraph import shortest_path

    global _WAVE
    if _WAVE is None:
        _WAVE = _wave_kernel()
    n, k = A.shape[0], len(sources)
    D = shortest_path(A, unweighted=True, indices=sources)
    reach = ~np.isinf(D)
    D = np.where(reach, D, INF).astype(np.int32)
    base = np.where(reach, D, INF).min(0)
    seen = base < INF
    spread = np.where(seen, np.where(reach, D, -1).max(0) - base, 0)
    order = np.flatnonzero(seen)[np.argsort(base[seen], kind="stable")]
    est, wave_arcs, fixes, fix_arcs = _WAVE(A.indptr.astype(np.int64), A.indices.astype(np.int64), order,
                                            np.asarray(sources, np.int64), k)
    exact = bool((est.T == D).all())
    deg = np.diff(A.indptr)
    # bit kernel: one event per (vertex, level) with new bits, reading its in-arcs' 32-byte words
    events = 0
    for lo in range(0, n, 4096):
        blk = np.sort(np.where(reach[:, lo:lo + 4096], D[:, lo:lo + 4096], -1), axis=0)
        distinct = (np.diff(blk, axis=0) != 0) & (blk[1:] >= 0)
        events += int((distinct.sum(0) + (blk[0] >= 0)).sum())
    bits_bytes = events * (float(deg.mean()) + 3) * k / 8   # kappa-bit words: in-arcs' F, Vc twice, Fn
    wave_bytes = (wave_arcs + int(seen.sum())) * k          # neighbours' profiles read, own written
    fix_bytes = (fix_arcs + fixes) * k
    return {"levels": int(base[seen].max()), "vertices_reached": int(seen.sum()),
            "spread_mean": float(spread[seen].mean()), "spread_max": int(spread[seen].max()),
            "wave_exact": exact, "wave_arcs": int(wave_arcs), "fixes": int(fixes),
            "fixes_per_vertex": fixes / max(int(seen.sum()), 1), "fix_arcs": int(fix_arcs),
            "bit_events": events, "bit_events_per_vertex": events / max(int(seen.sum()), 1),
            "bit_kernel_bytes": bits_bytes, "wave_bytes": wave_bytes, "fix_bytes": fix_bytes,
            "bit_over_wave_bytes": bits_bytes / max(wave_bytes + fix_bytes, 1)}


def main(argv=None):
    run_ball_model("msbfs_profile_model", __doc__, batch_model, argv)


if __name__ == "__main__":
    main()
