"""The ``distgraph`` command line.

Every subcommand lives in its own module of this package and exposes ``NAME``,
``HELP``, ``add_arguments(parser)`` and ``run(args, ctx) -> int``. The list
below is the registry; a module that is not there yet is skipped, so algorithm
issues add their command by adding a module.

``main`` wraps the subcommand the way ``python -m mpi4py`` wraps a script: an
exception on any rank prints one line ``distgraph: error: ...`` and aborts the job
(MPI_Abort when more than one rank), so no rank is ever left waiting. An error that every
rank raised together (``distgraph.runtime.abort.raised_on_all_ranks``: a bad input file
found by rank 0, a bad argument) needs no abort: rank 0 prints it and every rank exits
with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ["info", "convert", "generate", "stats", "bfs", "closeness", "sssp", "spmv",
            "pagerank", "queue_bench", "scale"]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(prog="distgraph", description="Graph analytics on many GPUs (and CPUs) over MPI.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--version", action="version", version=f"distgraph {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{name}":
                continue
            raise
        sp = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(_run=mod.run)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..runtime.checkpoint import defer_stop_signals, restore_stop_signals

    if getattr(args, "checkpoint", None):  # a stop signal outside the run's own block: save and stop, not die
        defer_stop_signals()
    try:
        return _main(args)
    finally:
        restore_stop_signals()


def _main(args) -> int:
    from mpi4py import MPI

    from ..errors import DistgraphError
    from ..runtime.abort import abort, found_on_rank, raised_on_all_ranks
    from ..runtime.log import setup_logging

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    setup_logging(rank, size, "DEBUG" if getattr(args, "verbose_log", False) else None)
    try:
        return int(args._run(args) or 0)
    except (DistgraphError, OSError, ValueError, TypeError, MemoryError, ImportError) as e:
        together = size > 1 and raised_on_all_ranks(e, comm)
        found = found_on_rank(e) if together else rank
        msg = (f"distgraph: error: {e}" if size == 1 else
               f"distgraph: error (rank {found}): {e}" if found is not None else f"distgraph: error: {e}")
        if size > 1 and not together:
            abort(comm, msg, 2)
        if rank == 0:
            sys.stderr.write(msg + "\n")
            sys.stderr.flush()
        return 2
    except KeyboardInterrupt:
        if size > 1:
            abort(comm, f"distgraph: interrupted (rank {rank})", 130)
        return 130
    except BaseException as e:  # any other failure: report and abort the job
        if isinstance(e, SystemExit):
            raise
        import traceback

        traceback.print_exc()
        abort(comm, f"distgraph: internal error (rank {rank}): {type(e).__name__}: {e}", 1)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
