"""Breadth-first search from one source: direction-optimizing, over MPI ranks.

Algorithm: Beamer, Asanovic, Patterson, "Direction-Optimizing Breadth-First Search",
SC 2012, with gapbs's switch parameters (``alpha = 15``, ``beta = 18``; config keys
``bfs_alpha`` / ``bfs_beta``). Kernels: :mod:`distgraph.backends.cpu.bfs`.

On one rank the whole search runs inside one compiled function. On ``p`` ranks the
vertices are split by :func:`~distgraph.graph.partition.partition_by_edges`; every
rank keeps the (replicated) ``levels`` / ``parents`` arrays. A top-down level whose
frontier has at most ``REDUNDANT_ARCS`` out-arcs is run by every rank on the whole
graph, with no message (:func:`~distgraph.backends.cpu.bfs.td_until` runs such levels
back to back in one compiled call): on a long thin graph (road networks, ~1000
levels of ~1000 vertices) a collective per level would cost more than the level.
Larger levels are split:

* top-down: each rank expands the frontier vertices it owns along their out-arcs;
* bottom-up: each rank lets the unreached vertices it owns look for an in-neighbour
  at the current depth;

then the ranks exchange their ``(child, parent)`` discoveries (one ``Allgather`` of
the counts and one ``Allgatherv`` into preallocated buffers) and every rank applies
all of them in the same way (:func:`~distgraph.backends.cpu.bfs.merge_discoveries`).
The switch decisions are made from replicated counts, so all ranks take the same
branch without extra messages.

Encoding: ``levels`` int32, ``-1`` = unreached; ``parents`` int64, the smallest
vertex id one level up with an arc to ``v``, ``parents[source] == source``, ``-1``
unreached. Both are functions of the graph and the source only: identical on any
number of ranks.

:func:`verify_bfs` is the verifier used by tests and ``distgraph bfs --verify``.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import VerificationError, expect
from ..graph._search import arc_positions
from ..graph.core import Graph

__all__ = ["bfs", "BFSResult", "verify_bfs"]

REDUNDANT_ARCS = 1 << 15  # p > 1: top-down levels with fewer out-arcs run on every rank, no message


@dataclass
class BFSResult:
    """Result of :func:`bfs`.

    Attributes
    ----------
    levels : int32 ``(n,)`` -- depth of every vertex, ``-1`` when unreachable.
    parents : int64 ``(n,)`` or None -- BFS-tree parent (smallest id one level up),
        ``parents[source] == source``, ``-1`` when unreachable.
    source : int
    """

    levels: np.ndarray
    parents: np.ndarray | None
    source: int

    @property
    def reached(self) -> int:
        """Number of vertices reached (the source included)."""
        return int(np.count_nonzero(self.levels >= 0))

    @property
    def depth(self) -> int:
        """Largest finite level."""
        return int(self.levels.max(initial=0))

    def to_numpy(self) -> np.ndarray:
        return self.levels


def bfs(graph, source, *, parents=False, backend=None, comm=None, verify=False, _distributed=None) -> BFSResult:
    """Levels (and optionally parents) of a BFS from ``source``.

    Parameters
    ----------
    graph : Graph
        Directed (arcs followed forward) or undirected; weights are ignored.
    source : int
        Source vertex, in ``[0, n)``.
    parents : bool
        Also return the BFS tree.
    backend : {"auto", "cpu", "gpu"} or None
    comm : mpi4py communicator or None
        Default ``MPI.COMM_WORLD``; every rank gets the whole result.
    verify : bool
        Check the result with :func:`verify_bfs` (raises :class:`VerificationError`).

    Returns
    -------
    BFSResult

    Raises
    ------
    TypeError
        ``graph`` is not a Graph.
    InvalidArgumentError
        ``source`` out of range.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], n=4)
    >>> r = bfs(g, 1, parents=True)
    >>> r.levels.tolist(), r.parents.tolist()
    ([2, 0, 1, -1], [2, 1, 1, -1])
    """
    from ..runtime.config import config
    from ..runtime.context import get_context

    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph.Graph; got {type(graph).__name__}")
    n = graph.n
    expect(isinstance(source, (int, np.integer)) and not isinstance(source, bool), "source", "an integer", source)
    expect(0 <= source < n, "source", f"in [0, {n})", source)
    source = int(source)
    ctx = get_context(comm, backend)
    if ctx.backend == "gpu":
        # GPU dispatch point: BLEST on tensor cores (distgraph.backends.gpu.bfs; options of
        # the engine: use distgraph.backends.gpu.bfs.GpuBFS directly).
        from ..backends.gpu.bfs import bfs_gpu

        par = None
        if parents:  # a second GPU pass over G^T once the levels are known (same rule as the CPU)
            levels, par = bfs_gpu(graph, source, parents=True)
        else:
            levels = bfs_gpu(graph, source)
        if verify:
            verify_bfs(graph, source, levels, par)
        return BFSResult(levels, par, source)
    alpha, beta = float(config.bfs_alpha), float(config.bfs_beta)
    distributed = ctx.size > 1 if _distributed is None else _distributed
    if distributed:
        levels, par = _bfs_distributed(graph, source, ctx, alpha, beta)
        if not parents:
            par = None
    else:
        from ..backends.cpu.bfs import bfs_serial

        ip, idx, tptr, tidx, max_degree = _cpu_layout(graph)
        levels = np.empty(n, np.int32)
        # parents kept unsigned (unreached = all ones), in 32 bits when ids fit: half the
        # cache lines on the top-down steps' per-arc minimum; widened to int64 after
        narrow = n < np.iinfo(np.int32).max
        par = np.empty(n if parents else 1, np.uint32 if narrow else np.uint64)
        queue = _scratch_queue(n + 1, graph.indices.dtype)
        bfs_serial(ip, idx, tptr, tidx, source, alpha, beta, levels, par, bool(parents), queue, max_degree)
        par = par.view(np.int32 if narrow else np.int64).astype(np.int64) if parents else None
    res = BFSResult(levels, par, source)
    if verify:
        verify_bfs(graph, source, levels, par)
    return res


_scratch = threading.local()
_layouts: dict = {}


def _cpu_layout(graph):
    """``(indptr, indices, csc indptr, csc indices, max out-degree)`` for the CPU
    kernels, cached per graph (dropped with it): the row pointers as int32 copies when
    the arc count fits (the randomly read ``indptr`` takes half the cache lines; ~10%
    on road-FLA), shared between CSR and CSC when the graph is undirected."""
    key = id(graph)
    hit = _layouts.get(key)
    if hit is not None and hit[0]() is graph:
        return hit[1]
    tptr, tidx, _ = graph.csc()
    small = graph.m < np.iinfo(np.int32).max
    ip = graph.indptr.astype(np.int32) if small else graph.indptr
    tp = ip if tptr is graph.indptr else (tptr.astype(np.int32) if small else tptr)
    max_degree = int(np.diff(graph.indptr).max(initial=0))
    lay = (ip, graph.indices, tp, tidx, max_degree)
    _layouts[key] = (weakref.ref(graph, lambda _r, k=key: _layouts.pop(k, None)), lay)
    return lay


def _scratch_queue(size, dtype) -> np.ndarray:
    """A queue buffer of at least ``size`` entries, kept per thread between calls: a
    fresh one would cost a page fault per 4 KiB (~1 ms for 10**6 vertices). Buffers
    over 64 MiB are not kept."""
    q = getattr(_scratch, "queue", None)
    if q is None or q.dtype != dtype or q.size < size:
        q = np.empty(size, dtype)
        _scratch.queue = q if q.nbytes <= 1 << 26 else None
    return q


class _Exchange:
    """Allgatherv of int64 pairs with preallocated count and receive buffers."""

    def __init__(self, comm):
        self.comm = comm
        self.mine = np.zeros(1, np.int64)
        self.counts = np.zeros(comm.Get_size(), np.int64)
        self.recv = np.empty(1024, np.int64)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        self.mine[0] = a.size
        self.comm.Allgather(self.mine, self.counts)
        total = int(self.counts.sum())
        if total > self.recv.size:
            self.recv = np.empty(max(total, 2 * self.recv.size), np.int64)
        out = self.recv[:total]
        self.comm.Allgatherv(a, [out, self.counts])
        return out


def _bfs_distributed(graph, source, ctx, alpha, beta):
    from ..backends.cpu.bfs import bu_step_local, merge_discoveries, td_step_local, td_until
    from ..graph.partition import local_graph, partition_by_edges

    rank = ctx.rank
    n = graph.n
    indptr, indices, _, _, max_degree = _cpu_layout(graph)
    part = partition_by_edges(graph.indptr, ctx.size)
    lo, hi = part.range(rank)
    out_g = in_g = None  # this rank's rows of the CSR / CSC: built at the first split level
    levels = np.full(n, -1, np.int32)
    parents = np.full(n, -1, np.int64)
    parents_u = parents.view(np.uint64)  # the top-down kernel's view (unreached = largest)
    levels[source] = 0
    parents[source] = source
    claim = np.full(n, -1, np.int64)
    pairs = np.empty(2 * max(n, 1), np.int64)
    queue = np.empty(n + 1, indices.dtype)
    exchange = _Exchange(ctx.comm)
    queue[0] = source
    qs, qe = 0, 1
    edges_to_check = int(indptr[n])
    scout = int(indptr[source + 1] - indptr[source])
    lev = 0
    while True:
        # small top-down levels: every rank runs them on the whole graph, no message
        qs, qe, lev, edges_to_check, scout = td_until(indptr, indices, levels, parents_u, queue, qs, qe, lev,
                                                      edges_to_check, scout, max_degree, alpha, REDUNDANT_ARCS,
                                                      True)
        if qe == qs:
            break
        if scout > edges_to_check / alpha:
            # bottom-up while the frontier grows or stays large, one exchange per level
            if in_g is None:
                in_g = local_graph(graph, part, rank, transpose=True)
            awake = qe - qs
            while True:
                k = bu_step_local(in_g.indptr, in_g.indices, lo, hi, levels, lev, pairs)
                nf, _ = merge_discoveries(exchange(pairs[:2 * k]), levels, parents, lev, indptr, queue)
                lev += 1
                old, awake = awake, nf
                if not (awake >= old or awake > n / beta):
                    break
            qs, qe = 0, nf
            scout = 1
        else:
            # one large top-down level split by owner
            if out_g is None:
                out_g = local_graph(graph, part, rank)
            edges_to_check -= scout
            k = td_step_local(out_g.indptr, out_g.indices, lo, hi, queue[qs:qe], levels, claim, pairs)
            nf, scout = merge_discoveries(exchange(pairs[:2 * k]), levels, parents, lev, indptr, queue)
            qs, qe = 0, nf
            lev += 1
    return levels, parents


def verify_bfs(graph, source, levels, parents=None) -> None:
    """Check BFS levels (and parents) by a short list of facts, as gapbs's verifier.

    Facts checked, all vectorized over the arcs:

    1. ``levels[source] == 0`` and no other vertex has level 0; levels are ``>= -1``;
    2. for every arc ``u -> v`` with ``u`` reached: ``v`` is reached and
       ``levels[v] <= levels[u] + 1``;
    3. every reached ``v != source`` has an in-neighbour at ``levels[v] - 1``;
    4. parents (if given): ``parents[source] == source``, ``-1`` exactly on the
       unreached vertices, and for the others ``parents[v] -> v`` is an arc with
       ``levels[parents[v]] == levels[v] - 1``.

    Facts 1-3 hold only for the true BFS distances.

    Raises
    ------
    VerificationError
        With the first violated fact and a vertex that violates it.
    """
    n = graph.n
    lv = np.asarray(levels)
    if lv.shape != (n,):
        raise VerificationError(f"levels must have shape ({n},); got {lv.shape}")
    lv = lv.astype(np.int64)
    if lv[source] != 0:
        raise VerificationError(f"levels[source={source}] must be 0; got {lv[source]}")
    zero = np.flatnonzero(lv == 0)
    if zero.size != 1:
        bad = int(zero[zero != source][0])
        raise VerificationError(f"vertex {bad} has level 0 but is not the source {source}")
    if (lv < -1).any():
        bad = int(np.flatnonzero(lv < -1)[0])
        raise VerificationError(f"levels[{bad}] = {lv[bad]} is below -1")
    src, dst, _ = graph.edges()
    src = src.astype(np.int64)
    dst = dst.astype(np.int64)
    ls, ld = lv[src], lv[dst]
    bad = (ls >= 0) & ((ld < 0) | (ld > ls + 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise VerificationError(f"arc {src[i]} -> {dst[i]}: level {ld[i]} of {dst[i]} but level {ls[i]} of {src[i]}")
    tight = (ls >= 0) & (ld == ls + 1)
    has_pred = np.zeros(n, bool)
    has_pred[dst[tight]] = True
    need = (lv > 0) & ~has_pred
    if need.any():
        v = int(np.flatnonzero(need)[0])
        raise VerificationError(f"vertex {v} has level {lv[v]} but no in-neighbour at level {lv[v] - 1}")
    if parents is None:
        return
    par = np.asarray(parents).astype(np.int64)
    if par.shape != (n,):
        raise VerificationError(f"parents must have shape ({n},); got {par.shape}")
    if par[source] != source:
        raise VerificationError(f"parents[source={source}] must be the source; got {par[source]}")
    unreached = lv < 0
    wrong = unreached != (par < 0)
    if wrong.any():
        v = int(np.flatnonzero(wrong)[0])
        raise VerificationError(f"vertex {v}: level {lv[v]} but parent {par[v]} (-1 exactly when unreached)")
    vs = np.flatnonzero((lv > 0))
    ps = par[vs]
    if ps.size and ((ps >= n).any() or (lv[ps] != lv[vs] - 1).any()):
        i = int(np.flatnonzero((ps >= n) | (lv[np.minimum(ps, n - 1)] != lv[vs] - 1))[0])
        raise VerificationError(f"vertex {vs[i]} (level {lv[vs[i]]}) has parent {ps[i]} not one level up")
    # arc parents[v] -> v exists: rows are sorted, so search each parent's row
    # (a row-wise search: a combined key src * n + dst would overflow int64 past ~3e9 vertices)
    ok = arc_positions(graph.indptr, graph.indices, ps, vs) >= 0
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise VerificationError(f"parent {ps[i]} of vertex {vs[i]} has no arc to it")

