"""Reorderings for BVSS (BLEST Sec. 4): scale-free test, Jaccard-with-windows, RCM, U_div,
relabeling; results always map back to the caller's ids."""

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from distgraph.errors import InvalidArgumentError
from distgraph.formats.bvss import build_bvss
from distgraph.formats.reorder import (is_scale_free, jaccard_windows, permute_graph, rcm, reorder_graph,
                                       update_divergence, update_divergence_numpy)
from distgraph.generators import grid, kronecker
from distgraph.graph import Graph


def _levels(g, s):
    d = csg.shortest_path(g.to_scipy(dtype=np.float64), method="D", directed=g.directed, unweighted=True,
                          indices=s)
    return np.where(np.isfinite(d), d, -1).astype(np.int64)


def _shuffled(g, seed):
    return permute_graph(g, np.random.default_rng(seed).permutation(g.n))


def _is_perm(p, n):
    return p.shape == (n,) and np.array_equal(np.sort(p), np.arange(n))


def test_scale_free_classifier():
    star = Graph.from_edges([0] * 99, list(range(1, 100)), directed=False)
    assert is_scale_free(star)[0] is True
    sf, info = is_scale_free(kronecker(12))
    assert sf and info["out"]["heavy_tail"]
    g = grid(40, 40)
    sf, info = is_scale_free(g)
    assert sf is False and not info["out"]["heavy_tail"]
    # directed: a heavy in-degree tail alone is enough
    src = np.arange(1, 2000)
    d = Graph.from_edges(src, np.zeros_like(src) + (src % 5 == 0) * 7, n=2000, directed=True)
    sf, info = is_scale_free(d)
    assert sf and "in" in info and info["in"]["heavy_tail"]


@pytest.mark.parametrize("directed", [False, True])
def test_permute_graph_is_an_isomorphism(directed):
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 300, 1500), rng.integers(0, 300, 1500), rng.integers(1, 9, 1500),
                         n=300, directed=directed)
    p = rng.permutation(300)
    h = permute_graph(g, p)
    s, d, w = g.edges()
    s2, d2, w2 = h.edges()
    a = sorted(zip(p[s].tolist(), p[d].tolist(), w.tolist()))
    b = sorted(zip(s2.tolist(), d2.tolist(), w2.tolist()))
    assert a == b
    for r in range(h.n):  # rows sorted
        row = h.indices[h.indptr[r]:h.indptr[r + 1]]
        assert np.all(np.diff(row) > 0)
    assert np.array_equal(_levels(h, int(p[7]))[p], _levels(g, 7))


def test_rcm_reduces_bandwidth_and_udiv_of_a_shuffled_grid():
    g = _shuffled(grid(60, 60), 1)
    p = rcm(g)
    assert _is_perm(p, g.n)
    h = permute_graph(g, p)
    bw = lambda x: int(np.abs(np.repeat(np.arange(x.n), np.diff(x.indptr)) - x.indices).max())
    assert bw(h) < bw(g) / 10
    assert update_divergence(build_bvss(h)) < update_divergence(build_bvss(g)) / 10


def test_jaccard_recovers_planted_groups():
    # 8-vertex groups with identical neighbourhoods, ids shuffled: Jaccard packs each group
    # into one slice set, so every mask is full (8 arcs per slice).
    rng = np.random.default_rng(5)
    groups, n = 64, 512
    src, dst = [], []
    for k in range(groups):
        hubs = rng.choice(n, 6, replace=False)
        for v in range(8 * k, 8 * k + 8):
            src += [v] * 6
            dst += hubs.tolist()
    g0 = Graph.from_edges(src, dst, n=n, directed=True)
    g = _shuffled(g0, 2)
    p = jaccard_windows(g, window=512)
    assert _is_perm(p, n)
    h = permute_graph(g, p)
    assert build_bvss(h).compression > 7.0 > build_bvss(g).compression


@pytest.mark.parametrize("window", [8, 64, 1024])
def test_jaccard_keeps_windows_and_levels(window):
    g = kronecker(10)
    p = jaccard_windows(g, window=window)
    assert _is_perm(p, g.n)
    assert np.array_equal(p // window, np.arange(g.n) // window)  # vertices never leave their window
    h = permute_graph(g, p)
    s = int(np.argmax(np.diff(g.indptr)))
    assert np.array_equal(_levels(h, int(p[s]))[p], _levels(g, s))


def test_jaccard_compresses_kron():
    g = kronecker(12)
    before = build_bvss(g).compression
    after = build_bvss(permute_graph(g, jaccard_windows(g))).compression
    assert after > before * 1.1


def test_jaccard_rejects_bad_window():
    with pytest.raises(InvalidArgumentError, match="window must be"):
        jaccard_windows(grid(4, 4), window=12)


def test_update_divergence_by_hand():
    # one slice set: rows 0, 10 in column 0 (slices 0 and 4 -> lanes 0 and 1, column 0)
    # and row 5 alone in column 1: U_div = mean(std(0, 10), std(5)) = mean(5, 0) = 2.5
    g = Graph.from_edges([0, 0, 0, 1, 2, 3, 4, 0], [0, 5, 10, 1, 2, 3, 4, 11], n=12, directed=True)
    b = build_bvss(g)
    assert b.row_ids[:8].tolist() == [0, 1, 2, 3, 4, 5, 10, 11]
    # columns (slice % 4): col0 rows {0, 4}, col1 {1, 5}, col2 {2, 10}, col3 {3, 11}
    want = np.mean([np.std([0, 4]), np.std([1, 5]), np.std([2, 10]), np.std([3, 11])])
    assert update_divergence(b) == pytest.approx(want)
    assert update_divergence(build_bvss(Graph.from_edges([], [], n=3))) == 0.0


def test_update_divergence_equals_numpy_version():
    for g in (kronecker(12), _shuffled(grid(30, 40), 1), Graph.from_edges([0, 0, 9], [1, 500, 3], n=600)):
        b = build_bvss(g)
        assert update_divergence(b) == pytest.approx(update_divergence_numpy(b), rel=1e-12)


def test_permute_graph_long_rows_and_repeats():
    # rows longer than the insertion-sort cut (48) and repeated arcs with their weights in order
    rng = np.random.default_rng(8)
    n = 400
    src = np.concatenate([np.zeros(300, np.int64), rng.integers(0, n, 2000), [5, 5, 5]])
    dst = np.concatenate([rng.permutation(n)[:300], rng.integers(0, n, 2000), [7, 7, 7]])
    w = np.arange(src.shape[0], dtype=np.float64)
    order = np.lexsort((dst, src))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    g = Graph(indptr, dst[order].astype(np.int32), w[order], directed=True)  # repeats kept
    p = rng.permutation(n)
    h = permute_graph(g, p)
    for r in range(n):
        o = int(np.flatnonzero(p == r)[0])
        row, wr = g.indices[g.indptr[o]:g.indptr[o + 1]], g.weights[g.indptr[o]:g.indptr[o + 1]]
        k = np.argsort(p[row], kind="stable")
        assert np.array_equal(h.indices[h.indptr[r]:h.indptr[r + 1]], p[row][k])
        assert np.array_equal(h.weights[h.indptr[r]:h.indptr[r + 1]], wr[k])
    assert h.indices.dtype == g.indices.dtype and h.indptr[-1] == g.m


@pytest.mark.parametrize("method", ["auto", "jaccard", "rcm", "none"])
def test_reorder_graph_maps_back(method):
    g = _shuffled(grid(20, 30), 4)
    h, p, info = reorder_graph(g, method, window=64)
    assert info["method"] == ("rcm" if method == "auto" else method)
    if method == "none":
        assert p is None and h is g
        return
    assert np.array_equal(_levels(h, int(p[3]))[p], _levels(g, 3))


def test_reorder_graph_rejects_unknown():
    with pytest.raises(InvalidArgumentError, match="reorder must be one of"):
        reorder_graph(grid(3, 3), "metis")


def _jaccard_cases():
    from distgraph.generators import kronecker as kron

    rng = np.random.default_rng(5)
    s, d = rng.integers(0, 1003, 6000), rng.integers(0, 900, 6000)   # heads 900..1002 never hit
    directed = Graph.from_edges(s, d, n=1003, directed=True)         # n not a multiple of the window
    return [("kron10", kron(10, seed=3), 2**16, "5b946afbd1ae8c3e"),
            ("kron10_w64", kron(10, seed=3), 64, "7ed2ef0fe70daf05"),
            ("grid_shuf_w48", _shuffled(grid(31, 33), 1), 48, "e7efa3eb6fd532aa"),
            ("dir1003_w64", directed, 64, "4da0656c33f9b357"),
            ("dir1003_w8", directed, 8, "a31df63159ab9ec0"),
            ("one", Graph.from_edges([0], [0], n=1, directed=True), 8, "af5570f5a1810b7a")]


def test_jaccard_int32_stamps_give_the_int64_result(monkeypatch):
    """Jaccard's per-thread row stamps (one scratch of n entries per thread: 17 GB at 2**27
    vertices and 16 threads in int64) are int32 when the slice-set ids fit; the orders are
    those of the int64 stamps (hashes taken before the change) and of int64 forced."""
    import hashlib

    import distgraph.formats.reorder as ro

    assert ro._stamp_dtype(2**27, 2**16, 8) == np.int32
    assert ro._stamp_dtype(2**31 - 9, 2**31, 8) == np.int32       # one window: 2**28 + 1 ids
    assert ro._stamp_dtype(2**33 - 16, 8, 8) == np.int32          # 2**30 - 2 windows of 2 ids
    assert ro._stamp_dtype(2**33, 8, 8) == np.int64               # 2**31 ids
    cases = _jaccard_cases()
    got = {}
    for name, g, w, want in cases:
        got[name] = jaccard_windows(g, w)
        assert hashlib.sha256(np.ascontiguousarray(got[name], np.int64).tobytes()).hexdigest()[:16] == want, name
        assert _is_perm(got[name], g.n)
    monkeypatch.setattr(ro, "_stamp_dtype", lambda n, window, sigma: np.int64)
    for name, g, w, _ in cases:
        np.testing.assert_array_equal(jaccard_windows(g, w), got[name])


def test_permute_rows_kernel_is_cached_across_processes():
    """permute_rows' numba kernel is loaded from numba's cache by a new process, not compiled
    again (a kernel that closed over another dispatcher never hit the cache: 5-6 s per
    process); and permute_rows rejects rows or new_id that do not fit the graph."""
    import subprocess
    import sys

    from distgraph.formats.reorder import permute_rows
    from distgraph.testing import clean_mpi_env

    ip, ix = np.array([0, 1, 2]), np.array([1, 0], np.int32)
    permute_rows(ip, ix, None, np.array([1, 0]), np.array([0, 1]))  # compiled (and cached) here, at the latest
    code = ("import numpy as np\nfrom distgraph.formats.reorder import permute_rows, _rows_kernel\n"
            "permute_rows(np.array([0, 1, 2]), np.array([1, 0], np.int32), None, np.array([1, 0]), np.array([0, 1]))\n"
            "print(sum(_rows_kernel().stats.cache_hits.values()), sum(_rows_kernel().stats.cache_misses.values()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_mpi_env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "0"], out.stdout
    with pytest.raises(InvalidArgumentError, match="rows"):
        permute_rows(ip, ix, None, np.array([1, 0]), np.array([0, 2]))
    with pytest.raises(InvalidArgumentError, match="new_id"):
        permute_rows(ip, ix, None, np.array([1, 0, 2]), np.array([0, 1]))
