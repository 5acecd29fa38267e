"""GPU multi-source BFS, stage 1's sparse path (``GpuMSBFS(sparse=...)``, ``DG_MS_SPARSE``):
a virtual slice set of at most 32 slices runs one slice per lane on CUDA cores
(``dg_ms_sparse_vss`` in kernels/msbfs.cu) instead of the MMA loop over 128 slices.

The sums must equal the CPU backend's exactly, with the path forced on, on every schedule
(blocks of 256 and 1024 threads, with the prefetching + shared dirty bits build, the
grid-wide persistent kernel with 1 and 3 groups, the stepwise kernels; few distinct builds,
each an NVRTC compile on the device), per vertex, per source and symmetric; on road-like
graphs (grids: every VSS sparse; vertex counts that are not multiples of 8 or 128),
scale-free ones (Kronecker: a mix of sparse and dense VSSs), directed and disconnected
ones, and on real graphs (minnesota, power and road-NY's first batches: (nearly) every VSS
sparse; email-Enron and cond-mat-2005: 69% of them).  Each test also checks that the runner was built with the path
and that the graph has sparse VSSs, so a wrong sparse path cannot pass by not running.
Skipped without a GPU, except the argument checks and the sm_90 builds at the end.
"""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from distgraph import generators as gen
from distgraph.graph import Graph

from _msbfs_cases import closeness_pair, closeness_same, graphs, real_graph as _real, runner, same as _same, \
    sums as _sums


def _graphs():
    out = graphs(undirected_disconnected=True)
    # road-like: every VSS sparse; 1073 and 4097 vertices (not multiples of 8 or 128)
    out["grid_29x37"] = gen.grid(29, 37)
    out["grid_17x241"] = gen.grid(17, 241)
    # two grids and isolated vertices: disconnected, n = 99 + 143 + 5 = 247
    a, b = gen.grid(9, 11), gen.grid(11, 13)
    sa = np.repeat(np.arange(a.n), np.diff(a.indptr))
    sb = np.repeat(np.arange(b.n), np.diff(b.indptr))
    out["two_grids_isolated"] = Graph.from_edges(np.concatenate([sa, sb + a.n]),
                                                 np.concatenate([a.indices, b.indices + a.n]),
                                                 n=a.n + b.n + 5, directed=False)
    return out


GRAPHS = _graphs()
UNDIRECTED = ["path4", "kron10", "grid_37x29", "grid_29x37", "grid_17x241", "undirected_disconnected",
              "two_grids_isolated"]
SCHEDULES = {"b256": {"groups": "blocks", "block_threads": 256},
             "b1024": {"groups": "blocks", "block_threads": 1024},
             "b1024+pf+sdb": {"groups": "blocks", "block_threads": 1024, "prefetch": True, "shared_dbits": True},
             "grid1": {"groups": 1},
             "grid3": {"groups": 3},
             "stepwise": {"mode": "stepwise"}}


def _runner(g, sched, **kw):
    kw.setdefault("reorder", "none")
    kw.setdefault("sparse", "on")
    r = runner(g, **SCHEDULES[sched], **kw)
    assert r.sparse is (kw["sparse"] in ("on", True)) and r.info["sparse"] == r.sparse
    return r


def _has_sparse_vss(r):
    # the graph gives the path work (the share is of the BVSS the kernels run on)
    return r.sparse_share > 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("sched,kappa", [("b1024", 256), ("b1024+pf+sdb", 256), ("b256", 32), ("grid3", 256),
                                         ("stepwise", 256)])
def test_sparse_per_vertex_equal_cpu(name, sched, kappa):
    g = GRAPHS[name]
    r = _runner(g, sched, kappa=kappa)
    if name != "isolated_only":
        assert _has_sparse_vss(r)
    srcs = np.arange(g.n, dtype=np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("sched,kappa", [("b1024", 256), ("grid1", 256), ("stepwise", 256)])
def test_sparse_per_source_equal_cpu(name, sched, kappa):
    g = GRAPHS[name]
    r = _runner(g, sched, kappa=kappa, **({"slots": 3} if sched.startswith("b") else {}))
    rng = np.random.default_rng(4)
    srcs = rng.integers(0, g.n, 300).astype(np.int64)  # repeats, > one kappa, partial last batch
    assert _same(_sums(g, srcs, True, r, batch_size=100), _sums(g, srcs, True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", UNDIRECTED)
@pytest.mark.parametrize("sched", ["b1024", "b1024+pf+sdb"])
def test_sparse_symmetric_total_equal_cpu(name, sched):
    # closeness of every vertex: each BFS's sums at its source; the total is the per-vertex sum
    g = GRAPHS[name]
    r = _runner(g, sched, kappa=256, symmetric=True)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grid_29x37", "kron10", "kron9_dir", "two_grids_isolated"])
def test_sparse_on_off_auto_same_sums(name):
    # the three settings give the same sums; "auto" is on for the grids (every VSS sparse)
    from distgraph.backends.gpu.msbfs import SPARSE_SHARE

    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    got = {}
    for sp in ("on", "off", "auto"):
        r = runner(g, groups="blocks", reorder="none", sparse=sp)
        got[sp] = _sums(g, srcs, False, r)
        if sp == "auto":
            assert r.sparse == (r.sparse_share >= SPARSE_SHARE)
            if name.startswith(("grid", "two_grids")):
                assert r.sparse and r.sparse_share == 1.0
    assert _same(got["on"], got["off"]) and _same(got["on"], got["auto"])




_REF = {}


def _all_sources_ref(g, name):
    """The CPU backend's per-vertex sums over every source with arcs (once per graph)."""
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    if name not in _REF:
        _REF[name] = _sums(g, srcs, False)
    return srcs, _REF[name]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "power.mtx.gz"])
@pytest.mark.parametrize("order", ["input", "ball"])
def test_sparse_real_graph_all_sources(data_dir, name, order):
    # closeness() of every vertex as the benchmark runs it (symmetric sums, kappa 256,
    # reorder="auto", blocks of 1024), sources in vertex order or in compact BFS balls
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, name)
    srcs, ref = _all_sources_ref(g, name)
    if order == "ball":
        tptr, tidx, _ = g.csc()
        srcs = ball_sources(g.indptr, g.indices, tptr, tidx, srcs, 256)
    r = _runner(g, "b1024", kappa=256, reorder="auto", symmetric=not g.directed)
    assert _has_sparse_vss(r)
    assert _same(_sums(g, srcs, False, r), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["email-Enron.mtx.gz", "cond-mat-2005.mtx.gz"])
def test_sparse_real_scale_free_some_sources(data_dir, name):
    # scale-free real graphs (69% of their VSSs sparse, the rest dense: both paths in one
    # level), 700 random sources, per vertex, reorder="auto" as closeness() runs them
    g = _real(data_dir, name)
    rng = np.random.default_rng(8)
    srcs = np.sort(rng.choice(g.n, size=min(g.n, 700), replace=False)).astype(np.int64)
    r = _runner(g, "b1024", kappa=256, reorder="auto")
    assert 0 < r.sparse_share < 1
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
def test_sparse_road_ny_first_batches(data_dir):
    # road-NY (every VSS sparse after RCM): 3 batches of 256 ball sources, per vertex and per
    # source, against the CPU backend (about 2 s on 16 cores)
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, "road-NY.gr.xz")
    tptr, tidx, _ = g.csc()
    srcs = ball_sources(g.indptr, g.indices, tptr, tidx, np.arange(g.n, dtype=np.int64), 256)[:768]
    r = _runner(g, "b1024", kappa=256, reorder="auto")
    assert r.sparse_share > 0.99
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    assert _same(_sums(g, srcs[:300], True, r), _sums(g, srcs[:300], True))


@pytest.mark.gpu
@pytest.mark.parametrize("sparse", ["on", "off"])
def test_sparse_closeness_end_to_end(data_dir, monkeypatch, sparse):
    # closeness() through the config key, as DISTGRAPH_GPU_MSBFS_SPARSE sets it
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_msbfs_sparse", sparse)
    g = _real(data_dir, "minnesota.mtx.gz")
    cpu, gpu = closeness_pair(g)
    assert closeness_same(cpu, gpu)


# ---------------------------------------------------------------- no GPU needed
@pytest.mark.parametrize("bad", ["yes", "", 1, 2.0, "true"])
def test_sparse_bad_argument(bad):
    # validated before CuPy is imported: the same error with or without a GPU
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    tptr, tidx, _ = g.csc()
    with pytest.raises(InvalidArgumentError, match="sparse"):
        GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=None, sparse=bad)


def test_sparse_config_key_checked():
    from distgraph.errors import InvalidArgumentError
    from distgraph.runtime.config import reload_config

    assert reload_config({"DISTGRAPH_GPU_MSBFS_SPARSE": "on"}).gpu_msbfs_sparse == "on"
    assert reload_config({}).gpu_msbfs_sparse == "auto"
    with pytest.raises(InvalidArgumentError, match="GPU_MSBFS_SPARSE"):
        reload_config({"DISTGRAPH_GPU_MSBFS_SPARSE": "maybe"})


NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
MSBFS = Path(__file__).resolve().parent.parent / "kernels" / "msbfs.cu"


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("words,block,minb,extra", [(8, 1024, 1, ()), (8, 256, 2, ("-DDG_MS_PREFETCH=1",)),
                                                    (8, 512, 1, ("-DDG_MS_FLUSH4=1",)), (1, 256, 2, ()),
                                                    (4, 1024, 1, ("-DDG_MS_PREFETCH=1",))])
def test_sparse_builds_sm90(words, block, minb, extra, tmp_path):
    # the builds GpuMSBFS(sparse="on", ...) asks for compile for sm_90 (defines as the loader
    # prepends them), the persistent and stepwise kernels included (same file)
    r = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-c", str(MSBFS), "-o", str(tmp_path / "k.o"),
                        "-I", str(MSBFS.parent), f"-DDG_MS_WORDS={words}", f"-DDG_MS_BLOCK={block}",
                        f"-DDG_MS_MINB={minb}", "-DDG_MS_SPARSE=1", *extra], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
