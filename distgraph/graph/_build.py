"""Counting-sort CSR construction (numba), the engine behind :meth:`Graph.from_edges`.

Sorting the arc list by ``(src, dst[, weight])`` with numpy (``argsort``/``lexsort`` of an
int64 key) costs ``O(m log m)`` time and holds four or five 8-byte copies of the arcs at
once (the key, the permutation, the permuted ids and weights); it was about 80% of the
time of reading a graph file.  A CSR needs less: rows are known from the source ids, so

1. count the out-degree of every vertex (both endpoints of an undirected edge, a
   self-loop once) and take the prefix sum: ``indptr``;
2. scatter every arc (and, for an undirected graph, its reverse) into its row: a
   counting sort by source, ``O(m)``, with no concatenated copy of the reversed arcs;
3. sort each row by ``(dst, weight)`` (insertion sort for short rows, a stable merge
   sort for long ones; rows in parallel) and, when deduplicating, keep the first arc
   of each ``(src, dst)`` pair -- the one of minimum weight -- moving rows to the front.

The result is exactly what the numpy path (:func:`build_csr_numpy`) returns: rows sorted
by head, ties (duplicate arcs kept with ``dedup=False``) ordered by weight, arcs of
equal weight in input order (bit for bit, signed zeros included).  Peak memory: the
input ids, plus ``indices`` and weights of the output, plus two int64 arrays of
``n + 1`` (and, when deduplication drops more than a tenth of the arcs, a compacted
copy of the kept ones; below that the result is a view of the longer arrays).
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["build_csr_counting", "build_csr_numpy"]

_SHORT = 32  # rows up to this length are insertion-sorted


@nb.njit(cache=True, nogil=True)
def _count(src, dst, n, undirected, drop_loops):
    deg = np.zeros(n + 1, np.int64)
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        if s == d:
            if not drop_loops:
                deg[s + 1] += 1
        else:
            deg[s + 1] += 1
            if undirected:
                deg[d + 1] += 1
    for v in range(n):
        deg[v + 1] += deg[v]
    return deg


@nb.njit(cache=True, nogil=True)
def _scatter(src, dst, w, has_w, indptr, indices, wout, undirected, drop_loops):
    fill = indptr[:-1].copy()
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        if s == d and drop_loops:
            continue
        p = fill[s]
        indices[p] = d
        if has_w:
            wout[p] = w[i]
        fill[s] = p + 1
        if undirected and s != d:
            p = fill[d]
            indices[p] = s
            if has_w:
                wout[p] = w[i]
            fill[d] = p + 1


@nb.njit(cache=True, nogil=True, parallel=True)
def _sort_rows(indptr, indices):
    """Sort every row by head."""
    n = indptr.shape[0] - 1
    for v in nb.prange(n):
        lo = indptr[v]
        hi = indptr[v + 1]
        if hi - lo < 2:
            continue
        if hi - lo <= _SHORT:
            for j in range(lo + 1, hi):
                x = indices[j]
                t = j - 1
                while t >= lo and indices[t] > x:
                    indices[t + 1] = indices[t]
                    t -= 1
                indices[t + 1] = x
        else:
            indices[lo:hi] = np.sort(indices[lo:hi])


@nb.njit(cache=True, nogil=True, parallel=True)
def _sort_rows_weighted(indptr, indices, wout):
    """Sort every row by (head, weight), stably."""
    n = indptr.shape[0] - 1
    for v in nb.prange(n):
        lo = indptr[v]
        hi = indptr[v + 1]
        k = hi - lo
        if k < 2:
            continue
        if k <= _SHORT:
            for j in range(lo + 1, hi):
                x = indices[j]
                y = wout[j]
                t = j - 1
                while t >= lo and (indices[t] > x or (indices[t] == x and wout[t] > y)):
                    indices[t + 1] = indices[t]
                    wout[t + 1] = wout[t]
                    t -= 1
                indices[t + 1] = x
                wout[t + 1] = y
        else:
            seg_i = indices[lo:hi].copy()
            seg_w = wout[lo:hi].copy()
            o1 = np.argsort(seg_w, kind="mergesort")
            o2 = np.argsort(seg_i[o1], kind="mergesort")
            for j in range(k):
                q = o1[o2[j]]
                indices[lo + j] = seg_i[q]
                wout[lo + j] = seg_w[q]


@nb.njit(cache=True, nogil=True)
def _dedup_rows(indptr, indices, wout, has_w):
    """Keep the first arc of each (src, dst) pair; rows move to the front."""
    n = indptr.shape[0] - 1
    out = 0
    start = indptr[0]
    for v in range(n):
        lo = start
        hi = indptr[v + 1]
        start = hi
        indptr[v] = out
        for j in range(lo, hi):
            x = indices[j]
            if j > lo and x == indices[j - 1]:
                continue
            indices[out] = x
            if has_w:
                wout[out] = wout[j]
            out += 1
    indptr[n] = out
    return out


def build_csr_counting(src, dst, w, n, *, undirected, drop_self_loops, dedup, index_dtype):
    """CSR of the arcs ``src -> dst`` (plus reverses when ``undirected``) by counting sort.

    ``src``/``dst``: integer arrays, ids already checked to lie in ``[0, n)``; ``w``:
    weights or None.  Returns ``(indptr, indices, weights)``.
    """
    n = int(n)
    indptr = _count(src, dst, n, bool(undirected), bool(drop_self_loops))
    m = int(indptr[n])
    indices = np.empty(m, dtype=index_dtype)
    has_w = w is not None
    wout = np.empty(m if has_w else 0, dtype=w.dtype if has_w else np.float64)
    wdummy = w if has_w else wout
    _scatter(src, dst, wdummy, has_w, indptr, indices, wout, bool(undirected), bool(drop_self_loops))
    if has_w:
        _sort_rows_weighted(indptr, indices, wout)
    else:
        _sort_rows(indptr, indices)
    if dedup and m > 1:
        total = _dedup_rows(indptr, indices, wout, has_w)
        if total < m:  # a view when little was dropped (no second copy at the peak)
            shrink = total < 0.9 * m
            indices = indices[:total].copy() if shrink else indices[:total]
            if has_w:
                wout = wout[:total].copy() if shrink else wout[:total]
    return indptr, indices, (wout if has_w else None)


def build_csr_numpy(src, dst, w, n, *, undirected, drop_self_loops, dedup, index_dtype):
    """The same CSR by sorting with numpy (``argsort``/``lexsort``); for small inputs,
    where compiling or loading the numba path costs more than the sort."""
    if drop_self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
        w = None if w is None else w[keep]
    if undirected:
        # every arc followed by its reverse (a self-loop once): within a row, arcs keep
        # input order, as the counting sort scatters them; ties of equal weight then
        # keep the same arc in both builders (+0.0 and -0.0 compare equal)
        keep = np.ones(2 * src.size, dtype=bool)
        keep[1::2] = src != dst
        src, dst = np.stack([src, dst], axis=1).ravel()[keep], np.stack([dst, src], axis=1).ravel()[keep]
        if w is not None:
            w = np.repeat(w, 2)[keep]
    if src.size == 0:
        return np.zeros(n + 1, np.int64), np.zeros(0, index_dtype), (None if w is None else w[:0])
    key = src * np.int64(max(n, 1)) + dst if n <= 3_037_000_499 else None
    if key is not None:
        order = np.argsort(key, kind="stable") if w is None else np.lexsort((w, key))
    else:
        order = np.lexsort((dst, src)) if w is None else np.lexsort((w, dst, src))
    src, dst = src[order], dst[order]
    w = None if w is None else w[order]
    if dedup and src.size > 1:
        first = np.empty(src.size, dtype=bool)
        first[0] = True
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        if not first.all():
            src, dst = src[first], dst[first]
            w = None if w is None else w[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst.astype(index_dtype), w
