"""``distgraph info``: versions, MPI vendor and library, GPUs seen, backend."""

from __future__ import annotations

import json
import platform
import sys

NAME = "info"
HELP = "print versions, MPI library, GPUs and the backend that would be used"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print as one JSON object")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default=None, help="backend to resolve")


def _version(mod: str) -> str | None:
    try:
        m = __import__(mod)
        return getattr(m, "__version__", "unknown")
    except Exception:
        return None


def gather_info(backend=None) -> dict:
    from mpi4py import MPI

    from .. import __version__
    from ..runtime.config import as_dict
    from ..runtime.context import get_context, gpu_count

    ctx = get_context(backend=backend)
    gpus = []
    if gpu_count():
        import cupy

        for i in range(gpu_count()):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            gpus.append({"index": i, "name": props["name"].decode(), "memory_bytes": int(props["totalGlobalMem"]),
                         "compute_capability": f"{props['major']}.{props['minor']}"})
    name, ver = MPI.get_vendor()
    return {
        "distgraph": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"), "scipy": _version("scipy"), "mpi4py": _version("mpi4py"),
        "numba": _version("numba"), "cupy": _version("cupy"), "nvshmem4py": _version("nvshmem"),
        "mpi_vendor": f"{name} {'.'.join(map(str, ver))}",
        "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "ranks": ctx.size,
        "local_rank": ctx.local_rank,
        "gpus": gpus,
        "backend": ctx.backend,
        "device": ctx.device,
        "config": as_dict(),
    }


def run(args) -> int:
    info = gather_info(args.backend)
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_rank() != 0:
        return 0
    if args.json:
        sys.stdout.write(json.dumps(info) + "\n")
        return 0
    width = max(len(k) for k in info)
    for k, v in info.items():
        if k == "config":
            v = ", ".join(f"{a}={b}" for a, b in v.items())
        elif k == "gpus":
            v = "; ".join(f"{g['index']}: {g['name']} ({g['memory_bytes'] / 2**30:.0f} GiB, sm {g['compute_capability']})"
                          for g in v) or "none"
        print(f"{k:<{width}}  {v}")
    return 0
