"""GPU closeness of every vertex with leaves folded (``config.gpu_closeness_fold_leaves``,
``GpuMSBFS.fold_leaves``, ``leaf_folds`` in distgraph/algorithms/closeness.py): a vertex whose only
neighbour is p is not searched; the BFS from p adds its sums too, each level one deeper, in the
per-source flush of the block kernels (``dg_ms_block_flush_counts``), and the host takes the leaf's
own term off.

Farness, reach, harmonic sums and closeness must equal the CPU backend's bit for bit: every kernel
of the block schedule (stage 1 + 2, the pull over sets, the pull over vertices), graphs with hanging
paths, stars, isolated edges, self-loops and repeated arcs, real graphs (power: 24.8% of the
vertices folded, email-Enron 28.6%, minnesota), and road-NY's first batches at the runner level.  Every test checks
that leaves were folded (a spy on ``fold_leaves``), so a broken fold cannot pass by not running.
The host code and the kernels' protocol run in CI with a fake CuPy
(tests/test_msbfs_layout.py: test_closeness_fold_leaves_with_fake_cupy); these need a GPU.
"""

import numpy as np
import pytest

from _msbfs_cases import closeness_same, real_graph as _real, runner, same as _same, sums as _sums, \
    undirected_leafy

KERNELS = {"stage12": ("off", "sets"), "pull_sets": ("on", "sets"), "pull_vertices": ("on", "vertices")}


LEAFY = undirected_leafy()


@pytest.fixture
def folds(monkeypatch):
    """The number of parents each closeness() run folded leaves into (a spy on fold_leaves)."""
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    seen = []
    real = GpuMSBFS.fold_leaves

    def spy(self, rep):
        seen.append(int((np.asarray(rep) >= 0).sum()) if rep is not None else 0)
        return real(self, rep)

    monkeypatch.setattr(GpuMSBFS, "fold_leaves", spy)
    return seen


def _closeness(g, backend, **kw):
    from mpi4py import MPI

    from distgraph.algorithms.closeness import closeness

    return closeness(g, backend=backend, comm=MPI.COMM_SELF, progress=False, **kw)


_CPU = {}


def _cpu(g, key, **kw):
    """The CPU backend's closeness of g (once per graph and convention)."""
    k = (key, tuple(sorted(kw.items())))
    if k not in _CPU:
        _CPU[k] = _closeness(g, "cpu", **kw)
    return _CPU[k]


def _parents(g):
    from distgraph.algorithms.closeness import leaf_folds

    return np.unique(leaf_folds(g.indptr, g.indices)[1]).size


def _set_kernel(monkeypatch, kernel, kappa=None):
    from distgraph.runtime.config import config

    pull, cands = KERNELS[kernel]
    monkeypatch.setattr(config, "gpu_msbfs_groups", "blocks")
    monkeypatch.setattr(config, "gpu_msbfs_pull", pull)
    monkeypatch.setattr(config, "gpu_msbfs_pull_candidates", cands)
    if kappa is not None:
        monkeypatch.setattr(config, "gpu_msbfs_kappa", kappa)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("kappa", [32, 256])
@pytest.mark.parametrize("name", sorted(LEAFY))
def test_fold_equals_cpu(monkeypatch, folds, name, kappa, kernel):
    from distgraph.runtime.config import config

    g = LEAFY[name]
    _set_kernel(monkeypatch, kernel, kappa)
    ref = _cpu(g, name)
    got = _closeness(g, "gpu")
    want = _parents(g)
    assert folds == ([want] if want else []), (folds, want)
    assert closeness_same(ref, got)
    monkeypatch.setattr(config, "gpu_closeness_fold_leaves", False)
    folds.clear()
    assert closeness_same(ref, _closeness(g, "gpu")) and folds == []


@pytest.mark.gpu
@pytest.mark.parametrize("convention", ["harmonic", "networkit", "igraph"])
def test_fold_conventions(monkeypatch, folds, convention):
    g = LEAFY["grid_hanging"]
    _set_kernel(monkeypatch, "pull_vertices")
    assert closeness_same(_cpu(g, "grid_hanging", convention=convention),
                          _closeness(g, "gpu", convention=convention))
    assert folds == [_parents(g)]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("name", ["power.mtx.gz", "email-Enron.mtx.gz", "minnesota.mtx.gz"])
def test_fold_real_graphs(data_dir, monkeypatch, folds, name, kernel):
    # every vertex, reorder="auto" (ids mapped through the reordering both ways)
    g = _real(data_dir, name)
    _set_kernel(monkeypatch, kernel)
    assert closeness_same(_cpu(g, name), _closeness(g, "gpu"))
    assert folds == [_parents(g)] and folds[0] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_fold_road_ny_batches(data_dir, cands):
    # road-NY (RCM order, ~550 levels per batch) at the runner level: 3 batches of ball sources,
    # folding the leaves of those sources; each source's own sums and, after _unfold_leaves, each
    # folded leaf's equal the CPU backend's per-source sums of that vertex
    from distgraph.algorithms.closeness import _unfold_leaves, leaf_folds
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, "road-NY.gr.xz")
    tptr, tidx, _ = g.csc()
    leaves, parents, rep = leaf_folds(g.indptr, g.indices)
    searched = np.ones(g.n, np.bool_)
    searched[leaves] = False
    srcs = ball_sources(g.indptr, g.indices, tptr, tidx, np.flatnonzero(searched).astype(np.int64), 256)[:768]
    mine = np.isin(parents, srcs)
    assert mine.sum() > 50
    rep_here = np.where(np.isin(np.arange(g.n), srcs), rep, -1)
    r = runner(g, groups="blocks", kappa=256, reorder="auto", symmetric=True, pull="on", pull_candidates=cands,
               block_threads=1024)
    r.fold_leaves(rep_here)
    got = _sums(g, srcs, False, r)
    far, reach, h0, h1, h2 = (a.copy() for a in got)
    _unfold_leaves(far, reach, h0, h1, h2, leaves[mine], parents[mine], rep_here)
    want_v = np.concatenate([srcs, leaves[mine]])
    ref = _sums(g, want_v, True)
    assert _same([a[want_v] for a in (far, reach, h0, h1, h2)], ref)
    # nothing added elsewhere
    other = np.setdiff1d(np.arange(g.n), want_v)
    assert not far[other].any() and not reach[other].any()
