"""Abort the whole job when any rank fails, instead of leaving the others waiting.

Under SPMD, an exception on one rank while the others sit in a collective is a hang.
:func:`install_abort_hook` replaces ``sys.excepthook`` (as ``python -m mpi4py`` does)
so that an uncaught exception prints ``distgraph: rank R: ErrorType: message`` on
one line and calls ``MPI_Abort``. :func:`collective_raise` is the polite variant for
errors found on some ranks only: every rank learns of the first error and raises it.
:func:`collective_check` does the same for argument checks, and also compares values that
must be the same on every rank. The errors these two raise are marked
(:func:`raised_on_all_ranks`), so that a caller that catches them on every rank (the CLI)
can end the job normally instead of aborting it: ``MPI_Abort`` kills the other ranks at
once, and the launcher may drop the message a rank wrote just before (mpiexec's output
forwarding lost it in a CI run). :func:`abort` itself waits ``ABORT_GRACE_S`` after the
message before ``MPI_Abort`` for the same reason.
"""

from __future__ import annotations

import sys
import time
import traceback

__all__ = ["install_abort_hook", "abort", "collective_raise", "collective_check", "format_error",
           "raised_on_all_ranks", "found_on_rank"]

#: Seconds between writing the message and ``MPI_Abort`` (the launcher forwards the message
#: meanwhile; other ranks failing at the same time write theirs).
ABORT_GRACE_S = 1.0
_ALL_RANKS = "_distgraph_raised_on_all_ranks"  # (communicator, the rank that found the error)


def raised_on_all_ranks(exc: BaseException, comm=None) -> bool:
    """True for an error that :func:`collective_raise` or :func:`collective_check` raised on
    every rank of ``comm`` (a communicator with the same group; default: any): every rank
    of it raises the error at the same point. An error raised together by the ranks of a
    smaller communicator is not raised on all ranks of a larger one: the others may be
    waiting in its collectives."""
    mark = getattr(exc, _ALL_RANKS, None)
    if mark is None:
        return False
    if comm is None:
        return True
    from mpi4py import MPI

    try:
        return MPI.Comm.Compare(mark[0], comm) in (MPI.IDENT, MPI.CONGRUENT)
    except Exception:  # a freed communicator
        return False


def found_on_rank(exc: BaseException):
    """The rank that found an error :func:`raised_on_all_ranks` marks (None if unknown)."""
    mark = getattr(exc, _ALL_RANKS, None)
    return None if mark is None else mark[1]


def _on_all_ranks(exc: BaseException, comm, rank) -> BaseException:
    try:
        setattr(exc, _ALL_RANKS, (comm, rank))
    except Exception:  # an exception type that takes no attributes: left unmarked
        pass
    return exc


def format_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def abort(comm, message: str, code: int = 1) -> None:
    sys.stderr.write(message.rstrip() + "\n")
    sys.stderr.flush()
    if comm is not None and comm.Get_size() > 1:
        time.sleep(ABORT_GRACE_S)
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
        message = f"distgraph: rank {rank}: {format_error(value)}"
        if comm.Get_size() > 1 and raised_on_all_ranks(value, comm):
            found = found_on_rank(value)
            message = f"distgraph: rank {found if found is not None else rank}: {format_error(value)}"
            # every rank is ending here with this error: no rank waits, no abort needed;
            # the interpreter then exits with status 1 on every rank
            if rank == 0:
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
            return
        abort(comm, message)

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
        raise _on_all_ranks(exc, comm, first)
    raise _on_all_ranks(err, comm, first)


def collective_check(comm, err: BaseException | None, values: dict, why: str = "", unit: str = "rank") -> None:
    """Every rank calls this with its own argument check's error (or None) and ``values``,
    the (picklable, comparable) arguments that must be the same on every rank, in the same
    order everywhere; one ``allgather``. Raises the same
    :class:`~distgraph.errors.InvalidArgumentError` on every rank: the lowest failing rank's
    message with ``(on rank R)``, else for the first value that differs ``NAME must be the
    same on every rank (WHY); got V on rank 0, W on rank 1`` (each value with the first rank
    that has it). ``unit`` names the ranks in the messages (``"PE"`` for a PGAS)."""
    from ..errors import InvalidArgumentError

    if comm is None or comm.Get_size() == 1:
        if err is not None:
            raise err
        return
    seen = comm.allgather((None if err is None else str(err), None if err is not None else list(values.values())))
    bad = [r for r, (e, _) in enumerate(seen) if e is not None]
    if bad:
        raise _on_all_ranks(InvalidArgumentError(f"{seen[bad[0]][0]} (on {unit} {bad[0]})"), comm, bad[0]) from err
    for i, name in enumerate(values):
        vals = [v[i] for _, v in seen]
        if any(v != vals[0] for v in vals):
            first: dict = {}
            for r, v in enumerate(vals):
                first.setdefault(v, r)
            got = ", ".join(f"{v!r} on {unit} {r}" for v, r in first.items())
            why = f" ({why})" if why else ""
            raise _on_all_ranks(InvalidArgumentError(f"{name} must be the same on every {unit}{why}; got {got}"),
                                comm, None)
