"""Device memory plans: what a GPU run will allocate, computed before allocating.

A :class:`MemoryPlan` lists every device array of a run by name and size; ``check()``
compares the total with the free memory of the device and raises
:class:`~distgraph.errors.DeviceMemoryError` with the amount needed, the amount free,
the largest items and what to try instead.

Ranks of one host bound to one GPU (several NVSHMEM PEs, ``split="sources"`` ranks) each plan
alone, so each plans with a fair part of the device: :func:`free_bytes` is the memory this
rank may plan to use, at most ``1/k`` of the device less what it already uses when ``k`` ranks
share the GPU (:func:`device_share`, set by :func:`~distgraph.runtime.context.get_context`),
and never more than is free. What it uses is its CuPy pool's blocks in use, its part of the
device's memory outside the ranks' pools (:func:`measure_overhead`: CUDA contexts, NVSHMEM's
heap at its init, other processes), and its live symmetric arrays (:func:`add_symmetric`).
Measured on the H200 (session 25, ``benchmarks/results/session25/``): a context is 0.52 GiB a
rank, NVSHMEM's init 0.57 GiB a rank on 4 PEs, and without these terms one of 4 NVSHMEM PEs
failed to allocate its planned part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import DeviceMemoryError
from ...runtime.hostmem import format_bytes  # noqa: F401 - re-exported

__all__ = ["MemoryPlan", "bfs_plan", "parents_plan", "format_bytes", "free_bytes", "device_share",
           "set_device_share", "device_overhead", "measure_overhead", "add_symmetric", "forget_overhead"]

#: Fraction of the free memory a plan may use (CuPy's pool and the context need some).
HEADROOM = 0.95

_device_share = 1  # ranks of this host bound to this process's GPU (set_device_share)
#: this rank's part of its GPU's memory outside the pools of the ranks bound to it, by what was
#: measured ("context": get_context, "nvshmem": NVSHMEM's init; measure_overhead)
_overhead: dict = {}
_symmetric = 0  # bytes of this rank's live NVSHMEM symmetric arrays (add_symmetric)


def set_device_share(share: int) -> None:
    """Record that ``share`` ranks of this host (this one included) are bound to this
    process's GPU; :func:`~distgraph.runtime.context.get_context` calls it with the count of
    the ranks of its communicator, so that :func:`free_bytes` plans with ``1/share`` of the
    device."""
    global _device_share
    _device_share = max(int(share), 1)


def device_share() -> int:
    """Ranks of this host bound to this process's GPU (1 until :func:`set_device_share`)."""
    return _device_share


def device_overhead() -> int:
    """Bytes of its GPU this rank uses outside its CuPy pool, as far as known: its part of the
    memory outside the pools when last measured (:func:`measure_overhead`) and its symmetric
    arrays allocated since (:func:`add_symmetric`)."""
    return int(sum(_overhead.values())) + _symmetric


def add_symmetric(nbytes: int) -> None:
    """Count ``nbytes`` of NVSHMEM symmetric memory allocated (negative: freed) by this rank.
    NVSHMEM maps its heap's memory as arrays need it (on the H200 a 1 GiB array added 1 GiB of
    used memory a PE: ``benchmarks/results/session25/``); with a heap mapped whole at its init
    (no CUDA VMM) the arrays are counted twice, which errs towards smaller plans."""
    global _symmetric
    _symmetric = max(_symmetric + int(nbytes), 0)


def forget_overhead(what: str) -> None:
    """Drop the measured overhead ``what`` (``"nvshmem"`` at NVSHMEM's finalize, with the
    symmetric arrays, which the finalize frees)."""
    global _symmetric
    _overhead.pop(what, None)
    if what == "nvshmem":
        _symmetric = 0


def measure_overhead(comm, key: str, what: str, *, share: int | None = None, cp=None) -> int:
    """Measure this rank's part of its GPU's memory that no rank's CuPy pool holds and no
    symmetric array counted so far: the device's used memory less the pools' blocks and those
    arrays of the ranks of ``comm`` on this host with the device key ``key``, split evenly over
    those ranks (CUDA contexts, NVSHMEM's heap, another process's use, counted once for all),
    less what was measured before under another name. Kept under ``what`` for
    :func:`free_bytes`; returns it.

    ``share``: the ranks of the host bound to this GPU (:func:`device_share`). Where fewer of
    them are in ``comm`` (a sub-communicator), the absent ranks' pools would be counted as
    outside and split over too few ranks: the measure is not taken, and the last one is kept.

    Collective over ``comm`` (every rank calls it, whatever its GPU): the ranks sharing a GPU
    synchronise their devices and read its memory at one barrier. Where a rank's CuPy cannot
    say (a stand-in), every rank of its GPU measures 0; the collectives run all the same."""
    from ...runtime.context import device_group

    if cp is None:
        import cupy as cp

    def local():
        try:
            cp.cuda.runtime.deviceSynchronize()
            pool = cp.get_default_memory_pool()
            return int(pool.total_bytes()) + _symmetric
        except Exception:  # noqa: BLE001 - measured as nothing, the collectives still run
            return None

    grp = device_group(comm, key)
    try:
        held = local()
        grp.Barrier()
        try:
            free, total = cp.cuda.runtime.memGetInfo()
            used = int(total) - int(free)
        except Exception:  # noqa: BLE001
            used = None
        ok = held is not None and used is not None
        parts = grp.allgather((ok, held or 0, used or 0))
    finally:
        grp.Free()
    if share is not None and len(parts) < share:
        return _overhead.get(what, 0)
    if not all(p[0] for p in parts):
        _overhead[what] = 0
        return 0
    outside = max(max(p[2] for p in parts) - sum(p[1] for p in parts), 0)
    before = sum(v for k, v in _overhead.items() if k != what)
    _overhead[what] = max(outside // len(parts) - before, 0)
    return _overhead[what]


def free_bytes(held: int = 0, *, cp=None, share: int | None = None) -> int:
    """Device bytes this rank may plan to use: ``min(free + pool_free, total // share -
    pool_used - overhead) + held``, at least 0.

    ``free`` and ``total`` are the device's (``cudaMemGetInfo``), ``pool_free`` and
    ``pool_used`` the bytes CuPy's default pool caches and hands out on this device, ``share``
    the ranks of this host bound to the GPU (default :func:`device_share`), ``overhead`` this
    rank's use outside its pool (:func:`device_overhead`: its context, NVSHMEM's heap, its
    symmetric arrays). One rank on its GPU: the free memory with the pool's cached blocks
    counted as free (the second term is never the smaller then, and is not computed). ``k``
    ranks on one GPU: each at most a fair ``1/k`` of the device less what it already uses,
    and never more than is actually free.
    ``held``: bytes of the planned arrays the caller holds already (counted in ``pool_used``,
    and free to reuse for the plan). ``cp``: CuPy or a stand-in (default: ``import cupy``).
    """
    if cp is None:
        import cupy as cp
    share = device_share() if share is None else max(int(share), 1)
    free_dev, total = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    free = int(free_dev) + int(pool.free_bytes())
    if share > 1:
        free = min(free, int(total) // share - int(pool.used_bytes()) - device_overhead())
    return max(free + int(held), 0)


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

    def check(self, free: int | None = None, device: int | None = None, share: int | None = None) -> None:
        """Raise DeviceMemoryError unless the plan fits in :data:`HEADROOM` of ``free`` bytes
        (default: :func:`free_bytes`, this rank's part of the device's free memory, CuPy's pool
        counted as free). ``share``: the ranks of this host bound to the GPU (default
        :func:`device_share`); when more than one, the message says that the free memory is
        this rank's part of it, and suggests fewer ranks per GPU."""
        share = device_share() if share is None else max(int(share), 1)
        if free is None:
            import cupy

            free = free_bytes(cp=cupy, share=share)
            device = cupy.cuda.Device().id if device is None else device
        if self.total > HEADROOM * free:
            where = f"device {device}" if device is not None else "the device"
            msg = (f"{self.what} needs {format_bytes(self.total)} of device memory ({self.describe()}) "
                   f"but only {format_bytes(free)} is free on {where}")
            hints = tuple(self.hints)
            if share > 1:
                msg += (f" for this rank ({share} ranks share the GPU on this host: each plans with at most "
                        f"1/{share} of its memory)")
                hints = (f"fewer ranks per GPU (each of the {share} gets 1/{share} of it)",) + hints
            if hints:
                msg += "; try " + "; or ".join(hints)
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
