"""Compact ("ball") batches of the CPU multi-source BFS (DISTGRAPH_MSBFS_BATCH_ORDER): a
permutation of the sources whose groups are compact, chosen on graphs that are not
scale-free, the same sums as the degree order on 1, 2 and 4 ranks, part of a checkpoint's
identity."""

import numpy as np
import pytest

from distgraph.algorithms import msbfs as msbfs_mod
from distgraph.algorithms.closeness import closeness
from distgraph.algorithms.msbfs import cpu_batch_order, msbfs
from distgraph.backends.cpu.msbfs import ball_order
from distgraph.errors import CheckpointError, InvalidArgumentError
from distgraph.generators import from_spec
from distgraph.runtime.config import config, reload_config


@pytest.fixture
def order(monkeypatch):
    def set_(how):
        monkeypatch.setattr(config, "msbfs_batch_order", how)

    return set_


def _diameters(order_, cols, batch):
    """Mean hop diameter (L1: the grid's shortest paths) of consecutive groups of ``batch``
    grid vertices: how many levels apart a group's BFSs reach a vertex, at most."""
    r, c = order_ // cols, order_ % cols
    return np.mean([max(np.ptp(r[i:i + batch] + c[i:i + batch]), np.ptp(r[i:i + batch] - c[i:i + batch]))
                    for i in range(0, order_.size - batch + 1, batch)])


def test_ball_order_is_a_compact_permutation():
    g = from_spec("grid:64x64")
    src = np.arange(0, g.n, 3)  # some sources only
    is_src = np.zeros(g.n, np.bool_)
    is_src[src] = True
    ip, ix = np.asarray(g.indptr, np.int64), np.asarray(g.indices)
    o = ball_order(ip, ix, ip, ix, is_src, 64, 16 * 64)
    assert np.array_equal(np.sort(o), src)
    # groups of 64 sources in about 192 cells: mean diameter 32 (balls, some groups spanning
    # two of them), against strips of 3 x 64 cells (diameter 64) for consecutive ids
    assert _diameters(o, 64, 64) < 0.6 * _diameters(src, 64, 64)
    # a ball too small to fill a group (cap) goes on from the next seed: still a permutation
    o2 = ball_order(ip, ix, ip, ix, is_src, 64, 8)
    assert np.array_equal(np.sort(o2), src)
    assert ball_order(ip, ix, ip, ix, np.zeros(g.n, np.bool_), 64, 64).size == 0


def test_choice(order):
    grid, kron, urand = from_spec("grid:20x20"), from_spec("kron:10"), from_spec("urand:12:ef=4")
    everyone = np.arange(grid.n)
    assert cpu_batch_order(grid.indptr, grid.indptr, everyone, per_source=False, hidx=grid.indices) == "ball"
    assert cpu_batch_order(kron.indptr, kron.indptr, np.arange(kron.n), per_source=False,
                           hidx=kron.indices) == "degree"
    # not scale-free but of low diameter (BFS depth about 7 < 2 log2 n): degree order
    assert cpu_batch_order(urand.indptr, urand.indptr, np.arange(urand.n), per_source=False,
                           hidx=urand.indices) == "degree"
    assert cpu_batch_order(grid.indptr, grid.indptr, everyone, per_source=True) == "degree"
    assert cpu_batch_order(grid.indptr, grid.indptr, everyone, per_source=False, want_levels=True) == "degree"
    assert cpu_batch_order(grid.indptr, grid.indptr, np.array([1, 2, 2]), per_source=False) == "degree"
    order("degree")
    assert cpu_batch_order(grid.indptr, grid.indptr, everyone, per_source=False, hidx=grid.indices) == "degree"
    order("ball")
    assert cpu_batch_order(kron.indptr, kron.indptr, np.arange(kron.n), per_source=False) == "ball"
    with pytest.raises(InvalidArgumentError, match="DISTGRAPH_MSBFS_BATCH_ORDER must be auto, degree or ball"):
        reload_config({"DISTGRAPH_MSBFS_BATCH_ORDER": "random"})


def test_ball_batches_are_used(order, monkeypatch):
    """With "auto" on a grid the driver hands _run_batches the ball order, not sorted ids."""
    seen = []
    real = msbfs_mod._run_batches
    monkeypatch.setattr(msbfs_mod, "_run_batches", lambda *a, **k: seen.append(np.array(a[4])) or real(*a, **k))
    g = from_spec("grid:30x30")
    closeness(g, backend="cpu", batch_size=64, progress=False)
    assert seen and not np.array_equal(seen[0], np.sort(seen[0]))
    seen.clear()
    order("degree")
    closeness(g, backend="cpu", batch_size=64, progress=False)
    assert np.array_equal(seen[0], np.sort(seen[0]))


def _same(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True)
               for k in ("farness", "reach", "harmonic", "closeness"))


@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["grid:25x31:drop=0.2", "rgg:10", "urand:9:directed", "grid:7x9"])
def test_same_sums_as_degree_order(comm, spec, order):
    """Any grouping gives the same exact sums, on any number of ranks (disconnected and
    directed graphs included); msbfs() too."""
    g = from_spec(spec)
    order("degree")
    ref = closeness(g, backend="cpu", batch_size=64, comm=comm, progress=False)
    mref = msbfs(g, np.arange(0, g.n, 2), backend="cpu", comm=comm, batch_size=64)
    order("ball")
    got = closeness(g, backend="cpu", batch_size=64, comm=comm, progress=False)
    mgot = msbfs(g, np.arange(0, g.n, 2), backend="cpu", comm=comm, batch_size=64)
    ok = _same(ref, got) and all(np.array_equal(getattr(mref, k), getattr(mgot, k))
                                 for k in ("distance_sum", "reach", "harmonic"))
    assert all(comm.allgather(ok))


def test_checkpoint_identity_holds_the_order(tmp_path, order):
    """A checkpoint's batches are numbered in its grouping: a run grouped another way is
    refused, saying how to resume; the same grouping resumes bit-identically."""
    from mpi4py import MPI

    g = from_spec("grid:20x20")
    ck = str(tmp_path / "ck")
    order("degree")
    msbfs_mod._BATCH_HOOK = lambda b: (_ for _ in ()).throw(RuntimeError("killed"))
    try:
        with pytest.raises(RuntimeError, match="killed"):
            closeness(g, checkpoint=ck, checkpoint_interval=0, batch_size=64, comm=MPI.COMM_SELF, progress=False)
    finally:
        msbfs_mod._BATCH_HOOK = None
    order("auto")  # ball on a grid
    with pytest.raises(CheckpointError, match="DISTGRAPH_MSBFS_BATCH_ORDER=degree"):
        closeness(g, checkpoint=ck, resume=True, batch_size=64, comm=MPI.COMM_SELF, progress=False)
    order("degree")
    got = closeness(g, checkpoint=ck, resume=True, batch_size=64, comm=MPI.COMM_SELF, progress=False)
    assert _same(got, closeness(g, backend="cpu", batch_size=64, comm=MPI.COMM_SELF, progress=False))


def test_gpu_runner_gets_ball_groups_by_the_cpu_rule(monkeypatch, order):
    """GPU runs group the sources as the CPU backend does, whatever the schedule: "auto" gives
    compact groups of the runner's width on a high-diameter graph that is not scale-free (a
    grid), input order on a scale-free one (kron) and with "degree"; "ball" always. The sums
    (here a CPU stand-in runner) are the same. Host code only, no GPU."""
    from mpi4py import MPI

    import distgraph.backends.gpu.closeness as gpu_closeness
    import distgraph.runtime.context as context
    from distgraph.algorithms.msbfs import run_batches

    seen = []

    class CpuRunner:
        collective = False
        kappa = 64
        schedule = "grid"

        def __init__(self, hptr, hidx, tptr, tidx, **kw):
            self.csr = (hptr, hidx, tptr, tidx)

        def run(self, sources, per_source, out, defer=False):
            seen.append(np.array(sources))
            cpu = context.Context(MPI.COMM_SELF, 0, 1, 0, 1, "cpu", 0)
            r = run_batches(*self.csr, np.asarray(sources, np.int64), per_source=per_source, batch_size=512,
                            ctx=cpu, progress=False)
            for a, b in zip(out, r[:5]):
                a += np.asarray(b).astype(a.dtype)

        def close(self):
            pass

    monkeypatch.setattr(context, "get_context",
                        lambda comm=None, backend=None: context.Context(MPI.COMM_SELF, 0, 1, 0, 1,
                                                                        backend or "gpu", 0))
    monkeypatch.setattr(gpu_closeness, "make_runner", lambda *a, **k: CpuRunner(*a, **k))
    g = from_spec("grid:64x64")
    ref = closeness(g, backend="cpu", comm=MPI.COMM_SELF, progress=False)
    for how, schedule in (("auto", "grid"), ("auto", "blocks"), ("ball", "grid")):
        seen.clear()
        order(how)
        CpuRunner.schedule = schedule
        got = closeness(g, backend="gpu", batch_size=128, comm=MPI.COMM_SELF, progress=False)
        assert _same(ref, got)
        given = np.concatenate(seen)
        assert np.array_equal(np.sort(given), np.arange(g.n)) and not np.array_equal(given, np.arange(g.n))
        assert _diameters(given, 64, 64) < 0.7 * _diameters(np.arange(g.n), 64, 64), (how, schedule)
    seen.clear()
    order("degree")  # asked: input order
    closeness(g, backend="gpu", batch_size=128, comm=MPI.COMM_SELF, progress=False)
    given = np.concatenate(seen)
    assert np.array_equal(given, np.sort(given))
    k = from_spec("kron:10")  # scale-free: "auto" keeps the input order on either schedule
    order("auto")
    for schedule in ("grid", "blocks"):
        seen.clear()
        CpuRunner.schedule = schedule
        assert _same(closeness(k, backend="cpu", comm=MPI.COMM_SELF, progress=False),
                     closeness(k, backend="gpu", batch_size=128, comm=MPI.COMM_SELF, progress=False))
        given = np.concatenate(seen)
        assert np.array_equal(given, np.sort(given)), schedule