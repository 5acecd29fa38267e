"""How the choice of a batch's sources changes the work of multi-source BFS on a
high-diameter graph (issue 5, road-NY), measured on the CPU with scipy.

For one batch of kappa sources, an *event* is a distinct (vertex, level) pair at which at
least one of the batch's BFSs reaches the vertex (see ``gpu_closeness.count_events``): the
kappa-bit state of a vertex is read and written once per event, so events per batch bound
the state traffic of BLEST's Alg. 5 from below, and ``n`` events (every BFS of the batch
reaching each vertex at the same level) is the least possible. Orders compared, three
batches each: random sources; consecutive caller ids (the input's numbering); consecutive
ids in reverse Cuthill-McKee order; "BFS balls" (the first kappa vertices of a BFS from a
random centre: a compact cluster). Writes OUTDIR/closeness_batch_order_cpu.json.

    python benchmarks/closeness_batch_order.py [--graph road-NY] [--kappa 256] [--outdir DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import commit  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default="road-NY")
    ap.add_argument("--kappa", type=int, default=256)
    ap.add_argument("--outdir", default=str(Path(__file__).resolve().parent / "results"))
    a = ap.parse_args(argv)
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    from gpu_closeness import batch_events, load

    g = load(a.graph)
    A = sp.csr_matrix((np.ones(g.indices.size, np.int8), g.indices, g.indptr), shape=(g.n, g.n))
    k = a.kappa

    def events(s):
        return batch_events(A, s)[:2]

    rng = np.random.default_rng(0)
    rcm = csgraph.reverse_cuthill_mckee(A, symmetric_mode=True)
    nb = g.n // k
    picks = [nb // 100, nb * 2 // 5, nb * 9 // 10]

    def balls():
        r = np.random.default_rng(1)
        return [csgraph.breadth_first_order(A, int(r.integers(g.n)), directed=False,
                                            return_predecessors=False)[:k] for _ in range(3)]

    orders = {"random": [rng.choice(g.n, k, replace=False) for _ in range(3)],
              "caller_consecutive": [np.arange(b * k, b * k + k) for b in picks],
              "rcm_consecutive": [rcm[b * k:b * k + k] for b in picks],
              "bfs_ball": balls()}
    res = {"benchmark": "closeness_batch_order", "commit": commit(), "host": platform.node(),
           "cpus": os.cpu_count(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "graph": a.graph, "n": g.n, "arcs": g.m, "kappa": k, "batches": -(-g.n // k),
           "note": __doc__.split("\n\n")[1].replace("\n", " "), "orders": {}}
    for name, batches in orders.items():
        t0 = time.perf_counter()
        r = [events(s) for s in batches]
        ev = [x[0] for x in r]
        res["orders"][name] = {"events_per_batch": ev, "levels": [x[1] for x in r],
                               "events_per_vertex": float(np.mean(ev)) / g.n,
                               "state_bytes_floor_all_batches": float(np.mean(ev)) * 5 * k / 8 * res["batches"],
                               "seconds": time.perf_counter() - t0}
        print(name, json.dumps(res["orders"][name]), flush=True)
    out = Path(a.outdir) / "closeness_batch_order_cpu.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
