"""CPU benchmark of k2-tree products and PageRank against the peers a user would pick.

    python benchmarks/k2tree_bench.py [--outdir benchmarks/results] [--graphs ...] [--reps 5]

For each graph: the k2-tree's bits per edge and bytes (bare tree; "k2" engine = tree +
directory + cached top; "k2+F" = k2 + cached last internal level) against a CSR with
FP32 values (cuSPARSE-style) and a Boolean CSR; the time of one plus_times product on
one core (median of --reps, process CPU time) for distgraph's k2-tree (tree-only, directory offsets), k2+F,
distgraph's CSR kernel and scipy.sparse (``A @ x``; left products ``A.T @ x``; a batch of
16 vectors ``A @ X``); and PageRank (networkx's definition; every implementation given
``--tol``, 1e-10, in its own norm) by distgraph (CSR and k2-tree) against networkit
(``PageRank``, sinks distributed) and networkx (``pagerank``, up to --nx-limit arcs).
Ratios are time / scipy time.
Writes OUTDIR/k2tree_cpu.json with commit, host and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import commit, sh
sys.path.insert(0, ROOT)
DATA = os.environ.get("DISTGRAPH_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
DEFAULT_GRAPHS = ["power.mtx.gz", "wiki-Vote.txt.gz", "email-Enron.mtx.gz", "cond-mat-2005.mtx.gz",
                  "road-NY.gr.xz", "road-FLA.gr.xz", "kron:16", "kron:18"]



def clock():
    """CPU time of this process: every timed code is single-threaded, and the hosts
    these benchmarks run on are shared, so wall time would measure the neighbours."""
    return time.process_time()


def med(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = clock()
        fn()
        ts.append(clock() - t)
    return float(np.median(ts))


def bench(spec, reps, batch, nx_limit, tol):
    from mpi4py import MPI

    from distgraph.algorithms.pagerank import pagerank
    from distgraph.algorithms.spmv import SpMVPlan
    from distgraph.formats.k2tree import K2Tree, csr_nbytes
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    g = from_spec(spec) if is_spec(spec) else read_graph(os.path.join(DATA, spec))
    n, m = g.n, g.m
    t = clock()
    tree = K2Tree.from_graph(g)
    build = clock() - t
    nb = tree.with_frontier().nbytes()
    r = {"graph": spec, "vertices": n, "arcs": m, "directed": g.directed, "k2_nodes": tree.num_nodes,
         "bits_per_edge": tree.bits_per_edge(), "build_s": build,
         "bytes": {"tree": nb["tree"], "k2": nb["engine"], "k2F": nb["engine_f"], "csr_fp32": csr_nbytes(n, m),
                   "csr_bool": csr_nbytes(n, m, values=0)}}
    r["ratio_csr_fp32_over_tree"] = r["bytes"]["csr_fp32"] / max(nb["tree"], 1)
    r["ratio_csr_bool_over_tree"] = r["bytes"]["csr_bool"] / max(nb["tree"], 1)
    A = g.to_scipy(dtype=np.float64)
    At = A.T.tocsr()
    rng = np.random.default_rng(0)
    x = rng.random(n)
    X = rng.random((n, batch))
    self = MPI.COMM_SELF
    plans = {"k2": SpMVPlan(tree.without_frontier(), comm=self, backend="cpu"),
             "k2F": SpMVPlan(tree, cached_frontier=True, comm=self, backend="cpu"),
             "csr": SpMVPlan(g, format="csr", comm=self, backend="cpu")}
    times = {"scipy": {"right": med(lambda: A @ x, reps), "left": med(lambda: A.T @ x, reps),
                       "left_transposed_copy": med(lambda: At @ x, reps),
                       "batch": med(lambda: A @ X, reps) / batch}}
    errs = {}
    for k, p in plans.items():
        times[k] = {"right": med(lambda: p.multiply(x), reps), "left": med(lambda: p.multiply(x, left=True), reps),
                    "batch": med(lambda: p.multiply(X), reps) / batch}
        errs[k] = float(max(np.abs(p.multiply(x) - A @ x).max(), np.abs(p.multiply(x, left=True) - A.T @ x).max()))
    r["time_s"] = times
    r["ratio_time_vs_scipy"] = {f"{k}_{d}": times[k][d] / times["scipy"][d]
                                for k in plans for d in ("right", "left", "batch")}
    r["max_abs_error_vs_scipy"] = errs
    # PageRank
    pr = {}
    t = clock()
    ours, its = pagerank(plans["csr"], tol=tol, max_iter=1000, return_iterations=True)
    pr["distgraph_csr_s"] = clock() - t
    t = clock()
    ours_k2 = pagerank(plans["k2F"], tol=tol, max_iter=1000)
    pr["distgraph_k2F_s"] = clock() - t
    pr["iterations"] = its
    pr["k2_equals_csr"] = bool(np.array_equal(ours, ours_k2))
    try:
        import networkit as nk

        G = nk.Graph(n, directed=g.directed)
        src, dst, _ = g.edges()
        keep = src <= dst if not g.directed else slice(None)
        G.addEdges((np.asarray(src[keep], np.uint64), np.asarray(dst[keep], np.uint64)))
        nk.setNumberOfThreads(1)
        t = clock()
        alg = nk.centrality.PageRank(G, damp=0.85, tol=tol,
                                     distributeSinks=nk.centrality.SinkHandling.DistributeSinks)
        alg.run()
        pr["networkit_iterations"] = int(alg.numberOfIterations())
        pr["networkit_s"] = clock() - t
        s = np.asarray(alg.scores())
        pr["networkit_max_abs_diff"] = float(np.abs(s / s.sum() - ours).max())
        pr["ratio_distgraph_csr_vs_networkit"] = pr["distgraph_csr_s"] / pr["networkit_s"]
    except Exception as e:  # pragma: no cover
        pr["networkit_error"] = f"{type(e).__name__}: {e}"
    if m <= nx_limit:
        import networkx as nx

        Gx = g.to_networkx()
        t = clock()
        ref = nx.pagerank(Gx, weight=None, tol=tol, max_iter=1000)
        pr["networkx_s"] = clock() - t
        pr["networkx_max_abs_diff"] = float(np.abs(np.array([ref[v] for v in range(n)]) - ours).max())
        pr["ratio_distgraph_csr_vs_networkx"] = pr["distgraph_csr_s"] / pr["networkx_s"]
    r["pagerank"] = pr
    return r


def load(spec):
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    return from_spec(spec) if is_spec(spec) else read_graph(os.path.join(DATA, spec))


def build_times(spec, reps=3):
    """Seconds of each stage of a host build of ``spec``'s tree (best of ``reps``):
    Morton encoding (numpy), sort (numpy), the numba passes (``from_codes``), the
    cached frontier, and the whole ``K2Tree.from_graph``."""
    from distgraph.formats.k2tree import K2Tree, morton_encode

    t0 = time.perf_counter()
    g = load(spec)
    res = {"graph": spec, "vertices": g.n, "arcs": g.m, "read_s": time.perf_counter() - t0}
    K2Tree.from_graph(load("kron:8"))  # numba compile outside the timings
    best = {}
    for _ in range(reps):
        t = {}
        t0 = time.perf_counter()
        rows = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(g.indptr))
        codes = morton_encode(rows, g.indices)
        del rows
        t["encode_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        codes.sort()
        t["sort_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        tree = K2Tree.from_codes(codes, (g.n, g.n), presorted=True)
        t["levels_and_directory_s"] = time.perf_counter() - t0
        del codes
        t0 = time.perf_counter()
        tree.with_frontier()
        t["frontier_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        K2Tree.from_graph(g)
        t["from_graph_s"] = time.perf_counter() - t0
        best = {k: min(v, best.get(k, v)) for k, v in t.items()}
    res.update(best)
    res["nodes"] = tree.num_nodes
    res["bits_per_edge"] = tree.bits_per_edge()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outdir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--graphs", nargs="*", default=DEFAULT_GRAPHS)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--nx-limit", type=int, default=500_000, help="run networkx only up to this many arcs")
    p.add_argument("--tol", type=float, default=1e-10, help="PageRank tolerance given to every implementation")
    p.add_argument("--build", nargs="*", metavar="SPEC",
                   help="only time the host build of these graphs' trees (OUTDIR/k2tree_build.json)")
    a = p.parse_args(argv)
    os.makedirs(a.outdir, exist_ok=True)
    if a.build:
        out = {"benchmark": "k2tree_build", "commit": commit(),
               "dirty": bool(sh(f"git -C {ROOT} status --porcelain")), "host": platform.node(),
               "cpu": sh("lscpu | grep 'Model name' | sed 's/.*: *//'"), "cores": os.cpu_count(),
               "load_avg_at_start": list(os.getloadavg()),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "threads": 1, "graphs": [build_times(s) for s in a.build]}
        out["load_avg_at_end"] = list(os.getloadavg())
        with open(os.path.join(a.outdir, "k2tree_build.json"), "w") as f:
            json.dump(out, f, indent=1)
        print(json.dumps(out["graphs"], indent=1))
        return
    out = {"benchmark": "k2tree_cpu", "commit": commit(),
           "dirty": bool(sh(f"git -C {ROOT} status --porcelain")), "host": platform.node(),
           "cpu": sh("lscpu | grep 'Model name' | sed 's/.*: *//'"), "cores": os.cpu_count(),
           "load_avg_at_start": os.getloadavg()[0],
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "threads": 1, "reps": a.reps, "batch": a.batch, "pagerank_tol": a.tol, "graphs": []}
    path = os.path.join(a.outdir, "k2tree_cpu.json")
    for spec in a.graphs:
        r = bench(spec, a.reps, a.batch, a.nx_limit, a.tol)
        out["graphs"].append(r)
        print(json.dumps({k: r[k] for k in ("graph", "arcs", "bits_per_edge", "ratio_csr_fp32_over_tree",
                                            "ratio_time_vs_scipy")}), flush=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    out["load_avg_at_end"] = os.getloadavg()[0]
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
