"""PageRank by power iteration over plus_times products (k2-tree or CSR).

Page, Brin, Motwani & Winograd, "The PageRank citation ranking" (1999), in the form
networkx computes it (``networkx.pagerank``, no personalization): with ``N`` vertices,
out-degrees ``deg`` and damping ``alpha``, starting from ``x = 1/N``,

    x' = alpha * (z^T A + (sum of x over dangling vertices) / N) + (1 - alpha) / N,
    z  = x / deg  (0 where deg = 0),

where ``z^T A`` is one left product over plus_times (the sum over in-neighbours;
:class:`~distgraph.algorithms.spmv.SpMVPlan`, k2-tree or CSR). Dangling vertices
(no out-arc) give their rank uniformly to every vertex, as networkx does. The
iteration stops when ``sum |x' - x| < N * tol``, after at most ``max_iter``
iterations (else :class:`~distgraph.errors.ConvergenceError`).

The graph is unweighted for this product (a k2-tree holds no values): edge weights
are ignored, as ``networkx.pagerank(G, weight=None)``. An undirected graph counts
each edge in both directions.

Distributed: each rank computes the ranks of its block of vertices (a column block
of the left product) and the blocks are gathered with ``MPI_Allgatherv``, so every
rank holds ``x`` and the result is the same on any number of ranks.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConvergenceError, InvalidArgumentError
from .spmv import SpMVPlan

__all__ = ["pagerank"]


def pagerank(graph, *, alpha: float = 0.85, tol: float = 1e-6, max_iter: int = 100, format: str = "csr",
             tile: int = 1 << 20, offsets: str = "directory", cached_frontier: bool = False, comm=None,
             backend=None, return_iterations: bool = False):
    """PageRank of every vertex (see the module docstring).

    Parameters
    ----------
    graph : Graph, K2Tree, square scipy.sparse matrix or SpMVPlan
        ``A[i, j]`` is the arc ``i -> j``; weights are ignored.
    alpha : float
        Damping factor, ``0 <= alpha <= 1``.
    tol : float
        Stop when the L1 change of an iteration is below ``N * tol`` (networkx's test).
    max_iter : int
        Iteration limit.
    format : {"csr", "k2tree"}
        Storage the products run on; ``tile``, ``offsets``, ``cached_frontier``,
        ``comm`` and ``backend`` as in :class:`~distgraph.algorithms.spmv.SpMVPlan`.
    return_iterations : bool
        Also return the number of iterations.

    Returns
    -------
    numpy.ndarray of float64, shape ``(N,)``
        The rank of every vertex (internal ids; sums to 1). With
        ``return_iterations``, ``(ranks, iterations)``.

    Raises
    ------
    InvalidArgumentError
        ``alpha`` outside ``[0, 1]``, ``tol <= 0``, ``max_iter < 1``.
    ConvergenceError
        No convergence within ``max_iter`` iterations.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> pagerank(g, backend="cpu").round(6).tolist()
    [0.333333, 0.333333, 0.333333]
    """
    if not 0.0 <= float(alpha) <= 1.0:
        raise InvalidArgumentError(f"alpha must be in [0, 1]; got {alpha!r}")
    if not float(tol) > 0:
        raise InvalidArgumentError(f"tol must be > 0; got {tol!r}")
    if int(max_iter) < 1:
        raise InvalidArgumentError(f"max_iter must be >= 1; got {max_iter!r}")
    plan = graph if isinstance(graph, SpMVPlan) else SpMVPlan(
        graph, format=format, tile=tile, offsets=offsets, cached_frontier=cached_frontier, comm=comm,
        backend=backend)
    n, ncols = plan.shape
    if n != ncols:
        raise InvalidArgumentError(f"graph must be square (an adjacency matrix); got shape {plan.shape}")
    if n == 0:
        empty = np.zeros(0, np.float64)
        return (empty, 0) if return_iterations else empty
    deg = plan.row_counts().astype(np.float64)  # caller's ids (a reordered plan stores others)
    inv = np.zeros(n, np.float64)
    nz = deg != 0
    inv[nz] = 1.0 / deg[nz]
    dangling = np.flatnonzero(~nz)
    x = np.full(n, 1.0 / n)
    p = np.full(n, 1.0 / n)
    err = np.inf
    for it in range(1, int(max_iter) + 1):
        xlast = x
        y = plan.multiply(x * inv, "plus_times", left=True)
        x = alpha * (y + x[dangling].sum() * p) + (1 - alpha) * p
        err = float(np.abs(x - xlast).sum())
        if err < n * tol:
            return (x, it) if return_iterations else x
    raise ConvergenceError(f"PageRank did not converge in {max_iter} iterations (last change {err:.3g}, "
                           f"needed < {n * tol:.3g}); raise max_iter or tol", iterations=int(max_iter), error=err)
