"""Host memory: what is available, and a check made before a large allocation.

:func:`check_host_memory` is collective: the ranks that share a host add up what each of
them is about to allocate, compare it with the host's available memory (Linux
``MemAvailable``, or a cgroup's limit less its usage where that is lower; elsewhere nothing is
checked) and, if it does not fit, every rank raises the same
:class:`~distgraph.errors.DeviceMemoryError` naming the amount, the available memory and what
to try instead.
"""

from __future__ import annotations

__all__ = ["format_bytes", "available_bytes", "check_host_memory"]

#: Fraction of the available memory a check lets the ranks of a host use.
HEADROOM = 0.9


def format_bytes(b: float) -> str:
    """``"1.5 GiB"``.

    >>> format_bytes(1536), format_bytes(3 << 30)
    ('1.5 KiB', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:.1f} {unit}" if unit != "B" else f"{int(b)} B"
        b /= 1024
    return f"{b:.1f} TiB"


def _read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):  # absent, or "max" (no limit)
        return None


#: cgroup v2 and v1 files of this process's memory limit and usage (a container, a Slurm job)
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def available_bytes(meminfo: str = "/proc/meminfo", cgroups=CGROUP_FILES) -> int | None:
    """The memory this process can still take: the host's ``MemAvailable``, or less where a
    cgroup (a container, a Slurm job) limits it (its limit less its usage); None where neither
    is known."""
    avail = None
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in cgroups:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < (1 << 60):  # v1 reports "no limit" as ~2**63
            left = max(limit - usage, 0)
            avail = left if avail is None else min(avail, left)
            break
    return avail


def check_host_memory(nbytes: int, comm, what: str, hints=(), available=None) -> None:
    """Raise :class:`~distgraph.errors.DeviceMemoryError` on every rank of ``comm`` unless
    the ``nbytes`` that each rank is about to allocate, summed over the ranks of each host,
    fit in that host's available memory (``available``: bytes, for tests)."""
    from mpi4py import MPI

    from ..errors import DeviceMemoryError
    from .abort import collective_raise

    err = None
    if comm.Get_size() > 1:
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            need = local.allreduce(int(nbytes))
            ranks = local.Get_size()
        finally:
            local.Free()
    else:
        need, ranks = int(nbytes), 1
    free = available_bytes() if available is None else int(available)
    if free is not None and need > HEADROOM * free:
        who = f" ({ranks} ranks of this host, {format_bytes(nbytes)} each)" if ranks > 1 else ""
        msg = (f"{what} need {format_bytes(need)} of host memory{who} but {format_bytes(free)} is available "
               f"(at most {HEADROOM:.0%} of it is used)")
        if hints:
            msg += "; try " + "; or ".join(hints)
        err = DeviceMemoryError(msg)
    collective_raise(comm, err)
