"""Tests of the key-sort CSR builder of generated graphs (distgraph/generators/_csr_device.py).

Reference: the host's counting-sort builder (``build_csr(..., device="cpu")``) and
``Graph.from_edges``.  Every CPU test runs the builder with ``xp=numpy``; the ``gpu``
tests run the same comparisons with CuPy, so a wrong device path fails them.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distgraph.errors import BackendUnavailableError, DeviceMemoryError, InvalidArgumentError
from distgraph.generators import kronecker, kronecker_edges, urand, urand_edges
from distgraph.generators._csr import build_csr
from distgraph.generators._csr_device import _group, build_csr_keysort, memory_plan
from distgraph.graph import Graph
from distgraph.runtime.config import reload_config

EDGES = {"kron": kronecker_edges, "urand": urand_edges}


def assert_same(g, ref):
    assert g.directed == ref.directed and g.n == ref.n
    assert g.indptr.dtype == ref.indptr.dtype == np.int64
    assert g.indices.dtype == ref.indices.dtype
    assert isinstance(g.indptr, np.ndarray) and isinstance(g.indices, np.ndarray)
    assert np.array_equal(g.indptr, ref.indptr)
    assert np.array_equal(g.indices, ref.indices)


def generated(family, scale, directed, xp, **kw):
    n = 1 << scale
    ref = build_csr(EDGES[family](scale), n, 16 * n, directed=directed, drop_self_loops=True, device="cpu")
    g = build_csr_keysort(EDGES[family](scale), n, 16 * n, directed=directed, drop_self_loops=True, xp=xp, **kw)
    return g, ref


def random_chunks(seed, n, m, loops=40, repeats=300, dtype=np.int64):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m).astype(dtype)
    dst = rng.integers(0, n, m).astype(dtype)
    dst[:loops] = src[:loops]  # self-loops
    src[loops:loops + repeats] = src[-repeats:]  # repeated arcs, and reverses of others
    dst[loops:loops + repeats] = dst[-repeats:]
    src[loops + repeats:loops + 2 * repeats:2] = dst[-repeats::2]
    dst[loops + repeats:loops + 2 * repeats:2] = src[-repeats::2]
    cut = [0, m // 3, m // 3, m // 2, m]  # one chunk empty
    return src, dst, [(src[a:b], dst[a:b]) for a, b in zip(cut[:-1], cut[1:])]


# --------------------------------------------------------------- numpy (CPU) path
@pytest.mark.parametrize("family", ["kron", "urand"])
@pytest.mark.parametrize("scale", [5, 11, 15])
@pytest.mark.parametrize("directed", [False, True])
def test_generated_equal(family, scale, directed):
    assert_same(*generated(family, scale, directed, np))


@pytest.mark.parametrize("family", ["kron", "urand"])
@pytest.mark.parametrize("directed", [False, True])
def test_generated_equal_in_groups_and_slices(family, directed):
    # scale 14: 2**14 source ranges of one vertex; many groups of at most 40000 keys and
    # steps of 3001 elements (rows cross step boundaries)
    assert_same(*generated(family, 14, directed, np, max_group_keys=40_000, slice_size=3001))


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_loops_and_repeats_equal(directed, drop, dtype):
    n = 700
    src, dst, chunks = random_chunks(3, n, 9000, dtype=dtype)
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    ref2 = build_csr(chunks, n, src.size + 5, directed=directed, drop_self_loops=drop, device="cpu")
    assert_same(ref2, ref)
    for kw in ({}, {"max_group_keys": 2000, "slice_size": 999}):
        g = build_csr_keysort(chunks, n, src.size + 5, directed=directed, drop_self_loops=drop, xp=np, **kw)
        assert_same(g, ref)
    if not drop:
        assert any(v in g.indices[g.indptr[v]:g.indptr[v + 1]] for v in range(n))  # loops were kept


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 70).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=150))),
    st.booleans(), st.booleans(), st.integers(1, 40), st.integers(1, 20))
def test_property(n_arcs, directed, drop, max_keys, step):
    n, arcs = n_arcs
    src = np.array([a for a, _ in arcs], dtype=np.int64)
    dst = np.array([b for _, b in arcs], dtype=np.int64)
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    loop = src == dst
    rows = np.bincount(src[~loop] if drop else src, minlength=n)  # arcs per row before deduplication
    if not directed:
        rows += np.bincount(dst[~loop], minlength=n)
    if rows.max(initial=0) > max_keys:
        with pytest.raises(DeviceMemoryError, match="max_group_keys"):
            build_csr_keysort([(src, dst)], n, len(arcs), directed=directed, drop_self_loops=drop, xp=np,
                              max_group_keys=max_keys, slice_size=step)
        max_keys = int(rows.max())
    g = build_csr_keysort([(src, dst)], n, len(arcs), directed=directed, drop_self_loops=drop, xp=np,
                          max_group_keys=max_keys, slice_size=step)
    assert_same(g, ref)


def test_empty_and_too_many():
    g = build_csr_keysort([(np.zeros(0, int), np.zeros(0, int))], 5, 0, directed=False, drop_self_loops=True, xp=np)
    assert g.n == 5 and g.m == 0 and g.indptr.tolist() == [0] * 6 and g.indices.dtype == np.int32
    with pytest.raises(InvalidArgumentError, match="capacity"):
        build_csr_keysort([(np.zeros(4, int), np.zeros(4, int))], 5, 3, directed=False, drop_self_loops=True, xp=np)
    with pytest.raises(InvalidArgumentError, match=r"n <= 2\*\*31"):
        build_csr_keysort([], (1 << 31) + 1, 0, directed=False, drop_self_loops=True, xp=np)


# ------------------------------------------------------------------- memory plan
def test_memory_plan_items():
    p = memory_plan(1 << 20, 16 << 20, 1000, 10, slice_size=1 << 10)
    assert p.items["edges (src, dst)"] == 2 * 4 * (16 << 20)
    assert p.items["group keys (int64)"] == 8000 and p.items["group degrees"] == 88
    assert p.items["sort buffer"] >= 8000
    assert memory_plan(1 << 31, 10, 0, 0).items["edges (src, dst)"] == 2 * 8 * 10  # int64 ids


def short_memory(n, capacity, keys, parts):
    """free_bytes that leaves room for the edges and about 1/parts of the keys at once."""
    plan = memory_plan(n, capacity, 0, 0)
    group = memory_plan(n, capacity, keys // parts, n)
    budget = group.total - plan.total
    return int(plan.total + budget / 0.95) + 1


def spy_groups(monkeypatch):
    from distgraph.generators import _csr_device

    seen = []

    def spy(*a):
        seen.append(_group(*a))
        return seen[-1]

    monkeypatch.setattr(_csr_device, "_group", spy)
    return seen


@pytest.mark.parametrize("directed", [False, True])
def test_groups_when_memory_is_short(monkeypatch, directed):
    scale, n = 15, 1 << 15
    seen = spy_groups(monkeypatch)
    free = short_memory(n, 16 * n, 16 * n * (1 if directed else 2), 4)
    assert_same(*generated("urand", scale, directed, np, free_bytes=free))
    groups, too_big = seen[-1]
    assert too_big is None and len(groups) >= 4
    assert [g[0] for g in groups[1:]] == [g[1] for g in groups[:-1]] and groups[-1][1] == n


def test_memory_errors_before_allocating():
    n = 1 << 12
    edges = memory_plan(n, 16 * n, 0, 0).total
    with pytest.raises(DeviceMemoryError, match="edges"):
        build_csr_keysort(kronecker_edges(12), n, 16 * n, directed=False, drop_self_loops=True, xp=np,
                          free_bytes=edges // 2)
    with pytest.raises(DeviceMemoryError, match="largest source range|DISTGRAPH_GEN_DEVICE=cpu"):
        build_csr_keysort(kronecker_edges(12), n, 16 * n, directed=False, drop_self_loops=True, xp=np,
                          free_bytes=int(edges / 0.95) + 1000)


class NumpyAsCupy:
    """numpy behind CuPy's name and the CuPy calls the builder makes (device free memory,
    pool, stream, device id), so the CPU tests run the builder's CuPy branches."""

    __name__ = "cupy"

    def __init__(self, free):
        from types import SimpleNamespace as NS

        self.freed = 0
        self.cuda = NS(runtime=NS(memGetInfo=lambda: (free, 2 * free)), memory=NS(OutOfMemoryError=MemoryError),
                       Device=lambda: NS(id=0), Stream=NS(null=NS(synchronize=lambda: None)))
        self.asnumpy = np.asarray

    def get_default_memory_pool(self):
        from types import SimpleNamespace as NS

        return NS(free_bytes=lambda: 0, free_all_blocks=lambda: setattr(self, "freed", self.freed + 1))

    @staticmethod
    def bincount(x, weights=None, minlength=None):
        # as cupy.bincount: the size is taken from the maximum, so an empty x raises
        size = int(np.max(x)) + 1
        return np.bincount(x, weights, max(size, minlength or 0))

    def __getattr__(self, name):
        return getattr(np, name)


def test_cupy_branches(monkeypatch):
    seen = spy_groups(monkeypatch)
    n = 1 << 13
    xp = NumpyAsCupy(1 << 40)
    assert_same(*generated("kron", 13, False, xp))
    assert xp.freed == 1 and len(seen[-1][0]) == 1
    xp = NumpyAsCupy(short_memory(n, 16 * n, 32 * n, 3))  # free device memory decides the groups
    assert_same(*generated("kron", 13, False, xp))
    assert xp.freed == 1 and len(seen[-1][0]) >= 3
    xp = NumpyAsCupy(memory_plan(n, 16 * n, 0, 0).total // 2)
    with pytest.raises(DeviceMemoryError, match="on device 0"):
        generated("urand", 13, True, xp)
    assert xp.freed == 1  # also after an error


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("drop", [False, True])
def test_slices_of_self_loops_with_cupys_bincount(directed, drop):
    # a counting slice holding only self-loops leaves nothing to count (dropped, or only
    # forward when undirected): cupy.bincount refuses an empty array, so it is not called
    n = 50
    src, dst, _ = random_chunks(6, n, 2000)
    loops = np.arange(7) % n
    src, dst = np.r_[src, loops], np.r_[dst, loops]  # the last slice of 7: self-loops only
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    got = build_csr_keysort([(src, dst)], n, src.size, directed=directed, drop_self_loops=drop,
                            xp=NumpyAsCupy(1 << 40), slice_size=1000)
    assert_same(got, ref)


# ------------------------------------------------------------ config and dispatch
def test_config_key():
    assert reload_config({}).gen_device == "cpu"
    assert reload_config({"DISTGRAPH_GEN_DEVICE": "gpu"}).gen_device == "gpu"
    with pytest.raises(InvalidArgumentError, match="DISTGRAPH_GEN_DEVICE"):
        reload_config({"DISTGRAPH_GEN_DEVICE": "tpu"})
    with pytest.raises(InvalidArgumentError, match="device"):
        kronecker(4, device="tpu")


def test_config_selects_builder(monkeypatch):
    from distgraph.generators import _csr_device
    from distgraph.runtime.config import config

    calls = []

    def fake(chunks, n, capacity, **kw):
        calls.append(kw)
        return build_csr_keysort(chunks, n, capacity, xp=np, **kw)

    monkeypatch.setattr(_csr_device, "build_csr_keysort", fake)
    monkeypatch.setattr(config, "gen_device", "gpu")
    g = urand(9)
    assert len(calls) == 1 and calls[0]["drop_self_loops"] and calls[0]["meta"]["generator"] == "urand"
    assert_same(g, urand(9, device="cpu"))
    assert g.meta == urand(9, device="cpu").meta
    h = kronecker(9, directed=True)
    assert len(calls) == 2 and calls[1]["directed"] is True
    assert_same(h, kronecker(9, directed=True, device="cpu"))


def test_gpu_request_without_gpu():
    from distgraph.runtime.context import gpu_count

    if gpu_count() > 0:
        pytest.skip("a GPU is visible")
    with pytest.raises(BackendUnavailableError):
        kronecker(6, device="gpu")


# ------------------------------------------------------------------------ GPU
@pytest.mark.gpu
@pytest.mark.parametrize("family", ["kron", "urand"])
@pytest.mark.parametrize("scale", [5, 11, 16])
@pytest.mark.parametrize("directed", [False, True])
def test_gpu_generated_equal(family, scale, directed):
    import cupy

    assert_same(*generated(family, scale, directed, cupy))


@pytest.mark.gpu
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("drop", [False, True])
def test_gpu_loops_repeats_and_groups(directed, drop):
    import cupy

    n = 700
    src, dst, chunks = random_chunks(4, n, 9000, dtype=np.int32)
    ref = Graph.from_edges(src, dst, n=n, directed=directed, drop_self_loops=drop)
    for kw in ({}, {"max_group_keys": 2000, "slice_size": 999}):
        assert_same(build_csr_keysort(chunks, n, src.size, directed=directed, drop_self_loops=drop, xp=cupy, **kw),
                    ref)


@pytest.mark.gpu
def test_gpu_generators_and_memory_plan(monkeypatch):
    import cupy

    seen = spy_groups(monkeypatch)
    pool = cupy.get_default_memory_pool()
    used, held = pool.used_bytes(), pool.total_bytes()
    assert_same(kronecker(16, device="gpu"), kronecker(16, device="cpu"))
    assert pool.used_bytes() <= used and pool.total_bytes() <= held + (1 << 20)  # the build's memory released
    for directed in (False, True):
        assert_same(kronecker(14, directed=directed, device="gpu"), kronecker(14, directed=directed, device="cpu"))
        assert_same(urand(14, directed=directed, device="gpu"), urand(14, directed=directed, device="cpu"))
    n = 1 << 14
    edges = memory_plan(n, 16 * n, 0, 0).total
    assert_same(*generated("kron", 14, False, cupy, free_bytes=short_memory(n, 16 * n, 32 * n, 4)))
    assert len(seen[-1][0]) >= 4  # several groups
    with pytest.raises(DeviceMemoryError):
        build_csr_keysort(kronecker_edges(14), n, 16 * n, directed=False, drop_self_loops=True, xp=cupy,
                          free_bytes=edges // 2)
    with pytest.raises(DeviceMemoryError):  # the plan checks the real device without free_bytes
        build_csr_keysort(kronecker_edges(14), n, 1 << 40, directed=False, drop_self_loops=True, xp=cupy)
