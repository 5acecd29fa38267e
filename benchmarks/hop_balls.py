"""How many vertices lie within k arcs of the source (issue 7, ``mode="auto"``'s probe round):
after round k the Bellman-Ford rounds have reached exactly those, so a round 16 that still
reaches new vertices says the rounds will be many. Host only (scipy's unweighted BFS).

    python benchmarks/hop_balls.py --out benchmarks/results/hop_balls.json [--graphs ...]

Sources as the SSSP benchmarks take them: vertex 0 of a road network, the largest out-degree
vertex of a Kronecker graph (``sssp_bench.build``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--graphs", default="kron:18,kron:20,road-NY,road-FLA")
    ap.add_argument("--radii", default="1,2,3,4,8,16,32,64")
    args = ap.parse_args()
    import scipy.sparse as sp
    import scipy.sparse.csgraph as csg
    from _common import commit
    from sssp_bench import build

    radii = [int(x) for x in args.radii.split(",")]
    res = {"benchmark": "hop_balls", "commit": commit(), "host_cpus": os.cpu_count(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "rows": []}
    for spec in args.graphs.split(","):
        g, s = build(spec)
        A = sp.csr_matrix((np.ones(g.m, np.int8), g.indices, g.indptr), shape=(g.n, g.n))
        d = csg.shortest_path(A, unweighted=True, indices=s)
        fin = d[np.isfinite(d)]
        row = {"graph": spec, "vertices": g.n, "source": s, "reachable": int(fin.size),
               "eccentricity": int(fin.max()), "within": {str(r): int((fin <= r).sum()) for r in radii}}
        print(json.dumps(row), flush=True)
        res["rows"].append(row)
    Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
