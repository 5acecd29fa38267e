"""The prefetching single-vector leaves (``distgraph_k2tree_leaves_k<K>_pre``,
``DeviceMatrix(prefetch=True)``; ``_k4_pre_lanes`` with ``lane_combine=True``) of
kernels/k2tree_spmv.cu.

Without a GPU: the kernel's arithmetic replayed with numpy (the unshuffle of a code into
row and column, the K fan-out scans packed in the bytes of one word with the warps'
totals summed in 16-bit fields, the cells of a block regrouped by row or column, the
inputs read 4 at a time with the guard at the end of ``x``) against scipy, on matrices
whose chunks fill the packed bytes (fan-out 4 everywhere) and whose sides are not
multiples of 4; the lane runs' segmented scan; the option checks; the choice of leaves
(``prefetch="auto"``, ``lane_combine="auto"``, the defaults: :func:`leaves_options`,
:func:`leaves_kernel`, and the launches of ``DeviceMatrix.run`` with a stand-in for CuPy).
With a GPU (``@pytest.mark.gpu``): the kernels against scipy and the K-chunk leaves
(``prefetch=False``), every semiring and element type, right and left, k2+F (compact and
8-byte codes) and tree-only at several tiles, an unaligned ``x`` (it must fall back), a CUDA
graph of a product, the leaves the defaults run, and padded hub outputs (``hub_outputs``).
"""

import types

import numpy as np
import pytest
import scipy.sparse as sp

from distgraph.errors import InvalidArgumentError
from distgraph.formats.k2tree import K2Tree

POP = np.array([bin(i).count("1") for i in range(16)], np.int64)
M32 = np.uint64(0xFFFFFFFF)


def _unzip32(v):
    """unzip32 of the kernel on uint64 arrays holding 32-bit words."""
    v = v.astype(np.uint64)
    for s, m in ((1, 0x22222222), (2, 0x0C0C0C0C), (4, 0x00F000F0), (8, 0x0000FF00)):
        s, m = np.uint64(s), np.uint64(m)
        t = (v ^ (v >> s)) & m
        v = (v ^ t ^ (t << s)) & M32
    return v


def _row_col(code):
    """(row, column) of the 4 x 4 blocks as the kernel gets them: __byte_perm 0x7632 and
    0x5410 of the unshuffled halves."""
    lo, hi = _unzip32(code & M32), _unzip32(code >> np.uint64(32))
    col = (lo & np.uint64(0xFFFF)) | ((hi & np.uint64(0xFFFF)) << np.uint64(16))
    row = (lo >> np.uint64(16)) | (hi & np.uint64(0xFFFF0000))
    return row.astype(np.int64), col.astype(np.int64)


def _by_output(m, left):
    """The 16 cell bits of a node regrouped: bit 4b+q -> bit 4 dr + dc (left: 4 dc + dr)."""
    t = (m ^ (m >> 2)) & 0x0C0C
    m = m ^ t ^ (t << 2)
    if left:
        t = (m ^ (m >> 3)) & 0x0A0A
        m = m ^ t ^ (t << 3)
        t = (m ^ (m >> 6)) & 0x00CC
        m = m ^ t ^ (t << 6)
    return m


def _replay(tree, x, left, K):
    """y of one single-vector product by the prefetching leaves with K chunks per block on
    the cached frontier (compact codes: base per aligned chunk + delta), block by block."""
    sigs = tree.signatures().astype(np.int64)
    first_true = 1 + np.concatenate([[0], np.cumsum(POP[sigs])])
    L = tree.levels
    g0 = int(tree.level_start[L - 2])
    n = int(tree.level_start[L - 1]) - g0
    F = tree.frontier.astype(np.uint64)
    c0, clast = g0 // 256, (g0 + n - 1) // 256
    base = F[np.maximum(np.arange(c0, clast + 1) * 256, g0) - g0]
    nin = x.shape[0]
    y = np.zeros(tree.shape[1] if left else tree.shape[0])
    lane, w = np.arange(256) % 32, np.arange(256) // 32
    for bi in range(-(-(clast - c0 + 1) // K)):
        cb = c0 + bi * K
        p = np.zeros(256, np.uint64)
        s, vis, first = [], [], []
        for j in range(K):
            g = (cb + j) * 256 + np.arange(256)
            sj = np.where(g < g0 + n, sigs[np.minimum(g, len(sigs) - 1)], 0)
            mine = (g >= g0) & (g < g0 + n)
            s.append(sj)
            vis.append(np.where(mine, sj, 0))
            first.append(int(tree.directory[cb + j]) if cb + j <= clast else 0)
            p |= POP[sj].astype(np.uint64) << np.uint64(8 * j)
        incl = np.concatenate([np.cumsum(p[32 * v:32 * v + 32]) for v in range(8)]).astype(np.uint64)
        assert int(incl.max()) < 1 << 32  # one word: no byte carries into the next
        wsum = incl[31::32]
        even = np.array([int(sum(int(wsum[v]) & 0x00FF00FF for v in range(ww))) for ww in range(8)])
        odd = np.array([int(sum((int(wsum[v]) >> 8) & 0x00FF00FF for v in range(ww))) for ww in range(8)])
        excl = incl - p
        for j in range(K):
            fld = (odd if j & 1 else even)[w]
            in_warp = ((excl >> np.uint64(8 * j)) & np.uint64(255)).astype(np.int64)
            before = in_warp + ((fld >> (16 * (j >> 1))) & 0xFFFF)
            fj = first[j] + before
            g = (cb + j) * 256 + np.arange(256)
            mine = (g >= g0) & (g < g0 + n)
            assert np.array_equal(fj[mine], first_true[g[mine]])  # the packed scan's offsets
            for t in np.nonzero(mine)[0]:
                code = base[cb + j - c0] + (F[g[t] - g0] - base[cb + j - c0])
                row, col = (int(v[0]) for v in _row_col(np.array([code], np.uint64)))
                i0, ob = (row, col) if left else (col, row)
                xv = [x[4 * i0 + i] if 4 * i0 + i < nin else 0.0 for i in range(4)]  # load_inputs
                m, leaf = 0, fj[t]
                for b in range(4):
                    if (vis[j][t] >> b) & 1:
                        m |= int(sigs[leaf]) << (4 * b)
                        leaf += 1
                m = _by_output(m, left)
                for o in range(4):
                    r = (m >> (4 * o)) & 15
                    if r:
                        y[4 * ob + o] += sum(xv[i] for i in range(4) if (r >> i) & 1)
    return y


def _matrix(seed, shape=(901, 703)):
    """Sides not multiples of 4 (guarded loads at the end of x), a dense corner (fan-out 4,
    full packed bytes), dense rows and columns (colliding updates)."""
    rng = np.random.default_rng(seed)
    D = rng.random(shape) < 0.01
    D[:64, :64] = True
    D[100:110] |= rng.random((10, shape[1])) < 0.5
    c = shape[1] - 13   # columns 690-699 of the default shape; the same offset from the right on others
    D[:, c:c + 10] |= rng.random((shape[0], 10)) < 0.5
    D[-1, -1] = D[-1, 0] = D[0, -1] = True
    return sp.csr_array(D)


def test_unshuffle_gives_morton_row_and_column():
    from distgraph.formats.k2tree import morton_decode

    rng = np.random.default_rng(3)
    codes = np.concatenate([rng.integers(0, 2**63, 5000, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
                            rng.integers(0, 2**40, 5000, dtype=np.uint64), np.array([0, 2**64 - 1], np.uint64)])
    row, col = _row_col(codes)
    r, c = morton_decode(codes)
    assert np.array_equal(row, np.asarray(r, np.int64)) and np.array_equal(col, np.asarray(c, np.int64))


def test_cells_regrouped_by_row_and_column():
    for c in range(16):
        b, q = c >> 2, c & 3
        dr, dc = 2 * (b >> 1) + (q >> 1), 2 * (b & 1) + (q & 1)
        assert _by_output(1 << c, False) == 1 << (4 * dr + dc)
        assert _by_output(1 << c, True) == 1 << (4 * dc + dr)
    m = np.arange(1 << 16)
    for left in (False, True):  # a permutation of the 16 bits: every mask maps to a distinct one
        assert np.array_equal(np.sort(_by_output(m, left)), m)


@pytest.mark.parametrize("K", [2, 4])
@pytest.mark.parametrize("left", [False, True])
def test_prefetch_leaves_replayed_on_host(K, left):
    A = _matrix(5)
    t = K2Tree.from_scipy(A, cached_frontier=True)
    assert t.level_sizes()[t.levels - 2] > 256 * K  # several blocks
    M = (A.T if left else A).astype(np.float64)
    x = np.random.default_rng(6).standard_normal(M.shape[1])
    np.testing.assert_allclose(_replay(t, x, left, K), M @ x, rtol=1e-12, atol=1e-12)


def _lane_runs(key, v):
    """Step (5) of the lane-combining kernel on one warp, with its bit formulas: the
    (key, value) updates its lanes issue."""
    kup = np.concatenate([[key[0]], key[:-1]])  # __shfl_up_sync(.., 1): lane 0 keeps its own
    lane = np.arange(32)
    heads = int(sum(1 << i for i in range(32) if i == 0 or kup[i] != key[i]))
    start = np.array([31 - (32 - (heads & (((2 << i) & 0xFFFFFFFF) - 1) & 0xFFFFFFFF).bit_length())
                      for i in range(32)])  # 31 - __clz(.)
    v = v.copy()
    off = 1
    while off < 32:
        u = np.concatenate([v[:off], v[:-off]])  # lanes below off keep their own (unused)
        v = np.where(lane - off >= start, v + u, v)
        off <<= 1
    last = (lane == 31) | np.array([(heads >> (i + 1)) & 1 for i in range(32)], bool)
    return [(int(key[i]), float(v[i])) for i in range(32) if key[i] >= 0 and last[i]]


def test_lane_runs_replayed_on_host():
    """Runs of adjacent lanes with one key give one update each, with the run's sum."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        key = np.repeat(rng.integers(-1, 5, 32), rng.integers(1, 6, 32))[:32]
        if len(key) < 32:
            key = np.concatenate([key, np.full(32 - len(key), 7)])
        v = rng.standard_normal(32)
        got = _lane_runs(key, v)
        runs = [i for i in range(32) if i == 0 or key[i] != key[i - 1]] + [32]
        want = [(int(key[a]), float(v[a:b].sum())) for a, b in zip(runs[:-1], runs[1:]) if key[a] >= 0]
        assert [k for k, _ in got] == [k for k, _ in want]
        np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw, msg", [
    (dict(prefetch=1), "prefetch must be True, False or 'auto'; got 1"),
    (dict(prefetch="on"), "prefetch must be True, False or 'auto'; got 'on'"),
    (dict(prefetch="AUTO"), "prefetch must be True, False or 'auto'; got 'AUTO'"),
    (dict(prefetch=None), "prefetch must be True, False or 'auto'; got None"),
    (dict(prefetch=True, lane_combine=1), "lane_combine must be True, False or 'auto'; got 1"),
    (dict(lane_combine="true"), "lane_combine must be True, False or 'auto'; got 'true'"),
    (dict(prefetch=False, lane_combine=True),
     r"lane_combine=True needs prefetch=True \(or 'auto' where it applies\) and chunks_per_block in \(4,\)"),
    (dict(prefetch=True, chunks_per_block=2, lane_combine=True), r"lane_combine=True needs prefetch=True"),
    # prefetch "auto" (the default) where lanes cannot be combined: an explicit True is refused
    (dict(chunks_per_block=2, lane_combine=True), r"lane_combine=True needs prefetch=True"),
    (dict(chunks_per_block=8, lane_combine=True), r"lane_combine=True needs prefetch=True"),
    (dict(aggregate=True, lane_combine=True), r"lane_combine=True needs prefetch=True"),
    (dict(kernels="thread", lane_combine=True), r"lane_combine=True needs prefetch=True"),
    (dict(offsets="scan", lane_combine=True), r"lane_combine=True needs prefetch=True"),
    (dict(prefetch=True, chunks_per_block=1), r"prefetch=True needs .*chunks_per_block in \(2, 4\)"),
    (dict(prefetch=True, chunks_per_block=8), r"prefetch=True needs .*chunks_per_block in \(2, 4\)"),
    (dict(prefetch=True, aggregate=True), r"prefetch=True needs .*aggregate=False"),
    (dict(prefetch=True, kernels="thread"), r"prefetch=True needs the block kernels"),
    (dict(prefetch=True, offsets="scan"), r"prefetch=True needs the block kernels"),
    (dict(prefetch=True, sample=64), r"prefetch=True needs the block kernels"),
    (dict(prefetch=True, csr=True), r"prefetch=True needs the block kernels"),
    (dict(hub_outputs=-1), r"hub_outputs must be 'auto' or an integer >= 0; got -1"),
    (dict(hub_outputs=True), r"hub_outputs must be 'auto' or an integer >= 0; got True"),
    (dict(hub_outputs=2.0), r"hub_outputs must be 'auto' or an integer >= 0; got 2.0"),
    (dict(hub_outputs="AUTO"), r"hub_outputs must be 'auto' or an integer >= 0; got 'AUTO'"),
    (dict(hub_outputs=4, prefetch=False), r"hub_outputs > 0 needs the prefetching leaves"),
    (dict(hub_outputs=4, chunks_per_block=8), r"hub_outputs > 0 needs the prefetching leaves"),
])
def test_prefetch_arguments_refused_before_cupy(kw, msg):
    """Explicit True where the leaves do not exist is refused, with the reason; "auto" is
    the only string."""
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    kw = dict(kw)
    t = K2Tree.from_coo([0, 1, 2, 3], [1, 0, 3, 2], (4, 4), sample=kw.pop("sample", 256))
    if kw.pop("csr", False):
        t, kw["csr"] = None, (np.array([0, 1, 1]), np.array([1], np.int32))
    with pytest.raises(InvalidArgumentError, match=msg):
        DeviceMatrix(t, **kw)


# ------------------------------------------------ which leaves run (no GPU needed)
def test_leaves_options_auto_true_false():
    """"auto" (the default) turns the prefetching leaves on wherever they exist (block
    kernels, K = 2 or 4, not aggregate) and lane combining with them at K = 4 only; False
    keeps the K-chunk leaves; True keeps refusing where they do not exist."""
    from distgraph.backends.gpu.k2tree_spmv import leaves_options

    def opt(pre="auto", lanes="auto", block=True, K=4, agg=False):
        return leaves_options(pre, lanes, block=block, chunks_per_block=K, aggregate=agg)

    assert opt() == (True, True)
    assert opt(K=2) == (True, False)
    for kw in (dict(K=1), dict(K=8), dict(agg=True), dict(block=False), dict(K=2, agg=True), dict(K=8, agg=True)):
        assert opt(**kw) == (False, False), kw
        assert opt(lanes=False, **kw) == (False, False), kw
        with pytest.raises(InvalidArgumentError, match="prefetch=True needs the block kernels"):
            opt(pre=True, **kw)
        with pytest.raises(InvalidArgumentError, match="lane_combine=True needs prefetch=True"):
            opt(lanes=True, **kw)
    assert opt(lanes=False) == (True, False)
    assert opt(pre=True) == (True, True) and opt(pre=True, lanes=False) == (True, False)
    assert opt(pre=True, K=2) == (True, False) and opt(pre=np.bool_(True), K=2) == (True, False)
    assert opt(pre=False) == (False, False) and opt(pre=False, K=2) == (False, False)
    assert opt(lanes=True) == (True, True) and opt(pre=True, lanes=np.bool_(True)) == (True, True)
    for pre in (False, np.bool_(False)):
        with pytest.raises(InvalidArgumentError, match="lane_combine=True needs prefetch=True"):
            opt(pre=pre, lanes=True)
    with pytest.raises(InvalidArgumentError, match="lane_combine=True needs prefetch=True"):
        opt(lanes=True, K=2)
    for bad in (1, 0, "on", "Auto", None, 4.0):
        with pytest.raises(InvalidArgumentError, match=f"prefetch must be True, False or 'auto'; got {bad!r}"):
            opt(pre=bad)
        with pytest.raises(InvalidArgumentError, match=f"lane_combine must be True, False or 'auto'; got {bad!r}"):
            opt(lanes=bad)


def test_leaves_kernel_of_a_product():
    """The kernel a product launches: the prefetching leaves only for single vectors with an
    aligned x and K = 2 or 4; batches and K = 1 the one-chunk block kernel; the thread kernel
    without the block kernels."""
    from distgraph.backends.gpu.k2tree_spmv import LEAVES_AGG, LEAVES_K, LEAVES_PRE, LEAVES_PRE_LANES, leaves_kernel

    def kern(K=4, B=1, pre=True, lanes=True, agg=False, aligned=True, block=True):
        return leaves_kernel(block=block, chunks_per_block=K, B=B, prefetch=pre, lane_combine=lanes, aggregate=agg,
                             aligned=aligned)

    assert kern() == LEAVES_PRE_LANES[4] == "distgraph_k2tree_leaves_k4_pre_lanes"
    assert kern(lanes=False) == LEAVES_PRE[4] and kern(K=2, lanes=False) == LEAVES_PRE[2]
    assert kern(aligned=False) == LEAVES_K[4] and kern(K=2, lanes=False, aligned=False) == LEAVES_K[2]
    assert kern(pre=False, lanes=False) == LEAVES_K[4]
    for K in (1, 2, 4, 8):
        assert kern(K=K, B=3, lanes=K == 4, pre=K in (2, 4)) == LEAVES_K[1] == "distgraph_k2tree_leaves_blk"
    assert kern(K=1, pre=False, lanes=False) == LEAVES_K[1]
    assert kern(K=8, pre=False, lanes=False) == LEAVES_K[8]
    assert kern(K=8, pre=False, lanes=False, agg=True) == LEAVES_AGG[8]
    assert kern(K=4, pre=False, lanes=False, agg=True) == LEAVES_AGG[4]
    assert kern(block=False) == kern(block=False, B=5) == "distgraph_k2tree_leaves"


class _DevArray:
    """What DeviceMatrix.run reads of a CuPy array: shape, dtype, flags, data.ptr."""

    def __init__(self, shape, dtype=np.float32, ptr=1 << 20, contiguous=True):
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.flags = types.SimpleNamespace(c_contiguous=contiguous)
        self.data = types.SimpleNamespace(ptr=ptr)


class _Module:
    """The compiled module: records every launch as (kernel, grid, block, args)."""

    def __init__(self):
        self.launches = []

    def get_function(self, name):
        return lambda grid, block, args: self.launches.append((name, grid, block, args))


@pytest.fixture
def fake_cupy(monkeypatch):
    """DeviceMatrix with numpy for CuPy (uploads, scratch) and a module that records launches."""
    import sys

    from distgraph.backends.gpu import k2tree_spmv as K

    cp = types.SimpleNamespace(asarray=np.asarray, empty=np.empty, full=np.full, uint64=np.uint64, int32=np.int32,
                               cumsum=lambda a, dtype=None, out=None: np.cumsum(a, dtype=dtype, out=out),
                               get_default_memory_pool=lambda: types.SimpleNamespace(free_bytes=lambda: 0))
    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=lambda: (2**34, 2**34)),
                                    Device=lambda *a: types.SimpleNamespace(id=0))
    mod = _Module()
    monkeypatch.setitem(sys.modules, "cupy", cp)  # the memory plan asks CuPy for the free memory
    monkeypatch.setattr(K, "import_cupy", lambda: cp)
    monkeypatch.setattr(K, "get_module", lambda name, defines=None: mod)
    return mod


@pytest.mark.parametrize("kw, B, x, leaves, pre, lanes", [
    # the defaults: the prefetching leaves with lanes combined at K = 4, an aligned x
    (dict(), 1, dict(), "k4_pre_lanes", True, True),
    (dict(cached_frontier=True), 1, dict(), "k4_pre_lanes", True, True),
    (dict(cached_frontier=True, compact_frontier=False), 1, dict(), "k4_pre_lanes", True, True),
    (dict(tile=4), 1, dict(), "k4_pre_lanes", True, True),
    (dict(levels_per_step=2, tile=16), 1, dict(), "k4_pre_lanes", True, True),
    (dict(cached_frontier=True), 1, dict(dtype=np.float64, ptr=48), "k4_pre_lanes", True, True),
    (dict(cached_frontier=True), 1, dict(dtype=np.bool_, ptr=4), "k4_pre_lanes", True, True),
    # K = 2: prefetching, no lanes
    (dict(chunks_per_block=2), 1, dict(), "k2_pre", True, False),
    (dict(cached_frontier=True, chunks_per_block=2), 1, dict(), "k2_pre", True, False),
    # x not aligned or not contiguous: the K-chunk leaves, silently
    (dict(cached_frontier=True), 1, dict(ptr=(1 << 20) + 4), "k4", True, True),
    (dict(cached_frontier=True), 1, dict(dtype=np.float64, ptr=(1 << 20) + 8), "k4", True, True),
    (dict(cached_frontier=True), 1, dict(dtype=np.bool_, ptr=(1 << 20) + 2), "k4", True, True),
    (dict(cached_frontier=True), 1, dict(contiguous=False), "k4", True, True),
    (dict(chunks_per_block=2), 1, dict(ptr=(1 << 20) + 4), "k2", True, False),
    # batches: the one-chunk block kernel
    (dict(cached_frontier=True), 3, dict(), "blk", True, True),
    (dict(), 128, dict(), "blk", True, True),
    # where the prefetching leaves do not exist: the kernels as before
    (dict(chunks_per_block=1), 1, dict(), "blk", False, False),
    (dict(cached_frontier=True, chunks_per_block=8), 1, dict(), "k8", False, False),
    (dict(cached_frontier=True, aggregate=True), 1, dict(), "k4_agg", False, False),
    (dict(chunks_per_block=2, aggregate=True), 1, dict(), "k2_agg", False, False),
    (dict(kernels="thread"), 1, dict(), "thread", False, False),
    (dict(cached_frontier=True, kernels="thread"), 1, dict(), "thread", False, False),
    (dict(offsets="scan"), 1, dict(), "thread", False, False),
    (dict(sample=64), 1, dict(), "thread", False, False),
    # explicit choices
    (dict(prefetch=False), 1, dict(), "k4", False, False),
    (dict(cached_frontier=True, prefetch=False, lane_combine=False), 1, dict(), "k4", False, False),
    (dict(cached_frontier=True, lane_combine=False), 1, dict(), "k4_pre", True, False),
    (dict(cached_frontier=True, prefetch=True, lane_combine=False), 1, dict(), "k4_pre", True, False),
    (dict(cached_frontier=True, prefetch=True), 1, dict(), "k4_pre_lanes", True, True),
    (dict(cached_frontier=True, chunks_per_block=2, prefetch=True), 1, dict(), "k2_pre", True, False),
])
def test_leaves_run_by_default_with_a_stand_in_for_cupy(fake_cupy, kw, B, x, leaves, pre, lanes):
    """DeviceMatrix with "auto" (the defaults) launches the prefetching leaves (lanes combined
    at K = 4) wherever they apply, the kernels it ran before elsewhere, and says so in
    ``info``; every leaves launch of a product is of that kernel, with the prefetching
    leaves' arguments (x's length after x) exactly when they run."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    kw = dict(kw)
    t = K2Tree.from_scipy(_matrix(3), top_nodes=16, sample=kw.pop("sample", 256))
    dm = DeviceMatrix(t, **kw)
    assert (dm.prefetch, dm.lane_combine) == (pre, lanes)
    assert dm.info == {"prefetch": pre, "lane_combine": lanes, "leaves": None}
    xd = _DevArray((t.shape[1], B), **x)
    dm.run(xd, object(), semiring.plus_times, False)
    want = "distgraph_k2tree_leaves" + ("" if leaves == "thread" else "_" + leaves)
    assert dm.info["leaves"] == want
    launched = [ln for ln in fake_cupy.launches if "leaves" in ln[0]]
    assert launched and {ln[0] for ln in launched} == {want}
    for name, grid, block, args in launched:
        if "_pre" in name:
            assert len(args) == 13 and args[7] is xd and args[8] == t.shape[1] and isinstance(args[8], np.int64)
            assert args[11] == 0 and isinstance(args[11], np.int64)  # no padded hub outputs
        else:
            assert args[7 if leaves != "thread" else 9] is xd
    assert sum(ln[0].startswith("distgraph_k2tree_expand") for ln in fake_cupy.launches) == \
        sum(st[0] != "leaves" for st in dm.steps)
    fake_cupy.launches.clear()  # the choice is per product: an aligned x after a misaligned one
    dm.run(_DevArray((t.shape[1], 1)), object(), semiring.plus_times, True)
    again = {ln[0] for ln in fake_cupy.launches if "leaves" in ln[0]}
    assert again == {dm.info["leaves"]}
    if pre and B == 1 and not x:
        assert again == {want}


@pytest.mark.parametrize("hub", [5, 40, 2000])
def test_padded_hub_outputs_launches(fake_cupy, hub):
    """hub_outputs=H: every prefetching leaves launch gets H (at most y's length) and one
    buffer of H * HUB_PAD entries at the semiring's zero, the same for every launch and
    product of one element type and semiring; one fold after the leaves, over H outputs.
    Right products of a 901 x 703 matrix have 901 outputs, left ones 703."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import HUB_PAD, DeviceMatrix

    t = K2Tree.from_scipy(_matrix(3), top_nodes=16)
    for kw in (dict(cached_frontier=True), dict(tile=16)):
        dm = DeviceMatrix(t, hub_outputs=hub, **kw)
        bufs = []
        for left, sr in ((True, semiring.plus_times), (False, semiring.min_plus), (True, semiring.min_plus)):
            fake_cupy.launches.clear()
            k = t.shape[1] if not left else t.shape[0]
            y = np.empty((t.shape[1] if left else t.shape[0], 1))
            dm.run(_DevArray((k, 1)), y, sr, left)
            h = min(hub, y.shape[0])
            names = [ln[0] for ln in fake_cupy.launches]
            leaves = [ln for ln in fake_cupy.launches if "leaves" in ln[0]]
            assert leaves and all(ln[0].endswith("_pre_lanes") for ln in leaves)
            assert names[-1] == "distgraph_k2tree_hub_fold" and names.count("distgraph_k2tree_hub_fold") == 1
            grid, block, args = fake_cupy.launches[-1][1:]
            assert args[0] is y and args[2] == h and grid[0] * block[0] >= h > (grid[0] - 1) * block[0]
            yh = args[1]
            assert yh.shape == (h * HUB_PAD,) and np.all(yh == sr.zero(np.float64))
            for ln in leaves:
                assert ln[3][11] == h and ln[3][12] is yh and ln[3][10] == (1 if left else 0)
            bufs.append(yh)
        assert bufs[0] is not bufs[1] and bufs[1] is bufs[2] or hub > 703  # per semiring (and length)


def test_padded_hub_outputs_auto(fake_cupy):
    """hub_outputs="auto" (the default): ceil(HUB_AUTO_FRACTION * n) for a renumbered square
    tree whose prefetching leaves run, none for a tree in the input order, without the
    prefetching leaves or for a CSR block; an integer is taken as given. The memory plan
    and nbytes count the padded outputs (8-byte entries in the plan, the buffers made in
    nbytes)."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import HUB_AUTO_FRACTION, HUB_PAD, DeviceMatrix

    A = sp.random_array((2000, 2000), density=0.004, random_state=5, format="csr")
    A = A + A.T
    r, c = A.nonzero()
    t = K2Tree.from_coo(r, c, A.shape)
    tr = K2Tree.from_coo(r, c, A.shape, reorder="degree")
    assert tr.perm is not None and HUB_AUTO_FRACTION == 0.003
    assert DeviceMatrix(tr).hub_outputs == DeviceMatrix(tr, cached_frontier=True).hub_outputs == 6
    assert DeviceMatrix(t).hub_outputs == 0
    assert DeviceMatrix(tr, prefetch=False).hub_outputs == 0
    assert DeviceMatrix(tr, chunks_per_block=8).hub_outputs == 0
    assert DeviceMatrix(tr, kernels="thread").hub_outputs == 0
    assert DeviceMatrix(t, hub_outputs=9).hub_outputs == 9 and DeviceMatrix(tr, hub_outputs=0).hub_outputs == 0
    assert DeviceMatrix(csr=(A.indptr, A.indices)).hub_outputs == 0
    # hubs_first overrides "has a permutation" (SpMVPlan: True for degree order, False for rcm)
    assert DeviceMatrix(tr, hubs_first=False).hub_outputs == 0 and DeviceMatrix(t, hubs_first=True).hub_outputs == 6
    with pytest.raises(InvalidArgumentError, match="hubs_first must be True, False or None; got 1"):
        DeviceMatrix(t, hubs_first=1)
    rect = K2Tree.from_scipy(_matrix(3), top_nodes=16)
    assert DeviceMatrix(rect).hub_outputs == 0
    dm = DeviceMatrix(tr, cached_frontier=True)
    assert dm.plan.items["padded hub outputs"] == 8 * HUB_PAD * 6
    assert "padded hub outputs" not in DeviceMatrix(t, cached_frontier=True).plan.items
    before = dm.nbytes()["scratch"]
    dm.run(_DevArray((2000, 1)), np.empty((2000, 1), np.float32), semiring.plus_times, False)
    assert dm.nbytes()["scratch"] == before + 4 * HUB_PAD * 6  # float32 outputs


@pytest.mark.parametrize("reorder, want", [(None, False), ("none", False), ("degree", True), ("rcm", False)])
def test_plan_says_whether_hubs_come_first(reorder, want):
    """SpMVPlan's pattern tells the GPU blocks whether the first ids are hubs: degree order
    yes, rcm and the input order no; a tree that carries a permutation of unknown kind yes."""
    from distgraph.algorithms.spmv import _Pattern
    from distgraph.generators import from_spec

    g = from_spec("kron:8")
    assert _Pattern(g, reorder).hubs_first is want
    t = K2Tree.from_graph(g, reorder="degree")
    assert _Pattern(t).hubs_first is True and _Pattern(K2Tree.from_graph(g)).hubs_first is False


def test_csr_block_runs_no_leaves(fake_cupy):
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    A = _matrix(3)
    dm = DeviceMatrix(csr=(A.indptr, A.indices))
    assert dm.info == {"prefetch": False, "lane_combine": False, "leaves": None}


# --------------------------------------------------------------------- GPU
def _min_plus_ref(M, xm):
    C = sp.coo_array(M)
    ref = np.full((M.shape[0],) + xm.shape[1:], np.inf)
    np.minimum.at(ref, C.row, xm[C.col] + 1)
    return ref


def _xs(k, seed):
    rng = np.random.default_rng(seed)
    xm = rng.integers(0, 20, (k, 1)).astype(np.float64)
    xm[rng.random((k, 1)) < 0.3] = np.inf
    return (rng.standard_normal((k, 1)), rng.integers(-50, 50, (k, 1)).astype(np.int64),
            rng.random((k, 1)) < 0.3, xm)


@pytest.mark.gpu
@pytest.mark.parametrize("K, lanes", [(2, False), (4, False), (4, True)])
def test_gpu_prefetch_leaves_match_scipy_and_default(K, lanes):
    """prefetch=True on a 901 x 703 matrix with a dense corner, dense rows and columns and
    cells in the last row and column (x's end read by the guarded loads) and on kron:12:
    k2+F compact and 8-byte codes, tree-only with one and several leaves launches, right
    and left, every semiring and element type (float64, float32, int64, bool) give scipy's
    product (float to 1e-12 / 1e-4; int64, lor_land and min_plus exactly) and exactly the
    K-chunk leaves' (int64, lor_land, min_plus). A product whose x is a view starting one
    entry into an array (not aligned to 4 entries) falls back to the K-chunk leaves and is
    still right. lanes: lane_combine=True as well (adjacent lanes combined first)."""
    import cupy as cp

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import LEAVES_K, LEAVES_PRE, LEAVES_PRE_LANES, DeviceMatrix, _aligned4
    from distgraph.generators import from_spec

    g = from_spec("kron:12")
    mats = {"dense-rows": _matrix(7),
            "kron12": sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))}
    for name, A in mats.items():
        P = sp.csr_array(A != 0).astype(np.float64)
        t = K2Tree.from_scipy(A, top_nodes=16)
        for cached, compact, tile in ((True, True, 1 << 20), (True, False, 1 << 20), (False, True, 1 << 20),
                                      (False, True, 512), (False, True, 4)):
            if tile == 4 and name == "kron12":  # thousands of launches: the small matrix only
                continue
            kw = dict(tile=tile, cached_frontier=cached, compact_frontier=compact, chunks_per_block=K)
            base, dm = DeviceMatrix(t, prefetch=False, **kw), DeviceMatrix(t, prefetch=True, lane_combine=lanes, **kw)
            assert dm.prefetch and dm.lane_combine == lanes and dm.block and dm.chunks_per_block == K
            assert not base.prefetch and not base.lane_combine
            if tile < 1 << 20:
                assert sum(st[0] == "leaves" for st in dm.steps) > 1
            for left in (False, True):
                M = P.T if left else P
                msg = (name, cached, compact, tile, left)
                xf, xi, xb, xm = _xs(M.shape[1], 50 + tile % 97)
                np.testing.assert_allclose(dm.multiply(xf, semiring.plus_times, left), M @ xf,
                                           rtol=1e-12, atol=1e-12, err_msg=str(msg))
                assert dm.info["leaves"] == (LEAVES_PRE_LANES if lanes else LEAVES_PRE)[K], msg
                x32 = xf.astype(np.float32)
                np.testing.assert_allclose(dm.multiply(x32, semiring.plus_times, left), M @ x32.astype(np.float64),
                                           rtol=1e-4, atol=1e-4, err_msg=str(msg))
                yi = dm.multiply(xi, semiring.plus_times, left)
                assert np.array_equal(yi, M.astype(np.int64) @ xi), msg
                assert np.array_equal(yi, base.multiply(xi, semiring.plus_times, left)), msg
                assert base.info["leaves"] == LEAVES_K[K], msg
                yb = dm.multiply(xb, semiring.lor_land, left)
                assert np.array_equal(yb, (M @ xb.astype(float)) > 0), msg
                assert np.array_equal(yb, base.multiply(xb, semiring.lor_land, left)), msg
                for dtype in (np.float64, np.float32):
                    xmd = xm.astype(dtype)
                    ym = dm.multiply(xmd, semiring.min_plus, left)
                    assert np.array_equal(ym, _min_plus_ref(M, xmd.astype(np.float64))), msg
                    assert np.array_equal(ym, base.multiply(xmd, semiring.min_plus, left)), msg
                # an x not aligned to 4 entries: the K-chunk leaves run instead
                big = cp.asarray(np.concatenate([[[0.0]], xf]))
                xv = big[1:]
                assert not _aligned4(xv) and _aligned4(cp.asarray(xf))
                out = cp.empty((M.shape[0], 1))
                dm.multiply(xv, semiring.plus_times, left, out=out)
                assert dm.info["leaves"] == LEAVES_K[K], msg
                np.testing.assert_allclose(cp.asnumpy(out), M @ xf, rtol=1e-12, atol=1e-12, err_msg=str(msg))
        dm = DeviceMatrix(t, cached_frontier=True, chunks_per_block=K, prefetch=True, lane_combine=lanes)
        xd = cp.asarray(_xs(A.shape[1], 9)[0])
        y = cp.empty((A.shape[0], 1))
        gr = dm.graph(xd, y, semiring.plus_times, False)
        assert gr is not None
        y.fill(7.0)
        gr.launch()
        np.testing.assert_allclose(cp.asnumpy(y), P @ cp.asnumpy(xd), rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_gpu_prefetch_leaves_64bit_directory():
    """A 64-bit directory (trees of 2**32 nodes or more; forced here) gives the same
    products with prefetch=True."""
    import dataclasses

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    A = _matrix(11, (700, 500))
    P = sp.csr_array(A != 0).astype(np.float64)
    t = K2Tree.from_scipy(A, top_nodes=16)
    t64 = dataclasses.replace(t, directory=t.directory.astype(np.int64))
    for kw in (dict(cached_frontier=True, lane_combine=False), dict(tile=64, lane_combine=False),
               dict(cached_frontier=True, lane_combine=True)):
        dm = DeviceMatrix(t64, prefetch=True, **kw)
        assert dm.dir64
        for left in (False, True):
            M = P.T if left else P
            xf, _, xb, xm = _xs(M.shape[1], 12)
            np.testing.assert_allclose(dm.multiply(xf, semiring.plus_times, left), M @ xf, rtol=1e-12, atol=1e-12)
            assert np.array_equal(dm.multiply(xb, semiring.lor_land, left), (M @ xb.astype(float)) > 0)
            assert np.array_equal(dm.multiply(xm, semiring.min_plus, left), _min_plus_ref(M, xm))


@pytest.mark.gpu
def test_gpu_padded_hub_outputs_match_scipy():
    """hub_outputs=H (the first H outputs accumulated in padded lines, folded after the
    leaves) gives scipy's products: kron:12 with its hubs numbered first and the 901 x 703
    matrix with dense rows and columns, H = 1, 37 and more than either side, right and left,
    every semiring; each product twice (the fold resets the padded outputs), through
    multiply and through a CUDA graph replayed twice, k2+F and tree-only (several leaves
    launches into the same padded outputs); and the default ("auto") on a tree that carries
    its degree order, through products in the caller's ids."""
    import cupy as cp

    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix
    from distgraph.generators import from_spec

    g = from_spec("kron:12")
    K12 = sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    order = np.argsort(-np.diff(K12.indptr), kind="stable")  # hubs first
    mats = {"kron12-degree": K12[order][:, order], "dense-rows": _matrix(7)}
    for name, A in mats.items():
        P = sp.csr_array(A != 0).astype(np.float64)
        t = K2Tree.from_scipy(A, top_nodes=16)
        for hub in (1, 37, 5000):
            for kw in (dict(cached_frontier=True), dict(tile=512)):
                dm = DeviceMatrix(t, hub_outputs=hub, **kw)
                assert dm.hub_outputs == hub
                for left in (False, True):
                    M = P.T if left else P
                    msg = (name, hub, kw, left)
                    xf, xi, xb, xm = _xs(M.shape[1], hub + 3 * left)
                    for _ in range(2):
                        np.testing.assert_allclose(dm.multiply(xf, semiring.plus_times, left), M @ xf,
                                                   rtol=1e-12, atol=1e-12, err_msg=str(msg))
                        assert dm.info["leaves"] == "distgraph_k2tree_leaves_k4_pre_lanes", msg
                        assert np.array_equal(dm.multiply(xi, semiring.plus_times, left),
                                              M.astype(np.int64) @ xi), msg
                        assert np.array_equal(dm.multiply(xb, semiring.lor_land, left),
                                              (M @ xb.astype(float)) > 0), msg
                        for dtype in (np.float64, np.float32):
                            xmd = xm.astype(dtype)
                            assert np.array_equal(dm.multiply(xmd, semiring.min_plus, left),
                                                  _min_plus_ref(M, xmd.astype(np.float64))), msg
                    xd = cp.asarray(xf)
                    y = cp.empty((M.shape[0], 1))
                    gr = dm.graph(xd, y, semiring.plus_times, left)
                    assert gr is not None, msg
                    for _ in range(2):
                        y.fill(7.0)
                        gr.launch()
                        np.testing.assert_allclose(cp.asnumpy(y), M @ xf, rtol=1e-12, atol=1e-12, err_msg=str(msg))
    # the default on a tree that carries its degree order: "auto" pads 0.3% of the outputs
    P = sp.csr_array(K12 != 0).astype(np.float64)
    tr = K2Tree.from_graph(g, reorder="degree")
    for kw in (dict(cached_frontier=True), dict(tile=512)):
        dm = DeviceMatrix(tr, **kw)
        assert dm.hub_outputs == int(np.ceil(0.003 * g.n)) > 0
        for left in (False, True):
            M = P.T if left else P
            xf, xi, xb, xm = _xs(g.n, 21 + left)
            for _ in range(2):
                np.testing.assert_allclose(dm.multiply(xf, semiring.plus_times, left), M @ xf, rtol=1e-12, atol=1e-12)
                assert np.array_equal(dm.multiply(xm, semiring.min_plus, left), _min_plus_ref(M, xm))
                assert np.array_equal(dm.multiply(xb, semiring.lor_land, left), (M @ xb.astype(float)) > 0)


def test_benchmark_configurations_keep_their_leaves(fake_cupy, bench_script):
    """benchmarks/gpu_k2tree_bench.py: with "auto" the default, each configuration still
    runs the leaves it timed before (k2F, k2 and the others that name no prefetch: the
    K-chunk leaves; k2F_pre / k2_pre: prefetching without lanes), k2F_auto the defaults'."""
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix

    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    t = K2Tree.from_scipy(_matrix(3), top_nodes=16)
    t.with_frontier()
    for name, (kw, _) in kb.CONFIGS.items():
        dm = DeviceMatrix(t, **kb.matrix_kwargs(kw, t))
        hub = "_hub" in name  # the defaults' leaves with padded hub outputs
        assert (dm.hub_outputs > 0) == hub, name
        pre = "_pre" in name or name.endswith("_auto") or hub
        lanes = name.endswith(("_lanes", "_auto")) or hub
        assert (dm.prefetch, dm.lane_combine) == (pre, lanes), name
        dm.run(_DevArray((t.shape[1], 1)), np.empty((t.shape[0], 1), np.float32), semiring.plus_times, False)
        K, agg = dm.chunks_per_block, dm.aggregate
        want = ("distgraph_k2tree_leaves" if not dm.block else "distgraph_k2tree_leaves_blk" if K == 1 else
                f"distgraph_k2tree_leaves_k{K}" + ("_pre_lanes" if lanes else "_pre" if pre else "_agg" if agg else ""))
        assert dm.info["leaves"] == want, name
    assert kb.CONFIGS["k2F"][0]["prefetch"] is False and kb.CONFIGS["k2"][0]["prefetch"] is False
    # a tree built from a renumbered graph: hubs first for the degree orders only
    assert [kb.matrix_kwargs({}, t, r).get("hubs_first") for r in ("none", "degree", "head0.01", "rcm")] == \
        [None, True, True, False]
    assert [kb._product(k) for k in ("right", "right_mode", "right_leaves", "batch_scan")] == \
        ["right", "right", "right", "batch_scan"]


def test_benchmark_reorder_argument(bench_script):
    """benchmarks/gpu_k2tree_bench.py --reorder: none, degree, rcm or headF, F in (0, 1]."""
    import argparse

    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    for ok in ("none", "degree", "rcm", "head0.01", "head1"):
        assert kb._reorder_arg(ok) == ok
    assert kb._reorder_arg("head0.010") == kb._reorder_arg("head1e-2") == "head0.01"  # one name each
    for bad in ("head", "head0", "head2", "headx", "Degree", "hubs0.1"):
        with pytest.raises(argparse.ArgumentTypeError, match="headF with F in"):
            kb._reorder_arg(bad)


def test_benchmark_prepared_graph_must_have_the_asked_order(bench_script, tmp_path):
    """gpu_k2tree_bench.py --prepared: a graph prepared with one ordering is refused when
    another is timed (the result file is named after --reorder)."""
    import time

    kb = bench_script("gpu_k2tree_bench.py", "gpu_k2tree_bench")
    kb.prepare_one("kron:6", str(tmp_path), "head0.5")
    z, tree, meta = kb.load_prepared("kron:6", str(tmp_path), time.perf_counter() + 5, "head0.5")
    assert meta["reorder"] == "head0.5" and tree.nnz == meta["m"]
    with pytest.raises(RuntimeError, match="prepared with reorder='head0.5', not the --reorder 'none'"):
        kb.load_prepared("kron:6", str(tmp_path), time.perf_counter() + 5, "none")
