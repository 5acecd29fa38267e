"""Uniform random graphs (GAP ``-u SCALE``: Erdős–Rényi style, fixed edge count).

Algorithm
---------
``edge_factor * 2**scale`` edges, each endpoint drawn independently and uniformly
from ``[0, 2**scale)`` (GAP's ``MakeUniformEL``), then self-loops and repeats are
removed and, unless ``directed``, each edge is stored both ways.  Degrees are
binomial, close to Poisson with mean ``2 * edge_factor`` (undirected).

State encoding: per chunk, one raw PCG64 draw per edge; its low ``scale`` bits are
the source and the next ``scale`` bits the destination when ``2 * scale <= 64``,
otherwise two draws per edge.

Determinism: chunk ``k`` of ``CHUNK_EDGES`` edges draws from
``PCG64(SeedSequence([seed, k]))``, so the graph is the same in any process and on
any number of ranks.  Every rank builds the whole graph.
"""

from __future__ import annotations

import numpy as np

from ._csr import build_csr
from ._parallel import ordered_map
from .kron import CHUNK_EDGES, DEFAULT_SEED, _check_common

__all__ = ["urand", "urand_edges"]


def urand_edges(scale: int, edge_factor: int = 16, seed: int = DEFAULT_SEED, *, chunks=None):
    """Yield the uniform random edge list chunk by chunk as ``(src, dst)`` arrays
    (ids int32 for scale < 31, self-loops and repeats included)."""
    _check_common(scale, edge_factor, seed)
    n = 1 << scale
    m = edge_factor * n
    nchunks = -(-m // CHUNK_EDGES)
    idt = np.int32 if scale < 31 else np.int64
    mask = np.uint64(n - 1)

    def one(k):
        size = min(CHUNK_EDGES, m - k * CHUNK_EDGES)
        bg = np.random.PCG64(np.random.SeedSequence([seed, k]))
        if 2 * scale <= 64:
            r = bg.random_raw(size)
            src = (r & mask).astype(idt)
            dst = ((r >> np.uint64(scale)) & mask).astype(idt)
        else:
            r = bg.random_raw(2 * size).reshape(2, size)
            src = (r[0] & mask).astype(idt)
            dst = (r[1] & mask).astype(idt)
        return src, dst

    yield from ordered_map(one, [int(k) for k in (range(nchunks) if chunks is None else chunks)])


def urand(scale: int, edge_factor: int = 16, seed: int = DEFAULT_SEED, *, directed: bool = False,
          device: str | None = None):
    """A uniform random graph as GAP's ``-u`` generates it.

    Parameters
    ----------
    scale : int
        ``n = 2**scale`` vertices, ``1 <= scale <= 40``.
    edge_factor : int
        Edges drawn per vertex (``edge_factor * n`` in all, before removing
        self-loops and repeats).
    seed : int
        Seed (>= 0).
    directed : bool
        ``False`` (default, as GAP) stores every edge both ways.
    device : {"cpu", "gpu"}, optional
        Where the CSR is built (default ``DISTGRAPH_GEN_DEVICE``, else "cpu"); the graph
        is the same (:mod:`distgraph.generators._csr_device`).

    Returns
    -------
    Graph
        No self-loops, no repeated arcs, no weights; ``meta`` records the parameters.

    Examples
    --------
    >>> g = urand(4, edge_factor=2, seed=1)
    >>> g.n, g.directed
    (16, False)
    """
    _check_common(scale, edge_factor, seed)
    n = 1 << scale
    params = dict(scale=int(scale), edge_factor=int(edge_factor), seed=int(seed), directed=bool(directed))
    return build_csr(urand_edges(scale, edge_factor, seed), n, edge_factor * n, directed=directed,
                     drop_self_loops=True, meta={"generator": "urand", "params": params},
                     device=device)
