"""Kronecker (R-MAT) graphs with the Graph500 / GAP parameters.

Algorithm
---------
R-MAT (Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive Model for Graph Mining",
SDM 2004), as specified by Graph500 (kernel 0 reference generator) and used by GAP
(``-g SCALE``): ``2**scale`` vertices, ``edge_factor * 2**scale`` edges.  Each edge
picks, ``scale`` times, one quadrant of the adjacency matrix with probabilities
``A, B, C, D = 1-A-B-C`` (Graph500: 0.57, 0.19, 0.19, 0.05), which fixes one bit of
its source and one bit of its destination.  Vertex ids are then permuted at random
(as Graph500 and GAP do) so that the hubs are not the low ids.

Chunked: a chunk of ``CHUNK_EDGES`` edges takes ``scale`` 32-bit uniforms per edge
from one call of ``PCG64.random_raw`` (the raw 64-bit draws, seen as pairs of 32-bit
words), and a numba kernel turns them into ids: at level ``l`` the word ``u`` gives
the quadrant, the source bit is ``u >= A+B`` and the destination bit is
``(u >= A) ^ (u >= A+B) ^ (u >= A+B+C)`` (thresholds scaled to ``2**32``).

State encoding: ``u`` is uint32 ``(chunk_edges, 2 * ceil(scale / 2))``, row ``i`` the
words of edge ``i``, word ``l`` for level ``l`` (most significant bit first); ``src``/
``dst`` are int32 (int64 for scale >= 31) ids of one chunk; ``perm`` is the id
permutation (``(n,)``), applied as ``perm[src]``.

Determinism: chunk ``k`` draws from ``PCG64(SeedSequence([seed, k]))`` and the
permutation from ``PCG64(SeedSequence([seed, PERM_STREAM]))``, so the edge list is a
pure function of ``(scale, edge_factor, seed, a, b, c)``, whatever the process, the
number of MPI ranks or the order chunks are generated in.  ``CHUNK_EDGES`` is part
of that definition; changing it changes the graphs.

Chunks are computed by numba's number of threads at once (``_parallel.ordered_map``) and
handed out in order, so the result does not depend on the thread count.

Every rank builds the whole graph (generators know nothing of ranks; see
``distgraph.graph.partition`` for a rank's part).  A rank can generate only some
edges with :func:`kronecker_edges` (``chunks=``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..errors import expect
from ._csr import build_csr
from ._parallel import ordered_map

__all__ = ["kronecker", "kronecker_edges", "DEFAULT_SEED", "CHUNK_EDGES"]

#: The default seed of every generator (gapbs ``kRandSeed``).
DEFAULT_SEED = 27491095
#: Edges per independently seeded chunk (part of the generator's definition).
CHUNK_EDGES = 1 << 20
#: Stream id of the vertex permutation (chunk ids are < 2**40).
PERM_STREAM = 1 << 62
MAX_SCALE = 40


def _check_common(scale, edge_factor, seed):
    expect(isinstance(scale, (int, np.integer)) and 1 <= scale <= MAX_SCALE, "scale",
           f"an integer in [1, {MAX_SCALE}]", scale)
    expect(isinstance(edge_factor, (int, np.integer)) and edge_factor >= 1, "edge_factor",
           "an integer >= 1", edge_factor)
    expect(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", "an integer >= 0", seed)


def _check_abc(a, b, c):
    for name, v in (("a", a), ("b", b), ("c", c)):
        expect(isinstance(v, (int, float, np.floating)) and 0.0 <= v <= 1.0, name, "a probability in [0, 1]", v)
    expect(a + b + c < 1.0, "a + b + c", "< 1 (d = 1 - a - b - c must be positive)", a + b + c)


def kronecker_edges(scale: int, edge_factor: int = 16, seed: int = DEFAULT_SEED, *, a: float = 0.57,
                    b: float = 0.19, c: float = 0.19, permute: bool = True, chunks=None):
    """Yield the R-MAT edge list chunk by chunk, as ``(src, dst)`` arrays.

    Parameters
    ----------
    scale, edge_factor, seed, a, b, c, permute
        As in :func:`kronecker`.
    chunks : iterable of int, optional
        Which chunks to generate (default all ``ceil(edge_factor * 2**scale /
        CHUNK_EDGES)``); a chunk is the same whoever generates it.

    Yields
    ------
    src, dst : ndarray
        Ids in ``[0, 2**scale)``, int32 for scale < 31 else int64; self-loops and
        repeated edges included, as drawn.
    """
    _check_common(scale, edge_factor, seed)
    _check_abc(a, b, c)
    n = 1 << scale
    m = edge_factor * n
    nchunks = -(-m // CHUNK_EDGES)
    idt = np.int32 if scale < 31 else np.int64
    two32 = float(1 << 32)
    ta = np.uint32(min(int(round(a * two32)), (1 << 32) - 1))
    tab = np.uint32(min(int(round((a + b) * two32)), (1 << 32) - 1))
    tabc = np.uint32(min(int(round((a + b + c) * two32)), (1 << 32) - 1))
    perm = None
    if permute:
        perm = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, PERM_STREAM]))).permutation(n).astype(idt)
    words = 2 * ((scale + 1) // 2)  # 32-bit words per edge, from whole 64-bit draws
    ks = [int(k) for k in (range(nchunks) if chunks is None else chunks)]
    for k in ks:
        expect(0 <= k < nchunks, "chunk", f"in [0, {nchunks})", k)
    perm_arg = perm if perm is not None else np.zeros(1, idt)

    def one(k):
        size = min(CHUNK_EDGES, m - k * CHUNK_EDGES)
        bg = np.random.PCG64(np.random.SeedSequence([seed, k]))
        u = bg.random_raw(size * words // 2).view(np.uint32).reshape(size, words)
        src = np.empty(size, dtype=idt)
        dst = np.empty(size, dtype=idt)
        _rmat_chunk(u, scale, ta, tab, tabc, perm_arg, perm is not None, src, dst)
        return src, dst

    yield from ordered_map(one, ks)


@nb.njit(cache=True, nogil=True)
def _rmat_chunk(u, scale, ta, tab, tabc, perm, permute, src, dst):
    """Edge ``i`` reads level ``l`` (most significant bit first) from word ``u[i, l]``."""
    for i in range(u.shape[0]):
        s = 0
        d = 0
        for level in range(scale):
            x = u[i, level]
            bs = x >= tab
            bd = (x >= ta) ^ bs ^ (x >= tabc)
            s = (s << 1) | bs
            d = (d << 1) | bd
        if permute:
            s = perm[s]
            d = perm[d]
        src[i] = s
        dst[i] = d


def kronecker(scale: int, edge_factor: int = 16, seed: int = DEFAULT_SEED, *, a: float = 0.57, b: float = 0.19,
              c: float = 0.19, directed: bool = False, permute: bool = True, device: str | None = None):
    """A Kronecker (R-MAT) graph as Graph500 and GAP generate it.

    Parameters
    ----------
    scale : int
        ``n = 2**scale`` vertices, ``1 <= scale <= 40``.
    edge_factor : int
        Edges drawn per vertex: ``edge_factor * n`` in all, before removing
        self-loops and repeats (Graph500 and GAP: 16).
    seed : int
        Seed (>= 0); the graph is the same for the same arguments everywhere.
    a, b, c : float
        Quadrant probabilities (``d = 1 - a - b - c``).
    directed : bool
        ``False`` (default, as GAP and the BLEST paper) stores every edge both ways.
    permute : bool
        Permute vertex ids at random (default, as Graph500 and GAP).
    device : {"cpu", "gpu"}, optional
        Where the CSR is built (default ``DISTGRAPH_GEN_DEVICE``, else "cpu"); the graph
        is the same (:mod:`distgraph.generators._csr_device`).

    Returns
    -------
    Graph
        Self-loops removed, one arc per ordered pair (as GAP's builder does), no
        weights; ``meta`` records the parameters.

    Raises
    ------
    InvalidArgumentError
        A parameter out of range.

    Examples
    --------
    >>> g = kronecker(4, seed=1)
    >>> g.n, g.directed
    (16, False)
    """
    _check_common(scale, edge_factor, seed)
    _check_abc(a, b, c)
    n = 1 << scale
    params = dict(scale=int(scale), edge_factor=int(edge_factor), seed=int(seed), a=float(a), b=float(b),
                  c=float(c), directed=bool(directed), permute=bool(permute))
    return build_csr(kronecker_edges(scale, edge_factor, seed, a=a, b=b, c=c, permute=permute),
                     n, edge_factor * n, directed=directed, drop_self_loops=True,
                     meta={"generator": "kron", "params": params}, device=device)
