"""Breadth-first search from one source: direction-optimizing, over MPI ranks.

Algorithm: Beamer, Asanovic, Patterson, "Direction-Optimizing Breadth-First Search",
SC 2012, with gapbs's switch parameters (``alpha = 15``, ``beta = 18``; config keys
``bfs_alpha`` / ``bfs_beta``). Kernels: :mod:`distgraph.backends.cpu.bfs`.

On one rank the whole search runs inside one compiled function. On ``p`` ranks the
vertices are split by :func:`~distgraph.graph.partition.partition_by_edges`; every
rank keeps the (replicated) ``levels`` / ``parents`` arrays and, per level:

* top-down: expands the frontier vertices it owns along their out-arcs;
* bottom-up: lets each unreached vertex it owns look for an in-neighbour at the
  current depth;

then the ranks exchange their ``(child, parent)`` discoveries with one
``Allgatherv`` and every rank applies all of them in the same way
(:func:`~distgraph.backends.cpu.bfs.merge_discoveries`). The switch decisions are
made from replicated counts, so all ranks take the same branch without extra
messages.

Encoding: ``levels`` int32, ``-1`` = unreached; ``parents`` int64, the smallest
vertex id one level up with an arc to ``v``, ``parents[source] == source``, ``-1``
unreached. Both are functions of the graph and the source only: identical on any
number of ranks.

:func:`verify_bfs` is the verifier used by tests and ``distgraph bfs --verify``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BackendUnavailableError, VerificationError, expect
from ..graph.core import Graph

__all__ = ["bfs", "BFSResult", "verify_bfs"]


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
        if parents:
            raise BackendUnavailableError("bfs on backend 'gpu' computes levels only; use parents=False "
                                          "or backend='cpu'")
        from ..backends.gpu.bfs import bfs_gpu

        levels = bfs_gpu(graph, source)
        if verify:
            verify_bfs(graph, source, levels, None)
        return BFSResult(levels, None, source)
    alpha, beta = float(config.bfs_alpha), float(config.bfs_beta)
    distributed = ctx.size > 1 if _distributed is None else _distributed
    if distributed:
        levels, par = _bfs_distributed(graph, source, ctx, alpha, beta)
        if not parents:
            par = None
    else:
        from ..backends.cpu.bfs import bfs_serial

        tptr, tidx, _ = graph.csc()
        levels = np.empty(n, np.int32)
        par = np.empty(n if parents else 1, np.int64)
        queue = np.empty(n, dtype=graph.indices.dtype)
        bfs_serial(graph.indptr, graph.indices, tptr, tidx, source, alpha, beta, levels, par, bool(parents), queue)
        if not parents:
            par = None
    res = BFSResult(levels, par, source)
    if verify:
        verify_bfs(graph, source, levels, par)
    return res


def _allgatherv(comm, a: np.ndarray) -> np.ndarray:
    counts = np.asarray(comm.allgather(int(a.size)), dtype=np.int64)
    out = np.empty(int(counts.sum()), dtype=a.dtype)
    comm.Allgatherv(a, [out, counts])
    return out


def _bfs_distributed(graph, source, ctx, alpha, beta):
    from ..backends.cpu.bfs import bu_step_local, merge_discoveries, td_step_local
    from ..graph.partition import local_graph, partition_by_edges

    comm, rank = ctx.comm, ctx.rank
    n = graph.n
    part = partition_by_edges(graph.indptr, ctx.size)
    lo, hi = part.range(rank)
    out_g = local_graph(graph, part, rank)
    in_g = None  # CSC rows of [lo, hi): built at the first bottom-up step
    levels = np.full(n, -1, np.int32)
    parents = np.full(n, -1, np.int64)
    levels[source] = 0
    parents[source] = source
    claim = np.full(n, -1, np.int64)
    pairs = np.empty(2 * max(n, 1), np.int64)
    fbuf = np.empty(max(n, 1), np.int64)
    frontier = np.array([source], np.int64)
    indptr = graph.indptr
    edges_to_check = int(indptr[n])
    scout = int(indptr[source + 1] - indptr[source])
    bottom_up = False
    awake = 1
    lev = 0
    while frontier.size:
        if not bottom_up and scout > edges_to_check / alpha:
            bottom_up = True
            awake = frontier.size
        if bottom_up:
            if in_g is None:
                in_g = local_graph(graph, part, rank, transpose=True)
            k = bu_step_local(in_g.indptr, in_g.indices, lo, hi, levels, lev, pairs)
        else:
            edges_to_check -= scout
            own = frontier[(frontier >= lo) & (frontier < hi)]
            k = td_step_local(out_g.indptr, out_g.indices, lo, own, levels, claim, pairs)
        found = _allgatherv(comm, pairs[:2 * k])
        nf, scout = merge_discoveries(found, levels, parents, lev, indptr, fbuf)
        frontier = fbuf[:nf].copy()
        lev += 1
        if bottom_up:
            old, awake = awake, nf
            if not (awake >= old or awake > n / beta):
                bottom_up = False
                scout = 1
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
    key_arcs = src * n + dst  # sorted: rows in order, heads sorted within a row
    key_tree = ps * n + vs
    pos = np.searchsorted(key_arcs, key_tree)
    ok = (pos < key_arcs.size) & (key_arcs[np.minimum(pos, key_arcs.size - 1)] == key_tree) if key_arcs.size else \
        np.zeros(key_tree.size, bool)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise VerificationError(f"parent {ps[i]} of vertex {vs[i]} has no arc to it")
