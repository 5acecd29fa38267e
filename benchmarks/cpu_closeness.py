"""Exact closeness on the CPU: distgraph vs networkit (and igraph), same graph, same run.

    python benchmarks/cpu_closeness.py                   # Kronecker scale 14 and 16
    python benchmarks/cpu_closeness.py --scales 12 --no-igraph --out /tmp/x.json

Graphs: Kronecker (Graph500/GAP R-MAT), edge factor 16, symmetrized, seed 27491095
(``distgraph.generators.kronecker``). Peers, on the same graph in the same process:

* networkit ``centrality.Closeness(G, True, ClosenessVariant.GENERALIZED)`` with
  ``nk.setNumberOfThreads(THREADS)``;
* igraph ``Graph.closeness(mode="out", normalized=True)`` (single-threaded; only at
  the scales given by ``--igraph-scales``);
* distgraph ``closeness(g, convention="networkit")`` in one process with THREADS
  numba threads (batches spread over threads), and over 1 and 2 MPI ranks with one
  thread each (``mpiexec -n R python benchmarks/cpu_closeness.py --worker ...``).

Times are wall-clock seconds of the closeness call alone (graph building and numba
compilation excluded: a warm-up call on a small graph runs first). Values are checked
against networkit's to 1e-12. Results go to ``benchmarks/results/cpu_closeness.json``
with commit, host, date and the load average before and after (other jobs on the
machine slow every contestant alike, but read the numbers with that in mind).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def kron(scale):
    from distgraph.generators.kron import kronecker

    return kronecker(scale, 16)


def warm_up(comm=None):
    from distgraph.algorithms.closeness import closeness
    from distgraph.generators.kron import kronecker

    g = kronecker(8, 16)
    for bs in (512, 64, 300):
        closeness(g, convention="networkit", batch_size=bs, comm=comm)


def worker(args) -> int:
    """Run under mpiexec: time distgraph closeness on ``--scale`` over the ranks."""
    from mpi4py import MPI

    from distgraph.algorithms.closeness import closeness

    comm = MPI.COMM_WORLD
    g = kron(args.scale)
    warm_up(comm)
    times = []
    for _ in range(args.repeat):
        comm.Barrier()
        t = time.perf_counter()
        r = closeness(g, convention="networkit", comm=comm, progress=False)
        comm.Barrier()
        times.append(time.perf_counter() - t)
    if comm.rank == 0:
        print(json.dumps({"ranks": comm.size, "times_s": times, "checksum": float(np.sum(r.closeness))}))
    return 0


def git_commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "distgraph", "benchmarks/cpu_closeness.py"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def to_networkit(g):
    import networkit as nk

    src, dst, _ = g.edges()
    keep = src < dst
    G = nk.Graph(g.n, directed=False)
    G.addEdges((src[keep].astype(np.uint64), dst[keep].astype(np.uint64)))
    return G


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scales", default="14,16")
    p.add_argument("--igraph-scales", default="14")
    p.add_argument("--no-igraph", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ranks", default="1,2", help="MPI rank counts for the rank-scaling runs ('' to skip)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--out", default=os.path.join(HERE, "results", "cpu_closeness.json"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--scale", type=int, default=14, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)

    import networkit as nk
    import numba

    from distgraph.algorithms.closeness import closeness

    nk.setNumberOfThreads(args.threads)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    load_before = os.getloadavg()
    warm_up()
    rows = []
    for scale in [int(s) for s in args.scales.split(",") if s]:
        g = kron(scale)
        row = {"graph": f"kron:{scale} (edge factor 16, symmetrized, seed 27491095)", "n": g.n, "arcs": g.m,
               "edges": g.num_edges, "isolated": int(np.count_nonzero(np.diff(g.indptr) == 0))}
        t = time.perf_counter()
        ours = closeness(g, convention="networkit", progress=False)
        row["distgraph_s"] = time.perf_counter() - t
        row["distgraph_threads"] = numba.get_num_threads()
        G = to_networkit(g)
        t = time.perf_counter()
        c = nk.centrality.Closeness(G, True, nk.centrality.ClosenessVariant.GENERALIZED)
        c.run()
        row["networkit_s"] = time.perf_counter() - t
        row["networkit_threads"] = nk.getMaxNumberOfThreads()
        ref = np.asarray(c.scores())
        row["max_abs_diff_vs_networkit"] = float(np.max(np.abs(ours.closeness - ref)))
        row["speedup_vs_networkit"] = row["networkit_s"] / row["distgraph_s"]
        if not args.no_igraph and str(scale) in args.igraph_scales.split(","):
            import igraph as ig

            src, dst, _ = g.edges()
            keep = src < dst
            I = ig.Graph(n=g.n, edges=np.column_stack([src[keep], dst[keep]]).tolist(), directed=False)
            t = time.perf_counter()
            ic = np.asarray(I.closeness(mode="out", normalized=True), dtype=np.float64)
            row["igraph_s"] = time.perf_counter() - t
            igr = closeness(g, convention="igraph", progress=False).closeness
            row["max_abs_diff_vs_igraph"] = float(np.nanmax(np.abs(igr - ic)))
            row["speedup_vs_igraph"] = row["igraph_s"] / row["distgraph_s"]
        ranks = {}
        for r in [int(x) for x in args.ranks.split(",") if x]:
            env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
            cmd = ["mpiexec", "-n", str(r), sys.executable, os.path.abspath(__file__), "--worker",
                   "--scale", str(scale), "--repeat", str(args.repeat)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
            if out.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr}")
            res = json.loads(out.stdout.strip().splitlines()[-1])
            ranks[str(r)] = min(res["times_s"])
        if ranks:
            row["mpi_ranks_s"] = ranks
            if "1" in ranks and "2" in ranks:
                row["speedup_2_ranks_vs_1"] = ranks["1"] / ranks["2"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {"benchmark": "cpu_closeness", "commit": git_commit(), "host": platform.node(),
           "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
           "versions": {"networkit": nk.__version__, "numba": numba.__version__, "numpy": np.__version__,
                        "python": platform.python_version()},
           "note": "wall-clock seconds of the closeness call; networkit with setNumberOfThreads(threads); "
                   "distgraph in-process with the same number of numba threads; mpi_ranks_s: distgraph over "
                   "MPI ranks with 1 thread each",
           "threads": args.threads, "results": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
