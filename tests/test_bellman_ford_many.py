"""Shortest paths from several sources: ``bellman_ford(graph, sources)``, :class:`BellmanFord`,
the GPU session's choices (with its engines replaced), ``--sources``, and 1, 2, 4 ranks with
the graph or the sources split."""

import functools
import types

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from distgraph.algorithms.bellman_ford import BellmanFord, unreachable, verify_sssp
from distgraph.algorithms.bellman_ford import bellman_ford as _bellman_ford
from distgraph.errors import DeviceMemoryError, InvalidArgumentError, NegativeCycleError
from distgraph.generators import kronecker, potential_shift, uniform_weights
from distgraph.graph import Graph

bellman_ford = functools.partial(_bellman_ford, backend="cpu")


def as_float(d):
    out = d.astype(np.float64)
    out[d == unreachable(d.dtype)] = np.inf
    return out


def two_parts(dtype=np.int64):
    """Two components: 0..3 with negative arcs and no cycle; 4..6 holding the negative cycle
    5 -> 6 -> 5 (weight -1), reached from 4 only."""
    src = [0, 0, 1, 2, 4, 5, 6]
    dst = [1, 2, 3, 1, 5, 6, 5]
    w = np.array([4, 1, 2, -2, 3, 1, -2], dtype)
    return Graph.from_edges(src, dst, w, n=8)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("directed", [True, False])
def test_rows_equal_scipy_and_single_runs(dtype, directed):
    rng = np.random.default_rng(5)
    n, m = 60, 200
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 9, m)
    if directed:  # negative arcs but no negative cycle: shifted by a potential
        pot = rng.integers(0, 6, n)
        w = w + pot[a] - pot[b]
    g = Graph.from_edges(a, b, w.astype(dtype), n=n + 5, directed=directed)
    assert (g.weights < 0).any() == directed
    ref = csg.johnson(g.to_scipy(dtype=np.float64), directed=True, indices=[3, 0, n + 2, 3])
    r = bellman_ford(g, [3, 0, n + 2, 3], predecessors=True, verify=True)  # any order, repeats, isolated
    assert r.distance.shape == (4, g.n) and r.distance.dtype == np.dtype(dtype)
    assert r.predecessor.shape == (4, g.n) and r.source.tolist() == [3, 0, n + 2, 3]
    if np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(as_float(r.distance), ref.astype(np.float32), rtol=1e-6)
    else:
        np.testing.assert_array_equal(as_float(r.distance), ref)
    for i, s in enumerate(r.source):
        one = bellman_ford(g, int(s), predecessors=True)
        np.testing.assert_array_equal(r.distance[i], one.distance)
        np.testing.assert_array_equal(r.predecessor[i], one.predecessor)
        verify_sssp(g, int(s), r.distance[i], r.predecessor[i])
    assert r.stats["sources"] == 4 and len(r.stats["per_source"]) == 4 and r.stats["split"] == "graph"
    assert r.stats["relaxations"] == sum(st["relaxations"] for st in r.stats["per_source"])
    assert r.reached.shape == (4, g.n) and r.reached[2].sum() == 1 and r.reached[0].sum() > n // 2


def test_kronecker_shifted_against_johnson():
    g = potential_shift(uniform_weights(kronecker(9, seed=3), seed=3), seed=4)
    srcs = np.array([5, 100, 7, 511])
    r = bellman_ford(g, srcs)
    np.testing.assert_array_equal(as_float(r.distance), csg.johnson(g.to_scipy(dtype=np.float64), indices=srcs))


def test_empty_and_numpy_sources():
    g = two_parts()
    r = bellman_ford(g, np.array([], np.int64))
    assert r.distance.shape == (0, g.n) and r.stats["sources"] == 0
    r = bellman_ford(g, np.array([2], np.int32))
    assert r.distance.shape == (1, g.n) and r.distance[0].tolist()[:4] == [unreachable(np.int64), -2, 0, 0]
    assert r.distance[0, 7] == unreachable(np.int64)


def test_negative_cycle_from_the_first_source_that_reaches_one():
    g = two_parts()
    ok = bellman_ford(g, [0, 2, 7])  # none reaches the cycle
    assert ok.distance[0].tolist()[:4] == [0, -1, 1, 1]
    with pytest.raises(NegativeCycleError) as ei:
        bellman_ford(g, [0, 5, 4, 6])
    e = ei.value
    assert e.source == 5 and "source 5" in str(e) and e.weight == -1 and sorted(e.cycle) == [5, 6]


@pytest.mark.parametrize("bad,msg", [
    ([[1, 2]], "source must be a vertex or a 1-D sequence of vertices in [0, 8); got [[1, 2]]"),
    ([0, 99], "source[1] must be a vertex in [0, 8); got 99"),
    ([0, -1], "source[1] must be a vertex in [0, 8); got -1"),
    ([0.5], "source must be a vertex or a 1-D sequence"),
    ([True], "source must be a vertex or a 1-D sequence"),
    ([1, True], "source must be a vertex or a 1-D sequence"),
    (np.array([1, 2 ** 64 - 1], np.uint64), f"source[1] must be a vertex in [0, 8); got {2 ** 64 - 1}"),
])
def test_bad_sources(bad, msg):
    with pytest.raises(InvalidArgumentError) as ei:
        bellman_ford(two_parts(), bad)
    assert msg in str(ei.value)


def test_bad_split_and_relabel():
    for src in ([0, 1], 0):
        with pytest.raises(InvalidArgumentError, match="split must be one of"):
            bellman_ford(two_parts(), src, split="rows")
    with pytest.raises(InvalidArgumentError, match="relabel must be None, 'none' or 'degree'; got 'rcm'"):
        BellmanFord(two_parts(), backend="cpu", relabel="rcm")


def test_host_memory_is_checked_before_running(monkeypatch):
    import distgraph.runtime.hostmem as hm

    g = kronecker(8, seed=1)
    monkeypatch.setattr(hm, "available_bytes", lambda meminfo=None: 100_000)
    ran = []
    monkeypatch.setattr(BellmanFord, "_run", lambda *a, **k: ran.append(a))
    with pytest.raises(DeviceMemoryError) as ei:
        bellman_ford(g, np.arange(50), predecessors=True)
    msg = str(ei.value)
    # 50 rows of 256 int64 distances and 256 int64 predecessors: 200 KiB
    assert "from 50 sources need 200.0 KiB of host memory but 97.7 KiB is available (at most 90%" in msg, msg
    assert "fewer sources per call" in msg and not ran
    with pytest.raises(DeviceMemoryError):  # distances alone: 100 KiB, above 90% of what is available
        bellman_ford(g, np.arange(50))


def test_available_bytes_reads_meminfo_and_cgroups(tmp_path):
    from distgraph.runtime.hostmem import available_bytes, check_host_memory

    f = tmp_path / "meminfo"
    f.write_text("MemTotal:  1000 kB\nMemFree:  10 kB\nMemAvailable:  600 kB\n")
    none = ((str(tmp_path / "no.max"), str(tmp_path / "no.current")),)
    assert available_bytes(str(f), none) == 600 * 1024
    assert available_bytes(str(tmp_path / "none"), none) is None
    (tmp_path / "memory.max").write_text("300000\n")
    (tmp_path / "memory.current").write_text("100000\n")
    cg = ((str(tmp_path / "memory.max"), str(tmp_path / "memory.current")),)
    assert available_bytes(str(f), cg) == 200000  # the job's limit less its usage: below MemAvailable
    assert available_bytes(str(tmp_path / "none"), cg) == 200000
    (tmp_path / "memory.max").write_text("max\n")  # no limit
    assert available_bytes(str(f), cg) == 600 * 1024
    from mpi4py import MPI

    check_host_memory(500_000, MPI.COMM_SELF, "x", available=600 * 1024)  # fits in 90%
    with pytest.raises(DeviceMemoryError, match=r"x need 585.9 KiB of host memory but 600.0 KiB is available "
                                                r"\(at most 90% of it is used\); try less"):
        check_host_memory(600_000, MPI.COMM_SELF, "x", ("less",), available=600 * 1024)


def test_bellman_ford_object_reused():
    g = uniform_weights(kronecker(8, seed=2), seed=2)
    with BellmanFord(g, backend="cpu") as bf:
        a = bf.run(3, predecessors=True)
        b = bf.run(3, predecessors=True)
        many = bf.run_many([3, 4])
    np.testing.assert_array_equal(a.distance, b.distance)
    np.testing.assert_array_equal(many.distance[0], a.distance)
    np.testing.assert_array_equal(as_float(many.distance[1]), csg.dijkstra(g.to_scipy(dtype=np.float64), indices=4))
    with pytest.raises(InvalidArgumentError, match="source must be in"):
        BellmanFord(g, backend="cpu").run(g.n)


def test_to_pandas_long_format():
    pd = pytest.importorskip("pandas")
    r = bellman_ford(two_parts(), [2, 0])
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["source", "vertex", "distance"]
    assert len(df) == 16 and df["source"].tolist()[:8] == [2] * 8 and df["distance"].iloc[9] == -1


# --------------------------------------------------------------------------- the GPU session's choices
class _Engine:
    """Stands in for RoundsSSSP (``settle``: whether its capped runs settle) and QueueSSSP."""

    log: list = []

    def __init__(self, kind, graph, weights, comm, **kw):
        self.kind, self.graph, self.kw = kind, graph, kw
        self.relabel = kw.get("relabel")
        self.distributed = False
        self.block = types.SimpleNamespace(of=self)
        self.closed = False
        _Engine.log.append(("make", kind, kw.get("relabel"), kw.get("block")))

    def run(self, source, confirm, predecessors=False, max_rounds=None, probe_round=None, out=None, sink=None):
        _Engine.log.append(("run", self.kind, self.relabel, source))
        if self.kind == "rounds" and max_rounds is not None and source in _Engine.deep:
            self.last_stats = {"relaxations": 3, "rounds": probe_round, "stopped": "deep"}
            return None
        pred = np.full(self.graph.n, -1) if predecessors else None
        return np.full(self.graph.n, source), pred, {"mode": "rounds" if self.kind == "rounds" else "async"}, None

    def run_batch(self, sources, outs, *, max_rounds, sink=None, wide=False, group=32):
        _Engine.log.append(("batch", self.kind, self.relabel, tuple(int(s) for s in sources), max_rounds, wide,
                            group))
        self.last_batch = {"keys": 8 if _Engine.wide_after is not None and sources[0] >= _Engine.wide_after else 4,
                           "persistent_rounds": _Engine.deep_batches}
        if _Engine.batch_error is not None:
            raise _Engine.batch_error
        res = []
        for s, row in zip(sources, outs):
            if int(s) in _Engine.unsettled:
                res.append(None)
            else:
                row[:] = s
                res.append({"mode": "rounds", "batch": min(len(sources), group),
                            "groups": -(-len(sources) // group)})
        return res

    def close(self):
        self.closed = True
        _Engine.log.append(("close", self.kind, self.relabel))


@pytest.fixture
def engines(monkeypatch):
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.runtime.config import config

    monkeypatch.setattr(gbf, "RoundsSSSP", lambda *a, **k: _Engine("rounds", *a, **k))
    monkeypatch.setattr(gbf, "QueueSSSP", lambda *a, **k: _Engine("queue", *a, **k))
    monkeypatch.setattr(_Engine, "log", [])
    monkeypatch.setattr(_Engine, "deep", set(), raising=False)
    monkeypatch.setattr(_Engine, "unsettled", set(), raising=False)
    monkeypatch.setattr(_Engine, "batch_error", None, raising=False)
    monkeypatch.setattr(_Engine, "wide_after", None, raising=False)
    monkeypatch.setattr(_Engine, "deep_batches", 0, raising=False)
    monkeypatch.setattr(config, "gpu_sssp_relabel_runs", 3)
    monkeypatch.setattr(config, "gpu_sssp_batch", 0)  # one source at a time, unless a test says so
    monkeypatch.setattr(gbf, "_batch_fits", lambda g, groups=1, held=0: True)
    return gbf


def _session_runs(gbf, mode, relabel, sources):
    from mpi4py import MPI

    g = Graph.from_edges(np.arange(99), np.arange(1, 100), n=100)
    out = []
    with gbf.Session(g, None, MPI.COMM_SELF, mode=mode, relabel=relabel) as s:
        for j, src in enumerate(sources):
            d, _, st, _ = s.run(src, lambda c: True, runs_left=len(sources) - 1 - j)
            assert d[0] == src
            out.append(st)
    return out


def test_session_renames_once_the_rounds_settled_and_enough_runs_are_left(engines):
    _session_runs(engines, "auto", None, [1, 2, 3, 4, 5])
    log = _Engine.log
    # run 1 on the caller's ids; then 3 runs left (>= 3): renamed, once; the first engine freed first
    assert log[:3] == [("make", "rounds", None, None), ("run", "rounds", None, 1), ("close", "rounds", None)]
    assert log[3] == ("make", "rounds", "degree", None)
    assert [e for e in log if e[0] == "run"][1:] == [("run", "rounds", "degree", s) for s in (2, 3, 4, 5)]
    assert log[-1] == ("close", "rounds", "degree") and sum(e[0] == "make" for e in log) == 2


@pytest.mark.parametrize("relabel,sources,renamed,threshold", [
    (None, [1, 2, 3], False, 3),          # 2 runs left after the first: below the threshold
    ("none", [1, 2, 3, 4, 5], False, 3),  # never
    ("degree", [1], True, 3),             # always, from the first run
    (None, [1, 2, 3, 4, 5], False, 0),    # DISTGRAPH_GPU_SSSP_RELABEL_RUNS=0: never
    (None, [1, 2], False, -1),
])
def test_session_renaming_rule(engines, monkeypatch, relabel, sources, renamed, threshold):
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_sssp_relabel_runs", threshold)
    _session_runs(engines, "rounds", relabel, sources)
    makes = [e for e in _Engine.log if e[0] == "make"]
    assert makes == [("make", "rounds", "degree" if renamed else None, None)]


def test_session_auto_goes_on_with_the_queue_kernel_after_a_deep_graph(engines):
    _Engine.deep = {1, 2, 3}
    stats = _session_runs(engines, "auto", None, [1, 2, 3])
    log = _Engine.log
    rounds = log[0]
    assert rounds[:2] == ("make", "rounds")
    # the queue kernel made once, on the rounds' block, after the rounds' exchange was freed
    i = log.index(("close", "rounds", None))
    assert log[i + 1][:2] == ("make", "queue") and log[i + 1][3].of.kind == "rounds"
    assert [e for e in log if e[0] == "run"] == [("run", "rounds", None, 1)] + [("run", "queue", None, s)
                                                                                for s in (1, 2, 3)]
    assert stats[0]["auto"]["chose"] == "async" and "sticky" not in stats[0]["auto"]
    assert stats[1]["auto"] == {"max_rounds": 64, "probe_round": 16, "chose": "async", "sticky": True}


def test_session_job_ranks_reach_the_rounds_and_the_sink(engines):
    """split="sources": a session on COMM_SELF knows the job's ranks (the rounds' prefault rule,
    one copying thread per rank)."""
    from mpi4py import MPI

    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    for job, threads in ((1, 4), (3, 1)):
        with engines.Session(g, None, MPI.COMM_SELF, mode="rounds", job_ranks=job) as s:
            s.run(0, lambda c: True, out=np.empty(10, np.int64), defer=True)
            assert s.rounds.job_ranks == job and s.sink.threads == min(threads, engines._cpus())


def test_session_async_mode_makes_only_the_queue(engines):
    _session_runs(engines, "async", None, [4, 5])
    assert [e[:2] for e in _Engine.log if e[0] == "make"] == [("make", "queue")]


def test_gpu_backend_many_sources_reuse_one_session(engines, monkeypatch):
    """bellman_ford(graph, sources) on the GPU backend (stand-in engines): one session for all
    sources, runs_left counting down."""
    import distgraph.algorithms.bellman_ford as abf

    monkeypatch.setattr(abf, "_resolve_backend", lambda backend, comm: "gpu")
    left = []
    real = engines.Session.run

    def run(self, source, confirm, predecessors=False, runs_left=0, out=None, defer=False):
        left.append((runs_left, out is not None and defer))
        return real(self, source, confirm, predecessors, runs_left)

    monkeypatch.setattr(engines.Session, "run", run)
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    r = _bellman_ford(g, [3, 1, 4, 1, 5], backend="gpu")
    assert r.distance[:, 0].tolist() == [3, 1, 4, 1, 5] and left == [(4, True), (3, True), (2, True), (1, True), (0, True)]
    assert sum(e[0] == "make" for e in _Engine.log) == 2  # the caller's ids, then renamed (4 left >= 3)


def test_split_sources_counts_the_ranks_per_gpu_over_the_job(engines, monkeypatch):
    """split="sources" on the GPU backend (given as "gpu": no context made by the backend's
    resolution): the ranks per GPU are counted over the job's communicator (get_context,
    collective) before any rank's COMM_SELF session is made, so that those plan with their part
    of a shared GPU; not with split="graph" (the rounds' own context does it on the job's
    communicator)."""
    from mpi4py import MPI

    import distgraph.algorithms.bellman_ford as abf
    from distgraph.runtime import context

    monkeypatch.setattr(abf, "_resolve_backend", lambda backend, comm: "gpu")
    seen = []
    monkeypatch.setattr(context, "get_context", lambda comm=None, backend=None: seen.append(
        (comm, backend, len(_Engine.log))))
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    r = _bellman_ford(g, [3, 1, 4], backend="gpu", split="sources")
    assert r.distance[:, 0].tolist() == [3, 1, 4]
    assert seen == [(MPI.COMM_WORLD, "gpu", 0)] and _Engine.log
    seen.clear()
    _bellman_ford(g, [3, 1], backend="gpu", split="graph")
    assert seen == []


@pytest.fixture
def batched(engines, monkeypatch):
    """The GPU backend with stand-in engines and batches of 3 sources."""
    import distgraph.algorithms.bellman_ford as abf
    from distgraph.runtime.config import config

    monkeypatch.setattr(abf, "_resolve_backend", lambda backend, comm: "gpu")
    monkeypatch.setattr(config, "gpu_sssp_batch", 3)
    return engines


def _runs(kind):
    return [e[3] for e in _Engine.log if e[0] == kind]


def test_many_sources_run_in_batches(batched, monkeypatch):
    """Without predecessors the sources go to RoundsSSSP.run_batch 3 at a time (the last
    batch shorter; a last single source alone), every row the source's, with the batch's
    stats; the renaming decided before each batch by the sources left after it."""
    from distgraph.runtime.config import config

    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    r = _bellman_ford(g, [3, 1, 4, 1, 5, 9, 2, 6], backend="gpu", mode="rounds")
    assert r.distance[:, 0].tolist() == [3, 1, 4, 1, 5, 9, 2, 6]
    assert _runs("batch") == [(3, 1, 4), (1, 5, 9), (2, 6)] and _runs("run") == []
    # the first batch on the caller's ids (nothing settled yet); then 2 + 0 left: below 3
    assert [e[2] for e in _Engine.log if e[0] == "batch"] == [None, None, None]
    assert all(st["batch"] in (3, 2) and st["ranks"] == 1 and st["time_s"] >= 0 for st in r.stats["per_source"])
    assert [e[4] for e in _Engine.log if e[0] == "batch"] == [1024] * 3  # max_rounds: the cap, at most max(4n, 1024)
    _Engine.log.clear()
    _bellman_ford(g, [3, 1, 4, 1, 5, 9, 2], backend="gpu", mode="rounds")
    assert _runs("batch") == [(3, 1, 4), (1, 5, 9)] and _runs("run") == [2]
    for cap, want in ((7, 7), (0, 1)):  # DISTGRAPH_GPU_SSSP_BATCH_ROUNDS, at least 1
        _Engine.log.clear()
        monkeypatch.setattr(config, "gpu_sssp_batch_rounds", cap)
        _bellman_ford(g, [3, 1, 4], backend="gpu", mode="auto")
        assert [e[4] for e in _Engine.log if e[0] == "batch"] == [want]


@pytest.mark.parametrize("fits", [True, False])
def test_many_sources_deep_batches_in_groups(batched, monkeypatch, fits):
    """Once a batch ran 16 persistent rounds or more (a deep graph), the session's batches take
    BATCH_GROUPS groups of the batch size (3 here), where their arrays fit (group 0's held);
    the engine gets the group size."""
    held = []

    def fit(g, groups=1, held_bytes=0):
        held.append((groups, held_bytes))
        return fits or groups == 1

    monkeypatch.setattr(batched, "_batch_fits", lambda g, groups=1, held=0: fit(g, groups, held))
    monkeypatch.setattr(batched, "BATCH_GROUPS", 2)
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    src = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    _Engine.deep_batches = 15  # persistent rounds under 16 (a Kronecker batch's round or two): one group
    _bellman_ford(g, src, backend="gpu", mode="rounds")
    assert _runs("batch") == [(3, 1, 4), (1, 5, 9), (2, 6, 5), (3, 5)] and held == [(1, 0)]
    held.clear()
    _Engine.log.clear()
    _Engine.deep_batches = 16
    r = _bellman_ford(g, src, backend="gpu", mode="rounds")
    assert r.distance[:, 0].tolist() == src
    if fits:
        assert _runs("batch") == [(3, 1, 4), (1, 5, 9, 2, 6, 5), (3, 5)]
    else:
        assert _runs("batch") == [(3, 1, 4), (1, 5, 9), (2, 6, 5), (3, 5)]
    assert {e[6] for e in _Engine.log if e[0] == "batch"} == {3}
    n, m = g.n, g.m
    assert held[-1] == (2, batched._group_bytes(n, m))
    assert len(held) == (2 if fits else 5)  # (batch_size's one group; then after each batch until they fit)


def test_many_sources_batch_keys_wide_for_the_session(batched):
    """Once a batch ran on 8-byte keys (its sums left int32's range), the session's later
    batches start on them (the renamed engine too)."""
    _Engine.wide_after = 4
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    _bellman_ford(g, [1, 2, 3, 4, 5, 6, 7, 8, 9], backend="gpu", mode="rounds")
    assert [e[5] for e in _Engine.log if e[0] == "batch"] == [False, False, True]


def test_many_sources_batches_renamed_only_when_asked(batched, monkeypatch):
    """Batches keep the caller's ids under relabel=None (3 sources left after batch 2 would
    reach the threshold 3 of single runs); relabel="degree" renames from the first batch."""
    import distgraph.algorithms.bellman_ford as abf

    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    _bellman_ford(g, list(range(9)), backend="gpu", mode="auto")
    assert [e[2] for e in _Engine.log if e[0] == "batch"] == [None, None, None]
    _Engine.log.clear()
    with abf.BellmanFord(g, backend="gpu", relabel="degree") as bf:
        bf.run_many(list(range(9)))
    assert [e[2] for e in _Engine.log if e[0] == "batch"] == ["degree"] * 3


def test_many_sources_unsettled_batch_sources_run_alone(batched):
    """A source the batch left unsettled (a negative cycle, a deep graph) runs alone, in its
    place; after that batch every source runs alone."""
    _Engine.unsettled = {4}
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    r = _bellman_ford(g, [3, 4, 1, 5, 9, 2], backend="gpu", mode="rounds")
    assert r.distance[:, 0].tolist() == [3, 4, 1, 5, 9, 2]
    assert _runs("batch") == [(3, 4, 1)] and _runs("run") == [4, 5, 9, 2]
    assert [st.get("batch") for st in r.stats["per_source"]] == [3, None, 3, None, None, None]


def test_many_sources_failing_batch_runs_each_source_alone(batched):
    """An error in the batch warns and runs its sources alone; a GraphValueError (a row's
    overflow) falls back silently: the single run raises its own."""
    from distgraph.errors import GraphValueError

    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    _Engine.batch_error = RuntimeError("boom")
    with pytest.warns(RuntimeWarning, match="batched GPU rounds failed .*boom"):
        r = _bellman_ford(g, [3, 4, 1, 5], backend="gpu", mode="rounds")
    assert r.distance[:, 0].tolist() == [3, 4, 1, 5] and _runs("run") == [3, 4, 1, 5]
    _Engine.log.clear()
    _Engine.batch_error = GraphValueError("overflow")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = _bellman_ford(g, [3, 4, 1, 5], backend="gpu", mode="rounds")
    assert _runs("run") == [3, 4, 1, 5]


@pytest.mark.parametrize("kw", [{"predecessors": True}, {"mode": "async"}])
def test_many_sources_not_batched(batched, kw):
    """Predecessors (and the verifier, which needs them: batch_size(True) is 0) and the queue
    mode run each source alone."""
    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    _bellman_ford(g, [3, 4, 1, 5], backend="gpu", **kw)
    assert _runs("batch") == [] and _runs("run") == [3, 4, 1, 5]


def test_session_batch_size(engines, monkeypatch):
    from mpi4py import MPI

    from distgraph.runtime.config import config

    g = Graph.from_edges(np.arange(9), np.arange(1, 10), n=10)
    monkeypatch.setattr(config, "gpu_sssp_batch", 100)
    with engines.Session(g, None, MPI.COMM_SELF, mode="auto") as s:
        assert s.batch_size() == engines.BATCH_MAX == 32 and s.batch_size(True) == 0
        s.no_batch = True
        assert s.batch_size() == 0
    with engines.Session(g, None, MPI.COMM_SELF, mode="async") as s:
        assert s.batch_size() == 0
    monkeypatch.setattr(engines, "_batch_fits", lambda g, groups=1, held=0: False)
    with engines.Session(g, None, MPI.COMM_SELF, mode="rounds") as s:
        assert s.batch_size() == 0
    for k in (0, 1):
        monkeypatch.setattr(config, "gpu_sssp_batch", k)
        monkeypatch.setattr(engines, "_batch_fits", lambda g, groups=1, held=0: True)
        with engines.Session(g, None, MPI.COMM_SELF, mode="rounds") as s:
            assert s.batch_size() == 0


def test_batch_bytes():
    from distgraph.backends.gpu.bellman_ford import BATCH_BIG_DEGREE, RoundsSSSP

    # the keys (8 bytes x 32 sources), the rows' peak (24 + 8 bytes x 32), masks and frontiers
    # (16 bytes a vertex), the mid list (8), the far lists and masks (12), the hub pieces (12 bytes
    # each), the counters (1 KB)
    assert RoundsSSSP.batch_bytes(1000, 256 * 10) == 1000 * (8 * 32 + 32 * 32 + 16 + 8 + 12) + (2 * 10 + 2) * 12 \
        + 1024 + 512
    assert BATCH_BIG_DEGREE == 256
    # the arrays _batch_arrays allocates (numpy standing in for CuPy) plus the rows' peak: within
    # the bound, and short of it by less than its 1 KB for the counters (a new array not counted
    # fails here)
    from distgraph.backends.gpu import bellman_ford as gbf

    for skip in (False, True):
        old = gbf.BATCH_SKIP
        try:
            gbf.BATCH_SKIP = skip
            n, m = 1000, 256 * 10
            eng = types.SimpleNamespace(cp=np, graph=types.SimpleNamespace(n=n),
                                        block=types.SimpleNamespace(indices=np.zeros(m, np.int32)))
            st = RoundsSSSP._batch_arrays(eng, 0)
            used = sum(a.nbytes for a in st.values() if isinstance(a, np.ndarray)) + 32 * gbf.BATCH_MAX * n
            bound = RoundsSSSP.batch_bytes(n, m)
            assert bound - 1024 - 512 <= used <= bound, (skip, used, bound)
            # two groups: two sets of arrays, the rows of one group's gather (24 bytes) and three
            # groups' copies (8)
            st1 = RoundsSSSP._batch_arrays(eng, 1)
            assert st1 is not st and st1["cnt"].base is st["cnt"].base and RoundsSSSP._batch_arrays(eng, 0) is st
            used = sum(a.nbytes for x in (st, st1) for a in x.values() if isinstance(a, np.ndarray)) \
                + (24 + 3 * 8) * gbf.BATCH_MAX * n
            bound = RoundsSSSP.batch_bytes(n, m, 2)
            assert bound - 1024 - 2 * 512 <= used <= bound, (skip, used, bound)
        finally:
            gbf.BATCH_SKIP = old


# --------------------------------------------------------------------------- the CLI
def test_cli_sources(tmp_path, data_dir):
    from distgraph.testing import run_cli

    d, p = tmp_path / "d.npy", tmp_path / "p.npy"
    res = run_cli("sssp", data_dir / "minnesota.mtx.gz", "--sources", "3,10,3", "--output", d,
                  "--predecessors", p, "--verify", "--backend", "cpu", "--json")
    assert res.returncode == 0, res.stderr
    from distgraph.graph.readers import read_graph

    gm = read_graph(data_dir / "minnesota.mtx.gz")
    ref = csg.dijkstra(gm.to_scipy(dtype=np.float64), indices=[3, 10, 3])
    np.testing.assert_array_equal(as_float(np.load(d)), ref)
    assert np.load(p).shape == (3, gm.n)
    ids = tmp_path / "ids.txt"
    ids.write_text("3\n10\n")
    res = run_cli("sssp", data_dir / "minnesota.mtx.gz", "--sources", ids, "--backend", "cpu")
    assert res.returncode == 0 and "sssp from 2 sources" in res.stdout, res.stdout + res.stderr
    res = run_cli("sssp", data_dir / "minnesota.mtx.gz", "--sources", "random:4", "--backend", "cpu", "--json")
    assert res.returncode == 0 and '"sources": 4' in res.stdout, res.stderr


@pytest.mark.parametrize("args,msg", [
    (["--sources", "3,x"], "--sources must be input ids '3,17,42', 'random:K' or an existing file; got '3,x'"),
    (["--sources", "random:0"], "--sources random:K needs a count K >= 1; got 'random:0'"),
    (["--sources", "3", "--source", "3"], "give --source or --sources, not both"),
    (["--sources", "3,99999"], "99999"),
    (["--sources", "3", "--output", "d.csv"], "--output must end in .npy with --sources"),
])
def test_cli_sources_errors(args, msg, data_dir):
    from distgraph.testing import run_cli

    res = run_cli("sssp", data_dir / "minnesota.mtx.gz", *args, "--backend", "cpu")
    assert res.returncode == 2 and msg in res.stderr, res.stderr


def _stopping_run_many(monkeypatch, rank_to_signal=0, at_call=2):
    """BellmanFord.run_many sending SIGUSR1 to this process during its ``at_call``-th call (on
    rank ``rank_to_signal``): the checkpointed CLI saves that chunk, then stops."""
    import os
    import signal

    from mpi4py import MPI

    real = BellmanFord.run_many
    calls = []

    def run_many(self, *a, **kw):
        calls.append(1)
        if len(calls) == at_call and MPI.COMM_WORLD.Get_rank() == rank_to_signal:
            os.kill(os.getpid(), signal.SIGUSR1)
        return real(self, *a, **kw)

    monkeypatch.setattr(BellmanFord, "run_many", run_many)
    return calls


def test_cli_sources_checkpoint_stop_and_resume(tmp_path, data_dir, monkeypatch):
    """--sources with --checkpoint: a stop signal saves the chunk and stops (exit 128 + 10);
    --resume goes on from the first chunk not done; the rows equal a straight run's; a second
    run into the same directory, a resume of another run and a resume of a finished one are refused."""
    import json

    from distgraph.cli import main

    g = str(data_dir / "minnesota.mtx.gz")
    ck, d, p = tmp_path / "ck", tmp_path / "d.npy", tmp_path / "p.npy"
    base = ["sssp", g, "--sources", "random:40", "--backend", "cpu", "--chunk", "6", "--checkpoint", str(ck),
            "-o", str(d), "-p", str(p)]
    calls = _stopping_run_many(monkeypatch)
    assert main(base) == 128 + 10
    assert json.loads((ck / "state.json").read_text()) == {"done": 12} and len(calls) == 2 and not d.exists()
    monkeypatch.undo()
    assert main(["sssp", g, "--sources", "random:41", "--backend", "cpu", "--chunk", "6", "--checkpoint", str(ck),
                 "--resume", "-o", str(d)]) == 2  # another run: refused
    calls = _stopping_run_many(monkeypatch, at_call=99)
    assert main(base + ["--resume"]) == 0 and len(calls) == 5  # chunks 3-7 (28 rows)
    ref_d, ref_p = tmp_path / "rd.npy", tmp_path / "rp.npy"
    assert main(["sssp", g, "--sources", "random:40", "--backend", "cpu", "-o", str(ref_d), "-p", str(ref_p)]) == 0
    np.testing.assert_array_equal(np.load(d), np.load(ref_d))
    np.testing.assert_array_equal(np.load(p), np.load(ref_p))
    assert main(base) == 2 and main(base + ["--resume"]) == 2  # a run there already; finished


@pytest.mark.parametrize("args,msg", [
    (["--checkpoint", "CK"], "--checkpoint needs --sources and --output"),
    (["--sources", "3", "--checkpoint", "CK"], "--checkpoint needs --sources and --output"),
    (["--sources", "3", "--resume"], "--resume needs --checkpoint DIR"),
    (["--sources", "3", "--chunk", "0", "--checkpoint", "CK", "-o", "d.npy"], "--chunk must be >= 1; got 0"),
])
def test_cli_checkpoint_errors(args, msg, data_dir, tmp_path):
    from distgraph.testing import run_cli

    args = [str(tmp_path / "ck") if a == "CK" else a for a in args]
    res = run_cli("sssp", data_dir / "minnesota.mtx.gz", *args, "--backend", "cpu")
    assert res.returncode == 2 and msg in res.stderr, res.stderr


def test_cli_sources_negative_cycle_names_the_source(data_dir):
    from distgraph.testing import run_cli

    res = run_cli("sssp", data_dir / "bitcoin-otc.csv.gz", "--sources", "1,7", "--backend", "cpu")
    assert res.returncode == 2 and "negative cycle reachable from source 1:" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- 1, 2, 4 ranks
def _same_everywhere(comm, ok):
    return all(comm.allgather(bool(ok)))


@pytest.mark.mpi
@pytest.mark.parametrize("split", ["graph", "sources", "auto"])
def test_mpi_many_sources_identical_to_one_rank(comm, split):
    from mpi4py import MPI

    g = potential_shift(uniform_weights(kronecker(9, seed=6), seed=6), seed=6)
    srcs = [int(x) for x in np.random.default_rng(1).integers(0, g.n, 7)]
    one = bellman_ford(g, srcs, predecessors=True, comm=MPI.COMM_SELF)
    r = bellman_ford(g, srcs, predecessors=True, comm=comm, split=split, verify=True)
    want = split if split != "auto" else ("sources" if comm.Get_size() > 1 else "graph")
    ok = (np.array_equal(r.distance, one.distance) and np.array_equal(r.predecessor, one.predecessor)
          and r.stats["split"] == want and r.stats["relaxations"] == sum(s["relaxations"] for s in r.stats["per_source"])
          and all(s is not None for s in r.stats["per_source"]))
    assert _same_everywhere(comm, ok)


@pytest.mark.mpi
def test_mpi_split_sources_rows_by_broadcast_past_a_c_int(comm, monkeypatch):
    """Rows too long for Allgatherv's C-int displacements go by one broadcast each."""
    import distgraph.algorithms.bellman_ford as abf
    from mpi4py import MPI

    monkeypatch.setattr(abf, "_GATHERV_MAX", 1)
    g = uniform_weights(kronecker(8, seed=3), seed=3)
    srcs = [1, 2, 3, 4, 5]
    r = bellman_ford(g, srcs, comm=comm, split="sources", predecessors=True)
    one = bellman_ford(g, srcs, comm=MPI.COMM_SELF, predecessors=True)
    assert _same_everywhere(comm, np.array_equal(r.distance, one.distance)
                            and np.array_equal(r.predecessor, one.predecessor))


@pytest.mark.mpi
@pytest.mark.parametrize("split", ["graph", "sources"])
def test_mpi_many_sources_negative_cycle_on_every_rank(comm, split):
    g = two_parts()
    got = None
    try:
        bellman_ford(g, [0, 2, 7, 1, 4, 5], comm=comm, split=split)  # 4 is the first to reach it
    except NegativeCycleError as e:
        got = (e.source, sorted(e.cycle), e.weight)
    assert comm.allgather(got) == [(4, [5, 6], -1)] * comm.Get_size()


@pytest.mark.mpi
@pytest.mark.parametrize("split", ["graph", "sources"])
def test_mpi_cli_checkpoint_stop_on_one_rank_and_resume(comm, tmp_path_factory, data_dir, monkeypatch, split):
    """A stop signal on the last rank only: every rank stops after the same chunk, and the
    resumed run's rows equal a straight run's."""
    from distgraph.cli import main

    tmp = comm.bcast(str(tmp_path_factory.mktemp("ck")) if comm.Get_rank() == 0 else None, root=0)
    g = str(data_dir / "minnesota.mtx.gz")
    base = ["sssp", g, "--sources", "random:23", "--backend", "cpu", "--chunk", "5", "--split", split,
            "--checkpoint", f"{tmp}/ck", "-o", f"{tmp}/d.npy"]
    _stopping_run_many(monkeypatch, rank_to_signal=comm.Get_size() - 1)
    first = main(base)
    monkeypatch.undo()
    second = main(base + ["--resume"])
    comm.Barrier()
    ok = first == 128 + 10 and second == 0
    if ok and comm.Get_rank() == 0:  # rank 0 wrote the rows: against one rank's run from the same sources
        from mpi4py import MPI

        from distgraph.cli.common import pick_sources
        from distgraph.graph.readers import read_graph

        gg = read_graph(g)
        want = bellman_ford(gg, pick_sources(gg, 23, 27491095), comm=MPI.COMM_SELF).distance
        ok = np.array_equal(np.load(f"{tmp}/d.npy"), want)
    assert _same_everywhere(comm, ok)


@pytest.mark.mpi
@pytest.mark.filterwarnings("ignore:bellman_ford. the batched CPU rounds failed:RuntimeWarning")
@pytest.mark.parametrize("batch", [0, 32])
def test_mpi_split_sources_error_on_one_rank_raised_on_all(comm, monkeypatch, batch):
    """A failure in one rank's own source (split="sources") reaches every rank, none hangs:
    one source at a time, or in CPU batches whose failure sends the sources alone."""
    from distgraph.backends.cpu import bellman_ford as cpu
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "cpu_sssp_batch", batch)
    real, real_batch = BellmanFord._run, cpu.run_batch
    batches = []
    if batch:
        def run_batch(graph, w, sources, outs, **kw):
            batches.append(len(sources))
            if 3 in list(sources):
                raise MemoryError("made up: no room for a batch with source 3")
            return real_batch(graph, w, sources, outs, **kw)

        monkeypatch.setattr(cpu, "run_batch", run_batch)

    def run(self, source, *a, **kw):
        if source == 3:
            raise MemoryError("made up: no room for source 3")
        return real(self, source, *a, **kw)

    monkeypatch.setattr(BellmanFord, "_run", run)
    got = None
    try:
        bellman_ford(two_parts(), [0, 1, 2, 3, 1, 0, 2], comm=comm, split="sources", backend="cpu")
    except MemoryError as e:
        got = str(e)
    assert comm.allgather(got) == ["made up: no room for source 3"] * comm.Get_size()
    assert (sum(comm.allgather(len(batches))) > 0) == bool(batch)  # the batches ran (and fell back)


class _Dev(np.ndarray):
    """A "device" array (what _RowSink reads of it: shape, dtype, nbytes, slices)."""


class _Copy:
    """Stands in for _RowSink._copy's CUDA event: the pinned view is written only when the
    copy is waited for (or :meth:`finish`-ed by the test), as an asynchronous copy would."""

    made: list = []

    def __init__(self, dev, view):
        self.dev, self.view, self._done = dev, view, False
        _Copy.made.append(self)

    @property
    def done(self):
        return self._done

    def synchronize(self):
        if not self._done:
            self.view[...] = np.asarray(self.dev)
            self._done = True

    finish = synchronize


@pytest.fixture
def fake_cuda(monkeypatch):
    import sys

    from distgraph.backends.gpu import bellman_ford as gbf

    pinned = []

    def empty_pinned(n, dt):
        pinned.append(n)
        return np.empty(n, dt)

    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(empty_pinned=empty_pinned))
    monkeypatch.setattr(gbf._RowSink, "_copy", lambda self, dev, view, ready: _Copy(dev, view))
    monkeypatch.setattr(gbf._RowSink, "_ready", staticmethod(lambda: "ready"))
    monkeypatch.setattr(_Copy, "made", [])
    return pinned


def _jobs_done(sink, j):
    for f in sink._jobs[j]:
        f.result()


@pytest.mark.parametrize("threads", [1, 3])
def test_row_sink_fills_every_row_in_the_background(fake_cuda, monkeypatch, threads):
    """_RowSink: a put never waits while the backlog has room: each row's copy goes into a
    free pinned buffer or waits in the queue (nothing written yet); once a copy is done its
    row is copied by the threads (several parts for rows of 4 MB or more), and a buffer whose
    rows are done takes the next queued piece (no new buffer); every row is right after
    flush(); a thread's error is raised there."""
    from distgraph.backends.gpu import bellman_ford as gbf

    sink = gbf._RowSink(threads=threads, slots=4)
    n = (17 << 20) // 8 + 3  # 17 MB of int64: one part, or a part per thread (4 MB or more each)
    rows = np.zeros((6, n), np.int64)
    for i in range(6):
        sink.put(np.arange(i, i + n, dtype=np.int64).view(_Dev), rows[i])
    assert len(fake_cuda) == 4 and len(sink._queued) == 2 and len(sink._pending) == 4
    assert not rows.any() and sink.wait_s == 0.0 and sink.pinned_bytes == 4 * 8 * n
    _Copy.made[0].finish()  # the first row's copy is done (the others' are not: one stream, in order)
    sink.poll()
    _jobs_done(sink, 0)
    assert np.array_equal(rows[0], np.arange(0, n)) and not rows[1:].any()
    sink.poll()  # buffer 0 is free: the oldest queued piece (row 4) goes into it
    assert [p[0] for p in sink._pending] == [1, 2, 3, 0] and len(sink._queued) == 1 and len(fake_cuda) == 4
    sink.flush()
    assert all(np.array_equal(rows[i], np.arange(i, i + n)) for i in range(6))
    assert len(fake_cuda) == 4 and not sink._queued and not sink._pending
    small = np.zeros((2, 5), np.float32)
    for i in range(2):
        sink.put(np.full(5, i + 0.5, np.float32).view(_Dev), small[i])
    _Copy.made[-2].finish()
    sink.poll()  # the first one is done: its row handed to the threads; the second one waits
    sink.close()
    assert small.tolist() == [[0.5] * 5, [1.5] * 5] and sink.pinned_bytes == 0
    bad = gbf._RowSink(threads=threads)
    with pytest.raises(AssertionError):
        bad.put(np.zeros(4, np.int64).view(_Dev), np.zeros(4, np.int32))
    bad.close()
    # a copy failing in a thread: raised by flush (and close), not lost
    real = np.copyto
    parts = []

    def copyto(dst, src):
        parts.append(dst.shape[0])
        if len(parts) == 2:
            raise OSError("made up: the row's page could not be written")
        real(dst, src)

    monkeypatch.setattr(np, "copyto", copyto)
    sink = gbf._RowSink(threads=threads)
    rows = np.zeros((2, n), np.int64)
    for i in range(2):
        sink.put(np.arange(n, dtype=np.int64).view(_Dev), rows[i])
    with pytest.raises(OSError, match="made up"):
        sink.flush()
    sink.close()
    assert len(parts) == 2 * sink.threads  # a part per thread (as many as there are CPUs, at most `threads`)


def test_row_sink_rows_in_pieces(fake_cuda):
    """put_rows: a batch's rows in pieces of at most piece_bytes (a row at least), each into a
    free buffer (a new one while fewer than ``slots``) or queued; the device piece is kept
    until its copy is done."""
    from distgraph.backends.gpu import bellman_ford as gbf

    dev = np.arange(7 * 100, dtype=np.int64).reshape(7, 100).view(_Dev)
    for piece, sizes, queued in ((1 << 30, [5600], 0), (3 * 800, [2400, 2400, 800], 0), (100, [800] * 4, 3)):
        fake_cuda.clear()
        sink = gbf._RowSink(threads=2, slots=4, piece_bytes=piece)
        rows = np.zeros((7, 100), np.int64)
        sink.put_rows(dev, list(rows))
        assert len(sink._queued) == queued and not rows.any()
        assert all(p[2].base is not None for p in sink._pending)  # the device pieces held
        assert all(q[1].base is not None and q[0] == "ready" for q in sink._queued)
        sink.close()
        assert np.array_equal(rows, np.asarray(dev)) and fake_cuda == sizes, (piece, fake_cuda)


def test_row_sink_backlog_waits_for_the_oldest_buffer(fake_cuda):
    """A put waits only while more than backlog_bytes of pieces are queued: then for the
    buffer given a piece first, whose rows are done before the next piece goes into it."""
    from distgraph.backends.gpu import bellman_ford as gbf

    sink = gbf._RowSink(threads=1, slots=2, backlog_bytes=1600)
    rows = np.zeros((6, 100), np.int64)
    devs = [np.full(100, i, np.int64).view(_Dev) for i in range(6)]
    for i in range(4):  # two copies in flight, two rows (1600 bytes) queued
        sink.put(devs[i], rows[i])
    assert len(sink._queued) == 2 and sink.wait_s == 0.0 and not rows.any()
    sink.put(devs[4], rows[4])  # 2400 bytes queued: buffer 0 waited for (row 0 done), row 2 into it
    assert rows[0].tolist() == [0] * 100 and _Copy.made[0].done and not _Copy.made[1].done
    assert [p[0] for p in sink._pending] == [1, 0] and len(sink._queued) == 2 and sink.wait_s > 0
    sink.put(devs[5], rows[5])  # buffer 1 next
    assert _Copy.made[1].done and [p[0] for p in sink._pending] == [0, 1] and len(sink._queued) == 2
    sink.close()
    assert [r[0] for r in rows] == list(range(6)) and len(fake_cuda) == 2


def test_row_sink_copy_orders_the_streams(monkeypatch):
    """_RowSink: a put records an event on the current stream (the rows' making); the copy,
    perhaps started later, waits for that event on the sink's stream, copies and records its
    own event there; the current stream never waits for the sink."""
    import sys

    from distgraph.backends.gpu import bellman_ford as gbf

    calls = []

    class Event:
        def __init__(self, disable_timing=False):
            self.id = len([c for c in calls if c[0] == "event"])
            calls.append(("event", self.id))

        def record(self, stream=None):
            calls.append(("record", self.id, "sink" if stream is not None else "current"))

    class Stream:
        def __init__(self, name):
            self.name, self.ptr = name, 7

        def wait_event(self, ev):
            calls.append(("wait", self.name, ev.id))

    current = Stream("current")
    runtime = types.SimpleNamespace(memcpyDeviceToHost=2,
                                    memcpyAsync=lambda dst, src, nb, kind, s: calls.append(("copy", nb, kind, s)))
    cuda = types.SimpleNamespace(Event=Event, Stream=lambda non_blocking: Stream("sink"), runtime=runtime,
                                 get_current_stream=lambda: current)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    dev = types.SimpleNamespace(data=types.SimpleNamespace(ptr=1234))
    view = np.zeros(4, np.int64)
    sink = gbf._RowSink()
    ready = sink._ready()
    calls.append(("later",))
    sink._copy(dev, view, ready)
    assert calls == [("event", 0), ("record", 0, "current"), ("later",), ("wait", "sink", 0), ("copy", 32, 2, 7),
                     ("event", 1), ("record", 1, "sink")]


def test_row_sink_failed_copy_raised_at_flush_even_if_caught(fake_cuda, monkeypatch):
    """A row whose host copy failed is not lost when a wait raised it and the caller caught
    that (the batch's fallback): flush raises it again, once."""
    from distgraph.backends.gpu import bellman_ford as gbf

    real = np.copyto

    def copyto(dst, src):
        if src[0] == 100:
            raise OSError("made up: row 0")
        real(dst, src)

    monkeypatch.setattr(np, "copyto", copyto)
    sink = gbf._RowSink(threads=1, slots=2)
    rows = np.zeros((4, 3), np.int64)
    for i in range(4):
        sink.put(np.full(3, 100 + i, np.int64).view(_Dev), rows[i])
    with pytest.raises(OSError, match="row 0"):
        sink.poll(wait=True)
    with pytest.raises(OSError, match="row 0"):
        sink.put(np.full(3, 7, np.int64).view(_Dev), np.zeros(3, np.int64))
    with pytest.raises(OSError, match="row 0"):
        sink.flush()
    sink.flush()  # raised once: cleared
    sink.close()
    assert rows[1:].tolist() == [[101] * 3, [102] * 3, [103] * 3]


def test_row_sink_close_after_a_failed_flush_waits_for_the_copies_in_flight(fake_cuda, monkeypatch):
    """A flush that raised with copies still in flight (here: pinning a larger buffer failed
    while the other buffer's copy was not done): close waits for the sink's stream before it
    drops the pinned buffers and device pieces those copies write and read."""
    import sys

    from distgraph.backends.gpu import bellman_ford as gbf

    sink = gbf._RowSink(threads=1, slots=2)
    synced = []

    def synchronize():
        synced.append(all(c.done for c in _Copy.made))
        for c in _Copy.made:  # the stream's copies done
            c.finish()

    sink._stream = types.SimpleNamespace(synchronize=synchronize)
    rows = np.zeros((2, 4), np.int64)
    for i in range(2):  # both buffers' copies in flight
        sink.put(np.full(4, i, np.int64).view(_Dev), rows[i])
    assert len(sink._pending) == 2 and not any(c.done for c in _Copy.made)

    def no_pin(n, dt):
        raise MemoryError("made up: no pinned memory")

    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(empty_pinned=no_pin))
    big = np.zeros(8, np.int64)
    sink.put(np.full(8, 7, np.int64).view(_Dev), big)  # queued: no free buffer yet
    with pytest.raises(MemoryError, match="made up"):
        sink.close()  # flush: buffer 0 waited for, then a larger one cannot be pinned
    assert _Copy.made[0].done and synced == [False] and all(c.done for c in _Copy.made)
    assert sink._bufs == [None, None] and not sink._pending and sink._stream is None


def test_batch_delta_near_far():
    """RoundsSSSP._batch_delta: BATCH_DELTA_FACTOR times the mean |w| (a strided sample), as
    (addend, threshold key): integers rounded up, floats as the double's bits and its key;
    unit weights: the factor; none without arcs or with the factor at 0."""
    from distgraph.backends.gpu import bellman_ford as gbf

    def delta(w, isf=False, m=None):
        m = len(w) if m is None else m
        block = types.SimpleNamespace(indices=np.zeros(m, np.int32), w=w, isf=isf)
        return gbf.RoundsSSSP._batch_delta(types.SimpleNamespace(block=block, cp=np))

    f = gbf.BATCH_DELTA_FACTOR
    assert f > 0
    assert delta(np.array([3, -5, 10, 2], np.int32)) == (int(np.ceil(f * 5)),) * 2
    bits, key = delta(np.array([0.5, -1.5], np.float64), isf=True)
    assert np.int64(bits).view(np.float64) == f * 1.0 and key == gbf.to_keys(np.array([f]))[0]
    assert delta(None, m=7) == (int(f),) * 2  # unit weights: the mean is 1
    assert delta(None, m=0) is None
    old = gbf.BATCH_DELTA_FACTOR
    try:
        gbf.BATCH_DELTA_FACTOR = 0.0
        assert delta(np.array([3], np.int32)) is None
    finally:
        gbf.BATCH_DELTA_FACTOR = old


def test_batch_persist_grid_from_the_occupancy(monkeypatch):
    """_batch_persist: the cooperative module's kernel for the keys' suffix on BATCH_PERSIST
    blocks an SM, at most the occupancy's (every block resident), kept per (suffix, blocks);
    None when off, after a refused launch (no_persist) or when no block fits."""
    import sys
    import types

    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.backends.gpu import loader

    occ = {"per_sm": 3}
    driver = types.SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=lambda ptr, block, smem: (
        occ["per_sm"] if (ptr, block, smem) == (1234, 256, 0) else -1))
    fake = types.ModuleType("cupy")
    fake.cuda = types.ModuleType("cupy.cuda")
    fake.cuda.driver = driver
    fake.cuda.Device = lambda: types.SimpleNamespace(attributes={"MultiProcessorCount": 132})
    for name, mod in (("cupy", fake), ("cupy.cuda", fake.cuda), ("cupy.cuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, mod)
    loaded = []

    class Mod:
        def get_function(self, name):
            loaded.append(name)
            return types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=1234), name=name)

    def get_module(name, defines=None, options=(), *, cooperative=False):
        assert name == "bf_rounds" and cooperative
        return Mod()

    monkeypatch.setattr(loader, "get_module", get_module)
    monkeypatch.setattr(loader, "import_cupy", lambda: fake)
    st = {}
    monkeypatch.setattr(gbf, "BATCH_PERSIST", 8)
    fn, grid = gbf.RoundsSSSP._batch_persist(st, "i32_k32")
    assert fn.name == "distgraph_bf_batch_persist_i32_k32" and grid == 3 * 132
    assert gbf.RoundsSSSP._batch_persist(st, "i32_k32")[0] is fn and len(loaded) == 1  # kept
    monkeypatch.setattr(gbf, "BATCH_PERSIST", 1)
    assert gbf.RoundsSSSP._batch_persist(st, "i32_k32")[1] == 132
    occ["per_sm"] = 0
    assert gbf.RoundsSSSP._batch_persist(st, "f64") is None
    monkeypatch.setattr(gbf, "BATCH_PERSIST", 0)
    assert gbf.RoundsSSSP._batch_persist(st, "i32_k32") is None
    monkeypatch.setattr(gbf, "BATCH_PERSIST", 1)
    st["no_persist"] = True
    assert gbf.RoundsSSSP._batch_persist(st, "i32_k32") is None


def test_batch_round_launches_and_graph_fallback(monkeypatch):
    """_batch_round: the two passes on the round's arguments, then the advance (one block of 32
    threads) on its own; _batch_graph: a capture that fails gives None and marks the arrays
    no_graphs (the rounds then go one by one), a captured one is kept per key."""
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.backends.gpu import loader

    log = []

    def fn(name):
        return lambda grid, block, args: log.append((name, grid, block, args))

    fns = (fn("pass1"), fn("pass2"), fn("advance"))
    gbf._batch_round(fns, (("a",), ("n", "ph")), 7, 9)
    assert log == [("pass1", (7,), (256,), ("a",)), ("pass2", (9,), (256,), ("a",)),
                   ("advance", (1,), (32,), ("n", "ph"))]

    class Stream:
        fail = True

        def __init__(self, non_blocking=False):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def begin_capture(self):
            if Stream.fail:
                raise RuntimeError("capture not supported")

        def end_capture(self):
            return ("graph", len(log))

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Stream=Stream))
    monkeypatch.setattr(loader, "import_cupy", lambda: fake)
    phases = [((r,), ("n", "ph")) for r in range(6)]
    st = {}
    log.clear()
    assert gbf.RoundsSSSP._batch_graph(st, ("i32", 5, 2), fns, phases, 1, 1) is None and st["no_graphs"]
    Stream.fail = False
    st = {}
    g = gbf.RoundsSSSP._batch_graph(st, ("i32", 5, 2), fns, phases, 1, 1)
    assert [e[3] for e in log if e[0] == "pass1"] == [(r % 6,) for r in range(2, 8)]  # 6 rounds from phase 2
    assert gbf.RoundsSSSP._batch_graph(st, ("i32", 5, 2), fns, phases, 1, 1) is g and len(log) == 18
    bad = [((r,), ("n", "ph")) for r in range(5)]  # a launch failing while capturing: raised
    with pytest.raises(IndexError):
        gbf.RoundsSSSP._batch_graph({}, ("i32", 5, 3), fns, bad, 1, 1)


# --------------------------------------------------------------------------- CPU batches
@pytest.mark.parametrize("directed", [True, False])
def test_cpu_batches_equal_single_runs_and_scipy(directed, monkeypatch):
    """The CPU backend's batched rounds (cpu.run_batch: 32 sources, then 8): every dtype and
    unweighted, potential-shifted negative weights, repeats and an isolated source, equal to
    one source at a time (DISTGRAPH_CPU_SSSP_BATCH=0) and to scipy's Bellman-Ford rows; the
    stats say which batch, its rounds and relaxations."""
    from distgraph.runtime.config import config

    base = potential_shift(uniform_weights(kronecker(9, seed=5, directed=directed), seed=5), seed=6)
    deg = np.diff(base.indptr)
    srcs = [int(np.argmax(deg)), int(np.flatnonzero(deg == 0)[0]) if (deg == 0).any() else 1, 7, 7]
    srcs += [int(x) for x in np.random.default_rng(3).integers(0, base.n, 36)]
    from distgraph.testing import weight_variants

    for dtype, g in weight_variants(base):
        r = _bellman_ford(g, srcs, backend="cpu")
        per = r.stats["per_source"]
        assert [st.get("batch") for st in per] == [32] * 32 + [8] * 8, dtype
        assert all(st["rounds"] >= 1 and st["relaxations"] >= 0 for st in per) and per[0]["relaxations"] > 0
        monkeypatch.setattr(config, "cpu_sssp_batch", 0)
        one = _bellman_ford(g, srcs, backend="cpu")
        monkeypatch.setattr(config, "cpu_sssp_batch", 32)
        assert "batch" not in one.stats["per_source"][0]
        np.testing.assert_array_equal(r.distance, one.distance)
        if dtype in ("int32", None):
            ref = csg.bellman_ford(g.to_scipy(), indices=srcs)
            np.testing.assert_array_equal(np.where(r.distance == unreachable(r.distance.dtype), np.inf,
                                                   r.distance), ref)


def test_cpu_batches_fall_back_on_cycles_deep_graphs_and_errors(monkeypatch):
    """A source that reaches a negative cycle (below the bound, or unsettled at the cap) runs
    alone and is named by the error; a path deeper than the cap (32 rounds) sends its batch's
    unsettled sources, and the later ones, alone; an int32 overflow in a batch's row is raised
    as for a single run."""
    from distgraph.errors import GraphValueError
    from distgraph.runtime.config import config

    g = Graph.from_edges([0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 1, 5, 6, 5], np.array([4, 1, 2, -2, 3, 1, -2]), n=8)
    with pytest.raises(NegativeCycleError) as ei:
        _bellman_ford(g, [0, 2, 7, 4, 5, 1], backend="cpu")
    assert ei.value.source == 4 and sorted(ei.value.cycle) == [5, 6]
    r = _bellman_ford(g, [0, 2, 7, 1, 3], backend="cpu")
    assert [st.get("batch") for st in r.stats["per_source"]] == [5] * 5
    n = 100  # a path: source 0 needs 100 rounds, source 90 ten
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.arange(1, n), n=n)
    r = _bellman_ford(path, [90, 0, 95, 50, 99], backend="cpu")
    assert [st.get("batch") for st in r.stats["per_source"]] == [5, None, 5, None, 5]
    assert r.distance[1, -1] == (n - 1) * n // 2 and r.distance[0, 95] == sum(range(91, 96))
    monkeypatch.setattr(config, "cpu_sssp_batch", 2)  # batches of 2: after the unsettled one, alone
    r = _bellman_ford(path, [90, 95, 90, 0, 95, 99], backend="cpu")
    assert [st.get("batch") for st in r.stats["per_source"]] == [2, 2, 2, None, None, None]
    monkeypatch.setattr(config, "cpu_sssp_batch", 32)
    monkeypatch.setattr(config, "cpu_sssp_batch_rounds", 200)
    r = _bellman_ford(path, [90, 0, 95], backend="cpu")
    assert [st.get("batch") for st in r.stats["per_source"]] == [3] * 3
    big = Graph.from_edges(np.arange(5), np.arange(1, 6), np.full(5, 2 ** 30, np.int32), n=6)
    with pytest.raises(GraphValueError, match="overflow"):
        _bellman_ford(big, [0, 1, 2], backend="cpu")


def test_cpu_run_batch_unsettled_bits():
    """cpu.run_batch directly: a cap of 3 rounds on a path leaves the far sources unsettled
    (None, their rows untouched) and settles the near ones."""
    from distgraph.backends.cpu import bellman_ford as cpu

    n = 10
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, np.int64), n=n)
    outs = [np.full(n, -7, np.int64) for _ in range(3)]
    res = cpu.run_batch(path, path.weights, [0, 8, 9], outs, max_rounds=3)
    top = np.iinfo(np.int64).max
    assert res[0] is None and outs[0].tolist() == [-7] * n
    assert outs[1].tolist() == [top] * 8 + [0, 1] and outs[2].tolist() == [top] * 9 + [0]
    assert res[1]["batch"] == res[2]["batch"] == 3
    # a candidate below the bound -B - 1 (B = 5): source 0 unsettled at once (3 rounds, not
    # the cap's 100), source 2 (not reaching the cycle) settled
    cyc = Graph.from_edges([0, 1, 2], [1, 0, 3], np.array([-5, 1, 2], np.int64), n=100)
    outs = [np.zeros(100, np.int64) for _ in range(2)]
    res = cpu.run_batch(cyc, cyc.weights, [0, 2], outs)
    assert res[0] is None and res[1] is not None and res[1]["rounds"] < 10
    assert outs[1][2:4].tolist() == [0, 2]


def test_cpu_batch_size_fits_the_host_memory(monkeypatch):
    """BellmanFord._batch_size on the CPU: DISTGRAPH_CPU_SSSP_BATCH (at most 32), fewer where
    the batch's arrays of every rank would take more than half the available memory, none
    when not even 2 fit, with predecessors, or in the queue mode."""
    import distgraph.runtime.hostmem as hm
    from distgraph.runtime.config import config

    g = kronecker(8, seed=1)  # n = 256
    bf = BellmanFord(g, backend="cpu")
    from mpi4py import MPI

    one = MPI.COMM_SELF
    monkeypatch.setattr(hm, "available_bytes", lambda *a, **k: 1 << 40)
    assert bf._batch_size("self", one, False, False) == 32 and bf._batch_size("self", one, True, False) == 0
    monkeypatch.setattr(config, "cpu_sssp_batch", 100)
    assert bf._batch_size("self", one, False, False) == 32
    n, m = g.n, g.m
    monkeypatch.setattr(hm, "available_bytes", lambda *a, **k: 2 * (8 * m + 24 * n + 8 * n * 5))
    assert bf._batch_size("self", one, False, False) == 5
    monkeypatch.setattr(hm, "available_bytes", lambda *a, **k: 2 * (8 * m + 24 * n + 8 * n))
    assert bf._batch_size("self", one, False, False) == 0
    assert BellmanFord(g, backend="cpu", mode="async")._batch_size("self", one, False, False) == 0


@pytest.mark.parametrize("checkpoint", [False, True])
def test_cli_sources_progress_flags(capsys, tmp_path, monkeypatch, checkpoint):
    """--progress shows the bar over the sources of --sources (also with --checkpoint, whose
    path read a flag that did not exist); --no-progress hides it even where the default
    (DISTGRAPH_PROGRESS=on here) would show it."""
    from distgraph.cli import main
    from distgraph.runtime import config

    out = tmp_path / "d.npy"
    ck = (lambda name: ["--checkpoint", str(tmp_path / name)]) if checkpoint else (lambda name: [])
    args = ["sssp", "kron:8", "--sources", "random:5", "--backend", "cpu", "--output", str(out)]
    assert main(args + ck("a") + ["--progress"]) == 0
    err = capsys.readouterr().err
    assert "sssp sources" in err and "5/5" in err, err
    monkeypatch.setattr(config, "progress", "on")
    assert main(args + ck("b")) == 0
    assert "sssp sources" in capsys.readouterr().err  # the default shows it here
    assert main(args + ck("c") + ["--no-progress"]) == 0
    assert "sssp sources" not in capsys.readouterr().err
    assert np.load(out).shape == (5, 256)
