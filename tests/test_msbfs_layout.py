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
                                          rows_subgraph, slice_set_bounds, sparse_share)
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


def _emulated_sums(g, sources, per_source, kappa, P=1, bu_ratio=0, sparse=False):
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
                                   bu_ratio=bu_ratio, out=o, sparse=sparse))
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


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("kappa", [32, 256])
@pytest.mark.parametrize("per_source", [False, True])
def test_emulation_sparse_path_equals_cpu_backend(name, kappa, per_source):
    # stage 1 as built with DG_MS_SPARSE (one slice per lane on VSSs of at most 32 slices, the
    # lane words shuffled as dg_ms_sparse_vss does): the CPU backend's sums
    g = GRAPHS[name]
    srcs = np.arange(g.n, dtype=np.int64)
    got, _ = _emulated_sums(g, srcs, per_source, kappa, sparse=True)
    _assert_same(got, _cpu_sums(g, srcs, per_source))


@pytest.mark.parametrize("P", [2, 3])
def test_emulation_sparse_path_partitioned(P):
    # each rank's BVSS of its own rows (fewer slices per VSS: more of them sparse)
    for name in ("kron7", "grid", "random_dir_disconnected"):
        g = GRAPHS[name]
        srcs = np.arange(g.n, dtype=np.int64)
        got, _ = _emulated_sums(g, srcs, False, 64, P=P, sparse=True)
        _assert_same(got, _cpu_sums(g, srcs, False))


def test_emulation_sparse_path_road_graph(data_dir):
    # minnesota (a road graph, 2642 vertices: not a multiple of 8 or 128): every VSS sparse;
    # 64 sources in a compact ball and 64 spread out
    from distgraph.algorithms.msbfs import ball_sources
    from distgraph.graph.readers import read_graph

    path = data_dir / "minnesota.mtx.gz"
    if not path.is_file():
        pytest.skip("minnesota.mtx.gz not in the data folder")
    g = read_graph(str(path))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    assert sparse_share(build_bvss(g)) == 1.0
    tptr, tidx, _ = g.csc()
    ball = np.asarray(ball_sources(g.indptr, g.indices, tptr, tidx, np.arange(g.n, dtype=np.int64), 64)[:64])
    for srcs in (ball.astype(np.int64), np.arange(0, g.n, 41, dtype=np.int64)[:64]):
        got, _ = _emulated_sums(g, srcs, False, 64, sparse=True)
        _assert_same(got, _cpu_sums(g, srcs, False))


def test_sparse_share_and_auto():
    from distgraph.backends.gpu.msbfs import SPARSE_SHARE, auto_sparse
    from distgraph.formats.bvss import TAU

    grid = build_bvss(GRAPHS["grid"])
    assert sparse_share(grid) == 1.0 and auto_sparse(grid)
    kron = build_bvss(GRAPHS["kron7"])
    m = kron.masks.reshape(-1, TAU)
    want = np.mean([not m[v, 32:].any() for v in range(m.shape[0])])
    assert sparse_share(kron) == pytest.approx(want) and 0 < want < SPARSE_SHARE and not auto_sparse(kron)
    empty = build_bvss(Graph.from_edges([], [], n=9, directed=True))
    assert sparse_share(empty) == 0.0 and not auto_sparse(empty)


@pytest.mark.parametrize("name", ["power.mtx.gz", "wiki-Vote.txt.gz"])
def test_emulation_real_graph(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    g = Graph(g.indptr, g.indices, None, directed=g.directed)
    rng = np.random.default_rng(11)
    srcs = rng.choice(g.n, size=min(g.n, 32), replace=False).astype(np.int64)
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

    def run(self, sources, per_source, out, defer=False):  # sums always go to out
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


def _driver(g, sources, per_source, runner, comm, batch_size, ctx=None):
    ctx = get_context(comm, "cpu") if ctx is None else ctx
    tptr, tidx, _ = g.csc()
    return run_batches(g.indptr, g.indices, tptr, tidx, sources, per_source=per_source, batch_size=batch_size,
                       ctx=ctx, progress=False, runner=runner)[:5]


def _assert_runner_sums(ctx, g, runner, sources, per_source, batch_size):
    """The runner's sums over ``sources`` through run_batches equal the CPU backend's."""
    _assert_same(_driver(g, sources, per_source, runner, None, batch_size, ctx=ctx), _cpu_sums(g, sources, per_source))


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


# ----------------------------------------------------------------------------- host code, fake CuPy
# GpuMSBFS (the host side) runs here against a numpy stand-in for CuPy: every launch is
# checked against the parameter list parsed from kernels/msbfs.cu (count, pointer element
# types, exact scalar widths) and executed by a Python version of that kernel entry point.
# This catches host/kernel argument mismatches and host-loop errors (queue and counter
# slots, per-source views, reordering maps) in CI; the CUDA code itself runs in
# tests/test_gpu_msbfs.py on a GPU.
import re
import types
from pathlib import Path

from distgraph.backends.gpu.msbfs import _recip_fixed

_CU = Path(__file__).resolve().parent.parent / "kernels" / "msbfs.cu"
_PTR = {"int4": np.int32, "int2": np.int32, "unsigned": np.uint32, "unsigned char": np.uint8, "int": np.int32,
        "dg_i64": np.int64, "dg_u64": np.uint64}
_SCALAR = {"int": np.int32, "dg_i64": np.int64}


def _signatures():
    src = _CU.read_text()
    sigs = {}
    for m in re.finditer(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*(\w+)\((.*?)\)\s*\{', src, re.S):
        params = []
        for p in m.group(2).split(","):
            p = " ".join(p.replace("__restrict__", "").replace("const ", "").split())
            ptr = "*" in p
            typ = p.split("*")[0].strip() if ptr else p.rsplit(" ", 1)[0]
            params.append((ptr, typ, p.replace("*", " ").split()[-1]))
        sigs[m.group(1)] = params
    return sigs


class _FakeArr(np.ndarray):
    def get(self):
        return np.array(self)


def _fake_cupy(sms=4):
    cp = types.SimpleNamespace()
    for t in ("int32", "int64", "uint8", "uint32", "uint64"):
        setattr(cp, t, getattr(np, t))
    cp.asarray = lambda a, dtype=None: np.array(a, dtype=dtype).view(_FakeArr)
    cp.zeros = lambda n, dtype=np.float64: np.zeros(n, dtype).view(_FakeArr)
    dev = types.SimpleNamespace(attributes={"MultiProcessorCount": sms}, synchronize=lambda: None, id=0)
    stream = types.SimpleNamespace(synchronize=lambda: None)
    cp.cuda = types.SimpleNamespace(Device=lambda *a: dev, get_current_stream=lambda: stream,
                                    runtime=types.SimpleNamespace(memGetInfo=lambda: (2**34, 2**34)))
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_bytes=lambda: 0, used_bytes=lambda: 0)
    return cp


def _add_sums(sums, at, level, p):
    """The kernels' sums of ``p`` BFSs reaching ``at``'s entry at ``level`` (BLEST Eq. 7 with
    reach and the harmonic limbs of distgraph/backends/cpu/bits.py)."""
    far, reach, h0, h1, h2 = sums
    far[at] += np.uint64(level * p)
    reach[at] += np.uint64(p)
    if level == 1:
        h0[at] += np.uint64(p)
    elif level >= 2:
        rf = _recip_fixed(level)
        h1[at] += np.uint64(p * (rf >> 32))
        h2[at] += np.uint64(p * (rf & 0xFFFFFFFF))


class _Kernels:
    """Python versions of the kernel entry points of msbfs.cu (same parameters)."""

    def __init__(self, W):
        self.W = W
        self.sigs = _signatures()

    def get_function(self, name):
        params = self.sigs[name]
        impl = getattr(self, name.replace("distgraph_msbfs_", "k_"))

        def launch(grid, block, args, shared_mem=0):
            assert len(args) == len(params), (name, len(args), len(params))
            for a, (ptr, typ, pname) in zip(args, params):
                if ptr and pname == "leaf" and not isinstance(a, np.ndarray):
                    assert type(a) is np.uint64 and int(a) == 0, (name, pname, a)  # a null pointer
                elif ptr:
                    want = np.uint8 if pname == "masks" else _PTR[typ]  # 4 masks per 32-bit word
                    assert isinstance(a, np.ndarray) and a.dtype == want, (name, pname, typ, type(a), a.dtype)
                else:
                    assert type(a) is _SCALAR[typ], (name, pname, typ, type(a))
            impl(*[np.asarray(a) if isinstance(a, np.ndarray) else a.item() for a in args])
        launch.num_regs = 64
        return launch

    # -- helpers on flat arrays
    def _el(self, a):
        return a.reshape(-1, self.W)

    def k_seed(self, srcs, nsrc, n, Vn, dirty):
        rho = (n + 7) // 8
        for c in range(nsrc):
            self._el(Vn)[get_vi(srcs[c], rho), c >> 5] |= np.uint32(1 << (c & 31))
            dirty[srcs[c] >> 3] = 1

    def k_stage1(self, row_ids, masks, n, F, act, Vn, dirty, qc, nq, tc_ratio):
        rho = (n + 7) // 8
        q = qc.reshape(-1, 2)[:nq]
        Fe, Ae, Ve = self._el(F), self._el(act), self._el(Vn)
        for vss, ss in q.tolist():
            fbits = np.unpackbits(Fe[np.arange(8) * rho + ss].view(np.uint8), axis=1, bitorder="little")
            abits = np.unpackbits(Ae[ss].view(np.uint8), bitorder="little")
            sl = slice(vss * 128, (vss + 1) * 128)
            mb = np.unpackbits(masks[sl][:, None], axis=1, bitorder="little").astype(np.int32)
            prod = (mb @ (fbits & abits[None, :]).astype(np.int32)) != 0
            hit = prod.any(axis=1)
            rows = row_ids[sl][hit].astype(np.int64)
            np.bitwise_or.at(Ve, get_vi(rows, rho), np.packbits(prod[hit], axis=1, bitorder="little").view(np.uint32))
            dirty[rows >> 3] = 1

    def k_bottom_up(self, t_indptr, t_indices, n, F, Vc, Vn, dirty, v_lo, v_hi, G, heavy, nheavy, bu_heavy):
        rho = (n + 7) // 8
        Fe, Ce, Ne = self._el(F), self._el(Vc), self._el(Vn)
        deg = np.diff(t_indptr)
        assert sorted(heavy[:nheavy].tolist()) == np.flatnonzero(deg > bu_heavy).tolist()
        for u in range(v_lo, v_hi):
            i = int(get_vi(u, rho))
            tgt = G[:self.W] & ~Ce[i]
            if not tgt.any():
                continue
            nb = t_indices[t_indptr[u]:t_indptr[u + 1]].astype(np.int64)
            acc = np.bitwise_or.reduce(Fe[get_vi(nb, rho)], axis=0) if nb.size else np.zeros(self.W, np.uint32)
            if (acc & tgt).any():
                Ne[i] = Ce[i] | acc
                dirty[u >> 3] = 1

    def _stage2(self, real_ptrs, t_indptr, h_indptr, n, F, Vc, Vn, act, wasact, dirty, qn, qn_size, ctr, ss_lo,
                ss_hi, level, nsrc, per_source, enqueue, use_bu, cnt, far, reach, h0, h1, h2, G):
        rho = (n + 7) // 8
        W = self.W
        full = full_words(nsrc, W)
        Fe, Ce, Ne, Ae = self._el(F), self._el(Vc), self._el(Vn), self._el(act)
        q = qn.reshape(-1, 2)
        for ss in range(ss_lo, ss_hi):
            active = False
            if dirty[ss]:
                dirty[ss] = 0
                A = np.zeros(W, np.uint32)
                for b in range(8):
                    u = ss * 8 + b
                    if u >= n:
                        break
                    i = b * rho + ss
                    nx = Ne[i].copy()
                    diff = Ce[i] ^ nx
                    Fe[i] = diff
                    Ce[i] = nx
                    A |= diff
                    p = int(np.bitwise_count(diff).sum())
                    if per_source:
                        bits = np.unpackbits(diff.view(np.uint8), bitorder="little")
                        cnt[:bits.size] += bits.astype(np.uint32)
                    if p:
                        if not per_source:
                            _add_sums((far, reach, h0, h1, h2), u, level, p)
                        if use_bu:
                            ctr[8 + (level & 3)] += h_indptr[u + 1] - h_indptr[u]
                            if (nx == full).all():
                                ctr[4] -= t_indptr[u + 1] - t_indptr[u]
                Ae[ss] = A
                if use_bu:
                    G[:W] |= A
                active = bool(A.any())
                wasact[ss] = active
            elif wasact[ss]:
                wasact[ss] = 0
                Ae[ss] = 0
                Fe[np.arange(8) * rho + ss] = 0
            if enqueue and active:
                for v in range(real_ptrs[ss], real_ptrs[ss + 1]):
                    q[qn_size[0]] = (v, ss)
                    qn_size[0] += 1

    def k_stage2(self, real_ptrs, t_indptr, h_indptr, n, F, Vc, Vn, act, wasact, dirty, qn, ctr, ss_lo, ss_hi,
                 level, nsrc, per_source, enqueue, use_bu, cnt, far, reach, h0, h1, h2, G):
        self._stage2(real_ptrs, t_indptr, h_indptr, n, F, Vc, Vn, act, wasact, dirty, qn,
                     ctr[(level + 1) & 3:], ctr, ss_lo, ss_hi, level, nsrc, per_source, enqueue, use_bu, cnt, far,
                     reach, h0, h1, h2, G)

    def k_build_queue(self, real_ptrs, wasact, n, qn, qn_size, ctr):
        q = qn.reshape(-1, 2)
        for ss in np.flatnonzero(wasact[:(n + 7) // 8]).tolist():
            ctr[16] += 1
            for v in range(real_ptrs[ss], real_ptrs[ss + 1]):
                q[qn_size[0]] = (v, ss)
                qn_size[0] += 1

    def k_flush_sources(self, cnt, level, nsrc, far, reach, h0, h1, h2):
        for c in range(nsrc):
            qv = int(cnt[c])
            if not qv:
                continue
            cnt[c] = 0
            _add_sums((far, reach, h0, h1, h2), c, level, qv)

    def _flush_counts(self, cnt, nsrc, per_source, bt, bs, lvl, far, reach, h0, h1, h2, leaf=None):
        # the block kernels' per-source sums of level lvl (dg_ms_block_flush_counts): at the batch
        # position (per_source 1) or at the source vertex (2); with folded leaves (2, leaf not a
        # null pointer) also at leaf[source] as level lvl + 1
        K = 32 * self.W
        folds = isinstance(leaf, np.ndarray)
        assert folds or int(leaf or 0) == 0, leaf
        assert per_source == 2 or not folds
        for c in np.flatnonzero(cnt[:nsrc]).tolist():
            _add_sums((far, reach, h0, h1, h2), bt * K + c if per_source == 1 else int(bs[c]), lvl, int(cnt[c]))
            if folds and leaf[int(bs[c])] >= 0:
                _add_sums((far, reach, h0, h1, h2), int(leaf[int(bs[c])]), lvl + 1, int(cnt[c]))

    def k_blocks(self, row_ids, masks, real_ptrs, n, srcs, nsrcs, nbatches, per_source, tc_ratio, F, Vc, Vn, act,
                 dbits, dbw, shared_dbits, lists, Q, qcap, far, reach, h0, h1, h2, leaf, nxt, stats):
        # the block schedule: batches taken from the counter, batch b on slot b % slots (the
        # kernel's blocks run them at once); stage 2 over the listed dirty sets and the sets
        # active at the previous level; every slot must be clean when a batch starts and
        # after it ends (the kernel zeroes only Vc and Vn)
        rho = (n + 7) // 8
        W, K, r1 = self.W, 32 * self.W, max(rho, 1)
        nhw = 8 * rho * W
        S = F.size // max(nhw, 1)
        assert S >= 1 and Vc.size == S * nhw and act.size == S * r1 * W and lists.size == S * 3 * r1
        assert shared_dbits or dbits.size == S * dbw
        assert dbw * 32 >= rho
        while int(nxt[0]) < nbatches:
            bt = int(nxt[0])
            nxt[0] += 1
            slot = bt % S
            f, vc, vn = (a[slot * nhw:(slot + 1) * nhw] for a in (F, Vc, Vn))
            ac = act[slot * r1 * W:(slot + 1) * r1 * W]
            db = np.zeros(dbw, np.uint32) if shared_dbits else dbits[slot * dbw:(slot + 1) * dbw]
            assert not (f.any() or vc.any() or vn.any() or ac.any() or db.any()), "slot not clean"
            Fe, Ce, Ne, Ae = self._el(f), self._el(vc), self._el(vn), self._el(ac)
            nsrc = int(nsrcs[bt])
            bs = srcs[bt * K:bt * K + nsrc].astype(np.int64)
            mark = np.zeros(r1, np.uint8)
            self.k_seed(bs.astype(np.int32), nsrc, n, vn, mark)
            q = np.zeros((qcap, 2), np.int32)
            aold = []
            lvl = 0
            while True:
                dl = np.flatnonzero(mark).tolist()
                for ss in dl:
                    db[ss >> 5] |= np.uint32(1 << (ss & 31))
                for ss in aold:  # active at the previous level, not dirty now: cleared
                    if not (int(db[ss >> 5]) >> (ss & 31)) & 1:
                        Ae[ss] = 0
                        Fe[np.arange(8) * rho + ss] = 0
                cnt = np.zeros(K, np.int64)
                anew, nq = [], 0
                for ss in dl:
                    A = np.zeros(W, np.uint32)
                    for b in range(8):
                        u = ss * 8 + b
                        if u >= n:
                            break
                        i = b * rho + ss
                        nx = Ne[i].copy()
                        diff = Ce[i] ^ nx
                        Fe[i] = diff
                        A |= diff
                        p = int(np.bitwise_count(diff).sum())
                        if per_source:
                            cnt += np.unpackbits(diff.view(np.uint8), bitorder="little").astype(np.int64)
                        if p:
                            Ce[i] = nx
                            if not per_source:
                                _add_sums((far, reach, h0, h1, h2), u, lvl, p)
                    Ae[ss] = A
                    if A.any():
                        anew.append(ss)
                        for v in range(real_ptrs[ss], real_ptrs[ss + 1]):
                            q[nq] = (v, ss)
                            nq += 1
                for ss in dl:
                    db[ss >> 5] = 0
                    mark[ss] = 0
                if per_source:
                    self._flush_counts(cnt, nsrc, per_source, bt, bs, lvl, far, reach, h0, h1, h2, leaf)
                aold = anew
                lvl += 1
                if nq == 0:
                    break
                self.k_stage1(row_ids, masks, n, f, ac, vn, mark, q.reshape(-1), nq, tc_ratio)
            for ss in aold:  # still active, no VSS to push: cleared
                Ae[ss] = 0
                Fe[np.arange(8) * rho + ss] = 0
            assert not (f.any() or ac.any() or db.any()), "batch left state behind"
            vc[:] = 0
            vn[:] = 0
            stats[0] += lvl - 1

    def k_pull_blocks(self, t_indptr, t_indices, ell, sg_ptr, sg_idx, n, srcs, nsrcs, nbatches, per_source, F0, F1, Vc,
                      cb, cbw, shared_cb, lists, far, reach, h0, h1, h2, leaf, nxt, stats):
        # candidates of level l + 1: every vertex of the successors, in the set graph, of the
        # sets holding level l's frontier; two bit arrays (level parity) of a bit per set
        rho = (n + 7) // 8
        assert cbw * 32 >= rho and sg_ptr.shape[0] == rho + 1

        def cands(front):
            act = sorted({v >> 3 for v in front})
            sets = sorted({int(t) for s_ in act for t in sg_idx[sg_ptr[s_]:sg_ptr[s_ + 1]]})
            return [u for t in sets for u in range(8 * t, min(8 * t + 8, n))]
        self._pull(t_indptr, t_indices, ell, n, srcs, nsrcs, nbatches, per_source, F0, F1, Vc, cb, 2 * cbw,
                   shared_cb, lists, max(rho, 1), far, reach, h0, h1, h2, leaf, nxt, stats, cands)

    def k_pull_vertex_blocks(self, t_indptr, t_indices, ell, h_indptr, h_indices, sym_arcs, n, srcs, nsrcs,
                             nbatches, per_source, F0, F1, Vc, cb, cbw, shared_cb, lists, far, reach, h0, h1, h2, leaf,
                             nxt, stats):
        # candidates of level l + 1: the out-neighbours of level l's frontier vertices, each once;
        # one bit array of a bit per vertex; sym_arcs says that the in-arcs are the out-arcs (the
        # kernel then marks from them); 4 lists per slot (frontiers and candidates, level parity)
        assert cbw * 32 >= n and h_indptr.shape[0] == n + 1 and h_indptr.dtype == np.int64
        same = bool(np.array_equal(h_indptr, t_indptr) and np.array_equal(h_indices, t_indices))
        assert int(sym_arcs) == int(same)

        def cands(front):
            return sorted({int(t) for v in front for t in h_indices[h_indptr[v]:h_indptr[v + 1]]})
        self._pull(t_indptr, t_indices, ell, n, srcs, nsrcs, nbatches, per_source, F0, F1, Vc, cb, cbw, shared_cb,
                   lists, max(n, 1), far, reach, h0, h1, h2, leaf, nxt, stats, cands, nlists=4)

    def _pull(self, t_indptr, t_indices, ell, n, srcs, nsrcs, nbatches, per_source, F0, F1, Vc, cb, cbslot,
              shared_cb, lists, n_list, far, reach, h0, h1, h2, leaf, nxt, stats, cands, nlists=3):
        # the pull kernels' protocol: level l + 1 pulls the in-neighbours' frontier elements into
        # the candidates of level l + 1 (cands of level l's frontier vertices); frontiers
        # double-buffered (F0: even levels, F1: odd), the frontier of level l - 1 cleared; every
        # slot clean when a batch starts and after it ends.  cbslot: candidate-bit words per slot;
        # n_list: ints per list (nlists lists per slot)
        rho = (n + 7) // 8
        W, K = self.W, 32 * self.W
        nhw = 8 * rho * W
        S = F0.size // max(nhw, 1)
        assert S >= 1 and F1.size == S * nhw and Vc.size == S * nhw and lists.size == S * nlists * n_list
        assert shared_cb or cb.size == S * cbslot
        E = ell.reshape(-1, 4)
        for u in range(n):  # the first four in-arcs, -1 padded
            row = t_indices[t_indptr[u]:t_indptr[u + 1]][:4]
            assert E[u, :row.size].tolist() == row.tolist() and (E[u, row.size:] == -1).all()
        while int(nxt[0]) < nbatches:
            bt = int(nxt[0])
            nxt[0] += 1
            slot = bt % S
            f = [a[slot * nhw:(slot + 1) * nhw] for a in (F0, F1)]
            vc = Vc[slot * nhw:(slot + 1) * nhw]
            cbs = np.zeros(cbslot, np.uint32) if shared_cb else cb[slot * cbslot:(slot + 1) * cbslot]
            assert not (f[0].any() or f[1].any() or vc.any() or cbs.any()), "slot not clean"
            Fe, Ce = [self._el(a) for a in f], self._el(vc)
            nsrc = int(nsrcs[bt])
            bs = srcs[bt * K:bt * K + nsrc].astype(np.int64)
            full = full_words(nsrc, W)
            cnt = np.zeros(K, np.int64)
            for c in range(nsrc):
                i = int(get_vi(bs[c], rho))
                Ce[i, c >> 5] |= np.uint32(1 << (c & 31))
                Fe[0][i, c >> 5] |= np.uint32(1 << (c & 31))
                if per_source:
                    cnt[c] += 1
                else:
                    reach[bs[c]] += np.uint64(1)
            front = sorted(set(bs.tolist()))
            prev = []
            lvl = 0
            while True:
                p = lvl & 1
                if per_source:
                    self._flush_counts(cnt, nsrc, per_source, bt, bs, lvl, far, reach, h0, h1, h2, leaf)
                    cnt[:] = 0
                Fe[p ^ 1][get_vi(np.asarray(prev, np.int64), rho)] = 0  # the frontier of level l - 1
                if not front:
                    break
                L = lvl + 1
                new = []
                for u in cands(front):
                    i = int(get_vi(u, rho))
                    if not (full & ~Ce[i]).any():
                        continue
                    nb = t_indices[t_indptr[u]:t_indptr[u + 1]].astype(np.int64)
                    acc = (np.bitwise_or.reduce(Fe[p][get_vi(nb, rho)], axis=0) if nb.size
                           else np.zeros(W, np.uint32)) & ~Ce[i]
                    pc = int(np.bitwise_count(acc).sum())
                    if not pc:
                        continue
                    new.append(u)
                    Ce[i] |= acc
                    assert not Fe[p ^ 1][i].any(), "next frontier not clean"
                    Fe[p ^ 1][i] = acc
                    if per_source:
                        cnt += np.unpackbits(acc.view(np.uint8), bitorder="little").astype(np.int64)
                    else:
                        _add_sums((far, reach, h0, h1, h2), u, L, pc)
                prev, front = front, new
                lvl += 1
            assert not (f[0].any() or f[1].any() or cbs.any()), "batch left state behind"
            vc[:] = 0
            stats[0] += lvl - 1

    def k_persistent(self, row_ids, masks, real_ptrs, t_indptr, t_indices, h_indptr, n, srcs, nsrcs, per_source,
                     use_bu, bu_ratio, F, Vc, Vn, act, wasact, dirty, Q, qcap, ctr, cnt, far, reach, h0, h1, h2, G,
                     heavy, nheavy, bu_heavy, tc_ratio, stats, ngroups, bar):
        # one group after another, each on its own slice of every state array (the kernel runs
        # them at once on parts of the grid)
        rho = (n + 7) // 8
        W, K, r1 = self.W, 32 * self.W, max(rho, 1)
        for g in range(ngroups):
            def cut(a, size):
                return a[g * size:(g + 1) * size]

            sums = [cut(a, K) for a in (far, reach, h0, h1, h2)] if per_source else [far, reach, h0, h1, h2]
            self._persistent_group(row_ids, masks, real_ptrs, t_indptr, t_indices, h_indptr, n, cut(srcs, K),
                                   int(nsrcs[g]), per_source, use_bu, bu_ratio, cut(F, 8 * rho * W),
                                   cut(Vc, 8 * rho * W), cut(Vn, 8 * rho * W), cut(act, r1 * W), cut(wasact, r1),
                                   cut(dirty, r1), cut(Q, 2 * qcap * 2), qcap, cut(ctr, 32), cut(cnt, K), *sums,
                                   cut(G, 2 * W), heavy, nheavy, bu_heavy, tc_ratio, stats)

    def _persistent_group(self, row_ids, masks, real_ptrs, t_indptr, t_indices, h_indptr, n, srcs, nsrc, per_source,
                          use_bu, bu_ratio, F, Vc, Vn, act, wasact, dirty, Q, qcap, ctr, cnt, far, reach, h0, h1, h2,
                          G, heavy, nheavy, bu_heavy, tc_ratio, stats):
        rho = (n + 7) // 8
        W = self.W
        Qs = Q.reshape(2, qcap, 2)
        self.k_seed(srcs, nsrc, n, Vn, dirty)
        self._stage2(real_ptrs, t_indptr, h_indptr, n, F, Vc, Vn, act, wasact, dirty, Qs[1], ctr[1:], ctr, 0, rho,
                     0, nsrc, per_source, 1, use_bu, cnt, far, reach, h0, h1, h2, G[:W])
        lvl = 1
        while True:
            if per_source:
                self.k_flush_sources(cnt, lvl - 1, nsrc, far, reach, h0, h1, h2)
            nq = int(ctr[lvl & 3])
            if nq == 0:
                break
            ctr[(lvl + 1) & 3] = 0
            ctr[8 + ((lvl + 1) & 3)] = 0
            G[(lvl & 1) * W:(lvl & 1) * W + W] = 0
            if use_bu and ctr[8 + ((lvl - 1) & 3)] * bu_ratio > ctr[4]:
                ctr[13] += 1
                gp = G[((lvl - 1) & 1) * W:((lvl - 1) & 1) * W + W]
                self.k_bottom_up(t_indptr, t_indices, n, F, Vc, Vn, dirty, 0, n, gp, heavy, nheavy, bu_heavy)
            else:
                self.k_stage1(row_ids, masks, n, F, act, Vn, dirty, Qs[lvl & 1], nq, tc_ratio)
            self._stage2(real_ptrs, t_indptr, h_indptr, n, F, Vc, Vn, act, wasact, dirty, Qs[(lvl + 1) & 1],
                         ctr[(lvl + 1) & 3:], ctr, 0, rho, lvl, nsrc, per_source, 1, use_bu, cnt, far, reach, h0,
                         h1, h2, G[(lvl & 1) * W:(lvl & 1) * W + W])
            lvl += 1
        ctr[12] = lvl - 1
        stats[0] += lvl - 1
        stats[1] += ctr[13]


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    import sys

    from distgraph.backends.gpu import bfs, loader  # noqa: F401 (bfs binds import_cupy at import: not the fake)

    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(loader, "import_cupy", lambda: cp)
    monkeypatch.setattr(loader, "get_module", lambda name, defines=None, options=(), cooperative=False:
                        _Kernels(int(defines["DG_MS_WORDS"])))
    return types.SimpleNamespace(size=1, rank=0, comm=MPI.COMM_SELF, local_size=1)


def _fake_runner(ctx, g, **kw):
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    tptr, tidx, _ = g.csc()
    kw.setdefault("announce", False)
    kw.setdefault("cache_dir", False)
    # the slot counts these tests assert are those of 256-thread blocks (8 per SM), the block
    # schedule's size before config.gpu_msbfs_block_threads became 1024 (3ba86f0)
    kw.setdefault("block_threads", 256)
    kw.setdefault("pull", "off")   # stage 1 + stage 2 (the pull kernel: test_host_code_with_fake_cupy_pull)
    if kw.get("mode") == "blocks":  # the block schedule of replicated mode (the default on small graphs)
        kw["mode"] = "replicated"
        kw.setdefault("groups", "blocks")
    elif kw.get("mode") == "replicated":  # the grid-wide persistent kernel
        kw.setdefault("groups", 1)
    return GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=ctx, **kw)


def test_pull_vertex_kernel_seed_barrier_before_marking():
    """distgraph_msbfs_pull_vertex_blocks: the seed clears whole words of the candidate bits
    (its dedup bits) while other warps may already mark level 1's candidates in them, so a block
    barrier must separate the two (its absence gave duplicate candidates and run-to-run
    differences on road-NY at 2230bf3, which no GPU test reproduced). A source check, as the
    race cannot be forced on a GPU."""
    src = _CU.read_text()
    body = src[src.index("distgraph_msbfs_pull_vertex_blocks(const"):]
    body = body[:body.index("\n}\n")]
    seed = body.index("dg_ms_pull_seed(")
    mark = body.index("dg_ms_mark_out(", seed)
    assert "__syncthreads();" in body[seed:mark], "no barrier between the seed and the marking of level 1"


def test_signatures_parsed():
    s = _signatures()
    assert set(s) == {"distgraph_msbfs_" + k for k in
                      ("persistent", "seed", "stage1", "bottom_up", "stage2", "build_queue", "flush_sources",
                       "blocks", "pull_blocks", "pull_vertex_blocks")}
    assert len(s["distgraph_msbfs_persistent"]) == 35


@pytest.mark.parametrize("mode", ["replicated", "blocks", "stepwise"])
@pytest.mark.parametrize("name,kappa,bu,reorder", [("kron7", 32, 0, "none"), ("kron7_dir", 64, 4, "none"),
                                                   ("grid", 128, 2**30, "rcm"),
                                                   ("random_dir_disconnected", 256, 4, "none"),
                                                   ("star_dir", 32, 1, "rcm")])
def test_host_code_with_fake_cupy(fake_gpu, mode, name, kappa, bu, reorder):
    g = GRAPHS[name]
    srcs = np.arange(0, g.n, 3, dtype=np.int64)
    tptr, tidx, _ = g.csc()
    r = _fake_runner(fake_gpu, g, kappa=kappa, mode=mode, bu_ratio=bu, reorder=reorder, window=64)
    for per_source in (False, True):
        ref = _cpu_sums(g, srcs, per_source)
        got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=per_source, batch_size=100,
                          ctx=fake_gpu, progress=False, runner=r)[:5]
        _assert_same(got, ref)
    if bu == 2**30 and mode != "blocks":
        assert r.info["bottom_up_levels"] > 0
    assert r.info["mode"] == ("replicated" if mode == "blocks" else mode) and r.plan.total > 0


@pytest.mark.parametrize("groups", [1, 3])
def test_host_code_with_fake_cupy_groups(fake_gpu, groups):
    g = GRAPHS["random_dir_disconnected"]
    srcs = np.arange(0, g.n, 2, dtype=np.int64)
    tptr, tidx, _ = g.csc()
    r = _fake_runner(fake_gpu, g, kappa=32, groups=groups, bu_ratio=1, reorder="none")
    assert r.groups == groups and r.grid % groups == 0
    for per_source in (False, True):
        got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=per_source, batch_size=100,
                          ctx=fake_gpu, progress=False, runner=r)[:5]
        _assert_same(got, _cpu_sums(g, srcs, per_source))


def test_host_code_with_fake_cupy_groups_checkpointed(fake_gpu, tmp_path):
    """Several groups with a checkpoint: nothing deferred (every batch's sums reach the
    host, and the store, when the batch ends), launches with part of their groups empty;
    a resume from the stored batches gives the same sums."""
    from distgraph.runtime.checkpoint import CheckpointStore

    g = GRAPHS["random_dir_disconnected"]
    srcs = np.arange(0, g.n, 2, dtype=np.int64)
    tptr, tidx, _ = g.csc()
    r = _fake_runner(fake_gpu, g, kappa=32, groups=3, bu_ratio=1, reorder="none")
    ref = _cpu_sums(g, srcs, False)
    store = CheckpointStore(tmp_path / "ck", {"t": 1})
    got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=40, ctx=fake_gpu,
                      progress=False, runner=r, store=store)[:5]
    _assert_same(got, ref)
    assert r._held is None or r._held.shape[0] == 0
    with np.load(store.path) as z:
        assert sorted(z["batches"].tolist()) == list(range((srcs.size + 39) // 40))
        assert np.array_equal(z["far"], got[0])
    again = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=40, ctx=fake_gpu,
                        progress=False, runner=r, store=CheckpointStore(tmp_path / "ck", {"t": 1}, resume=True))[:5]
    _assert_same(again, ref)


@pytest.mark.parametrize("name", ["kron7", "kron7_dir", "grid", "random_dir_disconnected", "path4", "star_dir"])
@pytest.mark.parametrize("slots", [1, 3, None])
@pytest.mark.parametrize("kappa", [32, 128])
def test_host_code_with_fake_cupy_blocks(fake_gpu, name, slots, kappa):
    """The block schedule: sources held until drain (deferred), batches dealt to slots
    (each slot clean before and after a batch), symmetric sums on undirected graphs (total
    over every source with arcs), the options (shared dirty bits, prefetch)."""
    g = GRAPHS[name]
    allsrc = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    for sym, sdb, pf in ((False, False, False), (not g.directed, True, True)):
        r = _fake_runner(fake_gpu, g, kappa=kappa, mode="blocks", slots=slots, symmetric=sym, shared_dbits=sdb,
                         prefetch=pf, reorder="none")
        assert r.schedule == "blocks" and r.symmetric == sym and r.shared_dbits == sdb and r.prefetch == pf
        assert slots is None or r.slots == slots
        _assert_runner_sums(fake_gpu, g, r, allsrc, False, 40)
        _assert_runner_sums(fake_gpu, g, r, np.arange(0, g.n, 3, dtype=np.int64), True, 64)
        assert r.info["launches"] > 0 and r.info["bottom_up_levels"] == 0


@pytest.mark.parametrize("name", ["kron7", "kron7_dir", "grid", "random_dir_disconnected", "path4", "star_dir"])
@pytest.mark.parametrize("slots", [1, 3, None])
@pytest.mark.parametrize("kappa", [32, 256])
@pytest.mark.parametrize("cands", ["sets", "vertices"])
def test_host_code_with_fake_cupy_pull(fake_gpu, name, slots, kappa, cands):
    """The pull kernels' host code (GpuMSBFS(pull="on", pull_candidates=...)): their arguments
    against the kernel's signature, the set graph (or the graph's CSR) and in-arcs uploaded, the
    candidate bits in shared memory or per slot, symmetric, per-vertex and per-source sums."""
    g = GRAPHS[name]
    allsrc = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    item = ("in-arcs (CSR of the transpose, first four per vertex), "
            + ("out-arcs (CSR)" if cands == "vertices" else "slice-set graph"))
    for sym in (False, not g.directed):
        r = _fake_runner(fake_gpu, g, kappa=kappa, mode="blocks", slots=slots, symmetric=sym, pull="on",
                         reorder="none", pull_candidates=cands)
        assert r.schedule == "blocks" and r.pull and r.info["pull"] and r.symmetric == sym
        assert r.pull_candidates == r.info["pull_candidates"] == cands
        assert item in r.plan.items
        assert r._lists.size == r.slots * (4 * g.n if cands == "vertices" else 3 * ((g.n + 7) // 8))
        _assert_runner_sums(fake_gpu, g, r, allsrc, False, 40)
    _assert_runner_sums(fake_gpu, g, r, np.arange(0, g.n, 3, dtype=np.int64), True, 64)


def _spy_builds(monkeypatch) -> list:
    """The defines of every kernel module the (fake) loader builds from now on, in order."""
    from distgraph.backends.gpu import loader

    built = []
    fake = loader.get_module

    def spy(name, defines=None, options=(), cooperative=False):
        built.append(dict(defines or {}))
        return fake(name, defines=defines, options=options, cooperative=cooperative)

    monkeypatch.setattr(loader, "get_module", spy)
    return built


def test_host_code_pull_candidates_auto(fake_gpu, monkeypatch):
    """pull_candidates="auto" (the default): per vertex on the grid (fewer than
    PULL_VERTEX_MEAN_DEGREE arcs per vertex, its bits fit in shared memory), per set on kron7
    (more arcs per vertex), on the grid when the bits do not fit in shared memory, and on a
    directed star whose centre has more than PULL_MAX_IN_DEGREE out-arcs."""
    from distgraph.backends.gpu import msbfs

    g, k = GRAPHS["grid"], GRAPHS["kron7"]
    shared_max = msbfs.SHARED_DBITS_MAX
    r = _fake_runner(fake_gpu, g, mode="blocks", pull="on", reorder="none", pull_candidates="auto")
    assert r.pull_candidates == r.info["pull_candidates"] == "vertices" and r.shared_dbits
    assert g.m <= msbfs.PULL_VERTEX_MEAN_DEGREE * g.n
    r = _fake_runner(fake_gpu, k, mode="blocks", pull="on", reorder="none", pull_candidates="auto")
    assert r.pull_candidates == "sets" and k.m > msbfs.PULL_VERTEX_MEAN_DEGREE * k.n
    monkeypatch.setattr(msbfs, "SHARED_DBITS_MAX", 4096 + 4 * (g.n // 32))   # one word short
    r = _fake_runner(fake_gpu, g, mode="blocks", pull="on", reorder="none", pull_candidates="auto")
    assert r.pull_candidates == "sets"
    r = _fake_runner(fake_gpu, g, mode="blocks", pull="off", reorder="none", pull_candidates="auto")
    assert r.pull_candidates is None and r.info["pull_candidates"] is None
    monkeypatch.setattr(msbfs, "SHARED_DBITS_MAX", shared_max)
    # a directed star: one vertex with more out-arcs than PULL_MAX_IN_DEGREE (in-arcs: one each)
    from distgraph.graph import Graph

    star = Graph.from_edges(np.zeros(600, np.int64), np.arange(1, 601), n=2000, directed=True)
    assert star.m <= msbfs.PULL_VERTEX_MEAN_DEGREE * star.n and 600 > msbfs.PULL_MAX_IN_DEGREE
    r = _fake_runner(fake_gpu, star, mode="blocks", pull="on", reorder="none", pull_candidates="auto")
    assert r.pull_candidates == "sets"


def test_host_code_pull_auto(fake_gpu):
    """pull="auto": on where the sparse path is and no vertex has more than
    PULL_MAX_IN_DEGREE in-arcs (the grid), off on kron7 (not sparse) and on a star (sparse,
    one vertex with more in-arcs than the bound)."""
    from distgraph.backends.gpu import msbfs
    from distgraph.graph import Graph

    star = Graph.from_edges(np.zeros(600, np.int64), np.arange(1, 601), directed=False)
    for g, want in ((GRAPHS["grid"], True), (GRAPHS["kron7"], False), (star, False)):
        r = _fake_runner(fake_gpu, g, mode="blocks", pull="auto", reorder="none")
        assert r.pull is want, (g.n, r.sparse, r.pull)
    assert msbfs.PULL_MAX_IN_DEGREE < 600


@pytest.mark.parametrize("mode", ["blocks", "replicated", "stepwise"])
def test_host_code_sparse_define(fake_gpu, monkeypatch, mode):
    """``sparse``: the kernels are built with DG_MS_SPARSE=1 exactly when it is on -- forced,
    by the config key, or "auto" on a graph whose VSSs are at least SPARSE_SHARE sparse (the
    grid: all; kron7: a quarter) -- and the sums stay the CPU backend's."""
    from distgraph.runtime.config import config

    built = _spy_builds(monkeypatch)
    for name, kw, want in (("grid", {}, True), ("kron7", {}, False), ("kron7", {"sparse": "on"}, True),
                           ("kron7", {"sparse": True}, True), ("grid", {"sparse": "off"}, False),
                           ("grid", {"sparse": False}, False), ("grid", {"sparse": "AUTO"}, True)):
        g = GRAPHS[name]
        built.clear()
        r = _fake_runner(fake_gpu, g, kappa=64, mode=mode, reorder="none", **kw)
        assert r.sparse is want and r.info["sparse"] is want, (name, kw)
        assert built and all(d.get("DG_MS_SPARSE") == (1 if want else None) for d in built), (name, kw, built)
        srcs = np.arange(0, g.n, 2, dtype=np.int64)
        tptr, tidx, _ = g.csc()
        got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=64, ctx=fake_gpu,
                          progress=False, runner=r)[:5]
        _assert_same(got, _cpu_sums(g, srcs, False))
    monkeypatch.setattr(config, "gpu_msbfs_sparse", "on")
    assert _fake_runner(fake_gpu, GRAPHS["kron7"], kappa=64, mode=mode, reorder="none").sparse is True
    monkeypatch.setattr(config, "gpu_msbfs_sparse", "off")
    assert _fake_runner(fake_gpu, GRAPHS["grid"], kappa=64, mode=mode, reorder="none").sparse is False


@pytest.mark.parametrize("name", ["kron7", "kron7_dir", "grid"])
def test_host_code_with_fake_cupy_blocks_checkpointed(fake_gpu, tmp_path, name):
    """With a checkpoint nothing is deferred: runs of a few batches go to the grid-schedule
    companion (symmetric sums per source, added at the sources), bigger ones to the blocks;
    a resume from the stored batches gives the same sums."""
    from distgraph.runtime.checkpoint import CheckpointStore

    g = GRAPHS[name]
    tptr, tidx, _ = g.csc()
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    ref = _cpu_sums(g, srcs, False)
    for slots in (None, 1):
        r = _fake_runner(fake_gpu, g, kappa=32, mode="blocks", slots=slots, symmetric=not g.directed,
                         reorder="none")
        store = CheckpointStore(tmp_path / f"ck{slots}", {"t": 1})
        got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=40, ctx=fake_gpu,
                          progress=False, runner=r, store=store)[:5]
        _assert_same(got, ref)
        nb = -(-srcs.size // 40)
        # 40 sources = 2 batches of 32: the companion with 16 slots, the blocks with 1
        assert r.info["grid_runs"] == (nb if slots is None else 0)
        again = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=40, ctx=fake_gpu,
                            progress=False, runner=r,
                            store=CheckpointStore(tmp_path / f"ck{slots}", {"t": 1}, resume=True))[:5]
        _assert_same(again, ref)


def test_plan_raises_before_allocating():
    from distgraph.backends.gpu.msbfs import msbfs_plan
    from distgraph.errors import DeviceMemoryError

    b = build_bvss(GRAPHS["kron7"])
    p = msbfs_plan(128, b, 256, bottom_up=True, t_arcs=GRAPHS["kron7"].m)
    with pytest.raises(DeviceMemoryError, match="partitioned"):
        p.check(free=1000)
    p.check(free=10**9)


@pytest.mark.mpi
@pytest.mark.parametrize("kappa", [32, 256])
def test_partitioned_host_code_with_fake_cupy_over_mpi_rma(fake_gpu, monkeypatch, kappa):
    """The partitioned mode's host loop (own slice sets, exchange of F/act/wasact with
    one-sided puts, barrier, queue from the replicated wasact, per-batch sums added over
    ranks, batches kept by their rank) on 1, 2 and 4 ranks, with the MPI-RMA PGAS layer
    standing in for NVSHMEM (same interface)."""
    import distgraph.pgas as pgas_mod

    comm = MPI.COMM_WORLD
    real = pgas_mod.get_pgas
    monkeypatch.setattr(pgas_mod, "get_pgas", lambda c=None, backend=None: real(c, "cpu"))
    ctx = types.SimpleNamespace(size=comm.Get_size(), rank=comm.Get_rank(), comm=comm, local_size=1)
    ok = True
    for name in ("kron7_dir", "random_dir_disconnected"):
        g = GRAPHS[name]
        tptr, tidx, _ = g.csc()
        srcs = np.arange(0, g.n, 2, dtype=np.int64)
        r = _fake_runner(ctx, g, kappa=kappa, mode="partitioned", reorder="none")
        ok &= r.collective and r.info["parts"] == comm.Get_size()
        for per_source in (False, True):
            ref = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=per_source, batch_size=48,
                              ctx=get_context(comm, "cpu"), progress=False)[:5]
            got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=per_source, batch_size=48,
                              ctx=ctx, progress=False, runner=r)[:5]
            ok &= all(np.array_equal(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
                      for a, b in zip(got, ref))
        r.close()
    oks = comm.allgather(bool(ok))
    assert all(oks), oks


@pytest.mark.mpi
def test_partitioned_error_on_one_rank_raised_on_all(fake_gpu, monkeypatch):
    """Partitioned mode runs every batch on every rank: a batch whose merge fails on the
    rank that keeps it (checkpoint write, here the test hook) stops all ranks before the
    next collective batch, and all raise that error (before: the others hung)."""
    import distgraph.algorithms.msbfs as msbfs_mod
    import distgraph.pgas as pgas_mod

    comm = MPI.COMM_WORLD
    real = pgas_mod.get_pgas
    monkeypatch.setattr(pgas_mod, "get_pgas", lambda c=None, backend=None: real(c, "cpu"))
    ctx = types.SimpleNamespace(size=comm.Get_size(), rank=comm.Get_rank(), comm=comm, local_size=1)
    g = GRAPHS["kron7_dir"]
    tptr, tidx, _ = g.csc()
    r = _fake_runner(ctx, g, kappa=32, mode="partitioned", reorder="none")

    def hook(b):
        if comm.rank == 0:
            raise RuntimeError(f"batch {b} failed on rank 0")

    monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", hook)
    try:
        run_batches(g.indptr, g.indices, tptr, tidx, np.arange(g.n), per_source=False, batch_size=16, ctx=ctx,
                    progress=False, runner=r)
        msg = None
    except RuntimeError as e:
        msg = str(e)
    r.close()
    oks = comm.allgather(msg == "batch 0 failed on rank 0")
    assert all(oks), oks


@pytest.mark.mpi
def test_blocks_schedule_agreed_over_ranks(fake_gpu):
    """Replicated mode, groups="auto" on a small graph: the block schedule (symmetric sums:
    each BFS's farness added at its source) and the grid schedule (per-vertex sums) give the
    same totals only over *all* sources, so every rank must pick the same one.  Here rank 1
    has room for one grid-wide state copy but not for the blocks' copies; before, rank 1 fell
    back to the grid schedule alone while rank 0 kept the blocks, and the sums added over the
    ranks were wrong (and the checkpoint identity, taken on rank 0, said "per source")."""
    import sys

    from distgraph.backends.gpu.memory import HEADROOM
    from distgraph.backends.gpu.msbfs import msbfs_plan

    comm = MPI.COMM_WORLD
    ctx = types.SimpleNamespace(size=comm.Get_size(), rank=comm.Get_rank(), comm=comm, local_size=1)
    g = GRAPHS["kron7"]
    assert not g.directed
    tptr, tidx, _ = g.csc()
    b = build_bvss(g)
    grid = msbfs_plan(g.n, b, 32, bottom_up=True, t_arcs=g.m).total
    blocks = msbfs_plan(g.n, b, 32, bottom_up=False, slots=4).total   # the fake GPU has 4 SMs
    free = int(grid / HEADROOM) + 1
    assert blocks > HEADROOM * free
    sys.modules["cupy"].cuda.Device().id = comm.Get_rank()   # one GPU per rank (none shared)
    if comm.Get_rank() == 1:
        sys.modules["cupy"].cuda.runtime.memGetInfo = lambda: (free, free)
    r = _fake_runner(ctx, g, kappa=32, mode="replicated", groups="auto", symmetric=True, reorder="none")
    schedules = comm.allgather((r.schedule, r.symmetric))
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    ref = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=32,
                      ctx=get_context(comm, "cpu"), progress=False)[:5]
    got = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=32, ctx=ctx,
                      progress=False, runner=r)[:5]
    same = all(np.array_equal(np.asarray(a).astype(np.uint64), np.asarray(c).astype(np.uint64))
               for a, c in zip(got, ref))
    oks = comm.allgather(bool(same))
    assert all(oks), (oks, schedules)
    assert len(set(schedules)) == 1, schedules


@pytest.mark.parametrize("name", ["kron7", "kron7_dir"])
def test_closeness_checkpoint_sums_kind_with_fake_cupy(fake_gpu, monkeypatch, tmp_path, name):
    """closeness(backend="gpu") of all vertices through the host code (fake CuPy): a run
    stopped after two batches resumes to the CPU backend's result; on an undirected graph
    the block schedule stores symmetric (per-source) sums, and a resume on the grid schedule
    (per-vertex sums) is refused, and the other way round; a directed graph stores
    per-vertex sums under both schedules, so either resumes the other."""
    import distgraph.algorithms.msbfs as msbfs_mod
    import distgraph.runtime.context as context
    from distgraph.algorithms.closeness import closeness
    from distgraph.errors import CheckpointError
    from distgraph.runtime.config import config

    monkeypatch.setattr(context, "get_context",
                        lambda comm=None, backend=None: context.Context(MPI.COMM_SELF, 0, 1, 0, 1, "gpu", 0))
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "gpu_msbfs_kappa", 32)
    g = GRAPHS[name]
    ref = closeness(g, backend="cpu", batch_size=32, progress=False)

    def stop(b):
        if len(stopped) == 2:
            raise RuntimeError("stopped")
        stopped.append(b)

    for first, second in (("blocks", 1), (1, "blocks")):
        ck = tmp_path / f"ck-{name}-{first}"
        stopped = []
        monkeypatch.setattr(config, "gpu_msbfs_groups", first)
        monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", stop)
        with pytest.raises(RuntimeError, match="stopped"):
            closeness(g, backend="gpu", batch_size=32, checkpoint=ck, progress=False)
        monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", None)
        monkeypatch.setattr(config, "gpu_msbfs_groups", second)
        if not g.directed:
            # the refusal says which setting resumes the checkpoint (the checkpointed run's)
            with pytest.raises(CheckpointError, match=f"sums: .*DISTGRAPH_GPU_MSBFS_GROUPS={first}[, ]"):
                closeness(g, backend="gpu", batch_size=32, checkpoint=ck, resume=True, progress=False)
            monkeypatch.setattr(config, "gpu_msbfs_groups", first)
        got = closeness(g, backend="gpu", batch_size=32, checkpoint=ck, resume=True, progress=False)
        for a, b in ((got.farness, ref.farness), (got.reach, ref.reach), (got.harmonic, ref.harmonic),
                     (got.closeness, ref.closeness)):
            np.testing.assert_array_equal(a, b)


def test_gpu_closeness_benchmark_checks_the_timed_schedule(fake_gpu, monkeypatch):
    """benchmarks/gpu_closeness.py bench_gpu (fake CuPy): the warm-up and the checked first
    batch run the block schedule that the timed loop runs (deferred, then drained); before,
    with kappa 256 a batch of 512 sources went to the grid-schedule companion, so the row's
    first_batch_exact_vs_cpu said nothing of the block kernel, which was not warmed up."""
    import sys

    from distgraph.backends.gpu.msbfs import GpuMSBFS

    sys.path.insert(0, str(_CU.parent.parent / "benchmarks"))
    try:
        import gpu_closeness as bench
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(bench, "_ctx", lambda backend: fake_gpu if backend == "gpu" else _self_ctx())
    used = []
    real = GpuMSBFS._grid_companion
    monkeypatch.setattr(GpuMSBFS, "_grid_companion", lambda self: used.append(1) or real(self))
    g = gen.kronecker(10, 8, seed=1)
    row = bench.bench_gpu(g, 60.0, "none", cache_dir=False)
    assert row["schedule"] == "blocks" and row["symmetric"] and row["kappa"] == 256
    assert row["first_batch_exact_vs_cpu"] is True and not row["extrapolated"]
    assert not used


def test_gpu_closeness_benchmark_fold_row(fake_gpu, monkeypatch):
    """benchmarks/gpu_closeness.py block_sweep (fake CuPy): a "fold" row runs without the
    folded leaves as sources, and its unfolded totals equal the plain row's bit for bit (what
    total_same_as_first_row checks on road-NY); its rate counts every vertex."""
    import sys

    sys.path.insert(0, str(_CU.parent.parent / "benchmarks"))
    try:
        import gpu_closeness as bench
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(bench, "_ctx", lambda backend: fake_gpu if backend == "gpu" else _self_ctx())
    g = LEAFY["grid_pendants"]
    rows = {}
    bench.block_sweep(g, "none", ["b256", "fold+b256"], ["ball", "input"], 60.0, True, rows, lambda: None)
    for order in ("ball", "input"):
        a, b = rows[f"b256/{order}"], rows[f"fold+b256/{order}"]
        assert "error" not in a and "error" not in b, (a, b)
        assert not a["fold"] and b["fold"] and b["folded_leaves"] == 4
        assert a["sources_total"] == 38 and b["sources_total"] == 34   # 40 vertices, 2 isolated
        assert b["total_same_as_first_row"] is True and not b["extrapolated"]
        assert b["edge_visits_per_s_per_gpu"] == pytest.approx(38 * g.m / b["seconds"])


def test_blocks_plan_is_the_allocated_state(fake_gpu):
    """The block schedule's plan (info["device_bytes"], what the benchmark JSON records) is
    the plan of the slots allocated after the kernel's occupancy trimmed them (fake GPU: 4
    SMs, 4 blocks per SM at 64 registers: 32 planned, 16 allocated); before, it stayed the
    plan of the untrimmed count (on the H200 1056 instead of 264 copies, about 4x)."""
    from distgraph.backends.gpu.msbfs import msbfs_plan

    g = GRAPHS["kron7"]
    r = _fake_runner(fake_gpu, g, kappa=32, mode="blocks", reorder="none")
    assert r.schedule == "blocks" and r.slots == 16
    state = sum(a.nbytes for a in (r._F, r._Vc, r._Vn, r._act, r._dbits, r._lists, r._Q))
    want = msbfs_plan(g.n, build_bvss(g), 32, bottom_up=False, slots=r.slots)
    assert r.plan.total == want.total and r.info["device_bytes"] == want.total
    assert state <= want.total < 2 * state + 10**6


class _TrackedArr(_FakeArr):
    """A fake device array whose fancy-indexed results (gathers on the device) count as
    allocations too."""

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if isinstance(key, np.ndarray) and key.dtype.kind in "iu" and isinstance(out, _TrackedArr):
            _ALLOC.track(out)
        return out


class _Alloc:
    """Live and peak bytes of the fake device arrays (freed when the array object dies)."""

    def __init__(self):
        self.live = self.peak = 0

    def track(self, a):
        import weakref

        nb = int(a.nbytes)
        self.live += nb
        self.peak = max(self.peak, self.live)
        weakref.finalize(a, self._free, nb)
        return a

    def _free(self, nb):
        self.live -= nb


_ALLOC = _Alloc()


@pytest.mark.parametrize("name", ["kron7", "grid", "random_dir_disconnected"])
@pytest.mark.parametrize("mode, groups, bu", [("replicated", "blocks", 0), ("replicated", 1, 1),
                                              ("replicated", 2, 0), ("stepwise", None, 1)])
def test_plan_counts_what_the_runner_allocates(fake_gpu, monkeypatch, name, mode, groups, bu):
    """The memory plan (the one printed, checked and recorded as info["device_bytes"]) covers
    the peak of the device arrays the runner allocates -- with a reordering (the id map and
    the sums gathered back to the caller's ids) and the deferred per-vertex sums -- within a
    few hundred bytes.  Before, the id map (8n), the gathered sums (40n) and the deferred sums
    (40n) were allocated outside the plan."""
    import gc
    import sys

    global _ALLOC
    _ALLOC = _Alloc()
    cp = sys.modules["cupy"]
    monkeypatch.setattr(cp, "zeros", lambda n, dtype=np.float64: _ALLOC.track(np.zeros(n, dtype).view(_TrackedArr)))
    monkeypatch.setattr(cp, "asarray", lambda a, dtype=None: _ALLOC.track(np.array(a, dtype=dtype).view(_TrackedArr)))
    g = GRAPHS[name]
    tptr, tidx, _ = g.csc()
    kw = {} if groups is None else {"groups": groups}
    r = _fake_runner(fake_gpu, g, kappa=32, mode=mode, bu_ratio=bu, reorder="rcm", window=64, **kw)
    assert r.new_id is not None and r.schedule == ("blocks" if groups == "blocks" else "grid")
    # after construction: everything but what runs allocate (sums, deferred sums, one array
    # gathered to the caller's ids, the launches' source lists), to the byte but for a few
    # one-entry stand-ins
    gc.collect()
    later = 5 * 8 * 512 + 5 * 8 * g.n + 8 * g.n + (16 * r.slots * 32 if r.slots else 4 * 32 * r.groups + 4 * r.groups)
    assert abs(_ALLOC.live - (r.plan.total - later)) <= 64, (_ALLOC.live, r.plan.total - later, r.plan.items)
    # the grid-schedule companion of short block-schedule runs is a runner of its own
    monkeypatch.setattr(type(r), "_grid_companion", lambda self: None)
    srcs = np.arange(g.n, dtype=np.int64)
    big = np.resize(srcs[::-1], 512)          # a full per-source batch (sources repeat)
    for per_source, defer, some, step in ((False, False, srcs, 40), (False, True, srcs, 40),
                                          (True, False, big, 512)):
        ref = _cpu_sums(g, some, per_source)
        out = [np.zeros(some.shape[0] if per_source else g.n, np.uint64) for _ in range(5)]
        out[1] = out[1].astype(np.int64)
        for lo in range(0, some.shape[0], step):
            part = [a[lo:lo + step] for a in out] if per_source else out
            r.run(some[lo:lo + step], per_source, part, defer=defer)
        if defer:
            r.drain(*out)
        normalize_limbs(out[2], out[3], out[4])
        if per_source or not r.symmetric:
            _assert_same(tuple(out), ref)
    gc.collect()
    assert r.plan.total == r.info["device_bytes"]
    assert _ALLOC.peak <= r.plan.total, (_ALLOC.peak, r.plan.items)


@pytest.mark.mpi
@pytest.mark.parametrize("groups", ["blocks", 1])
def test_allocation_failure_on_one_rank_raised_on_all(fake_gpu, groups):
    """Replicated mode on 2 ranks: the plan passed the memory check, then an allocation fails
    on rank 1 only (cupy's OutOfMemoryError, a MemoryError; e.g. ranks sharing a GPU) -- the
    block schedule's per-block state, or the grid schedule's Vc.  Every rank raises a
    DeviceMemoryError that says what was asked and what to try; before, rank 1 raised and
    rank 0 went on into the driver's next collective (a hang)."""
    import sys

    from distgraph.errors import DeviceMemoryError

    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        pytest.skip("needs 2 ranks")
    ctx = types.SimpleNamespace(size=comm.Get_size(), rank=comm.Get_rank(), comm=comm, local_size=1)
    cp = sys.modules["cupy"]
    cp.cuda.Device().id = comm.Get_rank()
    g = GRAPHS["kron7"]
    W, nhat = 1, 16 * 8
    big = (16 if groups == "blocks" else 1) * nhat * W   # the state arrays F, Vc, Vn

    class OutOfMemoryError(MemoryError):
        pass

    real = cp.zeros

    def zeros(n, dtype=np.float64):
        if comm.Get_rank() == 1 and n == big:
            raise OutOfMemoryError(f"Out of memory allocating {4 * n:,} bytes (allocated so far: 42 bytes).")
        return real(n, dtype)

    cp.zeros = zeros
    try:
        _fake_runner(ctx, g, kappa=32, mode="replicated", groups=groups, reorder="none")
        msg = None
    except DeviceMemoryError as e:
        msg = str(e)
    finally:
        cp.zeros = real
    msgs = comm.allgather(msg)
    assert all(m is not None and "rank 1" in m and f"Out of memory allocating {4 * big:,} bytes" in m
               and "fewer ranks per GPU" in m and "DISTGRAPH_GPU_MSBFS_GROUPS=1" in m for m in msgs), msgs


@pytest.mark.mpi
def test_block_schedule_sized_for_the_ranks_sharing_the_gpu(fake_gpu):
    """Ranks bound to one GPU (one node, same device) each allocate their own plan: the
    block schedule halves its state copies until they fit this rank's share of the free
    memory, not all of it (before, every rank sized its copies to 95% of the free memory
    and together they did not fit)."""
    import sys

    from distgraph.backends.gpu.memory import HEADROOM
    from distgraph.backends.gpu.msbfs import msbfs_plan
    from distgraph.errors import DeviceMemoryError

    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    ctx = types.SimpleNamespace(size=p, rank=comm.Get_rank(), comm=comm, local_size=p)
    g = GRAPHS["kron7"]
    b = build_bvss(g)
    full = msbfs_plan(g.n, b, 32, bottom_up=False, slots=32).total   # 4 SMs x 8: the untrimmed count
    least = msbfs_plan(g.n, b, 32, bottom_up=False, slots=4).total   # one copy per SM: the fewest
    free = int(max(full, 1.05 * p * least) / HEADROOM) + 1           # the fewest fit every rank's share
    sys.modules["cupy"].cuda.runtime.memGetInfo = lambda: (free, free)
    r = _fake_runner(ctx, g, kappa=32, mode="blocks", reorder="none")
    assert r._share == p
    assert p * r.plan.total <= HEADROOM * free and (r.slots < 16 or p == 1), (r.slots, r.plan.total, free)
    # a plan that cannot fit the share says so
    sys.modules["cupy"].cuda.runtime.memGetInfo = lambda: (free // 8, free // 8)
    with pytest.raises(DeviceMemoryError, match="ranks share the GPU" if p > 1 else "free on device"):
        _fake_runner(ctx, g, kappa=32, mode="blocks", slots=16, reorder="none")


def test_block_profile_summary(bench_script):
    """benchmarks/gpu_closeness.py --block-profile: the block kernel's stamps -> batch times,
    levels and overlap, and block 0's first batch per level (stage 2 of level l from t2[l] to
    t1[l + 1], stage 1 of level l from t1[l] to t2[l]); unstamped batches are left out."""
    summary = bench_script("gpu_closeness.py", "gpu_closeness_t").block_profile_summary
    batch_ns = np.zeros(8, np.uint64)
    batch_ns[:6] = [1000, 5000, 1000, 3000, 5000, 9000]   # batches 0-2; batch 3 never ran
    levels = np.array([4, 2, 4, 0], np.int32)
    blocks = np.array([0, 1, 0, 0], np.int32)
    t2 = np.array([1000, 2000, 3500, 4500, 0], np.uint64)  # block 0's first batch: levels 0-3
    t1 = np.array([0, 1500, 3000, 4000, 0], np.uint64)
    na, nd, nq = (np.array(x, np.int64) for x in ([0, 1, 2, 2, 0], [1, 3, 4, 1, 0], [0, 8, 16, 4, 0]))
    out = summary(batch_ns, levels, blocks, t2, t1, na, nd, nq, nbatches=4)
    assert out["batches"] == 3 and out["blocks"] == 2
    assert out["batch_us"] == {"mean": 10 / 3, "median": 4.0, "max": 4.0}
    assert out["levels"] == {"mean": 10 / 3, "max": 4}
    assert out["span_us"] == 8.0 and out["concurrent_mean"] == 10 / 8
    rows = out["first_batch_block0"]["per_level"]
    assert [(r["level"], r["stage1_us"], r["stage2_us"], r["queue_vss"]) for r in rows] == \
        [(0, None, 0.5, 0), (1, 0.5, 1.0, 8), (2, 0.5, 0.5, 16), (3, 0.5, None, 4)]
    assert out["first_batch_block0"]["stage1_us_total"] == 1.5
    assert out["first_batch_block0"]["dirty_sets_total"] == 9


def test_grid_size_counts_dynamic_shared_memory():
    """Resident blocks of the block schedule: registers and threads bound them, and so does
    the dynamic shared memory of each block (the pull kernel's candidate bits, the shared dirty
    bits); here through the stand-in's estimate (no CUDA driver)."""
    from distgraph.backends.gpu.msbfs import _grid_size

    cp = _fake_cupy(sms=4)
    k = types.SimpleNamespace(num_regs=32)
    assert _grid_size(cp, k, 256) == 4 * 8            # 2048 threads per SM
    assert _grid_size(cp, k, 256, smem=8 * 1024) == 4 * 8
    assert _grid_size(cp, k, 256, smem=100 * 1024) == 4 * 2   # 228 KB per SM
    assert _grid_size(cp, types.SimpleNamespace(num_regs=64), 1024, smem=44 * 1024) == 4


def _leafy_graphs():
    """Undirected graphs with vertices of one neighbour: hanging paths and stars, isolated edges,
    a self-loop and a repeated arc on a leaf, leaves of leaves' parents in several components."""
    out = {"path4": GRAPHS["path4"], "kron7": GRAPHS["kron7"]}
    out["star"] = Graph.from_edges([0] * 6, [1, 2, 3, 4, 5, 6], directed=False)
    out["two_edges_isolated"] = Graph.from_edges([0, 5], [3, 2], n=7, directed=False)
    g = gen.grid(6, 5)
    src, dst = g.edges()[:2]
    # 30: a leaf of 0 with a self-loop; 35: a leaf of 32 by a repeated arc; 36, 37: leaves of 33 and
    # 34, which has a self-loop; 38, 39: isolated
    extra_s = np.array([0, 30, 7, 7, 29, 31, 32, 32, 33, 34, 34], np.int64)
    extra_d = np.array([30, 30, 31, 32, 33, 34, 35, 35, 36, 37, 34], np.int64)
    h = Graph.from_edges(np.concatenate([src, extra_s]), np.concatenate([dst, extra_d]), n=40, directed=False)
    # the builder merges repeated arcs: the CSR gets 35 -> 32 and 32 -> 35 twice by hand
    rows = [h.indices[h.indptr[v]:h.indptr[v + 1]].tolist() for v in range(h.n)]
    rows[35].append(32)
    rows[32].append(35)
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(h.indptr.dtype)
    out["grid_pendants"] = Graph(indptr, np.concatenate(rows).astype(h.indices.dtype), None, directed=False)
    return out


LEAFY = _leafy_graphs()


def test_leaf_folds_picks_the_leaves():
    """leaf_folds: a vertex is folded when its only neighbour (self-loops and repeated arcs
    aside) is one other vertex; of an isolated edge the higher end; rep is each parent's lowest
    folded leaf."""
    from distgraph.algorithms.closeness import leaf_folds

    g = LEAFY["grid_pendants"]
    leaves, parents, rep = leaf_folds(g.indptr, g.indices)
    nb = [sorted(set(g.indices[g.indptr[v]:g.indptr[v + 1]].tolist()) - {v}) for v in range(g.n)]
    want = [v for v in range(g.n) if len(nb[v]) == 1 and not (len(nb[nb[v][0]]) == 1 and nb[v][0] > v)]
    assert leaves.tolist() == want and parents.tolist() == [nb[v][0] for v in want]
    assert want == [30, 35, 36, 37]
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    assert (g.indices[rows == 30] == 30).any() and (g.indices[rows == 35] == 32).sum() == 2  # the case is built
    assert set(rep[rep >= 0].tolist()) <= set(want)
    for p in set(parents.tolist()):
        assert rep[p] == min(v for v, q in zip(want, parents.tolist()) if q == p)
    assert (rep[np.setdiff1d(np.arange(g.n), parents)] == -1).all()
    e = LEAFY["two_edges_isolated"]
    lv, pa, rp = leaf_folds(e.indptr, e.indices)
    assert lv.tolist() == [3, 5] and pa.tolist() == [0, 2] and rp[[0, 2]].tolist() == [3, 5]


@pytest.mark.parametrize("pull", ["off", "sets", "vertices"])
@pytest.mark.parametrize("name", sorted(LEAFY))
def test_closeness_fold_leaves_with_fake_cupy(fake_gpu, monkeypatch, tmp_path, name, pull):
    """closeness(backend="gpu") of all vertices with leaves folded (config default) through the
    host code and the kernels' protocol (fake CuPy: the leaf sums added in the per-source flush at
    level l + 1, _unfold_leaves after): farness, reach, harmonic and closeness equal the CPU
    backend's bit for bit, with every kernel of the block schedule; folding off gives the same."""
    import distgraph.runtime.context as context
    from distgraph.algorithms.closeness import closeness, leaf_folds
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.runtime.config import config

    monkeypatch.setattr(context, "get_context",
                        lambda comm=None, backend=None: context.Context(MPI.COMM_SELF, 0, 1, 0, 1, "gpu", 0))
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "gpu_msbfs_kappa", 32)
    monkeypatch.setattr(config, "gpu_msbfs_groups", "blocks")
    monkeypatch.setattr(config, "gpu_msbfs_pull", "off" if pull == "off" else "on")
    monkeypatch.setattr(config, "gpu_msbfs_pull_candidates", "sets" if pull == "off" else pull)
    folded = []
    real = GpuMSBFS.fold_leaves

    def spy(self, rep):
        folded.append(int((np.asarray(rep) >= 0).sum()))
        return real(self, rep)

    monkeypatch.setattr(GpuMSBFS, "fold_leaves", spy)
    g = LEAFY[name]
    ref = closeness(g, backend="cpu", batch_size=32, progress=False)
    for conv in ("networkx", "harmonic"):
        for on in (True, False):
            monkeypatch.setattr(config, "gpu_closeness_fold_leaves", on)
            folded.clear()
            got = closeness(g, backend="gpu", batch_size=32, convention=conv, progress=False)
            parents = np.unique(leaf_folds(g.indptr, g.indices)[1])
            assert folded == ([parents.size] if on and parents.size else []), folded
            want = ref if conv == "networkx" else closeness(g, backend="cpu", batch_size=32, convention=conv,
                                                               progress=False)
            for what in ("farness", "reach", "harmonic", "closeness"):
                np.testing.assert_array_equal(getattr(got, what), getattr(want, what), err_msg=f"{what} {conv} {on}")
    # a checkpointed run does not fold (its batches return their sums one by one, on the
    # grid-schedule companion): the same values
    monkeypatch.setattr(config, "gpu_closeness_fold_leaves", True)
    folded.clear()
    got = closeness(g, backend="gpu", batch_size=32, checkpoint=tmp_path / "ck", progress=False)
    assert folded == []
    for what in ("farness", "reach", "harmonic", "closeness"):
        np.testing.assert_array_equal(getattr(got, what), getattr(ref, what), err_msg=f"{what} checkpointed")


def test_fold_leaves_bad_arguments(fake_gpu):
    """fold_leaves: only with symmetric sums; rep of n entries, each -1 or a vertex id."""
    from distgraph.errors import InvalidArgumentError

    g = LEAFY["star"]
    r = _fake_runner(fake_gpu, g, mode="blocks", reorder="none", symmetric=True)
    with pytest.raises(InvalidArgumentError, match=r"rep must be an integer array of shape \(7,\)"):
        r.fold_leaves(np.zeros(6, np.int64))
    with pytest.raises(InvalidArgumentError, match=r"rep must be -1 or a vertex id in \[0, 7\); got 'rep\[2\] = 7'"):
        r.fold_leaves(np.array([-1, -1, 7, -1, -1, -1, -1]))
    with pytest.raises(InvalidArgumentError, match="rep must be an integer array"):
        r.fold_leaves(np.zeros(7))
    r2 = _fake_runner(fake_gpu, g, mode="blocks", reorder="none", symmetric=False)
    with pytest.raises(InvalidArgumentError, match="symmetric sums"):
        r2.fold_leaves(np.full(7, -1))
    r.fold_leaves(None)
    assert r._leaf is None


def test_fold_keeps_runs_on_the_block_schedule(fake_gpu, monkeypatch):
    """A runner that folds leaves runs even a small run whose sums are wanted now on the block
    kernel (the grid-schedule companion does not fold, so the leaves' sums would be lost): the
    sources' own sums and, after _unfold_leaves, their leaves' equal the CPU backend's per-source
    sums."""
    from distgraph.algorithms.closeness import _unfold_leaves, leaf_folds
    from distgraph.algorithms.msbfs import run_batches
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    g = LEAFY["grid_pendants"]
    used = []
    real = GpuMSBFS._grid_companion
    monkeypatch.setattr(GpuMSBFS, "_grid_companion", lambda self: used.append(1) or real(self))
    r = _fake_runner(fake_gpu, g, mode="blocks", reorder="rcm", symmetric=True, kappa=32)
    assert r.schedule == "blocks" and r.slots > 2
    leaves, parents, rep = leaf_folds(g.indptr, g.indices)
    srcs = np.array([0, 7, 29, 32, 33, 34], np.int64)          # the parents, and 7 (no leaf)
    here = np.where(np.isin(np.arange(g.n), srcs), rep, -1)
    mine = np.isin(parents, srcs)
    # without folding this run goes to the companion (one batch: fewer than half the slots busy)
    out = tuple(np.zeros(g.n, t) for t in (np.uint64, np.int64, np.uint64, np.uint64, np.uint64))
    r.run(srcs, False, out)
    assert used
    used.clear()
    r.fold_leaves(here)
    assert r.info["folded_into"] == int((here >= 0).sum())
    out = tuple(np.zeros(g.n, t) for t in (np.uint64, np.int64, np.uint64, np.uint64, np.uint64))
    r.run(srcs, False, out)
    assert not used
    far, reach, h0, h1, h2 = out
    _unfold_leaves(far, reach, h0, h1, h2, leaves[mine], parents[mine], here)
    want_v = np.concatenate([srcs, leaves[mine]])
    tptr, tidx, _ = g.csc()
    ref = run_batches(g.indptr, g.indices, tptr, tidx, want_v, per_source=True, batch_size=64, ctx=_self_ctx(),
                      progress=False)[:5]
    _assert_same([a[want_v] for a in (far, reach, h0, h1, h2)], ref)
    r.fold_leaves(None)
    assert r._leaf is None and "folded_into" not in r.info
