"""Abort the whole job when any rank fails, instead of leaving the others waiting.

Under SPMD, an exception on one rank while the others sit in a collective is a hang.
:func:`install_abort_hook` replaces ``sys.excepthook`` (as ``python -m mpi4py`` does)
so that an uncaught exception prints ``distgraph: rank R: ErrorType: message`` on
one line and calls ``MPI_Abort``. :func:`collective_raise` is the polite variant for
errors found on some ranks only: every rank learns of the first error and raises it.
"""

from __future__ import annotations

import sys
import traceback

__all__ = ["install_abort_hook", "abort", "collective_raise", "format_error"]


def format_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def abort(comm, message: str, code: int = 1) -> None:
    sys.stderr.write(message.rstrip() + "\n")
    sys.stderr.flush()
    if comm is not None and comm.Get_size() > 1:
        comm.Abort(code)
    raise SystemExit(code)


def install_abort_hook(comm=None, verbose: bool = False) -> None:
    """Make an uncaught exception on any rank abort the whole job with its message."""
    from mpi4py import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    rank = comm.Get_rank()

    def hook(etype, value, tb):
        if verbose:
            traceback.print_exception(etype, value, tb)
        abort(comm, f"distgraph: rank {rank}: {format_error(value)}")

    sys.excepthook = hook


def collective_raise(comm, exc: BaseException | None) -> None:
    """Every rank calls this; if any rank passes an exception, all raise it.

    The exception of the lowest failing rank is re-raised on every rank (pickled;
    an unpicklable one becomes a :class:`~distgraph.errors.DistgraphError`)."""
    if comm is None or comm.Get_size() == 1:
        if exc is not None:
            raise exc
        return
    flags = comm.allgather(exc is not None)
    if not any(flags):
        return
    first = flags.index(True)
    payload = None
    if comm.Get_rank() == first:
        try:
            import pickle

            pickle.dumps(exc)
            payload = exc
        except Exception:
            from ..errors import DistgraphError

            payload = DistgraphError(format_error(exc))
    err = comm.bcast(payload, root=first)
    if exc is not None and comm.Get_rank() == first:
        raise exc
    raise err
