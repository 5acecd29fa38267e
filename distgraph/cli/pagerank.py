"""``distgraph pagerank GRAPH``: PageRank by power iteration (networkx's definition).

    distgraph pagerank wiki-Vote.txt.gz --output pr.csv
    mpiexec -n 4 distgraph pagerank kron:18 --format k2tree --tol 1e-8 --json

Each iteration is one left plus_times product on CSR (default) or a k2-tree
(``--format k2tree``); dangling vertices spread their rank uniformly; edge weights
are ignored. ``--verify`` checks that the ranks sum to 1 and that one more iteration
moves them by less than the tolerance.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import VerificationError
from .common import (VALUE_EXTS, add_graph_arguments, add_run_arguments, check_outputs, context_from_args, load_graph,
                     print_json, write_output)
from .spmv import _matrix, add_storage_arguments

NAME = "pagerank"
HELP = "PageRank by power iteration over plus_times products (CSR or k2-tree)"


def add_arguments(p) -> None:
    add_graph_arguments(p)
    add_run_arguments(p)
    add_storage_arguments(p, "csr")
    g = p.add_argument_group("pagerank")
    g.add_argument("--alpha", "--damping", dest="alpha", type=float, default=0.85, help="damping factor")
    g.add_argument("--tol", type=float, default=1e-6, help="stop when the L1 change is below N * tol")
    g.add_argument("--max-iter", type=int, default=100, help="iteration limit (error when reached)")


def _verify(plan, pr, alpha, tol):
    n = pr.shape[0]
    if n == 0:
        return
    if abs(pr.sum() - 1.0) > 1e-9:
        raise VerificationError(f"PageRank values sum to {pr.sum():.12g}, not 1")
    deg = plan.row_counts().astype(np.float64)  # caller ids (a reordered plan too)
    z = np.divide(pr, deg, out=np.zeros(n), where=deg != 0)
    nxt = alpha * (plan.multiply(z, "plus_times", left=True) + pr[deg == 0].sum() / n) + (1 - alpha) / n
    if np.abs(nxt - pr).sum() >= n * tol:
        raise VerificationError("PageRank is not a fixed point of the iteration within the tolerance")


def run(args) -> int:
    from ..algorithms.pagerank import pagerank
    from ..algorithms.spmv import SpMVPlan

    ctx = context_from_args(args)
    check_outputs(ctx.comm, [("--output", args.output, VALUE_EXTS)])
    t0 = time.perf_counter()
    g = load_graph(args, ctx.comm)
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = SpMVPlan(_matrix(args, g, ctx), format=args.storage, tile=args.tile, offsets=args.offsets,
                    cached_frontier=args.cached_frontier, comm=ctx.comm, backend=args.backend)
    plan.multiply(np.zeros(g.n), "plus_times", left=True)  # build this rank's block, compile
    t_build = time.perf_counter() - t0
    times = []
    pr = it = None
    for _ in range(max(1, int(args.trials))):
        ctx.comm.Barrier()
        t = time.perf_counter()
        pr, it = pagerank(plan, alpha=args.alpha, tol=args.tol, max_iter=args.max_iter, return_iterations=True)
        times.append(time.perf_counter() - t)
    verified = None
    if args.verify:
        _verify(plan, pr, args.alpha, args.tol)
        verified = True
    if ctx.rank == 0 and args.output:
        write_output(args.output, pr, g, name="pagerank")
    ids = g.input_ids()
    top = np.argsort(-pr, kind="stable")[:5] if g.n else np.zeros(0, np.int64)
    if args.json:
        print_json(ctx, {"command": "pagerank", "graph": args.graph, "vertices": g.n, "arcs": g.m,
                         "format": args.storage, "alpha": args.alpha, "tol": args.tol, "iterations": it,
                         "time_s": min(times), "times_s": times, "build_s": t_build, "read_s": t_read,
                         "top": [[int(ids[v]), float(pr[v])] for v in top], "ranks": ctx.size,
                         "backend": ctx.backend, "verified": verified})
    elif ctx.rank == 0:
        best = ", ".join(f"{int(ids[v])} ({pr[v]:.6g})" for v in top)
        print(f"pagerank on {args.storage}: {it} iterations, best of {len(times)} {min(times):.6f} s; "
              f"top: {best}" + (", verified" if verified else ""))
    return 0
