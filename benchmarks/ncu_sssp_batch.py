"""One batch of the batched Bellman-Ford rounds (``RoundsSSSP.run_batch``, 32 sources drawn as
benchmarks/sssp_many.py draws them) for Nsight Compute (benchmarks/ncu_sssp_batch.sh): the
queued rounds launched one by one (``BATCH_GRAPHS = False``), so that each pass is a kernel
launch of its own. Prints the batch's rounds, phases, relaxations and time.

    python benchmarks/ncu_sssp_batch.py GRAPH [--weights uniform] [--sources 32] [--graphs]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("--weights", default="uniform")
    ap.add_argument("--sources", type=int, default=32)
    ap.add_argument("--graphs", action="store_true", help="queued rounds as CUDA graphs (the default path)")
    a = ap.parse_args()
    from sssp_many import case

    from distgraph.algorithms.bellman_ford import BellmanFord
    from distgraph.backends.gpu import bellman_ford as gbf

    gbf.BATCH_GRAPHS = a.graphs
    g = case(a.graph, a.weights)
    cand = np.flatnonzero(np.diff(g.indptr) > 0)
    srcs = np.random.default_rng(20261201).choice(cand, size=a.sources, replace=True).astype(np.int64)
    with BellmanFord(g, backend="gpu") as bf:
        t0 = time.perf_counter()
        r = bf.run_many(srcs)
        t = time.perf_counter() - t0
    per = r.stats["per_source"]
    print(f"{a.graph} {a.weights}: {a.sources} sources in {t:.4f} s; rounds {sorted({s.get('rounds') for s in per})}, "
          f"phases {sorted({s.get('phases') for s in per})}, relaxations {sum(s.get('relaxations', 0) for s in per)}")


if __name__ == "__main__":
    main()
