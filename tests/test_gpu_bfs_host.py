"""Host side of the GPU BFS (distgraph.backends.gpu.bfs, .memory) that needs no GPU:
arguments are refused at the boundary, before CuPy or any preprocessing, and the
memory plans count what the engine allocates. (The BFS itself: tests/test_gpu_bfs.py.)"""

import numpy as np
import pytest

from distgraph.errors import InvalidArgumentError
from distgraph.graph.core import Graph


def _g():
    return Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)


@pytest.mark.parametrize("kw, msg", [
    (dict(window=0), "window must be a positive multiple of 8"),
    (dict(window=100), "window must be a positive multiple of 8 .*; got 100"),
    (dict(window=True), "window must be"),
    (dict(window=64.0), "window must be"),
    (dict(udiv_threshold="high"), "udiv_threshold must be a number; got 'high'"),
    (dict(udiv_threshold=float("nan")), "udiv_threshold must be a number"),
    (dict(tiny=-1), "tiny must be an integer >= 0; got -1"),
    (dict(eta=-2), "eta must be an integer >= 0"),
    (dict(alpha=-1.0), "alpha must be a finite number >= 0"),
    (dict(alpha=float("nan")), "alpha must be a finite number"),
    (dict(alpha=True), "alpha must be"),
    (dict(alpha="2"), "alpha must be"),
    (dict(alpha=1e39), r"alpha must be .*float32 .*; got 1e\+39"),  # +inf in the kernel
    (dict(bu_chunk=3), "bu_chunk must be one of 1, 2, 4, 8, 16; got 3"),
    (dict(bu_chunk=True), "bu_chunk must be one of"),
    (dict(bu_chunk=4.0), "bu_chunk must be one of"),
    (dict(bu_list=1), "bu_list must be True, False or 'auto'; got 1"),
    (dict(bu_list="on"), "bu_list must be True, False or 'auto'; got 'on'"),
    (dict(variant="fast"), "variant must be one of auto, plain, lazy, switch"),
    (dict(reorder="metis"), "reorder must be one of"),
])
def test_arguments_refused_before_cupy(kw, msg):
    from distgraph.backends.gpu.bfs import GpuBFS

    with pytest.raises(InvalidArgumentError, match=msg):
        GpuBFS(_g(), **kw)


def test_memory_plans_count_every_buffer():
    from distgraph.backends.gpu.bfs import N_CTR
    from distgraph.backends.gpu.memory import bfs_plan, parents_plan
    from distgraph.formats.bvss import build_bvss

    g = Graph.from_edges(np.arange(99), np.arange(1, 100), directed=False)  # n = 100: not a multiple of 8
    b = build_bvss(g)
    p = bfs_plan(g.n, b, g.m)
    assert p.items["counters"] == 4 * N_CTR
    assert p.items["slice-set claims"] == 4 * 13 and p.items["level"] == 4 * 100
    assert p.items["transpose.indices"] == 4 * g.m and "transpose.indptr" in p.items
    assert "transpose.indptr" not in bfs_plan(g.n, b, None).items
    q = parents_plan(100, 7)
    assert q.items == {"parents": 800, "transpose.indptr (caller ids)": 808, "transpose.indices (caller ids)": 28}
    assert parents_plan(100, None).items == {"parents": 800}


def test_defaults_pass_the_checks():
    """The defaults (config's window, eta, U_div threshold, tiny) are accepted: without a
    GPU the engine gets as far as CuPy."""
    from distgraph.backends.gpu.bfs import GpuBFS
    from distgraph.runtime.context import gpu_count

    if gpu_count():
        pytest.skip("a GPU is visible: tests/test_gpu_bfs.py covers the engine")
    from distgraph.errors import BackendUnavailableError

    with pytest.raises(BackendUnavailableError):
        GpuBFS(_g(), window=np.int64(1024), udiv_threshold=np.float32(1.5))
    with pytest.raises(BackendUnavailableError):
        GpuBFS(_g())


KERNEL = __import__("pathlib").Path(__file__).resolve().parent.parent / "kernels" / "bvss_bfs.cu"


def test_every_kernel_the_engine_names_exists():
    import re

    src = KERNEL.read_text()
    defined = set(re.findall(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))?\s+(\w+)\(', src))
    host = (KERNEL.parent.parent / "distgraph" / "backends" / "gpu" / "bfs.py").read_text()
    named = set(re.findall(r'get_function\("(\w+)"\)', host))
    assert named == {"distgraph_bfs_persistent", "distgraph_bfs_direct", "distgraph_bfs_lazy",
                     "distgraph_bfs_parents"}
    assert named <= defined, named - defined


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not found")
def test_lazy_kernel_is_compiled_without_the_direct_code(tmp_path):
    # why the engine launches distgraph_bfs_lazy: with the direct code in the same function
    # the lazy path got 64 registers (session 1's kernel: 53) and ran slower on the H200
    import re
    import subprocess

    r = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v", "-I", str(KERNEL.parent),
                        "-o", str(tmp_path / "k.cubin"), str(KERNEL)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    regs = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", r.stderr, re.S))
    regs = {k: int(v) for k, v in regs.items()}
    assert regs["distgraph_bfs_lazy"] < regs["distgraph_bfs_persistent"], regs
    assert regs["distgraph_bfs_direct"] <= 64 and regs["distgraph_bfs_persistent"] <= 64, regs  # 4 blocks/SM


@pytest.mark.parametrize("reorder", ["rcm", "none"])
def test_plan_counts_the_id_map_of_a_reordering(monkeypatch, reorder):
    """With a reordering the engine holds the id map to the caller's ids on the device (8n,
    int64) and gathers the levels through it (4n): both are in the plan it checks and
    records (before, neither was counted)."""
    import types

    import distgraph.backends.gpu.bfs as bfs_mod
    from distgraph.backends.gpu.memory import bfs_plan as real_plan

    plans = []

    class Stop(Exception):
        pass

    def plan(*a, **kw):
        plans.append(real_plan(*a, **kw))
        raise Stop

    monkeypatch.setattr(bfs_mod, "import_cupy", lambda: types.SimpleNamespace())
    monkeypatch.setattr(bfs_mod, "bfs_plan", plan)
    g = Graph.from_edges(np.arange(99), np.arange(1, 100), directed=False)  # n = 100
    with pytest.raises(Stop):
        bfs_mod.GpuBFS(g, reorder=reorder, cache_dir=False, variant="plain")
    items = plans[0].items
    if reorder == "none":
        assert "id map (caller ids)" not in items and "levels in caller ids" not in items
    else:
        assert items["id map (caller ids)"] == 8 * 100 and items["levels in caller ids"] == 4 * 100



def test_levels_from_stamps(bench_script):
    """Stamps of the BFS profiling build -> per-level times: consecutive stamped levels, the
    last stamp the end; an unstamped gap (levels block 0 ran alone) goes to the level before."""
    levels_from_stamps = bench_script("gpu_bfs.py", "gpu_bfs_t").levels_from_stamps
    ns = np.zeros(10, np.uint64)
    ns[1], ns[2], ns[5], ns[6] = 1000, 3000, 9000, 9500  # level 2 ran tiny levels 2-4 alone
    nq = np.array([0, 1, 5, 0, 0, 40, 0, 0, 0, 0], np.int32)
    kind = np.array([-1, 0, 3, -1, -1, 2, 1, -1, -1, -1], np.int32)
    out = levels_from_stamps(ns, nq, kind)
    assert [(r["level"], r["us"], r["queue_vss"], r["kind"]) for r in out["levels"]] == \
        [(1, 2.0, 1, "direct"), (2, 6.0, 5, "tiny_block0"), (5, 0.5, 40, "bottom_up")]
    assert out["stamped_us"] == 8.5
    assert out["by_kind"]["bottom_up"] == {"levels": 1, "us": 0.5, "queue_vss": 40}
    assert levels_from_stamps(np.zeros(4, np.uint64), nq, kind)["levels"] == []
