"""GPU multi-source BFS, block schedule with larger blocks (``GpuMSBFS(block_threads=512 or
1024)``: more warps share one kappa-source batch; ``DG_MS_BLOCK`` of
``distgraph_msbfs_blocks`` in kernels/msbfs.cu).

The sums must equal the CPU backend's exactly, as with the default 256 threads
(tests/test_gpu_msbfs_blocks.py): per vertex through the driver's deferred path, per source
(repeated sources, a partial last batch), and the symmetric mode (per-source sums added at
the source; only the total over all sources is the per-vertex sum); one block running every
batch in turn (``slots=1``), a few blocks, all resident blocks; with the register cap halved
(``min_blocks=2`` at 512 threads), with shared dirty bits and prefetching, with a lane's four
rows flushed together (``flush4``, ``DG_MS_FLUSH4``); on literal,
generated and real graphs, the real ones also with the sources in compact BFS balls
(``msbfs.ball_sources``, DISTGRAPH_MSBFS_BATCH_ORDER=ball).  Skipped without a GPU, except
the argument checks and the sm_90 builds of the larger blocks at the end.
"""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from distgraph.graph import Graph

from _msbfs_cases import graphs, runner, same as _same, sums as _sums

GRAPHS = graphs(undirected_disconnected=True)
UNDIRECTED = ["path4", "kron10", "grid_37x29", "undirected_disconnected"]


def _runner(g, **kw):
    kw.setdefault("groups", "blocks")
    kw.setdefault("reorder", "none")
    return runner(g, **kw)


def _check_shape(r, bt):
    # the launches really run blocks of bt threads (not the grid schedule's 256)
    assert r.schedule == "blocks" and r.block_threads == bt and r.info["grid"][1] == bt
    assert r.info["block_threads"] == bt
    import cupy as cp

    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    assert 1 <= r.slots <= sms * (2048 // bt)
    # __launch_bounds__(bt, min_blocks) caps the registers: min_blocks blocks of bt fit an SM
    assert 0 < r.info["registers"] * bt * r.info["min_blocks"] <= 65536


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [32, 256])
@pytest.mark.parametrize("slots", [1, None])
@pytest.mark.parametrize("bt", [256, 512, 1024])
def test_block_threads_per_vertex_equal_cpu(name, kappa, slots, bt):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    r = _runner(g, kappa=kappa, slots=slots, block_threads=bt)
    _check_shape(r, bt)
    assert slots is None or r.slots <= slots
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [64, 256])
@pytest.mark.parametrize("bt", [256, 512, 1024])
def test_block_threads_per_source_equal_cpu(name, kappa, bt):
    # per-source counts flushed by threads 0..nsrc-1 of a block of bt threads
    g = GRAPHS[name]
    rng = np.random.default_rng(1)
    srcs = rng.integers(0, g.n, 300).astype(np.int64)  # repeats, > one kappa, partial last batch
    r = _runner(g, kappa=kappa, slots=3, block_threads=bt)
    _check_shape(r, bt)
    assert _same(_sums(g, srcs, True, r, batch_size=100), _sums(g, srcs, True, batch_size=100))


@pytest.mark.gpu
@pytest.mark.parametrize("name", UNDIRECTED)
@pytest.mark.parametrize("kappa", [128, 256])
@pytest.mark.parametrize("slots", [1, None])
@pytest.mark.parametrize("bt", [256, 512, 1024])
def test_block_threads_symmetric_total_equals_cpu(name, kappa, slots, bt):
    g = GRAPHS[name]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    r = _runner(g, kappa=kappa, slots=slots, symmetric=True, block_threads=bt)
    _check_shape(r, bt)
    assert r.symmetric
    assert _same(_sums(g, srcs, False, r, batch_size=96), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["kron10", "kron9_dir", "grid_37x29", "random_dir_disconnected"])
@pytest.mark.parametrize("kappa", [64, 256])
@pytest.mark.parametrize("bt,opts", [(512, {"min_blocks": 2}), (1024, {"shared_dbits": True}),
                                     (1024, {"prefetch": True}), (512, {"prefetch": True, "min_blocks": 2}),
                                     (256, {"min_blocks": 4}), (256, {"flush4": True}), (512, {"flush4": True}),
                                     (1024, {"flush4": True}),
                                     (256, {"flush4": True, "prefetch": True, "shared_dbits": True})],
                         ids=["512+mb2", "1024+sdb", "1024+pf", "512+pf+mb2", "256+mb4", "256+f4", "512+f4",
                              "1024+f4", "256+f4+pf+sdb"])
def test_block_threads_options(name, kappa, bt, opts):
    # the register cap halved (64 registers: 32 warps per SM), dirty bits in shared memory,
    # software-pipelined stage 1, the four rows of a lane flushed together: the same sums
    g = GRAPHS[name]
    r = _runner(g, kappa=kappa, block_threads=bt, symmetric=not g.directed, **opts)
    _check_shape(r, bt)
    assert r.flush4 == opts.get("flush4", False) and r.info["flush4"] == r.flush4
    assert r.info["min_blocks"] == opts.get("min_blocks", max(1, 512 // bt))
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))
    rng = np.random.default_rng(6)
    some = rng.integers(0, g.n, 200).astype(np.int64)
    assert _same(_sums(g, some, True, r, batch_size=100), _sums(g, some, True, batch_size=100))


_ALL = {}


def _need(path):
    if not path.is_file():
        pytest.skip(f"{path.name} not in the data folder {path.parent}")


def _all_sources(path):
    """(graph, its sources with arcs, the CPU backend's per-vertex sums over all of them),
    once per file: the total over all sources does not depend on their order."""
    if path not in _ALL:
        from distgraph.graph.readers import read_graph

        g = read_graph(str(path))
        g = Graph(g.indptr, g.indices, None, directed=g.directed)
        srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
        _ALL[path] = (g, srcs, _sums(g, srcs, False))
    return _ALL[path]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["power.mtx.gz", "email-Enron.mtx.gz"])
@pytest.mark.parametrize("bt,opts", [(256, {}), (512, {}), (1024, {}), (256, {"flush4": True}),
                                     (512, {"flush4": True})], ids=["256", "512", "1024", "256+f4", "512+f4"])
@pytest.mark.parametrize("order", ["input", "ball"])
def test_block_threads_real_graph_all_sources(data_dir, name, bt, opts, order):
    # closeness() of every vertex as benchmarks/gpu_closeness.py --block-sweep runs it: symmetric
    # sums, kappa 256, the sources in vertex order or in compact BFS balls of 256
    from distgraph.algorithms.msbfs import ball_sources

    _need(data_dir / name)
    g, srcs, ref = _all_sources(data_dir / name)
    if order == "ball":
        tptr, tidx, _ = g.csc()
        srcs = ball_sources(g.indptr, g.indices, tptr, tidx, srcs, 256)
        assert not np.array_equal(srcs, np.sort(srcs)) and np.array_equal(np.sort(srcs), _all_sources(
            data_dir / name)[1])
    r = _runner(g, kappa=256, reorder="auto", symmetric=not g.directed, block_threads=bt, **opts)
    _check_shape(r, bt)
    assert r.symmetric == (not g.directed)
    assert _same(_sums(g, srcs, False, r), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cond-mat-2005.mtx.gz", "bitcoin-otc.csv.gz"])
@pytest.mark.parametrize("bt", [256, 512, 1024])
def test_block_threads_real_graphs_per_vertex(data_dir, name, bt):
    from distgraph.graph.readers import read_graph

    _need(data_dir / name)
    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    rng = np.random.default_rng(2)
    srcs = np.sort(rng.choice(g.n, size=min(g.n, 700), replace=False)).astype(np.int64)
    r = _runner(g, kappa=256, reorder="auto", block_threads=bt)
    _check_shape(r, bt)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
def test_block_threads_grid_schedule_keeps_256():
    # outside the block schedule the option is ignored: the grid kernels run blocks of 256
    g = GRAPHS["kron10"]
    r = runner(g, groups=1, reorder="none", block_threads=1024)
    assert r.schedule == "grid" and r.block_threads == 256 and r.info["grid"][1] == 256
    srcs = np.arange(300, dtype=np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


# ---------------------------------------------------------------- no GPU needed
@pytest.mark.parametrize("kw,match", [({"block_threads": 128}, "block_threads"),
                                      ({"block_threads": 300}, "block_threads"),
                                      ({"block_threads": "512"}, "block_threads"),
                                      ({"block_threads": 1024, "min_blocks": 3}, "min_blocks"),
                                      ({"block_threads": 512, "min_blocks": 5}, "min_blocks"),
                                      ({"min_blocks": 0}, "min_blocks"),
                                      ({"min_blocks": 9}, "min_blocks"),
                                      ({"flush4": "no"}, "flush4 must be True or False; got 'no'"),
                                      ({"prefetch": 1}, "prefetch must be True or False; got 1"),
                                      ({"shared_dbits": None}, "shared_dbits must be True or False"),
                                      ({"symmetric": "yes"}, "symmetric must be True or False")])
def test_block_threads_bad_arguments(kw, match):
    # validated before CuPy is imported: the same error with or without a GPU
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.errors import InvalidArgumentError

    g = GRAPHS["path4"]
    tptr, tidx, _ = g.csc()
    with pytest.raises(InvalidArgumentError, match=match):
        GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=None, groups="blocks", **kw)


@pytest.mark.parametrize("kw", [{"groups": 2, "min_blocks": 4}, {"groups": 1, "min_blocks": 8},
                                {"groups": "auto", "min_blocks": 4}, {"mode": "stepwise", "min_blocks": 3},
                                {"groups": 2, "min_blocks": 4, "block_threads": 1024}])
def test_min_blocks_of_grid_schedules_not_bound_by_block_threads(kw, monkeypatch):
    # the grid schedules run blocks of 256 threads whatever block_threads says (default 1024):
    # min_blocks up to 8 is theirs (benchmarks/gpu_closeness.py's minb_3/minb_4 profile rows);
    # only the block schedule's bound depends on block_threads (checked above)
    import distgraph.backends.gpu.loader as loader
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    class Reached(Exception):
        pass

    def stop():
        raise Reached

    monkeypatch.setattr(loader, "import_cupy", stop)
    g = GRAPHS["path4"]
    tptr, tidx, _ = g.csc()
    with pytest.raises(Reached):  # past the argument checks
        GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=None, **kw)


NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
MSBFS = Path(__file__).resolve().parent.parent / "kernels" / "msbfs.cu"


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("words,block,minb,f4", [(8, 512, 1, 0), (8, 1024, 1, 0), (8, 512, 2, 0), (1, 1024, 1, 0),
                                                 (8, 256, 2, 1), (2, 512, 1, 1), (8, 128, 1, 0)])
def test_block_threads_builds_sm90(words, block, minb, f4, tmp_path):
    # the builds GpuMSBFS(block_threads=..., flush4=...) asks for compile for sm_90 (defines as
    # the loader prepends them); a block smaller than kappa is refused at compile time (static_assert)
    r = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-c", str(MSBFS), "-o", str(tmp_path / "k.o"),
                        "-I", str(MSBFS.parent), f"-DDG_MS_WORDS={words}", f"-DDG_MS_BLOCK={block}",
                        f"-DDG_MS_MINB={minb}", f"-DDG_MS_FLUSH4={f4}"], capture_output=True, text=True,
                       timeout=900)
    if block >= 32 * words:
        assert r.returncode == 0, r.stderr[-4000:]
    else:
        assert r.returncode != 0 and "DG_MS_BLOCK" in r.stderr
