"""How much a warp could save on the per-source counts of the GPU pull kernel (host only, no
GPU): in ``distgraph_msbfs_pull_vertex_blocks`` every vertex that gets new bits at a level adds
one shared atomic per new bit (the per-source count loop; 25% of the kernel's stall samples on
road-NY, benchmarks/results/session10_x2/call5/ncu/pull-source-top-lines.txt). Lanes of a warp
whose vertices got exactly the same BFSs could add once for all of them (``__match_any_sync``
on the new bits, the group's first lane adding the group size). From exact BFS distances of
the batch's sources (scipy), the graph reordered and the sources grouped into balls as
closeness() does on the GPU, the vertices that get new bits at each level are cut into warps
of 32 in two orders: by vertex id (after the reordering: neighbours mostly together, an
optimistic stand-in for the kernel's candidate order, which follows the marking) and shuffled
(pessimistic). Per batch: events, new bits (= atomics now), the loop iterations warps run
(the largest count of a lane), and the same two with identical sets combined.

    python benchmarks/msbfs_count_groups.py road-NY.gr.xz --batches 0 516 1029 \\
        --out benchmarks/results/msbfs_count_groups_roadNY.json
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import run_ball_model  # noqa: E402


def warp_counts(keys: np.ndarray, pc: np.ndarray, order: np.ndarray) -> dict:
    """keys: (m, words) uint64 new-bit sets of m event vertices, pc: their popcounts, order: a
    permutation of range(m) (the lane order). Atomics and warp loop iterations, as the kernel
    runs them and with identical sets of a warp combined."""
    atom = iters = atom_g = iters_g = lanes_grouped = 0
    for w0 in range(0, order.size, 32):
        idx = order[w0:w0 + 32]
        p = pc[idx]
        atom += int(p.sum())
        iters += int(p.max())
        _, first = np.unique(keys[idx], axis=0, return_index=True)
        atom_g += int(p[first].sum())
        iters_g += int(p[first].max())
        lanes_grouped += int(idx.size - first.size)
    return dict(atomics=atom, iterations=iters, atomics_grouped=atom_g, iterations_grouped=iters_g,
                lanes_in_a_group_not_first=lanes_grouped)


def batch_counts(A, sources, rng):
    from scipy.sparse.csgraph import shortest_path

    D = shortest_path(A, unweighted=True, indices=sources)
    D[np.isinf(D)] = -1
    D = D.astype(np.int32)
    k = D.shape[0]
    words = -(-k // 64)
    L = int(D.max())
    tot = {"levels": L, "events": 0, "new_bits": 0}
    for name in ("by_id", "shuffled"):
        tot[name] = dict(atomics=0, iterations=0, atomics_grouped=0, iterations_grouped=0,
                         lanes_in_a_group_not_first=0)
    for lv in range(1, L + 1):
        hit = D == lv                          # (k, n)
        ev = np.flatnonzero(hit.any(0))
        if ev.size == 0:
            continue
        bits = np.zeros((ev.size, words * 64), np.bool_)
        bits[:, :k] = hit[:, ev].T
        keys = np.packbits(bits, axis=1, bitorder="little").view(np.uint64).reshape(ev.size, words)
        pc = bits.sum(1).astype(np.int64)
        tot["events"] += int(ev.size)
        tot["new_bits"] += int(pc.sum())
        for name, order in (("by_id", np.arange(ev.size)), ("shuffled", rng.permutation(ev.size))):
            for key, v in warp_counts(keys, pc, order).items():
                tot[name][key] += v
    for name in ("by_id", "shuffled"):
        t = tot[name]
        t["atomics_saved"] = 1 - t["atomics_grouped"] / max(t["atomics"], 1)
        t["iterations_saved"] = 1 - t["iterations_grouped"] / max(t["iterations"], 1)
    return tot


def main(argv=None):
    rng = np.random.default_rng(1)
    run_ball_model("msbfs_count_groups", __doc__, lambda A, src: batch_counts(A, src, rng), argv)


if __name__ == "__main__":
    main()
