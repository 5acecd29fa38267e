"""A memory-lean CSR builder for generated graphs (counting sort, numba).

:meth:`Graph.from_edges` is the general constructor, but for a Kronecker graph of
scale 24 (268M arcs, 536M after symmetrizing) it would hold several int64 copies of
the arc list at once (ids, sort keys, the argsort permutation, the permuted ids),
well over 16 GB.  Generated graphs need less: no weights at build time and ids that
are already integers in ``[0, n)``.  So this builder

1. copies the arcs, chunk by chunk, into one preallocated ``src``/``dst`` pair
   (int32 when ``n < 2**31``);
2. counts the out-degree of every vertex (both endpoints of an undirected edge,
   a self-loop once) and takes the prefix sum: ``indptr``;
3. scatters every arc to its row (counting sort by source), then frees ``src``/``dst``;
4. sorts each row and drops repeats in place, moving rows to the front.

Peak memory: 8 bytes per drawn edge (``src``/``dst``) plus 4 bytes per stored arc
(``indices``), plus two int64 arrays of ``n + 1``.  The result is exactly what
``Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop_self_loops)``
returns (tests check this).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..graph.core import Graph, index_dtype

__all__ = ["build_csr"]


@nb.njit(cache=True, nogil=True)
def _count(src, dst, m, deg, directed, drop_loops):
    for i in range(m):
        s = src[i]
        d = dst[i]
        if s == d:
            if not drop_loops:
                deg[s] += 1
        else:
            deg[s] += 1
            if not directed:
                deg[d] += 1


@nb.njit(cache=True, nogil=True)
def _scatter(src, dst, m, fill, indices, directed, drop_loops):
    for i in range(m):
        s = src[i]
        d = dst[i]
        if s == d:
            if not drop_loops:
                indices[fill[s]] = d
                fill[s] += 1
        else:
            indices[fill[s]] = d
            fill[s] += 1
            if not directed:
                indices[fill[d]] = s
                fill[d] += 1


@nb.njit(cache=True, nogil=True)
def _sort_dedup_rows(indptr, indices, out_indptr):
    """Sort every row, keep the first of equal heads, compact rows to the front."""
    n = indptr.shape[0] - 1
    w = 0
    for v in range(n):
        lo = indptr[v]
        hi = indptr[v + 1]
        out_indptr[v] = w
        k = hi - lo
        if k == 0:
            continue
        if k <= 16:  # insertion sort for short rows
            for j in range(lo + 1, hi):
                x = indices[j]
                t = j - 1
                while t >= lo and indices[t] > x:
                    indices[t + 1] = indices[t]
                    t -= 1
                indices[t + 1] = x
        else:
            indices[lo:hi] = np.sort(indices[lo:hi])
        prev = indices[lo]
        indices[w] = prev
        w += 1
        for j in range(lo + 1, hi):
            x = indices[j]
            if x != prev:
                indices[w] = x
                w += 1
                prev = x
    out_indptr[n] = w
    return w


def build_csr(chunks, n: int, capacity: int, *, directed: bool, drop_self_loops: bool,
              meta: dict | None = None) -> Graph:
    """Build a :class:`Graph` from an iterable of ``(src, dst)`` integer arrays.

    Parameters
    ----------
    chunks : iterable of (ndarray, ndarray)
        Arcs, ids in ``[0, n)`` (not checked: generators produce them in range).
    n : int
        Number of vertices.
    capacity : int
        Upper bound on the number of arcs yielded by ``chunks``.
    directed : bool
        ``False`` stores each edge in both directions (a self-loop once).
    drop_self_loops : bool
        Remove arcs ``v -> v``.

    Returns
    -------
    Graph
        Rows sorted, no repeated arcs, no weights.
    """
    n = int(n)
    idt = index_dtype(n)
    src = np.empty(int(capacity), dtype=idt)
    dst = np.empty(int(capacity), dtype=idt)
    m = 0
    for s, d in chunks:
        k = len(s)
        src[m:m + k] = s
        dst[m:m + k] = d
        m += k
    deg = np.zeros(n + 1, dtype=np.int64)
    _count(src, dst, m, deg, directed, drop_self_loops)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg[:n], out=indptr[1:])
    del deg
    indices = np.empty(int(indptr[n]), dtype=idt)
    fill = indptr[:n].copy()
    _scatter(src, dst, m, fill, indices, directed, drop_self_loops)
    del src, dst, fill
    out_indptr = np.empty(n + 1, dtype=np.int64)
    total = _sort_dedup_rows(indptr, indices, out_indptr)
    if total < indices.shape[0]:
        indices = indices[:total].copy() if total < 0.9 * indices.shape[0] else indices[:total]
    return Graph(out_indptr, indices, None, directed=directed, meta=dict(meta or {}))
