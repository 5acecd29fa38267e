"""How many vertices the GPU pull kernel evaluates per batch, on the host (no GPU): the
candidates of level l + 1 are the slice sets (8 consecutive ids after the reordering) that
hold an out-neighbour of a set active at level l, every vertex of them evaluated
(``distgraph_msbfs_pull_blocks``), against candidates kept per vertex (the out-neighbours of
the vertices that got new bits at level l). From exact BFS distances of the batch's sources
(scipy), the graph reordered and the sources grouped into balls as closeness() does on the
GPU (reorder "auto" -> RCM for road networks, ball order). Per batch: levels, evaluations of
each kind, those not yet reached by every search ("open"), the arcs each marking walks, and
the (vertex, level) events where a vertex gets new bits (the work any pull must do).

    python benchmarks/msbfs_pull_candidates.py road-NY.gr.xz --batches 0 516 1029 \\
        --out benchmarks/results/msbfs_pull_candidates_roadNY.json
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import run_ball_model  # noqa: E402


def batch_counts(A, S, sources):
    from scipy.sparse.csgraph import shortest_path

    D = shortest_path(A, unweighted=True, indices=sources)
    D[np.isinf(D)] = -1
    D = D.astype(np.int32)
    L, hi = int(D.max()), D.max(0)
    outdeg = np.diff(A.indptr)
    n = A.shape[0]
    c = dict(levels=L, set_candidates=0, set_open=0, set_marking_arcs=0, vertex_candidates=0, vertex_open=0,
             vertex_marking_arcs=0, new_bit_events=0)
    for lv in range(L):
        newv = np.flatnonzero((D == lv).any(0))
        act = np.unique(newv // 8)
        cand = np.unique(S[act].indices)
        verts = (cand[:, None] * 8 + np.arange(8)).ravel()
        verts = verts[verts < n]
        c["set_candidates"] += int(verts.size)
        c["set_open"] += int((hi[verts] >= lv + 1).sum())
        c["set_marking_arcs"] += int(S[act].nnz)
        nb = np.unique(A[newv].indices)
        c["vertex_candidates"] += int(nb.size)
        c["vertex_open"] += int((hi[nb] >= lv + 1).sum())
        c["vertex_marking_arcs"] += int(outdeg[newv].sum())
        c["new_bit_events"] += int(np.flatnonzero((D == lv + 1).any(0)).size)
    return c


def main(argv=None):
    import scipy.sparse as sp

    S = {}

    def one(A, src):
        if "S" not in S:   # the slice-set graph, once
            n = A.shape[0]
            rows = np.repeat(np.arange(n), np.diff(A.indptr))
            m = sp.csr_matrix((np.ones(rows.size, np.int8), (rows // 8, A.indices // 8)), shape=((n + 7) // 8,) * 2)
            m.data[:] = 1
            S["S"] = m
        c = batch_counts(A, S["S"], src)
        c["set_over_vertex_candidates"] = c["set_candidates"] / max(c["vertex_candidates"], 1)
        return c

    run_ball_model("msbfs_pull_candidates", __doc__, one, argv, note=False)


if __name__ == "__main__":
    main()
