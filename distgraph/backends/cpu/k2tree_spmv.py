"""CPU (numba) semiring products on k2-trees and on CSR, one rank's block.

Tosoni & Mencagli, arXiv 2611.03610, Algorithm 1 (level-synchronous k2-tree SpMV),
run sequentially: the nodes of a level form a frontier of Morton codes, expanded
into the next level, and the nodes of the last internal level visit their leaves in
place (the leaves are never written to a frontier). The traversal goes depth-first
over *tiles*, ranges of nodes with at most ``M`` children, with one buffer of at most
``M`` codes per level (Sec. 3.4), so the scratch is known before a product runs:
:func:`scratch_layout`. It starts from the cached top level of the tree.

Child offsets (the rank of a descent) come from either

* ``scan``      -- a running count of the fan-outs of the level (the sequential
  exclusive scan: levels are visited left to right, tile after tile), or
* ``directory`` -- the sampled directory: at the start of a tile, the first child of
  its first node is ``directory[g // S]`` plus the popcount of the signatures
  between node ``(g // S) * S`` and ``g``; within the tile, the scan.

With the cached frontier (k2+F, Sec. 3.5) a product is one loop over the codes of the
last internal level.

Arrays: ``x`` and ``y`` are 2-D C-contiguous ``(n, B)`` (one column per vector of a
batch); ``y`` is filled with the semiring's zero by the caller. A right product adds
``x[c]`` into ``y[r]`` for a non-zero ``(r, c)``; a left product (``left=True``) adds
``x[r]`` into ``y[c]``. The semiring is its ``code`` (0 plus_times, 1 lor_land,
2 min_plus; :func:`_combine`), a plain integer argument, so the compiled kernels are
cached on disk by numba (a function-typed argument would not be).

Reordered trees (``tree.perm``, :mod:`distgraph.formats.k2tree`): the wrappers
:func:`k2_product` and :func:`k2_frontier_product` take ``x`` and ``y`` in the
caller's ids and run the kernels on the stored ids: ``x`` (and the ``y`` accumulated
into) gathered by the inverse permutation before, ``y`` gathered back after
(:func:`in_stored_ids`; the kernels do not change). Within a row the contributions
then arrive in the stored column order, so floats may differ from the CSR product by
rounding (exact for integer-valued vectors and for lor_land/min_plus).

Order of accumulation: within a row (right) or a column (left) the contributions
arrive in increasing column (row) order, because a fixed row's cells are ordered by
column in Z-order; the CSR kernel does the same. So every configuration (tile, offsets,
cached frontier, k2-tree or CSR, any row block) gives bit-identical floats.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["k2_product", "k2_frontier_product", "csr_product", "scratch_layout", "in_stored_ids"]

from ...formats.k2tree import _M1, _M2, _M4, _M8, _M16, _M32  # Morton masks, defined once
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U4 = np.uint64(4)
_U8 = np.uint64(8)
_U16 = np.uint64(16)
_POP4 = np.array([bin(i).count("1") for i in range(16)], dtype=np.int64)
_POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)
_CNT = _POP4
_POS = np.array([[b for b in range(4) if i >> b & 1] + [0] * (4 - bin(i).count("1")) for i in range(16)],
                dtype=np.int64)  # _POS[s, j]: position of the j-th set bit of nibble s


# ------------------------------------------------------------------ semirings
@njit(inline="always", cache=True)
def _combine(sr, a, b):
    """``a (+) (edge (x) b)`` of semiring ``sr``: 0 plus_times ``a + b``; 1 lor_land
    ``max(a, b)`` (x already holds ``x != 0``); 2 min_plus ``min(a, b + 1)``."""
    if sr == 0:
        return a + b
    if sr == 1:
        return max(a, b)
    v = b + 1
    return v if v < a else a


# -------------------------------------------------------------------- helpers
@njit(inline="always", cache=True)
def _nib(sig, g):
    return np.int64((sig[g >> 1] >> ((g & 1) << 2)) & 15)


@njit(inline="always", cache=True)
def _compact(v):
    v = v & _M1
    v = (v | (v >> _U1)) & _M2
    v = (v | (v >> _U2)) & _M4
    v = (v | (v >> _U4)) & _M8
    v = (v | (v >> _U8)) & _M16
    v = (v | (v >> _U16)) & _M32
    return np.int64(v)


@njit(cache=True)
def _first_child(sig, directory, S, g):
    """First child of node ``g`` from the sampled directory."""
    a = (g // S) * S
    c = np.int64(directory[g // S])
    h = a
    while h + 2 <= g:
        c += _POP8[sig[h >> 1]]
        h += 2
    if h < g:
        c += _POP4[sig[h >> 1] & 15]
    return c


@njit(inline="always", cache=True)
def _visit(sig, code, s, c, x, y, left, sr):
    """Visit the leaves of a last-internal-level node (code, signature s, first
    leaf c); returns the next leaf id.

    The node's block is decoded once; the set bits of ``s`` are walked through a table
    (``_CNT``, ``_POS``); the four cells of a leaf are updated without branches (an
    absent cell writes back the value it read, at an index clamped into the arrays),
    which halves the time on graphs with irregular leaves. Updates go in cell order."""
    B = x.shape[1]
    ny = y.shape[0] - 1
    nx = x.shape[0] - 1
    R = _compact(code >> _U1) << 2
    C = _compact(code) << 2
    for jb in range(_CNT[s]):
        b = _POS[s, jb]
        lam = _nib(sig, c)
        c += 1
        r = R + ((b >> 1) << 1)  # origin of the 2 x 2 block of leaf b
        col = C + ((b & 1) << 1)
        for q in range(4):
            on = (lam >> q) & 1
            i = r + (q >> 1)
            j = col + (q & 1)
            if left:
                i, j = j, i
            i = min(i, ny)
            j = min(j, nx)
            if B == 1:
                old = y[i, 0]
                v = _combine(sr, old, x[j, 0])
                y[i, 0] = v if on else old
            else:
                for k in range(B):
                    old = y[i, k]
                    v = _combine(sr, old, x[j, k])
                    y[i, k] = v if on else old
    return c


# --------------------------------------------------------------------- kernels
@njit(cache=True)
def _descend(sig, level_start, L, d0, buf, buf_off, buf_cap, directory, S, use_dir, x, y, left, sr):
    last = L - 2
    cnt = np.zeros(L, np.int64)
    pos = np.zeros(L, np.int64)
    g0 = np.zeros(L, np.int64)     # node id of buffer slot 0
    run = np.zeros(L, np.int64)    # first child of the next unvisited node of the level
    for lvl in range(d0, last + 1):
        run[lvl] = level_start[lvl + 1]
    cnt[d0] = level_start[d0 + 1] - level_start[d0]
    g0[d0] = level_start[d0]
    lvl = d0
    while lvl >= d0:
        if pos[lvl] >= cnt[lvl]:
            lvl -= 1
            continue
        t = pos[lvl]
        base = buf_off[lvl]
        c = _first_child(sig, directory, S, g0[lvl] + t) if use_dir else run[lvl]
        if lvl == last:  # leaves in place
            for t in range(pos[lvl], cnt[lvl]):
                g = g0[lvl] + t
                c = _visit(sig, buf[base + t], _nib(sig, g), c, x, y, left, sr)
            pos[lvl] = cnt[lvl]
            run[lvl] = c
            continue
        out = buf_off[lvl + 1]
        cap = buf_cap[lvl + 1]
        k = 0
        while t < cnt[lvl]:
            s = _nib(sig, g0[lvl] + t)
            if k + _POP4[s] > cap:
                break
            code = buf[base + t] << _U2
            for jb in range(_CNT[s]):
                buf[out + k] = code | np.uint64(_POS[s, jb])
                k += 1
            t += 1
        pos[lvl] = t
        run[lvl] = c + k
        g0[lvl + 1] = c
        cnt[lvl + 1] = k
        pos[lvl + 1] = 0
        lvl += 1


@njit(cache=True)
def _frontier(sig, level_start, L, codes, x, y, left, sr):
    first = level_start[L - 2]
    c = level_start[L - 1]
    for t in range(codes.shape[0]):
        c = _visit(sig, codes[t], _nib(sig, first + t), c, x, y, left, sr)


@njit(cache=True)
def _csr(indptr, indices, x, y, sr):
    B = x.shape[1]
    for i in range(indptr.shape[0] - 1):
        if B == 1:  # one vector: the row accumulates in a register
            acc = y[i, 0]
            for jj in range(indptr[i], indptr[i + 1]):
                acc = _combine(sr, acc, x[indices[jj], 0])
            y[i, 0] = acc
        else:
            for jj in range(indptr[i], indptr[i + 1]):
                j = indices[jj]
                for k in range(B):
                    y[i, k] = _combine(sr, y[i, k], x[j, k])


# ------------------------------------------------------------------ wrappers
def scratch_layout(tree, tile: int):
    """Per-level frontier buffers of a tiled descent: ``(offsets, capacities)``.

    Level ``d`` of the cached top holds all its codes; every deeper internal level
    at most ``min(tile, width)``; the leaves none. ``offsets[-1]`` slots of 8 bytes
    in all (the scratch of a product, known before it runs)."""
    L = tree.levels
    sizes = np.diff(tree.level_start)
    cap = np.zeros(L, np.int64)
    d0 = tree.top_level
    cap[d0] = sizes[d0]
    for d in range(d0 + 1, L - 1):
        cap[d] = min(int(tile), int(sizes[d]))
    off = np.zeros(L + 1, np.int64)
    np.cumsum(cap, out=off[1:])
    return off, cap


def in_stored_ids(tree, x, y, product):
    """``product(xs, ys)`` on the stored ids of a reordered ``tree``, in place on ``y``:
    ``xs = x[inv]``, ``ys = y[inv]`` (``inv``: the inverse of ``tree.perm``), then
    ``y[:] = ys[perm]``. ``x``/``y`` are ``(n, B)`` numpy (or CuPy, with ``perm`` and
    ``inv`` on the device) arrays; the gathers are along the first axis."""
    return _gathered(tree.perm, tree.inverse_perm, x, y, product)


def _gathered(perm, inv, x, y, product):
    xs = x[inv]
    ys = y[inv]
    product(xs, ys)
    y[...] = ys[perm]
    return y


def k2_product(tree, x, y, sr, *, left=False, tile=1 << 20, offsets="directory", buf=None, layout=None):
    """``y (+)= A x`` (or ``x^T A``) on ``tree``, tree-only, tiled; in place on ``y``
    (``x``, ``y`` in the caller's ids when the tree is reordered)."""
    if tree.num_nodes == 0:
        return y
    if tree.perm is not None:
        raw = tree.raw()
        return in_stored_ids(tree, x, y, lambda xs, ys: k2_product(raw, xs, ys, sr, left=left, tile=tile,
                                                                    offsets=offsets, buf=buf, layout=layout))
    off, cap = layout if layout is not None else scratch_layout(tree, tile)
    if buf is None:
        buf = np.empty(int(off[-1]), np.uint64)
    d0 = tree.top_level
    buf[off[d0]:off[d0] + tree.top_codes.shape[0]] = tree.top_codes
    _descend(tree.sig, tree.level_start, tree.levels, d0, buf, off, cap, tree.directory,
             tree.sample, offsets == "directory", x, y, bool(left), int(sr))
    return y


def k2_frontier_product(tree, x, y, sr, *, left=False):
    """``y (+)= A x`` (or ``x^T A``) from the cached frontier (k2+F); in place
    (``x``, ``y`` in the caller's ids when the tree is reordered)."""
    if tree.num_nodes == 0:
        return y
    tree.with_frontier()
    if tree.perm is not None:
        raw = tree.raw()
        return in_stored_ids(tree, x, y, lambda xs, ys: k2_frontier_product(raw, xs, ys, sr, left=left))
    _frontier(tree.sig, tree.level_start, tree.levels, tree.frontier, x, y, bool(left), int(sr))
    return y


def csr_product(indptr, indices, x, y, sr):
    """``y[i] (+)= x[j]`` for every stored ``(i, j)``, rows in order; in place."""
    _csr(indptr, indices, x, y, int(sr))
    return y
