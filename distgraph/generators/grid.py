"""2-D grids, plain or road-like.

Algorithm
---------
A ``rows x cols`` 4-neighbour lattice: vertex ``r * cols + c`` is joined to its
right neighbour ``r * cols + c + 1`` and the one below ``(r + 1) * cols + c``, so
there are ``rows * (cols - 1) + (rows - 1) * cols`` edges, undirected.  Like a road
network it has degree <= 4, is planar, and has a diameter of ``rows + cols - 2``
(large, unlike Kronecker or urand graphs).

Road-like variant (``drop > 0``): each lattice edge is removed independently with
probability ``drop``, which gives the dead ends, degree-2 chains and irregular
blocks of real road maps (and may disconnect the grid; the largest component stays
dominant for ``drop`` up to about 0.4, the bond-percolation threshold being 0.5).

State encoding: the edge list is horizontal edges (row-major) then vertical edges
(row-major); ``keep[e]`` is drawn for edge ``e`` in that order from
``PCG64(SeedSequence([seed, 0]))``.  Same graph everywhere for the same arguments.
"""

from __future__ import annotations

import numpy as np

from ..errors import expect
from ._csr import build_csr
from .kron import DEFAULT_SEED

__all__ = ["grid", "grid_shape"]


def grid_shape(scale: int) -> tuple[int, int]:
    """``(rows, cols)`` of the ``2**scale``-vertex grid: ``2**(scale//2) x 2**(scale - scale//2)``."""
    expect(isinstance(scale, (int, np.integer)) and 0 <= scale <= 40, "scale", "an integer in [0, 40]", scale)
    return 1 << (scale // 2), 1 << (scale - scale // 2)


def grid(rows: int, cols: int, *, drop: float = 0.0, seed: int = DEFAULT_SEED):
    """A ``rows x cols`` 4-neighbour grid, optionally with a fraction of edges removed.

    Parameters
    ----------
    rows, cols : int
        Grid dimensions (>= 1); vertex ``r * cols + c`` is at row ``r``, column ``c``.
    drop : float
        Probability in ``[0, 1)`` that each edge is removed (road-like variant).
    seed : int
        Seed (>= 0) for ``drop``; unused when ``drop == 0``.

    Returns
    -------
    Graph
        Undirected, unweighted, ``rows * cols`` vertices.

    Examples
    --------
    >>> g = grid(2, 2)
    >>> g.n, g.num_edges, g.indices[g.indptr[0]:g.indptr[1]].tolist()
    (4, 4, [1, 2])
    """
    for name, v in (("rows", rows), ("cols", cols)):
        expect(isinstance(v, (int, np.integer)) and v >= 1, name, "an integer >= 1", v)
    expect(rows * cols <= 1 << 40, "rows * cols", "<= 2**40", rows * cols)
    expect(isinstance(drop, (int, float, np.floating)) and 0.0 <= drop < 1.0, "drop", "a probability in [0, 1)", drop)
    expect(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", "an integer >= 0", seed)
    rows, cols = int(rows), int(cols)
    n = rows * cols
    idt = np.int32 if n < 2**31 else np.int64
    v = np.arange(n, dtype=idt).reshape(rows, cols)
    src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    del v
    if drop > 0:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
        keep = rng.random(src.shape[0]) >= drop
        src, dst = src[keep], dst[keep]
    params = dict(rows=rows, cols=cols, drop=float(drop), seed=int(seed))
    return build_csr([(src, dst)], n, src.shape[0], directed=False, drop_self_loops=False,
                     meta={"generator": "grid", "params": params})
