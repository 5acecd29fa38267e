"""Where given arcs sit in a CSR (numba): a binary search of each tail's sorted row."""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["arc_positions"]


@nb.njit(cache=True, nogil=True)
def _positions(indptr, indices, tails, heads, out):
    for i in range(tails.shape[0]):
        lo = indptr[tails[i]]
        hi = indptr[tails[i] + 1]
        v = heads[i]
        while lo < hi:  # first position whose head is >= v
            mid = (lo + hi) >> 1
            if indices[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo if lo < indptr[tails[i] + 1] and indices[lo] == v else -1


def arc_positions(indptr, indices, tails, heads) -> np.ndarray:
    """Index into ``indices`` of the first arc ``tails[i] -> heads[i]``, or -1 when there
    is none.  Rows must be sorted by head (as every :class:`Graph` keeps them) and tails
    must be valid vertex ids; no combined ``tail * n + head`` key, so any id width works."""
    tails = np.ascontiguousarray(tails, dtype=np.int64)
    heads = np.ascontiguousarray(heads, dtype=np.int64)
    out = np.empty(tails.shape[0], dtype=np.int64)
    _positions(indptr, indices, tails, heads, out)
    return out
