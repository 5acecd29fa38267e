"""``distgraph stats GRAPH``: vertices, edges, degrees, components, scale-free test.

Degree statistics are computed on each rank's vertex block and reduced with MPI;
components and the scale-free test (BLEST footnote 2) run on rank 0.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from .common import add_graph_arguments, load_graph

NAME = "stats"
HELP = "print vertices, edges, degrees, components and the scale-free test of a graph"


def add_arguments(p) -> None:
    add_graph_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _degree_summary(deg_local, comm, n):
    from mpi4py import MPI

    cnt = comm.allreduce(int(deg_local.size), MPI.SUM)
    tot = comm.allreduce(int(deg_local.sum()), MPI.SUM)
    mx = comm.allreduce(int(deg_local.max(initial=0)), MPI.MAX)
    mn = comm.allreduce(int(deg_local.min(initial=np.iinfo(np.int64).max)), MPI.MIN) if n else 0
    zero = comm.allreduce(int(np.count_nonzero(deg_local == 0)), MPI.SUM)
    return {"min": mn if cnt else 0, "max": mx, "mean": tot / cnt if cnt else 0.0, "zero": zero}


def graph_stats(graph, comm) -> dict:
    """Statistics of ``graph`` (whole on every rank), degree parts reduced over ``comm``."""
    from mpi4py import MPI

    from ..graph.partition import partition_by_edges

    part = partition_by_edges(graph.indptr, comm.Get_size())
    lo, hi = part.range(comm.Get_rank())
    out_deg = np.diff(np.asarray(graph.indptr[lo:hi + 1]))
    src_local = np.repeat(np.arange(lo, hi), out_deg)
    loops = comm.allreduce(int(np.count_nonzero(graph.indices[graph.indptr[lo]:graph.indptr[hi]] == src_local)), MPI.SUM)
    s = {
        "vertices": graph.n,
        "arcs": graph.m,
        "edges": graph.num_edges,
        "directed": graph.directed,
        "weighted": graph.weighted,
        "self_loops": loops,
        "out_degree": _degree_summary(out_deg, comm, graph.n),
    }
    if graph.directed:
        s["in_degree"] = _degree_summary(graph.in_degree()[lo:hi], comm, graph.n)
    if graph.weighted:
        w = np.asarray(graph.weights[graph.indptr[lo]:graph.indptr[hi]])
        fin = w[np.isfinite(w)] if w.dtype.kind == "f" else w
        lows = [v for v in comm.allgather(fin.min().item() if fin.size else None) if v is not None]
        highs = [v for v in comm.allgather(fin.max().item() if fin.size else None) if v is not None]
        wmin, wmax = (min(lows), max(highs)) if lows else (None, None)
        neg = comm.allreduce(int(np.count_nonzero(w < 0)), MPI.SUM)
        inf = comm.allreduce(int(np.count_nonzero(np.isinf(w))) if w.dtype.kind == "f" else 0, MPI.SUM)
        s["weights"] = {"dtype": str(graph.weights.dtype), "min": wmin, "max": wmax, "negative": neg, "infinite": inf}
    if comm.Get_rank() == 0:
        from scipy.sparse.csgraph import connected_components

        A = graph.to_scipy()
        s["components"] = {"weak": int(connected_components(A, directed=True, connection="weak")[0])}
        if graph.directed:
            s["components"]["strong"] = int(connected_components(A, directed=True, connection="strong")[0])
        try:
            from ..formats.reorder import is_scale_free

            sf, detail = is_scale_free(graph)
            s["scale_free"] = {"is_scale_free": bool(sf), **{k: _plain(v) for k, v in detail.items()}}
        except ImportError:
            pass
    return s


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def run(args) -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    t0 = time.perf_counter()
    g = load_graph(args, comm)
    t1 = time.perf_counter()
    s = graph_stats(g, comm)
    s["graph"] = args.graph
    s["ranks"] = comm.Get_size()
    s["time_read_s"] = t1 - t0
    s["time_stats_s"] = time.perf_counter() - t1
    if comm.Get_rank() == 0:
        if args.json:
            sys.stdout.write(json.dumps(s) + "\n")
        else:
            _print(s)
    return 0


def _print(s) -> None:
    print(f"graph        {s['graph']}")
    kind = "directed" if s["directed"] else "undirected"
    print(f"vertices     {s['vertices']:,}")
    print(f"edges        {s['edges']:,} ({kind}; {s['arcs']:,} stored arcs; {s['self_loops']:,} self-loops)")
    for key in ("out_degree", "in_degree"):
        if key in s:
            d = s[key]
            print(f"{key.replace('_', '-'):<12} min {d['min']}, max {d['max']}, mean {d['mean']:.3f}, zero {d['zero']:,}")
    if "weights" in s:
        w = s["weights"]
        print(f"weights      {w['dtype']} in [{w['min']}, {w['max']}], {w['negative']:,} negative, {w['infinite']:,} infinite")
    c = s.get("components", {})
    print("components   " + ", ".join(f"{k} {v:,}" for k, v in c.items()))
    if "scale_free" in s:
        print(f"scale-free   {s['scale_free']['is_scale_free']} (BLEST footnote 2)")
    print(f"time         read {s['time_read_s']:.3f} s, stats {s['time_stats_s']:.3f} s on {s['ranks']} rank(s)")
