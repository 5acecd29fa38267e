"""GPU k2-tree / CSR semiring products (kernels/k2tree_spmv.cu) against the CPU backend.

Tests without ``@pytest.mark.gpu`` run in CI, without a GPU: the replay of the host's
tile plan (``plan_tiles``) and of the single-vector leaves' cell packing with numpy,
using the kernels' offset formulas; the compact frontier and the memory plan; nvcc
compiles of every semiring x element type; the runner's argument checks and kernel
names. The others need a GPU.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from distgraph.backends.gpu.k2tree_spmv import plan_tiles
from distgraph.errors import InvalidArgumentError
from distgraph.formats.k2tree import K2Tree, morton_decode

POP = np.array([bin(i).count("1") for i in range(16)], np.int64)


def _block_first(tree, sigs, g0, n):
    """First children of nodes g0 .. g0+n-1 as the _blk kernels get them: per block
    of 256 aligned nodes, dir[b] + the exclusive scan of the fan-outs in the block
    (nodes of the block before g0 count, nodes from g0+n on do not)."""
    out = np.empty(n, np.int64)
    for blk in range(g0 // 256, (g0 + n - 1) // 256 + 1):
        g = np.arange(blk * 256, min(blk * 256 + 256, g0 + n))
        f = POP[sigs[g]]
        first = int(tree.directory[blk]) + np.cumsum(f) - f
        mine = g >= g0
        out[g[mine] - g0] = first[mine]
    return out


def _emulate(tree, tile, x, use_dir, bounded=True, per_step=1):
    """The launches of plan_tiles, each done by numpy as the kernels do it
    (use_dir: True for the directory, "block" for the block kernels, False for a scan)."""
    sigs = tree.signatures().astype(np.int64)
    first = 1 + np.concatenate([[0], np.cumsum(POP[sigs])])
    if use_dir == "block":
        assert tree.sample == 256
        steps = plan_tiles(tree, tile, bounded, per_step)
        for st in steps:
            assert np.array_equal(_block_first(tree, sigs, st[2], st[3]), first[st[2]:st[2] + st[3]])
    bufs = {tree.top_level: tree.top_codes.copy()}
    y = np.zeros(tree.shape[0])
    for st in plan_tiles(tree, tile, bounded, per_step):
        kind, level, g0, n, pos = st[:5]
        src = bufs[level][pos:pos + n]
        g = g0 + np.arange(n)
        s = sigs[g]
        if kind == "expand2":  # as distgraph_k2tree_expand2_blk: grandchildren at first[child] - gchild0
            out = np.zeros(st[6], np.uint64)
            for t in range(n):
                c = first[g[t]]
                for b in range(4):
                    if not (s[t] >> b) & 1:
                        continue
                    o = first[c] - st[5]
                    for b2 in range(4):
                        if (sigs[c] >> b2) & 1:
                            out[o] = (((int(src[t]) << 2) | b) << 2) | b2
                            o += 1
                    c += 1
            assert first[first[g0 + n]] - first[first[g0]] == st[6]
            bufs[level + 2] = out
        elif kind == "expand":
            off = first[g] - st[5] if use_dir else np.cumsum(POP[s]) - POP[s]
            out = np.zeros(st[6], np.uint64)
            for b in range(4):
                has = ((s >> b) & 1).astype(bool)
                out[off[has] + POP[s[has] & ((1 << b) - 1)]] = (src[has] << np.uint64(2)) | np.uint64(b)
            assert off[-1] + POP[s[-1]] == st[6]
            bufs[level + 1] = out
        else:
            leaf = first[g] if use_dir else st[5] + np.cumsum(POP[s]) - POP[s]
            for b in range(4):
                has = ((s >> b) & 1).astype(bool)
                lid = leaf[has] + POP[s[has] & ((1 << b) - 1)]
                lam = sigs[lid]
                r, c = morton_decode((src[has] << np.uint64(2)) | np.uint64(b))
                for q in range(4):
                    on = ((lam >> q) & 1).astype(bool)
                    np.add.at(y, 2 * r[on] + (q >> 1), x[2 * c[on] + (q & 1)])
    return y


@pytest.mark.parametrize("left", [False, True])
def test_leaves_multi_cell_packing_replayed_on_host(left):
    """distgraph_k2tree_leaves_k<K>'s packing: the leaves' signatures of a node as 16
    bits (bit 4b+q: cell q of child b), x at the lowest set bit loaded first, the
    other cells after, combined per row (column) of the 4 x 4 block."""
    rng = np.random.default_rng(9)
    D = rng.random((300, 200)) < 0.05
    D[:8] |= rng.random((8, 200)) < 0.6
    A = sp.csr_array(D)
    t = K2Tree.from_scipy(A, cached_frontier=True)
    sigs = tree_sigs = t.signatures().astype(np.int64)
    first = 1 + np.concatenate([[0], np.cumsum(POP[tree_sigs])])
    L = t.levels
    gL, gE = int(t.level_start[L - 2]), int(t.level_start[L - 1])
    M = (A.T if left else A).astype(float)
    x = rng.standard_normal(M.shape[1])
    y = np.zeros(M.shape[0])
    for g in range(gL, gE):
        vis, lam, leaf = sigs[g], 0, first[g]
        for b in range(4):
            if (vis >> b) & 1:
                lam |= int(sigs[leaf]) << (4 * b)
                leaf += 1
        code = int(t.frontier[g - gL])
        R = int(morton_decode(np.array([code]))[0][0]) * 4
        C = int(morton_decode(np.array([code]))[1][0]) * 4
        in0, out0 = (R, C) if left else (C, R)
        c1 = (lam & -lam).bit_length() - 1  # __ffs(lam) - 1
        b1, q1 = c1 >> 2, c1 & 3
        v0 = x[in0 + (2 * (b1 >> 1) + (q1 >> 1) if left else 2 * (b1 & 1) + (q1 & 1))]
        acc = {}
        for b in range(4):
            for q in range(4):
                if (lam >> (4 * b + q)) & 1:
                    dr, dc = 2 * (b >> 1) + (q >> 1), 2 * (b & 1) + (q & 1)
                    o, i = (dc, dr) if left else (dr, dc)
                    acc[o] = acc.get(o, 0.0) + (v0 if 4 * b + q == c1 else x[in0 + i])
        for o, v in acc.items():
            y[out0 + o] += v
    np.testing.assert_allclose(y, M @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tile", [4, 7, 64, 1 << 20])
@pytest.mark.parametrize("use_dir", [True, False, "block"])
@pytest.mark.parametrize("bounded", [True, False])
@pytest.mark.parametrize("per_step", [1, 2])
def test_tile_plan_replayed_on_host(tile, use_dir, bounded, per_step):
    from distgraph.backends.gpu.k2tree_spmv import buffer_levels

    A = sp.random(600, 450, density=0.01, random_state=4, format="csr")
    t = K2Tree.from_scipy(A, top_nodes=16)
    if per_step == 2 and tile < 16:
        with pytest.raises(InvalidArgumentError, match="tile must be >= 16"):
            plan_tiles(t, tile, bounded, per_step)
        tile = 16
    x = np.random.default_rng(1).standard_normal(450)
    y = _emulate(t, tile, x, use_dir, bounded, per_step)
    np.testing.assert_allclose(y, sp.csr_array(A != 0).astype(float) @ x, rtol=1e-12, atol=1e-12)
    steps = plan_tiles(t, tile, bounded, per_step)
    assert all(s[6] <= tile for s in steps if s[0] in ("expand", "expand2"))
    written = {s[1] + (2 if s[0] == "expand2" else 1) for s in steps if s[0] != "leaves"}
    assert written == set(buffer_levels(t, per_step))
    last = t.levels - 2
    assert sum(s[3] for s in steps if s[0] == "leaves") == t.level_sizes()[last]
    if tile == 1 << 20:  # every level fits: one launch per step either way
        assert len(steps) == len(buffer_levels(t, per_step)) + 1


# --------------------------------------------------------------------- GPU
SEMIRINGS = ["plus_times", "lor_land", "min_plus"]


def _x(k, B, sr, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = (k,) if B is None else (k, B)
    if sr == "lor_land":
        return rng.random(shape) < 0.3
    if sr == "min_plus":
        x = rng.integers(0, 20, shape).astype(dtype)
        x[rng.random(shape) < 0.3] = np.inf
        return x
    return rng.standard_normal(shape).astype(dtype)


def _graphs():
    """Generated graphs, and two real ones when ../shared/data is there."""
    from conftest import DATA

    from distgraph.generators import from_spec
    from distgraph.graph.readers import read_graph

    graphs = {"rect": sp.random(700, 300, density=0.02, random_state=2, format="csr"),
              "kron10": from_spec("kron:10"), "grid": from_spec("grid:11")}
    for name in ("wiki-Vote.txt.gz", "power.mtx.gz"):
        if (DATA / name).is_file():
            graphs[name] = read_graph(DATA / name)
    return graphs


@pytest.mark.gpu
def test_gpu_matches_cpu_every_configuration():
    from distgraph.algorithms.spmv import SpMVPlan

    for name, A in _graphs().items():
        cpu = SpMVPlan(A, format="csr", backend="cpu")
        configs = [dict(format="k2tree"), dict(format="k2tree", offsets="scan"), dict(format="k2tree", tile=64),
                   dict(format="k2tree", tile=64, offsets="scan"), dict(format="k2tree", cached_frontier=True),
                   dict(format="k2tree", sample=64), dict(format="csr")]
        for cfg in configs:
            gpu = SpMVPlan(A, backend="gpu", **cfg)
            for sr in SEMIRINGS:
                for left in (False, True):
                    for B in (None, 5):
                        for dtype in ((np.float64, np.float32) if sr != "lor_land" else (np.float64,)):
                            k = cpu.shape[0] if left else cpu.shape[1]
                            x = _x(k, B, sr, dtype, 3)
                            y = gpu.multiply(x, sr, left)
                            ref = cpu.multiply(x, sr, left)
                            assert y.dtype == ref.dtype and y.shape == ref.shape
                            if sr == "plus_times":
                                tol = 1e-12 if dtype == np.float64 else 1e-4
                                np.testing.assert_allclose(y, ref, rtol=tol, atol=tol, err_msg=f"{name} {cfg} {left}")
                            else:
                                assert np.array_equal(y, ref), (name, cfg, sr, left, B)


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [4, 7, 16, 300, 1 << 20])
def test_gpu_block_and_thread_kernels_every_tile(tile):
    """The block kernels (default; single vectors with the K-chunk leaves, 1, 2, 4 (default)
    or 8 chunks of 256 nodes per block, ``prefetch=False``) and the one-thread-per-node
    kernels give the scipy product for every tile (bounded and greedy plans), direction,
    semiring and batch width; so do the defaults (``prefetch="auto"``: the prefetching
    leaves with lanes combined, tree-only and k2+F), which must run those leaves."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    rng = np.random.default_rng(8)
    D = rng.random((900, 700)) < 0.006
    D[:30] |= rng.random((30, 700)) < 0.5  # dense rows and columns: colliding updates
    D[:, 600:630] |= rng.random((900, 30)) < 0.5
    A = sp.csr_array(D)
    P = A.astype(np.float64)
    t = K2Tree.from_scipy(A, top_nodes=16)
    for kernels, cached, compact, per_step, K, pre in (
            ("block", False, True, 1, 4, False), ("block", False, True, 2, 4, False),
            ("thread", False, True, 1, 4, False), ("block", True, True, 1, 4, False),
            ("block", True, False, 1, 4, False), ("thread", True, True, 1, 4, False),
            ("auto", True, True, 1, 4, False), ("block", False, True, 1, 1, False),
            ("block", False, True, 1, 2, False), ("block", False, True, 1, 8, False),
            ("block", True, True, 1, 1, False), ("block", True, False, 1, 2, False),
            ("block", True, True, 1, 8, False), ("auto", False, True, 1, 4, "auto"),
            ("auto", True, True, 1, 4, "auto")):
        if (cached and tile != 1 << 20) or (per_step == 2 and tile < 16):
            continue
        if K != 4 and tile < 16:  # the default K runs at every tile; keep the GPU run short
            continue
        kw = {} if K == 4 else dict(chunks_per_block=K)  # 4: the default
        if pre is False:  # the K-chunk leaves (the default is "auto")
            kw["prefetch"] = False
        dm = DeviceMatrix(t, tile=tile, cached_frontier=cached, kernels=kernels, bounded_tiles=tile != 7,
                          compact_frontier=compact, levels_per_step=per_step, **kw)
        assert dm.block == (kernels != "thread") and dm.chunks_per_block == K
        assert dm.compact == (cached and compact and kernels != "thread")
        assert dm.prefetch == dm.lane_combine == (pre == "auto")
        for B in (1, 3, 128):
            for left in (False, True):
                M = P.T if left else P
                k = M.shape[1]
                x = _x(k, B, "plus_times", np.float64, 11)
                np.testing.assert_allclose(dm.multiply(x, semiring.plus_times, left), M @ x, rtol=1e-12, atol=1e-12)
                want = ("distgraph_k2tree_leaves" if kernels == "thread" else "distgraph_k2tree_leaves_blk"
                        if B > 1 or K == 1 else f"distgraph_k2tree_leaves_k{K}" + ("_pre_lanes" if pre else ""))
                assert dm.info["leaves"] == want, (kernels, cached, K, pre, B)
                xb = _x(k, B, "lor_land", np.float64, 12)
                assert np.array_equal(dm.multiply(xb, semiring.lor_land, left), (M @ xb.astype(float)) > 0)
                xm = _x(k, B, "min_plus", np.float64, 13)
                C = sp.coo_array(M)
                ref = np.full((M.shape[0], B), np.inf)
                np.minimum.at(ref, C.row, xm[C.col] + 1)
                assert np.array_equal(dm.multiply(xm, semiring.min_plus, left), ref)


def _min_plus_ref(M, xm):
    C = sp.coo_array(M)
    ref = np.full((M.shape[0],) + xm.shape[1:], np.inf)
    np.minimum.at(ref, C.row, xm[C.col] + 1)
    return ref


@pytest.mark.gpu
@pytest.mark.parametrize("K", [2, 4, 8])
def test_gpu_aggregated_leaves_match_reference_and_default(K):
    """aggregate=True (single-vector leaves with K chunks, updates of a block combined in
    a shared-memory table first): on a matrix with dense rows and columns (updates that
    collide in every block) and on kron:12 (hub rows), tree-only (two tiles) and k2+F
    (compact and 8-byte codes), with the default table and with 8 slots per chunk (most
    keys then find no slot within the probes and update y directly), every semiring,
    right and left, single vectors and batches (which keep the batch kernel) give the
    reference product: scipy's to 1e-12 (float64) or 1e-4 (float32; the atomics land in
    another order), the default path's and the reference's exactly for lor_land, min_plus
    (float64 and float32) and int64 plus_times. A CUDA graph of a product replays it."""
    import cupy as cp

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix
    from distgraph.generators import from_spec

    rng = np.random.default_rng(41)
    D = rng.random((900, 700)) < 0.006
    D[:30] |= rng.random((30, 700)) < 0.5
    D[:, 600:630] |= rng.random((900, 30)) < 0.5
    g = from_spec("kron:12")
    mats = {"dense-rows": sp.csr_array(D),
            "kron12": sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))}
    for name, A in mats.items():
        P = sp.csr_array(A != 0).astype(np.float64)
        t = K2Tree.from_scipy(A, top_nodes=16)
        assert t.level_sizes()[t.levels - 2] > 256 * K  # several blocks
        for cached, compact, tile in ((True, True, 1 << 20), (True, False, 1 << 20), (False, True, 1 << 20),
                                      (False, True, 512)):
            base = DeviceMatrix(t, tile=tile, cached_frontier=cached, compact_frontier=compact, chunks_per_block=K,
                                prefetch=False)  # the K-chunk leaves
            for slots in (256, 8):
                dm = DeviceMatrix(t, tile=tile, cached_frontier=cached, compact_frontier=compact,
                                  chunks_per_block=K, aggregate=True, aggregate_slots=slots)
                assert dm.aggregate and dm.block and dm.chunks_per_block == K
                if tile == 512:
                    assert sum(st[0] == "leaves" for st in dm.steps) > 1
                msg = (name, cached, compact, tile, slots)
                for B in (1, 3):
                    for left in (False, True):
                        M = P.T if left else P
                        k = M.shape[1]
                        x = _x(k, B, "plus_times", np.float64, 42)
                        np.testing.assert_allclose(dm.multiply(x, semiring.plus_times, left), M @ x,
                                                   rtol=1e-12, atol=1e-12, err_msg=str(msg))
                        x32 = x.astype(np.float32)
                        np.testing.assert_allclose(dm.multiply(x32, semiring.plus_times, left),
                                                   M @ x32.astype(np.float64), rtol=1e-4, atol=1e-4, err_msg=str(msg))
                        xi = rng.integers(-50, 50, (k, B)).astype(np.int64)
                        yi = dm.multiply(xi, semiring.plus_times, left)
                        assert np.array_equal(yi, M.astype(np.int64) @ xi), msg
                        assert np.array_equal(yi, base.multiply(xi, semiring.plus_times, left)), msg
                        xb = _x(k, B, "lor_land", np.float64, 43)
                        yb = dm.multiply(xb, semiring.lor_land, left)
                        assert np.array_equal(yb, (M @ xb.astype(float)) > 0), msg
                        assert np.array_equal(yb, base.multiply(xb, semiring.lor_land, left)), msg
                        for dtype in (np.float64, np.float32):
                            xm = _x(k, B, "min_plus", dtype, 44)
                            ym = dm.multiply(xm, semiring.min_plus, left)
                            assert np.array_equal(ym, _min_plus_ref(M, xm.astype(np.float64))), msg
                            assert np.array_equal(ym, base.multiply(xm, semiring.min_plus, left)), msg
        dm = DeviceMatrix(t, cached_frontier=True, chunks_per_block=K, aggregate=True)
        xd = cp.asarray(_x(A.shape[1], 1, "plus_times", np.float64, 45))
        y = cp.empty((A.shape[0], 1))
        gr = dm.graph(xd, y, semiring.plus_times, False)
        assert gr is not None
        y.fill(7.0)
        gr.launch()
        np.testing.assert_allclose(cp.asnumpy(y), P @ cp.asnumpy(xd), rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_gpu_64bit_directory_same_products():
    """A tree of 2**32 nodes or more keeps an int64 directory (kron:24: about 4.7e9
    nodes); the runner then compiles the kernels with a 64-bit dir_t. Forced here on a
    small tree, every kernel family (tree-only leaves with 4 and 1 chunks per block, two
    levels per launch, thread kernels, scan offsets, the cached frontier compact and
    full, batches; the K-chunk leaves with ``prefetch=False``, and the defaults, the
    prefetching leaves with lanes combined) gives the products of the 32-bit directory."""
    import dataclasses

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    rng = np.random.default_rng(21)
    D = rng.random((700, 500)) < 0.01
    D[:10] |= rng.random((10, 500)) < 0.5
    A = sp.csr_array(D)
    t = K2Tree.from_scipy(A, top_nodes=16)
    t64 = dataclasses.replace(t, directory=t.directory.astype(np.int64))
    for kw in (dict(tile=64, prefetch=False), dict(tile=64, chunks_per_block=1),
               dict(tile=64, levels_per_step=2, prefetch=False), dict(tile=64, kernels="thread"),
               dict(tile=64, offsets="scan"), dict(cached_frontier=True, prefetch=False),
               dict(cached_frontier=True, compact_frontier=False, chunks_per_block=1), dict(tile=64),
               dict(cached_frontier=True)):
        d32, d64 = DeviceMatrix(t, **kw), DeviceMatrix(t64, **kw)
        assert not d32.dir64 and d64.dir64 and d64.arrays["dir"].dtype == np.uint64
        for B in (1, 3):
            for left in (False, True):
                k = A.shape[0] if left else A.shape[1]
                x = _x(k, B, "plus_times", np.float64, 31)
                np.testing.assert_allclose(d64.multiply(x, semiring.plus_times, left),
                                           d32.multiply(x, semiring.plus_times, left), rtol=1e-12, atol=1e-12)
                for sr in ("lor_land", "min_plus"):
                    xs = _x(k, B, sr, np.float64, 32)
                    S = getattr(semiring, sr)
                    assert np.array_equal(d64.multiply(xs, S, left), d32.multiply(xs, S, left)), (kw, sr, B, left)


@pytest.mark.gpu
def test_gpu_csr_kernels_every_width():
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    rng = np.random.default_rng(3)
    D = rng.random((900, 700)) < 0.01
    D[:5] |= rng.random((5, 700)) < 0.7  # long rows: all lanes of a warp busy
    D[100:110] = False  # empty rows
    A = sp.csr_array(D)
    P = A.astype(np.float64)
    for width in (None, 1, 2, 8, 32):
        dm = DeviceMatrix(csr=(A.indptr, A.indices), csr_width=width)
        x = _x(700, 1, "plus_times", np.float64, 4)
        np.testing.assert_allclose(dm.multiply(x, semiring.plus_times), P @ x, rtol=1e-12, atol=1e-12)
        xb = _x(700, 1, "lor_land", np.float64, 5)
        assert np.array_equal(dm.multiply(xb, semiring.lor_land), (P @ xb.astype(float)) > 0)
        xm = _x(700, 1, "min_plus", np.float64, 6)
        C = sp.coo_array(P)
        ref = np.full((900, 1), np.inf)
        np.minimum.at(ref, C.row, xm[C.col] + 1)
        assert np.array_equal(dm.multiply(xm, semiring.min_plus), ref)


@pytest.mark.gpu
def test_gpu_tree_build_matches_host():
    from distgraph.backends.gpu.k2tree_spmv import tree_from_csr
    from distgraph.generators import from_spec

    g = from_spec("kron:12")
    a = K2Tree.from_graph(g, cached_frontier=True)
    b = tree_from_csr(g.indptr, g.indices, cached_frontier=True)
    for f in ("sig", "level_start", "directory", "top_codes", "frontier"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


@pytest.mark.gpu
def test_gpu_pagerank_matches_cpu_on_real_graphs():
    from conftest import DATA

    from distgraph.algorithms.pagerank import pagerank
    from distgraph.graph.readers import read_graph

    names = [n for n in ("wiki-Vote.txt.gz", "road-NY.gr.xz") if (DATA / n).is_file()]
    if not names:
        pytest.skip("no real graphs (set DISTGRAPH_DATA)")
    for name in names:
        g = read_graph(DATA / name)
        cpu = pagerank(g, format="csr", backend="cpu", tol=1e-10)
        for fmt, kw in (("k2tree", {}), ("csr", {})):
            gpu = pagerank(g, format=fmt, backend="gpu", tol=1e-10, **kw)
            assert np.abs(gpu - cpu).max() < 1e-9, (name, fmt)


@pytest.mark.gpu
def test_gpu_int64_and_graph_capture():
    import cupy as cp

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    A = sp.random(500, 500, density=0.02, random_state=5, format="csr")
    P = sp.csr_array(A != 0).astype(np.int64)
    t = K2Tree.from_scipy(A, top_nodes=16)
    x = np.arange(500, dtype=np.int64).reshape(500, 1)
    for cached in (False, True):
        dm = DeviceMatrix(t, tile=32, cached_frontier=cached)
        assert np.array_equal(dm.multiply(x, semiring.plus_times), P @ x)
        assert dm.info["leaves"] == "distgraph_k2tree_leaves_k4_pre_lanes"  # the default
        xd = cp.asarray(x.astype(np.float64))
        y = cp.empty((500, 1))
        g = dm.graph(xd, y, semiring.plus_times, False)
        assert g is not None
        g.launch()
        np.testing.assert_allclose(cp.asnumpy(y), P @ x.astype(np.float64))
        nb = dm.nbytes()
        assert nb["matrix"] >= t.sig.nbytes + t.directory.nbytes
        assert (nb["scratch"] == 0) == cached


@pytest.mark.gpu
def test_gpu_pagerank_and_reachability():
    import networkx as nx

    from distgraph import Graph
    from distgraph.algorithms.pagerank import pagerank
    from distgraph.algorithms.spmv import reachability

    g = Graph.from_networkx(nx.gnp_random_graph(2000, 0.002, directed=True, seed=4))
    ref = nx.pagerank(g.to_networkx(), weight=None)
    ref = np.array([ref[v] for v in range(g.n)])
    for fmt in ("k2tree", "csr"):
        assert np.abs(pagerank(g, format=fmt, backend="gpu") - ref).max() < 1e-8
    src = [0, 7, 99]
    assert np.array_equal(reachability(g, src, backend="gpu"), reachability(g, src, backend="cpu", format="csr"))


@pytest.mark.parametrize("spec", ["kron:12", "rect"])
def test_split_frontier_rebuilds_the_codes(spec):
    from distgraph.backends.gpu.k2tree_spmv import BLOCK, memory_plan, split_frontier
    from distgraph.generators import from_spec

    A = sp.random(3000, 700, density=0.003, random_state=7, format="csr") if spec == "rect" else from_spec(spec)
    t = K2Tree.from_scipy(A) if spec == "rect" else K2Tree.from_graph(A)
    base, delta = split_frontier(t)
    g0 = int(t.level_start[t.levels - 2])
    g = g0 + np.arange(t.frontier.shape[0])
    assert delta.dtype == np.uint32 and base.shape[0] == (g[-1] // BLOCK - g0 // BLOCK + 1)
    assert np.array_equal(base[g // BLOCK - g0 // BLOCK] + delta.astype(np.uint64), t.frontier)
    plan = memory_plan(t, cached_frontier=True, compact_frontier=True)
    assert plan.items["k2tree.cached frontier"] == delta.nbytes + base.nbytes


def test_split_frontier_kept_for_its_frontier_only():
    """split_frontier keeps the last frontier's split while that frontier lives: a second
    call on the same tree returns it, the frontier's death drops it; an older frontier
    dying does not drop a newer one's (its finalizer used to clear whatever was kept)."""
    import gc

    from distgraph.backends.gpu import k2tree_spmv as ks

    rng = np.random.default_rng(5)

    def tree():
        return K2Tree.from_coo(rng.integers(0, 2000, 5000), rng.integers(0, 2000, 5000), (2000, 2000))

    a, b = tree(), tree()
    ks.split_frontier(a)
    sb = ks.split_frontier(b)
    assert ks.split_frontier(b) is sb
    del a
    gc.collect()
    assert ks.split_frontier(b) is sb  # still kept: a's frontier was not b's
    del b
    gc.collect()
    assert ks._SPLIT == [None, None, None]


def test_memory_plan_before_allocation():
    from distgraph.backends.gpu.k2tree_spmv import memory_plan
    from distgraph.errors import DeviceMemoryError

    A = sp.random(2000, 2000, density=0.003, random_state=6, format="csr")
    t = K2Tree.from_scipy(A, top_nodes=64)
    sizes = t.level_sizes()
    plan = memory_plan(t, tile=256, offsets="scan", vectors=2 * 2000 * 4)
    bufs = sum(min(256, int(sizes[d])) for d in range(t.top_level + 1, t.levels - 1))
    assert plan.items["tile buffers"] == 8 * bufs
    assert plan.items["k2tree.signatures"] == t.sig.nbytes + 4
    assert plan.total == sum(plan.items.values())
    f = memory_plan(t, cached_frontier=True)
    assert f.items["k2tree.cached frontier"] == 8 * int(sizes[t.levels - 2]) and "tile buffers" not in f.items
    # the scratch shrinks with the tile and is bounded by the tile times the depth
    assert memory_plan(t, tile=16).items["tile buffers"] <= 8 * 16 * t.levels
    with pytest.raises(DeviceMemoryError, match="k2-tree SpMV needs"):
        plan.check(free=1000)


@pytest.mark.parametrize("semiring_code,value_t,dir_t", [(1, "unsigned char", None), (2, "double", None),
                                                         (0, "long long", None), (0, "float", "unsigned long long"),
                                                         (2, "double", "unsigned long long")])
def test_kernel_variants_compile_sm90(semiring_code, value_t, dir_t, tmp_path):
    """Each semiring / element type the runner compiles (test_kernels_compile builds the
    defaults), and the 64-bit directory of trees of 2**32 nodes or more, compiles for
    sm_90 with nvcc, without a GPU; skipped without nvcc."""
    import os
    import shutil
    import subprocess
    from pathlib import Path

    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc is None:
        pytest.skip("nvcc not found")
    src = Path(__file__).resolve().parent.parent / "kernels" / "k2tree_spmv.cu"
    extra = [f"-DDIR_T={dir_t}"] if dir_t else []
    r = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-cubin", f"-DSEMIRING={semiring_code}",
                        f"-DVALUE_T={value_t}", *extra, str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_aggregate_refused_past_32bit_indices_before_cupy():
    """The table of aggregate=True keys the indices of y as uint32 (2**32 - 1: the empty
    slot): a matrix with 2**32 - 1 rows or columns or more is refused, before CuPy."""
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    t = K2Tree.from_coo([0, 5], [1, 2**32 - 1], (8, 2**32))  # column 2**32 - 1: the empty key
    with pytest.raises(InvalidArgumentError, match=r"fewer than 2\*\*32 - 1 rows and columns"):
        DeviceMatrix(t, cached_frontier=True, aggregate=True)


@pytest.mark.parametrize("semiring_code,value_t", [(2, "double"), (1, "unsigned char")])
def test_aggregated_leaves_compile_with_a_small_table(semiring_code, value_t, tmp_path):
    """The aggregated leaves with 8 slots per chunk (aggregate_slots=8, as the GPU test
    forces the fallback to direct updates) compile for sm_90; skipped without nvcc."""
    import os
    import shutil
    import subprocess
    from pathlib import Path

    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc is None:
        pytest.skip("nvcc not found")
    src = Path(__file__).resolve().parent.parent / "kernels" / "k2tree_spmv.cu"
    r = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-cubin", f"-DSEMIRING={semiring_code}",
                        f"-DVALUE_T={value_t}", "-DDG_K2_AGG_SLOTS=8", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_runner_kernel_names_exist_and_options_validated_without_gpu():
    """Every kernel the host runner asks for is an ``extern "C" __global__`` of
    kernels/k2tree_spmv.cu (a removed kernel cannot stay referenced), and a kernel
    family that does not exist (``"warp"``, ``"hash"``, ``"band"``: measured and removed) is
    refused before CuPy is needed, naming the choices."""
    import inspect
    import re

    from distgraph._kernels import kernels_dir
    from distgraph.backends.gpu import k2tree_spmv
    from distgraph.backends.gpu.k2tree_spmv import KERNELS, DeviceMatrix

    from pathlib import Path

    src = (Path(kernels_dir()) / "k2tree_spmv.cu").read_text()
    defined = set(re.findall(r'extern "C" __global__ void (\w+)\(', src))
    used = set(re.findall(r'"(distgraph_(?:k2tree|csr)_\w+)"', inspect.getsource(k2tree_spmv)))
    assert used and used <= defined, sorted(used - defined)
    assert "warp" not in KERNELS and "distgraph_k2tree_leaves_warp" not in defined
    t = K2Tree.from_coo([0, 1], [1, 0], (4, 4))
    for removed in ("hash", "band"):
        assert removed not in KERNELS and f"distgraph_k2tree_leaves_{removed}" not in defined
    for removed in ("warp", "hash", "band"):
        msg = f"kernels must be one of auto, block, thread; got '{removed}'"
        with pytest.raises(InvalidArgumentError, match=msg):
            DeviceMatrix(t, kernels=removed)


@pytest.mark.parametrize("kw, msg", [
    (dict(tile=3), "tile must be an integer >= 4 .*; got 3"),
    (dict(tile=0), "tile must be an integer >= 4"),
    (dict(tile=2.0**20), "tile must be an integer >= 4"),
    (dict(offsets="dir"), "offsets must be 'directory' or 'scan'; got 'dir'"),
    (dict(csr=(np.array([0, 0]), np.zeros(0, np.int32))), "exactly one of tree= and csr="),
    (dict(kernels="block", offsets="scan"), "kernels='block' needs directory offsets and sample=256"),
    (dict(chunks_per_block=3), r"chunks_per_block must be one of \(1, 2, 4, 8\); got 3"),
    (dict(chunks_per_block=True), r"chunks_per_block must be one of \(1, 2, 4, 8\); got True"),
    (dict(chunks_per_block=4.0), r"chunks_per_block must be one of \(1, 2, 4, 8\); got 4.0"),
    (dict(aggregate=1), "aggregate must be True or False; got 1"),
    (dict(aggregate_slots=512), r"aggregate_slots must be one of \(8, 16, 32, 64, 128, 256\); got 512"),
    (dict(aggregate_slots=True), r"aggregate_slots must be one of .*; got True"),
    (dict(aggregate=True, chunks_per_block=1),
     r"aggregate=True needs the block kernels .*chunks_per_block in \(2, 4, 8\)"),
    (dict(aggregate=True, kernels="thread"), r"aggregate=True needs the block kernels"),
    (dict(aggregate=True, offsets="scan"), r"aggregate=True needs the block kernels"),
])
def test_device_matrix_arguments_refused_before_cupy(kw, msg):
    """A tile below 4 codes cannot hold one node's children: the kernels would write past
    the buffer on the GPU; it is refused (plan_tiles too), as are unknown offsets (they
    used to select scan offsets silently), before CuPy is needed."""
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    t = K2Tree.from_coo([0, 1, 2, 3], [1, 0, 3, 2], (4, 4))
    with pytest.raises(InvalidArgumentError, match=msg):
        DeviceMatrix(t, **kw)
    if "tile" in kw:
        with pytest.raises(InvalidArgumentError, match=msg):
            plan_tiles(t, kw["tile"])


def test_benchmark_merge_keeps_old_numbers_of_a_failed_rerun(tmp_path, bench_script):
    """benchmarks/gpu_k2tree_bench.py --merge: a graph whose new run failed (an error, no
    times) keeps its old entry (it used to be replaced by the error, the old numbers lost),
    the failure noted under failed_later; configurations the new run did not redo go to
    'earlier' with only their own cuSPARSE ratios (a prefix test also took k2F_k1_right
    for a ratio of k2F)."""
    import json
    import sys

    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    sys.modules.pop("_common", None)
    old = {"commit": "A", "date": "d1", "graphs": [
        {"graph": "kron:24", "time_ms": {"k2F": {"right": 1.0}}, "ratio_time_vs_cusparse": {"k2F_right": 2.0}},
        {"graph": "kron:20", "time_ms": {"cusparse": {"right": 0.3}, "k2F": {"right": 0.6}, "k2F_k1": {"right": 0.7}},
         "ratio_time_vs_cusparse": {"k2F_right": 2.0, "k2F_k1_right": 2.3}}]}
    new = {"commit": "B", "date": "d2", "graphs": [
        {"graph": "kron:24", "error": "DeviceMemoryError: does not fit"},
        {"graph": "kron:20", "time_ms": {"cusparse": {"right": 0.31}, "k2F_k1": {"right": 0.72}},
         "ratio_time_vs_cusparse": {"k2F_k1_right": 2.32}}]}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    kb.merge(str(tmp_path / "new.json"), str(tmp_path / "old.json"))
    out = {g["graph"]: g for g in json.loads((tmp_path / "old.json").read_text())["graphs"]}
    k24 = out["kron:24"]
    assert k24["time_ms"] == {"k2F": {"right": 1.0}} and k24["commit"] == "A"
    assert k24["failed_later"] == {"commit": "B", "date": "d2", "error": "DeviceMemoryError: does not fit"}
    k20 = out["kron:20"]
    assert k20["commit"] == "B" and k20["time_ms"]["k2F_k1"] == {"right": 0.72}
    assert k20["earlier"] == [{"commit": "A", "date": "d1", "time_ms": {"k2F": {"right": 0.6}},
                               "cusparse_ms": {"right": 0.3}, "ratio_time_vs_cusparse": {"k2F_right": 2.0}}]


def test_benchmark_merge_keeps_products_not_timed_again(tmp_path, bench_script):
    """A configuration timed again with fewer products (--products right left) keeps its
    earlier batch time (and mode, and ratio) under 'earlier', not the right one it replaced."""
    import json
    import sys

    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    sys.modules.pop("_common", None)
    old = {"commit": "A", "date": "d1", "graphs": [
        {"graph": "kron:21", "time_ms": {"cusparse": {"right": 0.5, "batch": 0.8},
                                         "k2F": {"right": 1.2, "right_mode": "cuda_graph", "batch": 0.5,
                                                 "batch_mode": "cuda_graph", "launches_per_product": 1}},
         "ratio_time_vs_cusparse": {"k2F_right": 2.4, "k2F_batch": 0.62}}]}
    new = {"commit": "B", "date": "d2", "graphs": [
        {"graph": "kron:21", "time_ms": {"cusparse": {"right": 0.51}, "k2F": {"right": 1.25, "launches_per_product": 1},
                                         "k2F_agg": {"right": 1.0}},
         "ratio_time_vs_cusparse": {"k2F_right": 2.45, "k2F_agg_right": 1.96}}]}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    kb.merge(str(tmp_path / "new.json"), str(tmp_path / "old.json"))
    g = json.loads((tmp_path / "old.json").read_text())["graphs"][0]
    assert g["commit"] == "B" and g["time_ms"]["k2F"] == {"right": 1.25, "launches_per_product": 1}
    assert g["earlier"] == [{"commit": "A", "date": "d1",
                             "time_ms": {"k2F": {"batch": 0.5, "batch_mode": "cuda_graph"}},
                             "cusparse_ms": {"right": 0.5, "batch": 0.8},
                             "ratio_time_vs_cusparse": {"k2F_batch": 0.62}}]


@pytest.mark.parametrize("left", [False, True])
def test_agg_count_replays_the_leaves_updates(left, bench_script):
    """benchmarks/k2tree_agg_count.py counts the leaves' updates of y (one per non-empty
    row, or column, of each node of level L-2) and the distinct indices per group of nodes
    (warp step, chunk, block of K aligned chunks): the same counts as a walk over the
    signatures of levels L-2 and L-1, on a matrix with dense rows (repeated indices) whose
    level L-2 does not start on a chunk boundary."""
    import sys

    kb = bench_script("k2tree_agg_count.py", "k2tree_agg_count")
    sys.modules.pop("_common", None)
    rng = np.random.default_rng(5)
    D = rng.random((600, 500)) < 0.01
    D[:12] |= rng.random((12, 500)) < 0.4
    t = K2Tree.from_scipy(sp.csr_array(D), cached_frontier=True)
    sigs = t.signatures().astype(np.int64)
    first = 1 + np.concatenate([[0], np.cumsum(POP[sigs])])
    L = t.levels
    gL, gE = int(t.level_start[L - 2]), int(t.level_start[L - 1])
    assert gL % 256
    upd = []  # (global node id, index of y)
    for g in range(gL, gE):
        R, C = (int(v[0]) * 4 for v in morton_decode(np.array([t.frontier[g - gL]])))
        out, leaf = set(), first[g]
        for b in range(4):
            if (sigs[g] >> b) & 1:
                for q in range(4):
                    if (sigs[leaf] >> q) & 1:
                        dr, dc = 2 * (b >> 1) + (q >> 1), 2 * (b & 1) + (q & 1)
                        out.add(C + dc if left else R + dr)
                leaf += 1
        upd += [(g, o) for o in out]
    got = kb.count(t, left)
    assert got["updates"] == len(upd)
    groups = {"warp_step_32": lambda g: (g // 256, (g % 256) // 32), "chunk_256": lambda g: g // 256}
    for K in (2, 4, 8):
        groups[f"block_k{K}"] = lambda g, K=K: (g // 256 - gL // 256) // K
    for name, grp in groups.items():
        assert got[name]["distinct"] == len({(grp(g), o) for g, o in upd}), name


def test_benchmark_refuses_unknown_configurations(capsys, bench_script):
    """benchmarks/gpu_k2tree_bench.py --configs / --big-configs: a misspelt name is an error
    naming it (it used to be skipped without a word, its rows silently missing)."""
    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    for args in (["--configs", "k2F", "k2F_kk"], ["--big-configs", "k2f"]):
        with pytest.raises(SystemExit) as e:
            kb.main(args)
        assert e.value.code == 2
        assert "unknown configuration(s) " + args[-1] in capsys.readouterr().err
