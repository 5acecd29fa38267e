"""Semiring SpMV on k2-trees and CSR (distgraph.algorithms.spmv), single rank and MPI.

References are independent of distgraph's kernels: scipy.sparse products for
plus_times and lor_land, a numpy ``minimum.reduceat`` per row for min_plus, and
scipy.sparse.csgraph for the traversals.
"""

import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from distgraph import Graph, semiring
from distgraph.algorithms.spmv import SpMVPlan, hop_distances, reachability, spmv
from distgraph.errors import InvalidArgumentError

from _spmv_cases import SEMIRINGS, reference

# In-process CLI runs abort the job on an error when there are several ranks.
ONE_RANK = pytest.mark.skipif(__import__("mpi4py.MPI").MPI.COMM_WORLD.Get_size() > 1,
                              reason="runs the CLI in-process, or starts its own job")


def random_x(k, B, sr, seed):
    rng = np.random.default_rng(seed)
    shape = (k,) if B is None else (k, B)
    if sr == "lor_land":
        return rng.random(shape) < 0.3
    if sr == "min_plus":
        x = rng.integers(0, 20, shape).astype(np.float64)
        x[rng.random(shape) < 0.3] = np.inf
        return x
    return rng.standard_normal(shape)


MATRICES = {
    "rect_37x50": sp.random(37, 50, density=0.1, random_state=1, format="csr"),
    "rect_200x13": sp.random(200, 13, density=0.2, random_state=2, format="csr"),
    "square_300": sp.random(300, 300, density=0.02, random_state=3, format="csr"),
    "empty_rows": sp.csr_array(([1.0, 1.0], ([0, 5], [3, 9])), shape=(17, 10)),
}


@pytest.mark.parametrize("name", list(MATRICES))
@pytest.mark.parametrize("sr", SEMIRINGS)
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("B", [None, 3])
@pytest.mark.parametrize("fmt", ["k2tree", "csr"])
def test_products_match_reference(name, sr, left, B, fmt):
    A = MATRICES[name]
    k = A.shape[0] if left else A.shape[1]
    x = random_x(k, B, sr, seed=zlib.crc32(repr((name, sr, left, B)).encode()))
    y = spmv(A, x, semiring=sr, left=left, format=fmt, backend="cpu")
    ref = reference(A, x, sr, left)
    assert y.shape == ref.shape
    assert y.dtype == semiring.get(sr).output_dtype(x.dtype)
    if sr == "plus_times":
        np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(y, ref)


def test_every_configuration_bit_identical():
    A = sp.random(700, 520, density=0.01, random_state=11, format="csr")
    x = np.random.default_rng(0).standard_normal((520, 4))
    xl = np.random.default_rng(1).standard_normal((700, 4))
    base = spmv(A, x, format="csr", backend="cpu")
    basel = spmv(A, xl, left=True, format="csr", backend="cpu")
    # CSR sums a row in column order, as scipy does: bit-identical floats
    assert np.array_equal(base, sp.csr_array(A != 0).astype(np.float64) @ x)
    for tile in (4, 5, 16, 100, 1 << 20):
        for offsets in ("scan", "directory"):
            plan = SpMVPlan(A, tile=tile, offsets=offsets, backend="cpu")
            assert np.array_equal(plan.multiply(x), base), (tile, offsets)
            assert np.array_equal(plan.multiply(xl, left=True), basel), (tile, offsets)
    plan = SpMVPlan(A, cached_frontier=True, backend="cpu")
    assert np.array_equal(plan.multiply(x), base)
    assert np.array_equal(plan.multiply(xl, left=True), basel)
    # a batch equals its columns one by one
    for b in range(4):
        assert np.array_equal(plan.multiply(x[:, b]), base[:, b])


def test_default_x_dtypes_and_float32():
    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3])
    assert spmv(g, backend="cpu").tolist() == [2.0, 1.0, 1.0, 0.0]
    assert spmv(g, semiring="lor_land", backend="cpu").tolist() == [True, True, True, False]
    assert spmv(g, np.arange(4), backend="cpu").dtype == np.int64
    assert spmv(g, np.arange(4), semiring="min_plus", backend="cpu").tolist() == [2.0, 3.0, 4.0, np.inf]
    x32 = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    y = spmv(g, x32, semiring=semiring.plus_times, backend="cpu")
    assert y.dtype == np.float32 and y.tolist() == [5.0, 2.5, 3.5, 0.0]
    assert spmv(g, x32, semiring=semiring.min_plus, left=True, backend="cpu").tolist() == [np.inf, 1.5, 2.5, 1.5]


def test_graph_input_ignores_weights_and_undirected():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], weights=[5.0, -2.0, 7.0], directed=False)
    x = np.array([1.0, 10.0, 100.0])
    assert spmv(g, x, backend="cpu").tolist() == [110.0, 101.0, 11.0]
    assert spmv(g, x, left=True, backend="cpu").tolist() == [110.0, 101.0, 11.0]


def test_k2tree_input():
    from distgraph.formats.k2tree import K2Tree

    A = MATRICES["rect_37x50"]
    t = K2Tree.from_scipy(A)
    x = random_x(50, 2, "plus_times", 4)
    np.testing.assert_allclose(spmv(t, x, backend="cpu"), reference(A, x, "plus_times", False), rtol=1e-12)
    plan = SpMVPlan(t, backend="cpu")
    assert plan.size > 1 or plan.tree is t  # one rank multiplies the given tree itself


def test_generated_and_real_graphs(data_dir):
    from distgraph.generators import from_spec
    from distgraph.graph.readers import read_graph

    graphs = [from_spec("kron:9"), from_spec("urand:9"), read_graph(data_dir / "wiki-Vote.txt.gz"),
              read_graph(data_dir / "bitcoin-otc.csv.gz"), read_graph(data_dir / "power.mtx.gz")]
    rng = np.random.default_rng(3)
    for g in graphs:
        A = g.to_scipy()
        kt = SpMVPlan(g, backend="cpu", tile=64)
        cs = SpMVPlan(g, format="csr", backend="cpu")
        for sr in SEMIRINGS:
            for left in (False, True):
                x = random_x(g.n, 2, sr, int(rng.integers(1000)))
                y = kt.multiply(x, sr, left)
                assert np.array_equal(y, cs.multiply(x, sr, left)), (g, sr, left)
                ref = reference(A, x, sr, left)
                if sr == "plus_times":
                    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
                else:
                    assert np.array_equal(y, ref)


def test_nbytes_plan():
    A = sp.random(400, 400, density=0.02, random_state=1, format="csr")
    p = SpMVPlan(A, tile=16, backend="cpu")
    nb = p.nbytes(batch=2)
    t = p.tree.nbytes()
    assert nb["matrix"] == t["engine"]
    assert nb["vectors"] == 800 * 2 * 8
    assert 0 < nb["scratch"] <= 8 * (int(p.tree.level_sizes()[p.tree.top_level]) + 16 * p.tree.levels)
    pf = SpMVPlan(A, cached_frontier=True, backend="cpu")
    assert pf.nbytes()["matrix"] == t["engine_f"] and pf.nbytes()["scratch"] == 0


def test_errors():
    g = Graph.from_edges([0, 1], [1, 2])
    with pytest.raises(InvalidArgumentError, match=r"x must have shape \(3,\)"):
        spmv(g, np.ones(4), backend="cpu")
    with pytest.raises(InvalidArgumentError, match="semiring must be one of"):
        spmv(g, semiring="max_times", backend="cpu")
    with pytest.raises(InvalidArgumentError, match="tile must be an integer >= 4"):
        spmv(g, tile=2, backend="cpu")
    with pytest.raises(InvalidArgumentError, match="format must be one of"):
        spmv(g, format="coo", backend="cpu")
    with pytest.raises(InvalidArgumentError, match="offsets must be one of"):
        spmv(g, offsets="rank", backend="cpu")
    with pytest.raises(TypeError, match="scipy.sparse matrix"):
        spmv(np.ones((3, 3)), backend="cpu")
    with pytest.raises(InvalidArgumentError, match=r"sources must be in \[0, 3\)"):
        reachability(g, [3], backend="cpu")
    with pytest.raises(InvalidArgumentError, match="must be square"):
        hop_distances(sp.random(3, 4, density=0.5, format="csr"), [0], backend="cpu")


def _unweighted_hops(A, sources, reverse):
    M = sp.csr_array(A != 0).astype(np.float64)
    d = shortest_path(M.T if reverse else M, unweighted=True, indices=sources, directed=True)
    return d.T


@pytest.mark.parametrize("reverse", [False, True])
def test_reachability_and_hops(reverse, data_dir):
    from distgraph.graph.readers import read_graph

    g = read_graph(data_dir / "wiki-Vote.txt.gz")
    sources = np.array([0, 5, 77, 1000, 7000])
    lev = reachability(g, sources, reverse=reverse, backend="cpu")
    ref = _unweighted_hops(g.to_scipy(), sources, reverse)
    assert np.array_equal(np.where(np.isinf(ref), -1, ref).astype(np.int32), lev)
    plan = SpMVPlan(g, format="csr", backend="cpu")
    hops = hop_distances(plan, sources, reverse=reverse)
    assert np.array_equal(hops, ref)
    short = reachability(g, sources, reverse=reverse, max_levels=1, backend="cpu")
    assert short.max() <= 1 and np.array_equal(short == 1, lev == 1)


def test_reachability_tiny_disconnected():
    g = Graph.from_edges([0, 1, 3], [1, 0, 4], n=6)
    lev = reachability(g, [0, 3, 5], backend="cpu")
    assert lev.T.tolist() == [[0, 1, -1, -1, -1, -1], [-1, -1, -1, 0, 1, -1], [-1, -1, -1, -1, -1, 0]]
    assert reachability(g, [4], reverse=True, backend="cpu")[:, 0].tolist() == [-1, -1, -1, 1, 0, -1]


# ------------------------------------------------------------------------ MPI
def _all_true(comm, flag):
    return all(comm.allgather(bool(flag)))


@pytest.mark.mpi
@pytest.mark.parametrize("fmt", ["k2tree", "csr"])
def test_mpi_identical_to_one_rank(comm, fmt, data_dir):
    from mpi4py import MPI

    from distgraph.generators import from_spec
    from distgraph.graph.readers import read_graph

    cases = [MATRICES["rect_200x13"], from_spec("kron:8"), read_graph(data_dir / "bitcoin-otc.csv.gz")]
    ok = True
    for A in cases:
        dist = SpMVPlan(A, format=fmt, tile=16, comm=comm, backend="cpu")
        solo = SpMVPlan(A, format="csr", comm=MPI.COMM_SELF, backend="cpu")
        for sr in SEMIRINGS:
            for left in (False, True):
                for B in (None, 3):
                    k = dist.shape[0] if left else dist.shape[1]
                    x = random_x(k, B, sr, seed=7)
                    ok &= np.array_equal(dist.multiply(x, sr, left), solo.multiply(x, sr, left))
    assert _all_true(comm, ok)


@pytest.mark.mpi
def test_mpi_cached_frontier_and_traversals(comm, data_dir):
    from mpi4py import MPI

    from distgraph.graph.readers import read_graph

    g = read_graph(data_dir / "power.mtx.gz")
    x = random_x(g.n, 2, "plus_times", 1)
    ref = SpMVPlan(g, comm=MPI.COMM_SELF, backend="cpu").multiply(x, left=True)
    y = SpMVPlan(g, cached_frontier=True, comm=comm, backend="cpu").multiply(x, left=True)
    src = [0, 10, 4000]
    lev = reachability(g, src, comm=comm, backend="cpu")
    hops = hop_distances(g, src, comm=comm, backend="cpu", format="k2tree")
    ref_h = _unweighted_hops(g.to_scipy(), src, False)
    ok = np.array_equal(y, ref) and np.array_equal(hops, ref_h) and np.array_equal(lev, ref_h.astype(np.int32))
    assert _all_true(comm, ok)


# ------------------------------------------------------------------------ CLI
@ONE_RANK
def test_cli_spmv(tmp_path, data_dir, capsys):
    import json

    from distgraph.cli import main
    from distgraph.graph.readers import read_graph

    path = data_dir / "power.mtx.gz"
    g = read_graph(path)
    x = random_x(g.n, 3, "min_plus", 5)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    assert main(["spmv", str(path), "--semiring", "min_plus", "--x", str(tmp_path / "x.npy"), "--left",
                 "--tile", "32", "--output", str(out), "--verify", "--json", "--backend", "cpu"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["batch"] == 3 and s["verified"] is True and s["format"] == "k2tree"
    assert s["rank_bytes"]["matrix"] > 0 and s["k2_bits_per_edge_rank"] > 0
    assert np.array_equal(np.load(out), reference(g.to_scipy(), x, "min_plus", True))
    assert main(["spmv", str(path), "--format", "csr", "--batch", "2", "-o", str(out), "--backend", "cpu"]) == 0
    assert np.array_equal(np.load(out), reference(g.to_scipy(), np.ones((g.n, 2)), "plus_times", False))
    assert main(["spmv", str(path), "--batch", "2", "--x", str(tmp_path / "x.npy"), "--backend", "cpu"]) == 2
    assert "--batch 2 disagrees" in capsys.readouterr().err


# ----------------------------------------------------------------- property
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(nrows=st.integers(1, 40), ncols=st.integers(1, 40), density=st.floats(0.0, 0.6),
       seed=st.integers(0, 2**31 - 1), tile=st.integers(4, 40), offsets=st.sampled_from(["scan", "directory"]),
       cached=st.booleans(), sr=st.sampled_from(SEMIRINGS), left=st.booleans(), B=st.sampled_from([None, 2]))
def test_property_k2tree_equals_csr_and_reference(nrows, ncols, density, seed, tile, offsets, cached, sr, left, B):
    from mpi4py import MPI

    A = sp.random(nrows, ncols, density=density, random_state=seed % 1000, format="csr")
    k = nrows if left else ncols
    x = random_x(k, B, sr, seed)
    self_ = MPI.COMM_SELF
    y = SpMVPlan(A, tile=tile, offsets=offsets, cached_frontier=cached, comm=self_, backend="cpu").multiply(x, sr, left)
    assert np.array_equal(y, SpMVPlan(A, format="csr", comm=self_, backend="cpu").multiply(x, sr, left))
    ref = reference(A, x, sr, left)
    if sr == "plus_times":
        np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    else:
        assert np.array_equal(y, ref)


@pytest.mark.mpi
@pytest.mark.parametrize("fmt", ["k2tree", "csr"])
def test_empty_graph_products(comm, fmt):
    """A graph of no vertices gives empty products, single and batched, both directions, on
    any number of ranks (reshape(0, -1) raised 'cannot reshape array of size 0')."""
    g = Graph.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), n=0)
    plan = SpMVPlan(g, format=fmt, comm=comm, backend="cpu")
    ok = True
    for sr in SEMIRINGS:
        for left in (False, True):
            ok &= plan.multiply(None, sr, left).shape == (0,)
            ok &= plan.multiply(np.zeros((0, 3)), sr, left).shape == (0, 3)
    assert _all_true(comm, ok)
