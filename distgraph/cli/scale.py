"""``distgraph scale``: a strong-scaling study of one subcommand over rank counts.

    distgraph scale bfs kron:16 --ranks 1,2,4 --output study/ --args --trials 4
    distgraph scale closeness g.dgraph --ranks 1,2,4,8 --launcher "srun -n {n} --mpi=pmix" --output study/
    distgraph scale --collect slurm-runs/ --output study/

Runs ``<launcher> python -m distgraph ALGORITHM GRAPH --json ARGS`` once per rank count (each a
separate MPI job), or collects the JSON that Slurm runs wrote, then writes ``scaling.json``,
``summary.md`` and PNG plots (time, speedup, efficiency vs ranks; BFS time per level). Run it as
one process, not under mpiexec. See :mod:`distgraph.scaling` for the record format.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import InvalidArgumentError

NAME = "scale"
HELP = "strong-scaling study: run ALGORITHM on 1, 2, 4, ... ranks (or --collect Slurm results) and plot it"


def add_arguments(p) -> None:
    p.add_argument("algorithm", nargs="?", metavar="ALGORITHM", help="subcommand to run: bfs, closeness, sssp, ...")
    p.add_argument("graph", nargs="?", metavar="GRAPH", help="graph file or generator spec (as for ALGORITHM)")
    p.add_argument("--ranks", default="1,2,4", help="comma-separated rank counts")
    p.add_argument("--output", "-o", required=True, help="directory for runs/, scaling.json, summary.md and plots")
    p.add_argument("--collect", metavar="DIR", default=None,
                   help="instead of running, read the JSON run records (or --json summaries) under DIR")
    p.add_argument("--launcher", default=None,
                   help="command that starts N ranks, with {n} for N (default: 'MPIEXEC -n {n}' with the "
                        "mpiexec beside python); e.g. 'srun -n {n} --mpi=pmix' or 'launch/distgraph-mpirun -n {n}'")
    p.add_argument("--timeout", type=float, default=None, help="seconds one run may take (default: no limit)")
    p.add_argument("--skip-existing", action="store_true",
                   help="keep runs whose record is already in OUTPUT/runs/ (a requeued job continues)")
    p.add_argument("--no-plots", action="store_true", help="write the JSON and Markdown only (no matplotlib needed)")
    p.add_argument("--args", nargs=argparse.REMAINDER, default=[], metavar="...",
                   help="everything after --args goes to ALGORITHM (put it last)")


def run(args) -> int:
    from mpi4py import MPI

    from .. import scaling

    if MPI.COMM_WORLD.Get_size() > 1:
        raise InvalidArgumentError("distgraph scale starts its own MPI jobs: run it as one process, not under mpiexec")

    def log(msg):
        sys.stderr.write(f"distgraph scale: {msg}\n")
        sys.stderr.flush()

    if args.collect:
        if args.algorithm or args.graph or args.args:
            raise InvalidArgumentError("--collect takes no ALGORITHM, GRAPH or --args (they are in the records)")
        records = scaling.collect(args.collect)
    else:
        if not args.algorithm or not args.graph:
            raise InvalidArgumentError("ALGORITHM and GRAPH are required unless --collect is given; "
                                       "e.g. distgraph scale bfs kron:16 --ranks 1,2,4 --output study/")
        if args.algorithm == NAME:
            raise InvalidArgumentError("ALGORITHM must be another subcommand; got 'scale'")
        ranks = scaling.parse_ranks(args.ranks)
        if args.timeout is not None and args.timeout <= 0:
            raise InvalidArgumentError(f"--timeout must be positive; got {args.timeout}")
        if args.launcher is not None and "{n}" not in args.launcher:
            raise InvalidArgumentError(f"--launcher must contain {{n}} where the number of ranks goes; got {args.launcher!r}")
        records = scaling.run_study(args.algorithm, args.graph, ranks, args.output, args.args,
                                    launcher=args.launcher, timeout=args.timeout,
                                    skip_existing=args.skip_existing, log=log)
    st = scaling.write_report(records, args.output, plots=not args.no_plots)
    for r in st["rows"]:
        log(f"{r['ranks']:>4} rank(s): {r['time_s']:.6g} s, speedup {r['speedup']:.2f}, efficiency {r['efficiency']:.2f}")
    log(f"wrote {os.path.join(args.output, 'summary.md')}" + (f" and {', '.join(st['plots'])}" if st["plots"] else ""))
    return 0
