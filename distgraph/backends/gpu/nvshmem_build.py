"""Build (and cache) cubins of kernels that call device-side NVSHMEM, and load them.

CuPy's NVRTC path cannot link ``libnvshmem_device.a`` (see ``../shared/notes/gpu-stack.md``),
so these kernels are built with the verified nvcc route::

    nvcc -arch=sm_XX -std=c++17 -O3 -rdc=true -I kernels -I $NVSHMEM/include -c k.cu -o k.o
    nvlink --arch=sm_XX k.o -L $NVSHMEM/lib -lnvshmem_device -o k.cubin

``$NVSHMEM`` is the ``nvidia-nvshmem-cu13`` wheel (``import nvidia.nvshmem``). Cubins go to
``<config.cache_dir>/kernels/<name>-<key>.cubin``, the key hashing the source and what it includes,
the defines, the NVSHMEM version and the architecture, so a changed header or NVSHMEM
rebuilds. With ``nvshmem=False`` the same route builds a plain cubin (``nvcc -cubin``).

A loaded NVSHMEM module must be registered after ``nvshmem.init`` (``cumodule_init``) and
unregistered before finalize; :func:`load_module` does the first, :func:`unload_modules` the
second (``nvshmem.core.module_finalize`` is broken in nvshmem4py 0.4.1).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import BackendUnavailableError, DistgraphError

__all__ = ["kernels_dir", "nvshmem_root", "build_cubin", "load_module", "unload_modules"]

_modules: dict = {}


def kernels_dir() -> Path:
    from ..._kernels import kernels_dir as _kernels_dir

    return _kernels_dir()


def _nvcc() -> str:
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc is None:
        raise BackendUnavailableError("building NVSHMEM kernels needs nvcc (CUDA toolkit) on PATH")
    return nvcc


def nvshmem_root() -> Path:
    """The NVSHMEM installation of the ``nvidia-nvshmem-cu13`` wheel."""
    try:
        import nvidia.nvshmem as m

        root = Path(list(m.__path__)[0])
    except Exception:
        raise BackendUnavailableError(
            "device-side NVSHMEM needs the NVSHMEM headers and device library: "
            "pip install nvidia-nvshmem-cu13 (installed with nvshmem4py-cu13)") from None
    if not (root / "include" / "nvshmem.h").is_file():
        raise BackendUnavailableError(f"no include/nvshmem.h under {root}")
    return root


def _nvshmem_version(root: Path) -> str:
    txt = (root / "include" / "non_abi" / "nvshmem_version.h").read_text()
    parts = [re.search(rf"#define\s+NVSHMEM_VENDOR_{k}_VERSION\s+(\d+)", txt) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p.group(1) if p else "?" for p in parts)


def _arch() -> str:
    try:
        import cupy

        return "sm_" + cupy.cuda.Device().compute_capability
    except Exception:
        return "sm_90"


def _sources(src: Path) -> list:
    """``src`` and the files of ``kernels/`` it includes with ``#include "..."``, recursively."""
    seen, todo = [], [src]
    while todo:
        p = todo.pop()
        if p in seen or not p.is_file():
            continue
        seen.append(p)
        todo += [p.parent / m for m in re.findall(r'^\s*#\s*include\s+"([^"]+)"', p.read_text(), re.M)]
    return sorted(seen)


def build_cubin(name: str, defines: dict | None = None, nvshmem: bool = True, arch: str | None = None) -> Path:
    """Path of the cubin of ``kernels/<name>.cu``, built now unless cached.

    Raises
    ------
    BackendUnavailableError
        No nvcc, or (``nvshmem=True``) no NVSHMEM wheel.
    DistgraphError
        nvcc or nvlink failed (the message carries their error output).
    """
    from ...runtime.config import config

    kdir = kernels_dir()
    src = kdir / f"{name}.cu"
    if not src.is_file():
        raise DistgraphError(f"kernel source {src} not found")
    arch = arch or _arch()
    nvcc = _nvcc()
    root = nvshmem_root() if nvshmem else None
    flags = [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    h = hashlib.sha1()
    for p in _sources(src):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    h.update(repr((flags, arch, _nvshmem_version(root) if root else None)).encode())
    out_dir = Path(config.cache_dir) / "kernels"
    out = out_dir / f"{name}-{arch}-{h.hexdigest()[:16]}.cubin"
    if out.is_file():
        return out
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        base = [nvcc, f"-arch={arch}", "-std=c++17", "-O3", "-I", str(kdir)] + flags
        if root is not None:
            obj = Path(tmp) / f"{name}.o"
            steps = [base + ["-rdc=true", "-I", str(root / "include"), "-c", str(src), "-o", str(obj)],
                     [str(Path(nvcc).with_name("nvlink")) if Path(nvcc).with_name("nvlink").exists() else "nvlink",
                      f"--arch={arch}", str(obj), "-L", str(root / "lib"), "-lnvshmem_device",
                      "-o", str(Path(tmp) / "k.cubin")]]
        else:
            steps = [base + ["-cubin", str(src), "-o", str(Path(tmp) / "k.cubin")]]
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise DistgraphError(f"building {src.name} failed: {' '.join(cmd)}\n{r.stderr[-4000:]}")
        os.replace(Path(tmp) / "k.cubin", out)
    return out


def load_module(name: str, defines: dict | None = None, nvshmem: bool = True, comm=None):
    """A ``cupy.RawModule`` of ``kernels/<name>.cu`` (memoized per device), registered with
    NVSHMEM when ``nvshmem`` (call after ``nvshmem.core.init``).

    With ``comm``, rank 0 of each node builds while the others wait, then all load."""
    import cupy

    dev = cupy.cuda.Device().id
    key = (name, tuple(sorted((defines or {}).items())), nvshmem, dev)
    if key in _modules:
        return _modules[key]
    err, path = None, None
    if comm is not None and comm.Get_size() > 1:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
        if node.Get_rank() == 0:
            try:
                path = build_cubin(name, defines, nvshmem)
            except Exception as e:  # noqa: BLE001 - re-raised on every rank below
                err = e
        err = node.bcast(err, root=0)
        node.Free()
        if err is not None:
            raise err
    path = build_cubin(name, defines, nvshmem)
    mod = cupy.RawModule(path=str(path))
    if nvshmem:
        import nvshmem.bindings as nb

        nb.cumodule_init(mod.module.ptr)
    _modules[key] = mod
    return mod


def unload_modules() -> None:
    """Unregister every NVSHMEM module loaded here (before ``nvshmem.core.finalize``)."""
    for key, mod in list(_modules.items()):
        if key[2]:
            import nvshmem.bindings as nb

            nb.cumodule_finalize(mod.module.ptr)
        del _modules[key]
