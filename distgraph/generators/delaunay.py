"""Delaunay triangulations of random points (like DIMACS-10 ``delaunay_nSCALE``).

Algorithm
---------
``n = 2**scale`` points uniform in the unit square, triangulated with
``scipy.spatial.Delaunay`` (Qhull); the graph has an edge for every side of every
triangle.  It is planar with ``3n - 3 - h`` edges (``h`` points on the convex hull),
so the average degree is just under 6, and a large diameter (about ``sqrt(n)``).

Vertex order: ids follow the geometry (strips of height ``1/sqrt(n)``, then ``x``;
see :func:`distgraph.generators.rgg.spatial_order`), so the matrix is banded like
the DIMACS-10 files.

State encoding: the points come from
``Generator(PCG64(SeedSequence([seed, 0]))).random((n, 2))``, the same draw as
:func:`~distgraph.generators.rgg.rgg` with the same seed.  Qhull is deterministic for
the same input, so the graph is the same everywhere.  Cost: Qhull dominates; scale 18
took 2.4 s of CPU and 335 MiB peak (benchmarks/results/gen_bench.json), growing about
as ``n log n``; for much larger planar-like inputs ``rgg`` or ``grid`` are cheaper.
"""

from __future__ import annotations

import numpy as np

from ._csr import build_csr
from .kron import DEFAULT_SEED
from .rgg import _check_scale, random_points

__all__ = ["delaunay"]


def delaunay(scale: int, seed: int = DEFAULT_SEED):
    """The Delaunay triangulation of ``2**scale`` random points of the unit square.

    Parameters
    ----------
    scale : int
        ``n = 2**scale`` points, ``2 <= scale <= 26``.
    seed : int
        Seed (>= 0).

    Returns
    -------
    Graph
        Undirected, unweighted, planar.

    Examples
    --------
    >>> g = delaunay(4, seed=1)
    >>> g.n, g.directed
    (16, False)
    """
    from scipy.spatial import Delaunay

    _check_scale(scale, 2, 26)
    n = 1 << scale
    pts = random_points(n, seed)
    tri = Delaunay(pts).simplices
    del pts
    src = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
    dst = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    del tri
    params = dict(scale=int(scale), seed=int(seed))
    return build_csr([(src, dst)], n, src.shape[0], directed=False, drop_self_loops=True,
                     meta={"generator": "delaunay", "params": params})
