"""BVSS (BLEST Sec. 3.1) on the CPU: decoding back to the CSR, sizes, the cache, a numpy
emulation of the m8n8k128 MMA layout of Fig. 3, and a level-synchronous emulation of the
kernel's queue logic compared with scipy BFS levels."""

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from distgraph.formats.bvss import SIGMA, TAU, build_bvss, build_bvss_numpy, graph_checksum, load_or_build_bvss
from distgraph.graph import Graph


def _random_graph(n, m, directed, seed, hub=None):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if hub is not None:  # a slice set with many rows: several VSSs
        k = min(n, 3 * TAU + 5)
        src = np.concatenate([src, np.full(k, hub)])
        dst = np.concatenate([dst, rng.permutation(n)[:k]])
    return Graph.from_edges(src, dst, n=n, directed=directed)


def _ref_levels(g, s):
    d = csg.shortest_path(g.to_scipy(dtype=np.float64), method="D", directed=g.directed, unweighted=True,
                          indices=s)
    out = np.full(g.n, -1, np.int32)
    ok = np.isfinite(d)
    out[ok] = d[ok].astype(np.int32)
    return out


GRAPHS = [
    ("tiny-path", lambda: Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)),
    ("n13-directed", lambda: _random_graph(13, 30, True, 1)),
    ("n129-undirected", lambda: _random_graph(129, 400, False, 2)),
    ("n1000-directed-hub", lambda: _random_graph(1000, 3000, True, 3, hub=17)),
    ("n2050-undirected-hub", lambda: _random_graph(2050, 6000, False, 4, hub=2049)),
    ("empty-rows", lambda: Graph.from_edges([5, 5, 40], [6, 40, 5], n=77, directed=True)),
    ("self-loops", lambda: Graph.from_edges([0, 1, 9, 9], [0, 1, 9, 3], n=11, directed=True)),
]


@pytest.mark.parametrize("name,make", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_decode_roundtrip(name, make):
    g = make()
    b = build_bvss(g)
    src, dst, _ = g.edges()
    s2, d2 = b.arcs()
    order = np.lexsort((dst, src))
    assert np.array_equal(s2, src[order]) and np.array_equal(d2, dst[order])
    # structure: sizes, padding, pointers
    ns = (g.n + SIGMA - 1) // SIGMA
    assert b.real_ptrs.shape == (ns + 1,) and b.real_ptrs[0] == 0 and b.real_ptrs[-1] == b.num_vss
    assert b.row_ids.shape == b.masks.shape == (b.num_vss * TAU,)
    assert np.array_equal(b.virtual_to_real, np.repeat(np.arange(ns), np.diff(b.real_ptrs)))
    assert b.num_slices == int(np.count_nonzero(b.masks))
    per_vss = (b.masks.reshape(-1, TAU) != 0).sum(axis=1) if b.num_vss else np.zeros(0)
    assert np.all(per_vss >= 1)
    # only the last VSS of a slice set may be partly empty, and its zeros come last
    for s in range(ns):
        lo, hi = b.real_ptrs[s], b.real_ptrs[s + 1]
        if hi > lo:
            assert np.all(per_vss[lo:hi - 1] == TAU)
            tail = b.masks[lo * TAU:hi * TAU]
            k = int(np.count_nonzero(tail))
            assert np.all(tail[:k] != 0) and np.all(tail[k:] == 0)
    assert b.row_ids.dtype == np.int32 and b.masks.dtype == np.uint8
    assert b.real_ptrs.dtype == np.int32 and b.virtual_to_real.dtype == np.int32


def _int64_ids(g):
    return Graph(g.indptr, g.indices.astype(np.int64), None, directed=g.directed)


def _repeated_arcs():
    # a directed multigraph: 3 -> 9 three times, 9 -> 3 twice (one mask bit each)
    return Graph(np.array([0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 5, 5], np.int64),
                 np.array([9, 9, 9, 3, 3], np.int32), None, directed=True)


@pytest.mark.parametrize("name,make", GRAPHS + [
    ("int64-ids", lambda: _int64_ids(_random_graph(700, 5000, False, 12, hub=300))),
    ("repeated-arcs", _repeated_arcs),
    ("kron-11", lambda: __import__("distgraph.generators", fromlist=["kronecker"]).kronecker(11)),
], ids=[g[0] for g in GRAPHS] + ["int64-ids", "repeated-arcs", "kron-11"])
def test_numba_builder_equals_numpy_builder(name, make):
    g = make()
    a, b = build_bvss(g), build_bvss_numpy(g)
    for k in ("row_ids", "masks", "real_ptrs", "virtual_to_real"):
        assert getattr(a, k).dtype == getattr(b, k).dtype and np.array_equal(getattr(a, k), getattr(b, k)), k
    assert (a.n, a.m, a.num_slices) == (b.n, b.m, b.num_slices)


@pytest.mark.parametrize("builder", [build_bvss, build_bvss_numpy])
def test_too_many_vss_refused(builder, monkeypatch):
    import distgraph.formats.bvss as bv
    from distgraph.errors import GraphValueError

    g = _random_graph(2050, 6000, False, 4, hub=2049)
    nv = build_bvss(g).num_vss
    monkeypatch.setattr(bv, "MAX_VSS", nv - 1)
    with pytest.raises(GraphValueError, match=f"BVSS would need {nv} virtual slice sets; at most {nv - 1}"):
        builder(g)
    monkeypatch.setattr(bv, "MAX_VSS", nv)
    assert builder(g).num_vss == nv


def test_hand_example():
    # arcs 0->1, 1->0, 1->2, 2->1, 2->3, 3->2: one slice set; rows 0..3 with masks
    # row 0: from 1 (bit 1) = 2; row 1: from 0, 2 = 5; row 2: from 1, 3 = 10; row 3: from 2 = 4
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    b = build_bvss(g)
    assert b.num_vss == 1 and b.num_slices == 4
    assert b.row_ids[:4].tolist() == [0, 1, 2, 3]
    assert b.masks[:4].tolist() == [2, 5, 10, 4]
    assert b.nbytes == 128 * 4 + 128 + 2 * 4 + 4
    assert b.bytes_per_edge == pytest.approx(b.nbytes / 6)


def test_empty_graph_and_sizes():
    b = build_bvss(Graph.from_edges([], [], n=10))
    assert b.num_vss == 0 and b.num_slices == 0 and b.real_ptrs.tolist() == [0, 0, 0]
    g = _random_graph(5000, 40000, False, 9)
    b = build_bvss(g)
    s = b.summary()
    assert s["vss"] == b.num_vss and 1.0 <= s["arcs_per_slice"] <= 8.0
    # 4 bytes of row id + 1 byte of mask per slot: between 5/8 and ~6 bytes per arc here
    assert 5 / 8 <= b.bytes_per_edge < 8


def test_cache_roundtrip(tmp_path):
    g = _random_graph(300, 900, True, 5)
    b1, hit1 = load_or_build_bvss(g, cache_dir=tmp_path)
    b2, hit2 = load_or_build_bvss(g, cache_dir=tmp_path)
    assert (hit1, hit2) == (False, True)
    for k in ("row_ids", "masks", "real_ptrs", "virtual_to_real"):
        assert np.array_equal(getattr(b1, k), getattr(b2, k))
    assert graph_checksum(g) != graph_checksum(_random_graph(300, 900, True, 6))


# ------------------------------------------------------------- MMA layout emulation
def _popc(x):
    x = np.asarray(x, dtype=np.uint64)
    return np.array([bin(int(v)).count("1") for v in x.ravel()]).reshape(x.shape)


def _mma_m8n8k128(a_lanes, b_lanes):
    """D = popc(A AND B) with the fragment ownership of m8n8k128.b1 (gpu-stack.md):
    lane t holds A row t/4 word t%4, B column t/4 word t%4, D row t/4 cols 2(t%4), +1."""
    A = np.zeros((8, 4), np.uint64)
    B = np.zeros((8, 4), np.uint64)
    for t in range(32):
        A[t // 4, t % 4] = a_lanes[t]
        B[t // 4, t % 4] = b_lanes[t]
    D = np.zeros((8, 8), np.int64)
    for i in range(8):
        for j in range(8):
            D[i, j] = sum(_popc(A[i, w] & B[j, w]) for w in range(4))
    return np.array([[D[t // 4, 2 * (t % 4)], D[t // 4, 2 * (t % 4) + 1]] for t in range(32)])


def _frag_b(alpha):
    return [alpha if t % 9 == 0 else (alpha << 8) if t % 9 == 4 else 0 for t in range(32)]


@pytest.mark.parametrize("seed", range(4))
def test_mma_layout_gives_each_lane_its_own_products(seed):
    rng = np.random.default_rng(seed)
    masks = rng.integers(0, 256, size=(32, 4)).astype(np.uint64)      # lane t, slice c
    masks[rng.random((32, 4)) < 0.3] = 0
    words = masks[:, 0] | (masks[:, 1] << 8) | (masks[:, 2] << 16) | (masks[:, 3] << 24)
    alpha = int(rng.integers(1, 256))
    d01 = _mma_m8n8k128(words & 0xFFFF, _frag_b(alpha))
    d23 = _mma_m8n8k128(words >> 16, _frag_b(alpha))
    want = _popc(masks & np.uint64(alpha))
    assert np.array_equal(np.concatenate([d01, d23], axis=1), want)


# ------------------------------------------------- emulation of the kernel's queue logic
def _emulate_blest(b, n, s):
    """Level-synchronous numpy version of Alg. 2 over BVSS (products by popcount)."""
    level = np.full(n, -1, np.int32)
    level[s] = 0
    frontier = np.zeros(((n + 7) // 8) * 8, np.uint8)
    frontier[s] = 1
    queue = np.arange(b.real_ptrs[s // 8], b.real_ptrs[s // 8 + 1])
    lut = np.array([bin(i).count("1") for i in range(256)], np.int64)
    alpha_of = lambda fr: np.packbits(fr.reshape(-1, 8), axis=1, bitorder="little")[:, 0]
    l = 0
    while queue.size:
        l += 1
        alpha = alpha_of(frontier)
        pos = (queue[:, None] * TAU + np.arange(TAU)[None, :]).ravel()
        a = np.repeat(alpha[b.virtual_to_real[queue]], TAU)
        hit = lut[b.masks[pos] & a] > 0
        rows = np.unique(b.row_ids[pos][hit])
        new = rows[level[rows] < 0]
        level[new] = l
        frontier[:] = 0
        frontier[new] = 1
        sets = np.unique(new // 8)
        queue = np.concatenate([np.arange(b.real_ptrs[x], b.real_ptrs[x + 1]) for x in sets]) if sets.size \
            else np.zeros(0, np.int64)
    return level


@pytest.mark.parametrize("name,make", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_emulated_bfs_matches_scipy(name, make):
    g = make()
    b = build_bvss(g)
    rng = np.random.default_rng(0)
    for s in rng.integers(0, g.n, 5):
        assert np.array_equal(_emulate_blest(b, g.n, int(s)), _ref_levels(g, int(s)))
