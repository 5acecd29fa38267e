"""GPU multi-source BFS, block schedule (``groups="blocks"``: one thread block per
kappa-source batch, ``distgraph_msbfs_blocks`` in kernels/msbfs.cu; runs too small for the
blocks go to a grid-schedule companion).

The sums must equal the CPU backend's exactly: every kappa; one block running every batch
in turn (``slots=1``: the slot must be left clean after each batch), a few blocks, all
resident blocks; per vertex (through the driver's deferred path, where sources are held
until drain, and directly per batch), per source, and the symmetric mode (per-source sums
added at the source, only the total over all sources equals the per-vertex sums) on
literal, generated (n not a multiple of 8, disconnected, directed, isolated vertices) and
real graphs; ``closeness(backend="gpu")`` picks the symmetric mode on undirected graphs
and equals the CPU backend.  Skipped without a GPU, except the pure-Python checks at the end.
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.graph import Graph

from _msbfs_cases import closeness_pair, closeness_same, ctx as _ctx, graphs, runner, same as _same, sums as _sums


def _runner(g, **kw):
    kw.setdefault("groups", "blocks")
    kw.setdefault("reorder", "none")
    return runner(g, **kw)


GRAPHS = graphs(undirected_disconnected=True)
UNDIRECTED = ["path4", "kron10", "grid_37x29", "undirected_disconnected"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [32, 64, 128, 256])
@pytest.mark.parametrize("slots", [1, 3, None])
def test_blocks_per_vertex_equal_cpu(name, kappa, slots):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    r = _runner(g, kappa=kappa, slots=slots)
    assert r.schedule == "blocks" and not r.symmetric
    assert slots is None or r.slots <= slots
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    assert r.info["bottom_up_levels"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [32, 256])
@pytest.mark.parametrize("slots", [1, None])
@pytest.mark.parametrize("opts", [(True, False), (False, True), (True, True)], ids=["sdb", "pf", "sdb+pf"])
def test_blocks_options(name, kappa, slots, opts):
    # dirty bits in shared memory, software-pipelined stage 1: per vertex, per source and
    # symmetric sums as before
    g = GRAPHS[name]
    sdb, pf = opts
    r = _runner(g, kappa=kappa, slots=slots, shared_dbits=sdb, prefetch=pf, symmetric=not g.directed)
    assert r.shared_dbits == sdb and r.prefetch == pf
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    rng = np.random.default_rng(6)
    some = rng.integers(0, g.n, 200).astype(np.int64)
    assert _same(_sums(g, some, True, r, batch_size=100), _sums(g, some, True, batch_size=100))
    if sdb and pf:  # and with 4 blocks of 256 threads per SM (64 registers)
        r = _runner(g, kappa=kappa, slots=slots, shared_dbits=sdb, prefetch=pf, min_blocks=4, block_threads=256)
        assert _same(_sums(g, some, False, r), _sums(g, some, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["kron10", "kron9_dir", "grid_37x29", "random_dir_disconnected"])
def test_blocks_each_batch_and_reuse(name):
    # per batch (no deferring): each run() adds exactly its sources' sums; the runner (and
    # its slots) reused across runs with repeated sources and a partial last batch
    g = GRAPHS[name]
    rng = np.random.default_rng(5)
    r = _runner(g, kappa=64, slots=2)
    for k in (1, 64, 200, 300):
        srcs = rng.integers(0, g.n, k).astype(np.int64)
        out = tuple(np.zeros(g.n, t) for t in (np.uint64, np.int64, np.uint64, np.uint64, np.uint64))
        r.run(srcs, False, out)
        from distgraph.backends.cpu.bits import normalize_limbs

        normalize_limbs(out[2], out[3], out[4])
        assert _same(out, _sums(g, srcs, False)), k


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["kron10", "kron9_dir", "grid_37x29", "undirected_disconnected"])
def test_blocks_small_runs_on_the_grid(name):
    # runs wanted back at once (no deferring) with fewer batches than half the blocks go to
    # the grid-schedule companion: per vertex, per source, and symmetric (each BFS's own sums
    # added at its source; the total over all sources is the per-vertex sum)
    g = GRAPHS[name]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    for sym in (False, True) if not g.directed else (False,):
        r = _runner(g, kappa=64, symmetric=sym)
        assert r.slots >= 4
        tot = tuple(np.zeros(g.n, t) for t in (np.uint64, np.int64, np.uint64, np.uint64, np.uint64))
        for lo in range(0, srcs.size, 100):
            r.run(srcs[lo:lo + 100], False, tot)
        from distgraph.backends.cpu.bits import normalize_limbs

        normalize_limbs(tot[2], tot[3], tot[4])
        assert r.info["grid_runs"] == -(-srcs.size // 100)
        assert _same(tot, _sums(g, srcs, False)), sym
        some = srcs[::3][:150]
        assert _same(_sums(g, some, True, r, batch_size=100), _sums(g, some, True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [32, 256])
def test_blocks_per_source_equal_cpu(name, kappa):
    g = GRAPHS[name]
    rng = np.random.default_rng(1)
    srcs = rng.integers(0, g.n, 300).astype(np.int64)  # repeats, > one kappa, partial last batch
    r = _runner(g, kappa=kappa, slots=3)
    assert _same(_sums(g, srcs, True, r, batch_size=100), _sums(g, srcs, True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", UNDIRECTED)
@pytest.mark.parametrize("kappa", [32, 128, 256])
@pytest.mark.parametrize("slots", [1, None])
def test_blocks_symmetric_total_equals_cpu(name, kappa, slots):
    # per-source sums at the sources: the total over all sources with arcs is the per-vertex sum
    g = GRAPHS[name]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    r = _runner(g, kappa=kappa, slots=slots, symmetric=True)
    assert r.symmetric
    assert _same(_sums(g, srcs, False, r, batch_size=96), _sums(g, srcs, False))
    # per source (the closeness of given vertices) is unaffected by the flag
    assert _same(_sums(g, srcs[:150], True, r, batch_size=100), _sums(g, srcs[:150], True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["email-Enron.mtx.gz", "cond-mat-2005.mtx.gz", "bitcoin-otc.csv.gz", "power.mtx.gz"])
def test_blocks_real_graphs(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    rng = np.random.default_rng(2)
    srcs = np.sort(rng.choice(g.n, size=min(g.n, 700), replace=False)).astype(np.int64)
    assert _same(_sums(g, srcs, False, _runner(g, kappa=64, reorder="auto")), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["power.mtx.gz", "email-Enron.mtx.gz"])
def test_blocks_real_graph_symmetric_all_sources(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    r = _runner(g, kappa=128, reorder="auto", symmetric=True)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["kron9_dir", "grid_37x29", "undirected_disconnected", "path4"])
@pytest.mark.parametrize("convention", ["networkx", "harmonic"])
def test_closeness_blocks_equals_cpu(name, convention, tmp_path):
    from distgraph.algorithms.closeness import closeness
    from distgraph.backends.gpu.closeness import make_runner

    g = GRAPHS[name]
    tptr, tidx, _ = g.csc()
    r = make_runner(g.indptr, g.indices, tptr, tidx, ctx=_ctx(), all_sources=True)
    assert r.schedule == "blocks" and r.symmetric == (not g.directed)
    assert not make_runner(g.indptr, g.indices, tptr, tidx, ctx=_ctx()).symmetric
    a, b = closeness_pair(g, convention=convention)
    assert closeness_same(a, b)
    # with a checkpoint (one run() per batch of 64, no deferring)
    c = closeness(g, convention=convention, backend="gpu", comm=MPI.COMM_SELF, progress=False, batch_size=64,
                  checkpoint=tmp_path / "ck")
    assert np.array_equal(a.farness, c.farness) and np.array_equal(a.harmonic, c.harmonic)


@pytest.mark.gpu
def test_blocks_bad_arguments():
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    with pytest.raises(InvalidArgumentError, match="slots"):
        _runner(g, slots=0)
    with pytest.raises(InvalidArgumentError, match="groups"):
        _runner(g, groups="block")


def test_auto_schedule():
    from distgraph.backends.gpu.msbfs import BLOCKS_ARCS, auto_schedule

    assert auto_schedule(1000) == "blocks" and auto_schedule(BLOCKS_ARCS) == "blocks"
    assert auto_schedule(BLOCKS_ARCS + 1) == 1


def test_block_plan_counts_every_slot():
    from distgraph.backends.gpu.msbfs import msbfs_plan
    from distgraph.formats.bvss import build_bvss

    g = GRAPHS["kron10"]
    b = build_bvss(g)
    one = msbfs_plan(g.n, b, 256, bottom_up=False, slots=1).total
    many = msbfs_plan(g.n, b, 256, bottom_up=False, slots=100).total
    state = 3 * 4 * 8 * 8 * ((g.n + 7) // 8)   # F, Vc, Vn of one slot
    assert many - one >= 99 * state
