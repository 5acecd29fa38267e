"""BFS from one source: levels against scipy.sparse.csgraph, parents by the verifier,
the distributed driver against the serial kernel, identical on 1, 2 and 4 ranks."""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from distgraph import Graph
from distgraph.algorithms.bfs import bfs, verify_bfs
from distgraph.errors import InvalidArgumentError, VerificationError


def ref_levels(g, sources):
    import scipy.sparse as sp

    A = sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    D = shortest_path(A, unweighted=True, directed=g.directed, indices=sources)
    return np.where(np.isfinite(D), D, -1).astype(np.int32)


@pytest.fixture(params=["redundant", "split"])
def split_levels(request, monkeypatch):
    """Run the distributed driver with its default (small levels redundant on every rank)
    and with every level split by owner (``REDUNDANT_ARCS = -1``)."""
    import distgraph.algorithms.bfs as mod

    if request.param == "split":
        monkeypatch.setattr(mod, "REDUNDANT_ARCS", -1)
    return request.param


def gnp(n, p, seed, directed):
    import networkx as nx

    G = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    return Graph.from_networkx(G)


# ------------------------------------------------------------------ literal graphs
def test_path_by_hand():
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    r = bfs(g, 1, parents=True, verify=True)
    assert r.levels.tolist() == [1, 0, 1, 2]
    assert r.parents.tolist() == [1, 1, 1, 2]
    assert r.levels.dtype == np.int32 and r.parents.dtype == np.int64
    assert r.reached == 4 and r.depth == 2


def test_directed_cycle_and_isolated_by_hand():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], n=4)
    r = bfs(g, 1, parents=True)
    assert r.levels.tolist() == [2, 0, 1, -1]
    assert r.parents.tolist() == [2, 1, 1, -1]
    assert bfs(g, 3).levels.tolist() == [-1, -1, -1, 0]


def test_smallest_parent_on_diamond(split_levels):
    # 0 -> {1, 2} -> 3: both 1 and 2 can be the parent of 3; the smaller id is taken
    g = Graph.from_edges([0, 0, 2, 1], [2, 1, 3, 3])
    for dist in (False, True):
        r = bfs(g, 0, parents=True, _distributed=dist)
        assert r.parents.tolist() == [0, 0, 0, 1]


def test_self_loops_and_duplicates():
    g = Graph.from_edges([0, 0, 0, 1, 1, 2], [0, 1, 1, 1, 2, 2], dedup=False)
    r = bfs(g, 0, parents=True, verify=True)
    assert r.levels.tolist() == [0, 1, 2]


def test_single_vertex_and_star():
    g = Graph.from_edges([], [], n=1)
    assert bfs(g, 0, parents=True, verify=True).levels.tolist() == [0]
    star = Graph.from_edges([0] * 99, list(range(1, 100)), directed=False)
    r = bfs(star, 5, parents=True, verify=True)  # bottom-up kicks in at the hub
    assert r.levels[0] == 1 and (np.delete(r.levels, [0, 5]) == 2).all()


# ------------------------------------------------------------- generated graphs
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("p", [0.002, 0.01, 0.05])
def test_random_graphs_vs_scipy(directed, p, split_levels):
    g = gnp(400, p, seed=7, directed=directed)
    srcs = [0, 13, 399]
    ref = ref_levels(g, srcs)
    for i, s in enumerate(srcs):
        a = bfs(g, s, parents=True, verify=True)
        b = bfs(g, s, parents=True, verify=True, _distributed=True)
        assert np.array_equal(a.levels, ref[i])
        assert np.array_equal(b.levels, ref[i])
        assert np.array_equal(a.parents, b.parents)


@pytest.mark.parametrize("spec", ["kron:10", "kron:9:directed", "urand:10", "grid:20x30:drop=0.3", "rgg:10",
                                  "delaunay:9"])
def test_generators_vs_scipy(spec):
    from distgraph.generators import from_spec

    g = from_spec(spec)
    deg = np.diff(g.indptr)
    srcs = [int(np.argmax(deg)), int(np.flatnonzero(deg > 0)[-1]), 0]
    ref = ref_levels(g, srcs)
    for i, s in enumerate(srcs):
        r = bfs(g, s, parents=True, verify=True)
        assert np.array_equal(r.levels, ref[i])


@pytest.mark.parametrize("name,directed", [("power.mtx.gz", False), ("wiki-Vote.txt.gz", True),
                                           ("road-NY.gr.xz", False), ("email-Enron.mtx.gz", False)])
def test_real_graphs_vs_scipy(data_dir, name, directed, split_levels):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    assert g.directed == directed
    deg = np.diff(g.indptr)
    srcs = [int(np.argmax(deg)), int(np.flatnonzero(deg > 0)[0])]
    ref = ref_levels(g, srcs)
    for i, s in enumerate(srcs):
        r = bfs(g, s, parents=True, verify=True)
        assert np.array_equal(r.levels, ref[i])
        if name != "road-NY.gr.xz" or split_levels == "redundant":  # road-NY split: 1000s of exchanges
            d = bfs(g, s, parents=True, _distributed=True)
            assert np.array_equal(d.parents, r.parents)


def test_hypothesis_random_edges(split_levels):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None, derandomize=True, database=None)
    @given(st.integers(1, 30).flatmap(lambda n: st.tuples(
        st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80),
        st.booleans(), st.integers(0, n - 1))))
    def check(args):
        n, edges, directed, s = args
        src = [e[0] for e in edges]
        dst = [e[1] for e in edges]
        g = Graph.from_edges(src, dst, n=n, directed=directed)
        ref = ref_levels(g, [s])[0]
        a = bfs(g, s, parents=True, verify=True)
        b = bfs(g, s, parents=True, _distributed=True)
        assert np.array_equal(a.levels, ref) and np.array_equal(b.levels, ref)
        assert np.array_equal(a.parents, b.parents)

    check()


# --------------------------------------------------------------------- verifier
def test_verifier_catches_errors():
    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], directed=False)
    r = bfs(g, 0, parents=True)
    verify_bfs(g, 0, r.levels, r.parents)
    bad = r.levels.copy()
    bad[2] = 3
    with pytest.raises(VerificationError):
        verify_bfs(g, 0, bad)
    bad = r.levels.copy()
    bad[3] = -1
    with pytest.raises(VerificationError):
        verify_bfs(g, 0, bad)
    bp = r.parents.copy()
    bp[2] = 0  # 0 -> 2 is no arc
    with pytest.raises(VerificationError, match="parent"):
        verify_bfs(g, 0, r.levels, bp)
    bp = r.parents.copy()
    bp[1] = -1
    with pytest.raises(VerificationError):
        verify_bfs(g, 0, r.levels, bp)
    # a parent one level up but with no arc to the vertex (the row search of the verifier)
    h = Graph.from_edges([0, 0, 1], [1, 3, 2], directed=False)
    r = bfs(h, 0, parents=True)
    assert r.parents[2] == 1
    bp = r.parents.copy()
    bp[2] = 3
    with pytest.raises(VerificationError, match="has no arc to it"):
        verify_bfs(h, 0, r.levels, bp)


def test_errors():
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidArgumentError, match=r"source must be in \[0, 2\); got 2"):
        bfs(g, 2)
    with pytest.raises(InvalidArgumentError, match="source must be an integer"):
        bfs(g, 0.5)
    with pytest.raises(TypeError, match="graph must be a distgraph.Graph"):
        bfs(g.to_scipy(), 0)


def test_cli_bfs(tmp_path, data_dir):
    from distgraph.cli import main

    out = tmp_path / "lv.npy"
    par = tmp_path / "par.csv"
    assert main(["bfs", str(data_dir / "wiki-Vote.txt.gz"), "--source", "30", "--output", str(out),
                 "--parents", str(par), "--verify", "--json"]) == 0
    lv = np.load(out)
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / "wiki-Vote.txt.gz"))
    s = int(np.searchsorted(g.labels, 30))
    assert np.array_equal(lv, ref_levels(g, [s])[0])
    rows = np.loadtxt(par, delimiter=",", skiprows=1, dtype=np.int64)
    assert np.array_equal(rows[:, 0], g.labels) and rows[s, 1] == 30


def _graphs_for_mixed_levels():
    from distgraph.generators import from_spec

    gs = [from_spec("kron:10:directed"), from_spec("grid:20x30:drop=0.4"),
          gnp(300, 0.006, seed=2, directed=True), gnp(300, 0.012, seed=3, directed=False)]
    # the same graphs with int64 vertex ids (graphs past 2**31 vertices)
    return gs + [Graph(g.indptr, g.indices.astype(np.int64), directed=g.directed) for g in gs]


@pytest.mark.parametrize("limit", [0, 3, 40, 300])
def test_distributed_mixed_redundant_and_split_levels(monkeypatch, limit):
    """Thresholds between the fixture's two extremes: one search switches between levels
    run redundantly and levels split by owner (both directions), on directed,
    disconnected and int64-id graphs; levels and parents equal the serial kernel's."""
    import distgraph.algorithms.bfs as mod

    monkeypatch.setattr(mod, "REDUNDANT_ARCS", limit)
    for g in _graphs_for_mixed_levels():
        assert g.indices.dtype in (np.int32, np.int64)
        for s in (0, 7, g.n - 1, int(np.argmax(np.diff(g.indptr)))):
            ref = bfs(g, s, parents=True)
            d = bfs(g, s, parents=True, _distributed=True)
            assert np.array_equal(d.levels, ref.levels) and np.array_equal(d.parents, ref.parents), (g, s)


def test_prefetch_intrinsic():
    """bits.prefetch compiles for the array and index types the kernels use, never reads
    the element (an index far past the end is harmless), and is a prefetch instruction
    on x86-64 (LLVM renames ``llvm.prefetch.p0i8`` to ``.p0`` where pointers are opaque)."""
    import platform

    from numba import njit

    from distgraph.backends.cpu.bits import prefetch

    @njit
    def f(a, i):
        prefetch(a, i)
        return a[0]

    for a in (np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int64), np.arange(3, dtype=np.uint64)):
        for i in (np.int32(1), np.int64(1 << 40), 2):
            assert f(a, i) == 0
    if platform.machine() in ("x86_64", "AMD64"):
        asm = f.inspect_asm(f.signatures[0])
        assert "prefetch" in asm


# -------------------------------------------------------------------------- MPI
@pytest.mark.mpi
@pytest.mark.parametrize("spec", ["kron:11", "kron:10:directed", "grid:30x40:drop=0.4", "kron:14"])
def test_mpi_identical_to_one_rank(comm, spec, split_levels):
    from mpi4py import MPI

    from distgraph.generators import from_spec

    g = from_spec(spec)
    deg = np.diff(g.indptr)
    ok = []
    for s in (int(np.argmax(deg)), int(np.flatnonzero(deg > 0)[-1]), 3):
        r = bfs(g, s, parents=True, comm=comm)
        one = bfs(g, s, parents=True, comm=MPI.COMM_SELF)
        ok.append(np.array_equal(r.levels, one.levels) and np.array_equal(r.parents, one.parents))
    ok = comm.allgather(all(ok))
    assert all(ok)


def test_td_step_prefetch_edges():
    """The branch-free top-down step on a path (one vertex a level, prefetch indices past
    the frontier), a graph reaching every vertex (the queue's spare slot is written)
    and duplicate arcs (a vertex seen twice in one row is claimed once)."""
    n = 200
    path = Graph.from_edges(np.arange(n - 1), np.arange(1, n), directed=False)
    r = bfs(path, 0, parents=True, verify=True)
    assert r.levels.tolist() == list(range(n)) and r.parents.tolist() == [0] + list(range(n - 1))
    r = bfs(path, n // 2, parents=True, verify=True)
    assert r.levels.tolist() == [abs(i - n // 2) for i in range(n)]
    g = Graph.from_edges([0, 0, 0, 1, 2, 2], [1, 1, 2, 3, 3, 3], n=4, dedup=False)
    r = bfs(g, 0, parents=True, verify=True)
    assert r.levels.tolist() == [0, 1, 1, 2] and r.parents.tolist() == [0, 0, 0, 1]


@pytest.mark.parametrize("directed", [False, True])
def test_kernel_int64_row_pointers(directed):
    """bfs() passes int32 row pointers and uint32 parents when they fit; the kernel on
    the graph's own int64 row pointers and uint64 parents (graphs past 2**31 arcs or
    vertices) gives the same levels and parents."""
    from distgraph.backends.cpu.bfs import bfs_serial

    g = gnp(300, 0.02, seed=3, directed=directed)
    tptr, tidx, _ = g.csc()
    maxdeg = int(np.diff(g.indptr).max())
    for s in (0, 17, 299):
        ref = bfs(g, s, parents=True, verify=True)
        lv = np.empty(g.n, np.int32)
        par = np.empty(g.n, np.uint64)  # the kernel's parents are unsigned (unreached = all ones)
        bfs_serial(g.indptr, g.indices, tptr, tidx, s, 15.0, 18.0, lv, par, True, np.empty(g.n + 1, g.indices.dtype),
                   maxdeg)
        assert np.array_equal(lv, ref.levels) and np.array_equal(par.view(np.int64), ref.parents)


@pytest.mark.mpi
@pytest.mark.parametrize("limit", [3, 300])
def test_mpi_mixed_levels_int64_ids(comm, monkeypatch, limit):
    """p ranks with levels switching between redundant and split, int32 and int64 ids,
    directed and disconnected graphs: identical to one rank."""
    from mpi4py import MPI

    import distgraph.algorithms.bfs as mod

    monkeypatch.setattr(mod, "REDUNDANT_ARCS", limit)
    ok = []
    for g in _graphs_for_mixed_levels():
        for s in (0, g.n - 1, int(np.argmax(np.diff(g.indptr)))):
            r = bfs(g, s, parents=True, comm=comm)
            one = bfs(g, s, parents=True, comm=MPI.COMM_SELF)
            ok.append(np.array_equal(r.levels, one.levels) and np.array_equal(r.parents, one.parents))
    assert all(comm.allgather(all(ok)))
