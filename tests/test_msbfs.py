"""Bit-parallel multi-source BFS: per-vertex sums and the level matrix against scipy,
every batch size and word count, identical on 1, 2 and 4 ranks."""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from distgraph import Graph
from distgraph.algorithms.msbfs import msbfs
from distgraph.errors import InvalidArgumentError


def ref(g, sources):
    import scipy.sparse as sp

    A = sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    D = shortest_path(A, unweighted=True, directed=g.directed, indices=sources)
    fin = np.isfinite(D)
    with np.errstate(divide="ignore"):
        harm = np.where(fin & (D > 0), 1.0 / D, 0.0).sum(0)
    return np.where(fin, D, -1).astype(np.int32), np.where(fin, D, 0).sum(0), fin.sum(0), harm


def test_path_by_hand():
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    r = msbfs(g, [0, 3], levels=True)
    assert r.distance_sum.tolist() == [3, 3, 3, 3]
    assert r.reach.tolist() == [2, 2, 2, 2]
    assert r.harmonic.tolist() == [1 / 3, 1.5, 1.5, 1 / 3]
    assert r.levels.tolist() == [[0, 1, 2, 3], [3, 2, 1, 0]]
    one = msbfs(g, [0, 3], levels=True, batch_size=1)  # one source per batch
    assert one.levels.tolist() == r.levels.tolist() and one.harmonic.tolist() == r.harmonic.tolist()


def test_repeated_sources_count_twice():
    g = Graph.from_edges([0, 1], [1, 2])
    r = msbfs(g, [0, 0, 2], levels=True)
    assert r.distance_sum.tolist() == [0, 2, 4]
    assert r.reach.tolist() == [2, 2, 3]
    assert r.levels.tolist() == [[0, 1, 2], [0, 1, 2], [-1, -1, 0]]


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("batch_size", [3, 64, 65, 130, 512])
def test_random_graph_every_batch_size(directed, batch_size):
    import networkx as nx

    G = nx.gnp_random_graph(350, 0.008, seed=3, directed=directed)
    g = Graph.from_networkx(G)
    srcs = np.random.default_rng(1).choice(350, 300)
    L, far, reach, harm = ref(g, srcs)
    r = msbfs(g, srcs, levels=True, batch_size=batch_size)
    assert np.array_equal(r.levels, L)
    assert np.array_equal(r.distance_sum, far.astype(np.uint64)) and np.array_equal(r.reach, reach)
    assert np.allclose(r.harmonic, harm, rtol=1e-12, atol=0)


@pytest.mark.parametrize("spec", ["kron:10", "kron:9:directed", "grid:25x25:drop=0.3", "delaunay:9"])
def test_generators(spec):
    from distgraph.generators import from_spec

    g = from_spec(spec)
    srcs = np.arange(0, g.n, 7)
    L, far, reach, harm = ref(g, srcs)
    r = msbfs(g, srcs)
    assert r.levels is None
    assert np.array_equal(r.distance_sum, far.astype(np.uint64)) and np.array_equal(r.reach, reach)
    assert np.allclose(r.harmonic, harm, rtol=1e-12, atol=0)


def test_real_graph(data_dir):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / "road-NY.gr.xz"))  # long paths: hundreds of levels
    srcs = np.array([0, 1000, 264345, 77777])
    L, far, reach, harm = ref(g, srcs)
    r = msbfs(g, srcs, levels=True)
    assert np.array_equal(r.levels, L) and np.array_equal(r.distance_sum, far.astype(np.uint64))


def test_kernel_directions_agree():
    """Top-down only, bottom-up whenever possible, and the default switch agree bit for bit."""
    from distgraph.backends.cpu.msbfs import msbfs_batch_w
    from distgraph.generators import from_spec

    g = from_spec("kron:9:directed")
    n = g.n
    tp, ti, _ = g.csc()
    srcs = np.arange(0, 200, dtype=np.int64)
    outs = []
    for ratio in (0.0, 1e9, 4.0):
        W = 4
        work = [np.zeros(n * W, np.uint64) for _ in range(3)] + [np.zeros(n, np.uint8), np.zeros(n, np.int64),
                                                                   np.zeros(n, np.int64)]
        acc = [np.zeros(n, np.uint64), np.zeros(n, np.int64), np.zeros(n, np.uint64), np.zeros(n, np.uint64),
               np.zeros(n, np.uint64)]
        lv = np.full((200, n), -1, np.int32)
        msbfs_batch_w(g.indptr, g.indices, tp, ti, srcs, W, False, True, ratio, *work, *acc, lv)
        outs.append((acc, lv))
    for acc, lv in outs[1:]:
        assert np.array_equal(lv, outs[0][1])
        assert all(np.array_equal(a, b) for a, b in zip(acc, outs[0][0]))


def test_errors():
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidArgumentError, match=r"sources must be vertex ids in \[0, 2\); got -1"):
        msbfs(g, [-1])
    with pytest.raises(InvalidArgumentError, match="batch_size must be in"):
        msbfs(g, [0], batch_size=0)
    with pytest.raises(InvalidArgumentError, match="sources must be a 1-D"):
        msbfs(g, [[0]])


@pytest.mark.mpi
def test_mpi_identical_to_one_rank(comm):
    from mpi4py import MPI

    from distgraph.generators import from_spec

    g = from_spec("kron:10:directed")
    srcs = np.arange(0, g.n, 2)
    r = msbfs(g, srcs, levels=True, batch_size=64, comm=comm)
    one = msbfs(g, srcs, levels=True, batch_size=64, comm=MPI.COMM_SELF)
    ok = (np.array_equal(r.levels, one.levels) and np.array_equal(r.distance_sum, one.distance_sum)
          and np.array_equal(r.reach, one.reach) and np.array_equal(r.harmonic, one.harmonic))
    assert all(comm.allgather(ok))


class _ScipyRunner:
    """A stand-in GPU runner: per-vertex sums of its sources' BFSs by scipy, added into
    ``out`` or, with ``defer``, kept until ``drain`` (as GpuMSBFS does)."""

    collective = False

    def __init__(self, g, defers):
        self.A = g.to_scipy()
        self.defers = defers
        self.kept = np.zeros(g.n, np.uint64), np.zeros(g.n, np.int64)
        self.out_sizes = []

    def run(self, src, per_source, out, defer=False):
        self.out_sizes.append(out[0].shape[0])
        d = shortest_path(self.A, unweighted=True, indices=src)
        fin = np.isfinite(d)
        far = np.where(fin, d, 0).sum(axis=0).astype(np.uint64)
        reach = fin.sum(axis=0).astype(np.int64)
        tgt = self.kept if defer else out
        tgt[0][:] += far
        tgt[1][:] += reach

    def drain(self, far, reach, h0, h1, h2):
        far += self.kept[0]
        reach += self.kept[1]


@pytest.mark.parametrize("defers", [False, True])
def test_deferring_runner_skips_per_batch_arrays(tmp_path, defers):
    from distgraph.algorithms.msbfs import run_batches
    from distgraph.runtime.checkpoint import CheckpointStore
    from distgraph.runtime.context import get_context

    rng = np.random.default_rng(4)
    g = Graph.from_edges(rng.integers(0, 300, 900), rng.integers(0, 300, 900), n=300, directed=True)
    tptr, tidx, _ = g.csc()
    ctx = get_context(None, "cpu")
    srcs = np.arange(g.n, dtype=np.int64)
    ref = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=64, ctx=ctx,
                      progress=False)
    r = _ScipyRunner(g, defers)
    got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=64, ctx=ctx,
                      progress=False, runner=r)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    # a runner that promises to leave `out` alone gets empty arrays; any other the full ones
    assert set(r.out_sizes) == ({0} if defers else {g.n})
    # with a checkpoint the sums are wanted per batch: full arrays, nothing deferred
    r = _ScipyRunner(g, defers)
    got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=64, ctx=ctx,
                      progress=False, runner=r, store=CheckpointStore(tmp_path / "ck", {"t": 1}))
    np.testing.assert_array_equal(got[0], ref[0])
    assert set(r.out_sizes) == {g.n} and not r.kept[1].any()
