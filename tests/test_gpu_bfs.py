"""GPU BFS on tensor cores (BLEST) against CPU references, every kernel path forced.

Levels are compared with scipy.sparse.csgraph (unweighted shortest paths) and, when the
CPU backend is importable, with ``distgraph.bfs(..., backend="cpu")``, for many random
sources on generated graphs (Kronecker, urand, grid, rgg, Delaunay; vertex counts that
are not multiples of 8 or 128; disconnected ones) and on the real graphs of
``shared/data``.  Every engine is built once per (graph, reordering) and run with each
variant: plain (Alg. 2), lazy (Alg. 3), switch (Alg. 3+4) with eta = 10, with eta = 0
(never bottom-up) and with a huge eta (bottom-up at every level), each switch run with the
edge test off (alpha = 0), at its default and at alpha = 1e9 (Eq. 6 decides); the plain scheme also
with its small levels on one block off (tiny = 0), on for queues up to 8 VSSs and on for
every level (tiny huge), with session 1's update code ("plain-s1") and with the visited
bitmap and slice-set claims ("plain-v").  Parents (the
second pass over G^T) are checked with the BFS verifier and against the smallest in-neighbour
one level up (the CPU backend's rule) computed with numpy.
"""

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from distgraph import generators as gen
from distgraph.graph import Graph

pytestmark = pytest.mark.gpu

# (variant, eta, tiny, alpha)
RUNS = [("plain", 10, 8, 2.0), ("plain", 10, 0, 2.0), ("plain", 10, 2**30, 2.0), ("plain-s1", 10, 0, 2.0),
        ("plain-s1", 10, 2**30, 2.0), ("plain-v", 10, 0, 2.0), ("plain-v", 10, 8, 2.0), ("plain-v", 10, 2**30, 2.0),
        ("lazy", 10, 8, 2.0)] + [("switch", eta, 8, alpha) for eta in (10, 0, 2**30) for alpha in (0.0, 2.0, 1e9)]


def _ref_levels(g, sources):
    A = g.to_scipy(dtype=np.float64)
    d = csg.shortest_path(A, method="D", directed=g.directed, unweighted=True, indices=np.asarray(sources))
    out = np.where(np.isfinite(d), d, -1).astype(np.int32)
    return out.reshape(len(sources), g.n)


def _cpu_backend_levels(g, s):
    try:
        import distgraph

        r = distgraph.bfs(g, int(s), backend="cpu")
    except Exception:  # CPU backend not available in this checkout
        return None
    lev = getattr(r, "level", getattr(r, "levels", r))
    lev = np.asarray(lev.to_numpy() if hasattr(lev, "to_numpy") else lev)
    return lev if lev.shape == (g.n,) else None


def _sources(g, k, seed=1):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, g.n, k).tolist()
    deg = np.diff(g.indptr)
    s.append(int(np.argmax(deg)))
    zero = np.flatnonzero(deg == 0)
    if zero.size:
        s.append(int(zero[0]))  # an isolated (or sink) source
    s.append(g.n - 1)
    return s


def _levels(eng, s, variant):
    if variant in ("plain", "lazy", "switch"):
        return eng.levels(s, variant=variant)
    lev, _ = eng.run_device(s, variant)
    return lev.get() if eng.new_id is None else lev.get()[eng.new_id]


def _ref_parents(g, lev, s):
    """The smallest in-neighbour one level up (the CPU backend's rule), by numpy."""
    ip, ix, _ = g.csc()
    tgt = np.repeat(np.arange(g.n), np.diff(ip))
    ix = np.asarray(ix, dtype=np.int64)
    ok = (lev[tgt] > 0) & (lev[ix] == lev[tgt] - 1)
    par = np.full(g.n, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(par, tgt[ok], ix[ok])
    par[lev < 0] = -1
    par[s] = s
    return par


def _check_parents(g, eng, srcs):
    from distgraph.algorithms.bfs import verify_bfs

    for s in srcs:
        lev, par = eng.levels_and_parents(s)
        assert par.dtype == np.int64 and par.shape == (g.n,)
        verify_bfs(g, s, lev, par)
        bad = np.flatnonzero(_ref_parents(g, lev, s) != par)
        assert bad.size == 0, f"source {s}: parents are not the smallest one level up at {bad[:5].tolist()}"


def _check_engine(g, reorder, k=12):
    from distgraph.backends.gpu.bfs import GpuBFS

    eng = GpuBFS(g, variant="switch", reorder=reorder, window=1024, cache_dir=False)
    srcs = _sources(g, k)
    ref = _ref_levels(g, srcs)
    for variant, eta, tiny, alpha in RUNS:
        eng.eta, eng.tiny, eng.alpha = eta, tiny, alpha
        for i, s in enumerate(srcs):
            got = _levels(eng, s, variant)
            assert got.dtype == np.int32 and got.shape == (g.n,)
            bad = np.flatnonzero(got != ref[i])
            assert bad.size == 0, (f"{variant} eta={eta} tiny={tiny} alpha={alpha} reorder={reorder} source={s}: "
                                   f"{bad.size} wrong, e.g. v={bad[:5].tolist()} got={got[bad[:5]].tolist()} "
                                   f"want={ref[i][bad[:5]].tolist()}")
    eng.tiny, eng.alpha = 8, 2.0
    # the bottom-up scan with several in-arcs per round (GpuBFS bu_chunk), forced at every level
    # (eta huge, edge test off) and by Eq. 6; chunks past a vertex's in-degree and rows that end
    # inside a round included
    for chunk, lists in ((2, False), (4, False), (16, False), (1, True), (4, True), (16, True)):
        eng.bu_chunk, eng.bu_list = chunk, lists
        for eta in (2**30, 10):
            eng.eta, eng.alpha = eta, 0.0
            for i, s in enumerate(srcs):
                got = _levels(eng, s, "switch")
                bad = np.flatnonzero(got != ref[i])
                assert bad.size == 0, (f"switch bu_chunk={chunk} bu_list={lists} eta={eta} reorder={reorder} source={s}: "
                                       f"{bad.size} wrong, e.g. v={bad[:5].tolist()}")
    eng.bu_chunk, eng.bu_list = 4, False
    eng.eta, eng.tiny, eng.alpha = 10, 8, 2.0
    # the edge test's counter: in-arcs of every visited vertex, summed by runs of new vertices
    # in stage 2 (ctr[32..41] as uint64, [4] = all levels)
    indeg = np.diff(g.csc()[0])
    for s in srcs[:4] + srcs[k:]:
        lev = eng.levels(s, variant="switch")
        arcs = eng._ctr.get()[32:42].view(np.uint64)
        assert int(arcs[4]) == int(indeg[lev >= 0].sum()), (s, int(arcs[4]), int(indeg[lev >= 0].sum()))
    _check_parents(g, eng, srcs[:4] + srcs[k:])
    # the bottom-up pass really ran when eta forces it (edge test off), the edge test vetoes
    # it when alpha is tiny (all but levels where no unvisited in-arc is left), and the
    # filtered lazy option agrees
    s = srcs[k]  # the highest-degree vertex
    eng.eta, eng.alpha = 2**30, 0.0
    eng.levels(s, variant="switch")
    st = eng.stats()
    assert st["bottom_up_levels"] == st["levels"]
    eng.alpha = 1e-9
    eng.levels(s, variant="switch")
    st2 = eng.stats()
    assert st2["levels"] == st["levels"], (st, st2)
    assert st["levels"] == 0 or st2["bottom_up_levels"] < st["levels"], (st, st2)  # 0: a single vertex
    eng.eta, eng.alpha = 10, 2.0
    for v in ("lazy+filter", "switch+filter"):
        lev, _ = eng.run_device(s, v)
        got = lev.get() if eng.new_id is None else lev.get()[eng.new_id]
        assert np.array_equal(got, ref[k]), v
    return eng


def _two_components():
    a = gen.grid(13, 11)
    b = gen.kronecker(9)
    n = a.n + b.n + 5  # plus 5 isolated vertices
    sa, da, _ = a.edges()
    sb, db, _ = b.edges()
    return Graph.from_edges(np.concatenate([sa, sb + a.n]), np.concatenate([da, db + a.n]), n=n, directed=False)


def _directed_random(n, m, seed):
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n=n, directed=True)


GENERATED = [
    ("kron10", lambda: gen.kronecker(10)),
    ("kron13", lambda: gen.kronecker(13)),
    ("urand11", lambda: gen.urand(11)),
    ("urand13-directed", lambda: gen.urand(13, directed=True)),
    ("grid-37x41", lambda: gen.grid(37, 41)),
    ("grid-road-300x301", lambda: gen.grid(300, 301, drop=0.3)),
    ("rgg12", lambda: gen.rgg(12)),
    ("delaunay12", lambda: gen.delaunay(12)),
    ("two-components", _two_components),
    ("directed-n1001", lambda: _directed_random(1001, 3000, 7)),
    ("path-n3", lambda: Graph.from_edges([0, 1], [1, 2], directed=False)),
    ("single-vertex", lambda: Graph.from_edges([], [], n=1)),
]


@pytest.mark.parametrize("reorder", ["none", "auto"])
@pytest.mark.parametrize("name,make", GENERATED, ids=[g[0] for g in GENERATED])
def test_generated_graphs(name, make, reorder):
    _check_engine(make(), reorder)


REAL = ["minnesota.mtx.gz", "power.mtx.gz", "email-Enron.mtx.gz", "cond-mat-2005.mtx.gz", "wiki-Vote.txt.gz",
        "bitcoin-otc.csv.gz", "road-NY.gr.xz", "road-FLA.gr.xz"]


@pytest.mark.parametrize("fname", REAL)
def test_real_graphs(fname, data_dir):
    import distgraph

    g = distgraph.read_graph(data_dir / fname)
    _check_engine(g, "auto", k=6 if g.n > 200_000 else 12)
    if g.n < 100_000:
        _check_engine(g, "none", k=6)


def test_auto_variant_and_bfs_gpu():
    from distgraph.backends.gpu.bfs import GpuBFS, bfs_gpu

    g = gen.kronecker(11)
    eng = GpuBFS(g, cache_dir=False)
    assert eng.variant in ("plain", "lazy", "switch")
    assert eng.info["udiv_choice"] in ("plain", "lazy") and "auto_check_ms" in eng.info
    # the check timed no switching, switching with the edge test and by Eq. 6 alone, and kept
    # the fastest (alpha 0 when Eq. 6 alone won)
    times = eng.info["auto_check_ms"]
    assert set(times) == {eng.info["udiv_choice"], "switch", "switch-eq6"}, times
    best = min(times, key=times.get)
    assert eng.variant == ("switch" if best == "switch-eq6" else best)
    from distgraph.runtime.config import config

    assert eng.alpha == (0.0 if best == "switch-eq6" else config.gpu_bfs_alpha) == eng.info["alpha"]
    # bottom-up work lists by default on graphs that are not scale-free-like only
    assert eng.info["bu_list"] is False and eng.bu_list is False  # kron:11 is scale-free-like
    eu = GpuBFS(gen.urand(10), variant="switch", reorder="none", cache_dir=False)
    assert eu.bu_list is True and eu.info["bu_list"] is True
    assert GpuBFS(gen.urand(10), variant="switch", cache_dir=False, bu_list=False).bu_list is False
    # directed graphs: Eq. 6 alone unless asked (the edge test counts in-arcs)
    gd = gen.kronecker(9, directed=True)
    assert GpuBFS(gd, variant="switch", cache_dir=False).alpha == 0.0
    assert GpuBFS(gd, variant="switch", cache_dir=False, alpha=3.0).alpha == 3.0
    s = int(np.argmax(np.diff(g.indptr)))
    ref = _ref_levels(g, [s])[0]
    assert np.array_equal(eng.levels(s), ref)
    assert np.array_equal(bfs_gpu(g, s, variant="lazy", reorder="jaccard", window=512, cache_dir=False), ref)
    cpu = _cpu_backend_levels(g, s)
    if cpu is not None:
        assert np.array_equal(cpu, ref)


def test_public_api_dispatch():
    import inspect

    import distgraph
    from distgraph.algorithms import bfs as bfs_mod
    if "bfs_gpu" not in inspect.getsource(bfs_mod):
        pytest.skip("distgraph.algorithms.bfs does not dispatch to the GPU runner in this checkout")
    g = gen.urand(11, directed=True)
    r = distgraph.bfs(g, 3, backend="gpu", verify=True)
    assert np.array_equal(r.levels, _ref_levels(g, [3])[0])
    r = distgraph.bfs(g, 3, backend="gpu", parents=True, verify=True)
    assert np.array_equal(r.levels, _ref_levels(g, [3])[0])
    assert np.array_equal(r.parents, _ref_parents(g, r.levels, 3))


def test_cache_hit_gives_same_levels(tmp_path):
    from distgraph.backends.gpu.bfs import GpuBFS

    g = gen.urand(10)
    a = GpuBFS(g, variant="lazy", reorder="rcm", cache_dir=tmp_path)
    b = GpuBFS(g, variant="lazy", reorder="rcm", cache_dir=tmp_path)
    assert not a.info["cached"] and b.info["cached"]
    assert np.array_equal(a.levels(5), b.levels(5))


def test_errors():
    from distgraph.backends.gpu.bfs import GpuBFS, bfs_gpu
    from distgraph.backends.gpu.memory import bfs_plan
    from distgraph.errors import DeviceMemoryError, InvalidArgumentError

    g = gen.grid(5, 5)
    with pytest.raises(InvalidArgumentError, match=r"source must be in \[0, 25\); got 25"):
        bfs_gpu(g, 25)
    with pytest.raises(TypeError, match="source must be an integer"):
        bfs_gpu(g, 1.5)
    with pytest.raises(InvalidArgumentError, match="variant must be one of"):
        GpuBFS(g, variant="fast")
    with pytest.raises(InvalidArgumentError, match="reorder must be one of"):
        GpuBFS(g, reorder="metis")
    with pytest.raises(InvalidArgumentError, match="tiny must be an integer >= 0"):
        GpuBFS(g, tiny=-1)
    eng = GpuBFS(g, variant="plain", cache_dir=False)
    with pytest.raises(InvalidArgumentError, match="variant must be"):
        eng.levels(0, variant="switch")
    plan = bfs_plan(g.n, eng.bvss, g.m)
    with pytest.raises(DeviceMemoryError, match="GPU BFS needs .* but only 1.0 KiB is free on the device; try"):
        plan.check(free=1024)


def test_grid_size_does_not_change_levels():
    # every loop of the kernel is grid-stride and warp-uniform: any co-resident grid works
    from distgraph.backends.gpu.bfs import GpuBFS

    g = _two_components()
    eng = GpuBFS(g, variant="switch", reorder="none", cache_dir=False)
    srcs = _sources(g, 4)
    ref = _ref_levels(g, srcs)
    for grid in (1, 3, eng.grid_plain, eng.grid_full):
        eng.grid = grid
        for variant, tiny in (("plain", 0), ("plain", 8), ("plain", 2**30), ("plain-v", 8), ("lazy", 8),
                              ("switch", 8)):
            eng.tiny = tiny
            for i, s in enumerate(srcs):
                assert np.array_equal(_levels(eng, s, variant), ref[i]), (grid, variant, tiny, s)


def test_parents_directed_and_reordered_and_large_degree():
    # a hub whose only parent is far into its in-list (the warp-wide scan), a directed
    # graph (caller's G^T differs from G), and an engine that reorders (caller ids)
    from distgraph.backends.gpu.bfs import GpuBFS

    n = 3000
    hub = 5
    src = np.concatenate([np.arange(n), np.full(n - 1, hub), [n - 1]])
    dst = np.concatenate([(np.arange(n) + 1) % n, np.delete(np.arange(n), hub), [hub]])
    g = Graph.from_edges(src, dst, n=n, directed=True)
    for reorder in ("none", "rcm"):
        for variant in ("plain", "lazy"):
            eng = GpuBFS(g, variant=variant, reorder=reorder, cache_dir=False)
            _check_parents(g, eng, [0, hub, n - 1, 1234])
    g2 = gen.kronecker(12)
    eng = GpuBFS(g2, variant="switch", reorder="jaccard", window=512, cache_dir=False)
    _check_parents(g2, eng, _sources(g2, 6))
    par_plan = eng.info.get("parents_device_bytes")
    assert par_plan and par_plan >= 8 * g2.n
