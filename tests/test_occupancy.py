"""``loader.blocks_per_sm``: co-resident blocks of a kernel per SM, from CUDA's occupancy API or
estimated from the registers, and the four grids sized by it (GpuBFS, the Bellman-Ford queue
kernel and persistent batch kernel, the MS-BFS kernels). No GPU: stand-ins for
``cupy.cuda.driver`` answer the occupancy call (or fail it)."""

import sys
import types

import pytest

from distgraph.backends.gpu import loader
from distgraph.backends.gpu.loader import blocks_per_sm, estimate_blocks_per_sm, sm_count

SMS = 132


def _driver(answer, calls):
    """A ``cupy.cuda.driver`` stand-in whose occupancy call records its arguments and returns
    ``answer`` (or raises it)."""
    def occ(ptr, block, smem):
        calls.append((ptr, block, smem))
        if isinstance(answer, Exception):
            raise answer
        return answer

    mod = types.ModuleType("cupy.cuda.driver")
    mod.occupancyMaxActiveBlocksPerMultiprocessor = occ
    return mod


@pytest.fixture
def fake_cupy(monkeypatch):
    """``install(answer)``: CuPy stand-in modules in ``sys.modules`` (a device of SMS SMs, the
    driver answering ``answer``); returns ``(cupy, calls)``."""
    def install(answer):
        calls = []
        cp = types.ModuleType("cupy")
        cp.cuda = types.ModuleType("cupy.cuda")
        cp.cuda.driver = _driver(answer, calls)
        cp.cuda.Device = lambda *a: types.SimpleNamespace(attributes={"MultiProcessorCount": SMS}, id=0)
        for name, mod in (("cupy", cp), ("cupy.cuda", cp.cuda), ("cupy.cuda.driver", cp.cuda.driver)):
            monkeypatch.setitem(sys.modules, name, mod)
        return cp, calls

    return install


def test_blocks_per_sm_asks_the_driver():
    """The driver's answer with source "driver", asked for the compiled function of a RawKernel
    (``.kernel``) or a Function itself, with the block and the dynamic shared memory given;
    0 (no block fits) is the driver's answer too, not replaced by the estimate."""
    calls = []
    raw = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=11), num_regs=32)
    assert blocks_per_sm(raw, 256, driver=_driver(5, calls)) == (5, "driver")
    assert blocks_per_sm(types.SimpleNamespace(ptr=12), 512, 4096, driver=_driver(3, calls)) == (3, "driver")
    assert calls == [(11, 256, 0), (12, 512, 4096)]
    assert blocks_per_sm(raw, 256, driver=_driver(0, calls)) == (0, "driver")


def test_blocks_per_sm_estimates_without_the_driver(monkeypatch):
    """Where the driver cannot be asked (it raises, no CuPy, a stand-in kernel without ``ptr``):
    the register estimate, source "registers"."""
    k = types.SimpleNamespace(ptr=1, num_regs=32)
    assert blocks_per_sm(k, 256, driver=_driver(RuntimeError("no context"), [])) == (8, "registers")
    monkeypatch.setitem(sys.modules, "cupy", None)   # import cupy raises ImportError
    assert blocks_per_sm(k, 256) == (8, "registers")
    assert blocks_per_sm(types.SimpleNamespace(num_regs=32), 256, driver=_driver(5, [])) == (8, "registers")


def test_blocks_per_sm_imports_the_driver(fake_cupy):
    """Without ``driver=``, ``cupy.cuda.driver`` is imported at the call (a stand-in here)."""
    _, calls = fake_cupy(6)
    assert blocks_per_sm(types.SimpleNamespace(ptr=7), 128, 100) == (6, "driver")
    assert calls == [(7, 128, 100)]


@pytest.mark.parametrize("regs,block,smem,expect", [
    (32, 256, 0, 8),             # 2048 threads per SM
    (64, 256, 0, 4),             # 64 K registers per SM
    (None, 256, 0, 4),           # registers unknown: 64
    (255, 256, 0, 1),            # 255 registers: 8192 a warp, one block
    (16, 32, 0, 32),             # 32 blocks per SM at most
    (32, 256, 8 * 1024, 8),      # shared memory not the bound
    (32, 256, 100 * 1024, 2),    # 228 KB per SM
    (64, 1024, 44 * 1024, 1),
    (32, 256, 300 * 1024, 1),    # at least one
])
def test_estimate_blocks_per_sm(regs, block, smem, expect):
    k = types.SimpleNamespace() if regs is None else types.SimpleNamespace(num_regs=regs)
    assert estimate_blocks_per_sm(k, block, smem) == expect


def test_sm_count(fake_cupy):
    cp, _ = fake_cupy(1)
    assert sm_count(cp) == SMS


def _bfs_grid(kernel):
    from distgraph.backends.gpu.bfs import GpuBFS

    eng = types.SimpleNamespace(_cp=sys.modules["cupy"], _kernel=kernel, info={})
    return GpuBFS._grid_size(eng), eng.info["occupancy_source"]


def test_gpu_bfs_grid(fake_cupy):
    """GpuBFS._grid_size: the driver's blocks per SM times the SMs, info's occupancy_source
    "driver"; the register estimate (and "registers") where the driver fails or finds no block."""
    k = types.SimpleNamespace(ptr=3, num_regs=64)   # estimate: 4 blocks of 256
    fake_cupy(3)
    assert _bfs_grid(k) == (3 * SMS, "driver")
    fake_cupy(0)
    assert _bfs_grid(k) == (4 * SMS, "registers")
    fake_cupy(RuntimeError("no driver"))
    assert _bfs_grid(k) == (4 * SMS, "registers")


def test_bellman_ford_queue_grid(fake_cupy):
    """bellman_ford._grid: the driver's count, at least one block an SM; where the driver
    fails, one block an SM (not the register estimate, 16 here: the queue kernel's blocks
    wait on each other)."""
    from distgraph.backends.gpu.bellman_ford import _grid

    k = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=9), num_regs=32)
    cp, calls = fake_cupy(5)
    assert _grid(cp, k, 128) == 5 * SMS and calls == [(9, 128, 0)]
    cp, _ = fake_cupy(0)
    assert _grid(cp, k, 128) == SMS
    cp, _ = fake_cupy(RuntimeError("no driver"))
    assert _grid(cp, k, 128) == SMS


def test_bellman_ford_persistent_batch_grid(fake_cupy, monkeypatch):
    """RoundsSSSP._batch_persist: min(BATCH_PERSIST, the driver's count) blocks an SM; None when
    the driver says no block fits, and when it cannot be asked (a cooperative grid is not sized
    from an estimate)."""
    from distgraph.backends.gpu import bellman_ford as gbf

    fn = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=1234), num_regs=32)
    monkeypatch.setattr(loader, "get_module", lambda name, defines=None, options=(), *, cooperative=False:
                        types.SimpleNamespace(get_function=lambda name: fn))
    monkeypatch.setattr(gbf, "BATCH_PERSIST", 4)
    for answer, want in ((3, (fn, 3 * SMS)), (6, (fn, 4 * SMS)), (0, None), (RuntimeError("no driver"), None)):
        cp, calls = fake_cupy(answer)
        monkeypatch.setattr(loader, "import_cupy", lambda: cp)
        assert gbf.RoundsSSSP._batch_persist({}, "i64") == want, answer
        assert calls == [(1234, 256, 0)]


def test_msbfs_grid_size(fake_cupy):
    """msbfs._grid_size: the driver's count for the block and shared memory given, at least
    one, times the SMs; the estimate (registers and shared memory) where the driver fails."""
    from distgraph.backends.gpu.msbfs import _grid_size

    k = types.SimpleNamespace(ptr=5, num_regs=32)
    cp, calls = fake_cupy(7)
    assert _grid_size(cp, k, 256, smem=1024) == 7 * SMS and calls == [(5, 256, 1024)]
    cp, _ = fake_cupy(0)
    assert _grid_size(cp, k, 256) == SMS
    cp, _ = fake_cupy(RuntimeError("no driver"))
    assert _grid_size(cp, k, 256, smem=100 * 1024) == 2 * SMS
