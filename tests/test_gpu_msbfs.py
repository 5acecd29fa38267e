"""GPU multi-source BFS (BLEST Alg. 5, kernels/msbfs.cu) and closeness on the GPU.

The sums of the GPU runner (farness, reach, harmonic limbs) must equal the CPU backend's
exactly, through the shared driver ``run_batches``: every kappa, the persistent
(replicated) kernel and the stepwise kernels, bottom-up never / by the test / at every
level, per vertex and per source, on literal, generated (vertex counts not multiples of
8, disconnected, directed) and real graphs.  Then ``closeness(..., backend="gpu")`` equals
``backend="cpu"`` for every convention, and the CLI runs with ``--backend gpu``.
Skipped without a GPU.
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.graph import Graph

from _msbfs_cases import closeness_pair, closeness_same, graphs, runner, same as _same, sums as _sums

pytestmark = pytest.mark.gpu


def _runner(g, **kw):
    if kw.get("mode") == "blocks":  # the block schedule of replicated mode (the default on small graphs)
        kw["mode"] = "replicated"
        kw.setdefault("groups", "blocks")
    elif kw.get("mode") == "replicated":  # the grid-wide persistent kernel
        kw.setdefault("groups", 1)
    return runner(g, **kw)


GRAPHS = graphs()


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("mode", ["replicated", "blocks", "stepwise"])
@pytest.mark.parametrize("kappa", [32, 64, 128, 256])
def test_sums_equal_cpu_per_vertex(name, mode, kappa):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    ref = _sums(g, srcs, False)
    got = _sums(g, srcs, False, _runner(g, kappa=kappa, mode=mode, reorder="none"))
    assert _same(got, ref)


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("reorder", ["auto", "rcm", "jaccard"])
def test_sums_equal_cpu_with_reordering(name, reorder):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    ref = _sums(g, srcs, False)
    got = _sums(g, srcs, False, _runner(g, reorder=reorder, window=256))
    assert _same(got, ref)


@pytest.mark.parametrize("name", ["kron10", "kron9_dir", "grid_37x29", "random_dir_disconnected"])
@pytest.mark.parametrize("bu", [0, 1, 4, 2**30])
@pytest.mark.parametrize("mode", ["replicated", "stepwise"])
def test_bottom_up_switch(name, bu, mode):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    ref = _sums(g, srcs, False)
    r = _runner(g, kappa=128, mode=mode, bu_ratio=bu, reorder="none")
    got = _sums(g, srcs, False, r)
    assert _same(got, ref)
    if bu == 0:
        assert r.info["bottom_up_levels"] == 0
    if bu == 2**30 and name != "random_dir_disconnected":
        assert r.info["bottom_up_levels"] > 0


@pytest.mark.parametrize("name", ["kron10", "kron9_dir", "grid_37x29", "random_dir_disconnected", "path4"])
@pytest.mark.parametrize("groups", [1, 2, 3])
def test_concurrent_groups(name, groups):
    # several kappa-source launches in one persistent kernel, each on a part of the grid with
    # its own state and barrier; per-vertex sums shared (atomics), per-source sums apart
    g = GRAPHS[name]
    rng = np.random.default_rng(4)
    srcs = np.sort(rng.choice(g.n, size=min(g.n, 700), replace=False)).astype(np.int64)
    r = _runner(g, kappa=64, groups=groups, bu_ratio=1, reorder="none")
    assert r.groups == groups and r.grid % groups == 0
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    assert _same(_sums(g, srcs[:150], True, r, batch_size=150), _sums(g, srcs[:150], True, batch_size=150))


def test_auto_groups():
    from distgraph.backends.gpu.msbfs import GROUPS_ARCS, auto_groups

    assert auto_groups(1000) == 4 and auto_groups(2 * GROUPS_ARCS) == 2 and auto_groups(10**9) == 1
    assert _runner(GRAPHS["kron10"], groups="auto").groups == 1  # small: the block schedule
    assert _runner(GRAPHS["kron10"], groups="auto").schedule == "blocks"
    assert _runner(GRAPHS["kron10"], groups=4).groups == 4
    assert _runner(GRAPHS["kron10"], mode="stepwise").groups == 1


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("mode", ["replicated", "blocks", "stepwise"])
def test_sums_equal_cpu_per_source(name, mode):
    g = GRAPHS[name]
    rng = np.random.default_rng(1)
    srcs = rng.integers(0, g.n, 300).astype(np.int64)  # repeats, > one kappa, partial last launch
    ref = _sums(g, srcs, True, batch_size=100)
    got = _sums(g, srcs, True, _runner(g, kappa=64, mode=mode), batch_size=100)
    assert _same(got, ref)


@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "power.mtx.gz", "wiki-Vote.txt.gz", "email-Enron.mtx.gz",
                                  "cond-mat-2005.mtx.gz"])
def test_real_graphs(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    rng = np.random.default_rng(2)
    srcs = np.sort(rng.choice(g.n, size=min(g.n, 700), replace=False)).astype(np.int64)
    ref = _sums(g, srcs, False)
    got = _sums(g, srcs, False, _runner(g))
    assert _same(got, ref)


@pytest.mark.parametrize("convention", ["networkx", "networkit", "igraph", "harmonic"])
@pytest.mark.parametrize("name", ["kron9_dir", "random_dir_disconnected", "grid_37x29"])
def test_closeness_gpu_equals_cpu(name, convention):
    g = GRAPHS[name]
    assert closeness_same(*closeness_pair(g, convention=convention))
    a, b = closeness_pair(g, vertices=[0, 5, 5, g.n - 1], convention=convention)
    assert np.array_equal(a.closeness, b.closeness, equal_nan=True) and np.array_equal(a.farness, b.farness)


def test_closeness_gpu_checkpoint_resume_bit_identical(tmp_path):
    from distgraph.algorithms import msbfs as drv
    from distgraph.algorithms.closeness import closeness

    g = GRAPHS["kron10"]
    ref = closeness(g, backend="cpu", comm=MPI.COMM_SELF, batch_size=64, progress=False)

    def boom(b):
        if b == 3:
            raise RuntimeError("killed")

    drv._BATCH_HOOK = boom
    try:
        with pytest.raises(RuntimeError):
            closeness(g, backend="gpu", comm=MPI.COMM_SELF, batch_size=64, checkpoint=tmp_path / "ck", progress=False)
    finally:
        drv._BATCH_HOOK = None
    r = closeness(g, backend="gpu", comm=MPI.COMM_SELF, batch_size=64, checkpoint=tmp_path / "ck", resume=True,
                  progress=False)
    assert np.array_equal(r.farness, ref.farness) and np.array_equal(r.harmonic, ref.harmonic)


def test_cli_backend_gpu(tmp_path, capsys):
    # in-process (a child python would need an MPI singleton start, which Open MPI on
    # the test machine cannot do from a cleaned environment)
    import json

    from distgraph.cli import main

    out = tmp_path / "c.npy"
    assert main(["closeness", "kron:9", "--backend", "gpu", "--json", "--verify", "--output", str(out),
                 "--no-progress"]) == 0
    info = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert info["backend"] == "gpu" and info["verified"]
    assert main(["closeness", "kron:9", "--backend", "cpu", "--output", str(tmp_path / "d.npy"), "--no-progress"]) == 0
    assert np.array_equal(np.load(out), np.load(tmp_path / "d.npy"))


def test_bad_arguments():
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    with pytest.raises(InvalidArgumentError, match="kappa"):
        _runner(g, kappa=48)
    with pytest.raises(InvalidArgumentError, match="mode"):
        _runner(g, mode="sideways")
    with pytest.raises(InvalidArgumentError, match="groups"):
        _runner(g, groups=0)
    with pytest.raises(InvalidArgumentError, match="tc_ratio"):
        _runner(g, tc_ratio=-1)


def test_msbfs_api_backend_gpu():
    from distgraph.algorithms.msbfs import msbfs
    from distgraph.errors import BackendUnavailableError

    g = GRAPHS["kron9_dir"]
    srcs = [0, 3, 3, 100, g.n - 1]
    a = msbfs(g, srcs, backend="cpu", comm=MPI.COMM_SELF, progress=False)
    b = msbfs(g, srcs, backend="gpu", comm=MPI.COMM_SELF, progress=False)
    assert np.array_equal(a.distance_sum, b.distance_sum) and np.array_equal(a.reach, b.reach)
    assert np.array_equal(a.harmonic, b.harmonic)
    with pytest.raises(BackendUnavailableError, match="levels"):
        msbfs(g, srcs, backend="gpu", comm=MPI.COMM_SELF, levels=True)
