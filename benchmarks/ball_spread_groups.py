"""Which groups of the ball order have sources far apart (host only, no GPU): for every group of
``kappa`` sources that closeness() hands the GPU (every vertex with arcs, compact BFS balls:
``ball_order``), the balls it was filled from (``seeds``) and the largest distance from its first
source to its others (``spread``, a BFS per group: at least half the group's diameter). The
profile wave sets aside the groups filled from more than one ball (``ball_sources(spread=True)``):
this checks that they are the spread ones.

    DISTGRAPH_DATA=../shared/data python benchmarks/ball_spread_groups.py road-NY.gr.xz \\
        --out benchmarks/results/ball_spread_groups_roadNY.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, commit, dirty  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph", help="a file of the data folder (DISTGRAPH_DATA or ../shared/data)")
    ap.add_argument("--kappa", type=int, default=256)
    ap.add_argument("--far", type=int, default=150, help="a spread counted as far apart")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import shortest_path

    from distgraph.backends.cpu.msbfs import ball_order
    from distgraph.graph.readers import read_graph

    g = read_graph(os.path.join(os.environ.get("DISTGRAPH_DATA") or str(ROOT.parent / "shared" / "data"), a.graph))
    tptr, tidx, _ = g.csc()
    is_src = np.diff(g.indptr) > 0
    k = int(is_src.sum())
    seeds = np.zeros(-(-k // a.kappa) + 1, np.int64)
    order = ball_order(np.asarray(g.indptr, np.int64), np.asarray(g.indices), np.asarray(tptr, np.int64),
                       np.asarray(tidx), is_src, a.kappa, 16 * a.kappa, seeds)
    nb = -(-k // a.kappa)
    seeds = seeds[:nb]
    A = sp.csr_matrix((np.ones(g.indices.size, np.int8), g.indices, g.indptr), shape=(g.n, g.n))
    spread = np.zeros(nb, np.int64)
    for b in range(nb):
        s = order[b * a.kappa:(b + 1) * a.kappa]
        d = shortest_path(A, unweighted=True, indices=[int(s[0])])[0][s]
        spread[b] = int(d[np.isfinite(d)].max()) if np.isfinite(d).any() else 0
        spread[b] = -1 if not np.isfinite(d).all() else spread[b]   # -1: the group spans components
    multi = seeds > 1
    far = (spread >= a.far) | (spread < 0)
    res = {"benchmark": "ball_spread_groups", "graph": a.graph, "vertices": g.n, "sources": k, "kappa": a.kappa,
           "groups": nb, "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "note": __doc__.split("\n\n")[0], "far": a.far,
           "groups_from_several_balls": int(multi.sum()), "far_groups": int(far.sum()),
           "far_groups_from_several_balls": int((far & multi).sum()),
           "spread_percentiles_50_90_99_max": np.percentile(spread, [50, 90, 99, 100]).tolist(),
           "seeds": seeds.tolist(), "spread": spread.tolist()}
    Path(a.out).write_text(json.dumps(res, indent=1))
    print({k2: v for k2, v in res.items() if k2 not in ("seeds", "spread", "note")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
