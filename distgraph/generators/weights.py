"""Edge weights for generated graphs: uniform, potential-shifted (negative, no negative
cycle), and a planted negative cycle.

Uniform weights
    Integers uniform in ``[low, high]`` (GAP uses ``[1, 255]``).  The weight of an arc
    is a hash (splitmix64) of ``(seed, key)`` with ``key = min(u, v) * n + max(u, v)``
    for an undirected graph, so both arcs of an edge get the same weight, and
    ``key = u * n + v`` for a directed one.  No arrays are sorted or matched, it is
    done block by block, and it is the same in every process.

Potential shift (Johnson's reweighting run backwards)
    ``w'(u, v) = w(u, v) + p(u) - p(v)`` with ``p`` drawn at random.  Along any cycle
    the potentials cancel, so cycle weights are unchanged: with ``w >= 0`` there is no
    negative cycle, yet many arcs are negative (about 29% with the default spread
    ``2 * max(w)`` and ``w`` uniform).  Shortest paths are the same paths, with
    ``d'(s, t) = d(s, t) + p(s) - p(t)``, which makes a strong test oracle.
    On an undirected graph the two arcs of an edge would get weights summing to
    ``2 w``, but a negative undirected edge is a negative 2-cycle; so the result is a
    DIRECTED graph holding both arcs, shifted independently:
    ``w'(u, v) = w + p(u) - p(v)``, ``w'(v, u) = w + p(v) - p(u)``.

Planted negative cycle
    ``length`` distinct random vertices ``c_0 .. c_{k-1}`` joined by arcs
    ``c_i -> c_{i+1 mod k}``: the first ``k - 1`` get weights uniform in
    ``[1, max(w)]``, the closing one minus their sum minus one, so the cycle weighs
    at most -1 (an arc that already existed keeps the smaller weight).  The result is
    directed.

Random streams: ``PCG64(SeedSequence([seed, STREAM]))`` with a distinct ``STREAM``
for the potentials and for the cycle, so the three steps can share one seed.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, expect
from ..graph.core import Graph
from .kron import DEFAULT_SEED

__all__ = ["uniform_weights", "potential_shift", "plant_negative_cycle"]

_BLOCK = 1 << 22
_POTENTIAL_STREAM = 0x706F74  # "pot"
_CYCLE_STREAM = 0x637963  # "cyc"
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic), in place."""
    x += _GOLDEN
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _check_graph(graph):
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")


def _check_seed(seed):
    expect(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", "an integer >= 0", seed)


def _int_dtype(lo: int, hi: int) -> np.dtype:
    i32 = np.iinfo(np.int32)
    return np.dtype(np.int32) if i32.min <= lo and hi <= i32.max else np.dtype(np.int64)


def uniform_weights(graph: Graph, low: int = 1, high: int = 255, seed: int = DEFAULT_SEED) -> Graph:
    """The same graph with integer weights uniform in ``[low, high]``.

    Parameters
    ----------
    graph : Graph
        Any graph; existing weights are replaced.
    low, high : int
        Inclusive range, ``low <= high`` (GAP: 1 and 255).
    seed : int
        Seed (>= 0).

    Returns
    -------
    Graph
        Same ``indptr``/``indices`` (shared, not copied), int32 weights (int64 if the
        range needs it); on an undirected graph both arcs of an edge weigh the same.

    Examples
    --------
    >>> from distgraph.graph import Graph
    >>> g = uniform_weights(Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False), seed=1)
    >>> bool(g.weights.min() >= 1 and g.weights.max() <= 255)
    True
    """
    _check_graph(graph)
    for name, v in (("low", low), ("high", high)):
        expect(isinstance(v, (int, np.integer)), name, "an integer", v)
    expect(low <= high, "high", f">= low ({low})", high)
    _check_seed(seed)
    n = graph.n
    span = np.uint64(int(high) - int(low) + 1)
    salt = _splitmix64(np.array([seed], dtype=np.uint64))[0]
    dt = _int_dtype(int(low), int(high))
    w = np.empty(graph.m, dtype=dt)
    nn = np.uint64(max(n, 1))
    # Walk rows in blocks of about _BLOCK arcs.
    v0 = 0
    while v0 < n:
        v1 = int(np.searchsorted(graph.indptr, graph.indptr[v0] + _BLOCK, side="right")) - 1
        v1 = min(max(v1, v0 + 1), n)
        lo_a, hi_a = int(graph.indptr[v0]), int(graph.indptr[v1])
        u = np.repeat(np.arange(v0, v1, dtype=np.uint64), np.diff(graph.indptr[v0:v1 + 1]))
        v = graph.indices[lo_a:hi_a].astype(np.uint64)
        if not graph.directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        key = u * nn
        key += v
        key ^= salt
        h = _splitmix64(key)
        w[lo_a:hi_a] = (h % span).astype(np.int64) + int(low)
        v0 = v1
    meta = dict(graph.meta)
    meta["weights"] = {"kind": "uniform", "low": int(low), "high": int(high), "seed": int(seed)}
    return Graph(graph.indptr, graph.indices, w, directed=graph.directed, labels=graph.labels, meta=meta)


def _weights_or_ones(graph):
    if graph.weights is None:
        return np.ones(graph.m, dtype=np.int32)
    return graph.weights


def potential_shift(graph: Graph, seed: int = DEFAULT_SEED, *, spread=None, return_potential: bool = False):
    """Reweight ``w'(u, v) = w(u, v) + p(u) - p(v)``: negative arcs, no negative cycle.

    Parameters
    ----------
    graph : Graph
        Weights must be >= 0 (an unweighted graph counts as all ones).
    seed : int
        Seed (>= 0) for the potentials.
    spread : number, optional
        Potentials are uniform in ``[0, spread]`` (integers for integer weights);
        default ``2 * max(w)`` (about 29% negative arcs for uniform ``w``).
    return_potential : bool
        Also return ``p``.

    Returns
    -------
    Graph or (Graph, ndarray)
        A DIRECTED graph with the same arcs (an undirected input's two arcs per edge
        are shifted independently, see the module docstring); and ``p`` of shape
        ``(n,)`` (int64 or float64) when ``return_potential``.  Distances satisfy
        ``d'(s, t) = d(s, t) + p(s) - p(t)``.

    Raises
    ------
    InvalidArgumentError
        A negative weight in the input (the result could then hold a negative cycle).

    Examples
    --------
    >>> from distgraph.graph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], [5, 5, 5])
    >>> h, p = potential_shift(g, seed=3, return_potential=True)
    >>> int(h.weights.sum())  # the cycle keeps its weight
    15
    """
    _check_graph(graph)
    _check_seed(seed)
    w = _weights_or_ones(graph)
    if w.size and w.min() < 0:
        raise InvalidArgumentError(f"graph weights must be >= 0 for a potential shift; got minimum {w.min()}")
    wmax = w.max() if w.size else 1
    integer = w.dtype.kind in "iu"
    if spread is None:
        spread = 2 * max(int(wmax), 1) if integer else (2.0 * float(wmax) if wmax > 0 else 1.0)
    expect(isinstance(spread, (int, float, np.integer, np.floating)) and spread >= 0, "spread", "a number >= 0", spread)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, _POTENTIAL_STREAM])))
    n = graph.n
    if integer:
        spread = int(spread)
        p = rng.integers(0, spread, size=n, endpoint=True, dtype=np.int64)
        dt = _int_dtype(int(w.min(initial=0)) - spread, int(wmax) + spread)
    else:
        p = rng.random(n) * float(spread)
        dt = np.dtype(np.float64)
    out = np.empty(graph.m, dtype=dt)
    v0 = 0
    while v0 < n:
        v1 = min(n, v0 + max(1, _BLOCK // 8))
        lo_a, hi_a = int(graph.indptr[v0]), int(graph.indptr[v1])
        pu = np.repeat(p[v0:v1], np.diff(graph.indptr[v0:v1 + 1]))
        out[lo_a:hi_a] = w[lo_a:hi_a] + pu - p[graph.indices[lo_a:hi_a]]
        v0 = v1
    meta = dict(graph.meta)
    meta["weights"] = dict(meta.get("weights") or {"kind": "unit"})
    meta["weights"]["potential"] = {"seed": int(seed), "spread": spread, "from_undirected": not graph.directed}
    g = Graph(graph.indptr, graph.indices, out, directed=True, labels=graph.labels, meta=meta)
    return (g, p) if return_potential else g


def plant_negative_cycle(graph: Graph, length: int = 4, seed: int = DEFAULT_SEED):
    """Add a directed cycle of negative total weight on ``length`` random vertices.

    Parameters
    ----------
    graph : Graph
        Any graph; an unweighted graph counts as all ones, an undirected one as
        the directed graph with both arcs.
    length : int
        Number of vertices on the cycle, ``2 <= length <= n``.
    seed : int
        Seed (>= 0).

    Returns
    -------
    graph : Graph
        Directed, weighted: the input's arcs plus the cycle's (an arc present in both
        keeps the smaller weight).
    cycle : ndarray of int64, shape (length,)
        The cycle's vertices in order: arcs ``cycle[i] -> cycle[(i + 1) % length]``.
        Its weight in the returned graph (negative) is ``graph.meta
        ['negative_cycle_weight']``.

    Examples
    --------
    >>> from distgraph.graph import Graph
    >>> g, cyc = plant_negative_cycle(Graph.from_edges([0, 1, 2], [1, 2, 3]), length=3, seed=0)
    >>> len(cyc), g.meta["negative_cycle_weight"] < 0
    (3, True)
    """
    _check_graph(graph)
    _check_seed(seed)
    n = graph.n
    expect(isinstance(length, (int, np.integer)) and 2 <= length <= max(n, 1), "length",
           f"an integer in [2, {n}] (the number of vertices)", length)
    w = _weights_or_ones(graph)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, _CYCLE_STREAM])))
    cycle = rng.choice(n, size=int(length), replace=False).astype(np.int64)
    top = max(int(np.abs(w).max()) if w.size else 1, 1) if w.dtype.kind in "iu" else None
    if top is not None:
        cw = rng.integers(1, top, size=length - 1, endpoint=True, dtype=np.int64)
        cw = np.append(cw, -int(cw.sum()) - 1)
        dt = _int_dtype(min(int(w.min(initial=0)), int(cw.min())), max(int(w.max(initial=0)), int(cw.max())))
    else:
        cw = rng.random(length - 1) * max(float(np.abs(w).max()) if w.size else 1.0, 1.0)
        cw = np.append(cw, -cw.sum() - 1.0)
        dt = np.dtype(np.float64)
    cu, cv = cycle, np.roll(cycle, -1)
    # Insert (or lower) the arcs in the CSR: one copy of indices and weights.
    ip, ix = graph.indptr, graph.indices
    ww = w.astype(dt, copy=True)
    new_u, new_v, new_w = [], [], []
    for u, v, x in zip(cu.tolist(), cv.tolist(), cw.tolist()):
        lo, hi = int(ip[u]), int(ip[u + 1])
        pos = lo + int(np.searchsorted(ix[lo:hi], v))
        if pos < hi and ix[pos] == v:
            ww[pos] = min(ww[pos], x)
        else:
            new_u.append(u), new_v.append(v), new_w.append(x)
    if new_u:
        order = np.lexsort((new_v, new_u))
        nu, nv, nw = (np.asarray(a)[order] for a in (new_u, new_v, new_w))
        pos = np.array([int(ip[u]) + int(np.searchsorted(ix[ip[u]:ip[u + 1]], v)) for u, v in zip(nu, nv)])
        ix = np.insert(ix, pos, nv.astype(ix.dtype))
        ww = np.insert(ww, pos, nw.astype(dt))
        ip = ip + np.concatenate([[0], np.cumsum(np.bincount(nu, minlength=n))]).astype(np.int64)
    g = Graph(ip, ix, ww, directed=True, labels=graph.labels, meta=dict(graph.meta))
    total = 0
    for u, v in zip(cu.tolist(), cv.tolist()):
        lo, hi = int(ip[u]), int(ip[u + 1])
        total += ww[lo + int(np.searchsorted(ix[lo:hi], v))].item()
    g.meta["negative_cycle"] = cycle.tolist()
    g.meta["negative_cycle_weight"] = total
    return g, cycle
