"""How many of the k2+F leaves' atomic updates of ``y`` a block could combine (host only).

    python benchmarks/k2tree_agg_count.py --graphs kron:18 kron:20 --outdir benchmarks/results

A single-vector right product with the cached frontier (``distgraph_k2tree_leaves_k<K>``)
issues one atomic update of ``y`` per non-empty row of each 4 x 4 block (node of level
L-2); the left product one per non-empty column. This counts, from the tree, those
updates and the distinct indices of ``y`` among them within each group of nodes that
one unit of the kernel handles: a warp step (32 consecutive nodes of a chunk), a chunk
of 256 aligned nodes, and a block of K aligned chunks (K = 2, 4, 8; the launch starts at
the chunk of the level's first node, as the kernels do). ``1 - distinct / updates`` is
the share of atomics that combining the updates of such a group first (warp-level
aggregation, or the shared-memory table of ``aggregate=True``) would remove. Results
to OUTDIR/k2tree_agg_count.json with the commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import commit
sys.path.insert(0, ROOT)

BLOCK = 256


def updates(tree, left=False):
    """(node position in level L-2, index of y) of every update of the leaves, sorted:
    one per non-empty row (column) of each 4 x 4 block."""
    from distgraph.formats.k2tree import morton_encode

    r, c = tree.to_coo(raw=True)
    r, c = np.asarray(r, np.int64), np.asarray(c, np.int64)
    node = np.searchsorted(tree.frontier, morton_encode(r, c) >> np.uint64(4)).astype(np.int64)
    key = np.unique(node * np.int64(1 << 32) + (c if left else r))  # one update per (node, row)
    return key >> 32, key & ((1 << 32) - 1)


def count(tree, left=False):
    L = tree.levels
    g0 = int(tree.level_start[L - 2])
    pos, idx = updates(tree, left)
    U = int(pos.shape[0])
    g = g0 + pos
    chunk = g // BLOCK - g0 // BLOCK
    groups = {"warp_step_32": chunk * 8 + (g % BLOCK) // 32, "chunk_256": chunk}
    for K in (2, 4, 8):
        groups[f"block_k{K}"] = chunk // K
    out = {"updates": U}
    for name, grp in groups.items():
        d = int(np.unique(grp * np.int64(1 << 32) + idx).shape[0])
        out[name] = {"distinct": d, "distinct_share": d / max(U, 1), "combinable_share": 1 - d / max(U, 1)}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", nargs="*", default=["kron:18", "kron:20"])
    p.add_argument("--outdir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--left", action="store_true", help="also count the left product's updates (columns)")
    a = p.parse_args(argv)
    from distgraph.formats.k2tree import K2Tree
    from distgraph.generators import from_spec

    res = {"benchmark": "k2tree_agg_count", "commit": commit(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "graphs": []}
    for spec in a.graphs:
        t0 = time.perf_counter()
        g = from_spec(spec)
        tree = K2Tree.from_graph(g).with_frontier()
        L = tree.levels
        r = {"graph": spec, "arcs": int(g.m), "nodes_L2": int(tree.level_sizes()[L - 2]),
             "right": count(tree, False)}
        if a.left:
            r["left"] = count(tree, True)
        r["elapsed_s"] = time.perf_counter() - t0
        res["graphs"].append(r)
        print(json.dumps(r), flush=True)
        del g, tree
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, "k2tree_agg_count.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
