"""Graphs of more than 2**31 arcs (issue 4: GAP kron:27 / urand:27, ~4.3e9 arcs) on the path
of benchmarks/gpu_bfs.py: the limits and choices that depend on a size, checked at small size
(thresholds monkeypatched, arrays that cost no memory), and one GPU run of the benchmark's
no-SpMV path. The BFS itself: tests/test_gpu_bfs.py."""

import types

import numpy as np
import pytest

from distgraph.errors import InvalidArgumentError
from distgraph.graph.core import Graph


@pytest.fixture
def gb(bench_script):
    return bench_script("gpu_bfs.py", "gpu_bfs_gap27_t")


# ------------------------------------------------------------------ benchmark arguments
def test_spmv_is_skipped_from_2_31_arcs(gb):
    """cupyx's csr_matrix holds int32 indptr/indices: the SpMV BFS must be refused, with the
    reason, from 2**31 arcs on (it would wrap silently), and allowed below."""
    assert gb.spmv_skip_reason(2**31 - 1) is None
    why = gb.spmv_skip_reason(2**31)
    assert "int32" in why and str(2**31) in why
    fake = types.SimpleNamespace(m=4_294_967_296, n=2**27)  # urand:27's size; refused before cupy
    with pytest.raises(ValueError, match="SpmvBFS: cupyx"):
        gb.SpmvBFS(fake)


def test_specs_with_and_without_the_none_ordering(gb):
    assert gb.with_none("kron:24") and gb.with_none("kron:24+w16384") and gb.with_none("urand:27+none")
    assert not gb.with_none("kron:27+auto") and not gb.with_none("kron:27+auto+w65536")
    assert gb.split_spec("kron:27+auto", 16384) == ("kron:27", [16384])
    assert gb.split_spec("kron:27+auto+w65536", 16384) == ("kron:27", [65536])
    assert gb.split_spec("urand:27+none", 16384) == ("urand:27", [])


def test_orderings_without_none(gb):
    from distgraph.generators import kronecker

    g = kronecker(10)
    args = types.SimpleNamespace(window=None)
    assert gb._orderings(g, [64], False, args, none=False) == [("auto", "auto", 64)]
    assert gb._orderings(g, [64], False, args) == [("none", "none", 64), ("auto", "auto", 64)]
    assert [o[0] for o in gb._orderings(g, [], False, args, none=False)] == ["none"]  # none only


def test_new_arguments(gb):
    p = gb.build_parser()
    a = p.parse_args(["--variants", "lazy,switch,switch-eq6,switch~a0.5", "--skip-baselines", "spmv,cpu",
                      "--cpu-sources", "1", "--no-cache"])
    assert a.variants == ("lazy", "switch", "switch-eq6", "switch~a0.5")
    assert a.skip_baselines == frozenset({"spmv", "cpu"}) and a.cpu_sources == 1 and a.no_cache
    d = p.parse_args([])
    assert d.variants is None and d.skip_baselines == frozenset() and d.cpu_sources == 4 and not d.no_cache
    for bad in (["--variants", "fast"], ["--variants", "lazy,lazy"], ["--variants", "switch~ax"],
                ["--skip-baselines", "gpu"], ["--cpu-sources", "-1"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)


# ------------------------------------------------------------------ host-side sizes
def test_permute_graph_keeps_no_arc_positions_without_weights():
    """The old position of every arc (int64, 34 GB at kron:27) is only for the weights."""
    import tracemalloc

    from distgraph.formats.reorder import permute_graph

    rng = np.random.default_rng(3)
    n, m = 2000, 200_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    g = Graph.from_edges(src, dst, n=n, directed=True)
    gw = Graph(g.indptr, g.indices, np.arange(g.m, dtype=np.float64), directed=True)
    p = rng.permutation(n)
    permute_graph(g, p)  # compile outside the measurement
    tracemalloc.start()
    h = permute_graph(g, p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * g.m + 64 * n + (1 << 20), peak  # indices + O(n), no 8 bytes per arc
    hw = permute_graph(gw, p)
    assert np.array_equal(h.indptr, hw.indptr) and np.array_equal(h.indices, hw.indices)
    assert h.weights is None
    # the weights travel with their arcs
    old_pos = hw.weights.astype(np.int64)
    src_old = np.repeat(np.arange(n), np.diff(g.indptr))
    assert np.array_equal(p[src_old[old_pos]], np.repeat(np.arange(n), np.diff(hw.indptr)))
    assert np.array_equal(p[g.indices[old_pos]], hw.indices)


def test_checksum_is_hashed_once_per_graph(monkeypatch):
    """The BVSS cache key (blake2b over the CSR; tens of seconds at 2**27 vertices) is computed
    once per graph object, and again when its arrays are replaced."""
    import hashlib

    import distgraph.formats.bvss as bv

    calls = []
    real = hashlib.blake2b

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(bv.hashlib, "blake2b", counting)
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    a = bv.graph_checksum(g)
    assert bv.graph_checksum(g) == a and len(calls) == 1
    same = Graph(g.indptr.copy(), g.indices.copy(), directed=False)
    assert bv.graph_checksum(same) == a and len(calls) == 2
    g.indices = g.indices.copy()
    g.indices[0] = 3
    assert bv.graph_checksum(g) != a and len(calls) == 3
    g.directed = True
    b = bv.graph_checksum(g)
    assert b != a and len(calls) == 4


def test_gpu_limits_fit_32_bit_kernel_indices():
    """MAX_VSS: lane words at vss * 32 + lane and queue entries at 3 * MAX_VSS (int2) stay
    32-bit; MAX_VERTICES: a grid-stride loop of 2**22 threads stays below 2**31."""
    from distgraph.backends.gpu.bfs import MAX_VERTICES
    from distgraph.formats.bvss import MAX_VSS

    assert (MAX_VSS - 1) * 32 + 31 <= 2**31 - 1
    assert 3 * MAX_VSS * 2 <= 2**31 - 1
    assert MAX_VERTICES - 1 + 2**22 <= 2**31 - 1 and MAX_VERTICES + 31 <= 2**31 - 1


def test_gpu_bfs_refuses_too_many_vertices_before_cupy():
    from distgraph.backends.gpu.bfs import MAX_VERTICES, GpuBFS

    n = MAX_VERTICES + 1
    g = Graph(np.broadcast_to(np.int64(0), (n + 1,)), np.zeros(0, np.int32), directed=False)  # no memory
    with pytest.raises(InvalidArgumentError, match=r"at most 2\*\*31 - 2\*\*22 .*got n=" + str(n)):
        GpuBFS(g)


def test_gpu_bfs_refuses_a_bvss_over_max_vss(monkeypatch):
    """A BVSS from the cache is not checked by build_bvss: the engine refuses it by name."""
    import distgraph.backends.gpu.bfs as bfs_mod
    from distgraph.formats.bvss import build_bvss

    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    b = build_bvss(g)
    monkeypatch.setattr(bfs_mod, "MAX_VSS", b.num_vss - 1)
    monkeypatch.setattr(bfs_mod, "import_cupy", lambda: types.SimpleNamespace())
    with pytest.raises(InvalidArgumentError, match="at most MAX_VSS"):
        bfs_mod.GpuBFS(g, cache_dir=False)


# ------------------------------------------------------------------ GPU: the no-SpMV path
@pytest.mark.gpu
def test_bench_graph_without_spmv_checks_against_the_cpu(gb, monkeypatch, tmp_path):
    """The path of a graph over 2**31 arcs, on kron:12 with the threshold lowered: no SpMV row
    (reason recorded), the CPU backend's levels are the reference every variant matches, the
    auto ordering alone (+auto), and the progress callback sees every phase."""
    pytest.importorskip("cupy")
    monkeypatch.setattr(gb, "SPMV_MAX_ARCS", 1000)
    args = gb.build_parser().parse_args(["--variants", "lazy,switch,switch-eq6", "--cpu-sources", "2",
                                         "--sources", "8", "--no-cache"])
    seen = []
    out = gb.bench_graph("kron:12+auto", args, False, None, progress=lambda o: seen.append(sorted(o)))
    assert "int32" in out["cupy_spmv"]["skipped"] and out["reference"] == "distgraph_cpu"
    assert out["distgraph_cpu"]["sources"] == 2 and not out["distgraph_cpu"]["warmup"]
    assert list(out["blest"]) == ["auto"]
    res = out["blest"]["auto"]
    assert res["checked_sources"] == 2 and res["mismatches"] == []
    assert set(out["variants"]) <= set(res) and out["blest_auto"]["ms"] > 0
    assert "speedup_auto_vs_cupy_spmv" not in out and out["parents"]["sources"] == 7
    assert len(seen) >= 4 and "blest" in seen[-1]
