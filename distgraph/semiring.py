"""Semirings for sparse matrix-vector products, named like GraphBLAS: ``<add>_<mul>``.

A semiring ``(D, add, mul, zero, one)`` defines the product ``y = A x`` by
``y[i] = add over j with A[i, j] != 0 of (A[i, j] mul x[j])``. distgraph multiplies
*Boolean* matrices (the pattern of a graph; a k2-tree stores no values), so every
stored entry carries the same value ``edge`` and the contribution of a non-zero is
``edge mul x[j]`` (Tosoni & Mencagli, Table 1):

============  ========  ======  ======  ======  ===================  ===============
name          domain    add     mul     zero    edge (stored value)  contribution
============  ========  ======  ======  ======  ===================  ===============
plus_times    reals     ``+``   ``*``   0       1                    ``x[j]``
lor_land      {0, 1}    or      and     False   True                 ``x[j] != 0``
min_plus      reals     min     ``+``   +inf    1 (unit length)      ``1 + x[j]``
============  ========  ======  ======  ======  ===================  ===============

``plus_times`` is a PageRank / power-iteration step, ``lor_land`` a step of
breadth-first search or reachability, ``min_plus`` a hop-count Bellman-Ford round.
A row with no non-zero gets the ``zero`` of the semiring (0, False, +inf).

Output dtypes: ``plus_times`` keeps a floating ``x`` dtype and gives int64 for integer
or Boolean ``x``; ``lor_land`` always gives bool; ``min_plus`` keeps a floating dtype
and gives float64 otherwise (``+inf`` must be representable).

The semirings are module constants, and functions accept either the object or its
name::

    >>> from distgraph import semiring
    >>> semiring.min_plus.name
    'min_plus'
    >>> semiring.get("lor_land") is semiring.lor_land
    True

``code`` is the number the CPU and GPU kernels are specialised on (``SEMIRING`` in
``kernels/k2tree_spmv.cu``); ``mpi_op`` the reduction that combines partial results
of different ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidArgumentError

__all__ = ["Semiring", "plus_times", "lor_land", "min_plus", "SEMIRINGS", "get"]


@dataclass(frozen=True)
class Semiring:
    """One semiring over Boolean matrices (see the module docstring)."""

    name: str
    add: str
    mul: str
    code: int

    # ------------------------------------------------------------ dtypes
    def output_dtype(self, x_dtype) -> np.dtype:
        """dtype of ``y`` for an input ``x`` of dtype ``x_dtype``."""
        x_dtype = np.dtype(x_dtype)
        if self.code == 1:
            return np.dtype(np.bool_)
        if x_dtype.kind == "f":
            return x_dtype
        return np.dtype(np.int64) if self.code == 0 else np.dtype(np.float64)

    def zero(self, dtype):
        """The identity of ``add`` (the value of an empty row) in ``dtype``."""
        dtype = np.dtype(dtype)
        if self.code == 0:
            return dtype.type(0)
        if self.code == 1:
            return np.bool_(False)
        return dtype.type(np.inf)

    def empty(self, shape, dtype) -> np.ndarray:
        """An array of ``zero`` (the initial ``y`` of a product)."""
        return np.full(shape, self.zero(dtype), dtype=dtype)

    def prepare(self, x: np.ndarray) -> np.ndarray:
        """``x`` converted to the dtype the kernels read (the output dtype)."""
        return np.ascontiguousarray(x, dtype=self.output_dtype(x.dtype))

    # ------------------------------------------------------- reductions
    @property
    def ufunc(self):
        """The numpy ufunc of ``add`` (``np.add``, ``np.logical_or``, ``np.minimum``)."""
        return (np.add, np.logical_or, np.minimum)[self.code]

    @property
    def mpi_op(self):
        """The MPI reduction of ``add`` (``SUM``, ``LOR``, ``MIN``)."""
        from mpi4py import MPI

        return (MPI.SUM, MPI.LOR, MPI.MIN)[self.code]

    def contribution(self, x: np.ndarray) -> np.ndarray:
        """``edge mul x`` elementwise (what one non-zero adds to ``y``)."""
        if self.code == 0:
            return x
        if self.code == 1:
            return x != 0
        return x + 1

    def __repr__(self) -> str:
        return f"<Semiring {self.name}: add={self.add}, mul={self.mul}>"


plus_times = Semiring("plus_times", "plus", "times", 0)
lor_land = Semiring("lor_land", "lor", "land", 1)
min_plus = Semiring("min_plus", "min", "plus", 2)

SEMIRINGS = {s.name: s for s in (plus_times, lor_land, min_plus)}


def get(semiring) -> Semiring:
    """The :class:`Semiring` named ``semiring`` (or ``semiring`` itself).

    Raises
    ------
    InvalidArgumentError
        An unknown name.
    TypeError
        Neither a string nor a :class:`Semiring`.
    """
    if isinstance(semiring, Semiring):
        return semiring
    if isinstance(semiring, str):
        s = SEMIRINGS.get(semiring.lower().replace("-", "_"))
        if s is None:
            raise InvalidArgumentError(
                f"semiring must be one of {', '.join(SEMIRINGS)}; got {semiring!r}")
        return s
    raise TypeError(f"semiring must be a str or a distgraph.semiring.Semiring; got {type(semiring).__name__}")
