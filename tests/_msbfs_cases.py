"""Helpers shared by the GPU multi-source BFS tests (test_gpu_msbfs.py, test_gpu_msbfs_blocks.py):
the small graphs, the sums of the shared driver ``run_batches`` (CPU backend, or a GPU
runner), a GPU runner with the tests' defaults, and exact comparison of the sums."""

import numpy as np
from mpi4py import MPI

from distgraph import generators as gen
from distgraph.graph import Graph


def ctx(backend="gpu"):
    from distgraph.runtime.context import get_context

    return get_context(MPI.COMM_SELF, backend)


def sums(g, sources, per_source, runner=None, batch_size=512):
    """The first five outputs of ``run_batches`` (farness, reach, harmonic limbs): through
    ``runner`` on the GPU, or the CPU backend when it is None."""
    from distgraph.algorithms.msbfs import run_batches

    tptr, tidx, _ = g.csc()
    return run_batches(g.indptr, g.indices, tptr, tidx, np.asarray(sources, np.int64), per_source=per_source,
                       batch_size=batch_size, ctx=ctx("gpu" if runner is not None else "cpu"), progress=False,
                       runner=runner)[:5]


def runner(g, **kw):
    """A ``GpuMSBFS`` of ``g`` without kernel cache or announcement, stage 1 + stage 2 (unless
    ``kw`` says)."""
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    tptr, tidx, _ = g.csc()
    kw.setdefault("cache_dir", False)
    kw.setdefault("announce", False)
    # stage 1 + stage 2 unless a test asks for the pull kernel (tests/test_gpu_msbfs_pull.py),
    # whose "auto" would otherwise take the road-like graphs of the stage-1 tests
    kw.setdefault("pull", "off")
    return GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=ctx(), **kw)


_REAL = {}


def real_graph(data_dir, name):
    """``name`` from the data folder as an unweighted Graph (read once per session); the test
    is skipped when the file is missing."""
    import pytest

    from distgraph.graph.readers import read_graph

    path = data_dir / name
    if not path.is_file():
        pytest.skip(f"{name} not in the data folder {data_dir}")
    if name not in _REAL:
        g = read_graph(str(path))
        _REAL[name] = Graph(g.indptr, g.indices, None, directed=g.directed)
    return _REAL[name]


def same(a, b):
    """The sums ``a`` and ``b`` are equal, array by array, as uint64."""
    return all(np.array_equal(np.asarray(x).astype(np.uint64), np.asarray(y).astype(np.uint64))
               for x, y in zip(a, b))


def graphs(undirected_disconnected=False):
    """Literal and generated graphs: n not a multiple of 8, disconnected, directed,
    isolated vertices; with ``undirected_disconnected`` also an undirected graph of 701
    vertices, 101 or more of them isolated (drawn after the others: they stay the same)."""
    rng = np.random.default_rng(3)
    n = 1003
    s, d = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    keep = s < 800
    out = {
        "path4": Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False),
        "kron10": gen.kronecker(10, 8, seed=5),
        "kron9_dir": gen.kronecker(9, 6, seed=6, directed=True),
        "grid_37x29": gen.grid(37, 29),
        "random_dir_disconnected": Graph.from_edges(s[keep], d[keep], n=n, directed=True),
    }
    if undirected_disconnected:
        u, v = rng.integers(0, 600, 900), rng.integers(0, 600, 900)
        out["undirected_disconnected"] = Graph.from_edges(u, v, n=701, directed=False)
    out["isolated_only"] = Graph.from_edges([], [], n=21, directed=True)
    return out


def undirected_leafy():
    """The undirected graphs of :func:`graphs` (with the disconnected one) and graphs with leaves:
    a star, two isolated edges beside isolated vertices, a grid with hanging paths of 1-3
    vertices, a hanging star and a self-loop on a leaf."""
    out = {k: v for k, v in graphs(undirected_disconnected=True).items() if not v.directed}
    out["star"] = Graph.from_edges([0] * 6, [1, 2, 3, 4, 5, 6], directed=False)
    out["two_edges_isolated"] = Graph.from_edges([0, 5], [3, 2], n=7, directed=False)
    g = gen.grid(23, 19)
    s, d = g.edges()[:2]
    n0 = g.n
    es = [0, n0, n0 + 1, 40, 200, n0 + 3, n0 + 3, n0 + 3, n0 + 7]
    ed = [n0, n0 + 1, n0 + 2, n0 + 3, n0 + 4, n0 + 5, n0 + 6, n0 + 7, n0 + 7]
    out["grid_hanging"] = Graph.from_edges(np.concatenate([s, es]), np.concatenate([d, ed]), n=n0 + 10,
                                           directed=False)
    return out


def closeness_pair(g, **kw):
    """``closeness(g, **kw)`` of the CPU backend and of the GPU backend, on COMM_SELF."""
    from distgraph.algorithms.closeness import closeness

    return tuple(closeness(g, backend=b, comm=MPI.COMM_SELF, progress=False, **kw) for b in ("cpu", "gpu"))


def closeness_same(a, b):
    """Farness, reach, harmonic sums and closeness (NaN where undefined) of ``a`` and ``b`` equal."""
    return (np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
            and np.array_equal(a.harmonic, b.harmonic) and np.array_equal(a.closeness, b.closeness, equal_nan=True))
