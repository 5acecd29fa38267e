"""Semiring sparse matrix-vector products on k2-trees (or CSR), over MPI ranks.

Tosoni & Mencagli, "A GPU Engine for Sparse Matrix-Vector Products on
k2-Tree-Compressed Graphs" (arXiv 2611.03610): Algorithm 1, the level-synchronous
descent with child offsets from a scan or a sampled directory (S = 256), tiles of at
most M = 2**20 nodes bounding the scratch, the cached last internal level (k2+F),
right products ``y = A x`` and left products ``y^T = x^T A`` from the same tree,
batches of B vectors, and the semirings of Table 1 (:mod:`distgraph.semiring`).

The matrix is Boolean: the adjacency pattern of a :class:`~distgraph.graph.Graph`
(weights are ignored) or the stored entries of a scipy.sparse matrix of any shape.

Distribution (SPMD, every rank calls with the same arguments and gets the whole
``y``): rank ``r`` of ``p`` holds the k2-tree of its block of rows (balanced by arcs,
:func:`~distgraph.graph.partition.partition_by_edges`) and computes those rows of a
right product; the blocks are gathered with ``MPI_Allgatherv``. A left product is
computed by column blocks the same way, from a k2-tree of the rank's columns, built
on the first left product; on one rank both are the one tree of the whole matrix.
Each entry of ``y`` is thus accumulated by one rank, in increasing index order, so
the result is bit-identical for any number of ranks, any tile size, either offset
source, with or without the cached frontier, and equal to the CSR product.

Reordering (``reorder="degree"`` or ``"rcm"``, or a reordered
:class:`~distgraph.formats.k2tree.K2Tree`): the blocks hold the matrix with its
vertices renumbered (``A'[perm[i], perm[j]] = A[i, j]``, smaller trees where the ids
were scrambled, see :mod:`distgraph.formats.k2tree`), and ``x`` and ``y`` stay in the
caller's ids: on one rank the backend's wrappers gather ``x`` before and ``y`` after
the product; on several, the plan does, around the row or column blocks of ``A'``.
Within a row the contributions then arrive in the stored column order: results equal
the unreordered ones up to floating-point rounding (exactly for lor_land, min_plus and
integer-valued vectors).

``format="csr"`` runs the same products on CSR row blocks (CSC column blocks for the
left product): the baseline a user would otherwise pick.

Uses built on the products: :func:`reachability` (multi-source hop levels by batched
Boolean products, Sec. 5.8) and :func:`hop_distances` (Bellman-Ford rounds over
min_plus, unit lengths); PageRank is :func:`distgraph.algorithms.pagerank.pagerank`.
"""

from __future__ import annotations

import numpy as np

from .. import semiring as _semiring
from ..errors import InvalidArgumentError

__all__ = ["spmv", "SpMVPlan", "reachability", "hop_distances", "DEFAULT_TILE"]

DEFAULT_TILE = 1 << 20
FORMATS = ("k2tree", "csr")
OFFSETS = ("directory", "scan")


# ============================================================== the input
class _Pattern:
    """The Boolean input as CSR (rows) and, on demand, CSC (columns), int64 ids."""

    def __init__(self, A, reorder=None):
        from ..formats.k2tree import K2Tree, _no_reorder
        from ..graph.core import Graph

        self.tree = None
        self.graph = None
        self.perm = None  # new_id: the pattern below is in the stored (renumbered) ids
        self._csr = self._csc = None
        if isinstance(A, Graph):
            self.graph = A
            self.shape = (A.n, A.n)
        elif isinstance(A, K2Tree):
            if not _no_reorder(reorder):
                raise InvalidArgumentError("reorder is an option of the tree's build (K2Tree.from_graph(..., "
                                           "reorder=...)), not of a plan on a K2Tree")
            self.tree = A
            self.perm = A.perm
            self.shape = tuple(A.shape)
        else:
            import scipy.sparse as sp

            if not sp.issparse(A):
                raise TypeError("A must be a distgraph Graph, a K2Tree, a scipy.sparse matrix or an SpMVPlan; "
                                f"got {type(A).__name__}")
            C = sp.csr_array(A, copy=True)
            C.sum_duplicates()
            C.sort_indices()
            self._csr = (C.indptr.astype(np.int64), C.indices)
            self.shape = tuple(int(s) for s in C.shape)
        if not _no_reorder(reorder) and self.tree is None:
            self._renumber(reorder)
        # whether the first stored ids are the hubs (degree order, or a permutation of unknown
        # kind): the GPU leaves then pad those outputs (DeviceMatrix(hubs_first=...))
        self.hubs_first = (reorder == "degree") if isinstance(reorder, str) else self.perm is not None

    def _renumber(self, reorder):
        """Replace the pattern by its renumbered copy (``self.perm`` = new_id)."""
        from ..formats.k2tree import _new_ids

        if isinstance(reorder, str) and reorder in ("degree", "rcm") and self.graph is not None:
            from ..formats.reorder import degree_order, rcm

            new_id = degree_order(self.graph) if reorder == "degree" else rcm(self.graph)
        else:
            ip, ix = self.csr()
            rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(ip))
            new_id = _new_ids(reorder, rows, np.asarray(ix), self.shape)
        ip, ix = self.csr()
        rows = np.repeat(new_id[: self.shape[0]], np.diff(ip))
        self._csr = _coo_to_csr(rows, new_id[np.asarray(ix, np.int64)], self.shape[0])
        self._csc = None
        self.graph = None
        self.perm = new_id
    @property
    def nnz(self) -> int:
        return int(self.csr()[0][-1])

    def csr(self):
        if self._csr is None:
            if self.graph is not None:
                self._csr = (self.graph.indptr, self.graph.indices)
            else:
                r, c = self.tree.to_coo(raw=True)
                self._csr = _coo_to_csr(r, c, self.shape[0])
        return self._csr

    def csc(self):
        if self._csc is None:
            if self.graph is not None:
                ip, ix, _ = self.graph.csc()
                self._csc = (ip, ix)
            else:
                ip, ix = self.csr()
                rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(ip))
                self._csc = _coo_to_csr(np.asarray(ix, np.int64), rows, self.shape[1])
        return self._csc


def _coo_to_csr(r, c, n):
    order = np.lexsort((c, r))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    return indptr, np.asarray(c)[order]


# ============================================================ one block
class _Block:
    """One rank's block: rows ``[lo, hi)`` (right) or columns (left) of the matrix."""

    def __init__(self, lo, hi, tree=None, csr=None):
        self.lo, self.hi = lo, hi
        self.tree = tree        # K2Tree whose products give this block of y
        self.csr = csr          # (indptr, indices): rows of A or of A^T
        self.buf = None
        self.layout = None
        self.device = None      # GPU matrix, built on first GPU product


# ================================================================= plan
class SpMVPlan:
    """A matrix prepared for many products: per-rank blocks, scratch planned once.

    Parameters
    ----------
    A : Graph, K2Tree or scipy.sparse matrix
        The Boolean matrix (a graph's adjacency pattern; weights are ignored).
    format : {"k2tree", "csr"}
        Storage the products run on.
    tile : int
        ``M``: at most this many nodes per level of a k2-tree descent (>= 4).
    offsets : {"directory", "scan"}
        Where child offsets come from (Sec. 3.2).
    cached_frontier : bool
        Keep the codes of the last internal level (k2+F): faster, 8 bytes per node.
    sample : int
        Directory sample ``S``.
    reorder : {None, "none", "degree", "rcm"} or array_like of int, optional
        Renumber the vertices of a square matrix before building the blocks (see
        :meth:`~distgraph.formats.k2tree.K2Tree.from_coo`); ``x`` and ``y`` stay in
        the caller's ids. A :class:`~distgraph.formats.k2tree.K2Tree` input brings
        its own permutation (build it with ``reorder=``).
    comm : mpi4py communicator, optional
        Default ``MPI.COMM_WORLD``.
    backend : {"cpu", "gpu", "auto"}, optional
        Default: ``DISTGRAPH_BACKEND`` (gpu when CuPy sees one).

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3])
    >>> plan = SpMVPlan(g, backend="cpu")
    >>> plan.multiply(np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [6.0, 3.0, 4.0, 0.0]
    >>> plan.multiply(np.array([1.0, 2.0, 3.0, 4.0]), left=True).tolist()
    [0.0, 1.0, 2.0, 4.0]
    """

    def __init__(self, A, *, format="k2tree", tile=DEFAULT_TILE, offsets="directory", cached_frontier=False,
                 sample=256, comm=None, backend=None, reorder=None):
        if format not in FORMATS:
            raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
        if offsets not in OFFSETS:
            raise InvalidArgumentError(f"offsets must be one of {', '.join(OFFSETS)}; got {offsets!r}")
        if not isinstance(tile, (int, np.integer)) or tile < 4:
            raise InvalidArgumentError(f"tile must be an integer >= 4 (a node has up to 4 children); got {tile!r}")
        from ..runtime.context import get_context

        ctx = get_context(comm, backend)
        self.comm, self.rank, self.size, self.backend = ctx.comm, ctx.rank, ctx.size, ctx.backend
        self.format, self.tile, self.offsets = format, int(tile), offsets
        self.cached_frontier, self.sample = bool(cached_frontier), int(sample)
        self._pattern = _Pattern(A, reorder)
        self.shape = self._pattern.shape
        # one rank, k2-tree: the tree carries the permutation and the backend gathers;
        # else the plan gathers around the blocks of the renumbered matrix
        self._perm = self._pattern.perm
        self._plan_gathers = self._perm is not None and not (self.size == 1 and format == "k2tree")
        self._blocks = {}
        self._parts = {}

    # ---------------------------------------------------------- blocks
    def partition(self, left: bool):
        """Offsets of the row (right) or column (left) blocks of the ranks."""
        if left not in self._parts:
            from ..graph.partition import partition_by_edges

            if self.size == 1:
                n = self.shape[1] if left else self.shape[0]
                self._parts[left] = np.array([0, n], np.int64)
            else:
                ip = self._pattern.csc()[0] if left else self._pattern.csr()[0]
                self._parts[left] = partition_by_edges(ip, self.size).offsets
        return self._parts[left]

    def _block(self, left: bool) -> _Block:
        if self.size == 1 and self.format == "k2tree":
            left = False  # one rank: the one tree of the matrix serves both directions
        if left in self._blocks:
            return self._blocks[left]
        from ..formats.k2tree import K2Tree

        offs = self.partition(left)
        lo, hi = int(offs[self.rank]), int(offs[self.rank + 1])
        nrows, ncols = self.shape
        pat = self._pattern
        if self.format == "k2tree":
            if self.size == 1 and pat.tree is not None:
                tree = pat.tree
                if tree.sample != self.sample:
                    perm = tree.perm
                    tree = K2Tree.from_coo(*tree.to_coo(raw=True), tree.shape, sample=self.sample)
                    tree.perm = perm
            else:
                ip, ix = pat.csc() if left else pat.csr()
                a, b = int(ip[lo]), int(ip[hi])
                major = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(ip[lo:hi + 1]))
                minor = np.asarray(ix[a:b], dtype=np.int64)
                if self.size == 1:
                    tree = K2Tree.from_coo(major, minor, self.shape, sample=self.sample)
                    tree.perm = pat.perm  # stored ids: the backend gathers
                elif left:
                    tree = K2Tree.from_coo(minor, major, (nrows, hi - lo), sample=self.sample)
                else:
                    tree = K2Tree.from_coo(major, minor, (hi - lo, ncols), sample=self.sample)
            if self.cached_frontier:
                tree.with_frontier()
            blk = _Block(lo, hi, tree=tree)
            if self.backend == "cpu":
                from ..backends.cpu.k2tree_spmv import scratch_layout

                blk.layout = scratch_layout(tree, self.tile)
                if not self.cached_frontier:
                    blk.buf = np.empty(int(blk.layout[0][-1]), np.uint64)
        else:
            ip, ix = pat.csc() if left else pat.csr()
            a, b = int(ip[lo]), int(ip[hi])
            blk = _Block(lo, hi, csr=(np.asarray(ip[lo:hi + 1], np.int64) - a, np.asarray(ix[a:b])))
        self._blocks[left] = blk
        return blk

    def row_counts(self) -> np.ndarray:
        """Non-zeros of every row (int64), in the caller's ids (out-degrees of a graph)."""
        deg = np.diff(self._pattern.csr()[0]).astype(np.int64)
        return deg if self._perm is None else deg[self._perm]

    @property
    def tree(self):
        """This rank's k2-tree for right products (the whole tree on one rank)."""
        return self._block(False).tree

    # ------------------------------------------------------------ products
    def multiply(self, x=None, semiring="plus_times", left: bool = False) -> np.ndarray:
        """``y = A x`` (``left=False``) or ``y^T = x^T A`` (``left=True``) over ``semiring``.

        Parameters
        ----------
        x : array_like, optional
            Shape ``(k,)`` or ``(k, B)`` with ``k = ncols`` (right) or ``nrows`` (left):
            one vector or a batch of ``B``. Default: all ones (one vector).
        semiring : str or Semiring
            ``"plus_times"``, ``"lor_land"`` or ``"min_plus"``.
        left : bool
            Left product.

        Returns
        -------
        numpy.ndarray
            Shape ``(nrows,)`` / ``(nrows, B)`` (right) or ``(ncols,)`` / ``(ncols, B)``
            (left), dtype ``semiring.output_dtype(x.dtype)``, on every rank. Entries with no
            non-zero hold the semiring's zero (0, False, +inf).
        """
        sr = _semiring.get(semiring)
        nrows, ncols = self.shape
        kin, kout = (nrows, ncols) if left else (ncols, nrows)
        if x is None:
            x = np.ones(kin, dtype=np.float64)
        x = np.asarray(x)
        if x.ndim not in (1, 2) or x.shape[0] != kin:
            side = "nrows" if left else "ncols"
            raise InvalidArgumentError(f"x must have shape ({kin},) or ({kin}, B) ({side} of the matrix for a "
                                       f"{'left' if left else 'right'} product); got {x.shape}")
        if x.dtype.kind not in "biuf":
            raise InvalidArgumentError(f"x must hold numbers; got dtype {x.dtype}")
        one = x.ndim == 1
        x2 = sr.prepare(x.reshape(kin, 1 if one else x.shape[1]))  # (-1 cannot be inferred when kin = 0)
        if self._plan_gathers:
            x2 = x2[self._pattern_inverse()]
        B = x2.shape[1]
        blk = self._block(left)
        offs = self.partition(left)
        ylocal = sr.empty((int(offs[self.rank + 1] - offs[self.rank]), B), x2.dtype)
        if self.backend == "gpu":
            self._gpu_product(blk, x2, ylocal, sr, left)
        else:
            self._cpu_product(blk, x2, ylocal, sr, left)
        y = self._allgather(ylocal, kout, left)
        if self._plan_gathers:
            y = y[self._perm]
        return y[:, 0] if one else y

    def _pattern_inverse(self):
        inv = getattr(self, "_inv", None)
        if inv is None:
            inv = np.empty_like(self._perm)
            inv[self._perm] = np.arange(self._perm.shape[0], dtype=self._perm.dtype)
            self._inv = inv
        return inv

    def _cpu_product(self, blk, x2, y, sr, left):
        from ..backends.cpu import k2tree_spmv as K

        op = sr.code
        if blk.csr is not None:
            K.csr_product(blk.csr[0], blk.csr[1], x2, y, op)
            return
        # One rank: the whole tree, left product by swapping coordinates at the leaves.
        # Several: a column-block tree whose left product gives this rank's columns.
        if self.cached_frontier:
            K.k2_frontier_product(blk.tree, x2, y, op, left=left)
        else:
            K.k2_product(blk.tree, x2, y, op, left=left, offsets=self.offsets, buf=blk.buf, layout=blk.layout)

    def _gpu_product(self, blk, x2, y, sr, left):
        from ..backends.gpu import k2tree_spmv as G

        if blk.device is None:
            blk.device = G.DeviceMatrix(blk.tree, blk.csr, tile=self.tile, offsets=self.offsets,
                                        cached_frontier=self.cached_frontier,
                                        hubs_first=self._pattern.hubs_first if blk.tree is not None else None)
        y[...] = blk.device.multiply(x2, sr, left=left)

    def _allgather(self, ylocal, kout, left):
        if self.size == 1:
            return ylocal
        B = ylocal.shape[1]
        offs = self.partition(left)
        counts = (np.diff(offs) * B).astype(np.int64)
        displs = (offs[:-1] * B).astype(np.int64)
        y = np.empty((kout, B), dtype=ylocal.dtype)
        send = ylocal.view(np.uint8) if ylocal.dtype == np.bool_ else ylocal
        recv = y.view(np.uint8) if y.dtype == np.bool_ else y
        self.comm.Allgatherv(np.ascontiguousarray(send), [recv, (counts, displs)])
        return y

    # -------------------------------------------------------------- memory
    def nbytes(self, batch: int = 1, left: bool = False, itemsize: int = 8) -> dict:
        """Bytes this rank holds during one product (the working set of Sec. 5.3):
        ``matrix`` (tree + directory + top [+ cached frontier], or CSR), ``scratch``
        (frontier buffers of the tiled descent), ``vectors`` (x and y, full length,
        ``batch`` columns of ``itemsize`` bytes) and ``total``."""
        blk = self._block(left)
        nrows, ncols = self.shape
        vectors = (nrows + ncols) * batch * itemsize
        if blk.tree is not None:
            nb = blk.tree.nbytes()
            matrix = nb["engine_f"] if self.cached_frontier else nb["engine"]
            if self.cached_frontier:
                scratch = 0
            else:
                from ..backends.cpu.k2tree_spmv import scratch_layout

                scratch = 8 * int(scratch_layout(blk.tree, self.tile)[0][-1])
        else:
            matrix = int(blk.csr[0].nbytes + blk.csr[1].nbytes)
            scratch = 0
        return {"matrix": matrix, "scratch": scratch, "vectors": vectors, "total": matrix + scratch + vectors}


# ========================================================== public functions
def spmv(A, x=None, *, semiring="plus_times", left=False, format="k2tree", tile=DEFAULT_TILE,
         offsets="directory", cached_frontier=False, comm=None, backend=None, reorder=None) -> np.ndarray:
    """Semiring product ``y = A x`` or ``y^T = x^T A`` of a Boolean matrix.

    Parameters
    ----------
    A : Graph, K2Tree, scipy.sparse matrix or SpMVPlan
        The matrix: a graph's adjacency pattern (``A[i, j]`` is the arc ``i -> j``;
        weights are ignored) or the stored entries of a sparse matrix, any shape. Pass an
        :class:`SpMVPlan` to multiply the same matrix many times (the other options
        are then the plan's).
    x : array_like, optional
        ``(k,)`` or ``(k, B)``: ``k = ncols`` for a right product, ``nrows`` for a left
        one. Default: ones.
    semiring : {"plus_times", "lor_land", "min_plus"} or Semiring
        See :mod:`distgraph.semiring`.
    left : bool
        Left product ``x^T A`` (along the arcs of a graph) instead of ``A x``.
    format, tile, offsets, cached_frontier, comm, backend, reorder
        See :class:`SpMVPlan`.

    Returns
    -------
    numpy.ndarray
        ``(nrows,)``/``(nrows, B)`` for a right product, ``(ncols,)``/``(ncols, B)`` for
        a left one, on every rank; rows without non-zeros hold the semiring's zero.

    Raises
    ------
    InvalidArgumentError
        Bad shapes, unknown semiring, format or offsets, ``tile < 4``.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3])
    >>> spmv(g, np.array([0.0, 5.0, 1.0, 2.0]), semiring="min_plus", backend="cpu").tolist()
    [3.0, 2.0, 3.0, inf]
    """
    if isinstance(A, SpMVPlan):
        return A.multiply(x, semiring, left)
    plan = SpMVPlan(A, format=format, tile=tile, offsets=offsets, cached_frontier=cached_frontier,
                    comm=comm, backend=backend, reorder=reorder)
    return plan.multiply(x, semiring, left)


def _plan_for(A, plan_kw):
    if isinstance(A, SpMVPlan):
        return A
    return SpMVPlan(A, **plan_kw)


def _sources(sources, n):
    s = np.atleast_1d(np.asarray(sources))
    if s.ndim != 1 or s.size == 0 or s.dtype.kind not in "iu":
        raise InvalidArgumentError(f"sources must be a non-empty 1-D array of vertex ids; got {sources!r}")
    if s.min() < 0 or s.max() >= n:
        raise InvalidArgumentError(f"sources must be in [0, {n}); got {int(s.min())}..{int(s.max())}")
    return s.astype(np.int64)


def reachability(A, sources, *, reverse=False, max_levels=None, **plan_kw) -> np.ndarray:
    """Hop levels from many sources at once by batched Boolean products (Sec. 5.8).

    Level ``k + 1`` is the Boolean product of the frontier of level ``k`` (an
    ``n x B`` table, one column per source) with the matrix, less what was reached
    before; it stops at the fixed point or after ``max_levels`` levels.

    Parameters
    ----------
    A : Graph, K2Tree, square scipy.sparse matrix or SpMVPlan
    sources : array_like of int
        ``B`` source vertices.
    reverse : bool
        Follow arcs backwards (right products) instead of forwards (left products).
    max_levels : int, optional
        Stop after this many levels.
    **plan_kw
        Options of :class:`SpMVPlan` (format, tile, offsets, comm, backend, ...).

    Returns
    -------
    numpy.ndarray of int32, shape ``(n, B)``
        ``levels[v, b]``: hops from ``sources[b]`` to ``v``; -1 when unreached.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3])
    >>> reachability(g, [0, 2], backend="cpu").T.tolist()
    [[0, 1, 2, 3], [-1, -1, 0, 1]]
    """
    plan = _plan_for(A, plan_kw)
    n = plan.shape[0]
    if plan.shape[0] != plan.shape[1]:
        raise InvalidArgumentError(f"A must be square for a traversal; got shape {plan.shape}")
    src = _sources(sources, n)
    B = src.shape[0]
    cols = np.arange(B)
    level = np.full((n, B), -1, dtype=np.int32)
    level[src, cols] = 0
    frontier = np.zeros((n, B), dtype=bool)
    frontier[src, cols] = True
    k = 0
    while max_levels is None or k < max_levels:
        reached = plan.multiply(frontier, _semiring.lor_land, left=not reverse)
        new = reached & (level < 0)
        if not new.any():
            break
        k += 1
        level[new] = k
        frontier = new
    return level


def hop_distances(A, sources, *, reverse=False, max_rounds=None, **plan_kw) -> np.ndarray:
    """Hop-count shortest paths by Bellman-Ford rounds over min_plus (unit lengths).

    Each round is one batched min_plus product ``d = min(d, A (x) d)``; it stops when a
    round changes nothing (or after ``max_rounds``).

    Returns
    -------
    numpy.ndarray of float64, shape ``(n, B)``
        ``dist[v, b]``: hops from ``sources[b]`` to ``v``; ``inf`` when unreachable.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 0], [1, 2, 2])
    >>> hop_distances(g, [0], backend="cpu")[:, 0].tolist()
    [0.0, 1.0, 1.0]
    """
    plan = _plan_for(A, plan_kw)
    n = plan.shape[0]
    if plan.shape[0] != plan.shape[1]:
        raise InvalidArgumentError(f"A must be square for shortest paths; got shape {plan.shape}")
    src = _sources(sources, n)
    B = src.shape[0]
    dist = np.full((n, B), np.inf)
    dist[src, np.arange(B)] = 0.0
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        nxt = np.minimum(dist, plan.multiply(dist, _semiring.min_plus, left=not reverse))
        rounds += 1
        if np.array_equal(nxt, dist):
            break
        dist = nxt
    return dist
