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
* ``perm``        -- int64 ``(n,)`` or None: a vertex reordering of a square matrix
  (``reorder=`` of the builders). The tree then stores ``A'`` with
  ``A'[perm[i], perm[j]] = A[i, j]``, and still stands for ``A`` in the caller's ids:
  :meth:`K2Tree.to_coo` and every product (``y = A x`` is ``y = (A' x[inv])[perm]``,
  ``inv`` the inverse permutation: one gather of ``n`` values before and one after)
  are in the caller's ids.

Reordering (``reorder="degree"`` or ``"rcm"``): the tree's size follows the clustering
of the non-zeros, and generators that scramble vertex ids (Kronecker graphs, as
Graph500/GAP do) leave none. Sorting the vertices by degree (descending) halves the
tree of Kronecker graphs: 28.0 -> 14.1 bits per edge on kron:20, CSR-FP32 / tree 2.3x ->
4.6x (kron:22: 2.0x -> 4.0x), for 0.3 s of ordering on kron:20 (a graph's build renames
ids inside its one Morton pass, so it costs what an unordered build does); RCM gives
4.5x there and also helps graphs with locality (road-NY 8.5x -> 11.1x, email-Enron 6.0x
-> 6.9x) where the degree order hurts (7.0x, 5.9x). The permutation costs ``4 n`` bytes
more as int32 (8 n with its inverse on a GPU): little beside a Kronecker tree (4.6x ->
4.3x), more than the gain on road-NY (11.1x -> 4.1x). Default: no reordering. Numbers:
``benchmarks/results/k2tree_reorder_cpu.json`` (``benchmarks/k2tree_reorder.py``).

A Morton code interleaves the row and column bits of a node's block, two bits
``b1 b0`` per level from the root: a leaf's code ``(code << 2) | b`` deinterleaves
into the origin ``(r, c)`` of its 2 x 2 block (odd bits: ``r``, even bits: ``c``).

Construction (:meth:`K2Tree.from_coo`, :meth:`K2Tree.from_codes`): the Morton codes
of the non-zeros are sorted once (numpy, or on a GPU); level ``d`` is the sorted
unique prefixes ``code >> 2(L-d)``, so one numba pass counts the nodes of every level
(from the highest bit in which each code differs from the previous one) and a second
writes every signature in level order, with the codes of the cached top and frontier
levels; a third computes the directory. No per-level arrays are materialised, so a
build is about one sort plus three linear passes (``build_s`` of each graph in
``benchmarks/results/k2tree_gpu.json``). Products live in
:mod:`distgraph.algorithms.spmv`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from ..errors import GraphFormatError, InvalidArgumentError

__all__ = ["K2Tree", "morton_encode", "morton_decode", "csr_nbytes", "sidecar_path", "tree_for_file",
           "FORMAT_VERSION", "REORDER_METHODS"]

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
    perm: np.ndarray | None = None

    @property
    def inverse_perm(self) -> np.ndarray | None:
        """``inv`` with ``inv[perm[i]] = i`` (the caller's id of each stored id), or None."""
        if self.perm is None:
            return None
        inv = self.meta.get("_inverse_perm")
        if inv is None or inv.shape != self.perm.shape:
            inv = np.empty_like(self.perm)
            inv[self.perm] = np.arange(self.perm.shape[0], dtype=self.perm.dtype)
            self.meta["_inverse_perm"] = inv
        return inv

    def raw(self) -> "K2Tree":
        """This tree without its permutation: the stored matrix ``A'`` (same arrays)."""
        if self.perm is None:
            return self
        meta = {k: v for k, v in self.meta.items() if k != "_inverse_perm"}
        return K2Tree(self.shape, self.levels, self.nnz, self.sig, self.level_start, self.directory,
                      self.sample, self.top_level, self.top_codes, self.frontier, meta)

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
        if d >= self.levels - 2 and self.frontier is not None:
            codes, start = self.frontier, self.levels - 2
        elif d >= self.top_level:
            codes, start = self.top_codes, self.top_level
        else:
            codes, start = np.zeros(1, np.uint64), 0
        return _nb_expand_levels(self.sig, self.level_start, start, np.ascontiguousarray(codes, np.uint64), d)

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
                 top_nodes: int = DEFAULT_TOP_NODES, cached_frontier: bool = False, reorder=None) -> "K2Tree":
        """Build the tree of the Boolean matrix with non-zeros at ``(rows, cols)``.

        Duplicates are merged. One sort of the Morton codes, then linear numba
        passes over them (see the module docstring).

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
        reorder : {None, "none", "degree", "rcm"} or array_like of int, optional
            Store the matrix with its vertices renumbered (square matrices only): by
            descending degree (in + out), by Reverse Cuthill-McKee of the symmetrized
            pattern, or by a given ``new_id`` permutation (vertex ``v`` is stored as
            ``new_id[v]``). The tree keeps the permutation (``perm``) and stays in the
            caller's ids (see the module docstring).
        """
        if not _no_reorder(reorder):
            nrows, ncols = (int(shape[0]), int(shape[1]))
            rows = np.asarray(rows)
            cols = np.asarray(cols)
            _check_coo(rows, cols, nrows, ncols)  # before renaming: new_id[-1] would not fail
            new_id = _new_ids(reorder, rows, cols, (nrows, ncols))
            t = cls.from_coo(new_id[rows], new_id[cols], shape, sample=sample, top_nodes=top_nodes,
                             cached_frontier=cached_frontier)
            t.perm = new_id
            return t
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
        _check_coo(rows, cols, nrows, ncols)
        L = _levels_for(nrows, ncols)
        codes = morton_encode(rows, cols)
        codes.sort()
        return cls._from_sorted(codes, (nrows, ncols), L, sample, top_nodes, cached_frontier)

    @classmethod
    def from_codes(cls, codes, shape, *, presorted: bool = False, sample: int = DEFAULT_SAMPLE,
                   top_nodes: int = DEFAULT_TOP_NODES, cached_frontier: bool = False) -> "K2Tree":
        """Build from the Morton codes (:func:`morton_encode`) of the non-zeros.

        ``presorted=True`` promises ascending codes (repeats allowed), e.g. sorted on a
        GPU (:func:`distgraph.backends.gpu.k2tree_spmv.tree_from_csr`); the codes are
        then checked in one pass, not sorted. Other parameters as :meth:`from_coo`.
        """
        nrows, ncols = (int(shape[0]), int(shape[1]))
        if nrows < 0 or ncols < 0 or max(nrows, ncols) > (1 << 32):
            raise InvalidArgumentError(f"shape must be non-negative and at most 2**32 on each side; got {shape}")
        sample = int(sample)
        if sample < 2 or sample % 2:
            raise InvalidArgumentError(f"sample must be an even integer >= 2; got {sample}")
        codes = np.ascontiguousarray(codes, dtype=np.uint64)
        if codes.ndim != 1:
            raise InvalidArgumentError(f"codes must be 1-D; got shape {codes.shape}")
        if not presorted:
            codes = np.sort(codes)
        L = _levels_for(nrows, ncols)
        if codes.size:
            ok, rmax, cmax = _nb_check(codes)
            if not ok:
                raise InvalidArgumentError("codes must be sorted when presorted=True")
            if rmax >= nrows or cmax >= ncols:
                raise InvalidArgumentError(f"codes must lie in [0, {nrows}) x [0, {ncols}); "
                                           f"got a row {rmax} and a column {cmax}")
        return cls._from_sorted(codes, (nrows, ncols), L, sample, top_nodes, cached_frontier)

    @classmethod
    def _from_sorted(cls, codes, shape, L, sample, top_nodes, cached_frontier):
        """The tree of ascending Morton codes (repeats allowed): two numba passes
        (level sizes, then signatures in level order), see :func:`_nb_level_counts`."""
        counts = _nb_level_counts(codes, L)
        sizes = np.cumsum(counts[:L]).astype(np.int64)
        nnz = int(counts[: L + 1].sum())
        level_start = np.zeros(L + 1, dtype=np.int64)
        if nnz:
            np.cumsum(sizes, out=level_start[1:])
        top = _top_level(sizes, L, top_nodes)
        fl = L - 2 if cached_frontier else -1
        N = int(level_start[-1])
        packed = np.zeros((N + 1) // 2, dtype=np.uint8)
        top_codes = np.zeros(int(sizes[top]) if nnz else 0, np.uint64)
        front = np.zeros(int(sizes[L - 2]) if (nnz and fl >= 0) else 0, np.uint64)
        if nnz:
            _nb_fill(codes, L, level_start, packed, top, top_codes, fl, front)
        return cls._assemble(shape, L, nnz, packed, level_start, sample, top_nodes, top_codes,
                             front if cached_frontier else None)

    @classmethod
    def _assemble(cls, shape, L, nnz, packed, level_start, sample, top_nodes, top_codes, frontier):
        """A tree from its packed signatures; the directory is computed here, the top
        codes (and the cached frontier, when ``frontier`` is True) expanded from the
        root when not given."""
        N = int(level_start[-1])
        dtype = np.uint32 if N + 1 < (1 << 32) else np.int64
        directory = _nb_directory(packed, N, int(sample)).astype(dtype, copy=False)
        sizes = np.diff(level_start)
        top = _top_level(sizes, L, top_nodes)
        t = cls(shape=(int(shape[0]), int(shape[1])), levels=int(L), nnz=int(nnz), sig=packed,
                level_start=level_start, directory=directory, sample=int(sample), top_level=0,
                top_codes=np.zeros(1 if N else 0, np.uint64))
        if top_codes is None:  # rebuilt from a file: expand the top from the root
            top_codes = t.level_codes(top) if N else np.zeros(0, np.uint64)
        t.top_codes, t.top_level = np.ascontiguousarray(top_codes, dtype=np.uint64), int(top)
        if frontier is True:
            t.with_frontier()
        elif frontier is not None:
            t.frontier = np.ascontiguousarray(frontier, dtype=np.uint64)
        return t

    def with_frontier(self) -> "K2Tree":
        """Cache the codes of the last internal level (k2+F); returns ``self``."""
        if self.frontier is None:
            self.frontier = self.level_codes(self.levels - 2) if self.num_nodes else np.zeros(0, np.uint64)
        return self

    def without_frontier(self) -> "K2Tree":
        """A view of this tree without the cached frontier (the tree-only "k2" engine)."""
        return K2Tree(self.shape, self.levels, self.nnz, self.sig, self.level_start, self.directory,
                      self.sample, self.top_level, self.top_codes, None, dict(self.meta), self.perm)

    @classmethod
    def from_csr(cls, indptr, indices, shape=None, **kw) -> "K2Tree":
        """Build from CSR arrays (``shape`` defaults to square ``n x n``)."""
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices)
        n = indptr.shape[0] - 1
        if shape is None:
            shape = (n, n)
        nr, nc = int(shape[0]), int(shape[1])
        if (nr != n or indptr[0] != 0 or indptr[-1] != indices.shape[0] or max(nr, nc) > (1 << 32)
                or (indices.size and (int(indices.min()) < 0 or int(indices.max()) >= nc))
                or np.any(np.diff(indptr) < 0)):
            rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
            return cls.from_coo(rows, indices, shape, **kw)  # validates and says what is wrong
        reorder = kw.pop("reorder", None)
        new_id = None
        if not _no_reorder(reorder):
            if isinstance(reorder, str) or nr != nc:  # a method (on the pattern), or refused
                rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
                return cls.from_coo(rows, indices, shape, reorder=reorder, **kw)
            new_id = _new_ids(reorder, None, None, (nr, nc))
        unknown = set(kw) - {"sample", "top_nodes", "cached_frontier"}
        if unknown:
            raise TypeError(f"from_csr() got unexpected keyword arguments {sorted(unknown)}")
        codes = _nb_csr_codes(indptr, indices) if new_id is None else _nb_csr_codes_perm(indptr, indices, new_id)
        codes.sort()
        sample = int(kw.pop("sample", DEFAULT_SAMPLE))
        if sample < 2 or sample % 2:
            raise InvalidArgumentError(f"sample must be an even integer >= 2; got {sample}")
        t = cls._from_sorted(codes, (nr, nc), _levels_for(nr, nc), sample,
                             kw.pop("top_nodes", DEFAULT_TOP_NODES), kw.pop("cached_frontier", False))
        t.perm = new_id
        return t

    @classmethod
    def from_graph(cls, graph, **kw) -> "K2Tree":
        """The tree of a :class:`~distgraph.graph.Graph`'s adjacency pattern (weights dropped).

        ``reorder`` as in :meth:`from_coo` (``"degree"``/``"rcm"``: the orderings of
        :mod:`distgraph.formats.reorder` on the graph)."""
        reorder = kw.get("reorder")
        if isinstance(reorder, str) and reorder in ("degree", "rcm"):
            from .reorder import degree_order, rcm

            kw["reorder"] = degree_order(graph) if reorder == "degree" else rcm(graph)
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
    def to_coo(self, raw: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """All non-zeros ``(rows, cols)`` (int64) in Morton order of the stored ids,
        in the caller's ids (``raw=True``: the stored ids of a reordered tree)."""
        if self.num_nodes == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        last = self.levels - 1
        leaves = self.level_codes(last)
        sigs = self.signatures()
        cells = _expand(leaves, sigs[self.level_start[last]:self.level_start[last + 1]])
        r, c = morton_decode(cells)
        if self.perm is not None and not raw:
            inv = self.inverse_perm
            r, c = inv[r], inv[c]
        return r, c

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
        tmp = f"{path}.{os.getpid()}.tmp.npz"  # one per process: concurrent writers never share it
        extra = {} if self.perm is None else {"perm": self.perm}  # absent: not reordered
        try:
            np.savez(tmp, version=np.int64(FORMAT_VERSION), shape=np.array(self.shape, np.int64),
                     levels=np.int64(self.levels), nnz=np.int64(self.nnz), sig=self.sig,
                     level_start=self.level_start, sample=np.int64(self.sample),
                     source=np.array(json.dumps(source or {})), **extra)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    @classmethod
    def load(cls, path, *, top_nodes: int = DEFAULT_TOP_NODES, cached_frontier: bool = False) -> "K2Tree":
        """Read a tree written by :meth:`save` (directory and top are rebuilt)."""
        import zipfile

        path = os.fspath(path)
        bad = "not a distgraph k2-tree file (a .npz written by K2Tree.save)"
        try:
            z = np.load(path)
            if not hasattr(z, "files"):  # a .npy array
                raise GraphFormatError(f"{bad}; it holds one array", path)
            with z:  # closes the file (a sidecar may be rewritten later)
                version = int(z["version"])
                if version != FORMAT_VERSION:
                    raise GraphFormatError(f"k2-tree format version {version}; this distgraph reads "
                                           f"{FORMAT_VERSION}", path)
                shape = tuple(int(v) for v in z["shape"])
                L, nnz, sample = int(z["levels"]), int(z["nnz"]), int(z["sample"])
                packed, level_start = z["sig"], z["level_start"].astype(np.int64)
                source = str(z["source"]) if "source" in z.files else "{}"
                perm = z["perm"].astype(np.int64) if "perm" in z.files else None  # older files: none
        except KeyError as e:
            raise GraphFormatError(f"not a distgraph k2-tree file (missing {e})", path) from None
        except (EOFError, zipfile.BadZipFile) as e:  # empty, truncated, not a zip
            raise GraphFormatError(f"{bad}; {type(e).__name__}: {e}", path) from None
        except ValueError as e:  # pickled or otherwise unreadable data
            if isinstance(e, GraphFormatError):
                raise
            raise GraphFormatError(f"{bad}; {e}", path) from None
        if level_start.ndim != 1 or level_start.shape[0] != L + 1:
            raise GraphFormatError(f"k2-tree arrays disagree ({level_start.shape[0]} level starts for {L} levels)",
                                   path)
        N = int(level_start[-1])
        if packed.shape[0] != (N + 1) // 2:
            raise GraphFormatError(f"k2-tree arrays disagree ({packed.shape[0]} bytes for {N} nodes)", path)
        if perm is not None and (shape[0] != shape[1] or perm.shape != (shape[0],)
                                 or not _is_permutation(perm)):
            raise GraphFormatError(f"k2-tree permutation of shape {perm.shape} is not a permutation of the "
                                   f"{shape[0]} x {shape[1]} matrix's vertices", path)
        t = cls._assemble(shape, L, nnz, np.ascontiguousarray(packed, dtype=np.uint8), level_start, sample,
                          top_nodes, None, True if cached_frontier else None)
        t.perm = perm
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


def tree_for_file(graph, graph_path, *, sample: int = DEFAULT_SAMPLE, write: bool = True,
                  reorder: str | None = None) -> K2Tree:
    """The k2-tree of ``graph`` (read from ``graph_path``), from its sidecar when that
    was built from the same file (name, size, mtime) with the same ``sample`` and
    ``reorder`` (``None``/``"none"``, ``"degree"``, ``"rcm"``; the permutation is
    stored in the sidecar); else built and, when ``write``, stored in the sidecar (a
    failed write is ignored: the folder may be read-only)."""
    side = sidecar_path(graph_path)
    ident = dict(_file_id(graph_path), n=int(graph.n), m=int(graph.m))
    if not _no_reorder(reorder):
        if not isinstance(reorder, str) or reorder not in REORDER_METHODS:
            raise InvalidArgumentError(f"reorder must be one of {', '.join(REORDER_METHODS)}; got {reorder!r}")
        ident["reorder"] = reorder  # sidecars without the key were built without reordering
    if os.path.exists(side):
        try:
            t = K2Tree.load(side)
            if t.meta.get("source") == ident and t.sample == sample and t.shape == (graph.n, graph.n):
                return t
        except (GraphFormatError, OSError, ValueError):
            pass
    t = K2Tree.from_graph(graph, sample=sample, reorder=reorder)
    if write:
        try:
            t.save(side, source=ident)
        except OSError:
            pass
    t.meta["source"] = ident
    return t


REORDER_METHODS = ("none", "degree", "rcm")


def _check_coo(rows, cols, nrows, ncols) -> None:
    if rows.shape != cols.shape or rows.ndim != 1:
        raise InvalidArgumentError(f"rows and cols must be 1-D of equal length; got {rows.shape} and {cols.shape}")
    if rows.size:
        if rows.min() < 0 or cols.min() < 0 or rows.max() >= nrows or cols.max() >= ncols:
            raise InvalidArgumentError(f"coordinates must lie in [0, {nrows}) x [0, {ncols}); "
                                       f"got rows {rows.min()}..{rows.max()}, cols {cols.min()}..{cols.max()}")


def _no_reorder(reorder) -> bool:
    return reorder is None or (isinstance(reorder, str) and reorder == "none")


def _is_permutation(p) -> bool:
    n = p.shape[0]
    if n == 0:
        return True
    if int(p.min()) < 0 or int(p.max()) >= n:
        return False
    seen = np.zeros(n, np.bool_)
    seen[p] = True
    return bool(seen.all())


def _new_ids(reorder, rows, cols, shape) -> np.ndarray:
    """``new_id`` (int64) of a ``reorder=`` argument for the pattern ``(rows, cols)``."""
    nrows, ncols = shape
    if nrows != ncols:
        raise InvalidArgumentError(f"reorder needs a square matrix (one permutation of the rows and columns); "
                                   f"got shape {shape}")
    if isinstance(reorder, str):
        if reorder not in REORDER_METHODS:
            raise InvalidArgumentError(f"reorder must be one of {', '.join(REORDER_METHODS)} or a permutation; "
                                       f"got {reorder!r}")
        from .reorder import pattern_order

        return pattern_order(rows, cols, nrows, reorder)
    p = np.asarray(reorder)
    if p.shape != (nrows,) or p.dtype.kind not in "iu" or not _is_permutation(p):
        raise InvalidArgumentError(f"reorder must be a method name or a permutation of range({nrows}) "
                                   f"(new_id[v]: the stored id of vertex v); got shape {p.shape}, dtype {p.dtype}")
    return p.astype(np.int64)


def _top_level(sizes, L, top_nodes) -> int:
    """The deepest internal level with at most ``top_nodes`` nodes (0 if none)."""
    top = 0
    for d in range(L - 1):
        if sizes[d] <= top_nodes:
            top = d
    return top


# ------------------------------------------------------------------ numba passes
# A node of level d holds the cells whose code has the prefix ``code >> 2(L - d)``;
# its signature bit for a cell is the next two bits ``(code >> 2(L - 1 - d)) & 3``.
# For ascending codes, code i opens a new node at every level d >= f_i, where f_i is
# the first level at which its prefix differs from that of code i - 1:
# ``f_i = L - (h >> 1)`` with h the highest bit of ``code_i ^ code_{i-1}`` (f_0 = 0;
# a repeat opens nothing, f = L + 1). Level d thus has ``#{i : f_i <= d}`` nodes.

@nb.njit(cache=True, nogil=True)
def _nb_check(codes):
    """(ascending?, largest row, largest column) of Morton codes."""
    ok = True
    rmax = np.uint64(0)
    cmax = np.uint64(0)
    for i in range(codes.shape[0]):
        c = codes[i]
        if i and c < codes[i - 1]:
            ok = False
        r = _nb_compact(c >> np.uint64(1))
        k = _nb_compact(c)
        if r > rmax:
            rmax = r
        if k > cmax:
            cmax = k
    return ok, int(rmax), int(cmax)


@nb.njit(cache=True, inline="always")
def _nb_spread(v):
    v = v & np.uint64(0x00000000FFFFFFFF)
    v = (v | (v << np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    v = (v | (v << np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    v = (v | (v << np.uint64(2))) & np.uint64(0x3333333333333333)
    return (v | (v << np.uint64(1))) & np.uint64(0x5555555555555555)


@nb.njit(cache=True, nogil=True)
def _nb_csr_codes(indptr, indices):
    """Morton codes of the non-zeros of a CSR (row bits odd, column bits even)."""
    out = np.empty(indices.shape[0], np.uint64)
    for i in range(indptr.shape[0] - 1):
        r = _nb_spread(np.uint64(i)) << np.uint64(1)
        for k in range(indptr[i], indptr[i + 1]):
            out[k] = r | _nb_spread(np.uint64(indices[k]))
    return out


@nb.njit(cache=True, nogil=True)
def _nb_csr_codes_perm(indptr, indices, new_id):
    """Morton codes of the non-zeros of a CSR with every id ``v`` renamed ``new_id[v]``."""
    out = np.empty(indices.shape[0], np.uint64)
    for i in range(indptr.shape[0] - 1):
        r = _nb_spread(np.uint64(new_id[i])) << np.uint64(1)
        for k in range(indptr[i], indptr[i + 1]):
            out[k] = r | _nb_spread(np.uint64(new_id[indices[k]]))
    return out


@nb.njit(cache=True, inline="always")
def _nb_compact(v):
    v = v & np.uint64(0x5555555555555555)
    v = (v | (v >> np.uint64(1))) & np.uint64(0x3333333333333333)
    v = (v | (v >> np.uint64(2))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    v = (v | (v >> np.uint64(4))) & np.uint64(0x00FF00FF00FF00FF)
    v = (v | (v >> np.uint64(8))) & np.uint64(0x0000FFFF0000FFFF)
    return (v | (v >> np.uint64(16))) & np.uint64(0x00000000FFFFFFFF)


@nb.njit(cache=True, inline="always")
def _nb_first_level(c, prev, L):
    x = c ^ prev
    if x == 0:
        return L + 1
    h = 0
    for sh in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(sh):
            x >>= np.uint64(sh)
            h += sh
    return L - (h >> 1)


@nb.njit(cache=True, nogil=True)
def _nb_level_counts(codes, L):
    """``counts[f]``: codes whose first new level is f (``counts[L + 1]``: repeats)."""
    counts = np.zeros(L + 2, np.int64)
    if codes.shape[0] == 0:
        return counts
    counts[0] = 1
    for i in range(1, codes.shape[0]):
        counts[_nb_first_level(codes[i], codes[i - 1], L)] += 1
    return counts


@nb.njit(cache=True, nogil=True)
def _nb_fill(codes, L, level_start, packed, top, top_codes, fl, front):
    """Signatures of every node, in level order, into ``packed`` (zeroed; two per
    byte, low nibble first); the codes of level ``top`` into ``top_codes`` and, when
    ``fl >= 0``, of level ``fl`` into ``front``."""
    pos = level_start[:L].copy() - 1
    prev = codes[0]
    for i in range(codes.shape[0]):
        c = codes[i]
        f = 0 if i == 0 else _nb_first_level(c, prev, L)
        prev = c
        if f > L:
            continue
        d0 = f - 1 if f > 0 else 0
        for d in range(d0, L):
            if d >= f:
                pos[d] += 1
                if d == top:
                    top_codes[pos[d] - level_start[d]] = c >> np.uint64(2 * (L - d))
                if d == fl:
                    front[pos[d] - level_start[d]] = c >> np.uint64(2 * (L - d))
            g = pos[d]
            b = (c >> np.uint64(2 * (L - 1 - d))) & np.uint64(3)
            packed[g >> 1] |= np.uint8(1 << (int(b) + 4 * (g & 1)))


@nb.njit(cache=True, nogil=True)
def _nb_directory(packed, N, S):
    """``dir[i]`` = first child of node ``i * S`` = 1 + set bits before it."""
    nblk = (N + S - 1) // S
    out = np.empty(nblk, np.int64)
    run = 1
    for g in range(N):
        if g % S == 0:
            out[g // S] = run
        s = (packed[g >> 1] >> (4 * (g & 1))) & 15
        run += (s & 1) + ((s >> 1) & 1) + ((s >> 2) & 1) + ((s >> 3) & 1)
    return out


@nb.njit(cache=True, nogil=True)
def _nb_first_children(packed, N):
    """int64 ``N + 1``: first child of every node (1 + set bits before it)."""
    out = np.empty(N + 1, np.int64)
    run = 1
    for g in range(N):
        out[g] = run
        s = (packed[g >> 1] >> (4 * (g & 1))) & 15
        run += (s & 1) + ((s >> 1) & 1) + ((s >> 2) & 1) + ((s >> 3) & 1)
    out[N] = run
    return out


@nb.njit(cache=True, nogil=True)
def _nb_expand_levels(packed, level_start, start, codes, d):
    """Codes of the nodes of level ``d`` from those (``codes``) of level ``start``."""
    cur = codes
    for lvl in range(start, d):
        nxt = np.empty(level_start[lvl + 2] - level_start[lvl + 1], np.uint64)
        k = 0
        g0 = level_start[lvl]
        for t in range(cur.shape[0]):
            g = g0 + t
            s = (packed[g >> 1] >> (4 * (g & 1))) & 15
            base = cur[t] << np.uint64(2)
            for b in range(4):
                if (s >> b) & 1:
                    nxt[k] = base | np.uint64(b)
                    k += 1
        cur = nxt
    return cur.copy() if start == d else cur


def _expand(codes: np.ndarray, sigs: np.ndarray) -> np.ndarray:
    """Codes of the children of nodes ``codes`` with signatures ``sigs`` (level order)."""
    bits = ((sigs[:, None] >> np.arange(4, dtype=np.uint8)) & 1).astype(bool)
    child = (codes[:, None] << np.uint64(2)) | np.arange(4, dtype=np.uint64)
    return child[bits]
