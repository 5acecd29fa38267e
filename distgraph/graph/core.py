"""The one graph type of distgraph: CSR of out-edges, CSC of in-edges on demand.

A :class:`Graph` on ``n`` vertices ``0 .. n-1`` holds

* ``indptr``  -- int64, shape ``(n+1,)``: out-arcs of ``v`` are ``indptr[v]:indptr[v+1]``;
* ``indices`` -- int32 when ``n < 2**31`` else int64, shape ``(m,)``: arc heads, sorted
  within each row;
* ``weights`` -- ``None`` or shape ``(m,)`` of int32, int64, float32 or float64
  (negative values allowed, NaN rejected);
* ``directed`` -- an undirected graph stores every edge as two arcs ``u->v`` and
  ``v->u`` (a self-loop once), so ``m == 2 * num_edges - self_loops``;
* ``labels`` -- ``None`` or int64 ``(n,)``: the id a vertex had in the input when the
  reader compacted sparse ids (SNAP edge lists); results are reported in this order.

Graphs are immutable by convention: algorithms never write into the arrays, so the
arrays may be read-only memory maps of a binary file (``distgraph.formats.binary``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import GraphValueError, InvalidArgumentError

__all__ = ["Graph", "index_dtype", "WEIGHT_DTYPES"]

WEIGHT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))


def index_dtype(n: int) -> np.dtype:
    """int32 when every id in ``[0, n)`` fits, int64 otherwise."""
    return np.dtype(np.int32) if n <= np.iinfo(np.int32).max else np.dtype(np.int64)


def _weight_dtype(w: np.ndarray) -> np.dtype:
    if w.dtype in WEIGHT_DTYPES:
        return w.dtype
    if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
        return np.dtype(np.int64) if w.dtype.itemsize > 4 or w.dtype == np.uint32 else np.dtype(np.int32)
    if np.issubdtype(w.dtype, np.floating):
        return np.dtype(np.float64) if w.dtype.itemsize >= 8 else np.dtype(np.float32)
    raise GraphValueError(f"weights must be integer or floating point; got dtype {w.dtype}")


@dataclass(eq=False)
class Graph:
    """A directed or undirected graph in CSR form (see the module docstring)."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None
    directed: bool = True
    labels: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    _csc: tuple | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ basics
    @property
    def n(self) -> int:
        """Number of vertices."""
        return int(self.indptr.shape[0] - 1)

    @property
    def m(self) -> int:
        """Number of stored arcs (an undirected edge counts twice, a self-loop once)."""
        return int(self.indices.shape[0])

    @property
    def num_edges(self) -> int:
        """Edges as a user counts them: arcs if directed, unordered pairs (+ loops) if not."""
        if self.directed:
            return self.m
        loops = self.num_self_loops()
        return (self.m - loops) // 2 + loops

    @property
    def weighted(self) -> bool:
        return self.weights is not None

    def num_self_loops(self) -> int:
        src = np.repeat(np.arange(self.n, dtype=self.indices.dtype), np.diff(self.indptr))
        return int(np.count_nonzero(src == self.indices))

    def out_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def in_degree(self) -> np.ndarray:
        if not self.directed:
            return self.out_degree()
        return np.bincount(self.indices, minlength=self.n).astype(np.int64)

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        w = f", weights={self.weights.dtype}" if self.weights is not None else ""
        return f"<Graph {kind} n={self.n} m={self.m}{w}>"

    # ------------------------------------------------------------- transposes
    def csc(self):
        """In-edges as ``(indptr, indices, weights)``: in-neighbours of ``v`` are
        ``indices[indptr[v]:indptr[v+1]]``. Built on first use and cached; for an
        undirected graph it is the CSR itself."""
        if not self.directed:
            return self.indptr, self.indices, self.weights
        if self._csc is None:
            n = self.n
            src = np.repeat(np.arange(n, dtype=self.indices.dtype), np.diff(self.indptr))
            order = np.argsort(self.indices, kind="stable")  # stable: rows stay sorted by src
            indptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.indices, minlength=n), out=indptr[1:])
            w = None if self.weights is None else self.weights[order]
            self._csc = (indptr, src[order], w)
        return self._csc

    def transpose(self) -> "Graph":
        """The graph with every arc reversed (itself when undirected)."""
        if not self.directed:
            return self
        ip, ix, w = self.csc()
        return Graph(ip, ix, w, directed=True, labels=self.labels, meta=dict(self.meta),
                     _csc=(self.indptr, self.indices, self.weights))

    def edges(self):
        """All stored arcs as ``(src, dst, weights-or-None)`` arrays."""
        src = np.repeat(np.arange(self.n, dtype=self.indices.dtype), np.diff(self.indptr))
        return src, self.indices, self.weights

    def input_ids(self) -> np.ndarray:
        """The input id of every vertex (``labels`` or ``arange(n)``)."""
        return np.arange(self.n, dtype=np.int64) if self.labels is None else self.labels

    # ----------------------------------------------------------- conversions
    def to_scipy(self, dtype=None):
        """A ``scipy.sparse.csr_array`` (weights, or ones for an unweighted graph) of its own
        arrays: scipy sorts and merges repeated arcs in place (``sum_duplicates``, also inside
        ``tolil``), which must not change the graph."""
        import scipy.sparse as sp

        data = self.weights.copy() if self.weights is not None else np.ones(self.m, dtype=dtype or np.int8)
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        return sp.csr_array((data, self.indices.copy(), self.indptr.copy()), shape=(self.n, self.n))

    def to_networkx(self):
        """A networkx ``DiGraph`` or ``Graph`` with nodes ``0..n-1`` (edge attr ``weight``)."""
        import networkx as nx

        g = nx.DiGraph() if self.directed else nx.Graph()
        g.add_nodes_from(range(self.n))
        src, dst, w = self.edges()
        if w is None:
            g.add_edges_from(zip(src.tolist(), dst.tolist()))
        else:
            g.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist()))
        return g

    # ---------------------------------------------------------- constructors
    @classmethod
    def from_edges(cls, src, dst, weights=None, *, n=None, directed=True, symmetrize=False,
                   drop_self_loops=False, dedup=True, labels=None, meta=None) -> "Graph":
        """Build a graph from arc arrays.

        Parameters
        ----------
        src, dst : array_like of int
            Tail and head of every arc, 0-based.
        weights : array_like or None
            One weight per arc (int32/int64/float32/float64; NaN rejected).
        n : int, optional
            Number of vertices; default ``max(src, dst) + 1`` (0 when there are no arcs).
        directed : bool
            ``False`` stores every edge in both directions.
        symmetrize : bool
            Add the reverse of every arc but keep ``directed=True`` semantics off:
            the result is undirected. Same as ``directed=False``.
        drop_self_loops : bool
            Remove arcs ``v -> v``.
        dedup : bool
            Keep one arc per ``(src, dst)`` pair; for a weighted graph, the one of
            minimum weight. Undirected graphs are always deduplicated.

        Raises
        ------
        GraphValueError
            Negative ids, ids ``>= n``, mismatched lengths, NaN weights.

        Examples
        --------
        >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
        >>> g.n, g.m, g.num_edges
        (4, 6, 3)
        """
        src = np.asarray(src)
        dst = np.asarray(dst)
        if src.ndim != 1 or dst.ndim != 1 or src.shape != dst.shape:
            raise GraphValueError(f"src and dst must be 1-D arrays of equal length; got shapes {src.shape} and {dst.shape}")
        for name, a in (("src", src), ("dst", dst)):
            if a.size and not np.issubdtype(a.dtype, np.integer):
                if np.issubdtype(a.dtype, np.floating) and np.all(np.mod(a, 1) == 0):
                    continue
                raise GraphValueError(f"{name} must hold integer vertex ids; got dtype {a.dtype}")
        src = src.astype(np.int64, copy=False)
        dst = dst.astype(np.int64, copy=False)
        hi = int(max(src.max(initial=-1), dst.max(initial=-1)))
        lo = int(min(src.min(initial=0), dst.min(initial=0)))
        if lo < 0:
            raise GraphValueError(f"vertex ids must be >= 0; got {lo}")
        if n is None:
            n = hi + 1
        n = int(n)
        if n < 0:
            raise InvalidArgumentError(f"n must be >= 0; got {n}")
        if hi >= n:
            raise GraphValueError(f"vertex id {hi} is out of range for n={n} (ids must be in [0, {n}))")
        w = None
        if weights is not None:
            w = np.asarray(weights)
            if w.shape != src.shape:
                raise GraphValueError(f"weights must have one entry per arc ({src.shape[0]}); got shape {w.shape}")
            w = w.astype(_weight_dtype(w), copy=False)
            if w.dtype.kind == "f" and np.isnan(w).any():
                bad = int(np.flatnonzero(np.isnan(w))[0])
                raise GraphValueError(f"weight of arc {bad} ({src[bad]} -> {dst[bad]}) is NaN; weights must be numbers")
        undirected = (not directed) or symmetrize
        indptr, indices, w = _build_csr(src, dst, w, n, undirected=undirected,
                                        drop_self_loops=drop_self_loops,
                                        dedup=dedup or undirected)
        return cls(indptr, indices, w, directed=not undirected,
                   labels=None if labels is None else np.asarray(labels, dtype=np.int64),
                   meta=dict(meta or {}))

    @classmethod
    def from_scipy(cls, A, *, directed=None, weighted=True, **kw) -> "Graph":
        """Build from a square scipy.sparse matrix; ``A[i, j]`` is the arc ``i -> j``.

        ``directed=None`` means undirected exactly when ``A`` is symmetric.
        Explicitly stored zeros are arcs (of weight 0)."""
        import scipy.sparse as sp

        if not sp.issparse(A):
            raise TypeError(f"A must be a scipy.sparse matrix or array; got {type(A).__name__}")
        if A.shape[0] != A.shape[1]:
            raise GraphValueError(f"adjacency matrix must be square; got shape {A.shape}")
        C = A.tocoo()
        if directed is None:
            directed = (A != A.T).nnz != 0
        w = C.data if weighted and C.data.dtype != np.bool_ else None
        return cls.from_edges(C.row, C.col, w, n=A.shape[0], directed=directed, **kw)

    @classmethod
    def from_networkx(cls, G, weight: str | None = None, **kw) -> "Graph":
        """Build from a networkx graph; nodes are numbered in ``G.nodes`` order and
        their original names kept in ``meta['nodes']`` (``labels`` when integers)."""
        nodes = list(G.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        ed = list(G.edges(data=weight, default=1)) if weight else list(G.edges)
        src = np.fromiter((index[e[0]] for e in ed), dtype=np.int64, count=len(ed))
        dst = np.fromiter((index[e[1]] for e in ed), dtype=np.int64, count=len(ed))
        w = np.array([e[2] for e in ed]) if weight else None
        labels = np.asarray(nodes, dtype=np.int64) if all(isinstance(v, (int, np.integer)) for v in nodes) else None
        g = cls.from_edges(src, dst, w, n=len(nodes), directed=G.is_directed(), labels=labels, **kw)
        if labels is None:
            g.meta["nodes"] = nodes
        return g


# Below this many arcs numpy's sort beats loading the compiled counting sort.
_COUNTING_MIN_ARCS = 1 << 16


def _build_csr(src, dst, w, n, *, undirected, drop_self_loops, dedup):
    """Rows sorted by head (ties by weight); with ``dedup`` the first -- lightest -- arc
    of each pair is kept.  Counting sort (numba) for large inputs, numpy below
    ``_COUNTING_MIN_ARCS``; both give identical arrays (tests check this)."""
    from ._build import build_csr_counting, build_csr_numpy

    build = build_csr_counting if src.size >= _COUNTING_MIN_ARCS else build_csr_numpy
    return build(src, dst, w, n, undirected=undirected, drop_self_loops=drop_self_loops,
                 dedup=dedup, index_dtype=index_dtype(n))
