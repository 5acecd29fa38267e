"""k2-trees built with a vertex reordering (``reorder=``): products in the caller's ids,
storage round trip, and the size claim (benchmarks/k2tree_reorder.py).

References are scipy.sparse products of the pattern (tests/test_spmv.py's
``reference``). plus_times vectors are integer-valued, so sums are exact in any order
(a reordered tree adds a row's terms in the stored column order).
"""

import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from distgraph import Graph
from distgraph.algorithms.spmv import SpMVPlan, spmv
from distgraph.errors import GraphFormatError, InvalidArgumentError
from distgraph.formats.k2tree import K2Tree, csr_nbytes, tree_for_file

from _spmv_cases import SEMIRINGS, reference


def int_x(k, B, sr, seed):
    rng = np.random.default_rng(seed)
    shape = (k,) if B is None else (k, B)
    if sr == "lor_land":
        return rng.random(shape) < 0.3
    x = rng.integers(-20 if sr == "plus_times" else 0, 20, shape).astype(np.float64)
    if sr == "min_plus":
        x[rng.random(shape) < 0.3] = np.inf
    return x


def kron_graph(scale=9):
    from distgraph.generators import from_spec

    return from_spec(f"kron:{scale}")


def directed_graph():
    A = sp.random(300, 300, density=0.02, random_state=3, format="csr")
    return Graph.from_scipy(A, directed=True, weighted=False)


# ------------------------------------------------------------------ the tree
@pytest.mark.parametrize("method", ["degree", "rcm", "perm"])
def test_reordered_tree_is_the_same_matrix(method):
    g = directed_graph()
    reorder = np.random.default_rng(0).permutation(g.n) if method == "perm" else method
    t = K2Tree.from_graph(g, reorder=reorder)
    assert t.perm is not None and sorted(t.perm.tolist()) == list(range(g.n))
    A = (g.to_scipy() != 0).astype(np.int8)
    assert (t.to_scipy() != A).nnz == 0
    r, c = t.to_coo(raw=True)  # the stored ids: perm applied
    rr, cc = A.nonzero()
    assert set(zip(r.tolist(), c.tolist())) == set(zip(t.perm[rr].tolist(), t.perm[cc].tolist()))
    # from_coo / from_scipy give the same tree as from_graph for the same ordering
    t2 = K2Tree.from_scipy(g.to_scipy(), reorder=t.perm)
    assert np.array_equal(t2.sig, t.sig) and np.array_equal(t2.perm, t.perm)


def test_reorder_none_is_the_plain_tree():
    g = directed_graph()
    for r in (None, "none"):
        t = K2Tree.from_graph(g, reorder=r)
        assert t.perm is None and np.array_equal(t.sig, K2Tree.from_graph(g).sig)


def test_reorder_refuses_rectangular_and_bad_arguments():
    A = sp.random(37, 50, density=0.1, random_state=1, format="csr")
    with pytest.raises(InvalidArgumentError, match="square"):
        K2Tree.from_scipy(A, reorder="degree")
    with pytest.raises(InvalidArgumentError, match="square"):
        SpMVPlan(A, reorder="rcm", backend="cpu")
    g = directed_graph()
    with pytest.raises(InvalidArgumentError, match="reorder must be"):
        K2Tree.from_graph(g, reorder="jaccard")
    with pytest.raises(InvalidArgumentError, match="permutation"):
        K2Tree.from_graph(g, reorder=np.zeros(g.n, np.int64))
    with pytest.raises(InvalidArgumentError, match="not of a plan on a K2Tree"):
        SpMVPlan(K2Tree.from_graph(g), reorder="degree", backend="cpu")


@pytest.mark.parametrize("reorder", ["degree", "rcm", "perm"])
@pytest.mark.parametrize("bad", [-1, 10])
def test_reorder_refuses_coordinates_out_of_range(reorder, bad):
    """As without reorder=: an InvalidArgumentError naming the range, not a numpy error or
    (a given permutation and a negative id) a tree with the edge silently moved to n - 1."""
    n = 10
    perm = np.arange(n)[::-1].copy() if reorder == "perm" else reorder
    rows, cols = np.array([0, 3, bad]), np.array([1, 2, 0])
    with pytest.raises(InvalidArgumentError, match=r"coordinates must lie in \[0, 10\)"):
        K2Tree.from_coo(rows, cols, (n, n), reorder=perm)
    with pytest.raises(InvalidArgumentError, match=r"coordinates must lie in \[0, 10\)"):
        K2Tree.from_coo(cols, rows, (n, n), reorder=perm)
    with pytest.raises(InvalidArgumentError, match="equal length"):
        K2Tree.from_coo(rows, cols[:2], (n, n), reorder=perm)


# ------------------------------------------------------------------ products
@pytest.mark.parametrize("sr", SEMIRINGS)
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("B", [None, 3])
@pytest.mark.parametrize("how", ["tree_degree", "tree_rcm", "tree_degree_F", "plan_rcm", "plan_scipy_degree",
                                 "plan_csr_degree"])
def test_products_in_callers_ids(sr, left, B, how):
    g = directed_graph()
    A = g.to_scipy()
    x = int_x(g.n, B, sr, seed=zlib.crc32(repr((sr, left, B, how)).encode()))
    method = how.split("_")[-1] if not how.endswith("_F") else "degree"
    if how.startswith("tree"):
        plan = SpMVPlan(K2Tree.from_graph(g, reorder=method), cached_frontier=how.endswith("_F"), backend="cpu")
    elif how == "plan_scipy_degree":
        plan = SpMVPlan(A, reorder="degree", backend="cpu")
    elif how == "plan_csr_degree":
        plan = SpMVPlan(g, format="csr", reorder="degree", backend="cpu")
    else:
        plan = SpMVPlan(g, reorder=method, backend="cpu")
    y = plan.multiply(x, sr, left)
    assert y.shape == reference(A, x, sr, left).shape
    assert np.array_equal(y, reference(A, x, sr, left))
    if how.startswith("plan") and "csr" not in how:
        assert plan.tree.perm is not None  # the tree itself is the reordered one


def test_backend_wrappers_gather():
    """The CPU wrappers take x and y in the caller's ids (and accumulate into y)."""
    from distgraph.backends.cpu.k2tree_spmv import k2_frontier_product, k2_product

    g = directed_graph()
    t = K2Tree.from_graph(g, reorder="rcm")
    x = int_x(g.n, 2, "plus_times", 3)
    ref = reference(g.to_scipy(), x, "plus_times", False)
    for fn in (k2_product, k2_frontier_product):
        y = np.ones((g.n, 2))
        fn(t, x, y, 0)
        assert np.array_equal(y, ref + 1)


def test_gpu_host_gathers_with_numpy_stand_in():
    """DeviceMatrix.multiply's gathers (permuted_product), run with numpy arrays."""
    from distgraph.backends.cpu.k2tree_spmv import k2_product
    from distgraph.backends.gpu.k2tree_spmv import permuted_product

    g = directed_graph()
    t = K2Tree.from_graph(g, reorder="degree")
    raw = t.raw()
    assert raw.perm is None and raw.sig is t.sig
    x = int_x(g.n, 3, "plus_times", 4)

    def product(xs):
        y = np.zeros_like(xs)
        return k2_product(raw, xs, y, 0, left=True)

    y = permuted_product(t.perm.astype(np.int32), t.inverse_perm.astype(np.int32), x, product)
    assert np.array_equal(y, reference(g.to_scipy(), x, "plus_times", True))


def test_pagerank_on_a_reordered_tree():
    from distgraph.algorithms.pagerank import pagerank

    g = kron_graph(8)
    ref = pagerank(SpMVPlan(g, format="csr", backend="cpu"), tol=1e-12, max_iter=500)
    got = pagerank(SpMVPlan(K2Tree.from_graph(g, reorder="degree"), backend="cpu"), tol=1e-12, max_iter=500)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------- storage
def test_save_load_round_trip(tmp_path):
    g = directed_graph()
    t = K2Tree.from_graph(g, reorder="rcm")
    p = tmp_path / "t.k2t.npz"
    t.save(p)
    u = K2Tree.load(p)
    assert np.array_equal(u.perm, t.perm) and np.array_equal(u.sig, t.sig)
    x = int_x(g.n, None, "plus_times", 5)
    assert np.array_equal(spmv(u, x, backend="cpu"), reference(g.to_scipy(), x, "plus_times", False))
    # a tree stored without a permutation (as before this option) still loads, without one
    K2Tree.from_graph(g).save(p)
    assert K2Tree.load(p).perm is None
    # a stored permutation that is not one is refused
    z = dict(np.load(tmp_path / "t.k2t.npz"))
    t.save(p)
    z = dict(np.load(p))
    z["perm"] = np.zeros_like(z["perm"])
    np.savez(tmp_path / "bad.npz", **z)
    with pytest.raises(GraphFormatError, match="permutation"):
        K2Tree.load(tmp_path / "bad.npz")


def test_sidecar_keeps_the_ordering(tmp_path):
    from distgraph.formats.binary import save as write_binary

    g = kron_graph(8)
    path = tmp_path / "g.dgraph"
    write_binary(g, path)
    t = tree_for_file(g, path, reorder="degree")
    assert t.perm is not None
    u = tree_for_file(g, path, reorder="degree")  # from the sidecar
    assert np.array_equal(u.perm, t.perm) and np.array_equal(u.sig, t.sig)
    v = tree_for_file(g, path)  # another ordering: rebuilt, not the reordered sidecar
    assert v.perm is None and np.array_equal(v.sig, K2Tree.from_graph(g).sig)
    with pytest.raises(InvalidArgumentError):
        tree_for_file(g, path, reorder="bogus")


# -------------------------------------------------------------- the claim
def test_degree_order_shrinks_kronecker_trees():
    """The reason for the option (benchmarks/results/k2tree_reorder_cpu.json): a
    Kronecker graph's ids are scrambled; sorting by degree gives a much smaller tree
    (kron:16: 20.0 -> 10.3 bits per edge; CSR-FP32 / tree 3.3x -> 6.4x)."""
    g = kron_graph(14)
    plain = K2Tree.from_graph(g)
    for method in ("degree", "rcm"):
        t = K2Tree.from_graph(g, reorder=method)
        assert t.sig.nbytes < 0.7 * plain.sig.nbytes, (method, t.bits_per_edge(), plain.bits_per_edge())
    t = K2Tree.from_graph(g, reorder="degree")
    csr = csr_nbytes(g.n, g.m)
    assert csr / t.sig.nbytes > 1.5 * csr / plain.sig.nbytes


def test_degree_order_head_moves_only_the_hubs():
    """degree_order(g, head=f): the ceil(f n) largest-degree vertices first, by degree, the
    rest in their input order; head=1 is the full order; the tree shrinks between the
    unreordered one and the fully ordered one (a permutation passed as reorder=)."""
    from distgraph.formats.reorder import degree_order

    g = kron_graph(14)
    deg = np.diff(g.indptr)
    full = degree_order(g)
    assert np.array_equal(degree_order(g, head=1.0), full) and np.array_equal(degree_order(g, head=1), full)
    new_id = degree_order(g, head=0.01)
    h = int(np.ceil(0.01 * g.n))
    old_of_new = np.argsort(new_id)
    assert np.array_equal(old_of_new[:h], np.argsort(full)[:h])  # the hubs, by degree
    assert np.all(np.diff(old_of_new[h:]) > 0)  # the others in their order
    assert deg[old_of_new[:h]].min() >= deg[old_of_new[h:]].max()
    sizes = [K2Tree.from_graph(g, reorder=r).sig.nbytes for r in (None, degree_order(g, head=0.01), full)]
    assert sizes[0] > sizes[1] > sizes[2], sizes
    for bad in (0, 0.0, -0.1, 1.5, True, "0.1"):
        with pytest.raises(InvalidArgumentError, match="head"):
            degree_order(g, head=bad)


# ------------------------------------------------------------------ MPI
def _all_true(comm, flag):
    return all(comm.allgather(bool(flag)))


@pytest.mark.mpi
def test_mpi_reordered_products(comm):
    g = directed_graph()
    A = g.to_scipy()
    ok = True
    for how in ("tree", "plan_degree", "plan_rcm_F", "csr"):
        if how == "tree":
            plan = SpMVPlan(K2Tree.from_graph(g, reorder="degree"), comm=comm, backend="cpu")
        elif how == "csr":
            plan = SpMVPlan(g, format="csr", reorder="rcm", comm=comm, backend="cpu")
        else:
            plan = SpMVPlan(g, reorder=how.split("_")[1], cached_frontier=how.endswith("_F"), comm=comm,
                            backend="cpu")
        for sr in SEMIRINGS:
            for left in (False, True):
                for B in (None, 3):
                    x = int_x(g.n, B, sr, seed=zlib.crc32(repr((how, sr, left, B)).encode()))
                    ok &= bool(np.array_equal(plan.multiply(x, sr, left), reference(A, x, sr, left)))
    assert _all_true(comm, ok)


# ------------------------------------------------------------------- CLI
ONE_RANK = pytest.mark.skipif(__import__("mpi4py.MPI").MPI.COMM_WORLD.Get_size() > 1,
                              reason="runs the CLI in-process")


@ONE_RANK
def test_cli_spmv_reorder(tmp_path, capsys):
    import json

    from distgraph.cli import main
    from distgraph.formats.binary import save as write_binary

    g = kron_graph(8)
    path = tmp_path / "g.dgraph"
    write_binary(g, path)
    x = int_x(g.n, 2, "plus_times", 9)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    for graph in (str(path), "kron:8"):
        for fmt in ("k2tree", "csr"):
            assert main(["spmv", graph, "--reorder", "degree", "--format", fmt, "--x", str(tmp_path / "x.npy"),
                         "--left", "-o", str(out), "--verify", "--json", "--backend", "cpu"]) == 0
            s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
            assert s["reorder"] == "degree" and s["verified"] is True
            assert np.array_equal(np.load(out), reference(g.to_scipy(), x, "plus_times", True))
    side = K2Tree.load(str(path) + ".k2t.npz")  # the sidecar holds the reordered tree
    assert side.perm is not None and side.meta["source"]["reorder"] == "degree"
    assert side.sig.nbytes < K2Tree.from_graph(g).sig.nbytes


# ------------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("cached", [False, True])
def test_gpu_reordered_products(cached):
    """DeviceMatrix on a reordered tree (host gathers of x and y): right, left and
    batched products, three semirings, equal to scipy; SpMVPlan on the GPU too.
    Needs a GPU (not run in CI)."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    g = directed_graph()
    A = g.to_scipy()
    t = K2Tree.from_graph(g, reorder="degree")
    dm = DeviceMatrix(t, cached_frontier=cached)
    assert dm.nbytes()["matrix"] > DeviceMatrix(t.raw(), cached_frontier=cached).nbytes()["matrix"]
    for sr in SEMIRINGS:
        for left in (False, True):
            for B in (1, 3):
                x = int_x(g.n, B, sr, seed=zlib.crc32(repr((sr, left, B, cached)).encode()))
                s = semiring.get(sr)
                x2 = s.prepare(x)
                assert np.array_equal(dm.multiply(x2, s, left), reference(A, x, sr, left).reshape(g.n, B))
                plan = SpMVPlan(t, cached_frontier=cached, backend="gpu")
                assert np.array_equal(plan.multiply(x, sr, left), reference(A, x, sr, left))
