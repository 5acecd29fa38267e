"""The Graph type, partitioning and conversions, against scipy.sparse and networkx."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from distgraph import Graph, GraphValueError, InvalidArgumentError
from distgraph.graph import partition_by_edges, partition_even, local_graph


def test_literal_directed():
    g = Graph.from_edges([0, 0, 2, 3], [1, 2, 0, 3], n=5)
    assert (g.n, g.m, g.num_edges) == (5, 4, 4)
    assert g.indptr.tolist() == [0, 2, 2, 3, 4, 4]
    assert g.indices.tolist() == [1, 2, 0, 3]
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int64
    assert g.num_self_loops() == 1
    ip, ix, _ = g.csc()
    assert ip.tolist() == [0, 1, 2, 3, 4, 4] and ix.tolist() == [2, 0, 0, 3]
    assert g.in_degree().tolist() == [1, 1, 1, 1, 0]


def test_literal_undirected_counts_loops_once():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 2, 1], directed=False)
    assert not g.directed
    assert (g.n, g.m, g.num_edges) == (3, 5, 3)  # 0-1, 1-2 (given twice), loop 2-2
    assert g.indices.tolist() == [1, 0, 2, 1, 2]


def test_dedup_keeps_minimum_weight_and_can_be_disabled():
    g = Graph.from_edges([0, 0, 0, 1], [1, 1, 1, 0], [5.0, -2.0, 3.0, 1.0])
    assert g.indices.tolist() == [1, 0] and g.weights.tolist() == [-2.0, 1.0]
    h = Graph.from_edges([0, 0, 0, 1], [1, 1, 1, 0], [5.0, -2.0, 3.0, 1.0], dedup=False)
    assert h.m == 4 and sorted(h.weights[:3].tolist()) == [-2.0, 3.0, 5.0]


def test_undirected_weights_are_mirrored():
    g = Graph.from_edges([0, 1], [1, 2], [7, -3], directed=False)
    A = g.to_scipy().toarray()
    assert np.array_equal(A, A.T) and A[0, 1] == 7 and A[2, 1] == -3


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_weight_dtypes_kept(dtype):
    g = Graph.from_edges([0, 1], [1, 0], np.array([1, -2], dtype=dtype))
    assert g.weights.dtype == dtype


def test_drop_self_loops():
    g = Graph.from_edges([0, 1, 1], [0, 1, 2], drop_self_loops=True)
    assert g.m == 1 and g.num_self_loops() == 0


@pytest.mark.parametrize("src,dst,w,kw,match", [
    ([0, -1], [1, 0], None, {}, "must be >= 0"),
    ([0, 5], [1, 0], None, {"n": 3}, r"vertex id 5 is out of range for n=3"),
    ([0, 1], [1], None, {}, "equal length"),
    ([0, 1], [1, 0], [1.0, np.nan], {}, "NaN"),
    ([0, 1], [1, 0], [1.0], {}, "one entry per arc"),
    ([0.5], [1], None, {}, "integer vertex ids"),
])
def test_bad_edges_raise_named_errors(src, dst, w, kw, match):
    with pytest.raises(GraphValueError, match=match):
        Graph.from_edges(src, dst, w, **kw)


def test_empty_graph():
    g = Graph.from_edges([], [], n=0)
    assert (g.n, g.m) == (0, 0)
    g = Graph.from_edges([], [], n=4)
    assert g.indptr.tolist() == [0] * 5


def test_inf_weights_allowed():
    g = Graph.from_edges([0], [1], [np.inf])
    assert np.isinf(g.weights[0])


def test_int64_ids_when_needed():
    from distgraph.graph import index_dtype

    assert index_dtype(2**31 - 1) == np.int32 and index_dtype(2**31) == np.int64


def test_from_scipy_and_back():
    A = sp.random(50, 50, density=0.1, format="csr", random_state=1)
    g = Graph.from_scipy(A)
    assert g.directed
    B = g.to_scipy()
    assert abs(A - B).max() == 0
    S = A + A.T
    assert not Graph.from_scipy(S).directed
    with pytest.raises(GraphValueError, match="square"):
        Graph.from_scipy(sp.random(3, 4, density=0.5, format="csr"))
    with pytest.raises(TypeError):
        Graph.from_scipy(np.eye(3))


def test_from_networkx_roundtrip():
    G = nx.gnp_random_graph(40, 0.1, seed=3, directed=True)
    g = Graph.from_networkx(G)
    H = g.to_networkx()
    assert set(H.edges) == set(G.edges)
    Gu = nx.relabel_nodes(nx.path_graph(4), {0: "a", 1: "b", 2: "c", 3: "d"})
    gu = Graph.from_networkx(Gu)
    assert gu.meta["nodes"] == ["a", "b", "c", "d"] and gu.num_edges == 3


def test_transpose_is_reverse():
    G = nx.gnp_random_graph(30, 0.2, seed=5, directed=True)
    g = Graph.from_networkx(G)
    t = g.transpose()
    assert set(t.to_networkx().edges) == {(v, u) for u, v in G.edges}
    assert t.transpose().indices.tolist() == g.indices.tolist()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19), st.integers(-5, 5)), max_size=80),
       st.booleans())
def test_matches_scipy_min_duplicates(edges, directed):
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.int64)
    g = Graph.from_edges(src, dst, w, n=20, directed=directed)
    best = {}
    pairs = list(zip(src.tolist(), dst.tolist(), w.tolist()))
    if not directed:
        pairs += [(v, u, x) for u, v, x in pairs if u != v]
    for u, v, x in pairs:
        best[(u, v)] = min(best.get((u, v), x), x)
    s, d, ww = g.edges()
    got = dict(zip(zip(s.tolist(), d.tolist()), ww.tolist()))
    assert got == best
    assert all(np.all(np.diff(g.indices[g.indptr[v]:g.indptr[v + 1]]) > 0) for v in range(20))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=60), st.integers(1, 7))
def test_partition_by_edges_covers_and_balances(degs, p):
    indptr = np.concatenate([[0], np.cumsum(degs)])
    part = partition_by_edges(indptr, p)
    assert part.nparts == p and part.offsets[0] == 0 and part.offsets[-1] == len(degs)
    assert np.all(np.diff(part.offsets) >= 0)
    work = np.array(degs) + 1
    per = [work[a:b].sum() for a, b in zip(part.offsets[:-1], part.offsets[1:])]
    assert max(per) <= work.sum() / p + work.max()  # off by at most one vertex's work
    v = np.arange(len(degs))
    own = part.owner(v)
    assert np.all((part.offsets[own] <= v) & (v < part.offsets[own + 1]))


def test_partition_even_and_errors():
    assert partition_even(10, 3).sizes().tolist() == [4, 3, 3]
    with pytest.raises(InvalidArgumentError, match="nparts must be >= 1"):
        partition_by_edges(np.array([0, 1]), 0)


def test_local_graph_slices_rows_and_transpose():
    G = nx.gnp_random_graph(25, 0.2, seed=9, directed=True)
    g = Graph.from_networkx(G)
    part = partition_by_edges(g.indptr, 3)
    rows, cols = [], []
    for r in range(3):
        lg = local_graph(g, part, r)
        for i in range(lg.nlocal):
            for v in lg.indices[lg.indptr[i]:lg.indptr[i + 1]]:
                rows.append(lg.lo + i)
                cols.append(int(v))
    assert set(zip(rows, cols)) == set(G.edges)
    lt = local_graph(g, part, 0, transpose=True)
    preds0 = set(lt.indices[lt.indptr[0]:lt.indptr[1]].tolist())
    assert preds0 == set(G.predecessors(0))


@pytest.mark.mpi
def test_partition_agrees_across_ranks(comm):
    g = Graph.from_networkx(nx.gnp_random_graph(100, 0.05, seed=1, directed=True))
    part = partition_by_edges(g.indptr, comm.Get_size())
    allp = comm.allgather(part.offsets.tolist())
    assert all(p == allp[0] for p in allp)
    lo, hi = part.range(comm.Get_rank())
    total = comm.allreduce(int(g.indptr[hi] - g.indptr[lo]))
    assert total == g.m


# ------------------------------------------------ counting-sort CSR build (graph/_build.py)
@pytest.mark.parametrize("wdtype", [None, np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("dedup", [True, False])
@pytest.mark.parametrize("drop", [False, True])
def test_counting_build_equals_numpy_sort(wdtype, undirected, dedup, drop):
    from distgraph.graph._build import build_csr_counting, build_csr_numpy

    rng = np.random.default_rng(7)
    n = 300
    # a few hub rows longer than the insertion-sort cut, many duplicates and self-loops
    src = np.concatenate([rng.integers(0, n, 3000), np.full(400, 5), rng.integers(0, 8, 500)])
    dst = np.concatenate([rng.integers(0, n, 3000), rng.integers(0, 40, 400), rng.integers(0, 8, 500)])
    w = None if wdtype is None else rng.integers(-5, 5, src.size).astype(wdtype)
    kw = dict(undirected=undirected, drop_self_loops=drop, dedup=dedup or undirected,
              index_dtype=np.int32)
    a = build_csr_numpy(src, dst, w, n + 3, **kw)
    b = build_csr_counting(src, dst, w, n + 3, **kw)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[1].dtype == b[1].dtype == np.int32
    if w is None:
        assert a[2] is None and b[2] is None
    else:
        np.testing.assert_array_equal(a[2], b[2])
        assert a[2].dtype == b[2].dtype == w.dtype
    # the sort really was needed: duplicates and loops were present
    assert (np.diff(b[0]) > 32).any()


def test_counting_build_is_used_for_large_inputs_and_keeps_lightest_arc(monkeypatch):
    from distgraph.graph import _build, core

    def no_numpy_sort(*a, **k):
        raise AssertionError("the numpy builder ran on a large input")

    monkeypatch.setattr(_build, "build_csr_numpy", no_numpy_sort)
    rng = np.random.default_rng(3)
    m = core._COUNTING_MIN_ARCS + 10
    src = rng.integers(0, 1000, m)
    dst = rng.integers(0, 1000, m)
    w = rng.random(m)
    g = Graph.from_edges(src, dst, w, n=1000)
    with pytest.raises(AssertionError, match="numpy builder"):  # and small inputs do use it
        Graph.from_edges(src[:100], dst[:100], w[:100], n=1000)
    A = sp.coo_matrix((w, (src, dst)), shape=(1000, 1000))
    # reference: the minimum weight of every pair, independently of either builder
    order = np.lexsort((w, dst, src))
    s, d, ww = src[order], dst[order], w[order]
    first = np.r_[True, (s[1:] != s[:-1]) | (d[1:] != d[:-1])]
    ref = sp.csr_matrix((ww[first], (s[first], d[first])), shape=(1000, 1000))
    ref.sort_indices()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.weights, ref.data)
    assert A.nnz == m and g.m < m  # duplicates were present and dropped


def test_counting_build_empty_and_isolated():
    from distgraph.graph._build import build_csr_counting

    ip, ix, w = build_csr_counting(np.zeros(0, np.int64), np.zeros(0, np.int64), None, 4,
                                   undirected=True, drop_self_loops=False, dedup=True,
                                   index_dtype=np.int32)
    assert ip.tolist() == [0, 0, 0, 0, 0] and ix.size == 0 and w is None


def test_builders_agree_bit_for_bit_on_signed_zero_weights():
    """+0.0 and -0.0 compare equal, so which duplicate survives is decided by input
    order; both builders must keep the same one (the numpy path used to put all
    reverses after all forward arcs, keeping -0.0 one way and +0.0 the other)."""
    from distgraph.graph._build import build_csr_counting, build_csr_numpy

    src, dst = np.array([0, 1, 2, 2]), np.array([1, 0, 3, 3])
    w = np.array([0.0, -0.0, -0.0, 0.0])
    for undirected in (True, False):
        kw = dict(undirected=undirected, drop_self_loops=False, dedup=True, index_dtype=np.int32)
        a = build_csr_numpy(src, dst, w, 4, **kw)
        b = build_csr_counting(src, dst, w, 4, **kw)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert np.signbit(a[2]).tolist() == np.signbit(b[2]).tolist()
    # undirected: each edge's two arcs carry the weight of the first arc of the pair
    g = Graph.from_edges(src, dst, w, n=4, directed=False)
    assert np.signbit(g.weights).tolist() == [False, False, True, True]


def test_arc_positions_row_search():
    from distgraph.graph._search import arc_positions

    rng = np.random.default_rng(11)
    n = 400
    g = Graph.from_edges(rng.integers(0, n, 3000), rng.integers(0, n, 3000), n=n)
    src, dst, _ = g.edges()
    tails = np.concatenate([src, rng.integers(0, n, 500)])
    heads = np.concatenate([dst, rng.integers(0, n, 500)])
    pos = arc_positions(g.indptr, g.indices, tails, heads)
    present = set(zip(src.tolist(), dst.tolist()))
    for t, h, p in zip(tails.tolist(), heads.tolist(), pos.tolist()):
        if (t, h) in present:
            assert p >= 0 and g.indices[p] == h and g.indptr[t] <= p < g.indptr[t + 1]
        else:
            assert p == -1
    # an empty row, a miss before, inside and after a row, the last arc of the array
    ip = np.array([0, 0, 2, 4], dtype=np.int64)
    ix = np.array([1, 2, 0, 2], dtype=np.int32)
    assert arc_positions(ip, ix, [0, 1, 1, 1, 2, 2], [0, 0, 2, 3, 1, 2]).tolist() == [-1, -1, 1, -1, -1, 3]


def test_to_scipy_leaves_the_graph_alone():
    """scipy merges repeated arcs in place (sum_duplicates, tolil): the graph's arrays must not
    change (to_scipy shared them before)."""
    from distgraph import Graph

    g = Graph(np.array([0, 2, 3, 4]), np.array([1, 1, 0, 0]), np.array([1.0, 2.0, 1.0, 1.0]), directed=True)
    before = (g.indptr.copy(), g.indices.copy(), g.weights.copy())
    A = g.to_scipy()
    A.sum_duplicates()
    A.tolil()
    assert A[0, 1] == 3.0
    for a, b in zip((g.indptr, g.indices, g.weights), before):
        np.testing.assert_array_equal(a, b)
