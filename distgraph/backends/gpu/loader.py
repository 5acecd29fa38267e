"""The one kernel loader of distgraph: ``kernels/<name>.cu`` -> a CuPy ``RawModule``.

``get_module(name, defines={...}, options=(...))`` reads the kernel file, prepends one
``#define NAME VALUE`` line per define (the ``.cu`` files keep ``#ifndef`` defaults, so
they also compile standalone with nvcc), and compiles it with NVRTC through CuPy for
the current device's architecture with ``-std=c++17`` and ``-I kernels/``.  Modules are
memoized per (device, name, defines, options); compiled binaries are cached on disk by
CuPy under ``<config.cache_dir>/kernels`` (unless ``CUPY_CACHE_DIR`` is set), so a
second process does not recompile.

No ``.cu`` text is assembled anywhere else.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..._kernels import kernels_dir as _kernels_dir
from ...errors import BackendUnavailableError

__all__ = ["KERNEL_DIR", "blocks_per_sm", "estimate_blocks_per_sm", "get_module", "import_cupy", "kernel_source",
           "sm_count"]

try:  # the checkout's kernels/, or the copy a wheel installs (distgraph/_kernels.py)
    KERNEL_DIR = _kernels_dir()
except FileNotFoundError:  # reported when a kernel is first compiled
    KERNEL_DIR = Path(__file__).resolve().parents[3] / "kernels"
_MEMO: dict = {}
_LOCK = threading.Lock()


def import_cupy():
    """Import CuPy and check that a GPU is visible, or raise BackendUnavailableError."""
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the install
        raise BackendUnavailableError(
            "the GPU backend needs CuPy; install it with `pip install cupy-cuda12x` "
            "(or cupy-cuda13x to match your CUDA)") from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDA driver missing or broken
        raise BackendUnavailableError(f"CuPy is installed but no CUDA device is usable: {e}") from e
    if count == 0:
        raise BackendUnavailableError("CuPy is installed but no CUDA device is visible")
    return cupy


def sm_count(cp=None) -> int:
    """Streaming multiprocessors of the current device (``cp``: CuPy or a stand-in; default
    :func:`import_cupy`)."""
    cp = import_cupy() if cp is None else cp
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def estimate_blocks_per_sm(kernel, block: int, smem: int = 0) -> int:
    """Co-resident blocks of ``block`` threads per SM estimated from ``kernel.num_regs``
    (registers per thread; 64 where the kernel does not say) and ``smem`` bytes of dynamic
    shared memory a block, with sm_90's limits: 64 K registers (allocated per warp in units of
    256), 2048 threads and 32 blocks per SM, 228 KB of shared memory per SM (counted as
    ``smem`` + 2 KB a block: the 1 KB the system reserves, and a margin). At least 1. Static
    shared memory is not seen: an upper bound for kernels that have some."""
    block = max(int(block), 1)
    regs = max(int(getattr(kernel, "num_regs", 64)), 1)
    per_warp = -(-regs * 32 // 256) * 256
    per_sm = min(65536 // (per_warp * max(block // 32, 1)), 2048 // block, 32)
    if smem:
        per_sm = min(per_sm, (228 * 1024) // (int(smem) + 2048))
    return max(1, per_sm)


def blocks_per_sm(kernel, block: int, smem: int = 0, *, driver=None) -> tuple[int, str]:
    """Co-resident blocks of ``kernel`` per SM, launched in blocks of ``block`` threads with
    ``smem`` bytes of dynamic shared memory each, as ``(per_sm, source)``.

    ``source`` is ``"driver"`` when CUDA's occupancy API answered
    (``cuOccupancyMaxActiveBlocksPerMultiprocessor``); ``per_sm`` is then its answer, which is 0
    when not one block fits (a real answer: callers decide what it means for them). It is
    ``"registers"`` when the driver could not be asked (no CuPy, a stand-in kernel without a
    ``ptr``, any error): ``per_sm`` is then :func:`estimate_blocks_per_sm`, at least 1.

    ``kernel``: a ``cupy.RawKernel`` (its compiled ``.kernel`` is asked) or a
    ``cupy.cuda.function.Function`` (from ``RawModule.get_function``). ``driver``: the module
    with the occupancy call, default ``cupy.cuda.driver`` (imported here, so that tests may put
    a stand-in in ``sys.modules`` or pass one).
    """
    try:
        if driver is None:
            from cupy.cuda import driver
        fn = getattr(kernel, "kernel", kernel)  # RawKernel -> its cupy Function
        return int(driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, int(block), int(smem))), "driver"
    except Exception:  # noqa: BLE001 - no driver to ask: the estimate
        return estimate_blocks_per_sm(kernel, block, smem), "registers"


def kernel_source(name: str, defines: dict | None = None) -> str:
    """The text compiled for ``kernels/<name>.cu`` with ``defines`` prepended."""
    path = KERNEL_DIR / f"{name}.cu"
    if not path.is_file():
        raise FileNotFoundError(f"kernel file {path} not found")
    head = "".join(f"#define {k} {v}\n" for k, v in sorted((defines or {}).items()))
    return head + f'#line 1 "{path.name}"\n' + path.read_text()


def get_module(name: str, defines: dict | None = None, options=(), *, cooperative: bool = False):
    """Compile (once per device) and return ``kernels/<name>.cu`` as a ``cupy.RawModule``.

    Parameters
    ----------
    name : str
        Kernel file stem, e.g. ``"bvss_bfs"``.
    defines : dict, optional
        ``{"DG_BFS_BLOCK": 256}`` becomes ``#define DG_BFS_BLOCK 256`` before the file.
    options : tuple of str
        Extra NVRTC options; the environment's ``DISTGRAPH_NVRTC_OPTIONS`` (whitespace-separated,
        e.g. ``-lineinfo`` for Nsight Compute's source view, ``benchmarks/ncu_msbfs.sh``) are
        added to every module.
    cooperative : bool
        Load for cooperative launches (``grid.sync()``).
    """
    cupy = import_cupy()
    dev = cupy.cuda.Device()
    options = tuple(options) + tuple(os.environ.get("DISTGRAPH_NVRTC_OPTIONS", "").split())
    key = (dev.id, name, tuple(sorted((defines or {}).items())), tuple(options), cooperative)
    with _LOCK:
        mod = _MEMO.get(key)
        if mod is not None:
            return mod
        if "CUPY_CACHE_DIR" not in os.environ:
            from ...runtime.config import config

            os.environ["CUPY_CACHE_DIR"] = str(Path(config.cache_dir) / "kernels")
        opts = ("-std=c++17", f"-I{KERNEL_DIR}") + tuple(options)
        mod = cupy.RawModule(code=kernel_source(name, defines), options=opts, backend="nvrtc",
                             enable_cooperative_groups=cooperative)
        if hasattr(mod, "compile"):
            mod.compile()  # compile now, so errors surface here and not at the first launch
        _MEMO[key] = mod
        return mod
