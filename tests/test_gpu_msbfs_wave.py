"""The distance-profile wave (``GpuWave``, kernels/msbfs_wave.cu; prototype): per-source sums at
the source vertices that, over every source, equal the CPU backend's per-vertex closeness sums bit
for bit (undirected graphs: paths, stars, grids with hanging paths, isolated vertices and edges,
Kronecker, disconnected, real graphs); per-source sums of road-NY's first ball batches against the
CPU backend's; and batches whose sources lie too far apart for byte offsets, which the kernel flags
and the host runs on the bit-parallel kernel (still exact). Skipped without a GPU."""

import numpy as np
import pytest

from distgraph.backends.cpu.bits import normalize_limbs
from distgraph.graph import Graph

from _msbfs_cases import real_graph as _real, same as _same, sums as _sums, undirected_leafy


GRAPHS = undirected_leafy()


def _wave_sums(g, sources, aside=None, **kw):
    from distgraph.backends.gpu.msbfs_wave import GpuWave

    r = GpuWave(g.indptr, g.indices, **kw)
    out = (np.zeros(g.n, np.uint64), np.zeros(g.n, np.int64), np.zeros(g.n, np.uint64), np.zeros(g.n, np.uint64),
           np.zeros(g.n, np.uint64))
    r.run(sources, out, aside)
    normalize_limbs(out[2], out[3], out[4])
    return out, r


@pytest.mark.gpu
@pytest.mark.parametrize("reorder", ["none", "auto"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_wave_totals_equal_cpu(name, reorder):
    g = GRAPHS[name]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    got, r = _wave_sums(g, srcs, reorder=reorder, slots=3)
    assert r.info["batches"] == -(-srcs.size // 256)
    assert _same(got, _sums(g, srcs, False))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["power.mtx.gz", "minnesota.mtx.gz", "email-Enron.mtx.gz"])
def test_wave_real_graphs(data_dir, name):
    g = _real(data_dir, name)
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    got, r = _wave_sums(g, srcs)
    assert _same(got, _sums(g, srcs, False))


@pytest.mark.gpu
def test_wave_road_ny_ball_batches(data_dir):
    from distgraph.algorithms.msbfs import ball_sources

    g = _real(data_dir, "road-NY.gr.xz")
    tptr, tidx, _ = g.csc()
    srcs = ball_sources(g.indptr, g.indices, tptr, tidx, np.arange(g.n, dtype=np.int64), 256)[:768]
    got, r = _wave_sums(g, srcs)
    assert r.info["overflow_batches"] == 0 and r.info["wide_batches"] == 0 and r.info["levels"] > 1000
    ref = _sums(g, srcs, True)
    assert _same([a[srcs] for a in got], ref)


@pytest.mark.gpu
@pytest.mark.parametrize("nsrc", [4, 200, 256])
def test_wave_far_apart_sources_run_again_with_two_bytes(nsrc):
    # a path of 700 vertices, sources at both ends: offsets up to 699 do not fit a byte; the batch
    # runs again as two halves of 128 sources with 2-byte offsets (one half when it has <= 128)
    g = Graph.from_edges(np.arange(699), np.arange(1, 700), directed=False)
    srcs = np.r_[np.arange(nsrc // 2), np.arange(700 - (nsrc - nsrc // 2), 700)].astype(np.int64)
    got, r = _wave_sums(g, srcs, reorder="none", wide="halves")
    assert r.info["wide_batches"] == 1 and r.info["overflow_batches"] == 0 and r._fallback is None
    ref = _sums(g, srcs, True)
    assert _same([a[srcs] for a in got], ref)
    got, r = _wave_sums(g, srcs, reorder="none")   # the default: the batch on the bit-parallel kernel
    assert r.info["wide_batches"] == 0 and r.info["overflow_batches"] == 1 and r._fallback is not None
    assert _same([a[srcs] for a in got], ref)


@pytest.mark.gpu
def test_wave_diameter_past_two_bytes_goes_to_the_bit_kernel():
    # a path of 66000 vertices: the second half of the sources (both ends) overflows 2-byte offsets
    # too and runs on the bit-parallel kernel; the first (near one another) stays on the wave
    k = 66000
    g = Graph.from_edges(np.arange(k - 1), np.arange(1, k), directed=False)
    srcs = np.r_[np.arange(128), [0 + 200, k - 1]].astype(np.int64)
    got, r = _wave_sums(g, srcs, reorder="none", wide="halves")
    assert r.info["wide_batches"] == 1 and r.info["overflow_batches"] == 1 and r._fallback is not None
    ref = _sums(g, srcs, True)
    assert _same([a[srcs] for a in got], ref)


@pytest.mark.gpu
@pytest.mark.parametrize("k,flagged", [(251, False), (252, None), (253, None), (254, True)])
def test_wave_byte_limit_halves(k, flagged):
    # sources at both ends of a stretch of k arcs on a longer path: the largest true offset is k
    # (the far source's, at the other end's base 0). Offsets are kept at 254 while the wave runs,
    # so 253 fits a byte, 254 may stand for more and the batch runs again with 2-byte offsets
    g = Graph.from_edges(np.arange(k + 40), np.arange(1, k + 41), directed=False)
    srcs = np.array([0, k], np.int64)
    got, r = _wave_sums(g, srcs, reorder="none", wide="halves")
    # a pull may hold an upper bound 2 above the true offset for a while (the path's far side), and
    # a 254 written over a 255 gives up the bytes: 251 fits, 252 and 253 may go wide, 254 must
    if flagged is not None:
        assert r.info["wide_batches"] == int(flagged)
    assert r.info["overflow_batches"] == 0 and r._fallback is None
    ref = _sums(g, srcs, True)
    assert _same([a[srcs] for a in got], ref)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [dict(block_threads=256, unroll=8), dict(block_threads=512, unroll=16),
                                dict(block_threads=1024, unroll=4), dict(block_threads=256, min_blocks=4,
                                sources_per_thread=1, neighbours=1), dict(block_threads=256, min_blocks=2,
                                sources_per_thread=2, neighbours=2), dict(block_threads=512, min_blocks=1,
                                sources_per_thread=4, neighbours=4), dict(block_threads=256, recip_shared=512),
                                dict(block_threads=256, fast_sums=False, group_sync=False),
                                dict(block_threads=256, sources_per_thread=4, recip_shared=0),
                                dict(block_threads=512, ell=False)])
@pytest.mark.parametrize("name", ["kron10", "grid_hanging"])
def test_wave_kernel_options(name, kw):
    g = GRAPHS[name]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    got, r = _wave_sums(g, srcs, slots=2, **kw)
    assert r.block_threads == kw["block_threads"] and r.slots == 2
    assert _same(got, _sums(g, srcs, False))


def _path_stars_grid():
    """A path of 600 with a hanging star of 3 leaves every 37 vertices and a 12x9 grid at its far
    end, and a second path of 200 (another component)."""
    from distgraph.generators import grid

    s = list(range(599)) + [600 + i for i in range(199)]
    d = list(range(1, 600)) + [601 + i for i in range(199)]
    n = 800
    for a in range(0, 600, 37):
        for _ in range(3):
            s.append(a), d.append(n)
            n += 1
    gs, gd = grid(12, 9).edges()[:2]
    s += list(gs + n) + [599]
    d += list(gd + n) + [n]
    return Graph.from_edges(np.asarray(s), np.asarray(d), n=n + 108, directed=False)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [dict(recip_shared=512), dict(recip_shared=512, sources_per_thread=2),
                                dict(recip_shared=1024, sources_per_thread=1), dict(fast_sums=False, ell=False),
                                dict(group_sync=False)])
def test_wave_sums_fast_and_general_paths(kw):
    # batches of 248 vertices of the main component in order along the path (spanning about 230
    # arcs: byte offsets) and 8 of the other path: each holds vertices of base 0 and 1 (the
    # general path), bytes of sources in the other component (255: general) and the fast path's
    # vertices; with recip_shared=512 also bases past 256 (general: bases reach 616; with 1024
    # and 2048 every base of 2 or more is below the table's limit)
    import scipy.sparse.csgraph as csgraph

    g = _path_stars_grid()
    A = g.to_scipy()
    pos = csgraph.shortest_path(A, unweighted=True, indices=[0, 600]).min(axis=0)
    main = np.flatnonzero(~np.isinf(csgraph.shortest_path(A, unweighted=True, indices=0)))
    main = main[np.argsort(pos[main], kind="stable")]
    other = np.setdiff1d(np.arange(g.n), main)
    other = other[np.argsort(pos[other], kind="stable")]
    chunks = [np.r_[other[8 * i:8 * i + 8], main[248 * i:248 * i + 248]] for i in range(-(-main.size // 248))]
    srcs = np.concatenate(chunks + [other[8 * len(chunks):]]).astype(np.int64)
    assert np.array_equal(np.sort(srcs), np.arange(g.n))
    got, r = _wave_sums(g, srcs, reorder="none", slots=2, **kw)
    assert r.info["overflow_batches"] == 0
    assert _same(got, _sums(g, srcs, False))
    # leaves folded into the stars' centres: the same sums as with every distance the general way
    # (closeness() through the wave checks the fold against the CPU backend)
    rep = np.full(g.n, -1, np.int64)
    deg = np.diff(g.indptr)
    for c in range(0, 600, 37):
        nb = g.indices[g.indptr[c]:g.indptr[c + 1]]
        rep[c] = nb[deg[nb] == 1][0]
    keep = srcs[~np.isin(srcs, rep[rep >= 0])]
    folded = []
    for opts in (kw, dict(fast_sums=False, recip_shared=0)):
        from distgraph.backends.gpu.msbfs_wave import GpuWave

        w = GpuWave(g.indptr, g.indices, reorder="none", slots=2, **opts)
        w.fold_leaves(rep)
        out = (np.zeros(g.n, np.uint64), np.zeros(g.n, np.int64), np.zeros(g.n, np.uint64),
               np.zeros(g.n, np.uint64), np.zeros(g.n, np.uint64))
        w.run(keep, out)
        normalize_limbs(out[2], out[3], out[4])
        folded.append(out)
    assert _same(*folded) and folded[0][1][rep[rep >= 0]].min() > 0


# ---------------------------------------------------------------- no GPU needed
def test_wave_refuses_directed_graphs():
    # checked before CuPy is imported: the same error with or without a GPU
    from distgraph.backends.gpu.msbfs_wave import GpuWave
    from distgraph.errors import InvalidArgumentError

    d = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=True)
    with pytest.raises(InvalidArgumentError, match="the graph must be undirected"):
        GpuWave(d.indptr, d.indices)


def test_wave_sources_checked():
    from distgraph.backends.gpu.msbfs_wave import _check_sources
    from distgraph.errors import InvalidArgumentError

    _check_sources(np.array([3, 0, 2]), 4)
    with pytest.raises(InvalidArgumentError, match="distinct vertex ids; got '1 repeated'"):
        _check_sources(np.array([0, 0, 1]), 4)
    with pytest.raises(InvalidArgumentError, match=r"vertex ids in \[0, 4\); got 'sources\[1\] = 4'"):
        _check_sources(np.array([0, 4]), 4)
    with pytest.raises(InvalidArgumentError, match="sources\\[0\\] = -1"):
        _check_sources(np.array([-1]), 4)


def test_wave_recip_table_is_the_cpu_fixed_point():
    from distgraph.backends.cpu.bits import recip_fixed
    from distgraph.backends.gpu.msbfs_wave import RECIP_MAX, recip_table

    t = recip_table(RECIP_MAX)
    assert t.dtype == np.uint64 and t.shape == (RECIP_MAX,) and t[0] == 0 and t[1] == 0
    for d in [2, 3, 7, 255, 1000, 4097, RECIP_MAX - 1]:
        assert int(t[d]) == int(recip_fixed(d))
    assert recip_table(2).tolist() == [0, 0] and recip_table(3).tolist() == [0, 0, 2**63]


@pytest.mark.gpu
@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "power.mtx.gz", "grid_8x300", "undirected_disconnected",
                                  "grid_hanging", "path_700", "paths_700_and_small", "path_stars_grid"])
def test_closeness_with_the_wave_equals_cpu(data_dir, monkeypatch, name, fold):
    # closeness(backend="gpu") through WaveRunner ("on"; "auto" for the long grid, a BFS ~300 deep),
    # leaves folded or not (the path's ball batches span 255 and give up their bytes: the
    # bit-parallel runner takes them, folding too)
    from distgraph.algorithms.closeness import closeness
    from distgraph.backends.gpu import msbfs_wave
    from distgraph.runtime.config import config

    if name == "grid_8x300":
        v = np.arange(8 * 300).reshape(8, 300)
        g = Graph.from_edges(np.r_[v[:, :-1].ravel(), v[:-1, :].ravel()], np.r_[v[:, 1:].ravel(), v[1:, :].ravel()],
                             directed=False)
    elif name == "path_700":
        g = Graph.from_edges(np.arange(699), np.arange(1, 700), directed=False)
    elif name == "paths_700_and_small":
        # a path of 700 (ball groups of 256 consecutive vertices: they give up their bytes) and
        # 20 paths of 30 (groups filled from several of them: set aside), one launch of each kind
        e = [(np.arange(699), np.arange(1, 700))] + [(700 + 30 * i + np.arange(29), 701 + 30 * i + np.arange(29))
                                                    for i in range(20)]
        g = Graph.from_edges(np.concatenate([a for a, _ in e]), np.concatenate([b for _, b in e]), directed=False)
    elif name == "path_stars_grid":
        g = _path_stars_grid()
    elif name in GRAPHS:
        g = GRAPHS[name]
    else:
        g = _real(data_dir, name)
    monkeypatch.setattr(config, "gpu_closeness_wave", "auto" if name == "grid_8x300" else "on")
    monkeypatch.setattr(config, "gpu_closeness_fold_leaves", fold)
    made = []
    real = msbfs_wave.WaveRunner.__init__
    monkeypatch.setattr(msbfs_wave.WaveRunner, "__init__", lambda self, *a, **k: made.append(self) or real(self, *a, **k))
    for conv in ("networkx", "harmonic"):
        got = closeness(g, backend="gpu", convention=conv, progress=False)
        want = closeness(g, backend="cpu", convention=conv, progress=False)
        for what in ("farness", "reach", "harmonic", "closeness"):
            np.testing.assert_array_equal(getattr(got, what), getattr(want, what), err_msg=f"{what} {conv}")
    assert len(made) == 2
    if name == "paths_700_and_small":
        assert all(r.info["aside_batches"] > 0 and r.info["overflow_batches"] > 0 for r in made), [r.info for r in made]


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["some", "all"])
def test_wave_aside_sources_on_the_bit_kernel(which):
    # sources set aside run on the bit-parallel kernel on a stream of their own, beside the wave
    g = GRAPHS["kron10"]
    srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    aside = np.zeros(srcs.size, np.bool_)
    aside[(srcs % 3 == 0) if which == "some" else slice(None)] = True
    got, r = _wave_sums(g, srcs, slots=2, aside=aside)
    assert r.info["aside_batches"] == -(-int(aside.sum()) // 256) and r._fallback is not None
    assert _same(got, _sums(g, srcs, False))
