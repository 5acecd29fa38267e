"""k2-tree (k = 2) of a Boolean matrix: a pointerless quadtree in 4 bits per node.

Brisaboa, Ladra & Navarro, "k2-trees for compact web graph representation" (SPIRE
2009), in the layout of Tosoni & Mencagli, "A GPU Engine for Sparse Matrix-Vector
Products on k2-Tree-Compressed Graphs" (arXiv 2611.03610), Sec. 2.1 and 3.

The matrix (``nrows x ncols``, any shape) is padded with empty rows and columns to
``2**L x 2**L``. The root splits it into four quadrants ``b = 2*b1 + b0`` (``b1``: the
lower half of the rows, ``b0``: the right half of the columns) and keeps a 4-bit
*signature* whose bit ``b`` is set iff quadrant ``b`` holds a non-zero; every non-empty
quadrant is a child, split again, down to the *leaves* (level ``L - 1``), whose
signature marks the non-zero cells of their 2 x 2 block. Empty regions cost nothing.

Encoding of the arrays of a :class:`K2Tree` (``N`` nodes, levels ``0 .. L-1``)

* ``sig``         -- uint8, ``ceil(N / 2)``: the signatures in *level order* (level 0,
  the root, then level 1 left to right, ...), two per byte: node ``g`` is
  ``(sig[g >> 1] >> 4 * (g & 1)) & 15``. This is the bitstring ``T`` of the paper.
* ``level_start`` -- int64, ``L + 1``: level ``d`` is nodes ``level_start[d] ..
  level_start[d+1] - 1``.
* ``directory``   -- uint32 (int64 past 2**32 nodes), ``ceil(N / S)``: the sampled rank
  directory of Sec. 3.2. Every node but the root is the child of one set bit, in level
  order, so the first child of node ``g`` is node ``1 + popcount(T[0 .. 4g))``;
  ``directory[i]`` stores that value for node ``i * S`` and any other node adds the
  popcount of at most ``S - 1`` signatures (``S = 256`` by default).
* ``top_level``, ``top_codes`` -- uint64: the Morton codes of every node of the
  deepest internal level with at most ``2**16`` nodes (Sec. 3.4: the top of the tree
  is expanded once on the host, products start there).
* ``frontier``    -- uint64 or None: the codes of every node of the last internal
  level ``L - 2`` (the cached frontier of the "k2+F" configuration, Sec. 3.5,
  8 bytes per node).

A Morton code interleaves the row and column bits of a node's block, two bits
``b1 b0`` per level from the root: a leaf's code ``(code << 2) | b`` deinterleaves
into the origin ``(r, c)`` of its 2 x 2 block (odd bits: ``r``, even bits: ``c``).

Construction (:meth:`K2Tree.from_coo`) is vectorised: the Morton codes of the
non-zeros are sorted once; level ``d`` is the sorted unique prefixes ``code >> 2(L-d)``
and a node's signature is the OR of ``1 << (child & 3)`` over its children
(``np.bitwise_or.reduceat``). Products live in :mod:`distgraph.algorithms.spmv`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import GraphFormatError, InvalidArgumentError

__all__ = ["K2Tree", "morton_encode", "morton_decode", "csr_nbytes", "sidecar_path", "tree_for_file",
           "FORMAT_VERSION"]

FORMAT_VERSION = 1
DEFAULT_SAMPLE = 256
DEFAULT_TOP_NODES = 1 << 16

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_M8 = np.uint64(0x00FF00FF00FF00FF)
_M16 = np.uint64(0x0000FFFF0000FFFF)
_M32 = np.uint64(0x00000000FFFFFFFF)
_POP4 = np.array([bin(i).count("1") for i in range(16)], dtype=np.uint8)


def _spread(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.uint64) & _M32
    v = (v | (v << np.uint64(16))) & _M16
    v = (v | (v << np.uint64(8))) & _M8
    v = (v | (v << np.uint64(4))) & _M4
    v = (v | (v << np.uint64(2))) & _M2
    return (v | (v << np.uint64(1))) & _M1


def _compact(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.uint64) & _M1
    v = (v | (v >> np.uint64(1))) & _M2
    v = (v | (v >> np.uint64(2))) & _M4
    v = (v | (v >> np.uint64(4))) & _M8
    v = (v | (v >> np.uint64(8))) & _M16
    return (v | (v >> np.uint64(16))) & _M32


def morton_encode(rows, cols) -> np.ndarray:
    """Morton codes (uint64) of cells ``(rows, cols)``: row bits odd, column bits even.

    >>> int(morton_encode(np.array([3]), np.array([5]))[0]) == 0b011011
    True
    """
    return (_spread(np.asarray(rows)) << np.uint64(1)) | _spread(np.asarray(cols))


def morton_decode(codes) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` (int64) of Morton codes; inverse of :func:`morton_encode`."""
    codes = np.asarray(codes, dtype=np.uint64)
    return (_compact(codes >> np.uint64(1)).astype(np.int64), _compact(codes).astype(np.int64))


def csr_nbytes(nrows: int, nnz: int, values: int = 4, index: int = 4) -> int:
    """Bytes of a CSR with 32-bit row pointers and column indices and ``values``
    bytes per value (4: cuSPARSE with FP32 values; 0: a Boolean CSR)."""
    return (nrows + 1) * index + nnz * (index + values)


def _levels_for(nrows: int, ncols: int) -> int:
    side = max(int(nrows), int(ncols), 1)
    return max(2, (side - 1).bit_length())


@dataclass(eq=False)
class K2Tree:
    """A k2-tree (k = 2) of a Boolean ``shape`` matrix (see the module docstring).

    Build with :meth:`from_coo`, :meth:`from_csr`, :meth:`from_graph` or
    :meth:`from_scipy`; multiply with :func:`distgraph.algorithms.spmv.spmv`.
    """

    shape: tuple
    levels: int
    nnz: int
    sig: np.ndarray
    level_start: np.ndarray
    directory: np.ndarray
    sample: int
    top_level: int
    top_codes: np.ndarray
    frontier: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    # ------------------------------------------------------------ basics
    @property
    def num_nodes(self) -> int:
        return int(self.level_start[-1])

    @property
    def side(self) -> int:
        """Side ``2**levels`` of the padded square matrix."""
        return 1 << self.levels

    def level_sizes(self) -> np.ndarray:
        return np.diff(self.level_start)

    def signatures(self) -> np.ndarray:
        """All signatures unpacked, one uint8 per node (level order)."""
        s = np.empty(2 * self.sig.shape[0], dtype=np.uint8)
        s[0::2] = self.sig & 15
        s[1::2] = self.sig >> 4
        return s[: self.num_nodes]

    def level_codes(self, d: int) -> np.ndarray:
        """Morton codes (uint64) of the nodes of level ``d`` (expanded from the top)."""
        if not 0 <= d < self.levels:
            raise InvalidArgumentError(f"d must be in [0, {self.levels}); got {d}")
        if self.num_nodes == 0:
            return np.zeros(0, np.uint64)
        if d == self.levels - 2 and self.frontier is not None:
            return self.frontier
        sigs = self.signatures()
        if d >= self.top_level:
            codes, start = self.top_codes, self.top_level
        else:
            codes, start = np.zeros(1, np.uint64), 0
        for lvl in range(start, d):
            s = sigs[self.level_start[lvl]:self.level_start[lvl + 1]]
            codes = _expand(codes, s)
        return codes

    def __repr__(self) -> str:
        return (f"<K2Tree {self.shape[0]}x{self.shape[1]} nnz={self.nnz} nodes={self.num_nodes} "
                f"levels={self.levels} {self.bits_per_edge():.2f} bits/edge>")

    # -------------------------------------------------------------- sizes
    def nbytes(self) -> dict:
        """Bytes of each part: ``tree`` (the signatures), ``directory``, ``top``
        (cached top codes and level offsets), ``frontier`` (k2+F codes, 0 if not
        cached), ``engine`` (tree + directory + top: the tree-only "k2" matrix) and
        ``engine_f`` (engine + the codes of the last internal level: "k2+F")."""
        tree = int(self.sig.nbytes)
        directory = int(self.directory.nbytes)
        top = int(self.top_codes.nbytes + self.level_start.nbytes)
        nlast = int(self.level_start[self.levels - 1] - self.level_start[self.levels - 2]) if self.num_nodes else 0
        frontier = 8 * nlast
        return {"tree": tree, "directory": directory, "top": top,
                "frontier": frontier if self.frontier is not None else 0,
                "engine": tree + directory + top, "engine_f": tree + directory + top + frontier}

    def bits_per_edge(self) -> float:
        """Bits of the bare tree (4 per node) per non-zero."""
        return 4.0 * self.num_nodes / self.nnz if self.nnz else 0.0

    # ------------------------------------------------------ construction
    @classmethod
    def from_coo(cls, rows, cols, shape, *, sample: int = DEFAULT_SAMPLE,
                 top_nodes: int = DEFAULT_TOP_NODES, cached_frontier: bool = False) -> "K2Tree":
        """Build the tree of the Boolean matrix with non-zeros at ``(rows, cols)``.

        Duplicates are merged. Vectorised: one sort of the Morton codes, then one
        ``reduceat`` per level.

        Parameters
        ----------
        rows, cols : array_like of int
            Coordinates of the non-zeros.
        shape : (int, int)
            Matrix shape; both at most ``2**32``.
        sample : int
            Directory sample ``S`` (even, >= 2).
        top_nodes : int
            The cached top is the deepest internal level with at most this many nodes.
        cached_frontier : bool
            Also keep the codes of the last internal level (k2+F).
        """
        nrows, ncols = (int(shape[0]), int(shape[1]))
        if nrows < 0 or ncols < 0:
            raise InvalidArgumentError(f"shape must be non-negative; got {shape}")
        if max(nrows, ncols) > (1 << 32):
            raise InvalidArgumentError(f"shape must be at most 2**32 on each side; got {shape}")
        sample = int(sample)
        if sample < 2 or sample % 2:
            raise InvalidArgumentError(f"sample must be an even integer >= 2; got {sample}")
        rows = np.asarray(rows)
        cols = np.asarray(cols)
        if rows.shape != cols.shape or rows.ndim != 1:
            raise InvalidArgumentError(f"rows and cols must be 1-D of equal length; got {rows.shape} and {cols.shape}")
        if rows.size:
            if rows.min() < 0 or cols.min() < 0 or rows.max() >= nrows or cols.max() >= ncols:
                raise InvalidArgumentError(f"coordinates must lie in [0, {nrows}) x [0, {ncols}); "
                                           f"got rows {rows.min()}..{rows.max()}, cols {cols.min()}..{cols.max()}")
        L = _levels_for(nrows, ncols)
        codes = morton_encode(rows, cols)
        codes.sort()  # a plain sort + neighbour test: faster than np.unique's hash table
        if codes.shape[0] > 1:
            codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))]
        nnz = int(codes.shape[0])
        level_sigs = [None] * L
        level_codes = [None] * L
        child = codes
        two = np.uint64(2)
        three = np.uint64(3)
        for d in range(L - 1, -1, -1):
            parent = child >> two
            if child.shape[0]:
                start = np.flatnonzero(np.concatenate(([True], parent[1:] != parent[:-1])))
                bits = (np.uint8(1) << (child & three).astype(np.uint8)).astype(np.uint8)
                level_sigs[d] = np.bitwise_or.reduceat(bits, start).astype(np.uint8)
                child = parent[start]
            else:
                level_sigs[d] = np.zeros(0, np.uint8)
            level_codes[d] = child
        sizes = np.array([s.shape[0] for s in level_sigs], dtype=np.int64)
        level_start = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(sizes, out=level_start[1:])
        sigs = np.concatenate(level_sigs) if nnz else np.zeros(0, np.uint8)
        tree = cls._assemble((nrows, ncols), L, nnz, sigs, level_start, sample, top_nodes, level_codes,
                             cached_frontier)
        return tree

    @classmethod
    def _assemble(cls, shape, L, nnz, sigs, level_start, sample, top_nodes, level_codes, cached_frontier):
        N = int(sigs.shape[0])
        padded = np.zeros(N + (N & 1), dtype=np.uint8)
        padded[:N] = sigs
        packed = (padded[0::2] | (padded[1::2] << np.uint8(4))).astype(np.uint8)
        # directory[i] = first child of node i*S = 1 + set bits before node i*S
        pops = _POP4[sigs].astype(np.int64)
        before = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(pops, out=before[1:])
        nblk = (N + sample - 1) // sample
        dir64 = 1 + before[np.arange(nblk, dtype=np.int64) * sample]
        dtype = np.uint32 if N + 1 < (1 << 32) else np.int64
        directory = dir64.astype(dtype)
        sizes = np.diff(level_start)
        top = 0
        for d in range(L - 1):
            if sizes[d] <= top_nodes:
                top = d
        if N == 0:
            top_codes = np.zeros(0, np.uint64)
        elif level_codes is not None:
            top_codes = np.ascontiguousarray(level_codes[top], dtype=np.uint64)
        else:
            top_codes = None
        t = cls(shape=(int(shape[0]), int(shape[1])), levels=int(L), nnz=int(nnz), sig=packed,
                level_start=level_start, directory=directory, sample=int(sample), top_level=int(top),
                top_codes=top_codes if top_codes is not None else np.zeros(1, np.uint64))
        if top_codes is None:  # rebuilt from a file: expand the top from the root
            t.top_level = 0
            t.top_codes = np.zeros(1, np.uint64)
            t.top_codes = t.level_codes(top)
            t.top_level = top
        if cached_frontier:
            t.frontier = (np.ascontiguousarray(level_codes[L - 2], dtype=np.uint64)
                          if level_codes is not None and N else t.level_codes(L - 2) if N else np.zeros(0, np.uint64))
        return t

    def with_frontier(self) -> "K2Tree":
        """Cache the codes of the last internal level (k2+F); returns ``self``."""
        if self.frontier is None:
            self.frontier = self.level_codes(self.levels - 2) if self.num_nodes else np.zeros(0, np.uint64)
        return self

    def without_frontier(self) -> "K2Tree":
        """A view of this tree without the cached frontier (the tree-only "k2" engine)."""
        return K2Tree(self.shape, self.levels, self.nnz, self.sig, self.level_start, self.directory,
                      self.sample, self.top_level, self.top_codes, None, dict(self.meta))

    @classmethod
    def from_csr(cls, indptr, indices, shape=None, **kw) -> "K2Tree":
        """Build from CSR arrays (``shape`` defaults to square ``n x n``)."""
        indptr = np.asarray(indptr, dtype=np.int64)
        n = indptr.shape[0] - 1
        if shape is None:
            shape = (n, n)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        return cls.from_coo(rows, np.asarray(indices), shape, **kw)

    @classmethod
    def from_graph(cls, graph, **kw) -> "K2Tree":
        """The tree of a :class:`~distgraph.graph.Graph`'s adjacency pattern (weights dropped)."""
        return cls.from_csr(graph.indptr, graph.indices, (graph.n, graph.n), **kw)

    @classmethod
    def from_scipy(cls, A, **kw) -> "K2Tree":
        """The tree of the pattern of stored entries of a scipy.sparse matrix."""
        import scipy.sparse as sp

        if not sp.issparse(A):
            raise TypeError(f"A must be a scipy.sparse matrix or array; got {type(A).__name__}")
        C = A.tocoo()
        return cls.from_coo(C.row, C.col, A.shape, **kw)

    # ----------------------------------------------------------- decoding
    def to_coo(self) -> tuple[np.ndarray, np.ndarray]:
        """All non-zeros ``(rows, cols)`` (int64) in Morton order."""
        if self.num_nodes == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        leaves = self.level_codes(self.levels - 2)
        sigs = self.signatures()
        last = self.levels - 1
        leaves = _expand(leaves, sigs[self.level_start[last - 1]:self.level_start[last]])
        cells = _expand(leaves, sigs[self.level_start[last]:self.level_start[last + 1]])
        return morton_decode(cells)

    def to_scipy(self):
        """A ``scipy.sparse.csr_array`` of int8 ones."""
        import scipy.sparse as sp

        r, c = self.to_coo()
        return sp.csr_array((np.ones(r.shape[0], np.int8), (r, c)), shape=self.shape)

    # ------------------------------------------------------------- files
    def save(self, path, source: dict | None = None) -> None:
        """Write to ``path`` (a ``.npz``; the cached frontier is not stored, it is
        recomputed by :meth:`with_frontier`). Written atomically (temp + rename).
        ``source`` (JSON-able) records what the tree was built from."""
        import json

        path = os.fspath(path)
        tmp = path + ".tmp.npz"
        np.savez(tmp, version=np.int64(FORMAT_VERSION), shape=np.array(self.shape, np.int64),
                 levels=np.int64(self.levels), nnz=np.int64(self.nnz), sig=self.sig,
                 level_start=self.level_start, sample=np.int64(self.sample),
                 source=np.array(json.dumps(source or {})))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path, *, top_nodes: int = DEFAULT_TOP_NODES, cached_frontier: bool = False) -> "K2Tree":
        """Read a tree written by :meth:`save` (directory and top are rebuilt)."""
        path = os.fspath(path)
        try:
            z = np.load(path)
            version = int(z["version"])
            if version != FORMAT_VERSION:
                raise GraphFormatError(f"k2-tree format version {version}; this distgraph reads {FORMAT_VERSION}", path)
            shape = tuple(int(v) for v in z["shape"])
            L, nnz, sample = int(z["levels"]), int(z["nnz"]), int(z["sample"])
            packed, level_start = z["sig"], z["level_start"].astype(np.int64)
            source = str(z["source"]) if "source" in z.files else "{}"
        except KeyError as e:
            raise GraphFormatError(f"not a distgraph k2-tree file (missing {e})", path) from None
        N = int(level_start[-1])
        if packed.shape[0] != (N + 1) // 2 or level_start.shape[0] != L + 1:
            raise GraphFormatError(f"k2-tree arrays disagree ({packed.shape[0]} bytes for {N} nodes)", path)
        s = np.empty(2 * packed.shape[0], np.uint8)
        s[0::2] = packed & 15
        s[1::2] = packed >> 4
        t = cls._assemble(shape, L, nnz, s[:N], level_start, sample, top_nodes, None, cached_frontier)
        import json

        t.meta["source"] = json.loads(source)
        return t


def sidecar_path(graph_path) -> str:
    """Where the k2-tree of the graph file ``graph_path`` is stored: beside it,
    ``<graph_path>.k2t.npz`` (for a ``.dgraph`` binary graph: stored with it)."""
    return os.fspath(graph_path) + ".k2t.npz"


def _file_id(graph_path) -> dict:
    st = os.stat(graph_path)
    return {"file": os.path.basename(os.fspath(graph_path)), "size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns)}


def tree_for_file(graph, graph_path, *, sample: int = DEFAULT_SAMPLE, write: bool = True) -> K2Tree:
    """The k2-tree of ``graph`` (read from ``graph_path``), from its sidecar when that
    was built from the same file (name, size, mtime) with the same ``sample``; else
    built and, when ``write``, stored in the sidecar (a failed write is ignored: the
    folder may be read-only)."""
    side = sidecar_path(graph_path)
    ident = dict(_file_id(graph_path), n=int(graph.n), m=int(graph.m))
    if os.path.exists(side):
        try:
            t = K2Tree.load(side)
            if t.meta.get("source") == ident and t.sample == sample and t.shape == (graph.n, graph.n):
                return t
        except (GraphFormatError, OSError, ValueError):
            pass
    t = K2Tree.from_graph(graph, sample=sample)
    if write:
        try:
            t.save(side, source=ident)
        except OSError:
            pass
    t.meta["source"] = ident
    return t


def _expand(codes: np.ndarray, sigs: np.ndarray) -> np.ndarray:
    """Codes of the children of nodes ``codes`` with signatures ``sigs`` (level order)."""
    bits = ((sigs[:, None] >> np.arange(4, dtype=np.uint8)) & 1).astype(bool)
    child = (codes[:, None] << np.uint64(2)) | np.arange(4, dtype=np.uint64)
    return child[bits]
