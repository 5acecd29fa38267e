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

__all__ = ["KERNEL_DIR", "get_module", "import_cupy", "kernel_source"]

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
