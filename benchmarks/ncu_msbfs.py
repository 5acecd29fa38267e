"""One launch of the MS-BFS block schedule for Nsight Compute (benchmarks/ncu_msbfs.sh):
``slots`` batches of kappa sources in compact BFS balls (one wave of blocks), as
``closeness()`` runs them (symmetric sums, reorder="auto"), with ``--pull on|off``.

    python benchmarks/ncu_msbfs.py GRAPH [--pull on|off] [--waves 1] [--nosym]
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
    ap.add_argument("--pull", default="off")
    ap.add_argument("--waves", type=int, default=1)
    ap.add_argument("--nosym", action="store_true", help="per-vertex sums (GpuMSBFS(symmetric=False))")
    a = ap.parse_args()
    import cupy as cp

    from gpu_closeness import _ctx, load
    from distgraph.algorithms.msbfs import ball_sources
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    g = load(a.graph)
    tptr, tidx, _ = g.csc()
    r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=_ctx("gpu"), announce=False, reorder="auto",
                 groups="blocks", symmetric=not (g.directed or a.nosym), pull=a.pull)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    srcs = ball_sources(g.indptr, g.indices, tptr, tidx, srcs, r.kappa)[: a.waves * r.slots * r.kappa]
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    r._launch_sources(r.new_id[srcs] if r.new_id is not None else srcs, False, r._sum_arrays(g.n))
    cp.cuda.Device().synchronize()
    print(f"{a.graph} pull={r.pull} sources={srcs.size} slots={r.slots} seconds={time.perf_counter() - t0:.4f}",
          flush=True)


if __name__ == "__main__":
    main()
