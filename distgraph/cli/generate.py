"""``distgraph generate SPEC --output FILE``: generate a graph and write it.

SPEC is a generator spec (``kron:20``, ``urand:18:seed=3``, ``grid:512x512:drop=0.2``,
``rgg:20``, ``delaunay:16:weights=uniform``; ``--list`` shows them all).  Rank 0
generates and writes (the format follows the file's extension, see
``distgraph.graph.writers``); the other ranks only wait for its outcome, so an error
is raised on every rank together.
"""

from __future__ import annotations

import json
import sys
import time

NAME = "generate"
HELP = "generate a graph from a spec (kron:20, urand:18:seed=3, grid:RxC, rgg:S, delaunay:S) and write it"


def add_arguments(p) -> None:
    p.add_argument("spec", metavar="SPEC", nargs="?", default=None,
                   help="generator spec FAMILY:ARG[:key=value]...; see --list")
    p.add_argument("--output", "-o", default=None,
                   help="file to write (format from the extension, e.g. .dgraph, .mtx, .el); "
                        "without it the graph is generated and only summarized")
    p.add_argument("--list", action="store_true", help="print the generator families and their options, then exit")
    p.add_argument("--json", action="store_true", help="rank 0 prints a one-line JSON summary")
    p.add_argument("--verbose-log", action="store_true", help="debug logging on every rank")


def run(args) -> int:
    from mpi4py import MPI

    from ..errors import InvalidArgumentError
    from ..generators import describe_families, from_spec, parse_spec
    from ..runtime.abort import collective_raise
    from .common import GRAPH_EXTS, check_outputs

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if args.list:
        if rank == 0:
            sys.stdout.write(describe_families() + "\n")
        return 0
    if args.spec is None:
        raise InvalidArgumentError("SPEC must be given (a generator spec such as kron:20); got nothing "
                                   "(see distgraph generate --list)")
    parse_spec(args.spec)  # a bad spec fails on every rank alike
    check_outputs(comm, [("--output", args.output, GRAPH_EXTS)])  # before the (maybe long) generation
    summary, err = None, None
    if rank == 0:
        try:
            t0 = time.perf_counter()
            g = from_spec(args.spec)
            t1 = time.perf_counter()
            if args.output is not None:
                from ..graph.writers import write_graph

                write_graph(g, args.output)
            t2 = time.perf_counter()
            summary = {"spec": args.spec, "vertices": g.n, "arcs": g.m, "edges": g.num_edges,
                       "directed": g.directed, "weighted": g.weighted,
                       "weight_dtype": None if g.weights is None else str(g.weights.dtype),
                       "output": args.output, "generate_s": round(t1 - t0, 6), "write_s": round(t2 - t1, 6),
                       "meta": {k: v for k, v in g.meta.items() if k in ("generator", "params", "weights",
                                                                        "negative_cycle", "negative_cycle_weight")}}
        except Exception as e:  # raised on every rank below (the job then ends without MPI_Abort)
            err = e
    collective_raise(comm, err)
    if rank == 0:
        if args.json:
            sys.stdout.write(json.dumps(summary, default=str) + "\n")
        else:
            kind = "directed" if summary["directed"] else "undirected"
            w = f", weights {summary['weight_dtype']}" if summary["weighted"] else ""
            where = f" -> {args.output}" if args.output else ""
            sys.stdout.write(f"{args.spec}: {kind}, {summary['vertices']} vertices, {summary['edges']} edges "
                             f"({summary['arcs']} arcs){w}; generated in {summary['generate_s']:.2f} s{where}\n")
        sys.stdout.flush()
    return 0
