"""Device memory plans: what a GPU run will allocate, computed before allocating.

A :class:`MemoryPlan` lists every device array of a run by name and size; ``check()``
compares the total with the free memory of the device and raises
:class:`~distgraph.errors.DeviceMemoryError` with the amount needed, the amount free,
the largest items and what to try instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import DeviceMemoryError
from ...runtime.hostmem import format_bytes  # noqa: F401 - re-exported

__all__ = ["MemoryPlan", "bfs_plan", "parents_plan", "format_bytes"]

#: Fraction of the free memory a plan may use (CuPy's pool and the context need some).
HEADROOM = 0.95


@dataclass
class MemoryPlan:
    """Named device allocations of one run (bytes)."""

    what: str
    items: dict = field(default_factory=dict)
    hints: tuple = ()

    @property
    def total(self) -> int:
        return int(sum(self.items.values()))

    def describe(self) -> str:
        top = sorted(self.items.items(), key=lambda kv: -kv[1])[:4]
        return ", ".join(f"{k} {format_bytes(v)}" for k, v in top)

    def check(self, free: int | None = None, device: int | None = None) -> None:
        """Raise DeviceMemoryError unless the plan fits in ``free`` bytes (default: the
        device's free memory, CuPy's pool counted as free)."""
        if free is None:
            import cupy

            free_dev, _ = cupy.cuda.runtime.memGetInfo()
            pool = cupy.get_default_memory_pool()
            free = int(free_dev) + int(pool.free_bytes())
            device = cupy.cuda.Device().id if device is None else device
        if self.total > HEADROOM * free:
            where = f"device {device}" if device is not None else "the device"
            msg = (f"{self.what} needs {format_bytes(self.total)} of device memory ({self.describe()}) "
                   f"but only {format_bytes(free)} is free on {where}")
            if self.hints:
                msg += "; try " + "; or ".join(self.hints)
            raise DeviceMemoryError(msg)


def bfs_plan(n: int, bvss, transpose_arcs: int | None, *, reordered: bool = False) -> MemoryPlan:
    """Plan of the BVSS BFS engine (``transpose_arcs=None``: no CSR of G^T on the device;
    ``reordered``: the id map to the caller's ids and the levels gathered through it)."""
    nw = (n + 31) // 32
    items = {"bvss.row_ids": bvss.row_ids.nbytes, "bvss.masks": bvss.masks.nbytes,
             "bvss.real_ptrs": bvss.real_ptrs.nbytes, "bvss.virtual_to_real": bvss.virtual_to_real.nbytes,
             "level": 4 * n, "bitmaps (3 frontier, 2 visited)": 5 * 4 * nw,
             "work queues": 3 * 8 * max(bvss.num_vss, 1), "counters": 4 * 48, "slice-set claims": 4 * ((n + 7) // 8)}
    if reordered:
        items["id map (caller ids)"] = 8 * n
        items["levels in caller ids"] = 4 * n
    if transpose_arcs is not None:
        items["transpose.indptr"] = 8 * (n + 1)
        items["transpose.indices"] = 4 * transpose_arcs
    hints = ["reorder='jaccard' (smaller BVSS on scale-free graphs)",
             "variant='plain' or 'lazy' (no transposed CSR on the device)",
             "a GPU with more memory"]
    return MemoryPlan("GPU BFS", items, tuple(hints if transpose_arcs is not None else
                                              (hints[0], hints[2])))


def parents_plan(n: int, transpose_arcs: int | None) -> MemoryPlan:
    """Plan of the GPU BFS parents pass: the parents array and, unless the engine's own
    G^T is reused (``transpose_arcs=None``), the caller's CSR of G^T."""
    items = {"parents": 8 * n}
    if transpose_arcs is not None:
        items["transpose.indptr (caller ids)"] = 8 * (n + 1)
        items["transpose.indices (caller ids)"] = 4 * transpose_arcs
    return MemoryPlan("GPU BFS parents", items, ("parents=False (levels only)", "a GPU with more memory"))
