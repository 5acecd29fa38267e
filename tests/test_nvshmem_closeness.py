"""GPU closeness in partitioned mode: the BVSS split over PEs, frontier words exchanged
with NVSHMEM puts (several PEs share the one test GPU in limited MPG: correctness only).

Run on 1, 2 and 4 PEs:
    mpirun -n 4 python tests/mpi_pytest.py --with-mpi tests/test_nvshmem_closeness.py
Sums and closeness must equal the CPU backend's exactly, and replicated mode (batches
dealt to ranks; block and grid schedules) must agree with partitioned mode (every rank runs
every batch).
Assertions are made on gathered results, on every rank, so no rank waits alone.
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph import generators as gen
from distgraph.graph import Graph

pytestmark = [pytest.mark.nvshmem, pytest.mark.mpi]


@pytest.fixture(scope="module")
def gpu_ctx():
    pytest.importorskip("nvshmem.core")
    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    ctx = get_context(MPI.COMM_WORLD, "gpu")
    pg = get_pgas(MPI.COMM_WORLD, "gpu")
    yield ctx
    pg.finalize()


def _graphs():
    rng = np.random.default_rng(8)
    n = 611
    s, d = rng.integers(0, n, 2000), rng.integers(0, n, 2000)
    return {"kron9": gen.kronecker(9, 8, seed=2), "kron8_dir": gen.kronecker(8, 6, seed=3, directed=True),
            "grid": gen.grid(23, 19),
            "random_dir_disconnected": Graph.from_edges(s[s < 500], d[s < 500], n=n, directed=True)}


def _all(comm, ok):
    return all(comm.allgather(bool(ok)))


def _sums(g, sources, per_source, ctx, runner, batch_size=64):
    from distgraph.algorithms.msbfs import run_batches

    tptr, tidx, _ = g.csc()
    return run_batches(g.indptr, g.indices, tptr, tidx, np.asarray(sources, np.int64), per_source=per_source,
                       batch_size=batch_size, ctx=ctx, progress=False, runner=runner)[:5]


def _same(a, b):
    return all(np.array_equal(np.asarray(x).astype(np.uint64), np.asarray(y).astype(np.uint64)) for x, y in zip(a, b))


@pytest.mark.parametrize("name", sorted(_graphs()))
@pytest.mark.parametrize("kappa", [32, 256])
def test_partitioned_equals_cpu_and_replicated(gpu_ctx, name, kappa):
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    g = _graphs()[name]
    tptr, tidx, _ = g.csc()
    cpu = get_context(comm, "cpu")
    ok = True
    for per_source in (False, True):
        srcs = np.arange(g.n, dtype=np.int64) if not per_source else np.arange(0, g.n, 7, dtype=np.int64)
        ref = _sums(g, srcs, per_source, cpu, None)
        part = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=gpu_ctx, kappa=kappa, mode="partitioned",
                        announce=False, cache_dir=False)
        ok &= part.collective and part.info["parts"] == comm.Get_size()
        got = _sums(g, srcs, per_source, gpu_ctx, part)
        part.close()
        ok &= _same(got, ref)
        rep = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=gpu_ctx, kappa=kappa, mode="replicated",
                       announce=False, cache_dir=False)
        ok &= _same(_sums(g, srcs, per_source, gpu_ctx, rep), ref)
    assert _all(comm, ok)


@pytest.mark.parametrize("convention", ["networkx", "igraph", "harmonic"])
def test_closeness_partitioned_mode(gpu_ctx, convention):
    from distgraph.algorithms.closeness import closeness
    from distgraph.runtime.config import config

    comm = MPI.COMM_WORLD
    g = _graphs()["kron8_dir"]
    a = closeness(g, convention=convention, backend="cpu", comm=comm, progress=False)
    old = config.gpu_msbfs_mode
    config.gpu_msbfs_mode = "partitioned"
    try:
        b = closeness(g, convention=convention, backend="gpu", comm=comm, progress=False)
    finally:
        config.gpu_msbfs_mode = old
    ok = np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
    ok &= np.array_equal(a.closeness, b.closeness, equal_nan=True)
    assert _all(comm, ok)


def test_real_graph_partitioned(gpu_ctx, data_dir):
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.graph.readers import read_graph
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    g = read_graph(str(data_dir / "power.mtx.gz"))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    tptr, tidx, _ = g.csc()
    srcs = np.arange(0, g.n, 13, dtype=np.int64)
    ref = _sums(g, srcs, False, get_context(comm, "cpu"), None, batch_size=128)
    r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=gpu_ctx, kappa=128, mode="partitioned", announce=False,
                 cache_dir=False)
    got = _sums(g, srcs, False, gpu_ctx, r, batch_size=128)
    r.close()
    assert _all(comm, _same(got, ref))


@pytest.mark.parametrize("name", ["kron9", "grid", "kron8_dir"])
@pytest.mark.parametrize("groups", ["blocks", 2])
def test_closeness_replicated_schedules_over_ranks(gpu_ctx, name, groups):
    # replicated mode, batches dealt to ranks: the block schedule (symmetric sums on the
    # undirected graphs: each rank adds its sources' own sums, the reduction completes them)
    # and the grid schedule equal the CPU backend
    from distgraph.algorithms.closeness import closeness
    from distgraph.runtime.config import config

    comm = MPI.COMM_WORLD
    g = _graphs()[name]
    a = closeness(g, backend="cpu", comm=comm, progress=False, batch_size=64)
    old = config.gpu_msbfs_groups
    config.gpu_msbfs_groups = groups
    try:
        b = closeness(g, backend="gpu", comm=comm, progress=False, batch_size=64)
    finally:
        config.gpu_msbfs_groups = old
    ok = np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
    ok &= np.array_equal(a.harmonic, b.harmonic) and np.array_equal(a.closeness, b.closeness, equal_nan=True)
    assert _all(comm, ok)
