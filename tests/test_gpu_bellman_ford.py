"""GPU Bellman-Ford (issue 7): the queue-driven kernel (BQ and BWD) and the round-based
Bellman-Ford (fused round kernels; the CuPy baseline beside them in
test_round_kernels_equal_the_cupy_rounds), each equal to the CPU backend and to scipy.sparse.csgraph on literal graphs with
hand answers, random and Kronecker graphs (uniform and potential-shifted negative weights),
road-NY shifted, bitcoin-otc (negative cycles found and confirmed), all four weight dtypes,
unreachable vertices, the CLI. One process (one PE); the NVSHMEM kernel on 1, 2 and 4 PEs is
in tests/test_nvshmem_bellman_ford.py. Skipped without a GPU."""

import gzip

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from distgraph.algorithms.bellman_ford import bellman_ford, cycle_weight, unreachable
from distgraph.errors import NegativeCycleError
from distgraph.generators import kronecker, plant_negative_cycle, potential_shift, uniform_weights
from distgraph.graph import Graph

pytestmark = pytest.mark.gpu

DTYPES = [np.int32, np.int64, np.float32, np.float64]
# (mode, queue): the CuPy rounds baseline and the queue kernel with either queue
VARIANTS = [("rounds", "bq"), ("async", "bq"), ("async", "bwd"), ("auto", "bwd")]
VIDS = ["rounds", "bq", "bwd", "auto"]


def gpu(g, s, variant, **kw):
    mode, queue = variant
    return bellman_ford(g, s, backend="gpu", mode=mode, queue=queue, **kw)


def as_float(r):
    d = r.distance.astype(np.float64)
    d[~r.reached] = np.inf
    return d


def scipy_bf(g, s):
    try:
        return csg.bellman_ford(g.to_scipy(dtype=np.float64), directed=True, indices=s)
    except csg.NegativeCycleError:
        return None


def _read(data_dir, name):
    from distgraph.graph.readers import read_graph

    return read_graph(data_dir / name)


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
def test_literal_hand_answer(variant):
    g = Graph.from_edges([0, 0, 2, 1], [1, 2, 1, 3], np.array([4, 1, -2, 2], np.int32), n=5)
    r = gpu(g, 0, variant, predecessors=True, verify=True)
    assert r.distance.dtype == np.int32
    assert r.distance.tolist() == [0, -1, 1, 1, np.iinfo(np.int32).max]
    assert r.predecessor.tolist() == [-1, 2, 0, 1, -1]
    assert r.stats["backend"] == "gpu"


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_and_sentinels(variant, dtype):
    g = Graph.from_edges([0, 1, 3, 1], [1, 2, 0, 4], np.array([3, -1, 7, -2.5 if dtype in (np.float32, np.float64) else -2],
                                                              dtype=dtype), n=5)
    r = gpu(g, 0, variant)
    c = bellman_ford(g, 0, backend="cpu")
    assert r.distance.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(r.distance, c.distance)
    assert r.distance[3] == unreachable(dtype)


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
def test_unweighted_and_single_vertex(variant):
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], n=6, directed=True)
    r = gpu(g, 0, variant)
    assert r.distance.tolist()[:4] == [0, 1, 2, 3] and not r.reached[4:].any()
    one = Graph.from_edges([], [], n=1)
    assert gpu(one, 0, variant).distance.tolist() == [0]


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
def test_random_graphs_match_scipy_and_cpu(variant):
    rng = np.random.default_rng(17)
    for trial in range(24):
        n, m = int(rng.integers(1, 40)), int(rng.integers(0, 150))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        dt = DTYPES[trial % 4]
        w = rng.integers(-2, 12, m).astype(dt)
        g = Graph.from_edges(src, dst, w, n=n, directed=trial % 3 != 0)
        s = int(rng.integers(0, n))
        ref = scipy_bf(g, s)
        if ref is None:
            with pytest.raises(NegativeCycleError) as ei:
                gpu(g, s, variant)
            assert ei.value.weight < 0 and cycle_weight(g, ei.value.cycle) == ei.value.weight
        else:
            r = gpu(g, s, variant, predecessors=True, verify=True)
            c = bellman_ford(g, s, predecessors=True, backend="cpu")
            np.testing.assert_array_equal(r.distance, c.distance)
            if c.stats.get("canonical_predecessors"):
                np.testing.assert_array_equal(r.predecessor, c.predecessor)
            if r.distance.dtype == np.float32:
                ref = ref.astype(np.float32).astype(np.float64)
            np.testing.assert_array_equal(as_float(r), ref)


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
@pytest.mark.parametrize("shift", [False, True], ids=["uniform", "shifted"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_kronecker(variant, shift, dtype):
    base = uniform_weights(kronecker(12, seed=5), seed=5)
    g = potential_shift(base, seed=9) if shift else base
    g = Graph(g.indptr, g.indices, g.weights.astype(dtype), directed=g.directed)
    s = int(np.argmax(np.diff(g.indptr)))
    r = gpu(g, s, variant, predecessors=True, verify=True)
    c = bellman_ford(g, s, predecessors=True, backend="cpu")
    np.testing.assert_array_equal(r.distance, c.distance)
    np.testing.assert_array_equal(r.predecessor, c.predecessor)
    if not shift:
        np.testing.assert_array_equal(as_float(r), csg.dijkstra(g.to_scipy(dtype=np.float64), indices=s))


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
def test_kronecker_directed_unreachable(variant):
    g = uniform_weights(kronecker(11, seed=3, directed=True), seed=4)
    g = potential_shift(g, seed=5)
    r = gpu(g, 0, variant, verify=True)
    assert not r.reached.all()
    np.testing.assert_array_equal(r.distance, bellman_ford(g, 0, backend="cpu").distance)


@pytest.mark.parametrize("variant", VARIANTS, ids=VIDS)
def test_planted_negative_cycle(variant):
    g, cyc = plant_negative_cycle(uniform_weights(kronecker(10, seed=2), seed=2), length=5, seed=4)
    with pytest.raises(NegativeCycleError) as ei:
        gpu(g, int(cyc[0]), variant)
    assert ei.value.weight < 0 and cycle_weight(g, ei.value.cycle) == ei.value.weight


def test_zero_weight_cycle_gives_a_tree():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 1, 3], np.array([1, 0, 0, 5], np.int64), n=4)
    for variant in VARIANTS:
        r = gpu(g, 0, variant, predecessors=True, verify=True)
        assert r.distance.tolist() == [0, 1, 1, 6]


def test_road_ny_shifted(data_dir):
    base = uniform_weights(_read(data_dir, "road-NY.gr.xz"), seed=11)
    g, p = potential_shift(base, seed=12, return_potential=True)
    s = 12345
    ref = csg.dijkstra(base.to_scipy(dtype=np.float64), indices=s).astype(np.int64) + p[s] - p
    for variant in VARIANTS:
        r = gpu(g, s, variant, verify=variant[1] == "bq")
        np.testing.assert_array_equal(r.distance.astype(np.int64), ref)


def test_bitcoin_otc_negative_cycles(data_dir):
    g = _read(data_dir, "bitcoin-otc.csv.gz")
    with gzip.open(data_dir / "bitcoin-otc.csv.gz", "rt") as f:
        rows = np.loadtxt(f, delimiter=",", usecols=(0, 1, 2), dtype=np.int64)
    wmap = {(int(a), int(b)): int(c) for a, b, c in rows}
    ids = g.labels
    for variant in VARIANTS:
        for s in (0, 2000):
            with pytest.raises(NegativeCycleError, match="negative cycle") as ei:
                gpu(g, s, variant)
            cyc = [int(ids[v]) for v in ei.value.cycle]
            total = sum(wmap[(cyc[i], cyc[(i + 1) % len(cyc)])] for i in range(len(cyc)))
            assert total < 0 and total == ei.value.weight


def test_cond_mat_inf_weights(data_dir):
    g = _read(data_dir, "cond-mat-2005.mtx.gz")
    ref = csg.dijkstra(g.to_scipy(dtype=np.float64), indices=1771)
    for variant in VARIANTS:
        np.testing.assert_array_equal(as_float(gpu(g, 1771, variant)), ref)


def test_queue_capacity_and_grid_forced():
    """A tiny grid (1 and 3 blocks, default capacity) still gives the CPU's answer, and so does a
    second run on the same device arrays."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    from distgraph.backends.cpu.bellman_ford import run_rounds

    g = potential_shift(uniform_weights(kronecker(10, seed=7), seed=7), seed=8)
    w = _arc_weights(g, None)
    ref = run_rounds(g, w, 3, MPI.COMM_SELF, lambda cy: True, predecessors=False)[0]
    for queue in ("bq", "bwd"):
        for grid in (1, 3):
            s = QueueSSSP(g, w, MPI.COMM_SELF, queue=queue, grid=grid)
            d, _, st, cyc = s.run(3, lambda cy: cycle_weight(g, cy, w) < 0)
            assert cyc is None and st["grid"][0] == grid
            np.testing.assert_array_equal(d, ref)
            d2, _, _, _ = s.run(3, lambda cy: True)  # a second run on the same device arrays
            np.testing.assert_array_equal(d2, d)


def test_rounds_cupy_baseline_direct():
    import cupy as cp

    from distgraph.backends.gpu.bellman_ford import rounds_cupy

    g = uniform_weights(kronecker(10, seed=1), seed=1)
    dist, _, info = rounds_cupy(cp.asarray(g.indptr), cp.asarray(g.indices), cp.asarray(g.weights.astype(np.int64)), 0)
    ref = csg.dijkstra(g.to_scipy(dtype=np.float64), indices=0)
    d = dist.get().astype(np.float64)
    d[d == np.iinfo(np.int64).max] = np.inf
    np.testing.assert_array_equal(d, ref)
    assert info["status"] == "done" and info["rounds"] > 1


def test_cli_backend_gpu(tmp_path, data_dir, monkeypatch):
    """In-process (a child process under a cleaned environment cannot start Open MPI's singleton)."""
    from distgraph.cli import main
    from distgraph.graph.readers import read_graph

    out = tmp_path / "d.npy"
    rc = main(["sssp", str(data_dir / "minnesota.mtx.gz"), "--source", "3", "--backend", "gpu", "--mode", "async",
               "--output", str(out), "--verify"])
    assert rc == 0
    g = read_graph(data_dir / "minnesota.mtx.gz")
    d = np.load(out)
    np.testing.assert_array_equal(np.where(d == np.iinfo(np.int64).max, np.inf, d),
                                  csg.dijkstra(g.to_scipy(dtype=np.float64), indices=3))


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "nokeep"])
@pytest.mark.parametrize("queue", ["bq", "bwd"])
def test_near_far_any_delta_gives_the_cpu_answer(queue, keep, data_dir):
    """The near-far priority of the queue kernel (one PE) is only a priority: with delta off (0,
    inf), 1 (a phase per distance value: many phase changes, far piles handed out as scan
    tasks), small, default and huge, on Kronecker (int64 and float64 potential-shifted
    weights) and road-NY shifted, with kept vertices and large vertices split into chunks of 32
    arcs, and with neither (and a short idle sleep), distances equal the CPU backend's; the
    stats count the phases (None when off)."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    kron = potential_shift(uniform_weights(kronecker(11, seed=21), seed=21), seed=22)
    kron_f = Graph(kron.indptr, kron.indices, kron.weights.astype(np.float64) / 8, directed=kron.directed)
    road = potential_shift(uniform_weights(_read(data_dir, "road-NY.gr.xz"), seed=23), seed=24)
    for name, g, deltas in (("kron", kron, (None, 0, 1, 40, np.inf, 10 ** 9)),
                            ("kron_float", kron_f, (None, 0, 0.5, 5.0, 1e12)),
                            ("road", road, (None, 0, 200, 5000))):
        w = _arc_weights(g, None)
        s = int(np.argmax(np.diff(g.indptr)))
        ref = run_rounds(g, w, s, MPI.COMM_SELF, lambda cy: True, predecessors=False)[0]
        q = QueueSSSP(g, w, MPI.COMM_SELF, queue=queue, keep=keep, idle_ns=2048 if keep else 64,
                      split=32 if keep else 0)
        try:
            for delta in deltas:
                q.set_delta(delta)
                d, _, st, cyc = q.run(s, lambda cy: cycle_weight(g, cy, w) < 0)
                assert cyc is None, (name, delta)
                np.testing.assert_array_equal(d, ref, err_msg=f"{name} delta={delta}")
                if delta in (0, np.inf):
                    assert st["phases"] is None and st["delta"] == 0
                else:
                    assert st["phases"] >= 1 and st["delta"] > 0
                if delta in (1, 0.5):
                    assert st["phases"] > 10, (name, st)
        finally:
            q.close()


def test_near_far_one_block_and_negative_cycle():
    """One block (warp 0 changes the phases and hands out the far piles alone) with delta 1,
    with and without kept vertices, vertices above 64 arcs in chunks, equal to the CPU; a planted negative cycle is still found
    through the public API with a small delta (distances keep falling below the threshold:
    all near) and with near-far off."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    g = potential_shift(uniform_weights(kronecker(10, seed=31), seed=31), seed=32)
    w = _arc_weights(g, None)
    ref = run_rounds(g, w, 7, MPI.COMM_SELF, lambda cy: True, predecessors=False)[0]
    for queue in ("bq", "bwd"):
        for keep in (True, False):
            q = QueueSSSP(g, w, MPI.COMM_SELF, queue=queue, grid=1, delta=1, keep=keep, split=64)
            try:
                d, _, st, cyc = q.run(7, lambda cy: cycle_weight(g, cy, w) < 0)
            finally:
                q.close()
            assert cyc is None and st["phases"] > 10 and st["keep"] == keep
            np.testing.assert_array_equal(d, ref)
    gc, cyc = plant_negative_cycle(uniform_weights(kronecker(10, seed=2), seed=2), length=5, seed=4)
    w = _arc_weights(gc, None)
    for delta in (1, 50, 0):
        with pytest.raises(NegativeCycleError) as ei:
            bellman_ford(gc, int(cyc[0]), backend="gpu", mode="async", queue="bwd", delta=delta)
        assert ei.value.weight < 0 and cycle_weight(gc, ei.value.cycle) == ei.value.weight
        # kept vertices go back to the queue at each stop for a cycle check: nothing is lost
        q = QueueSSSP(gc, w, MPI.COMM_SELF, queue="bq", delta=delta, keep=True, split=32)
        try:
            _, _, st, found = q.run(int(cyc[0]), lambda cy: cycle_weight(gc, cy, w) < 0)
        finally:
            q.close()
        assert found is not None and cycle_weight(gc, found, w) < 0 and st["launches"] >= 1


def test_auto_picks_rounds_on_kronecker_and_the_queue_on_a_grid():
    """mode="auto": Kronecker settles within the rounds' cap, a long grid does not (its
    hop diameter is far above 64), and both equal the CPU backend."""
    from distgraph.generators import grid

    g = uniform_weights(kronecker(10, 8, seed=3), 1, 255, seed=4)
    r = bellman_ford(g, 0, backend="gpu", mode="auto")
    assert r.stats["mode"] == "rounds" and r.stats["auto"]["chose"] == "rounds"
    assert np.array_equal(r.distance, bellman_ford(g, 0, backend="cpu").distance)
    g = potential_shift(uniform_weights(grid(200, 4), 1, 255, seed=5), seed=6)
    r = bellman_ford(g, 0, backend="gpu", mode="auto")
    assert r.stats["mode"] == "async" and r.stats["auto"]["chose"] == "async"
    assert np.array_equal(r.distance, bellman_ford(g, 0, backend="cpu").distance)


def test_auto_probe_stops_the_rounds_on_a_grid_and_shares_the_upload():
    """The probe round ends the rounds at round 16 on a long grid (it still reaches new
    vertices), the queue kernel then runs on the rounds' upload, and the result equals the
    CPU backend's, predecessors included; with the probe off the rounds run to their cap."""
    from distgraph.generators import grid
    from distgraph.runtime.config import config

    g = potential_shift(uniform_weights(grid(300, 3), 1, 255, seed=5), seed=6)
    c = bellman_ford(g, 0, backend="cpu", predecessors=True)
    r = bellman_ford(g, 0, backend="gpu", mode="auto", predecessors=True)
    a = r.stats["auto"]
    assert r.stats["mode"] == "async" and a["rounds_stopped"] == "deep" and a["rounds_run"] == 16
    np.testing.assert_array_equal(r.distance, c.distance)
    np.testing.assert_array_equal(r.predecessor, c.predecessor)
    old = config.gpu_sssp_auto_probe
    try:
        config.gpu_sssp_auto_probe = 0
        r = bellman_ford(g, 0, backend="gpu", mode="auto")
    finally:
        config.gpu_sssp_auto_probe = old
    assert r.stats["auto"]["rounds_stopped"] == "max_rounds" and r.stats["auto"]["rounds_run"] == 64
    np.testing.assert_array_equal(r.distance, c.distance)


@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_device_block_and_tight_predecessors(dtype):
    """The device block of all and of some vertices (uploaded in the graph's dtypes, converted
    on the GPU), its negative sums and kernels/sssp_tight.cu's tight-arc predecessors, against the host's
    _setup, _neg_magnitude and _tight_min_pred, on blocks of a shifted Kronecker graph with
    unreached vertices (directed) and a random multigraph with zero-weight arcs."""
    import cupy as cp
    from _bf_host import HostBlock
    from mpi4py import MPI

    from distgraph.backends.cpu.bellman_ford import _neg_magnitude, _setup
    from distgraph.backends.gpu.bellman_ford import _Block

    rng = np.random.default_rng(8)
    kg = potential_shift(uniform_weights(kronecker(11, seed=3, directed=True), seed=4), seed=5)
    rg = Graph.from_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000), rng.integers(0, 6, 3000), n=300)
    for g in (kg, rg):
        w = None if dtype is None else g.weights.astype(dtype)
        if dtype in (np.float32, np.float64):
            w = w / 4  # quarter units: float sums that are exact and tie (tight arcs with several tails)
        gg = Graph(g.indptr, g.indices, w, directed=g.directed)
        ref = bellman_ford(gg, 0, backend="cpu")
        part, _, _, indptr, indices, ww, wdt = _setup(gg, w, 0, MPI.COMM_SELF)
        d = ref.distance.astype(wdt)
        d[~ref.reached] = np.inf if wdt.kind == "f" else np.iinfo(np.int64).max
        for lo, hi in ((0, gg.n), (0, gg.n // 3), (gg.n // 3, gg.n)):
            blk = _Block(cp, gg, w, lo, hi)
            a, b = int(gg.indptr[lo]), int(gg.indptr[hi])
            host = HostBlock(lo, hi, indptr[lo:hi + 1] - indptr[lo], indices[a:b], ww[a:b], wdt)
            np.testing.assert_array_equal(blk.tight_pred(d), host.tight_pred(d))
            assert blk.neg_magnitude() == _neg_magnitude(ww[a:b], wdt)


def test_to_device_registered_copy(tmp_path):
    """_to_device copies large arrays from their registered pages: writable ones, read-only
    memory maps (cudaHostRegisterReadOnly, or the staged copy where that fails), the same
    array twice (registration undone after each copy), and an array the caller registered
    already (the staged copy)."""
    import cupy as cp

    from distgraph.backends.gpu.bellman_ford import REGISTER_BYTES, _to_device

    a = np.arange(REGISTER_BYTES // 4 + 1000, dtype=np.int32)
    np.testing.assert_array_equal(_to_device(cp, a).get(), a)
    a[5:9] = -3
    np.testing.assert_array_equal(_to_device(cp, a).get(), a)
    f = tmp_path / "a.npy"
    np.save(f, a)
    m = np.load(f, mmap_mode="r")
    np.testing.assert_array_equal(_to_device(cp, m[3:]).get(), a[3:])
    cp.cuda.runtime.hostRegister(a.ctypes.data, a.nbytes, 0)
    try:
        np.testing.assert_array_equal(_to_device(cp, a).get(), a)
    finally:
        cp.cuda.runtime.hostUnregister(a.ctypes.data)


@pytest.mark.parametrize("bigdeg", [2048, 16])
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_round_kernels_equal_the_cupy_rounds(dtype, bigdeg, monkeypatch):
    """RoundsSSSP's fused round kernels (engine="kernel", kernels/bf_rounds.cu; order="jacobi") run
    the CuPy baseline's rounds: the same distances, round counts, relaxations and stopping status
    (settled, the probe's "deep" on a long grid, a negative cycle found in the device's tails and
    confirmed, with no search on the CPU), and the
    CPU backend's distances and canonical predecessors, on Kronecker graphs with shifted and
    quarter-unit float weights, unit weights and unreached vertices; with the hub kernels for
    vertices of 16 arcs or more (bigdeg=16: many of them) and from 2048 (the default). The
    asynchronous rounds (order="async", the default): the same results in no more rounds. Renamed
    by degree (relabel="degree"): the same results in the caller's ids (the predecessors the
    smallest tight tails by them, the cycle in them), Jacobi's rounds and relaxations."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.backends.gpu.bellman_ford import RoundsSSSP
    from distgraph.generators import grid

    monkeypatch.setattr(gbf, "BIG_DEGREE", bigdeg)

    def no_cpu_search(*a):  # the cycle must come from the device's tails
        raise AssertionError("the rounds' tails held no negative cycle: RoundsSSSP searched on the CPU")

    monkeypatch.setattr(gbf, "_cpu_cycle", no_cpu_search)

    base = potential_shift(uniform_weights(kronecker(11, seed=3, directed=True), seed=4), seed=5)
    path = potential_shift(uniform_weights(grid(300, 3), 1, 255, seed=5), seed=6)
    cyc_g, cyc = plant_negative_cycle(uniform_weights(kronecker(10, seed=2), seed=2), length=5, seed=4)
    for g, s, probe in ((base, int(np.argmax(np.diff(base.indptr))), None), (path, 0, 16), (cyc_g, int(cyc[0]), None)):
        w = None if dtype is None else g.weights.astype(dtype)
        if dtype in (np.float32, np.float64):
            w = w / 4
        if dtype is None and g is cyc_g:
            continue  # unit weights have no negative cycle
        gg = Graph(g.indptr, g.indices, w, directed=g.directed)

        ww = _arc_weights(gg, None)
        confirm = lambda cy, gg=gg, ww=ww: cycle_weight(gg, cy, ww) < 0  # noqa: E731
        res = {}
        for engine, order, relabel in (("kernel", "jacobi", None), ("cupy", None, None), ("kernel", "async", None),
                                       ("kernel", "jacobi", "degree"), ("kernel", "async", "degree")):
            r = RoundsSSSP(gg, ww, MPI.COMM_SELF, engine=engine, order=order, relabel=relabel)
            if probe:
                out = r.run(s, confirm, max_rounds=64, probe_round=probe)
                assert out is None and r.last_stats["stopped"] == "deep" and r.last_stats["rounds"] == probe
                res[engine, order, relabel] = (r.last_stats["rounds"], r.last_stats["relaxations"])
                continue
            d, p, st, found = r.run(s, confirm, predecessors=True)
            if g is cyc_g:
                assert d is None and found is not None and cycle_weight(gg, found, ww) < 0
                res[engine, order, relabel] = ("cycle", 0)
                continue
            ref_d, ref_p, _, _ = cpu_rounds(gg, ww, s, MPI.COMM_SELF, confirm, predecessors=True)
            np.testing.assert_array_equal(d, ref_d)  # the work dtype's values, its unreached sentinel
            np.testing.assert_array_equal(p, ref_p)
            assert st["engine"] == engine and st["order"] == (order or "jacobi") and st["relabel"] == relabel
            res[engine, order, relabel] = (st["rounds"], st["relaxations"])
        # Jacobi's rounds do not depend on the ids
        assert res["kernel", "jacobi", None] == res["cupy", None, None] == res["kernel", "jacobi", "degree"]
        # the asynchronous rounds: the same results (above), no more rounds (the relaxations
        # vary from run to run: measured in benchmarks/gpu_sssp_pes.py, not asserted)
        assert res["kernel", "async", None][0] <= res["cupy", None, None][0]
        assert res["kernel", "async", "degree"][0] <= res["cupy", None, None][0]


@pytest.mark.parametrize("sort_arcs", [1, 40, None])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, None])
def test_relabeled_block_is_the_renamed_graph(sort_arcs, dtype, monkeypatch):
    """RoundsSSSP(relabel="degree") on the GPU: the order found on the device is degree_order's,
    the block on the device is the graph renamed by it (permute_graph: heads sorted, weights
    along), its rows sorted on the device a few arcs at a time too (SORT_ARCS 1 and 40: a row
    alone, rows spanning the chunks), and the distances the CPU backend's."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.cpu.bellman_ford import run_rounds as cpu_rounds
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.formats.reorder import degree_order, permute_graph

    if sort_arcs is not None:
        monkeypatch.setattr(gbf, "SORT_ARCS", sort_arcs)
    g = potential_shift(uniform_weights(kronecker(10, seed=6, directed=True), seed=6), seed=7)
    w = None if dtype is None else g.weights.astype(dtype)
    gg = Graph(g.indptr, g.indices, w, directed=True)
    r = gbf.RoundsSSSP(gg, _arc_weights(gg, None), MPI.COMM_SELF, relabel="degree")
    new_id = degree_order(gg)
    np.testing.assert_array_equal(r.d_new_id.get(), new_id)
    h = permute_graph(gg, new_id)
    np.testing.assert_array_equal(r.block.indptr.get(), h.indptr)
    np.testing.assert_array_equal(r.block.indices.get(), h.indices)
    if dtype is not None:
        np.testing.assert_array_equal(r.block.w.get(), h.weights.astype(r.block.w.dtype))
    s = int(np.argmax(np.diff(gg.indptr)))
    ww = _arc_weights(gg, None)
    confirm = lambda c: cycle_weight(gg, c, ww) < 0  # noqa: E731
    d, p, st, cyc = r.run(s, confirm, predecessors=True)
    ref_d, ref_p, _, _ = cpu_rounds(gg, ww, s, MPI.COMM_SELF, confirm, predecessors=True)
    np.testing.assert_array_equal(d, ref_d)
    np.testing.assert_array_equal(p, ref_p)
    assert st["relabel"] == "degree" and st["time_rename_s"] >= 0


# --------------------------------------------------------------------------- several sources
@pytest.mark.parametrize("mode", ["auto", "rounds", "async"])
def test_many_sources_equal_cpu(mode, monkeypatch):
    """bellman_ford(graph, sources) on one GPU session: every row equal to the CPU backend's
    (distances and canonical predecessors), in every weight dtype; the rounds renamed by
    degree from the second source on (5 runs left, threshold lowered to 3), the first on the
    caller's ids; rows of int64/float64 distances copied straight into the result."""
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_sssp_relabel_runs", 3)
    base = potential_shift(uniform_weights(kronecker(11, seed=9), seed=9), seed=2)
    for dtype in DTYPES:
        g = Graph(base.indptr, base.indices, base.weights.astype(dtype), directed=base.directed) \
            if dtype in (np.int32, np.int64) else Graph(base.indptr, base.indices,
                                                        (base.weights / 4).astype(dtype), directed=base.directed)
        deg = np.diff(g.indptr)
        srcs = [int(np.argmax(deg)), 5, int(np.flatnonzero(deg == 0)[0]) if (deg == 0).any() else 7, 5, 100, 3]
        r = bellman_ford(g, srcs, backend="gpu", mode=mode, predecessors=True)
        ref = bellman_ford(g, srcs, backend="cpu", predecessors=True)
        assert r.distance.dtype == np.dtype(dtype) and r.distance.shape == (6, g.n)
        np.testing.assert_array_equal(r.distance, ref.distance)
        np.testing.assert_array_equal(r.predecessor, ref.predecessor)
        # no predecessors: the rows (int32 / float32 ones converted on the device) filled in the background
        r2 = bellman_ford(g, srcs, backend="gpu", mode=mode)
        np.testing.assert_array_equal(r2.distance, ref.distance)
        assert r2.distance.dtype == np.dtype(dtype)
        per = r.stats["per_source"]
        if mode != "async":
            assert [st.get("relabel") for st in per] == [None] + ["degree"] * 5, [st.get("relabel") for st in per]
        assert all(st["backend"] == "gpu" for st in per)


def test_many_sources_auto_on_a_road_goes_on_with_the_queue(data_dir):
    """mode="auto" from several sources of road-NY (shifted): the first source's rounds stop
    at the probe and the queue kernel takes over; the later sources go straight to it."""
    g = potential_shift(_read(data_dir, "road-NY.gr.xz"), seed=1)
    srcs = [0, 1000, 200000]
    r = bellman_ford(g, srcs, backend="gpu", predecessors=True)
    ref = bellman_ford(g, srcs, backend="cpu", predecessors=True)
    np.testing.assert_array_equal(r.distance, ref.distance)
    np.testing.assert_array_equal(r.predecessor, ref.predecessor)
    auto = [st["auto"] for st in r.stats["per_source"]]
    assert auto[0]["chose"] == "async" and auto[0]["rounds_stopped"] == "deep" and "sticky" not in auto[0]
    assert all(a["chose"] == "async" and a["sticky"] for a in auto[1:])


def test_many_sources_negative_cycle_names_the_first_source_reaching_it():
    g = Graph.from_edges([0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 1, 5, 6, 5], np.array([4, 1, 2, -2, 3, 1, -2]), n=8)
    r = bellman_ford(g, [0, 2, 7], backend="gpu")
    assert r.distance[0].tolist()[:4] == [0, -1, 1, 1]
    for mode in ("auto", "rounds", "async"):
        with pytest.raises(NegativeCycleError) as ei:
            bellman_ford(g, [0, 2, 7, 4, 5], backend="gpu", mode=mode)
        assert ei.value.source == 4 and sorted(ei.value.cycle) == [5, 6] and ei.value.weight == -1


def test_many_sources_large_rows_through_the_sink():
    """Rows of 8 MB or more (Kronecker 21, int64 and int32 distances: 16 and 8 MB, copied in
    4 and 2 parts; both pinned buffers reused): equal to single-source runs."""
    g = uniform_weights(kronecker(21, seed=3), seed=3)
    srcs = [int(np.argmax(np.diff(g.indptr)))] + [int(x) for x in np.random.default_rng(2).integers(0, g.n, 5)]
    for w in (g.weights, g.weights.astype(np.int64)):
        gg = Graph(g.indptr, g.indices, w, directed=g.directed)
        r = bellman_ford(gg, srcs, backend="gpu")
        for i in (0, 3, 5):
            np.testing.assert_array_equal(r.distance[i], bellman_ford(gg, srcs[i], backend="gpu").distance)


# --------------------------------------------------------------------------- batched rounds
def _batched(g, srcs, **kw):
    """bellman_ford(g, srcs) on the GPU without predecessors (batched rounds) and the CPU
    backend's rows; asserts they are equal and returns the GPU result."""
    r = bellman_ford(g, srcs, backend="gpu", **kw)
    ref = bellman_ford(g, srcs, backend="cpu")
    assert r.distance.dtype == ref.distance.dtype
    np.testing.assert_array_equal(r.distance, ref.distance)
    return r


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("mode", ["auto", "rounds"])
def test_batched_rounds_equal_cpu(mode, directed):
    """RoundsSSSP.run_batch: 40 sources (a batch of 32, one of 8) of Kronecker 11 with shifted
    (negative) weights in every dtype and unweighted, directed and undirected (the hub, an
    isolated vertex, repeats), equal to the CPU backend; the per-source stats say which batch."""
    base = potential_shift(uniform_weights(kronecker(11, seed=4, directed=directed), seed=4), seed=3)
    deg = np.diff(base.indptr)
    rng = np.random.default_rng(7)
    srcs = [int(np.argmax(deg)), int(np.flatnonzero(deg == 0)[0]) if (deg == 0).any() else 1, 5, 5]
    srcs += [int(x) for x in rng.integers(0, base.n, 36)]
    from distgraph.testing import weight_variants

    for dtype, g in weight_variants(base, DTYPES):
        r = _batched(g, srcs, mode=mode)
        per = r.stats["per_source"]
        assert [st.get("batch") for st in per] == [32] * 32 + [8] * 8, (dtype, [st.get("batch") for st in per])
        assert all(st["relaxations"] >= 0 for st in per) and per[0]["relaxations"] > 0


@pytest.mark.parametrize("thin", [0, 1, 8, 32])
def test_batched_rounds_thin_vertices(monkeypatch, thin):
    """BATCH_THIN: the (source, arc) pairs of vertices of at most `thin` of them dealt over a
    warp's lanes, the others by a warp each (the mid list) or in pieces (hubs); every split gives
    the CPU backend's rows: Kronecker 11 shifted (int32, float64; directed and not) and a
    grid-like graph of low degree (a road network's shape), 40 sources."""
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_THIN", thin)
    rng = np.random.default_rng(thin)
    for directed in (True, False):
        k = potential_shift(uniform_weights(kronecker(11, seed=8, directed=directed), seed=8), seed=9)
        srcs = [int(x) for x in rng.integers(0, k.n, 40)]
        _batched(k, srcs)
        _batched(Graph(k.indptr, k.indices, (k.weights / 3).astype(np.float64), directed=k.directed), srcs)
    grid = _grid_graph(60, rng)
    r = _batched(grid, [int(x) for x in rng.integers(0, grid.n, 40)])
    assert min(st["rounds"] for st in r.stats["per_source"]) > 16  # past the rounds read one by one


def _grid_graph(side, rng, dtype=np.int32):
    """A side x side grid, arcs both ways, weights in [1, 20] (a road network's shape: deep)."""
    v = np.arange(side * side).reshape(side, side)
    a = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    b = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    return Graph.from_edges(np.concatenate([a, b]), np.concatenate([b, a]),
                            rng.integers(1, 21, 2 * a.size).astype(dtype), n=side * side)


@pytest.mark.parametrize("persist", [1, 0])
@pytest.mark.parametrize("mode", ["off", "deep", "always"])
@pytest.mark.parametrize("factor", [0.05, 4.0, 1000.0])
def test_batched_rounds_near_far(monkeypatch, mode, factor, persist):
    """BATCH_NEAR_FAR with deltas from a twentieth of the mean weight (a phase per few keys:
    many far rounds) to 1000 times it: the CPU backend's rows on a deep grid (int32, float32,
    potential-shifted: negative keys stay near), Kronecker 11 (settled before round 16: "deep"
    never starts) and a negative cycle (unsettled sources, far bits included, run alone);
    phases counted where near-far ran. The deep rounds as persistent launches and as CUDA
    graphs (BATCH_PERSIST 1, 0)."""
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_PERSIST", persist)
    monkeypatch.setattr(gbf, "BATCH_NEAR_FAR", mode)
    monkeypatch.setattr(gbf, "BATCH_DELTA_FACTOR", factor)
    rng = np.random.default_rng(11)
    g = _grid_graph(50, rng)
    srcs = [int(x) for x in rng.integers(0, g.n, 37)]
    r = _batched(g, srcs)
    phases = [st["phases"] for st in r.stats["per_source"]]
    assert (min(st["persistent_rounds"] for st in r.stats["per_source"]) > 0) == bool(persist)
    if mode == "off":
        assert set(phases) == {0}
    elif factor < 1:
        assert min(phases) > 10, phases
    _batched(Graph(g.indptr, g.indices, (g.weights / 7).astype(np.float32), directed=g.directed), srcs)
    _batched(potential_shift(g, seed=2), srcs)
    k = potential_shift(uniform_weights(kronecker(11, seed=5), seed=5), seed=6)
    r = _batched(k, [int(x) for x in rng.integers(0, k.n, 33)])
    if mode != "always":  # (the 33rd source runs alone)
        assert {st.get("phases", 0) for st in r.stats["per_source"]} == {0}
    cyc = Graph.from_edges([0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 1, 5, 6, 5], np.array([4, 1, 2, -2, 3, 1, -2]), n=8)
    with pytest.raises(NegativeCycleError) as ei:
        bellman_ford(cyc, [0, 2, 7, 4, 5, 1], backend="gpu")
    assert ei.value.source == 4


def test_batched_rounds_far_bits_left_unsettled(monkeypatch):
    """A batch stopped by its cap while a source waits in the far list: that source is not
    settled (its far bit counts), runs alone, and its row is right. The path 0 -> 1 -> 2
    (weights 1, 100), near-far from round 0 with delta 1, a cap of 2 rounds: round 1 defers
    vertex 1 (key 1, the threshold 1)."""
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.runtime.config import config

    monkeypatch.setattr(gbf, "BATCH_NEAR_FAR", "always")
    monkeypatch.setattr(gbf, "BATCH_DELTA_FACTOR", 0.01)
    monkeypatch.setattr(config, "gpu_sssp_batch_rounds", 2)
    g = Graph.from_edges([0, 1], [1, 2], np.array([1, 100], np.int32), n=3)
    r = _batched(g, [0, 2])
    assert [st.get("batch") for st in r.stats["per_source"]] == [None, 2]
    assert r.distance[0].tolist() == [0, 1, 101]


@pytest.mark.parametrize("kind", ["float64", "int64"])
def test_batched_rounds_negative_cycle_below_the_bound(kind):
    """A negative cycle whose keys would reach -inf (float64 weights of 1e306: -inf + w is no
    longer lower, the frontier would empty) or wrap around (int64 weights of 2**59) within the
    batch's cap: the key below the bound -B - 1 marks the source unsettled, it runs alone and
    raises NegativeCycleError; the source before it keeps its batched row."""
    big = 1e306 if kind == "float64" else 2 ** 59
    w = np.array([4, 1, 2, -2, 3, 1, -2], np.float64 if kind == "float64" else np.int64) * big
    g = Graph.from_edges([0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 1, 5, 6, 5], w, n=8)
    with pytest.raises(NegativeCycleError) as ei:
        bellman_ford(g, [0, 4, 5], backend="gpu", mode="rounds")
    assert ei.value.source == 4 and sorted(ei.value.cycle) == [5, 6]
    r = bellman_ford(g, [0, 1], backend="gpu")
    np.testing.assert_array_equal(r.distance, bellman_ford(g, [0, 1], backend="cpu").distance)
    assert [st.get("batch") for st in r.stats["per_source"]] == [2, 2]


@pytest.mark.parametrize("persist", [0, 1])
def test_batched_rounds_graphs_replayed_by_the_next_batch(monkeypatch, persist):
    """96 sources on a deep grid: three batches of 32 whose CUDA graphs of 6 rounds, captured by
    the first, are replayed by the next ones (the counters, lists and near-far state reset
    through the pointers baked into them), or (persist) a batch of 32 and one of two groups of
    32 in step, their deep rounds in persistent launches: the CPU backend's rows."""
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_PERSIST", persist)
    rng = np.random.default_rng(21)
    g = _grid_graph(60, rng)
    r = _batched(g, [int(x) for x in rng.integers(0, g.n, 96)])
    per = r.stats["per_source"]
    assert [st.get("batch") for st in per] == [32] * 96 and min(st["rounds"] for st in per) > 40
    assert (min(st["persistent_rounds"] for st in per) > 0) == bool(persist)
    assert (max(st["persistent_rounds"] for st in per) > 0) == bool(persist)


@pytest.mark.parametrize("thin", [0, 32])
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_batched_rounds_persistent_with_hubs_and_mid_vertices(monkeypatch, thin, dtype):
    """The persistent rounds (one cooperative launch, grid syncs between a round's passes) on a
    deep grid with a hub (300 arcs out, 300 in: pieces of BATCH_BIG_DEGREE in the big list) and
    every vertex through the mid list (thin 0), in launches of 7 rounds (the arrays' rotation
    across launches) and of 512, on one and on two blocks an SM: the CPU backend's rows."""
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_THIN", thin)
    rng = np.random.default_rng(thin + 3)
    grid = _grid_graph(50, rng, dtype)
    hub, spokes = grid.n, rng.choice(grid.n, 300, replace=False)
    src = np.concatenate([np.repeat(np.arange(grid.n), np.diff(grid.indptr)), np.full(300, hub), spokes])
    dst = np.concatenate([grid.indices, spokes, np.full(300, hub)])
    w = np.concatenate([grid.weights, rng.integers(200, 400, 600).astype(dtype)])
    g = Graph.from_edges(src, dst, w, n=grid.n + 1)
    assert gbf.BATCH_BIG_DEGREE <= 300
    srcs = [int(x) for x in rng.integers(0, g.n, 40)] + [hub]
    for step, blocks in ((7, 1), (512, 1), (512, 2)):
        monkeypatch.setattr(gbf, "BATCH_PERSIST_STEP", step)
        monkeypatch.setattr(gbf, "BATCH_PERSIST", blocks)
        r = _batched(g, srcs)
        per = r.stats["per_source"]
        assert [st.get("batch") for st in per] == [32] * 32 + [9] * 9
        assert min(st["persistent_rounds"] for st in per) > 0 and min(st["rounds"] for st in per) > 16


@pytest.mark.parametrize("persist,big,step", [(1, False, 512), (1, False, 7), (1, True, 512), (0, False, 512)])
def test_batched_rounds_groups_in_step(monkeypatch, persist, big, step):
    """BATCH_GROUPS: after a first batch proved the graph deep (its rounds went persistent), the
    next batch's 68 sources run as 3 groups in step (23, 23, 22), one launch for all; the third
    group's sources are on a path of 40 vertices apart from the grid, so it settles first, within
    the persistent rounds (40 rounds at most), and the others go on (41 or more: near-far off,
    a round per arc). big: the path's arcs weigh 2**26 (int64), its sums leave int32's range at
    arc 32 and the whole batch runs again on 8-byte keys. persist 0: no persistent rounds, so
    one group a batch. step 7: persistent launches of 7 rounds (relaunched with the groups still
    live once the path's has settled). Every row the CPU backend's."""
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_PERSIST", persist)
    monkeypatch.setattr(gbf, "BATCH_PERSIST_STEP", step)
    monkeypatch.setattr(gbf, "BATCH_NEAR_FAR", "off")
    monkeypatch.setattr(gbf, "BATCH_GROUPS", 3)
    g, srcs = _grid_and_path(2 ** 26 if big else 3, np.int64)
    r = _batched(g, srcs)
    per = r.stats["per_source"]
    if not persist:
        assert [st["batch"] for st in per] == [32] * 96 + [4] * 4 and {st["groups"] for st in per} == {1}
        return
    assert [st["batch"] for st in per] == [32] * 32 + [23] * 46 + [22] * 22
    assert [st["groups"] for st in per] == [1] * 32 + [3] * 68
    assert [st["keys"] for st in per] == [4] * 32 + [8 if big else 4] * 68
    assert max(st["rounds"] for st in per[78:]) <= 40 < min(st["rounds"] for st in per[32:78])
    assert min(st["persistent_rounds"] for st in per) > 0


def _grid_and_path(wpath, dtype, grid_sources=78):
    """A 40 x 40 grid (weights in [1, 20]) and, apart from it, a path of 40 vertices (arcs of
    ``wpath``); sources: ``grid_sources`` on the grid, then 22 among the path's first 5."""
    rng = np.random.default_rng(40)
    grid = _grid_graph(40, rng, dtype)
    p = grid.n + np.arange(40)
    src = np.concatenate([np.repeat(np.arange(grid.n), np.diff(grid.indptr)), p[:-1]])
    dst = np.concatenate([grid.indices, p[1:]])
    w = np.concatenate([grid.weights, np.full(39, wpath, dtype)])
    g = Graph.from_edges(src, dst, w, n=grid.n + 40)
    return g, [int(x) for x in rng.integers(0, grid.n, grid_sources)] + [int(x) for x in rng.choice(p[:5], 22)]


@pytest.mark.parametrize("persist", [1, 0])
def test_batched_rounds_groups_unsettled_and_as_graphs(monkeypatch, persist):
    """Session.run_batch with 3 groups (23, 23, 22 sources) set by hand, in one persistent launch
    or as CUDA graphs per group (persist 0): every row the CPU backend's. Then with a cap of 40
    rounds: the two grid groups (41 rounds or more) are not settled (None), the path's group
    (40 at most) is, its rows right and in their places."""
    from mpi4py import MPI

    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.runtime.config import config

    monkeypatch.setattr(gbf, "BATCH_PERSIST", persist)
    monkeypatch.setattr(gbf, "BATCH_NEAR_FAR", "off")
    monkeypatch.setattr(config, "gpu_sssp_batch", 23)
    g, srcs = _grid_and_path(3, np.int32, grid_sources=46)
    ref = bellman_ford(g, srcs, backend="cpu").distance
    with gbf.Session(g, g.weights, MPI.COMM_SELF, mode="rounds") as s:
        s.batch_groups = 3
        rows = np.empty((68, g.n), np.int32)
        res = s.run_batch(np.array(srcs), list(rows))
        s.flush()
        assert [x["batch"] for x in res] == [23] * 46 + [22] * 22 and {x["groups"] for x in res} == {3}
        assert {x["batch_sources"] for x in res} == {68}
        assert (min(x["persistent_rounds"] for x in res) > 0) == bool(persist)
        np.testing.assert_array_equal(rows, ref)
        monkeypatch.setattr(config, "gpu_sssp_batch_rounds", 40)
        rows = np.zeros((68, g.n), np.int32)
        res = s.run_batch(np.array(srcs), list(rows))
        s.flush()
        assert [x is None for x in res] == [True] * 46 + [False] * 22
        np.testing.assert_array_equal(rows[46:], ref[46:])
        assert not rows[:46].any()


def test_batched_rounds_persistent_overflow_of_four_byte_keys():
    """A path of 300 arcs of 2**26: its sums leave int32's range at arc 32, within the
    persistent rounds; the batch runs again on 8-byte keys, with the CPU backend's rows."""
    n = 301
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.full(n - 1, 2 ** 26, np.int64), n=n)
    r = _batched(g, [0, 5, 250])
    per = r.stats["per_source"]
    assert [st["keys"] for st in per] == [8] * 3 and min(st["persistent_rounds"] for st in per) > 0
    assert r.distance[0, -1] == 300 * 2 ** 26


def test_batched_rounds_hubs_in_pieces(monkeypatch):
    """A vertex of 20000 arcs (pieces of BATCH_BIG_DEGREE, a block each) among sources whose
    masks differ (the hub reached from some sources in round 1, from others later), and a
    batch of 5 sources (not a power of two: 6 arcs per warp step for a full mask)."""
    rng = np.random.default_rng(3)
    n = 30000
    hub = np.zeros(20000, np.int64)
    src = np.concatenate([hub, rng.integers(0, n, 60000)])
    dst = np.concatenate([rng.integers(0, n, 20000), rng.integers(0, n, 60000)])
    w = rng.integers(-3, 50, src.size).astype(np.int64)
    g = Graph.from_edges(src, dst, np.abs(w), n=n)
    srcs = [0, 1, 2, 3, 4, 0, 17, 999] + [int(x) for x in rng.integers(0, n, 30)]
    _batched(g, srcs)
    _batched(g, srcs[:5])
    # negative weights without a negative cycle: a potential shift
    gs = potential_shift(g, seed=5)
    _batched(gs, srcs)
    from distgraph.backends.gpu import bellman_ford as gbf

    monkeypatch.setattr(gbf, "BATCH_SKIP", True)  # the skip of relaxed sources, hubs in pieces too
    _batched(gs, srcs)
    _batched(g, srcs[:5])


def test_batched_rounds_renamed_only_when_asked(monkeypatch):
    """Batches keep the caller's ids by default (even with many sources left and the threshold
    lowered to 3); BellmanFord(relabel="degree") runs every batch renamed: the same rows."""
    from distgraph.algorithms.bellman_ford import BellmanFord
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_sssp_relabel_runs", 3)
    g = potential_shift(uniform_weights(kronecker(12, seed=6), seed=6), seed=4)
    srcs = [int(x) for x in np.random.default_rng(1).integers(0, g.n, 70)]
    r = _batched(g, srcs)
    per = r.stats["per_source"]
    assert [st.get("relabel") for st in per] == [None] * 70
    assert [st.get("batch") for st in per] == [32] * 64 + [6] * 6
    with BellmanFord(g, backend="gpu", relabel="degree") as bf:
        r2 = bf.run_many(srcs)
    np.testing.assert_array_equal(r2.distance, r.distance)
    assert [st.get("relabel") for st in r2.stats["per_source"]] == ["degree"] * 70


def test_batched_rounds_negative_cycle_and_deep_graph_fall_back(data_dir, monkeypatch):
    """Sources that reach a negative cycle leave the batch unsettled: they run alone, which
    names the first (the rows of the others before it come from the batch). road-NY (deep:
    hundreds of rounds, queued unread after the first 16) settles in the batch; with the
    batches' rounds capped at 64 its sources run alone (the queue kernel)."""
    from distgraph.runtime.config import config

    g = Graph.from_edges([0, 0, 1, 2, 4, 5, 6], [1, 2, 3, 1, 5, 6, 5], np.array([4, 1, 2, -2, 3, 1, -2]), n=8)
    with pytest.raises(NegativeCycleError) as ei:
        bellman_ford(g, [0, 2, 7, 4, 5, 1], backend="gpu")
    assert ei.value.source == 4 and sorted(ei.value.cycle) == [5, 6]
    r = _batched(g, [0, 2, 7, 1, 3])
    assert all(st.get("batch") == 5 for st in r.stats["per_source"])
    road = potential_shift(_read(data_dir, "road-NY.gr.xz"), seed=1)
    srcs = [0, 1000, 200000, 5]
    r = _batched(road, srcs)
    per = r.stats["per_source"]
    assert all(st.get("batch") == 4 and st["rounds"] > 64 for st in per), per
    monkeypatch.setattr(config, "gpu_sssp_batch_rounds", 64)
    r = _batched(road, srcs)
    per = r.stats["per_source"]
    assert all("batch" not in st and st["auto"]["chose"] == "async" for st in per), per


@pytest.mark.parametrize("way", ["persist", "graphs", "launches"])
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_batched_rounds_queued_unread_stop_at_the_cap(monkeypatch, dtype, way):
    """A path of 300 vertices (and a shortcut): from vertex 0 the rounds with work are exactly
    300 (past the first 16, rounds run in one persistent launch that stops when the frontier
    empties, or are queued 30 at a time without reading back, as CUDA graphs of 6 or one by
    one; those past the end do nothing and are not counted). A cap of 300 rounds settles the
    batch; 299 leaves source 0 unsettled (it runs alone) while the others settle; a new call
    batches again. Near-far off (its far rounds would add rounds)."""
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.backends.gpu.bellman_ford import BATCH_EXACT
    from distgraph.runtime.config import config

    monkeypatch.setattr(gbf, "BATCH_NEAR_FAR", "off")
    monkeypatch.setattr(gbf, "BATCH_GRAPHS", way == "graphs")
    monkeypatch.setattr(gbf, "BATCH_PERSIST", int(way == "persist"))

    n = 300
    src = np.concatenate([np.arange(n - 1), [250]])
    dst = np.concatenate([np.arange(1, n), [10]])
    w = np.concatenate([np.arange(1, n) % 7 + 1, [1]]).astype(dtype)
    g = Graph.from_edges(src, dst, w, n=n)
    srcs = [0, 200, 290, 299]
    r = _batched(g, srcs)
    assert [st["rounds"] for st in r.stats["per_source"]] == [n] * 4 and n > BATCH_EXACT
    # (persistent: rounds 16 to 299, the last leaving no frontier)
    assert {st["persistent_rounds"] for st in r.stats["per_source"]} == {n - BATCH_EXACT if way == "persist" else 0}
    monkeypatch.setattr(config, "gpu_sssp_batch_rounds", n)
    r = _batched(g, srcs)
    assert [st.get("batch") for st in r.stats["per_source"]] == [4] * 4
    monkeypatch.setattr(config, "gpu_sssp_batch_rounds", n - 1)
    r = _batched(g, srcs)
    assert [st.get("batch") for st in r.stats["per_source"]] == [None, 4, 4, 4]
    r = _batched(g, srcs[1:] + srcs[1:])
    assert [st.get("batch") for st in r.stats["per_source"]] == [6] * 6


def test_batched_rounds_int32_overflow_raises_as_a_single_run():
    """int32 rows whose distances pass int32's range: the batch's conversion raises, and the
    source run alone raises the same error (GraphValueError naming int64 weights)."""
    from distgraph.errors import GraphValueError

    n = 6
    w = np.full(n - 1, 2 ** 30, np.int32)
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), w, n=n)
    with pytest.raises(GraphValueError, match="overflow"):
        bellman_ford(g, [0, 1, 2], backend="gpu")
    r = bellman_ford(g, [4, 5, 4], backend="gpu")
    top = np.iinfo(np.int32).max
    assert r.distance[0].tolist() == [top] * 4 + [0, 2 ** 30] and r.stats["per_source"][0]["batch"] == 3


def test_batched_rounds_keys_of_four_bytes_and_their_overflow(monkeypatch):
    """Integer weights run on 4-byte keys ("keys": 4), floats on 8; sums past int32's range
    (int64 weights of 2**29, paths of 5+ arcs) run the batch again, and the later ones, on
    8-byte keys, with the CPU backend's rows; the same with the skip of relaxed sources."""
    from distgraph.backends.gpu import bellman_ford as gbf

    g = uniform_weights(kronecker(10, seed=2), seed=2)
    r = _batched(g, list(range(40)))
    assert {st["keys"] for st in r.stats["per_source"]} == {4}
    r = _batched(Graph(g.indptr, g.indices, g.weights.astype(np.float32) / 3, directed=g.directed), list(range(5)))
    assert {st["keys"] for st in r.stats["per_source"]} == {8}
    rng = np.random.default_rng(5)
    n = 400
    src, dst = np.arange(n - 1), np.arange(1, n)  # a path, and random shortcuts
    src = np.concatenate([src, rng.integers(0, n, 300)])
    dst = np.concatenate([dst, rng.integers(0, n, 300)])
    w = np.concatenate([np.full(n - 1, 2 ** 29), rng.integers(2 ** 28, 2 ** 30, 300)]).astype(np.int64)
    big = Graph.from_edges(src, dst, w, n=n)
    for skip in (False, True):
        monkeypatch.setattr(gbf, "BATCH_SKIP", skip)
        r = _batched(big, list(range(0, 400, 9)))
        assert [st["keys"] for st in r.stats["per_source"]] == [8] * 45
        assert r.distance[r.distance < np.iinfo(np.int64).max].max() > 2 ** 31
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.full(n - 1, 2 ** 29, np.int64), n=n)
    r = _batched(path, [n - 4, n - 2, n - 1])  # paths of 3 arcs at most: int32 keys suffice
    assert [st["keys"] for st in r.stats["per_source"]] == [4] * 3 and r.distance[0, -1] == 3 * 2 ** 29


@pytest.mark.parametrize("relabel", [None, "degree"])
def test_batched_rounds_partly_settled_batch_and_the_next_one(relabel):
    """Session.run_batch where some sources reach a negative cycle: those come back None
    (unsettled within the cap), the others' rows (the settled columns gathered, renamed by
    degree or not) equal the CPU backend's; the next batch on the same engine is right."""
    from mpi4py import MPI

    from distgraph.backends.gpu.bellman_ford import Session

    k = uniform_weights(kronecker(10, seed=3), seed=3)
    n0 = k.n
    src = np.repeat(np.arange(n0), np.diff(k.indptr))
    # a negative cycle n0 -> n0+1 -> n0+2 -> n0 (weight -3), entered from n0+3 and from an
    # isolated vertex of the Kronecker graph (which no other vertex reaches)
    iso = int(np.flatnonzero(np.diff(k.indptr) == 0)[0])
    s2 = np.concatenate([src, [n0, n0 + 1, n0 + 2, n0 + 3, iso]])
    d2 = np.concatenate([k.indices, [n0 + 1, n0 + 2, n0, n0, n0]])
    w2 = np.concatenate([k.weights, [1, 1, -5, 1, 1]]).astype(np.int32)
    g = Graph.from_edges(s2, d2, w2, n=n0 + 4, directed=True)
    a, b, c, d = [int(x) for x in np.flatnonzero(np.diff(k.indptr) > 0)[:4]]
    first = [a, n0 + 3, b, iso, c, n0, d, b]  # n0 + 3, iso and n0 reach the cycle
    rows = np.empty((len(first), g.n), np.int32)
    with Session(g, g.weights, MPI.COMM_SELF, mode="rounds", relabel=relabel) as s:
        res = s.run_batch(np.array(first), list(rows))
        s.flush()
        assert [r is None for r in res] == [False, True, False, True, False, True, False, False]
        for i, v in enumerate(first):
            if res[i] is not None:
                np.testing.assert_array_equal(rows[i], bellman_ford(g, v, backend="cpu").distance)
                assert res[i]["relabel"] == relabel and res[i]["keys"] == 4
        nxt = [d, c, a, b]
        rows2 = np.empty((4, g.n), np.int32)
        res = s.run_batch(np.array(nxt), list(rows2))
        s.flush()
        assert all(r is not None for r in res)
        for i, v in enumerate(nxt):
            np.testing.assert_array_equal(rows2[i], bellman_ford(g, v, backend="cpu").distance)
