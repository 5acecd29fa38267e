"""One k2+F single-vector product for Nsight Compute (benchmarks/ncu_k2tree.sh): the tree of
GRAPH (a generator spec or a file of the data folder), renumbered first with ``--reorder``
(none, degree, rcm or headF, as ``benchmarks/gpu_k2tree_bench.py --reorder``), cached frontier, the default
leaves, plus_times on float32 ones; ``--left`` for x^T A.

    python benchmarks/ncu_k2tree.py GRAPH [--reorder none|degree] [--left]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    from gpu_k2tree_bench import _reorder_arg, read_and_build

    ap.add_argument("--reorder", default="none", type=_reorder_arg, help="none, degree, rcm or headF")
    ap.add_argument("--left", action="store_true")
    a = ap.parse_args()
    import cupy as cp

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    g, tree, meta = read_and_build(a.graph, a.reorder)
    dm = DeviceMatrix(tree, cached_frontier=True)
    x = cp.ones((g.n, 1), cp.float32)
    y = cp.zeros((g.n, 1), cp.float32)
    dm.run(x, y, semiring.plus_times, a.left)  # the profiled launch (ncu -c 1)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    dm.run(x, y, semiring.plus_times, a.left)
    cp.cuda.Device().synchronize()
    print(f"{meta['graph']} left={a.left} leaves={dm.info['leaves']} build_s={meta['build_s']:.1f} "
          f"product_ms={1e3 * (time.perf_counter() - t0):.3f}", flush=True)


if __name__ == "__main__":
    main()
