"""Random geometric graphs (like DIMACS-10 ``rgg_n_2_SCALE_s0``).

Algorithm
---------
``n = 2**scale`` points uniform in the unit square; two points are joined when their
Euclidean distance is below ``r``.  The default radius is the one of the DIMACS-10
``rgg_n_2_k`` graphs (Holtgrewe, Sanders, Schulz, "Engineering a scalable high
quality graph partitioner", IPDPS 2010): ``r = 0.55 * sqrt(ln n / n)``, just above
the connectivity threshold, which gives an average degree of about
``n * (pi r^2 - 8 r^3 / 3 + r^4 / 2)``, i.e. ``0.95 ln n`` (15.8 at scale 24).
Pairs are found with ``scipy.spatial.cKDTree.query_pairs``.

Vertex order: like the DIMACS-10 files, ids follow the geometry, so the adjacency
matrix is banded: points are sorted by horizontal strip of height ``r``, then by
``x`` within a strip (see :func:`spatial_order`).

State encoding: ``points`` is float64 ``(n, 2)``, drawn as one
``Generator(PCG64(SeedSequence([seed, 0]))).random((n, 2))`` call, so the graph is
the same everywhere for the same arguments.  Every rank builds the whole graph.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import expect
from ._csr import build_csr
from .kron import DEFAULT_SEED

__all__ = ["rgg", "rgg_radius", "random_points", "spatial_order"]


def rgg_radius(n: int) -> float:
    """The DIMACS-10 ``rgg_n_2_k`` radius ``0.55 * sqrt(ln n / n)``."""
    return 0.55 * math.sqrt(math.log(n) / n) if n > 1 else 1.0


def _check_scale(scale, lo=1, hi=30):
    expect(isinstance(scale, (int, np.integer)) and lo <= scale <= hi, "scale", f"an integer in [{lo}, {hi}]", scale)


def random_points(n: int, seed: int, h: float | None = None) -> np.ndarray:
    """``n`` uniform points of the unit square, float64 ``(n, 2)``, in spatial order
    (strips of height ``h``, default ``1 / sqrt(n)``)."""
    expect(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", "an integer >= 0", seed)
    pts = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0]))).random((n, 2))
    return pts[spatial_order(pts, h if h is not None else 1.0 / math.sqrt(max(n, 1)))]


def spatial_order(points: np.ndarray, h: float) -> np.ndarray:
    """Permutation sorting ``points`` by strip ``floor(y / h)``, then by ``x``."""
    return np.lexsort((points[:, 0], np.floor(points[:, 1] / h)))


def rgg(scale: int, seed: int = DEFAULT_SEED, *, radius: float | None = None):
    """A random geometric graph on ``2**scale`` points of the unit square.

    Parameters
    ----------
    scale : int
        ``n = 2**scale`` points, ``1 <= scale <= 30``.
    seed : int
        Seed (>= 0).
    radius : float, optional
        Connection radius in ``(0, 1.5]``; default :func:`rgg_radius` (DIMACS-10).

    Returns
    -------
    Graph
        Undirected, unweighted; ``meta['params']`` holds ``radius``.

    Examples
    --------
    >>> g = rgg(6, seed=1)
    >>> g.n, g.directed
    (64, False)
    """
    from scipy.spatial import cKDTree

    _check_scale(scale)
    n = 1 << scale
    r = rgg_radius(n) if radius is None else radius
    expect(isinstance(r, (int, float, np.floating)) and 0 < r <= 1.5, "radius", "a number in (0, 1.5]", r)
    pts = random_points(n, seed, h=min(r, 1.0))
    pairs = cKDTree(pts, balanced_tree=False, compact_nodes=False).query_pairs(r, output_type="ndarray")
    del pts
    params = dict(scale=int(scale), seed=int(seed), radius=float(r))
    return build_csr([(pairs[:, 0], pairs[:, 1])], n, pairs.shape[0], directed=False, drop_self_loops=True,
                     meta={"generator": "rgg", "params": params})
