"""closeness(backend="gpu") and the distance-profile wave (``config.gpu_closeness_wave``): which
graphs "auto" gives it, and the runner protocol (``WaveRunner``: batches held and run in one launch
at drain, per-source sums at the sources) through the closeness driver, with a stand-in for
``GpuWave`` that adds the CPU backend's per-source sums (the wave kernel itself is tested on the
GPU: tests/test_gpu_msbfs_wave.py). No GPU needed."""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.graph import Graph


def _path(k):
    return Graph.from_edges(np.arange(k - 1), np.arange(1, k), directed=False)


def _grid(r, c):
    v = np.arange(r * c).reshape(r, c)
    src = np.r_[v[:, :-1].ravel(), v[:-1, :].ravel()]
    dst = np.r_[v[:, 1:].ravel(), v[1:, :].ravel()]
    return Graph.from_edges(src, dst, directed=False)


def test_wave_pays_on_high_diameter_graphs_only():
    from distgraph.backends.gpu.msbfs_wave import WAVE_MIN_DEPTH, wave_pays
    from distgraph.generators import kronecker

    g = _grid(8, 300)   # a BFS from a largest-degree vertex (an inner one, row 1) goes ~300 levels deep
    assert wave_pays(g.indptr, g.indices, memory=False)
    short = _grid(8, WAVE_MIN_DEPTH // 2)
    assert not wave_pays(short.indptr, short.indices, memory=False)
    k = kronecker(10, 8, seed=1, directed=False)   # heavy-tailed degrees, low diameter
    assert not wave_pays(k.indptr, k.indices, memory=False)
    e = Graph.from_edges([], [], n=5, directed=False)
    assert not wave_pays(e.indptr, e.indices, memory=False)


class _FakeWave:
    """GpuWave's interface; run() adds the CPU backend's per-source sums at the sources and, for
    a source p with a folded leaf l = rep[p], the leaf's sums as the kernel adds them at l: every
    distance from p one more (p itself at 1), the leaf's own term included."""
    calls = []
    aside = []

    def __init__(self, hptr, hidx, **kw):
        self.hptr, self.hidx = np.asarray(hptr, np.int64), np.asarray(hidx)
        self.n = self.hptr.size - 1
        self.info = {"batches": 0}
        self.rep = None

    def fold_leaves(self, rep):
        self.rep = None if rep is None else np.asarray(rep, np.int64)

    def run(self, sources, out, aside=None):
        from distgraph.algorithms.msbfs import run_batches
        from distgraph.backends.gpu.msbfs import add_sums
        from distgraph.runtime.context import Context

        src = np.asarray(sources, np.int64)
        _FakeWave.calls.append(src.size)
        _FakeWave.aside.append(0 if aside is None else int(np.sum(aside)))
        ctx = Context(MPI.COMM_SELF, 0, 1, 0, 1, "cpu", 0)
        far, reach, h0, h1, h2, _ = run_batches(self.hptr, self.hidx, self.hptr, self.hidx, src, per_source=True,
                                                batch_size=64, ctx=ctx)
        n = self.hptr.size - 1
        full = [np.zeros(n, a.dtype) for a in (far, reach, h0, h1, h2)]
        for f, a in zip(full, (far, reach, h0, h1, h2)):
            f[src] = a
        if self.rep is not None:
            import scipy.sparse as sp
            from scipy.sparse.csgraph import shortest_path

            from distgraph.backends.cpu.bits import recip_fixed

            A = sp.csr_matrix((np.ones(self.hidx.size), self.hidx, self.hptr), shape=(n, n))
            for p in src[self.rep[src] >= 0]:
                d = shortest_path(A, unweighted=True, indices=[int(p)])[0]
                d = d[np.isfinite(d)].astype(np.int64) + 1
                leaf = self.rep[p]
                full[0][leaf] += np.uint64(d.sum())
                full[1][leaf] += d.size
                full[2][leaf] += np.uint64(1)
                q = [int(recip_fixed(int(x))) for x in d[d >= 2]]
                full[3][leaf] += np.uint64(sum(x >> 32 for x in q))
                full[4][leaf] += np.uint64(sum(x & 0xFFFFFFFF for x in q))
        add_sums(out, full)


@pytest.fixture
def gpu_ctx(monkeypatch):
    import distgraph.backends.gpu.msbfs_wave as mw
    import distgraph.runtime.context as context

    monkeypatch.setattr(context, "get_context", lambda comm=None, backend=None: context.Context(
        MPI.COMM_SELF, 0, 1, 0, 1, "gpu" if backend == "gpu" else "cpu", 0))
    monkeypatch.setattr(mw, "GpuWave", _FakeWave)
    _FakeWave.calls = []
    _FakeWave.aside = []
    return mw


@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize("graph", ["path", "grid_with_isolated", "two_components", "leafy_grid", "paths_of_100"])
def test_closeness_through_the_wave_runner_equals_cpu(gpu_ctx, monkeypatch, graph, fold):
    from distgraph.algorithms.closeness import closeness, leaf_folds
    from distgraph.runtime.config import config

    g = {"path": lambda: _path(300),
         "grid_with_isolated": lambda: Graph.from_edges(_grid(6, 40).edges()[0], _grid(6, 40).edges()[1], n=250,
                                                        directed=False),
         "two_components": lambda: Graph.from_edges(np.r_[np.arange(99), np.arange(100, 149)],
                                                    np.r_[np.arange(1, 100), np.arange(101, 150)], directed=False),
         # a grid with a hanging leaf at every 7th vertex and two leaves on vertex 3
         "leafy_grid": lambda: Graph.from_edges(np.r_[_grid(5, 30).edges()[0], np.arange(0, 150, 7), 3],
                                                np.r_[_grid(5, 30).edges()[1], 150 + np.arange(22), 172],
                                                directed=False),
         # 30 paths of 100 vertices: ball groups of 256 span several components (set aside)
         "paths_of_100": lambda: Graph.from_edges(np.arange(3000).reshape(30, 100)[:, :-1].ravel(),
                                                  np.arange(3000).reshape(30, 100)[:, 1:].ravel(), directed=False)}[graph]()
    monkeypatch.setattr(config, "gpu_closeness_wave", "on")
    monkeypatch.setattr(config, "gpu_closeness_fold_leaves", fold)
    folded = leaf_folds(g.indptr, g.indices)[0].size if fold else 0
    assert graph != "leafy_grid" or not fold or folded == 23
    for conv in ("networkx", "harmonic"):
        _FakeWave.calls = []
        got = closeness(g, backend="gpu", convention=conv, progress=False)
        want = closeness(g, backend="cpu", convention=conv, progress=False)
        # one launch for every source with arcs but the folded leaves (held until drain)
        assert _FakeWave.calls == [int((np.diff(g.indptr) > 0).sum()) - folded]
        # a group filled from several balls (components here) goes aside
        assert (_FakeWave.aside[-1] > 0) == (graph in ("paths_of_100", "two_components")), _FakeWave.aside
        for what in ("farness", "reach", "harmonic", "closeness"):
            np.testing.assert_array_equal(getattr(got, what), getattr(want, what), err_msg=f"{what} {conv}")


def test_auto_takes_the_wave_on_high_diameter_only(gpu_ctx, monkeypatch, tmp_path):
    import distgraph.algorithms.closeness as cl
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_closeness_wave", "auto")
    monkeypatch.setattr(cl, "_wave_pays", lambda hptr, hidx, depth=False: gpu_ctx.wave_pays(hptr, hidx, memory=False,
                                                                                           depth=depth))
    import distgraph.algorithms.msbfs as ms

    depths = []
    real_depth = ms.depth_unless_scale_free
    monkeypatch.setattr(ms, "depth_unless_scale_free", lambda *a, **k: depths.append(1) or real_depth(*a, **k))
    g = _grid(4, 200)
    got = cl.closeness(g, backend="gpu", progress=False)
    assert _FakeWave.calls == [g.n]
    assert len(depths) == 1   # the high-diameter test once, for the wave and for the ball order
    np.testing.assert_array_equal(got.farness, cl.closeness(g, backend="cpu", progress=False).farness)
    # off, per-vertex subsets, checkpoints, several ranks and directed graphs keep the bit-parallel runner
    seen = []
    monkeypatch.setattr("distgraph.backends.gpu.closeness.make_runner",
                        lambda *a, **k: seen.append(k) or (_ for _ in ()).throw(RuntimeError("bit runner")))
    for wave, kw in (("off", {}), ("auto", dict(vertices=[0, 5])), ("on", dict(checkpoint=str(tmp_path / "ck")))):
        monkeypatch.setattr(config, "gpu_closeness_wave", wave)
        with pytest.raises(RuntimeError, match="bit runner"):
            cl.closeness(g, backend="gpu", progress=False, **kw)
    # auto on several ranks keeps it too (the wave runs on one rank unless asked for)
    monkeypatch.setattr(config, "gpu_closeness_wave", "auto")
    import distgraph.runtime.context as context

    monkeypatch.setattr(context, "get_context", lambda comm=None, backend=None: context.Context(
        MPI.COMM_SELF, 0, 2, 0, 1, "gpu", 0))
    with pytest.raises(RuntimeError, match="bit runner"):
        cl.closeness(g, backend="gpu", progress=False)
    monkeypatch.setattr(config, "gpu_closeness_wave", "on")
    d = Graph.from_edges(np.arange(199), np.arange(1, 200), directed=True)
    with pytest.raises(RuntimeError, match="bit runner"):
        cl.closeness(d, backend="gpu", progress=False)


def test_auto_passes_the_depth_on_to_the_ball_order(gpu_ctx, monkeypatch):
    # "auto" where the wave does not pay: the depth found for wave_pays goes on to the ball
    # order's rule (one BFS of the graph, not two)
    import distgraph.algorithms.closeness as cl
    import distgraph.algorithms.msbfs as ms
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_closeness_wave", "auto")
    monkeypatch.setattr(cl, "_wave_pays", lambda hptr, hidx, depth=False: False)
    real_depth = ms.depth_unless_scale_free
    depths, seen = [], []
    monkeypatch.setattr(ms, "depth_unless_scale_free", lambda *a, **k: depths.append(1) or real_depth(*a, **k))

    def order(*a, **k):
        seen.append(k.get("depth", False))
        raise RuntimeError("ball order asked")

    monkeypatch.setattr(cl, "cpu_batch_order", order)
    monkeypatch.setattr("distgraph.backends.gpu.closeness.make_runner", lambda *a, **k: object())
    g = _grid(4, 200)
    with pytest.raises(RuntimeError, match="ball order asked"):
        cl.closeness(g, backend="gpu", progress=False)
    assert len(depths) == 1 and seen == [real_depth(g.indptr, g.indices, g.indptr)] and seen[0] > 100


def test_wave_runner_refuses_per_source_sums(gpu_ctx):
    from distgraph.errors import InvalidArgumentError

    r = gpu_ctx.WaveRunner(_path(10).indptr, _path(10).indices)
    with pytest.raises(InvalidArgumentError, match="per_source must be False"):
        r.run(np.arange(3), True, None)


def test_config_rejects_a_bad_wave_setting():
    from distgraph.errors import InvalidArgumentError
    from distgraph.runtime.config import reload_config

    assert reload_config({"DISTGRAPH_GPU_CLOSENESS_WAVE": "on"}).gpu_closeness_wave == "on"
    with pytest.raises(InvalidArgumentError, match="DISTGRAPH_GPU_CLOSENESS_WAVE must be auto, on or off"):
        reload_config({"DISTGRAPH_GPU_CLOSENESS_WAVE": "yes"})


def test_a_failing_drain_is_raised(gpu_ctx, monkeypatch):
    # the wave runs every batch at drain; its error comes out of closeness() (on several ranks
    # run_batches raises it on all of them before the reduction: _raise_on_all)
    from distgraph.algorithms.closeness import closeness
    from distgraph.errors import DeviceMemoryError
    from distgraph.runtime.config import config

    def boom(self, sources, out, aside=None):
        raise DeviceMemoryError("no room for the wave")

    monkeypatch.setattr(config, "gpu_closeness_wave", "on")
    monkeypatch.setattr(_FakeWave, "run", boom)
    with pytest.raises(DeviceMemoryError, match="no room for the wave"):
        closeness(_path(50), backend="gpu", progress=False)
