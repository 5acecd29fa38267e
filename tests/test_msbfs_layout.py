"""The GPU multi-source BFS (BLEST Alg. 5, kernels/msbfs.cu) as a numpy model, on the CPU.

CI has no GPU, so the logic of the kernels is checked here through
:func:`distgraph.backends.gpu.msbfs.emulate_batch`, which keeps their state in their
layout (getVI positions, kappa-bit elements, activeSets / wasact / dirtySets, VSS
queues, the partitioned exchange ranges) and runs their steps.  Its sums (farness,
reach, harmonic limbs) must equal the CPU backend's exactly for every kappa, for one
to four parts (partitioned mode), with and without bottom-up levels, per vertex and
per source, on literal, generated and real graphs, directed or not, connected or not.
The driver integration (``run_batches(runner=...)``, collective runners) is checked
with an emulated runner on 1, 2 and 4 MPI ranks.
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph import generators as gen
from distgraph.algorithms.msbfs import run_batches
from distgraph.backends.cpu.bits import normalize_limbs, recip_fixed
from distgraph.backends.gpu.msbfs import (KAPPAS, emulate_batch, exchange_ranges, full_words, get_vi,
                                          rows_subgraph, slice_set_bounds)
from distgraph.formats.bvss import build_bvss
from distgraph.graph import Graph
from distgraph.runtime.context import get_context


# ----------------------------------------------------------------------------- helpers
def _self_ctx():
    return get_context(MPI.COMM_SELF, "cpu")


def _cpu_sums(g, sources, per_source):
    tptr, tidx, _ = g.csc()
    far, reach, h0, h1, h2, _ = run_batches(g.indptr, g.indices, tptr, tidx, np.asarray(sources, np.int64),
                                            per_source=per_source, batch_size=512, ctx=_self_ctx(),
                                            progress=False)
    return far, reach, h0, h1, h2


def _parts(g, P):
    bounds = slice_set_bounds(np.diff(g.csc()[0]), P)
    if P == 1:
        return [build_bvss(g)], bounds
    return [build_bvss(rows_subgraph(g.indptr, g.indices, g.n, 8 * int(bounds[p]), min(8 * int(bounds[p + 1]), g.n)))
            for p in range(P)], bounds


def _emulated_sums(g, sources, per_source, kappa, P=1, bu_ratio=0):
    tptr, tidx, _ = g.csc()
    parts, bounds = _parts(g, P)
    k = len(sources)
    size = k if per_source else g.n
    out = tuple(np.zeros(size, np.uint64) for _ in range(5))
    stats = []
    for lo in range(0, k, kappa):
        hi = min(k, lo + kappa)
        o = tuple(a[lo:hi] for a in out) if per_source else out
        stats.append(emulate_batch(g.n, sources[lo:hi], kappa, per_source=per_source, bvss_parts=parts,
                                   bounds=bounds, t_indptr=tptr, t_indices=tidx, h_indptr=g.indptr,
                                   bu_ratio=bu_ratio, out=o))
    far, reach, h0, h1, h2 = out
    normalize_limbs(h0, h1, h2)
    return (far, reach.astype(np.int64), h0, h1, h2), stats


def _assert_same(got, ref):
    for name, a, b in zip(("far", "reach", "h0", "h1", "h2"), got, ref):
        np.testing.assert_array_equal(np.asarray(a, np.uint64), np.asarray(b).astype(np.uint64), err_msg=name)


def _graphs():
    out = {}
    out["path4"] = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    out["star_dir"] = Graph.from_edges([0, 0, 0, 3, 5], [1, 2, 3, 4, 0], n=13, directed=True)
    out["kron7"] = gen.kronecker(7, 8, seed=3)
    out["kron7_dir"] = gen.kronecker(7, 4, seed=4, directed=True)
    out["grid"] = gen.grid(11, 9)
    rng = np.random.default_rng(5)
    n = 203
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    out["random_dir_disconnected"] = Graph.from_edges(src[src < 150], dst[src < 150], n=n, directed=True)
    return out


GRAPHS = _graphs()


# ----------------------------------------------------------------------------- layout
def test_get_vi_paper_example_and_bijection():
    # BLEST Sec. 6.1: n = 24, rho = 3 stores 0, 8, 16, 1, 9, 17, ..., 7, 15, 23
    rho = 3
    pos = get_vi(np.arange(24), rho)
    layout = np.empty(24, np.int64)
    layout[pos] = np.arange(24)
    assert layout.tolist() == [0, 8, 16, 1, 9, 17, 2, 10, 18, 3, 11, 19, 4, 12, 20, 5, 13, 21, 6, 14, 22, 7, 15, 23]
    for n in (1, 7, 8, 9, 100, 1001):
        rho = (n + 7) // 8
        p = get_vi(np.arange(8 * rho), rho)
        assert sorted(p.tolist()) == list(range(8 * rho))
        # consecutive slice sets have consecutive elements for a fixed vertex offset b
        assert np.all(np.diff(get_vi(np.arange(0, 8 * rho, 8) + 3, rho)) == 1)


def test_full_words():
    assert full_words(1, 1).tolist() == [1]
    assert full_words(32, 1).tolist() == [0xFFFFFFFF]
    assert full_words(33, 2).tolist() == [0xFFFFFFFF, 1]
    assert full_words(0, 8).tolist() == [0] * 8
    assert full_words(256, 8).tolist() == [0xFFFFFFFF] * 8


def test_recip_matches_cpu():
    from distgraph.backends.gpu.msbfs import _recip_fixed

    for d in list(range(2, 3000)) + [2**20 + 1, 2**31 - 1]:
        assert _recip_fixed(d) == int(recip_fixed(d)), d


@pytest.mark.parametrize("n,P", [(1, 1), (8, 2), (100, 3), (1001, 4), (64, 8)])
def test_slice_set_bounds_and_exchange_ranges_cover_everything_once(n, P):
    rng = np.random.default_rng(n)
    deg = rng.integers(0, 20, n)
    b = slice_set_bounds(deg, P)
    rho = (n + 7) // 8
    assert b[0] == 0 and b[-1] == rho and np.all(np.diff(b) >= 0) and b.shape == (P + 1,)
    for W in (1, 8):
        cover = {"F": np.zeros(8 * rho * W, int), "act": np.zeros(rho * W, int), "wasact": np.zeros(rho, int)}
        for p in range(P):
            for name, off, num in exchange_ranges(int(b[p]), int(b[p + 1]), rho, W):
                cover[name][off:off + num] += 1
                if name == "F":  # every word sent belongs to an owned vertex
                    elem = np.arange(off, off + num) // W
                    assert np.all((elem % rho >= b[p]) & (elem % rho < b[p + 1]))
        for name, c in cover.items():
            assert np.all(c == 1), name


def test_slice_set_bounds_balanced():
    deg = np.ones(8000, np.int64) * 5
    b = slice_set_bounds(deg, 4)
    assert np.all(np.abs(np.diff(b) - 250) <= 1)


def test_rows_subgraph_bvss_partition_the_arcs():
    g = GRAPHS["kron7"]
    parts, bounds = _parts(g, 3)
    src, dst = [], []
    for p, b in enumerate(parts):
        s, d = b.arcs()
        assert np.all((d >= 8 * bounds[p]) & (d < 8 * bounds[p + 1]))
        src.append(s)
        dst.append(d)
    s, d = np.concatenate(src), np.concatenate(dst)
    o = np.lexsort((d, s))
    s0, d0 = build_bvss(g).arcs()
    assert np.array_equal(s[o], s0) and np.array_equal(d[o], d0)


# ----------------------------------------------------------------------------- sums
def test_path_by_hand():
    g = GRAPHS["path4"]
    (far, reach, h0, h1, h2), _ = _emulated_sums(g, [0, 1, 2, 3], False, 32)
    assert far.tolist() == [6, 4, 4, 6] and reach.tolist() == [4, 4, 4, 4]
    assert h0.tolist() == [1, 2, 2, 1]  # harmonic 1 + 1/2 + 1/3 = 1.833 for vertex 0


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", KAPPAS)
def test_emulation_equals_cpu_backend_per_vertex(name, kappa):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    ref = _cpu_sums(g, srcs, False)
    got, _ = _emulated_sums(g, srcs, False, kappa)
    _assert_same(got, ref)


@pytest.mark.parametrize("name", ["kron7", "grid", "random_dir_disconnected", "star_dir"])
@pytest.mark.parametrize("P", [2, 3, 4])
def test_emulation_partitioned_equals_cpu_backend(name, P):
    g = GRAPHS[name]
    srcs = np.arange(0, g.n, 2, dtype=np.int64)
    ref = _cpu_sums(g, srcs, False)
    got, _ = _emulated_sums(g, srcs, False, 64, P=P)
    _assert_same(got, ref)


@pytest.mark.parametrize("name", ["kron7", "grid", "random_dir_disconnected"])
@pytest.mark.parametrize("bu", [1, 4, 2**30])
def test_emulation_bottom_up_equals_cpu_backend(name, bu):
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    ref = _cpu_sums(g, srcs, False)
    got, stats = _emulated_sums(g, srcs, False, 128, bu_ratio=bu)
    _assert_same(got, ref)
    if bu == 2**30 and name != "random_dir_disconnected":
        assert sum(s["bottom_up"] for s in stats) > 0


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("P", [1, 3])
def test_emulation_per_source_equals_cpu_backend(name, P):
    g = GRAPHS[name]
    rng = np.random.default_rng(7)
    srcs = rng.integers(0, g.n, 70).astype(np.int64)   # repeats allowed
    srcs[0] = g.n - 1
    ref = _cpu_sums(g, srcs, True)
    got, _ = _emulated_sums(g, srcs, True, 32, P=P)
    _assert_same(got, ref)


def test_emulation_repeated_and_partial_batch_sources():
    g = GRAPHS["kron7"]
    srcs = np.array([5, 5, 5, 0, 127, 64, 5], np.int64)
    ref = _cpu_sums(g, srcs, False)
    got, _ = _emulated_sums(g, srcs, False, 256, P=2)
    _assert_same(got, ref)


@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "wiki-Vote.txt.gz"])
def test_emulation_real_graph(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    rng = np.random.default_rng(11)
    srcs = rng.choice(g.n, size=min(g.n, 40), replace=False).astype(np.int64)
    ref = _cpu_sums(g, srcs, False)
    got, _ = _emulated_sums(g, srcs, False, 32, P=2)
    _assert_same(got, ref)


# ----------------------------------------------------------------------------- driver
class EmulatedRunner:
    """run_batches runner backed by the model (what GpuMSBFS.run does, without a GPU):
    in collective mode this rank keeps the sums of its own vertices only and the batch's
    sums are added over the ranks, as the partitioned GPU mode does."""

    def __init__(self, hptr, hidx, kappa, comm, collective):
        self.g = Graph(hptr, hidx, None, directed=True)
        self.kappa, self.comm, self.collective = kappa, comm, collective
        self.P = comm.Get_size() if collective else 1
        self.parts, self.bounds = _parts(self.g, self.P)

    def run(self, sources, per_source, out):
        g = self.g
        k = len(sources)
        tmp = tuple(np.zeros(k if per_source else g.n, np.uint64) for _ in range(5))
        for lo in range(0, k, self.kappa):
            hi = min(k, lo + self.kappa)
            o = tuple(a[lo:hi] for a in tmp) if per_source else tmp
            emulate_batch(g.n, sources[lo:hi], self.kappa, per_source=per_source, bvss_parts=self.parts,
                          bounds=self.bounds, out=o)
        if self.collective and not per_source:
            r = self.comm.Get_rank()
            own = np.zeros(g.n, bool)
            own[8 * self.bounds[r]: 8 * self.bounds[r + 1]] = True
            for a in tmp:
                a[~own] = 0
            for a in tmp:
                self.comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        for a, t in zip(out, tmp):
            a += t.astype(a.dtype)


def _driver(g, sources, per_source, runner, comm, batch_size):
    ctx = get_context(comm, "cpu")
    tptr, tidx, _ = g.csc()
    return run_batches(g.indptr, g.indices, tptr, tidx, sources, per_source=per_source, batch_size=batch_size,
                       ctx=ctx, progress=False, runner=runner)[:5]


@pytest.mark.mpi
@pytest.mark.parametrize("collective", [False, True])
def test_driver_with_runner_equals_cpu_on_any_rank_count(collective):
    comm = MPI.COMM_WORLD
    g = gen.kronecker(7, 6, seed=9)
    srcs = np.arange(g.n, dtype=np.int64)
    ok = True
    for per_source in (False, True):
        s = srcs if not per_source else srcs[::3]
        ref = _driver(g, s, per_source, None, comm, 40)
        got = _driver(g, s, per_source, EmulatedRunner(g.indptr, g.indices, 32, comm, collective), comm, 40)
        ok &= all(np.array_equal(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
                  for a, b in zip(got, ref))
    oks = comm.allgather(bool(ok))
    assert all(oks), oks
