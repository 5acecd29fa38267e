"""The exception hierarchy of distgraph.

Every error distgraph raises on purpose derives from :class:`DistgraphError`, so a
caller can catch the whole family with one ``except``.  Messages follow the
Expected / Got / Hint pattern of python-graphblas: they name the argument or the
file and line, what was expected, what was found, and what to do instead.

Errors that are plain misuse of an argument also derive from the matching builtin
(``ValueError`` / ``TypeError`` / ``MemoryError``), so ``except ValueError`` keeps
working for code written against scipy.sparse.csgraph.
"""

from __future__ import annotations

__all__ = [
    "DistgraphError",
    "GraphFormatError",
    "GraphValueError",
    "InvalidArgumentError",
    "NegativeCycleError",
    "DeviceMemoryError",
    "BackendUnavailableError",
    "CheckpointError",
    "VerificationError",
    "ConvergenceError",
]


class DistgraphError(Exception):
    """Base class of every error distgraph raises on purpose."""


class GraphFormatError(DistgraphError, ValueError):
    """A graph file is malformed: wrong header, truncated, bad token, id out of range.

    Attributes
    ----------
    path : str or None
        The file that was being read.
    line : int or None
        1-based line number of the offending line, when known.
    """

    def __init__(self, message: str, path=None, line=None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)


class GraphValueError(DistgraphError, ValueError):
    """A graph built from arrays is invalid (ids out of range, NaN weights, ...)."""


class InvalidArgumentError(DistgraphError, ValueError):
    """An argument of a public function has a bad value; the message names it."""


class NegativeCycleError(DistgraphError):
    """A negative-weight cycle is reachable from the source.

    Attributes
    ----------
    cycle : list of int or None
        Vertices of one negative cycle, in the caller's vertex ids, in order.
    weight : float or None
        Its total weight (negative).
    source : int or None
        The source it is reachable from (the first such of several sources).
    """

    def __init__(self, message: str = "graph contains a negative cycle", cycle=None, weight=None, source=None):
        self.cycle = cycle
        self.weight = weight
        self.source = source
        super().__init__(message)

    def __reduce__(self):  # pickled whole (cycle, weight, source) when sent to other ranks
        return type(self), (str(self), self.cycle, self.weight, self.source)


class DeviceMemoryError(DistgraphError, MemoryError):
    """A run would not fit in device (or host) memory; raised before allocating."""


class BackendUnavailableError(DistgraphError, ImportError):
    """The requested backend cannot run here (no CuPy, no GPU, no nvshmem4py)."""


class CheckpointError(DistgraphError):
    """A checkpoint directory does not match the run that tries to resume from it."""


class VerificationError(DistgraphError, AssertionError):
    """A result failed its verifier (raised by ``verify=True`` / ``--verify``)."""


class ConvergenceError(DistgraphError):
    """An iterative method (PageRank power iteration) did not converge in its
    iteration limit; raise ``max_iter`` or loosen ``tol``.

    Attributes
    ----------
    iterations : int or None
        Iterations done.
    error : float or None
        The last change (L1 norm) between iterates.
    """

    def __init__(self, message: str, iterations=None, error=None):
        self.iterations = iterations
        self.error = error
        super().__init__(message)


def expect(cond: bool, arg: str, expected: str, got, hint: str | None = None) -> None:
    """Raise :class:`InvalidArgumentError` unless ``cond``.

    ``expect(0 <= s < n, "source", f"in [0, {n})", s)`` gives
    ``source must be in [0, 264346); got 300000``.
    """
    if not cond:
        msg = f"{arg} must be {expected}; got {got!r}"
        if hint:
            msg += f" ({hint})"
        raise InvalidArgumentError(msg)
