"""Tests of distgraph.generators: structure, statistics, determinism, weights, specs, CLI.

References are independent of the code under test: networkx (grid, planarity),
scipy.spatial (pairwise distances, convex hull), scipy.sparse.csgraph (shortest paths,
negative cycles) and Graph.from_edges (the general CSR builder).
"""

import gzip
import hashlib
import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph
from scipy.spatial import ConvexHull
from scipy.spatial.distance import pdist, squareform

from distgraph.errors import InvalidArgumentError
from distgraph.generators import (DEFAULT_SEED, delaunay, from_spec, grid, is_spec, kronecker, kronecker_edges,
                                  parse_spec, plant_negative_cycle, potential_shift, rgg, rgg_radius,
                                  uniform_weights, urand, urand_edges)
from distgraph.generators._csr import build_csr
from distgraph.generators.kron import CHUNK_EDGES
from distgraph.generators.rgg import random_points
from distgraph.graph import Graph


def digest(g: Graph) -> str:
    h = hashlib.sha256()
    for a in (g.indptr, g.indices, g.weights):
        if a is not None:
            h.update(str(a.dtype).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    h.update(b"d" if g.directed else b"u")
    return h.hexdigest()


def same(g: Graph, h: Graph) -> bool:
    return digest(g) == digest(h)


def edge_set(g: Graph):
    s, d, _ = g.edges()
    return set(zip(s.tolist(), d.tolist()))


SMALL_SPECS = ["kron:10", "kron:9:directed:ef=8", "urand:10", "urand:9:directed", "grid:7x9", "grid:8:drop=0.3",
               "rgg:10", "delaunay:9", "kron:8:weights=uniform", "urand:8:weights=potential",
               "grid:6x6:weights=negcycle:cycle=5"]


# --------------------------------------------------------------------------- builder
@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("drop", [True, False])
def test_build_csr_matches_from_edges(directed, drop):
    rng = np.random.default_rng(5)
    n = 300
    src = rng.integers(0, n, 5000)
    dst = rng.integers(0, n, 5000)
    dst[:50] = src[:50]  # self-loops
    chunks = [(src[:1234], dst[:1234]), (src[1234:], dst[1234:])]
    g = build_csr(chunks, n, src.size, directed=directed, drop_self_loops=drop)
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    assert g.directed == ref.directed
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)
    assert g.indices.dtype == ref.indices.dtype == np.int32


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120))),
    st.booleans(), st.booleans())
def test_build_csr_property(n_arcs, directed, drop):
    n, arcs = n_arcs
    src = np.array([a for a, _ in arcs], dtype=np.int64)
    dst = np.array([b for _, b in arcs], dtype=np.int64)
    g = build_csr([(src, dst)], n, len(arcs), directed=directed, drop_self_loops=drop)
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)


def test_build_csr_empty():
    g = build_csr([(np.zeros(0, int), np.zeros(0, int))], 5, 0, directed=False, drop_self_loops=True)
    assert g.n == 5 and g.m == 0 and g.indptr.tolist() == [0] * 6


# ------------------------------------------------------------------- determinism
@pytest.mark.parametrize("spec", SMALL_SPECS)
def test_same_seed_same_graph(spec):
    assert same(from_spec(spec), from_spec(spec))


@pytest.mark.parametrize("spec", ["kron:10", "urand:10", "grid:8:drop=0.3", "rgg:10", "delaunay:9",
                                  "grid:6x6:weights=uniform"])
def test_different_seed_differs(spec):
    assert not same(from_spec(spec), from_spec(spec + ":seed=1"))


def test_chunks_independent_of_order():
    # scale 17, ef 16: two chunks; generating them one at a time, in reverse, gives the same arcs
    assert 16 << 17 == 2 * CHUNK_EDGES
    whole = list(kronecker_edges(17))
    rev = [next(kronecker_edges(17, chunks=[k])) for k in (1, 0)][::-1]
    for (s1, d1), (s2, d2) in zip(whole, rev):
        assert np.array_equal(s1, s2) and np.array_equal(d1, d2)
    us = [next(urand_edges(17, chunks=[k])) for k in (0, 1)]
    for (s1, d1), (s2, d2) in zip(urand_edges(17), us):
        assert np.array_equal(s1, s2) and np.array_equal(d1, d2)


# ------------------------------------------------------------------- Kronecker
def test_kron_edge_count_and_ids():
    scale = 12
    edges = list(kronecker_edges(scale, 16))
    src = np.concatenate([s for s, _ in edges])
    dst = np.concatenate([d for _, d in edges])
    assert src.size == 16 << scale and src.dtype == np.int32
    assert src.min() >= 0 and max(src.max(), dst.max()) < 1 << scale
    g = kronecker(scale)
    assert g.n == 1 << scale and not g.directed and g.num_self_loops() == 0
    ref = Graph.from_edges(src, dst, n=1 << scale, directed=False, drop_self_loops=True)
    assert same(g, ref)
    # repeats and self-loops removed: between half and all of the drawn edges remain
    assert 0.5 * (16 << scale) < g.num_edges < 16 << scale


def test_kron_quadrant_probabilities():
    # without the permutation, every bit level of an edge picks quadrant (i, j) with prob A, B, C, D
    src, dst = next(kronecker_edges(10, 64, permute=False))
    n = src.size
    for level in range(10):
        i = (src >> level) & 1
        j = (dst >> level) & 1
        freq = [np.mean((i == a) & (j == b)) for a, b in ((0, 0), (0, 1), (1, 0), (1, 1))]
        assert np.allclose(freq, [0.57, 0.19, 0.19, 0.05], atol=5 / np.sqrt(n))


def test_kron_permutation_is_a_relabelling():
    g = kronecker(10, permute=False)
    h = kronecker(10)
    assert sorted(g.out_degree().tolist()) == sorted(h.out_degree().tolist())
    assert not np.array_equal(g.out_degree(), h.out_degree())
    assert nx.is_isomorphic(g.to_networkx(), h.to_networkx()) if g.n <= 64 else True


def test_kron_degree_skew_vs_urand():
    k = kronecker(13)
    u = urand(13)
    dk, du = k.out_degree(), u.out_degree()
    assert dk.max() > 30 * dk.mean()  # hubs
    assert (dk == 0).mean() > 0.2  # many isolated vertices (as Graph500 graphs have)
    assert du.max() < 3 * du.mean() and (du == 0).mean() < 0.001


def test_kron_directed():
    g = kronecker(10, 8, directed=True)
    assert g.directed
    A = g.to_scipy()
    assert (A != A.T).nnz > 0
    assert g.num_self_loops() == 0


@pytest.mark.parametrize("kw, name", [(dict(scale=0), "scale"), (dict(scale=41), "scale"),
                                      (dict(scale=5, edge_factor=0), "edge_factor"),
                                      (dict(scale=5, seed=-1), "seed"), (dict(scale=5, a=0.7, b=0.2, c=0.2), "a + b + c"),
                                      (dict(scale=5, a=-0.1), "a")])
def test_kron_bad_arguments(kw, name):
    with pytest.raises(InvalidArgumentError, match=name.replace("+", r"\+")):
        kronecker(**kw)


# ---------------------------------------------------------------------- urand
def test_urand_degrees_near_uniform():
    scale, ef = 14, 8
    src = np.concatenate([s for s, _ in urand_edges(scale, ef)])
    n = 1 << scale
    counts = np.bincount(src, minlength=n)
    # each source uniform over [0, n): chi-square statistic near its mean n - 1
    chi2 = ((counts - ef) ** 2 / ef).sum()
    assert abs(chi2 - (n - 1)) < 6 * np.sqrt(2 * (n - 1))
    g = urand(scale, ef)
    d = g.out_degree()
    assert abs(d.mean() - 2 * ef) < 0.05 * 2 * ef  # few repeats at this density
    assert abs(d.std() - np.sqrt(2 * ef)) < 0.1 * np.sqrt(2 * ef)  # ~Poisson(2 ef)
    assert g.num_self_loops() == 0 and not g.directed


def test_urand_directed():
    g = urand(10, 4, directed=True)
    assert g.directed and g.m <= 4 << 10 and g.m > 0.99 * (4 << 10) - 16


# ----------------------------------------------------------------------- grid
@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 7), (5, 1), (4, 6), (13, 9)])
def test_grid_exact(rows, cols):
    g = grid(rows, cols)
    ref = nx.convert_node_labels_to_integers(nx.grid_2d_graph(rows, cols), ordering="sorted")
    assert g.n == rows * cols and not g.directed
    assert g.num_edges == rows * (cols - 1) + (rows - 1) * cols
    assert nx.utils.edges_equal(nx.Graph(g.to_networkx()).edges, ref.edges)
    assert edge_set(g) == edge_set(Graph.from_networkx(ref))


def test_grid_literal():
    g = grid(2, 3)  # 0-1-2 / 3-4-5 with verticals 0-3, 1-4, 2-5
    assert g.indptr.tolist() == [0, 2, 5, 7, 9, 12, 14]
    assert g.indices.tolist() == [1, 3, 0, 2, 4, 1, 5, 0, 4, 1, 3, 5, 2, 4]


def test_grid_road_like():
    full = grid(60, 80)
    g = grid(60, 80, drop=0.25, seed=3)
    assert edge_set(g) <= edge_set(full)
    assert abs(g.num_edges / full.num_edges - 0.75) < 0.03
    assert g.out_degree().max() <= 4
    ncomp, labels = csgraph.connected_components(g.to_scipy())
    assert ncomp > 1 and np.bincount(labels).max() > 0.8 * g.n  # a giant component and dead ends
    assert from_spec("grid:9").n == 512 and from_spec("grid:9").meta["params"]["rows"] == 16


# ------------------------------------------------------------------- geometric
def test_rgg_matches_brute_force():
    scale, seed = 9, 11
    n = 1 << scale
    r = rgg_radius(n)
    g = rgg(scale, seed)
    pts = random_points(n, seed, h=r)
    D = squareform(pdist(pts))
    ref = Graph.from_scipy(sp.csr_array((D < r) & ~np.eye(n, dtype=bool)), directed=False, weighted=False)
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)
    assert g.meta["params"]["radius"] == pytest.approx(0.55 * np.sqrt(np.log(n) / n))


def test_rgg_average_degree_and_locality():
    n = 1 << 13
    g = rgg(13)
    r = rgg_radius(n)
    expected = (n - 1) * (np.pi * r**2 - 8 * r**3 / 3 + r**4 / 2)  # with the square's boundary
    assert abs(g.out_degree().mean() - expected) < 0.04 * expected
    src, dst, _ = g.edges()
    assert np.abs(src.astype(np.int64) - dst).max() < 0.1 * n  # spatial order: banded matrix


def test_delaunay_planar_triangulation():
    scale = 8
    n = 1 << scale
    g = delaunay(scale, seed=4)
    pts = random_points(n, 4)
    hull = len(ConvexHull(pts).vertices)
    assert g.num_edges == 3 * n - 3 - hull  # Euler, triangulated point set
    assert nx.check_planarity(g.to_networkx())[0]
    assert csgraph.connected_components(g.to_scipy())[0] == 1
    big = delaunay(12)
    assert 5.8 < big.out_degree().mean() < 6.0


# -------------------------------------------------------------------- weights
@pytest.mark.parametrize("spec", ["kron:10", "urand:9:directed", "grid:30x40", "delaunay:9"])
def test_uniform_weights(spec):
    g = uniform_weights(from_spec(spec), seed=7)
    w = g.weights
    assert w.dtype == np.int32 and w.min() >= 1 and w.max() <= 255
    sigma = np.sqrt((255**2 - 1) / 12 / g.num_edges)  # of the mean of num_edges uniform draws
    assert abs(w.mean() - 128) < 5 * sigma and len(np.unique(w)) >= 245
    if not g.directed:
        A = g.to_scipy()
        assert (A != A.T).nnz == 0  # both arcs of an edge weigh the same
    assert not np.array_equal(w, uniform_weights(g, seed=8).weights)
    h = uniform_weights(g, 3, 3)
    assert (h.weights == 3).all()


def _johnson_check(g):
    """Shift g; assert negative arcs, no negative cycle, and d' = d + p(s) - p(t)."""
    h, p = potential_shift(g, seed=5, return_potential=True)
    assert h.directed and h.m == g.m
    assert (h.weights < 0).mean() > 0.1
    A = g.to_scipy(dtype=np.float64)
    B = h.to_scipy(dtype=np.float64)
    src = np.random.default_rng(0).choice(g.n, 4, replace=False)
    d = csgraph.dijkstra(A, directed=True, indices=src)
    d2 = csgraph.bellman_ford(B, directed=True, indices=src)  # raises on a negative cycle
    fin = np.isfinite(d)
    assert np.array_equal(fin, np.isfinite(d2))
    expect = d + p[src][:, None] - p[None, :]
    assert np.allclose(d2[fin], expect[fin])
    csgraph.johnson(B, directed=True, indices=src[:1])
    return h


@pytest.mark.parametrize("spec", ["urand:8:directed:weights=uniform", "kron:8:weights=uniform",
                                  "grid:9x11:weights=uniform", "delaunay:8:weights=uniform"])
def test_potential_shift_generated(spec):
    g = from_spec(spec)
    h = _johnson_check(g)
    if not g.directed:
        # both arcs of an undirected edge, shifted independently, sum to 2w
        hs, hd, hw = h.edges()
        B = h.to_scipy(dtype=np.int64)
        assert np.array_equal(np.asarray(B[hd, hs]).ravel() + hw, 2 * g.weights)


def test_potential_shift_real_graph(data_dir):
    with gzip.open(data_dir / "minnesota.mtx.gz") as f:
        import scipy.io

        A = sp.csr_array(scipy.io.mmread(f))
    g = uniform_weights(Graph.from_scipy(A, weighted=False), seed=2)
    assert not g.directed and g.n == 2642
    _johnson_check(g)


def test_potential_shift_literal():
    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 0, 2], [4, 4, 4, 10])
    h, p = potential_shift(g, seed=1, return_potential=True, spread=100)
    s, d, w = h.edges()
    assert np.array_equal(w, g.weights + p[s] - p[d])
    # arcs in CSR order: 0->1, 0->2, 1->2, 2->0; the cycle 0->1->2->0 keeps its weight 12
    assert (s.tolist(), d.tolist()) == ([0, 0, 1, 2], [1, 2, 2, 0])
    assert int(w[[0, 2, 3]].sum()) == 12
    with pytest.raises(InvalidArgumentError, match="weights must be >= 0"):
        potential_shift(Graph.from_edges([0], [1], [-1]))
    f = potential_shift(Graph.from_edges([0, 1], [1, 0], [0.5, 1.5]), seed=2)
    assert f.weights.dtype == np.float64 and f.weights.sum() == pytest.approx(2.0)


@pytest.mark.parametrize("spec, length", [("urand:8:directed:weights=uniform", 4),
                                          ("grid:8x8:weights=potential", 2),
                                          ("kron:8:weights=uniform", 7), ("rgg:8", 3)])
def test_plant_negative_cycle(spec, length):
    g = from_spec(spec)
    h, cyc = plant_negative_cycle(g, length=length, seed=9)
    assert h.directed and len(set(cyc.tolist())) == length
    B = h.to_scipy(dtype=np.float64)
    total = sum(B[int(u), int(v)] for u, v in zip(cyc, np.roll(cyc, -1)))
    assert total < 0 and total == h.meta["negative_cycle_weight"]
    assert h.meta["negative_cycle"] == cyc.tolist()
    with pytest.raises(csgraph.NegativeCycleError):
        csgraph.bellman_ford(B, directed=True, indices=[int(cyc[0])])
    # every other arc is kept (with weight unchanged or lowered)
    assert edge_set(g) <= edge_set(h) and h.m - g.m <= length
    # the CSR is valid: rows sorted, no repeats
    ref = Graph.from_edges(*h.edges()[:2], n=h.n, directed=True)
    assert np.array_equal(ref.indptr, h.indptr) and np.array_equal(ref.indices, h.indices)


def test_negcycle_spec():
    g = from_spec("urand:9:weights=negcycle:cycle=6")
    assert g.directed and len(g.meta["negative_cycle"]) == 6 and g.meta["negative_cycle_weight"] < 0
    assert (g.weights < 0).mean() > 0.1
    with pytest.raises(csgraph.NegativeCycleError):
        csgraph.bellman_ford(g.to_scipy(dtype=np.float64), indices=[g.meta["negative_cycle"][0]])


def test_plant_bad_length():
    with pytest.raises(InvalidArgumentError, match="length"):
        plant_negative_cycle(grid(2, 2), length=5)


# ---------------------------------------------------------------------- specs
def test_is_spec(tmp_path, monkeypatch):
    for s in ("kron:20", "urand:18:seed=3", "grid:4x4", "rgg:10", "delaunay:8", "KRON:4", "kron:x"):
        assert is_spec(s)
    for s in ("graph.mtx", "kron", "foo:3", "", "/tmp/a:b", None, 3):
        assert not is_spec(s)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kron:3").write_text("0 1\n")
    assert not is_spec("kron:3")  # an existing file wins


def test_spec_meta_and_options():
    g = from_spec("kron:8:ef=4:seed=3:directed:weights=uniform")
    assert g.meta["spec"] == "kron:8:ef=4:seed=3:directed:weights=uniform"
    assert g.meta["generator"] == "kron"
    assert g.meta["params"] == dict(scale=8, edge_factor=4, seed=3, a=0.57, b=0.19, c=0.19, directed=True,
                                    permute=True)
    assert g.meta["weights"]["kind"] == "uniform"
    assert same(g, uniform_weights(kronecker(8, 4, 3, directed=True), seed=3))
    assert same(from_spec("urand:7"), urand(7, 16, DEFAULT_SEED))
    assert same(from_spec("kron:7:noperm"), kronecker(7, permute=False))
    assert same(from_spec("rgg:8:radius=0.1"), rgg(8, radius=0.1))
    assert from_spec("urand:7:directed=false").directed is False
    json.dumps(g.meta)  # writable by any format that stores meta as JSON
    fam, arg, opts = parse_spec("grid:3x4:drop=0.5")
    assert (fam, arg, opts["drop"], opts["seed"]) == ("grid", "3x4", 0.5, DEFAULT_SEED)


@pytest.mark.parametrize("spec, words", [
    ("foo:3", ["family", "kron, urand, grid, rgg, delaunay", "'foo'"]),
    ("kron:", ["SCALE"]),
    ("kron:abc", ["SCALE", "'abc'"]),
    ("kron:10:bogus=1", ["option", "ef", "'bogus'"]),
    ("kron:10:ef=x", ["ef", "integer >= 1", "'x'"]),
    ("kron:10:ef=0", ["ef", "integer >= 1", "'0'"]),
    ("kron:10:ef", ["ef=VALUE"]),
    ("kron:10:seed=-2", ["seed", "'-2'"]),
    ("urand:10:weights=heavy", ["weights", "uniform, potential, negcycle", "'heavy'"]),
    ("urand:10:directed=maybe", ["directed", "'maybe'"]),
    ("grid:3y4", ["ROWSxCOLS", "'3y4'"]),
    ("grid:3x4:drop=1.5", ["drop", "[0, 1)", "1.5"]),
    ("kron:99", ["scale", "[1, 40]", "99"]),
    ("rgg:0", ["scale", "0"]),
    ("delaunay:1", ["scale", "[2, 26]"]),
    ("rgg:5:radius=0", ["radius"]),
    ("grid:2x2:weights=negcycle:cycle=9", ["length", "[2, 4]", "9"]),
    ("urand:4:seed=1:seed=2", ["seed", "once"]),
    ("grid:2x2:ef=3", ["option", "'ef'"]),
])
def test_bad_specs(spec, words):
    with pytest.raises(InvalidArgumentError) as e:
        from_spec(spec)
    msg = str(e.value)
    for w in words:
        assert w in msg, (w, msg)
    assert repr(spec) in msg  # the message quotes the whole spec


# ------------------------------------------------------------------------ CLI
# In-process calls of the CLI: on more than one rank an error path would end the whole job
# by design (MPI_Abort, or every rank returning from an error raised on all ranks), so these
# run on one rank only.
one_rank = pytest.mark.skipif(__import__("mpi4py.MPI").MPI.COMM_WORLD.Get_size() > 1,
                              reason="in-process CLI test: one rank only")


@one_rank
def test_cli_list_and_json(capsys):
    from distgraph.cli import main

    assert main(["generate", "--list"]) == 0
    out = capsys.readouterr().out
    for fam in ("kron:SCALE", "urand:SCALE", "grid:ROWSxCOLS", "rgg:SCALE", "delaunay:SCALE", "weights"):
        assert fam in out
    assert main(["generate", "grid:3x4:weights=uniform", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["vertices"], s["edges"], s["arcs"], s["directed"], s["weighted"]) == (12, 17, 34, False, True)
    assert s["meta"]["params"]["rows"] == 3
    assert main(["generate", "kron:5:ef=q"]) == 2
    assert "ef must be an integer >= 1; got 'q'" in capsys.readouterr().err
    assert main(["generate"]) == 2


@one_rank
@pytest.mark.parametrize("ext", [".mtx", ".dgraph"])
@pytest.mark.parametrize("spec", ["urand:6:ef=4:weights=uniform", "kron:6:weights=negcycle"])
def test_cli_writes_file(tmp_path, capsys, ext, spec):
    pytest.importorskip("distgraph.graph.writers")
    from distgraph.cli import main
    from distgraph.graph import read_graph

    out = tmp_path / ("g" + ext)
    assert main(["generate", spec, "--output", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["output"] == str(out) and out.exists()
    g = read_graph(str(out))
    ref = from_spec(spec)
    assert (g.n, g.directed) == (ref.n, ref.directed)
    assert np.array_equal(g.indptr, ref.indptr) and np.array_equal(g.indices, ref.indices)
    assert np.array_equal(g.weights, ref.weights)


# ------------------------------------------------------------------------ MPI
@pytest.mark.mpi
def test_identical_on_every_rank(comm):
    specs = ["kron:11", "urand:10:directed:weights=potential", "grid:5:drop=0.2:weights=negcycle", "rgg:9",
             "delaunay:8:weights=uniform"]
    mine = [digest(from_spec(s)) for s in specs]
    everyone = comm.allgather(mine)
    assert all(d == everyone[0] for d in everyone)
    # a chunk generated by one rank alone equals the same chunk of the whole list
    k = comm.Get_rank() % 2
    s, d = next(kronecker_edges(17, chunks=[k]))
    ok = comm.allgather(hashlib.sha256(s.tobytes() + d.tobytes()).hexdigest())
    ref = [hashlib.sha256(a.tobytes() + b.tobytes()).hexdigest() for a, b in kronecker_edges(17)]
    assert all(h == ref[r % 2] for r, h in enumerate(ok))


# ------------------------------------------------ chunks computed by threads (_parallel.py)
def test_ordered_map_keeps_order_whatever_finishes_first():
    import time

    from distgraph.generators._parallel import ordered_map

    delays = np.random.default_rng(0).random(23) * 0.01

    def slow(i):
        time.sleep(delays[i])
        return i * i

    assert list(ordered_map(slow, range(23), threads=4)) == [i * i for i in range(23)]
    assert list(ordered_map(slow, range(3), threads=1)) == [0, 1, 4]
    assert list(ordered_map(slow, [], threads=4)) == []


@pytest.mark.parametrize("family", ["kron", "urand"])
def test_threaded_chunks_equal_chunks_made_one_by_one(family, monkeypatch):
    from distgraph.generators import _parallel
    from distgraph.generators.kron import kronecker_edges
    from distgraph.generators.urand import urand_edges

    edges = kronecker_edges if family == "kron" else urand_edges
    scale = 17  # 2**21 edges: two chunks of CHUNK_EDGES
    alone = [edges(scale, chunks=[k]).__next__() for k in (0, 1)]
    import importlib

    calls = []

    def three_threads(fn, items, threads=None):
        calls.append(len(items))
        return _parallel.ordered_map(fn, items, threads=3)

    monkeypatch.setattr(importlib.import_module(f"distgraph.generators.{family}"), "ordered_map", three_threads)
    together = list(edges(scale))
    assert len(together) == 2 and calls == [2]
    for (s1, d1), (s2, d2) in zip(alone, together):
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(d1, d2)
