"""GPU multi-source BFS, the pull kernel of the block schedule (``GpuMSBFS(pull=...)``,
``distgraph_msbfs_pull_blocks`` in kernels/msbfs.cu): each level is one pass over the
candidate slice sets (successors, in the slice-set graph, of the sets active at the previous
level), a thread per vertex ORing its in-neighbours' frontier elements.

The sums must equal the CPU backend's exactly: per vertex, per source and symmetric (each
BFS's sums at its source), kappa 32 to 256 (one to eight words per element), blocks of 256
and 1024 threads, on road-like graphs (grids; vertex counts that are not multiples of 8),
scale-free ones, directed and disconnected ones, isolated vertices, and on real graphs
(minnesota, power, road-NY's first batches, email-Enron).  Every test checks that the
runner runs the pull kernel (``r.pull``, ``info["pull"]``), so a wrong kernel cannot pass by
not running.  Skipped without a GPU, except the argument checks and the set graph, which
are host code.
"""

import numpy as np
import pytest

from distgraph import generators as gen
from distgraph.graph import Graph

from _msbfs_cases import closeness_pair, closeness_same, graphs, real_graph as _real, runner, same as _same, \
    sums as _sums


def _graphs():
    out = graphs(undirected_disconnected=True)
    out["grid_29x37"] = gen.grid(29, 37)
    a, b = gen.grid(9, 11), gen.grid(11, 13)
    sa = np.repeat(np.arange(a.n), np.diff(a.indptr))
    sb = np.repeat(np.arange(b.n), np.diff(b.indptr))
    out["two_grids_isolated"] = Graph.from_edges(np.concatenate([sa, sb + a.n]),
                                                 np.concatenate([a.indices, b.indices + a.n]),
                                                 n=a.n + b.n + 5, directed=False)
    return out


GRAPHS = _graphs()
UNDIRECTED = ["path4", "kron10", "grid_37x29", "grid_29x37", "undirected_disconnected", "two_grids_isolated"]


def _runner(g, threads=1024, **kw):
    kw.setdefault("reorder", "none")
    kw.setdefault("pull", "on")
    kw.setdefault("pull_candidates", "sets")
    r = runner(g, groups="blocks", block_threads=threads, **kw)
    assert r.schedule == "blocks"
    assert r.pull is (kw["pull"] in ("on", True)) and r.info["pull"] == r.pull
    if r.pull:
        assert r.pull_candidates == kw["pull_candidates"]
    return r


CANDS = ["sets", "vertices"]   # pull_candidates: every vertex of the candidate sets, or exactly the candidates


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa,threads", [(256, 1024), (32, 256), (64, 1024), (128, 256)])
@pytest.mark.parametrize("cands", CANDS)
def test_pull_per_vertex_equal_cpu(name, kappa, threads, cands):
    g = GRAPHS[name]
    r = _runner(g, threads, kappa=kappa, pull_candidates=cands)
    srcs = np.arange(g.n, dtype=np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [256, 32])
@pytest.mark.parametrize("cands", CANDS)
def test_pull_per_source_equal_cpu(name, kappa, cands):
    g = GRAPHS[name]
    r = _runner(g, kappa=kappa, slots=3, pull_candidates=cands)   # more batches than blocks: slots are reused
    rng = np.random.default_rng(4)
    srcs = rng.integers(0, g.n, 300).astype(np.int64)  # repeats, > one kappa, partial last batch
    assert _same(_sums(g, srcs, True, r, batch_size=100), _sums(g, srcs, True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grid_29x37", "kron9_dir", "two_grids_isolated", "grid_160x160"])
@pytest.mark.parametrize("symmetric", [False, True])
def test_pull_vertices_shuffled_sources_repeated(name, symmetric):
    # every vertex as a source in a shuffled order, several times on one runner (slots reused):
    # a batch's sources are scattered over the bit words, so the warps that seed them share
    # words of the candidate bits.  (At 2230bf3 a race between the seed's clearing of its dedup
    # bits and the marking of level 1's candidates gave duplicate candidates: two runs of road-NY
    # differed.  This test passed on that kernel too -- the race needs timing it did not get --
    # so it guards the shuffled-source path, not that race.)
    g = gen.grid(160, 160) if name == "grid_160x160" else GRAPHS[name]
    if symmetric and g.directed:
        pytest.skip("symmetric sums need an undirected graph")
    r = _runner(g, symmetric=symmetric, slots=3 if g.n < 10_000 else None, pull_candidates="vertices")
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64) if symmetric else np.arange(g.n, dtype=np.int64)
    ref = _sums(g, srcs, False)
    rng = np.random.default_rng(11)
    for _ in range(5 if g.n < 10_000 else 2):
        assert _same(_sums(g, rng.permutation(srcs), False, r), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("name", UNDIRECTED)
@pytest.mark.parametrize("kappa", [256, 64])
@pytest.mark.parametrize("cands", CANDS)
def test_pull_symmetric_total_equal_cpu(name, kappa, cands):
    # closeness of every vertex: each BFS's sums at its source; the total is the per-vertex sum
    g = GRAPHS[name]
    r = _runner(g, kappa=kappa, symmetric=True, slots=2, pull_candidates=cands)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grid_29x37", "kron10", "kron9_dir", "two_grids_isolated"])
def test_pull_on_off_auto_same_sums(name):
    # the three settings give the same sums; "auto" follows the sparse path's choice and the
    # in-degree bound
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    got = {}
    for pl in ("on", "off", "auto"):
        r = runner(g, groups="blocks", reorder="none", pull=pl)
        got[pl] = _sums(g, srcs, False, r)
        if pl == "auto":
            from distgraph.backends.gpu.msbfs import PULL_MAX_IN_DEGREE

            assert r.pull == (r.sparse and int(np.diff(g.csc()[0]).max()) <= PULL_MAX_IN_DEGREE)
            if name.startswith(("grid", "two_grids")):
                assert r.pull
    assert _same(got["on"], got["off"]) and _same(got["on"], got["auto"])




@pytest.mark.gpu
@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "power.mtx.gz"])
@pytest.mark.parametrize("cands", CANDS)
def test_pull_real_graph_all_sources(data_dir, name, cands):
    # closeness() of every vertex as the benchmark runs it (symmetric sums, kappa 256,
    # reorder="auto", blocks of 1024, compact BFS balls)
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, name)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    ref = _sums(g, srcs, False)
    tptr, tidx, _ = g.csc()
    balls = ball_sources(g.indptr, g.indices, tptr, tidx, srcs, 256)
    r = _runner(g, kappa=256, reorder="auto", symmetric=not g.directed, pull_candidates=cands)
    assert _same(_sums(g, balls, False, r), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("cands", CANDS)
def test_pull_real_scale_free_some_sources(data_dir, cands):
    # email-Enron (hubs: long in-arc lists; "auto" leaves it off), 700 random sources, per vertex,
    # reorder="auto"
    g = _real(data_dir, "email-Enron.mtx.gz")
    assert not runner(g, groups="blocks", reorder="auto", pull="auto").pull
    rng = np.random.default_rng(8)
    srcs = np.sort(rng.choice(g.n, size=700, replace=False)).astype(np.int64)
    r = _runner(g, kappa=256, reorder="auto", pull_candidates=cands)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("cands", CANDS)
def test_pull_road_ny_first_batches(data_dir, cands):
    # road-NY (RCM order, ~550 levels per batch): 3 batches of 256 ball sources, per vertex and
    # per source, against the CPU backend
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, "road-NY.gr.xz")
    tptr, tidx, _ = g.csc()
    srcs = ball_sources(g.indptr, g.indices, tptr, tidx, np.arange(g.n, dtype=np.int64), 256)[:768]
    r = _runner(g, kappa=256, reorder="auto", pull_candidates=cands)
    assert r.info["shared_dbits"]   # 33k slice sets, 264k vertices: the candidate bits fit in shared memory
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    assert _same(_sums(g, srcs[:300], True, r), _sums(g, srcs[:300], True))


@pytest.mark.gpu
@pytest.mark.parametrize("pull", ["on", "off"])
def test_pull_closeness_end_to_end(data_dir, monkeypatch, pull):
    # closeness() through the config key, as DISTGRAPH_GPU_MSBFS_PULL sets it
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_msbfs_pull", pull)
    g = _real(data_dir, "minnesota.mtx.gz")
    cpu, gpu = closeness_pair(g)
    assert closeness_same(cpu, gpu)


# ---------------------------------------------------------------- no GPU needed
@pytest.mark.parametrize("bad", ["yes", "", 1, 2.0, "true"])
def test_pull_bad_argument(bad):
    # validated before CuPy is imported: the same error with or without a GPU
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    tptr, tidx, _ = g.csc()
    with pytest.raises(InvalidArgumentError, match="pull"):
        GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=None, pull=bad)


def test_pull_config_key_checked():
    from distgraph.errors import InvalidArgumentError
    from distgraph.runtime.config import config, reload_config

    try:
        assert reload_config({"DISTGRAPH_GPU_MSBFS_PULL": "on"}).gpu_msbfs_pull == "on"
        with pytest.raises(InvalidArgumentError, match="GPU_MSBFS_PULL"):
            reload_config({"DISTGRAPH_GPU_MSBFS_PULL": "maybe"})
        assert reload_config({"DISTGRAPH_GPU_MSBFS_PULL_CANDIDATES": "vertices"}).gpu_msbfs_pull_candidates == \
            "vertices"
        with pytest.raises(InvalidArgumentError, match="GPU_MSBFS_PULL_CANDIDATES must be auto, sets or vertices"):
            reload_config({"DISTGRAPH_GPU_MSBFS_PULL_CANDIDATES": "vertex"})
    finally:
        reload_config({})
    assert config.gpu_msbfs_pull in ("auto", "on", "off") and config.gpu_msbfs_pull_candidates == "auto"


@pytest.mark.parametrize("bad", ["vertex", "", 1, 2.0, True])
def test_pull_candidates_bad_argument(bad):
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    tptr, tidx, _ = g.csc()
    with pytest.raises(InvalidArgumentError, match="pull_candidates"):
        GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=None, pull_candidates=bad)


@pytest.mark.parametrize("name", ["path4", "kron9_dir", "grid_29x37", "two_grids_isolated", "isolated_only"])
def test_set_graph_against_arcs(name):
    # s -> t for every arc v -> u with s = v // 8, t = u // 8, each pair once, heads sorted
    from distgraph.backends.gpu.msbfs import set_graph

    g = GRAPHS[name]
    tptr, tidx, _ = g.csc()
    ptr, idx = set_graph(tptr, tidx, g.n)
    rho = (g.n + 7) // 8
    assert ptr.dtype == np.int32 and idx.dtype == np.int32 and ptr.shape == (rho + 1,)
    src = np.repeat(np.arange(g.n), np.diff(g.indptr))
    want = sorted(set(zip((src // 8).tolist(), (g.indices // 8).tolist())))
    got = [(s, int(t)) for s in range(rho) for t in idx[ptr[s]:ptr[s + 1]]]
    assert got == want
