"""The GPU Bellman-Ford's device-side set-up, rounds and finish (issue 7), on the host: NumPy
stands in for CuPy (the code under test only calls what both have), threads for PEs, and NumPy
for the CUDA round kernels, so CI checks the logic that the GPU tests
(tests/test_gpu_bellman_ford.py, test_nvshmem_bellman_ford.py) check on the device:

* ``_Block``: the block uploaded in the graph's own dtypes and converted "on the device",
  its blocks of some vertices, and the negative-weight sums against the host's ``_neg_magnitude``;
* ``rounds_cupy`` against the CPU backend, and the probe round, which stops the rounds on
  high-diameter graphs;
* the distributed rounds: ``_PeerMin`` on 2-4 stand-in PEs (one read by copies), every PE
  ending with one GPU's distances, rounds and tails, every symmetric array freed;
* ``rounds_kernel``'s driver (keys, the loops, the kernels' count) against ``rounds_cupy``, on
  one and three stand-in PEs, with the kernels in NumPy (hubs in pieces included);
* the pull exchange (``_PeerPull``, ``_pull_loop``, the mark and settle kernels in NumPy) on 2-4
  stand-in PEs against one GPU's rounds, stops, relaxations and tails, with the flags' filter
  and their clearing asserted in the emulated kernels; its fallback when a heap is not mapped;
* ``_finish_device``'s glue (gather, min-reduction, cycle fallback), with the host's tight-arc
  pass standing in for ``_Block.tight_pred`` (that kernel is checked against it on the GPU).
"""

import sys
import types

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.algorithms.bellman_ford import bellman_ford, cycle_weight, unreachable
from distgraph.errors import GraphValueError, InvalidArgumentError
from distgraph.backends.cpu.bellman_ford import _neg_magnitude, _setup, work_dtype
from distgraph.backends.gpu import bellman_ford as gbf
from distgraph.generators import kronecker, potential_shift, uniform_weights
from distgraph.graph import Graph

from _bf_host import HostBlock


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    """``import cupy`` gives NumPy (and a no-op device sync), ``cupyx.scatter_min`` a NumPy minimum.at, and the
    scatter-minimum probe's memo starts empty (so no NumPy function stays memoized)."""
    class NumpyCupy(types.ModuleType):
        def __getattr__(self, name):
            return getattr(np, name)

    fake = NumpyCupy("cupy")
    fake.cuda = types.SimpleNamespace(Device=lambda *a: types.SimpleNamespace(synchronize=lambda: None))
    cupyx = types.SimpleNamespace(scatter_min=lambda a, i, x: np.minimum.at(a, i, x))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setattr(gbf, "_EXACT", {})
    return np


def _graphs():
    rng = np.random.default_rng(3)
    for trial in range(12):
        n, m = int(rng.integers(2, 60)), int(rng.integers(1, 300))
        dt = [np.int32, np.int64, np.float32, np.float64][trial % 4]
        w = rng.integers(-3, 20, m).astype(dt)
        yield Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), w, n=n, directed=trial % 2 == 0)
    g = uniform_weights(kronecker(9, seed=4), seed=4)
    yield potential_shift(g, seed=2)


def test_block_upload_views_and_negative_sums(numpy_as_cupy):
    big = np.iinfo(np.int64).max
    cases = list(_graphs())
    # int64 magnitudes up to 2**63 (the host splits them in 32-bit halves; so does the block)
    ext = Graph.from_edges([0, 0, 1, 1, 2], [1, 2, 2, 3, 3],
                           np.array([-(2 ** 63), -big, 5, -(2 ** 40) - 3, -1], np.int64), n=4, directed=True)
    for g in cases + [ext, Graph.from_edges([0, 1], [1, 2], n=3)]:
        w = g.weights
        part, lo, hi, indptr, indices, ww, wdt = _setup(g, w, 0, MPI.COMM_SELF)
        blk = gbf._Block(np, g, w, 0, g.n)
        assert blk.wdt == wdt and blk.indptr.dtype == np.int64 and blk.indices.dtype == np.int32
        np.testing.assert_array_equal(blk.indptr, indptr)
        np.testing.assert_array_equal(blk.indices, indices)
        if w is None:
            assert blk.w is None and np.array_equal(blk.w_bits(), np.ones(g.m, np.int64))
        else:  # int32 and float32 weights stay 4 bytes (the kernels widen them); others widen
            assert blk.w.dtype == (w.dtype if w.dtype in (np.int32, np.float32) else work_dtype(w.dtype))
            assert blk.suffix == {"int32": "i32", "float32": "f32", "int64": "i64", "float64": "f64"}[blk.w.dtype.name]
            np.testing.assert_array_equal(blk.w, ww)
            np.testing.assert_array_equal(blk.w_work(), ww)
            assert blk.w_work().dtype == wdt
            np.testing.assert_array_equal(blk.w_bits(), ww.view(np.int64) if wdt.kind == "f" else ww)
        assert blk.neg_magnitude() == _neg_magnitude(ww, wdt)
        # a block of some vertices is that part of the whole graph's block
        for a, b in ((0, g.n // 2), (g.n // 3, g.n), (g.n, g.n)):
            f = gbf._Block(np, g, w, a, b)
            ea, eb = int(indptr[a]), int(indptr[b])
            assert (f.lo, f.hi, f.nl, f.m) == (a, b, b - a, eb - ea)
            np.testing.assert_array_equal(f.indptr, blk.indptr[a:b + 1] - blk.indptr[a])
            if f.m:
                np.testing.assert_array_equal(f.indices, blk.indices[ea:eb])
                np.testing.assert_array_equal(f.w_bits(), blk.w_bits()[ea:eb])
            assert f.neg_magnitude() == _neg_magnitude(ww[ea:eb], wdt)
    assert gbf._Block(np, ext, ext.weights, 0, 4).neg_magnitude() == (2 ** 63 + big + 2 ** 40 + 3 + 1, 4)


def test_block_keeps_weights_in_the_store_dtype(numpy_as_cupy):
    """_Block's stored weights: int32 and float32 as they are; narrower ones widened to those
    (bool, int8/16, uint8/16, float16), wider or unsigned 32/64-bit ones to the work dtype; the
    values exact, w_work in the work dtype, the kernels' suffix by the stored dtype."""
    from distgraph.backends.cpu.bellman_ford import work_dtype

    cases = {np.bool_: np.int32, np.int8: np.int32, np.int16: np.int32, np.int32: np.int32,
             np.uint8: np.int32, np.uint16: np.int32, np.uint32: np.int64, np.int64: np.int64,
             np.uint64: np.int64, np.float16: np.float32, np.float32: np.float32, np.float64: np.float64}
    for dt, want in cases.items():
        w = np.array([1, 0, 1, 1], dt) if dt is np.bool_ else np.array([3, 0, 7, 100], dt)
        g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], w, n=4, directed=True)
        blk = gbf._Block(np, g, g.weights, 0, 4)
        assert gbf._store_dtype(dt) == want and blk.w.dtype == want, dt
        assert blk.suffix == {"int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}[np.dtype(want).name]
        assert blk.w_work().dtype == work_dtype(g.weights.dtype)
        np.testing.assert_array_equal(blk.w_work(), g.weights.astype(work_dtype(g.weights.dtype)))
    blk = gbf._Block(np, Graph.from_edges([0], [1], n=2), None, 0, 2)
    assert blk.w is None and blk.w_work() is None and blk.suffix == "i64"


def test_rounds_equal_the_cpu_backend(numpy_as_cupy):
    for g in _graphs():
        blk = gbf._Block(np, g, g.weights, 0, g.n)
        try:
            ref = bellman_ford(g, 0, backend="cpu")
        except Exception:  # noqa: BLE001 - a negative cycle: the rounds must not settle
            dist, _, info = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, 0, n=g.n)
            assert info["status"] == "cycle"
            continue
        dist, _, info = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, 0, n=g.n)
        assert info["status"] == "done"
        reached = ref.reached
        np.testing.assert_array_equal(dist[reached], ref.distance[reached].astype(dist.dtype))
        assert (dist[~reached] == (np.inf if dist.dtype.kind == "f" else np.iinfo(np.int64).max)).all()


@pytest.mark.parametrize("probe", [4, 16])
def test_probe_round_stops_the_rounds_on_deep_graphs_only(numpy_as_cupy, probe):
    """After round k exactly the vertices within k arcs are reached, so a round that still
    reaches new ones says the source has vertices that far: a path stops at the probe round,
    a Kronecker graph (its component within 4 arcs) runs to the end."""
    path = Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99, np.int64), n=100)
    blk = gbf._Block(np, path, path.weights, 0, path.n)
    _, _, info = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, 0, n=path.n, probe_round=probe)
    assert info["status"] == "deep" and info["rounds"] == probe
    # the vertex 5 arcs from the end of the path: 5 rounds, the probe at 16 never fires
    _, _, info = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, 94, n=path.n, probe_round=16)
    assert info["status"] == "done"
    g = potential_shift(uniform_weights(kronecker(9, seed=4), seed=4), seed=2)
    s = int(np.argmax(np.diff(g.indptr)))
    blk = gbf._Block(np, g, g.weights, 0, g.n)
    dist, _, info = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, probe_round=probe)
    assert info["status"] == "done" and info["rounds"] > 4  # settled past the probe with new vertices over
    np.testing.assert_array_equal(dist[dist != np.iinfo(np.int64).max],
                                  bellman_ford(g, s, backend="cpu").distance[dist != np.iinfo(np.int64).max])


def test_finish_gives_the_canonical_predecessors(numpy_as_cupy):
    for g in list(_graphs())[:-1] + [uniform_weights(kronecker(9, seed=4), seed=4)]:
        try:
            ref = bellman_ford(g, 0, backend="cpu", predecessors=True)
        except Exception:  # noqa: BLE001 - a negative cycle
            continue
        part, lo, hi, indptr, indices, ww, wdt = _setup(g, g.weights, 0, MPI.COMM_SELF)
        d = ref.distance.astype(wdt)
        d[~ref.reached] = np.inf if wdt.kind == "f" else np.iinfo(np.int64).max
        blk = HostBlock(lo, hi, indptr, indices, ww, wdt)
        dd, p, canon = gbf._finish_device(blk, g, g.weights, MPI.COMM_SELF, part, 0, d, True)
        np.testing.assert_array_equal(dd, d)
        assert canon == ref.stats["canonical_predecessors"]
        if canon:
            np.testing.assert_array_equal(p, ref.predecessor)
        assert gbf._finish_device(blk, g, g.weights, MPI.COMM_SELF, part, 0, d, False)[1:] == (None, None)


def test_finish_with_a_zero_weight_tight_cycle_gives_a_tree(numpy_as_cupy):
    """0 -> 3 -> 1 <-> 2, the last three arcs of weight 0: 1's tight tails are 3 and 2, 2's is 1,
    so the smallest tight tails close the cycle 1 -> 2 -> 1 and the finish returns a BFS tree
    over the tight arcs instead (not canonical), as the CPU backend does."""
    g2 = Graph.from_edges([0, 3, 1, 2], [3, 1, 2, 1], np.array([1, 0, 0, 0], np.int64), n=4, directed=True)
    part, lo, hi, indptr, indices, ww, wdt = _setup(g2, g2.weights, 0, MPI.COMM_SELF)
    d = np.array([0, 1, 1, 1], np.int64)
    blk = HostBlock(lo, hi, indptr, indices, ww, wdt)
    _, p, canon = gbf._finish_device(blk, g2, g2.weights, MPI.COMM_SELF, part, 0, d, True)
    ref = bellman_ford(g2, 0, backend="cpu", predecessors=True)
    np.testing.assert_array_equal(d, ref.distance)
    assert canon is False and ref.stats["canonical_predecessors"] is False
    # a valid shortest-path tree either way: every reached v != 0 has a tight arc from p[v]
    for v in (1, 2, 3):
        u = p[v]
        k = [i for i in range(g2.indptr[u], g2.indptr[u + 1]) if g2.indices[i] == v]
        assert k and d[u] + g2.weights[k[0]] == d[v]


# --------------------------------------------------------------------------- several PEs
class _Sym:
    def __init__(self, local, key):
        self.local, self.key = local, key


class _World:
    """P stand-in PEs as threads: symmetric arrays are one NumPy array per PE under one key,
    a barrier is a threading.Barrier (with a timeout: a failing PE must not hang the test)."""

    def __init__(self, size):
        import threading

        self.size, self.barrier, self.allocs = size, threading.Barrier(size, timeout=60), {}
        self.freed, self.slots, self.lock = set(), [None] * size, threading.Lock()


class _Comm:
    """The MPI calls the exchanges make, over the stand-in PEs (SUM and MIN)."""

    def __init__(self, world, pe):
        self.world, self.pe = world, pe

    def _reduce(self, x, op):
        w = self.world
        w.slots[self.pe] = np.array(x, copy=True)
        w.barrier.wait()
        out = np.sum(w.slots, axis=0) if op == MPI.SUM else np.min(w.slots, axis=0)
        w.barrier.wait()
        return out

    def Allreduce(self, send, recv, op):
        recv[...] = self._reduce(send, op)

    def allreduce(self, x, op):
        return type(x)(self._reduce(x, op))


class _PG:
    def __init__(self, world, pe, unmapped=(1,)):
        self.world, self.my_pe, self.n_pes, self.count = world, pe, world.size, 0
        self.comm, self.unmapped = _Comm(world, pe), unmapped

    def array(self, shape, dtype):
        key = self.count
        self.count += 1
        a = np.zeros(shape, dtype)
        self.world.allocs.setdefault(key, [None] * self.n_pes)[self.my_pe] = a
        self.world.barrier.wait()
        return _Sym(a, key)

    def peer(self, arr, pe):
        # by default PE 1's heap is "not mapped" (read by get())
        return self.world.allocs[arr.key][pe] if pe not in self.unmapped else None

    def get(self, arr, pe, offset, count):
        return self.world.allocs[arr.key][pe][offset:offset + count].copy()

    def barrier(self):
        self.world.barrier.wait()

    def barrier_on_stream(self):  # the stand-in's kernels run at once: a barrier
        self.world.barrier.wait()

    def free(self, arr):
        self.world.freed.add((self.my_pe, arr.key))
        self.world.barrier.wait()


def _assert_tight_tails(g, w, s, d, p):
    """Every reached vertex but the source has its tail on a tight arc."""
    inf = np.inf if d.dtype.kind == "f" else np.iinfo(np.int64).max
    for v in np.flatnonzero((d != inf) & (np.arange(g.n) != s)):
        u = p[v]
        arcs = [k for k in range(g.indptr[u], g.indptr[u + 1]) if g.indices[k] == v]
        assert any(d[u] + w[k] == d[v] for k in arcs), (v, u)


def _on_pes(g, size, body, **pg_kw):
    """``body(lo, hi, pg)`` on `size` stand-in PEs (threads), each with its block of g's edge
    partition and a stand-in PGAS; the results in PE order. Every PE must have freed every
    symmetric array it allocated."""
    from concurrent.futures import ThreadPoolExecutor

    from distgraph.graph.partition import partition_by_edges

    world, part = _World(size), partition_by_edges(g.indptr, size)
    with ThreadPoolExecutor(size) as pool:
        out = list(pool.map(lambda r: body(*part.range(r), _PG(world, r, **pg_kw)), range(size)))
    assert world.freed == {(p, k) for k in world.allocs for p in range(size)}
    return out


def _closing(ex, run):
    """``run(ex)``, then ``ex.close()`` (collective) whatever happens."""
    try:
        return run(ex)
    finally:
        ex.close()


def _distributed_rounds(g, s, size, **kw):
    """rounds_cupy on `size` stand-in PEs (threads), each with its block and a _PeerMin."""
    def body(lo, hi, pg):
        blk = gbf._Block(np, g, g.weights, lo, hi)
        return _closing(gbf._PeerMin(pg, g.n, blk.wdt, kw.get("track_pred", False)),
                        lambda ex: gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, lo=lo, exchange=ex, **kw))

    return _on_pes(g, size, body)


@pytest.mark.parametrize("size", [2, 3, 4])
def test_distributed_rounds_equal_one_gpu(numpy_as_cupy, size):
    """Each PE relaxes its block's arcs and the exchange takes the minimum: every PE ends with
    one GPU's distances, rounds and status, the relaxations add up to one GPU's, and the
    tails (negative weights) are tight arcs. PE 1 is read by copies (no peer view)."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound

    for g in _graphs():
        s = int(np.argmax(np.diff(g.indptr)))
        blk = gbf._Block(np, g, g.weights, 0, g.n)
        bound, neg = _neg_bound(blk.w, blk.wdt, MPI.COMM_SELF)
        kw = {"track_pred": neg, "bound": bound if neg else None, "probe_round": 4}
        d1, _, i1 = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, **kw)
        outs = _distributed_rounds(g, s, size, **kw)
        assert sum(o[2]["relaxations"] for o in outs) == i1["relaxations"]
        for d, p, info in outs:
            assert (info["rounds"], info["status"]) == (i1["rounds"], i1["status"])
            np.testing.assert_array_equal(d, d1)
            if neg and info["status"] == "done":
                _assert_tight_tails(g, blk.w, s, d, p)
            np.testing.assert_array_equal(p, outs[0][1])  # the same tails on every PE


def test_distributed_rounds_negative_cycle_and_deep_probe(numpy_as_cupy):
    from distgraph.backends.cpu.bellman_ford import _neg_bound, cycle_from_pred, find_pred_cycle
    from distgraph.generators import plant_negative_cycle

    g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    blk = gbf._Block(np, g, g.weights, 0, g.n)
    bound, _ = _neg_bound(blk.w, blk.wdt, MPI.COMM_SELF)
    for d, p, info in _distributed_rounds(g, int(cyc[0]), 3, track_pred=True, bound=bound):
        assert info["status"] in ("below", "cycle")
        v = find_pred_cycle(p)
        assert v >= 0 and cycle_weight(g, cycle_from_pred(p, v)) < 0
    path = Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99, np.int64), n=100)
    for _, _, info in _distributed_rounds(path, 0, 2, probe_round=16):
        assert (info["status"], info["rounds"]) == ("deep", 16)


# --------------------------------------------------------------------------- the round kernels' driver
def _key(x):
    k = np.asarray(x, np.float64).view(np.int64).copy()
    k[k < 0] ^= np.int64(0x7FFFFFFFFFFFFFFF)
    return k


def _unkey(k):
    k = np.asarray(k, np.int64).copy()
    k[k < 0] ^= np.int64(0x7FFFFFFFFFFFFFFF)
    return k.view(np.float64)


class _RoundKernels:
    """kernels/bf_rounds.cu in NumPy (what the GPU tests check the CUDA against: the CuPy
    rounds), so that rounds_kernel's driver runs on the host: the relaxation, tails and mark
    kernels (a vertex at a time; hubs of ``bigdeg`` arcs or more listed by the relaxation in
    pieces of ``bigdeg`` arcs and left to the ``_big`` kernel), and the settle kernel, whose
    device addresses are looked up in ``addr`` (filled by the stand-in ``_device_ptr``)."""

    delay = 0.0  # the settle kernel's largest random wait before it pulls (seconds; tests set it)

    def __init__(self, addr=None):
        self.addr = addr

    def get_function(self, name):
        if name == "distgraph_bf_round_settle":
            return self._settle
        if name == "distgraph_bf_round_settle_chunks":
            return self._settle_chunks
        isf, what, hubs = name.endswith(("f64", "f32")), name.split("_")[3], "_big_" in name
        wname = {"i64": "int64", "i32": "int32", "f64": "float64", "f32": "float32"}[name[-3:]]

        def fn(grid, block, args):
            (indptr, indices, w, unit, front, nfront, lo, hi, dist, cand, pred, count, flags, big, nbig,
             bigdeg, nfp, rel) = args
            lo, hi = int(lo), int(hi)
            assert int(unit) or w.dtype == wname, (name, w.dtype)  # the weights as stored, by the suffix
            rel = None if isinstance(rel, (int, np.integer)) or what == "tails" else rel  # null: Jacobi
            if not isinstance(nfp, (int, np.integer)):  # the frontier's length on the device
                assert int(nfp[0]) <= int(nfront), "nfront bounds the device's length"
                nfront = nfp[0]
            before, bigdeg = cand.copy(), int(bigdeg)
            if what == "mark" and not hubs:  # the round's flags start cleared (by the last settle)
                assert not flags.any(), "the mark kernel found flags set"
            for u in (big[:int(nbig[0])] if hubs else front[:int(nfront)]):
                if hubs:  # a piece of a hub: u | piece << 32
                    u, piece = int(u) & 0xFFFFFFFF, int(u) >> 32
                    b = int(indptr[u - lo]) + piece * bigdeg
                    e = min(b + bigdeg, int(indptr[u - lo + 1]))
                    # asynchronous: the hub's latest candidate, at most the one it was listed with
                    assert rel is None or cand[u] <= rel[u - lo]
                else:
                    b, e = int(indptr[u - lo]), int(indptr[u - lo + 1])
                    if rel is not None:  # asynchronous: skipped when relaxed from this candidate already
                        assert cand[u] <= dist[u]
                        if cand[u] == rel[u - lo]:
                            continue
                        rel[u - lo] = cand[u]
                    if what != "tails":
                        count[0] += np.uint64(e - b)
                    if e - b >= bigdeg:  # a hub: listed by the relaxation, in pieces
                        if what != "tails":
                            pieces = -(-(e - b) // bigdeg)
                            at = int(nbig[0])
                            big[at:at + pieces] = int(u) | (np.arange(pieces, dtype=np.int64) << 32)
                            nbig[0] += np.uint64(pieces)
                        continue
                vs = indices[b:e].astype(np.int64)
                du = dist[u] if rel is None else cand[u]  # asynchronous: the latest candidate
                if isf:
                    c = _key(_unkey(np.array([du]))[0] + w[b:e].astype(np.float64))
                else:
                    c = du + (np.ones(e - b, np.int64) if int(unit) else w[b:e].astype(np.int64))
                if what == "tails":
                    m = (c == cand[vs]) & (c < dist[vs])
                    pred[vs[m]] = u
                else:
                    np.minimum.at(cand, vs, c)
            if what == "mark":  # the chunks of the vertices this kernel lowered (the block's too)
                flags[np.flatnonzero(cand < before) >> 5] = 1
        return fn

    def _settle(self, grid, block, args):
        lo, hi, me, npes, ptrs, cand, dist, pred, front, res, inf, res_next, nbig = args
        lo, hi, me, npes, inf = (int(a) for a in (lo, hi, me, npes, inf))
        n = int(cand.shape[0])
        assert res[0] == 0 and res[1] == 0, "res not reset"
        res[2] = min(int(res[2]), int(res_next[2]))  # the smallest key so far: the last round's, kept
        res_next[:2] = 0  # the next round's
        nbig[0] = 0
        xs, fs, ps = ([self.addr[int(a)] for a in ptrs[j * npes:(j + 1) * npes]] for j in range(3))
        v = np.arange(lo, hi)
        touched = np.zeros(hi - lo, bool)  # the block's vertices in chunks some PE flagged
        for q in range(npes):
            touched |= fs[q][v >> 5] != 0
        # what the settle skips is as it was: no PE lowered it this round
        assert np.array_equal(cand[lo:hi][~touched], dist[lo:hi][~touched]), "a lowered chunk went unflagged"
        if self.delay:  # a slow owner: its peers' next rounds run meanwhile, up to the next barrier
            import time

            time.sleep(float(np.random.default_rng().uniform(0, self.delay)))
        for v in range(lo, hi):  # the pull
            best, src = cand[v], -1
            for q in range(npes):
                if q == me:
                    continue
                if not fs[q][v >> 5]:  # what the flags skip: a peer's copy is no lower than the owner's
                    assert xs[q][v] >= dist[v], (q, v, xs[q][v], dist[v])
                elif xs[q][v] < best:
                    best, src = xs[q][v], q
            if src >= 0:
                cand[v] = best
                if not isinstance(pred, (int, np.integer)):  # the null pointer: no tails
                    pred[v] = ps[src][v]
        low = lo + np.flatnonzero(cand[lo:hi] < dist[lo:hi])
        rng = np.random.default_rng(len(low))
        low = low[rng.permutation(len(low))]  # the kernel lists them in no set order
        front[:len(low)] = low
        res[0] = len(low)
        res[1] = int(bool((dist[low] == inf).any()))
        res[2] = min(int(res[2]), int(cand[lo:hi][touched].min())) if touched.any() else res[2]
        dist[lo:hi] = cand[lo:hi]
        if npes == 1:  # the block is everything
            assert lo == 0 and hi == n

    def _settle_chunks(self, grid, block, args):
        n, lo, hi, mine, cand, dist, clear, nflags = args
        n, lo, hi, nflags = (int(a) for a in (n, lo, hi, nflags))
        v = np.arange(n)
        outside = (v < lo) | (v >= hi)
        touch = outside & (mine[v >> 5] != 0)  # the other PEs' vertices in the chunks this PE lowered
        assert np.array_equal(dist[outside & ~touch], cand[outside & ~touch]), "a chunk lowered here went unflagged"
        dist[touch] = cand[touch]
        clear[:nflags] = 0


class _HostRing:
    """The pull loop's _Ring where kernels run at once: results kept as staged (each read once,
    in order, and only after it was staged; at most ``slots`` staged and unread), steps timed
    as zero."""

    def __init__(self, cp, slots):
        self.slots, self.staged, self.marks = slots, {}, set()

    def stage(self, r, res):
        assert r not in self.staged and len(self.staged) < self.slots, (r, sorted(self.staged))
        self.staged[r] = [int(x) for x in res]

    def read(self, r):
        assert min(self.staged) == r, (r, sorted(self.staged))  # in order
        return self.staged.pop(r)

    def mark(self, r, step):
        self.marks.add((r, step))

    def steps(self):
        return {r: [0.0, 0.0, 0.0] for r, step in self.marks if step == 3 and r <= 64}


@pytest.fixture
def round_kernels(numpy_as_cupy, monkeypatch):
    from distgraph.backends.gpu import loader

    addr = {}

    def device_ptr(a):
        addr[a.ctypes.data] = a
        return a.ctypes.data

    monkeypatch.setattr(gbf, "_device_ptr", device_ptr)
    monkeypatch.setattr(gbf, "_Ring", _HostRing)
    monkeypatch.setattr(loader, "get_module", lambda name, *a, **k: _RoundKernels(addr))
    sys.modules["cupy"].cuda.Device = lambda *a: types.SimpleNamespace(
        synchronize=lambda: None, attributes={"MultiProcessorCount": 4})


@pytest.mark.parametrize("bigdeg", [4, 2048])
def test_kernel_rounds_driver_equals_the_cupy_rounds(round_kernels, monkeypatch, bigdeg):
    """rounds_kernel (keys, the settle loop on one PE and the dense exchange's loop on three,
    the count, float keys back to doubles) gives
    rounds_cupy's distances, tails, rounds, relaxations and stops, on one PE and on three
    stand-in PEs, with the probe and with a negative cycle; with hubs from 4 arcs (most
    vertices: the hub kernels) and from 2048 (none)."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound
    from distgraph.generators import plant_negative_cycle

    monkeypatch.setattr(gbf, "BIG_DEGREE", bigdeg)

    cyc_g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    path = Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99, np.int64), n=100)
    unit = Graph.from_edges(np.arange(30), (np.arange(30) * 7) % 31, n=31, directed=True)
    cases = [(g, int(np.argmax(np.diff(g.indptr))), None) for g in _graphs()]
    cases += [(cyc_g, int(cyc[0]), None), (path, 0, 16), (unit, 0, None)]
    for g, s, probe in cases:
        blk = gbf._Block(np, g, g.weights, 0, g.n)
        bound, neg = _neg_bound(blk.w if blk.w is not None else np.ones(1, np.int64), blk.wdt, MPI.COMM_SELF)
        kw = {"track_pred": neg, "probe_round": probe}
        d1, p1, i1 = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, bound=bound if neg else None, **kw)
        bkey = int(gbf.to_keys(np.array([bound]))[0]) if neg else None
        d2, p2, i2 = gbf.rounds_kernel(blk, s, n=g.n, bound_key=bkey, **kw)
        assert (i2["rounds"], i2["relaxations"], i2["status"]) == (i1["rounds"], i1["relaxations"], i1["status"])
        assert d2.dtype == d1.dtype
        np.testing.assert_array_equal(d2, d1)
        if neg and i1["status"] == "done":
            _assert_tight_tails(g, blk.w, s, d2, p2)
        elif i1["status"] in ("below", "cycle"):  # the tails hold a negative cycle
            from distgraph.backends.cpu.bellman_ford import cycle_from_pred, find_pred_cycle

            v = find_pred_cycle(p2)
            assert v >= 0 and cycle_weight(g, cycle_from_pred(p2, v)) < 0
        def body(lo, hi, pg, g=g, s=s, neg=neg, bkey=bkey, kw=kw):
            b = gbf._Block(np, g, g.weights, lo, hi)
            return _closing(gbf._PeerMin(pg, g.n, "int64", neg),
                            lambda ex: gbf.rounds_kernel(b, s, n=g.n, bound_key=bkey, exchange=ex, **kw))

        outs = _on_pes(g, 3, body)
        assert sum(o[2]["relaxations"] for o in outs) == i1["relaxations"]
        for d, p, info in outs:
            assert (info["rounds"], info["status"]) == (i1["rounds"], i1["status"])
            np.testing.assert_array_equal(d, d1)


# --------------------------------------------------------------------------- the pull exchange
def _pull_rounds(g, s, size, unmapped=(), **kw):
    """rounds_kernel on `size` stand-in PEs with a _PeerPull each (every heap mapped but
    ``unmapped``'s); None from every PE where the exchange is not mapped."""
    from distgraph.graph.partition import partition_by_edges

    part = partition_by_edges(g.indptr, size)
    bounds = [part.range(q)[0] for q in range(size)] + [g.n]

    def body(lo, hi, pg):
        b = gbf._Block(np, g, g.weights, lo, hi)
        return _closing(gbf._PeerPull(pg, g.n, bounds, kw.get("track_pred", False)),
                        lambda ex: gbf.rounds_kernel(b, s, n=g.n, exchange=ex, **kw) if ex.mapped else None)

    return _on_pes(g, size, body, unmapped=unmapped)


@pytest.mark.parametrize("size, bigdeg", [(2, 4), (3, 2048), (4, 4)])
def test_pull_rounds_equal_one_gpu(round_kernels, monkeypatch, size, bigdeg):
    """The pull exchange (no replicated distances; owners pull the chunks their peers lowered,
    arrays in turn, one barrier (two with tails) and one sum per round, the host ahead by up to LAG
    rounds): every PE returns one GPU's distances, rounds,
    status (the probe, a negative cycle's bound or max_rounds) and, added up, relaxations;
    tails on tight arcs, or holding the negative cycle. Hubs from 4 arcs or from 2048."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound, cycle_from_pred, find_pred_cycle
    from distgraph.generators import plant_negative_cycle

    monkeypatch.setattr(gbf, "BIG_DEGREE", bigdeg)

    cyc_g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    path = Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99, np.int64), n=100)
    unit = Graph.from_edges(np.arange(30), (np.arange(30) * 7) % 31, n=31, directed=True)
    cases = [(g, int(np.argmax(np.diff(g.indptr))), None, None) for g in _graphs()]
    uni = uniform_weights(kronecker(8, seed=5), seed=5)  # no negative weight: the pull without tails
    cases += [(uni, int(np.argmax(np.diff(uni.indptr))), None, None)]
    cases += [(cyc_g, int(cyc[0]), None, None), (cyc_g, int(cyc[0]), None, 7), (path, 0, 16, None),
              (path, 0, 4, None), (unit, 0, None, None)]
    for g, s, probe, cap in cases:
        blk = gbf._Block(np, g, g.weights, 0, g.n)
        bound, neg = _neg_bound(blk.w if blk.w is not None else np.ones(1, np.int64), blk.wdt, MPI.COMM_SELF)
        bkey = int(gbf.to_keys(np.array([bound]))[0]) if neg else None
        kw = {"track_pred": neg, "probe_round": probe, "max_rounds": cap}
        d1, _, i1 = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, bound=bound if neg else None, **kw)
        outs = _pull_rounds(g, s, size, bound_key=bkey, **kw)
        assert sum(o[2]["relaxations"] for o in outs) == i1["relaxations"], (size, g.n, s)
        for d, p, info in outs:
            assert (info["rounds"], info["status"]) == (i1["rounds"], i1["status"]), (size, g.n, s, probe, cap)
            assert d.dtype == d1.dtype
            np.testing.assert_array_equal(d, d1)
            if neg and info["status"] == "done":
                _assert_tight_tails(g, blk.w, s, d, p)
            elif info["status"] in ("below", "cycle") and cap is None:
                v = find_pred_cycle(p)
                assert v >= 0 and cycle_weight(g, cycle_from_pred(p, v)) < 0
            np.testing.assert_array_equal(p, outs[0][1])  # the tails gathered from their owners


@pytest.mark.parametrize("size", [1, 2, 4])
def test_async_rounds_give_the_jacobi_distances_in_fewer_relaxations(round_kernels, monkeypatch, size):
    """order="async" (each frontier vertex relaxed from its latest candidate, skipped when its
    arcs were relaxed from it already): the Jacobi rounds' distances and status (the probe, a
    negative cycle's bound, max_rounds) on 1, 2 and 4 PEs, no more rounds, and on the
    Kronecker graphs fewer relaxations (the kernels run vertex by vertex here: one schedule of
    the GPU's). Hubs from 4 arcs (their pieces read the latest candidate too). The dense
    exchange's loop on 3 PEs as well."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound
    from distgraph.generators import plant_negative_cycle

    monkeypatch.setattr(gbf, "BIG_DEGREE", 4)
    cyc_g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    path = Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99, np.int64), n=100)
    uni = uniform_weights(kronecker(8, seed=5), seed=5)
    cases = [(g, int(np.argmax(np.diff(g.indptr))), None, None, g.n >= 256) for g in list(_graphs()) + [uni]]
    cases += [(cyc_g, int(cyc[0]), None, None, False), (cyc_g, int(cyc[0]), None, 7, False),
              (path, 0, 16, None, False), (path, 0, None, None, False)]
    fewer = 0
    for g, s, probe, cap, kron in cases:
        blk = gbf._Block(np, g, g.weights, 0, g.n)
        bound, neg = _neg_bound(blk.w if blk.w is not None else np.ones(1, np.int64), blk.wdt, MPI.COMM_SELF)
        bkey = int(gbf.to_keys(np.array([bound]))[0]) if neg else None
        kw = {"probe_round": probe, "max_rounds": cap, "bound_key": bkey}
        d1, _, i1 = gbf.rounds_kernel(blk, s, n=g.n, **kw)  # Jacobi's
        outs = _pull_rounds(g, s, size, order="async", **kw)
        relax = sum(o[2]["relaxations"] for o in outs)
        proven = ("below", "cycle")  # a negative cycle proven either way (async: as soon or sooner)
        for d, _, info in outs:
            assert info["status"] == i1["status"] or {info["status"], i1["status"]} <= set(proven), \
                (g.n, s, probe, cap)
            assert info["rounds"] <= i1["rounds"] and (info["status"] != "done" or info["rounds"] > 1)
            if info["status"] == "done":
                np.testing.assert_array_equal(d, d1)
        if kron and i1["status"] == "done":
            assert relax < i1["relaxations"], (g.n, relax, i1["relaxations"])
            fewer += 1
        else:
            assert relax <= i1["relaxations"] or i1["status"] != "done"
        if size == 1 and kron:
            def body(lo, hi, pg, g=g, s=s, kw=kw):
                b = gbf._Block(np, g, g.weights, lo, hi)
                return _closing(gbf._PeerMin(pg, g.n, "int64", False),
                                lambda ex: gbf.rounds_kernel(b, s, n=g.n, exchange=ex, order="async", **kw))

            for d, _, info in _on_pes(g, 3, body):
                assert info["status"] == i1["status"] == "done" and info["rounds"] <= i1["rounds"]
                np.testing.assert_array_equal(d, d1)
    assert fewer >= 2


def test_pull_exchange_needs_every_heap_mapped(round_kernels):
    """One PE's heap not mapped on some PE: every PE says so (RoundsSSSP then uses _PeerMin)."""
    g = uniform_weights(kronecker(6, seed=1), seed=1)
    assert _pull_rounds(g, 0, 3, unmapped=(2,)) == [None, None, None]


def test_sssp_e2e_benchmark_runs_and_compares(tmp_path):
    """benchmarks/sssp_e2e.py end to end with the CPU backend in the timed rows (its smoke
    test: the children, the SHA-1 comparisons, the baseline tree's rows, the JSON)."""
    import json
    import subprocess
    from pathlib import Path

    from distgraph.testing import clean_mpi_env

    root = Path(__file__).resolve().parent.parent
    # clean_mpi_env: the suite runs under mpiexec, whose PMI variables a child must not inherit
    r = subprocess.run([sys.executable, str(root / "benchmarks" / "sssp_e2e.py"), "--outdir", str(tmp_path),
                        "--graphs", "kron:8", "--trials", "1", "--backend", "cpu", "--baseline", str(root)],
                       capture_output=True, text=True, timeout=600, env=clean_mpi_env())
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "sssp_e2e.json").read_text())
    assert [(x["graph"], x["weights"]) for x in res["runs"]] == [("kron:8", "uniform"), ("kron:8", "shifted")]
    for row in res["runs"]:
        for key in ("gpu", "gpu_baseline"):
            for kind in ("dist", "pred"):
                assert row[key][kind]["same_as_cpu"] is True, (key, kind, row[key])
        assert "speedup_vs_baseline" in row["gpu"]["dist"]
        assert ("scipy_dijkstra" in row) == (row["weights"] == "uniform")  # Dijkstra needs no negative weight
    assert not list(tmp_path.glob("graphs/*.dgraph"))  # the saved graphs are removed


class _Dev:
    """A device array as _to_host uses it (reshape, slices, get(out=)), over NumPy."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.nbytes, self.itemsize = a.shape, a.dtype, a.nbytes, a.itemsize

    def reshape(self, *s):
        return _Dev(self.a.reshape(*s))

    def __getitem__(self, i):
        return _Dev(self.a[i])

    def get(self, out):
        assert out.dtype == self.dtype and out.shape == self.a.shape
        out[...] = self.a


@pytest.mark.parametrize("n, stage", [(0, 1 << 20), (5, 1 << 20), (3 << 19, 1 << 20), (3 << 19, 4096)])
def test_to_host_copies_through_the_pinned_stage(monkeypatch, n, stage):
    """_to_host: the whole array, in order, through a kept staging buffer of at most
    STAGE_BYTES (in pieces when larger), with several threads copying out (PINNED_FROM 0:
    every array goes this way)."""
    fake = types.SimpleNamespace(empty_pinned=lambda k, dt: np.full(k, 0xEE, np.uint8))
    monkeypatch.setitem(sys.modules, "cupyx", fake)
    monkeypatch.setattr(gbf, "STAGE_BYTES", stage)
    monkeypatch.setattr(gbf, "PINNED_FROM", 0)
    a = np.arange(n, dtype=np.int64) * 3 - 7
    holder = types.SimpleNamespace()
    out = gbf._to_host(_Dev(a.reshape(-1, 1) if n == 5 else a), holder)
    np.testing.assert_array_equal(out.reshape(-1), a)
    assert out.shape == ((5, 1) if n == 5 else (n,))
    assert n == 0 or holder._stage.nbytes == min(8 * n, stage)
    again = gbf._to_host(_Dev(a[::-1].copy()), holder)  # the kept stage, reused
    np.testing.assert_array_equal(again, a[::-1])


def test_to_host_into_a_prefaulted_array(monkeypatch):
    """_Prefault: arrays of PINNED_FROM bytes or more are allocated at once and their pages
    touched by threads; _to_host copies into that array (float distances into an int64 one: the
    same bytes), not into a new one; smaller arrays are not prefaulted."""
    fake = types.SimpleNamespace(empty_pinned=lambda k, dt: np.full(k, 0xEE, np.uint8))
    monkeypatch.setitem(sys.modules, "cupyx", fake)
    monkeypatch.setattr(gbf, "STAGE_BYTES", 1 << 16)
    monkeypatch.setattr(gbf, "PINNED_FROM", 1 << 20)
    assert gbf._Prefault((1000,), np.int64).take() is None  # 8000 bytes: nothing done
    n = 3 << 18  # 6 MB: the threads touch a byte of every page
    pre = gbf._Prefault((n,), np.int64)
    out = pre.take()
    assert out.shape == (n,) and out.dtype == np.int64 and pre.take() is None
    a = np.linspace(-5, 5, n)
    got = gbf._to_host(_Dev(a), types.SimpleNamespace(), out=out)
    assert np.shares_memory(got, out) and got.dtype == np.float64
    np.testing.assert_array_equal(got, a)
    pre = gbf._Prefault((n,), np.int64)
    pre.close()  # drops the array, not waiting for the threads (they end on their own)
    assert not pre._threads and pre.out is None and pre.take() is None
    assert gbf._Prefault((n,), np.int64, threads=0).take() is None  # DISTGRAPH_GPU_SSSP_PREFAULT_THREADS=0
    monkeypatch.setattr(gbf, "_cpus", lambda: 1)  # one CPU: no threads beside the launches
    assert gbf._Prefault((n,), np.int64).take() is None


def test_pull_exchange_reused_without_then_with_tails(round_kernels, monkeypatch):
    """One _PeerPull for two runs on 3 stand-in PEs, as RoundsSSSP.run's rerun uses it: rounds
    without tails, then with tails; both give one GPU's distances, rounds and status, and the
    tails are on tight arcs, with owners that pull late (their peers' next rounds run meanwhile,
    up to the next barrier). A run that skipped its closing barrier lets a fast PE reset its
    arrays while a slow one still gathers from them, and fails here. (Without the second barrier
    of a round with tails, an owner could take a peer's tail of the next round; the next round's
    pull replaces it, so no final tail shows it and no test here can.)"""
    from distgraph.backends.cpu.bellman_ford import _neg_bound
    from distgraph.graph.partition import partition_by_edges

    monkeypatch.setattr(_RoundKernels, "delay", 0.002)
    monkeypatch.setattr(gbf, "BIG_DEGREE", 8)
    g = potential_shift(uniform_weights(kronecker(7, seed=6), seed=6), seed=7)
    s = int(np.argmax(np.diff(g.indptr)))
    blk = gbf._Block(np, g, g.weights, 0, g.n)
    bound, neg = _neg_bound(blk.w, blk.wdt, MPI.COMM_SELF)
    assert neg
    bkey = int(gbf.to_keys(np.array([bound]))[0])
    d1, _, i1 = gbf.rounds_cupy(blk.indptr, blk.indices, blk.w, s, n=g.n, bound=bound)
    part = partition_by_edges(g.indptr, 3)
    bounds = [part.range(q)[0] for q in range(3)] + [g.n]

    def body(lo, hi, pg):
        b = gbf._Block(np, g, g.weights, lo, hi)
        return _closing(gbf._PeerPull(pg, g.n, bounds, True),
                        lambda ex: [gbf.rounds_kernel(b, s, n=g.n, bound_key=bkey, exchange=ex, track_pred=t)
                                    for t in (False, True)])

    for runs in _on_pes(g, 3, body, unmapped=()):
        for (d, p, info), tails in zip(runs, (False, True)):
            assert (info["rounds"], info["status"]) == (i1["rounds"], "done")
            np.testing.assert_array_equal(d, d1)
            assert (p is not None) == tails
        _assert_tight_tails(g, blk.w, s, runs[1][0], runs[1][1])


def test_rounds_sssp_reruns_with_tails_only_for_a_proven_cycle(round_kernels, monkeypatch):
    """RoundsSSSP.run (one PE, the round kernels emulated): rounds without tails; a negative
    cycle proven (below the bound), the same rounds again with tails, which hold the cycle (no
    search on the CPU), relaxations counted over both runs; no rerun without one, nor when
    max_rounds stops the rounds unsettled (nothing is concluded then)."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound
    from distgraph.generators import plant_negative_cycle

    calls = []
    real = gbf.rounds_kernel

    def counted(*a, **k):
        calls.append(k["track_pred"])
        return real(*a, **k)

    monkeypatch.setattr(gbf, "rounds_kernel", counted)
    monkeypatch.setattr(gbf, "_to_host", lambda a, holder, out=None: np.array(a))

    def no_cpu_search(*a):
        raise AssertionError("searched on the CPU")

    monkeypatch.setattr(gbf, "_cpu_cycle", no_cpu_search)

    def sssp(g, order="jacobi"):
        r = object.__new__(gbf.RoundsSSSP)
        r.cp, r.comm, r.graph, r.w, r.engine = sys.modules["cupy"], MPI.COMM_SELF, g, g.weights, "kernel"
        r.order = order
        r.block = gbf._Block(np, g, g.weights, 0, g.n)
        r.wdt = r.block.wdt
        r.bound, r.has_neg = _neg_bound(r.block.w, r.wdt, MPI.COMM_SELF)
        r.exchange, r.exchange_kind, r.distributed, r.setup_s = None, None, False, 0.0
        r.part = types.SimpleNamespace(range=lambda q: (0, g.n))
        return r

    cyc_g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    confirm = lambda c: cycle_weight(cyc_g, c) < 0  # noqa: E731
    r = sssp(cyc_g)
    d, p, st, found = r.run(int(cyc[0]), confirm)
    assert d is None and found is not None and cycle_weight(cyc_g, found) < 0
    assert calls == [False, True] and st["tails_rerun"]
    calls.clear()
    _, _, one = real(r.block, int(cyc[0]), n=cyc_g.n, bound_key=r.bound_key)
    assert st["relaxations"] == 2 * one["relaxations"]
    assert r.run(int(cyc[0]), confirm, max_rounds=3) is None  # unsettled by round 3: no rerun
    assert calls == [False] and r.last_stats["stopped"] == "max_rounds"
    calls.clear()
    r = sssp(cyc_g, "async")  # the asynchronous rounds, then the tails' rerun (Jacobi's, as tails need)
    d, p, st, found = r.run(int(cyc[0]), confirm)
    assert d is None and found is not None and cycle_weight(cyc_g, found) < 0
    assert calls == [False, True] and st["tails_rerun"] and st["order"] == "jacobi"  # the rerun's rounds
    _, _, first = real(r.block, int(cyc[0]), n=cyc_g.n, bound_key=r.bound_key, order="async")
    assert st["relaxations"] == first["relaxations"] + one["relaxations"] < 2 * one["relaxations"]

    calls.clear()
    g = potential_shift(uniform_weights(kronecker(8, seed=5), seed=5), seed=6)
    r = sssp(g)
    d, _, st, found = r.run(0, lambda c: cycle_weight(g, c) < 0)
    assert found is None and calls == [False] and not st["tails_rerun"]
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds

    ref = cpu_rounds(g, g.weights, 0, MPI.COMM_SELF, lambda c: cycle_weight(g, c) < 0)[0]
    np.testing.assert_array_equal(d, ref)  # the work dtype's values and unreached sentinel


def _host_copy(a, holder, out=None):
    """``_to_host`` on emulated arrays: into ``out`` when given, viewed as ``a``'s dtype (as
    the real one does; a prefaulted array of another dtype of the same item size is legal)."""
    if out is None:
        return np.array(a)
    flat = out.reshape(-1).view(a.dtype)
    assert flat.shape == a.reshape(-1).shape, (out.shape, out.dtype, a.shape, a.dtype)
    np.copyto(flat, a.reshape(-1))
    return flat.reshape(a.shape)


def _relabeled_rounds(g, monkeypatch, order="async", size=1, rank=0, relabel="degree"):
    """A RoundsSSSP of one stand-in PE (the round kernels emulated, the tight-arc kernel by the
    host's pass) with ``relabel`` (default ``"degree"``), as ``_place`` sets it up for rank
    ``rank`` of ``size``."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound

    from _bf_host import HostBlock

    def tight_pred(self, d, names=None, order=None):
        return HostBlock(self.lo, self.hi, self.indptr, self.indices,
                         np.ones(max(self.m, 1), np.int64) if self.w is None else self.w_work(),
                         self.wdt).tight_pred(d, names=names, order=order)

    monkeypatch.setattr(gbf._Block, "tight_pred", tight_pred)
    monkeypatch.setattr(gbf, "_to_host", _host_copy)
    r = object.__new__(gbf.RoundsSSSP)
    r.cp, r.comm, r.graph, r.w, r.engine, r.order = sys.modules["cupy"], MPI.COMM_SELF, g, g.weights, "kernel", order
    r.relabel = relabel
    r.block = r._place(g, g.weights, types.SimpleNamespace(Get_size=lambda: size, Get_rank=lambda: rank))
    r.wdt = r.block.wdt
    r.bound, r.has_neg = _neg_bound(r.block.w, r.wdt, MPI.COMM_SELF)
    r.exchange, r.exchange_kind, r.distributed, r.setup_s = None, None, False, 0.0
    return r


def test_degree_order_dealt_to_runs_and_renamed_rows():
    """degree_order(runs=P) deals the degree ranks round-robin to P runs, each in degree order;
    permute_rows gives any list of rows with their heads renamed and sorted (stable; weights
    along), or unsorted, and all rows in the new order are permute_graph's graph."""
    from distgraph.formats.reorder import degree_order, permute_graph, permute_rows

    rng = np.random.default_rng(5)
    for trial, g in enumerate(list(_graphs()) + [Graph.from_edges([0, 1], [1, 0], n=5)]):
        deg = np.diff(g.indptr) + (g.in_degree() if g.directed else 0)
        by_deg = np.argsort(-deg, kind="stable")
        for p in (1, 2, 3):
            new_id = degree_order(g, runs=p)
            old = np.empty_like(new_id)
            old[new_id] = np.arange(g.n)
            np.testing.assert_array_equal(old, np.concatenate([by_deg[i::p] for i in range(p)]))
        rows = rng.permutation(g.n)[: rng.integers(0, g.n + 1)] if trial % 2 else old
        ip, ix, w = permute_rows(g.indptr, g.indices, g.weights, new_id, rows)
        np.testing.assert_array_equal(np.diff(ip), np.diff(g.indptr)[rows])
        for i, r in enumerate(rows):  # the old row's heads renamed, in a stable sort; weights along
            a, b = g.indptr[r], g.indptr[r + 1]
            k = np.argsort(new_id[g.indices[a:b]], kind="stable")
            np.testing.assert_array_equal(ix[ip[i]:ip[i + 1]], new_id[g.indices[a:b]][k])
            if g.weights is not None:
                np.testing.assert_array_equal(w[ip[i]:ip[i + 1]], g.weights[a:b][k])
        if trial % 2 == 0:  # all rows in the new order: permute_graph's graph
            h = permute_graph(g, new_id)
            np.testing.assert_array_equal(ip, h.indptr)
            np.testing.assert_array_equal(ix, h.indices)
        ip2, ix2, w2 = permute_rows(g.indptr, g.indices, g.weights, new_id, rows, sort=False)
        np.testing.assert_array_equal(ip2, ip)
        for i, r in enumerate(rows):  # unsorted: the old row's arcs in their order, renamed
            a, b = g.indptr[r], g.indptr[r + 1]
            np.testing.assert_array_equal(ix2[ip[i]:ip[i + 1]], new_id[g.indices[a:b]])
            if g.weights is not None:
                np.testing.assert_array_equal(w2[ip[i]:ip[i + 1]], g.weights[a:b])
    with pytest.raises(Exception, match="runs"):
        degree_order(g, runs=0)


def test_degree_order_on_the_device_is_the_hosts(numpy_as_cupy):
    """RoundsSSSP's degree order, computed "on the device", is degree_order's (ties by id,
    in-degrees added for a directed graph), dealt to 1-3 runs; new_id its inverse."""
    from distgraph.formats.reorder import degree_order

    for g in list(_graphs()) + [Graph.from_edges([0, 1], [1, 0], n=5), Graph.from_edges([], [], n=0)]:
        for p in (1, 2, 3):
            old, new = gbf._degree_order_device(np, g, p)
            np.testing.assert_array_equal(new, degree_order(g, runs=p))
            np.testing.assert_array_equal(old[new], np.arange(g.n))


@pytest.mark.parametrize("order", ["async", "jacobi"])
def test_relabeled_rounds_answer_in_the_callers_ids(round_kernels, monkeypatch, order):
    """RoundsSSSP(relabel="degree") (one stand-in PE, kernels emulated): the rounds run on the
    renamed block, the distances and the canonical predecessors (the smallest tight tail by
    the caller's ids) come back as the CPU backend's; a negative cycle in the tails, in the
    caller's ids (no search on the CPU); the blocks of 2 and 3 ranks are the renamed graph's."""
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds
    from distgraph.formats.reorder import degree_order, permute_graph
    from distgraph.generators import plant_negative_cycle

    def no_cpu_search(*a):
        raise AssertionError("searched on the CPU")

    monkeypatch.setattr(gbf, "_cpu_cycle", no_cpu_search)
    for g in list(_graphs()) + [potential_shift(uniform_weights(kronecker(10, seed=7), seed=7), seed=3)]:
        s = int(np.argmax(np.diff(g.indptr)))
        confirm = lambda c, g=g: cycle_weight(g, c) < 0  # noqa: E731
        try:
            ref = bellman_ford(g, s, backend="cpu", predecessors=True)
        except Exception:  # noqa: BLE001 - a negative cycle: the rounds find it too
            r = _relabeled_rounds(g, monkeypatch, order)
            d, p, st, cyc = r.run(s, confirm)
            assert d is None and cyc is not None and confirm(cyc) and cyc[0] == min(cyc)
            continue
        r = _relabeled_rounds(g, monkeypatch, order)
        assert not np.array_equal(r.new_id, np.arange(g.n)) or g.n < 3
        d, p, st, cyc = r.run(s, confirm, predecessors=True)
        want = cpu_rounds(g, g.weights, s, MPI.COMM_SELF, confirm)[0]
        np.testing.assert_array_equal(d, want)
        assert st["relabel"] == "degree" and st["canonical_predecessors"] == ref.stats["canonical_predecessors"]
        if st["canonical_predecessors"]:
            np.testing.assert_array_equal(p, ref.predecessor)
    cyc_g, planted = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    r = _relabeled_rounds(cyc_g, monkeypatch, order)
    d, p, st, cyc = r.run(int(planted[0]), lambda c: cycle_weight(cyc_g, c) < 0)
    assert d is None and cycle_weight(cyc_g, cyc) < 0 and st["tails_rerun"] and cyc[0] == min(cyc)
    # several ranks: rank q's block is rows lo..hi of the graph renamed by the dealt degree
    # order, its rows sorted on the "device" (a few arcs at a time too: whole rows, a hub alone)
    g = uniform_weights(kronecker(9, seed=4), seed=4)
    for size, sort_arcs in ((2, 1 << 27), (3, 40), (2, 1)):
        monkeypatch.setattr(gbf, "SORT_ARCS", sort_arcs)
        h = permute_graph(g, degree_order(g, runs=size))
        for q in range(size):
            r = _relabeled_rounds(g, monkeypatch, order, size, q)
            lo, hi = r.part.range(q)
            assert (r.block.lo, r.block.hi) == (lo, hi) and r.part.nparts == size
            np.testing.assert_array_equal(r.block.indptr, h.indptr[lo:hi + 1] - h.indptr[lo])
            np.testing.assert_array_equal(r.block.indices, h.indices[h.indptr[lo]:h.indptr[hi]])
            np.testing.assert_array_equal(r.block.w, h.weights[h.indptr[lo]:h.indptr[hi]])


def test_rounds_prefault_threads_by_config(round_kernels, monkeypatch):
    """RoundsSSSP.run faults the host array in with 4 threads on one rank and none on several
    (config -1, the default; several PEs' rounds stalled while their hosts faulted), or with
    the configured count; a source outside the graph is refused."""
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds
    from distgraph.runtime.config import config

    seen = []
    real = gbf._Prefault

    def recorded(shape, dtype, threads=4, out=None):
        seen.append(threads)
        return real(shape, dtype, threads=threads, out=out)

    monkeypatch.setattr(gbf, "_Prefault", recorded)
    g = uniform_weights(kronecker(7, seed=1), seed=1)
    r = _relabeled_rounds(g, monkeypatch)
    old = config.gpu_sssp_prefault_threads
    try:
        # (setting, ranks of the rounds, ranks of the job: several each alone, split="sources")
        for setting, size, job, want in ((-1, 1, 1, 4), (-1, 2, 1, 0), (0, 1, 1, 0), (2, 2, 1, 2), (-1, 1, 3, 0)):
            config.gpu_sssp_prefault_threads = setting
            r.comm = types.SimpleNamespace(Get_size=lambda size=size: size)  # the ranks (not distributed)
            r.job_ranks = job
            d = r.run(0, lambda c: False)[0]
            assert seen[-1] == want
            np.testing.assert_array_equal(d, cpu_rounds(g, g.weights, 0, MPI.COMM_SELF, lambda c: False)[0])
    finally:
        config.gpu_sssp_prefault_threads = old
    for bad in (-1, g.n, 1.0, True):
        with pytest.raises(InvalidArgumentError, match="source"):
            r.run(bad, lambda c: False)


@pytest.mark.parametrize("relabel", [None, "degree"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_rounds_prefaulted_array_of_any_weight_dtype(round_kernels, monkeypatch, relabel, dtype):
    """The prefaulted host array (large graphs, one rank) is made in the rounds' work dtype:
    float weights' distances used to meet an int64 array and fail in the narrowing step
    (``PINNED_FROM`` lowered here so that the small graph is prefaulted)."""
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds
    from distgraph.runtime.config import config

    monkeypatch.setattr(gbf, "PINNED_FROM", 64)
    monkeypatch.setattr(gbf, "_cpus", lambda: 4)
    monkeypatch.setattr(config, "gpu_sssp_prefault_threads", 4)
    base = potential_shift(uniform_weights(kronecker(8, seed=5), seed=5), seed=2)
    g = Graph(base.indptr, base.indices, (base.weights / 4).astype(dtype) if dtype != np.int32 else base.weights,
              directed=base.directed)
    made = []
    real = gbf._Prefault

    def recorded(shape, dt, threads=4, out=None):
        p = real(shape, dt, threads=threads, out=out)
        made.append(p)
        return p

    monkeypatch.setattr(gbf, "_Prefault", recorded)
    r = _relabeled_rounds(g, monkeypatch, relabel=relabel)
    d = r.run(3, lambda c: False)[0]
    assert made[-1]._threads == [] and d.dtype == r.wdt
    np.testing.assert_array_equal(d, cpu_rounds(g, g.weights, 3, MPI.COMM_SELF, lambda c: False)[0])


def test_prefault_close_waits_for_the_callers_array(monkeypatch):
    """_Prefault.close() drops its own array without waiting, but waits for the threads that
    fault the caller's (``out``), so that none writes into it after the caller takes it back."""
    import threading

    monkeypatch.setattr(gbf, "PINNED_FROM", 64)
    monkeypatch.setattr(gbf, "_cpus", lambda: 4)
    gate = threading.Event()
    started = []

    class Slow(np.ndarray):  # its pages' fill waits for the gate
        def fill(self, v):
            started.append(1)
            gate.wait(5)
            np.ndarray.fill(self, v)

    row = np.zeros(1 << 16, np.int64).view(Slow)
    p = gbf._Prefault(row.shape, row.dtype, threads=2, out=row)
    assert p._threads and p.given
    threading.Timer(0.2, gate.set).start()
    p.close()
    assert gate.is_set() and not any(t.is_alive() for t in p._threads or [])


@pytest.mark.parametrize("relabel", [None, "degree"])
def test_rounds_copy_into_the_callers_row(round_kernels, monkeypatch, relabel):
    """RoundsSSSP.run(out=row): the distances land in the caller's array (bellman_ford(graph,
    sources) passes each row of its result), renamed back or not; a row of another shape,
    dtype or layout is refused before the run."""
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds

    g = potential_shift(uniform_weights(kronecker(8, seed=5), seed=5), seed=2)
    r = _relabeled_rounds(g, monkeypatch, relabel=relabel)
    rows = np.full((3, g.n), -7, np.int64)
    for i, s in enumerate((0, 9, 0)):
        d = r.run(s, lambda c: False, out=rows[i])[0]
        assert d is rows[i] or np.shares_memory(d, rows[i])
        np.testing.assert_array_equal(rows[i], cpu_rounds(g, g.weights, s, MPI.COMM_SELF, lambda c: False)[0])
    for bad in (np.zeros(g.n, np.float64), np.zeros(g.n + 1, np.int64), np.zeros((g.n, 2), np.int64)[:, 0],
                np.zeros(g.n, np.int16)):
        with pytest.raises(InvalidArgumentError, match=r"out must be a C-contiguous"):
            r.run(0, lambda c: False, out=bad)
    # a sink: the row is handed to it (filled in the background), not copied here
    handed = []
    sink = types.SimpleNamespace(put=lambda dev, row: handed.append(np.copyto(row, dev)))
    row = np.full(g.n, -7, np.int64)
    d = r.run(9, lambda c: False, out=row, sink=sink)[0]
    assert handed == [None] and np.shares_memory(d, row)
    np.testing.assert_array_equal(row, cpu_rounds(g, g.weights, 9, MPI.COMM_SELF, lambda c: False)[0])
    for bad in ({"out": None}, {"out": row, "predecessors": True}):
        with pytest.raises(InvalidArgumentError, match="sink must be None, or given with out and without"):
            r.run(9, lambda c: False, sink=sink, **bad)
    # a narrower row (int32 / float32, no predecessors): converted on the "device", as the host would
    from distgraph.algorithms.bellman_ford import _to_output_dtype

    for gg, dt in ((g, np.int32), (Graph(g.indptr, g.indices, g.weights / 8, directed=g.directed), np.float32)):
        rr = _relabeled_rounds(gg, monkeypatch, relabel=relabel)
        row = np.full(gg.n, 7, dt)
        d = rr.run(0, lambda c: False, out=row)[0]
        want = _to_output_dtype(cpu_rounds(gg, gg.weights, 0, MPI.COMM_SELF, lambda c: False)[0], np.dtype(dt))
        assert np.shares_memory(d, row) and (row == unreachable(dt)).any()
        np.testing.assert_array_equal(row, want)
        with pytest.raises(InvalidArgumentError, match="predecessors need the distances in the work dtype"):
            rr.run(0, lambda c: False, predecessors=True, out=row)
    # int32 distances out of range: the host's error, before any copy
    big = Graph(g.indptr, g.indices, np.full(g.m, 2 ** 31 - 9, np.int64), directed=g.directed)
    rr = _relabeled_rounds(big, monkeypatch, relabel=relabel)
    with pytest.raises(GraphValueError, match=r"distances overflow int32 \(range \[0, "):
        rr.run(0, lambda c: False, out=np.empty(big.n, np.int32))
