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
    """GpuWave's interface; run() adds the CPU backend's per-source sums at the sources."""
    calls = []

    def __init__(self, hptr, hidx, **kw):
        self.hptr, self.hidx = np.asarray(hptr, np.int64), np.asarray(hidx)
        self.info = {"batches": 0}

    def run(self, sources, out):
        from distgraph.algorithms.msbfs import run_batches
        from distgraph.backends.gpu.msbfs import add_sums
        from distgraph.runtime.context import Context

        src = np.asarray(sources, np.int64)
        _FakeWave.calls.append(src.size)
        ctx = Context(MPI.COMM_SELF, 0, 1, 0, 1, "cpu", 0)
        far, reach, h0, h1, h2, _ = run_batches(self.hptr, self.hidx, self.hptr, self.hidx, src, per_source=True,
                                                batch_size=64, ctx=ctx)
        n = self.hptr.size - 1
        full = [np.zeros(n, a.dtype) for a in (far, reach, h0, h1, h2)]
        for f, a in zip(full, (far, reach, h0, h1, h2)):
            f[src] = a
        add_sums(out, full)


@pytest.fixture
def gpu_ctx(monkeypatch):
    import distgraph.backends.gpu.msbfs_wave as mw
    import distgraph.runtime.context as context

    monkeypatch.setattr(context, "get_context", lambda comm=None, backend=None: context.Context(
        MPI.COMM_SELF, 0, 1, 0, 1, "gpu" if backend == "gpu" else "cpu", 0))
    monkeypatch.setattr(mw, "GpuWave", _FakeWave)
    _FakeWave.calls = []
    return mw


@pytest.mark.parametrize("graph", ["path", "grid_with_isolated", "two_components"])
def test_closeness_through_the_wave_runner_equals_cpu(gpu_ctx, monkeypatch, graph):
    from distgraph.algorithms.closeness import closeness
    from distgraph.runtime.config import config

    g = {"path": lambda: _path(300),
         "grid_with_isolated": lambda: Graph.from_edges(_grid(6, 40).edges()[0], _grid(6, 40).edges()[1], n=250,
                                                        directed=False),
         "two_components": lambda: Graph.from_edges(np.r_[np.arange(99), np.arange(100, 149)],
                                                    np.r_[np.arange(1, 100), np.arange(101, 150)], directed=False)}[graph]()
    monkeypatch.setattr(config, "gpu_closeness_wave", "on")
    for conv in ("networkx", "harmonic"):
        _FakeWave.calls = []
        got = closeness(g, backend="gpu", convention=conv, progress=False)
        want = closeness(g, backend="cpu", convention=conv, progress=False)
        # one launch for every source with arcs (held until drain), none folded
        assert _FakeWave.calls == [int((np.diff(g.indptr) > 0).sum())]
        for what in ("farness", "reach", "harmonic", "closeness"):
            np.testing.assert_array_equal(getattr(got, what), getattr(want, what), err_msg=f"{what} {conv}")


def test_auto_takes_the_wave_on_high_diameter_only(gpu_ctx, monkeypatch):
    import distgraph.algorithms.closeness as cl
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_closeness_wave", "auto")
    monkeypatch.setattr(cl, "_wave_pays", lambda hptr, hidx: gpu_ctx.wave_pays(hptr, hidx, memory=False))
    g = _grid(4, 200)
    got = cl.closeness(g, backend="gpu", progress=False)
    assert _FakeWave.calls == [g.n]
    np.testing.assert_array_equal(got.farness, cl.closeness(g, backend="cpu", progress=False).farness)
    # off, per-vertex subsets, checkpoints and directed graphs keep the bit-parallel runner
    seen = []
    monkeypatch.setattr("distgraph.backends.gpu.closeness.make_runner",
                        lambda *a, **k: seen.append(k) or (_ for _ in ()).throw(RuntimeError("bit runner")))
    for kw in (dict(), dict(vertices=[0, 5])):
        monkeypatch.setattr(config, "gpu_closeness_wave", "off" if not kw else "auto")
        with pytest.raises(RuntimeError, match="bit runner"):
            cl.closeness(g, backend="gpu", progress=False, **kw)
    monkeypatch.setattr(config, "gpu_closeness_wave", "on")
    d = Graph.from_edges(np.arange(199), np.arange(1, 200), directed=True)
    with pytest.raises(RuntimeError, match="bit runner"):
        cl.closeness(d, backend="gpu", progress=False)


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
