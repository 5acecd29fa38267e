"""``distgraph bfs GRAPH``: direction-optimizing breadth-first search from one source.

    distgraph bfs road-NY.gr.xz --source 1 --output levels.npy --verify --json
    mpiexec -n 4 distgraph bfs kron:20 --trials 8 --parents parents.npy

Levels are written in vertex order (``-1`` = unreachable); parents as input ids
(``-1`` = unreachable, the source is its own parent). Without ``--source`` each trial
starts from a vertex picked with ``--seed`` (gapbs's source picker).
"""

from __future__ import annotations

import time

import numpy as np

from .common import (VALUE_EXTS, add_graph_arguments, add_run_arguments, check_outputs, context_from_args, load_graph,
                     pick_sources, print_json, resolve_source, write_output)

NAME = "bfs"
HELP = "breadth-first search levels (direction-optimizing, distributed over MPI ranks)"


def add_arguments(p) -> None:
    add_graph_arguments(p)
    add_run_arguments(p, source=True)
    b = p.add_argument_group("bfs")
    b.add_argument("--parents", nargs="?", const="", default=None, metavar="PATH",
                   help="also compute the BFS tree (checked by --verify); write it to PATH if given")


def run(args) -> int:
    from ..algorithms.bfs import bfs

    ctx = context_from_args(args)
    check_outputs(ctx.comm, [("--output", args.output, VALUE_EXTS), ("--parents", args.parents or None, VALUE_EXTS)])
    t0 = time.perf_counter()
    g = load_graph(args, ctx.comm)
    t_read = time.perf_counter() - t0
    trials = max(1, int(args.trials))
    if args.source is None:
        sources = [int(s) for s in pick_sources(g, trials, args.seed)]
    else:
        sources = [resolve_source(g, args.source)] * trials
    want_parents = args.parents is not None
    times = []
    r = None
    for s in sources:
        ctx.comm.Barrier()
        t = time.perf_counter()
        r = bfs(g, s, parents=want_parents, backend=args.backend, comm=ctx.comm)
        times.append(time.perf_counter() - t)
    verified = None
    if args.verify:
        from ..algorithms.bfs import verify_bfs

        verify_bfs(g, r.source, r.levels, r.parents)
        verified = True
    ids = g.input_ids()
    if ctx.rank == 0:
        if args.output:
            write_output(args.output, r.levels, g, name="level")
        if args.parents:
            par = np.where(r.parents >= 0, ids[np.maximum(r.parents, 0)], -1).astype(np.int64)
            write_output(args.parents, par, g, name="parent")
    if args.json:
        best = min(times)
        print_json(ctx, {"command": "bfs", "graph": args.graph, "vertices": g.n, "arcs": g.m,
                         "directed": g.directed, "source": int(ids[r.source]), "reached": r.reached,
                         "depth": r.depth, "time_s": best, "times_s": times,
                         "teps": g.m / best if best > 0 else None, "read_s": t_read,
                         "ranks": ctx.size, "backend": ctx.backend, "verified": verified})
    elif ctx.rank == 0:
        print(f"bfs from {int(ids[r.source])}: reached {r.reached} of {g.n} vertices, depth {r.depth}, "
              f"best of {len(times)}: {min(times):.6f} s" + (", verified" if verified else ""))
    return 0
