"""The pull kernels' candidate bits in global memory (``distgraph_msbfs_pull_blocks`` with
``shared_cb`` = 0, one pair of bit arrays per slot in ``GpuMSBFS._dbits``; the per-vertex
candidates of ``distgraph_msbfs_pull_vertex_blocks``, one array of a bit per vertex per slot,
as well).

GpuMSBFS keeps the two candidate bit arrays (level parity) in shared memory when their
``8 * (rho // 32 + 1)`` bytes fit in ``SHARED_DBITS_MAX - 4096``: up to about 1.44 million
vertices.  Larger road-like graphs (pull="auto" takes them) run the global-memory path, which
none of tests/test_gpu_msbfs_pull.py's graphs reaches (road-NY's 33k slice sets fit).  Here the
small graphs are forced onto it by lowering ``msbfs.SHARED_DBITS_MAX`` (read when the runner
is built), and the sums must equal the CPU backend's: per vertex (blocks of 256, 512 and 1024
threads; 512 is not in the other pull tests), per source with more batches than slots (the
bits a batch leaves behind would show in the next batch of the slot) and symmetric.  The
fake-CuPy case (no GPU needed) checks the host side only: the flag passed as shared_cb, the
bit arrays' size (the Python model of the kernel in tests/test_msbfs_layout.py asserts it and
that they are zero; the model keeps its candidates in its own sets, so it cannot check the
kernel's clearing of them: the GPU tests do).
"""

import numpy as np
import pytest

from distgraph import generators as gen

from _msbfs_cases import graphs, runner, same as _same, sums as _sums
# the fake CuPy (a pytest fixture) and the Python model of the kernels, for the host-side case
from test_msbfs_layout import GRAPHS as LAYOUT_GRAPHS, _assert_same, _cpu_sums, _fake_runner, fake_gpu  # noqa: F401


def _graphs():
    out = graphs(undirected_disconnected=True)
    out["grid_29x37"] = gen.grid(29, 37)
    return out


GRAPHS = _graphs()


@pytest.fixture
def global_cb(monkeypatch):
    from distgraph.backends.gpu import msbfs

    # 8 * dbw <= SHARED_DBITS_MAX - 4096 never holds: the candidate bits go to global memory
    monkeypatch.setattr(msbfs, "SHARED_DBITS_MAX", 0)


def _runner(g, threads=1024, cands="sets", **kw):
    kw.setdefault("reorder", "none")
    r = runner(g, groups="blocks", block_threads=threads, pull="on", pull_candidates=cands, **kw)
    assert r.schedule == "blocks" and r.pull and r.info["pull"] and r.pull_candidates == cands
    assert not r.info["shared_dbits"] and not r.shared_dbits
    # per slot: one pair of bit arrays (a bit per slice set), or one array of a bit per vertex
    assert r._dbits.size == r.slots * (2 * r._dbw if cands == "sets" else r._dbw)
    assert r._dbw == (g.n // 32 + 1 if cands == "vertices" else (g.n + 7) // 8 // 32 + 1)
    return r


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa,threads", [(256, 1024), (32, 256), (128, 512)])
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_pull_global_bits_per_vertex_equal_cpu(global_cb, name, kappa, threads, cands):
    g = GRAPHS[name]
    r = _runner(g, threads, cands, kappa=kappa)
    srcs = np.arange(g.n, dtype=np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grid_29x37", "kron10", "kron9_dir", "random_dir_disconnected"])
@pytest.mark.parametrize("kappa", [256, 32])
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_pull_global_bits_per_source_slots_reused(global_cb, name, kappa, cands):
    g = GRAPHS[name]
    r = _runner(g, cands=cands, kappa=kappa, slots=2)   # several batches per slot: its bits must be left clean
    rng = np.random.default_rng(11)
    srcs = rng.integers(0, g.n, 700).astype(np.int64)
    assert _same(_sums(g, srcs, True, r, batch_size=350), _sums(g, srcs, True, batch_size=350))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grid_37x29", "undirected_disconnected"])
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_pull_global_bits_symmetric_equal_cpu(global_cb, name, cands):
    g = GRAPHS[name]
    r = _runner(g, cands=cands, kappa=64, symmetric=True, slots=1)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    assert _same(_sums(g, srcs, False, r), _sums(g, srcs, False))


# ---------------------------------------------------------------- no GPU needed
@pytest.mark.parametrize("slots", [1, 3])
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_pull_global_bits_host_code_with_fake_cupy(fake_gpu, monkeypatch, slots, cands):
    # the fake CuPy and the Python model of the pull kernel (tests/test_msbfs_layout.py): the
    # host's arguments for global candidate bits (shared_cb 0, 2 * cbw zeroed words per slot)
    from distgraph.algorithms.msbfs import run_batches
    from distgraph.backends.gpu import msbfs

    monkeypatch.setattr(msbfs, "SHARED_DBITS_MAX", 0)
    g = LAYOUT_GRAPHS["grid"]
    tptr, tidx, _ = g.csc()
    r = _fake_runner(fake_gpu, g, kappa=32, mode="blocks", slots=slots, pull="on", reorder="none",
                     pull_candidates=cands)
    assert r.pull and not r.shared_dbits and r._dbits.size == r.slots * (2 if cands == "sets" else 1) * r._dbw
    some = np.arange(0, g.n, 2, dtype=np.int64)
    got = run_batches(g.indptr, g.indices, tptr, tidx, some, per_source=True, batch_size=64, ctx=fake_gpu,
                      progress=False, runner=r)[:5]
    _assert_same(got, _cpu_sums(g, some, True))
