"""``distgraph closeness GRAPH``: exact closeness centrality of every vertex (or a set).

    mpiexec -n 2 distgraph closeness kron:12 --output closeness.npy
    distgraph closeness wiki-Vote.txt.gz --convention networkit --json
    mpiexec -n 8 distgraph closeness big.dgraph --checkpoint ckpt/ --resume --output c.npy

Values are written in vertex order (the ``vertex`` column of a .csv holds input ids),
or in the order of ``--vertices``. ``--checkpoint DIR`` stores the finished batches
every ``--checkpoint-interval`` seconds (default ``DISTGRAPH_CHECKPOINT_INTERVAL``, 60; 0:
after every batch), at the end and on an error; after a kill, the same command with
``--resume`` continues to a bit-identical result. With ``--checkpoint``, SIGTERM or SIGUSR1
makes every rank save at its next batch boundary and exit with 128 + the signal's number
(143, 138): what Slurm's requeue, preemption and ``deploy/slurm/closeness.sbatch`` rely on.
"""

from __future__ import annotations

import time

import numpy as np

from .common import (VALUE_EXTS, add_graph_arguments, add_progress_arguments, add_run_arguments, check_outputs,
                     context_from_args, load_graph, print_json, read_vertex_ids, write_output)

NAME = "closeness"
HELP = "exact closeness centrality (bit-parallel multi-source BFS, batches over MPI ranks)"


def add_arguments(p) -> None:
    from ..algorithms.closeness import CONVENTIONS

    add_graph_arguments(p)
    add_run_arguments(p)
    c = p.add_argument_group("closeness")
    c.add_argument("--convention", choices=tuple(CONVENTIONS), default="networkx",
                   help="networkx: incoming distances, Wasserman-Faust factor; networkit: outgoing, generalized "
                        "and normalized; igraph: outgoing, reachable vertices only; harmonic: sum of 1/d")
    c.add_argument("--vertices", metavar="FILE", default=None,
                   help="only these vertices: input ids in a text file (whitespace separated) or a .npy")
    c.add_argument("--batch-size", "-k", type=int, default=None,
                   help="sources per bit-parallel batch, 1..512 (default: DISTGRAPH_MSBFS_BATCH or 512)")
    c.add_argument("--checkpoint", metavar="DIR", default=None,
                   help="store the finished batches in DIR (also at the end, on an error, and at the next batch "
                        "boundary after SIGTERM/SIGUSR1, which then exits with 128 + the signal number)")
    c.add_argument("--checkpoint-interval", metavar="SECONDS", type=float, default=None,
                   help="seconds between a rank's checkpoint saves; 0: after every batch "
                        "(default: DISTGRAPH_CHECKPOINT_INTERVAL or 60)")
    c.add_argument("--resume", action="store_true", help="continue the run stored in --checkpoint DIR")
    add_progress_arguments(c)


class _Ids:
    """Stands in for the graph in write_output when only some vertices were computed."""

    def __init__(self, ids):
        self._ids = ids

    def input_ids(self):
        return self._ids


def run(args) -> int:
    from ..algorithms.closeness import closeness, verify_closeness
    from ..errors import InvalidArgumentError
    from ..runtime.checkpoint import CheckpointInterrupted, restore_stop_signals

    ctx = context_from_args(args)
    if args.resume and not args.checkpoint:
        raise InvalidArgumentError("--resume needs --checkpoint DIR")
    if args.checkpoint_interval is not None and not args.checkpoint:
        raise InvalidArgumentError("--checkpoint-interval needs --checkpoint DIR")
    check_outputs(ctx.comm, [("--output", args.output, VALUE_EXTS)])
    t0 = time.perf_counter()
    g = load_graph(args, ctx.comm)
    t_read = time.perf_counter() - t0
    verts, in_ids = (None, g.input_ids()) if args.vertices is None else read_vertex_ids(args.vertices, g, "--vertices")
    ctx.comm.Barrier()
    t = time.perf_counter()
    try:
        r = closeness(g, vertices=verts, convention=args.convention, backend=args.backend, comm=ctx.comm,
                      batch_size=args.batch_size, checkpoint=args.checkpoint, resume=args.resume,
                      checkpoint_interval=args.checkpoint_interval, progress=args.progress)
    except CheckpointInterrupted as e:  # raised on every rank, each saved first: no abort needed
        if ctx.rank == 0:
            import sys

            print(f"distgraph closeness: {e} (checkpoint {args.checkpoint})", file=sys.stderr, flush=True)
        return 128 + e.signum
    finally:
        restore_stop_signals()  # the run (and its final collectives) is over: signals end the process again
    elapsed = time.perf_counter() - t
    verified = None
    if args.verify:
        verify_closeness(g, r, seed=args.seed)
        verified = True
    if ctx.rank == 0 and args.output:
        write_output(args.output, r.closeness, g if verts is None else _Ids(in_ids), name="closeness")
    c = r.closeness
    finite = np.where(np.isnan(c), -np.inf, c)
    top = int(np.argmax(finite)) if c.size else None
    if args.json:
        from ..algorithms.msbfs import check_batch_size, thread_count

        print_json(ctx, {"command": "closeness", "graph": args.graph, "vertices": g.n, "arcs": g.m,
                         "directed": g.directed, "convention": args.convention, "computed": int(c.size),
                         "batch_size": check_batch_size(args.batch_size), "time_s": elapsed, "read_s": t_read,
                         "ranks": ctx.size, "threads_per_rank": thread_count(ctx), "backend": ctx.backend,
                         "top_vertex": None if top is None else int(in_ids[top]),
                         "top_closeness": None if top is None else float(c[top]),
                         "checkpoint": args.checkpoint, "resumed": bool(args.resume), "verified": verified})
    elif ctx.rank == 0:
        msg = f"closeness ({args.convention}) of {c.size} vertices in {elapsed:.3f} s on {ctx.size} rank(s)"
        if top is not None:
            msg += f"; highest: vertex {int(in_ids[top])} = {c[top]:.6g}"
        print(msg + (", verified" if verified else ""))
    return 0
