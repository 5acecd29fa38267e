"""BVSS: Binarized Virtual Slice Sets, the tensor-core BFS layout of BLEST (Sec. 3.1).

BLEST runs BFS as a pull over ``A = G^T`` (``A[i][j] = 1`` iff there is an arc
``j -> i``): vertex ``i`` is discovered when some column ``j`` of its row is in the
frontier.  The columns of ``A`` are cut into *slice sets* of ``SIGMA = 8`` consecutive
vertices; slice set ``s`` holds one *slice* per row ``i`` that has a non-zero among
columns ``[8s, 8s+8)``: the row id ``i`` and an 8-bit mask whose bit ``b`` is set iff
``(8s + b) -> i`` is an arc.  Every slice set is split into *virtual slice sets* (VSS)
of at most ``TAU = 128`` slices, one unit of warp work; the last VSS of a slice set is
padded with zero masks (row id 0).  Slice sets without slices get no VSS.

Arrays (``Ns = ceil(n / 8)`` slice sets, ``Nv`` VSSs):

``row_ids``  int32 ``(Nv * 128,)``
    Slice ``k`` of VSS ``v`` at ``v*128 + k``.  On the device, lane ``t`` of the warp
    reads the 128-bit word ``row_ids[v*128 + 4t : v*128 + 4t + 4]`` (four rows).
``masks``    uint8 ``(Nv * 128,)``
    Same positions; on the device lane ``t`` reads the 32-bit word holding the masks
    of its four slices (byte ``c`` = slice ``4t + c``, little endian).
``real_ptrs`` int32 ``(Ns + 1,)``
    VSSs of slice set ``s`` are ``real_ptrs[s] : real_ptrs[s+1]``.
``virtual_to_real`` int32 ``(Nv,)``
    The slice set of each VSS.

The size is reported as bytes per arc (:attr:`BVSS.bytes_per_edge`).  Built by numba in
two parallel passes over the slice sets (:func:`build_bvss`): the 8 sorted CSR rows of a
slice set are merged, once to count its slices, once to write them where the prefix sum
of the counts puts them.  The first builder, one stable numpy sort of ``(slice set, row,
bit)`` keys, is kept as :func:`build_bvss_numpy` (the tests' reference); at kron:22 on
16 cores it took 10.6-16 s, which made scales 23-24 too slow to prepare.

References
----------
D. Elbek and K. Kaya, "Graph Traversal on Tensor Cores: A BFS Framework for Modern
GPUs" (BLEST), arXiv:2606.05081, 2026, Sec. 3.1 (BVSS) and Fig. 1.
"""

from __future__ import annotations

import functools
import hashlib
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import GraphValueError

__all__ = ["SIGMA", "TAU", "THETA", "MAX_VSS", "BVSS", "build_bvss", "build_bvss_numpy", "graph_checksum",
           "load_or_build_bvss"]

SIGMA = 8            #: vertices (columns) per slice set
THETA = 32 // SIGMA  #: slices per warp lane
TAU = 32 * THETA     #: slices per virtual slice set
#: Most VSSs a BVSS may have: the kernels (bvss_bfs.cu, msbfs.cu) address a lane's four
#: slices as ``vss * 32 + lane`` in 32-bit ints.  (It was 2**31 // TAU = 2**24, which
#: refused graphs of 2**27 vertices: kron:23 has 2.2-2.7M VSSs, 2**27 about 16x that.)
MAX_VSS = 2**26


@dataclass(eq=False)
class BVSS:
    """A graph in BVSS form (see the module docstring for the array encodings)."""

    n: int
    m: int
    row_ids: np.ndarray
    masks: np.ndarray
    real_ptrs: np.ndarray
    virtual_to_real: np.ndarray
    num_slices: int

    @property
    def num_slice_sets(self) -> int:
        return int(self.real_ptrs.shape[0] - 1)

    @property
    def num_vss(self) -> int:
        return int(self.virtual_to_real.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the four arrays (what the device holds)."""
        return int(self.row_ids.nbytes + self.masks.nbytes + self.real_ptrs.nbytes
                   + self.virtual_to_real.nbytes)

    @property
    def bytes_per_edge(self) -> float:
        """:attr:`nbytes` per stored arc (CSR with int32 ids costs about 4 + 8/avg-degree)."""
        return self.nbytes / max(self.m, 1)

    @property
    def compression(self) -> float:
        """Arcs per slice: the mean number of set mask bits (1 .. 8)."""
        return self.m / max(self.num_slices, 1)

    def summary(self) -> dict:
        return {"n": self.n, "m": self.m, "slices": self.num_slices, "slice_sets": self.num_slice_sets,
                "vss": self.num_vss, "bytes": self.nbytes, "bytes_per_edge": round(self.bytes_per_edge, 4),
                "arcs_per_slice": round(self.compression, 4),
                "fill": round(self.num_slices / max(self.num_vss * TAU, 1), 4)}

    def arcs(self):
        """Decode back to arcs ``(src, dst)`` of G, sorted by (src, dst) (for tests)."""
        used = self.masks != 0
        pos = np.flatnonzero(used)
        ss = self.virtual_to_real[pos // TAU].astype(np.int64)
        rows = self.row_ids[pos].astype(np.int64)
        mk = self.masks[pos]
        bits = np.unpackbits(mk[:, None], axis=1, bitorder="little").astype(bool)  # (k, 8)
        k, b = np.nonzero(bits)
        src = ss[k] * SIGMA + b
        dst = rows[k]
        order = np.lexsort((dst, src))
        return src[order], dst[order]

    def to_arrays(self) -> dict:
        return {"n": np.int64(self.n), "m": np.int64(self.m), "row_ids": self.row_ids, "masks": self.masks,
                "real_ptrs": self.real_ptrs, "virtual_to_real": self.virtual_to_real,
                "num_slices": np.int64(self.num_slices)}

    @classmethod
    def from_arrays(cls, d) -> "BVSS":
        return cls(int(d["n"]), int(d["m"]), d["row_ids"], d["masks"], d["real_ptrs"], d["virtual_to_real"],
                   int(d["num_slices"]))


@functools.cache
def _merge_kernels():
    """The two numba passes of :func:`build_bvss` (compiled on first use)."""
    import numba as nb

    @nb.njit(cache=True, inline="always")
    def _merge(ip, ix, n, s, p, e, out_rows, out_masks, base, write):
        # k-way merge of the sorted rows of sources 8s .. 8s+7; returns the slice count
        lo = s * 8
        k = min(8, n - lo)
        for b in range(k):
            p[b] = ip[lo + b]
            e[b] = ip[lo + b + 1]
        cnt = 0
        while True:
            best = -1
            for b in range(k):
                if p[b] < e[b]:
                    v = ix[p[b]]
                    if best < 0 or v < best:
                        best = v
            if best < 0:
                break
            mask = 0
            for b in range(k):
                while p[b] < e[b] and ix[p[b]] == best:  # repeats of an arc: one bit
                    mask |= 1 << b
                    p[b] += 1
            if write:
                out_rows[base + cnt] = best
                out_masks[base + cnt] = mask
            cnt += 1
        return cnt

    @nb.njit(cache=True, parallel=True)
    def _count(ip, ix, n, ns):
        cnt = np.empty(ns, np.int64)
        dummy_r = np.empty(0, np.int32)
        dummy_m = np.empty(0, np.uint8)
        for s in nb.prange(ns):
            p = np.empty(8, np.int64)
            e = np.empty(8, np.int64)
            cnt[s] = _merge(ip, ix, n, s, p, e, dummy_r, dummy_m, 0, False)
        return cnt

    @nb.njit(cache=True, parallel=True)
    def _fill(ip, ix, n, ns, real_ptrs, tau, row_ids, masks):
        for s in nb.prange(ns):
            p = np.empty(8, np.int64)
            e = np.empty(8, np.int64)
            _merge(ip, ix, n, s, p, e, row_ids, masks, np.int64(real_ptrs[s]) * tau, True)

    return _count, _fill


def _real_ptrs(per_ss, ns):
    """``realPtrs`` (first virtual slice set of each slice set) from the slices per slice set,
    and the number of virtual slice sets; refuses more than :data:`MAX_VSS`."""
    real_ptrs = np.zeros(ns + 1, dtype=np.int64)
    np.cumsum((per_ss + TAU - 1) // TAU, out=real_ptrs[1:])
    nv = int(real_ptrs[-1])
    if nv > MAX_VSS:
        raise GraphValueError(f"BVSS would need {nv} virtual slice sets; at most {MAX_VSS} fit the kernels' "
                              "32-bit lane offsets (vss * 32 + lane)")
    return real_ptrs, nv


def build_bvss(graph) -> BVSS:
    """Build the BVSS of ``A = G^T`` for a :class:`~distgraph.graph.Graph`.

    Parameters
    ----------
    graph : Graph
        Directed or undirected; weights are ignored.  ``n`` must be below ``2**31``.

    Returns
    -------
    BVSS
        Slice set ``s`` covers source vertices ``[8s, 8s+8)``; a slice is a head
        vertex and the 8-bit mask of its in-arcs from those sources.  The same arrays
        as :func:`build_bvss_numpy` (numba, parallel over slice sets).

    Examples
    --------
    >>> from distgraph.graph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    >>> b = build_bvss(g)
    >>> b.num_slices, b.num_vss, int(b.masks[:3].sum())
    (4, 1, 17)
    """
    n, m = graph.n, graph.m
    if n >= 2**31 - SIGMA:
        raise GraphValueError(f"BVSS needs fewer than 2**31 vertices; got n={n}")
    ns = (n + SIGMA - 1) // SIGMA
    if m == 0:
        return BVSS(n, 0, np.zeros(0, np.int32), np.zeros(0, np.uint8), np.zeros(ns + 1, np.int32),
                    np.zeros(0, np.int32), 0)
    count, fill = _merge_kernels()
    ip = np.ascontiguousarray(graph.indptr, dtype=np.int64)
    ix = np.ascontiguousarray(graph.indices)
    per_ss = count(ip, ix, n, ns)
    real_ptrs, nv = _real_ptrs(per_ss, ns)
    row_ids = np.zeros(nv * TAU, dtype=np.int32)
    masks = np.zeros(nv * TAU, dtype=np.uint8)
    fill(ip, ix, n, ns, real_ptrs, TAU, row_ids, masks)
    v2r = np.repeat(np.arange(ns, dtype=np.int32), np.diff(real_ptrs))
    return BVSS(n, m, row_ids, masks, real_ptrs.astype(np.int32), v2r, int(per_ss.sum()))


def build_bvss_numpy(graph) -> BVSS:
    """:func:`build_bvss` by one stable numpy sort of ``(slice set, row, bit)`` keys.

    The first builder, kept as the reference the tests compare :func:`build_bvss`
    with (same arrays); about 10x slower on many cores, and 8 bytes per arc of keys.
    """
    n, m = graph.n, graph.m
    if n >= 2**31 - SIGMA:
        raise GraphValueError(f"BVSS needs fewer than 2**31 vertices; got n={n}")
    ns = (n + SIGMA - 1) // SIGMA
    if m == 0:
        return BVSS(n, 0, np.zeros(0, np.int32), np.zeros(0, np.uint8), np.zeros(ns + 1, np.int32),
                    np.zeros(0, np.int32), 0)
    deg = np.diff(graph.indptr)
    src = np.repeat(np.arange(n, dtype=np.int64), deg)
    # key = ((slice set * n) + row) * 8 + bit: sorting it groups the slices of each slice set
    # by row; the CSR order makes it 8 sorted runs per slice set, which timsort merges fast.
    key = (src >> 3) * np.int64(n) + graph.indices.astype(np.int64, copy=False)
    key <<= 3
    key |= src & 7
    del src
    key.sort(kind="stable")
    slice_key = key >> 3
    start = np.empty(m, dtype=bool)
    start[0] = True
    np.not_equal(slice_key[1:], slice_key[:-1], out=start[1:])
    first = np.flatnonzero(start)
    del start
    bit = (np.uint8(1) << (key & 7).astype(np.uint8))
    del key
    slice_mask = np.bitwise_or.reduceat(bit, first).astype(np.uint8)
    del bit
    sk = slice_key[first]
    del slice_key
    slice_ss = (sk // n).astype(np.int64)
    slice_row = (sk - slice_ss * n).astype(np.int32)
    del sk
    nslices = int(first.shape[0])
    per_ss = np.bincount(slice_ss, minlength=ns)
    real_ptrs, nv = _real_ptrs(per_ss, ns)
    ss_first_slice = np.zeros(ns + 1, dtype=np.int64)
    np.cumsum(per_ss, out=ss_first_slice[1:])
    # position of each slice: first position of its slice set + its rank inside it
    pos = real_ptrs[slice_ss] * TAU + (np.arange(nslices, dtype=np.int64) - ss_first_slice[slice_ss])
    row_ids = np.zeros(nv * TAU, dtype=np.int32)
    masks = np.zeros(nv * TAU, dtype=np.uint8)
    row_ids[pos] = slice_row
    masks[pos] = slice_mask
    v2r = np.repeat(np.arange(ns, dtype=np.int32), np.diff(real_ptrs))
    return BVSS(n, m, row_ids, masks, real_ptrs.astype(np.int32), v2r, nslices)


#: Digests already computed, per graph object: ``graph -> (weak refs to indptr and indices,
#: directed, digest)``.
_CHECKSUMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def graph_checksum(graph) -> str:
    """A blake2b digest of the CSR arrays and direction (the BVSS cache key).

    Remembered per graph object while it holds the same ``indptr``/``indices`` arrays and
    direction (graphs are not modified in place): blake2b reads ~0.3-1 GB/s, so a graph of
    2**27 vertices (17 GB of CSR) took tens of seconds per call, and the BFS benchmark asks
    once per ordering (:func:`distgraph.backends.gpu.bfs._cached_preprocess`).
    """
    hit = _CHECKSUMS.get(graph)
    if hit is not None and hit[0]() is graph.indptr and hit[1]() is graph.indices and hit[2] == graph.directed:
        return hit[3]
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{graph.n}:{graph.m}:{graph.directed}:{graph.indices.dtype}".encode())
    h.update(np.ascontiguousarray(graph.indptr).data)
    h.update(np.ascontiguousarray(graph.indices).data)
    digest = h.hexdigest()
    try:
        _CHECKSUMS[graph] = (weakref.ref(graph.indptr), weakref.ref(graph.indices), graph.directed, digest)
    except TypeError:  # arrays that take no weak reference (not numpy's): not remembered
        pass
    return digest


def load_or_build_bvss(graph, *, cache_dir=None, tag: str = ""):
    """:func:`build_bvss`, cached as ``<cache_dir>/bvss/<checksum><tag>.npz``.

    ``cache_dir=None`` uses ``config.cache_dir``; ``cache_dir=False`` disables the cache.
    Returns ``(bvss, from_cache)``.
    """
    if cache_dir is False:
        return build_bvss(graph), False
    if cache_dir is None:
        from ..runtime.config import config

        cache_dir = config.cache_dir
    path = Path(cache_dir) / "bvss" / f"{graph_checksum(graph)}{tag}.npz"
    if path.is_file():
        try:
            with np.load(path) as d:
                return BVSS.from_arrays({k: d[k] for k in d.files}), True
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file is rebuilt below
    b = build_bvss(graph)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, **b.to_arrays())
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a rebuild next time
    return b, False
