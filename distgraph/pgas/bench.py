"""Drivers of the queue workloads of the multi-GPU queue paper (Sec. IV), GPU and CPU.

Workloads, for ``ops`` items in total over all PEs (each item a distinct value 0..ops-1):

``enqdeq``  all PEs enqueue their share, barrier, all PEs dequeue their share (two phases)
``mixed``   enqueuers and dequeuers at the same time (GPU: even blocks enqueue while odd blocks
            dequeue; CPU: even ranks enqueue while odd ranks dequeue, one rank does both)

Every run checks that the values dequeued over all PEs are exactly ``0..ops-1``, each once,
and reports operations per second (enqueues + dequeues) over the wall time of the slowest PE.

GPU: :class:`GpuQueueBench` launches ``kernels/queue_bench*.cu`` (``nvshmem=True``: one segment
per PE in the NVSHMEM heap; ``nvshmem=False``: a single-GPU queue in plain device memory, the
baseline that shows what NVSHMEM costs on one PE). CPU: :func:`cpu_queue_run` over the MPI-RMA
queue of :mod:`distgraph.pgas.queue`, with batches of ``batch`` items per operation.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import DistgraphError, expect
from .queue import META_SIZE, BrokerQueue

__all__ = ["GpuQueueBench", "cpu_queue_run", "next_pow2", "check_permutation"]


def next_pow2(n: int) -> int:
    return 1 << max(1, int(n - 1).bit_length())


def _share(total: int, size: int, rank: int) -> tuple[int, int]:
    """(count, first value) of rank's share of ``total`` items."""
    q, r = divmod(total, size)
    return q + (rank < r), rank * q + min(rank, r)


def check_permutation(comm, values, total: int, xp=np) -> tuple[bool, str]:
    """Collective: are the values of all ranks together exactly 0..total-1, each once?"""
    from mpi4py import MPI

    v = values.reshape(-1)
    bad = int((v < 0).sum() + (v >= total).sum())
    ok_vals = v[(v >= 0) & (v < total)]
    counts = xp.bincount(ok_vals, minlength=total).astype(xp.uint8) if total else xp.zeros(0, xp.uint8)
    host = counts.get() if hasattr(counts, "get") else counts
    tot = np.empty_like(host)
    comm.Allreduce(host, tot, op=MPI.SUM)
    bad = comm.allreduce(bad)
    missing = int((tot == 0).sum())
    dup = int((tot > 1).sum())
    ok = bad == 0 and missing == 0 and dup == 0
    return ok, "" if ok else f"{missing} values lost, {dup} duplicated, {bad} out of range"


class GpuQueueBench:
    """The GPU queue kernels on one queue (see the module docstring)."""

    def __init__(self, capacity: int, nvshmem: bool = True, pgas=None, comm=None):
        # the kernels take slot pos & (N - 1): without NVSHMEM nothing else checks it
        expect(isinstance(capacity, (int, np.integer)) and not isinstance(capacity, bool) and capacity >= 2
               and capacity & (capacity - 1) == 0, "capacity", "a power of two >= 2", capacity)
        import cupy

        from mpi4py import MPI

        from ..backends.gpu.nvshmem_build import load_module

        self.cp = cupy
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.nvshmem = nvshmem
        if nvshmem:
            from . import get_pgas

            self.pg = pgas or get_pgas(self.comm, "gpu")
            self.q = BrokerQueue(capacity, "int64", 1, "bq", "distributed", self.pg)
            self.mod = load_module("queue_bench_nvshmem", comm=self.comm)
            ring, tickets, meta, N, _, nseg = self.q.device_args()
            self.my_pe = self.pg.my_pe
        else:
            expect(self.comm.Get_size() == 1, "the communicator size", "1 for the queue without NVSHMEM",
                   self.comm.Get_size())
            self.pg = None
            self.q = None
            self._arrays = [cupy.zeros(capacity, cupy.int64), cupy.zeros(capacity, cupy.uint64),
                            cupy.zeros(META_SIZE, cupy.uint64)]
            ring, tickets, meta = (int(a.data.ptr) for a in self._arrays)
            N, nseg = capacity, 1
            self.mod = load_module("queue_bench", nvshmem=False)
            self.my_pe = 0
        self.capacity, self.nseg = int(N), int(nseg)
        self.abort = cupy.zeros(1, cupy.int32)
        self.stats = cupy.zeros(2, cupy.uint64)
        self._head = (np.uint64(ring), np.uint64(tickets), np.uint64(meta), np.uint64(N), np.int32(nseg),
                      np.int32(self.my_pe), self.abort, self.stats)

    # -- helpers --------------------------------------------------------------------------
    def _sync(self):
        self.cp.cuda.Device().synchronize()
        if self.pg is not None:
            self.pg.barrier()
        else:
            self.comm.Barrier()

    def reset(self):
        """Empty the queue and clear the abort flag and counters (collective)."""
        if self.q is not None:
            self.q.reset()
        else:
            for a in self._arrays[1:]:
                a.fill(0)
        self.abort.fill(0)
        self.stats.fill(0)
        self._sync()

    def fn(self, name):
        return self.mod.get_function(name)

    def inspect(self):
        if self.q is not None:
            return self.q.inspect()
        m = self._arrays[2].get().view(np.int64)
        return [{"segment": 0, "count": int(m[0]), "head": int(m[8]), "tail": int(m[16]),
                 "size": int(m[16]) - int(m[8])}]

    # -- workloads --------------------------------------------------------------------------
    def run(self, workload: str, kind: str, threads: int, blocks: int, ops: int, policy: int = 1,
            warp: bool = False, verify: bool = True) -> dict:
        """One timed run (collective). Returns a dict with times, ops/s and the check."""
        cp = self.cp
        expect(workload in ("enqdeq", "mixed"), "workload", "'enqdeq' or 'mixed'", workload)
        expect(kind in ("bq", "bwd"), "kind", "'bq' or 'bwd'", kind)
        size, rank = self.comm.Get_size(), self.comm.Get_rank()
        mine, base = _share(ops, size, rank)
        sfx = kind + ("_warp" if warp else "")
        out = cp.full(max(mine, 1), -1, cp.int64)
        self.reset()
        t = {}
        if workload == "enqdeq":
            enq, deq = self.fn(f"distgraph_queue_enq_{sfx}"), self.fn(f"distgraph_queue_deq_{sfx}")
            t0 = time.perf_counter()
            enq((blocks,), (threads,), self._head + (np.int64(mine), np.int64(base), np.int32(policy)))
            self._sync()
            t1 = time.perf_counter()
            deq((blocks,), (threads,), self._head + (np.int64(mine), out))
            self._sync()
            t2 = time.perf_counter()
            t = {"enqueue_s": t1 - t0, "dequeue_s": t2 - t1, "total_s": t2 - t0}
        else:
            mixed = self.fn(f"distgraph_queue_mixed_{sfx}")
            t0 = time.perf_counter()
            mixed((blocks,), (threads,), self._head + (np.int64(mine), np.int64(base), np.int32(policy), out))
            self._sync()
            t = {"total_s": time.perf_counter() - t0}
        stats = self.stats.get()
        aborted = self.comm.allreduce(int(self.abort.get()[0]) + int(stats[1]))
        res = {"workload": workload, "kind": kind, "threads": threads, "blocks": blocks, "ops": ops,
               "pes": size, "policy": "round-robin" if policy else "own", "warp": warp,
               "nvshmem": self.nvshmem, "capacity": self.capacity,
               "retries": self.comm.allreduce(int(stats[0])), "aborted": aborted, **t,
               "mops_per_s": 2 * ops / t["total_s"] / 1e6}
        if verify:
            ok, why = check_permutation(self.comm, out[:mine], ops, cp)
            res["verified"] = ok and aborted == 0
            if not res["verified"]:
                res["why"] = why or f"{aborted} operations aborted"
        return res

    def history(self, kind: str, seg: int, threads: int, blocks: int, per: int, mode: int = 0,
                base: int | None = None) -> list:
        """Run the history recorder; the events of all PEs (on every PE), times in ns.

        Each event is ``(t_invoke, t_response, "enq"|"deq", value, ok, status, clock)``:
        ``clock`` numbers the GPU (host name and PCI bus id) whose ``%globaltimer`` timed it
        (PEs on one GPU share it);
        pass ``[e[6] for e in events]`` as ``domains`` to :func:`check_history`.
        """
        cp = self.cp
        n = threads * blocks * per
        rec = cp.zeros(5 * max(n, 1), cp.int64)
        rank = self.comm.Get_rank()
        base = rank * n if base is None else base
        self._sync()
        self.fn(f"distgraph_queue_history_{kind}")((blocks,), (threads,), self._head + (
            np.int32(seg), np.int32(per), np.int64(base), np.int32(mode), rec))
        self._sync()
        r = rec.get()[:5 * n].reshape(-1, 5)
        # a GPU is its host and PCI bus id: GPUs of two nodes often share a bus id
        from mpi4py import MPI

        gpus = self.comm.allgather((MPI.Get_processor_name(), self.cp.cuda.Device().pci_bus_id))
        clock = sorted(set(gpus)).index(gpus[rank])
        ev = [(int(a), int(b), "enq" if op == 0 else "deq", int(v) if (op == 0 or st == 0) else None,
               bool(st == 0), int(st), clock) for a, b, op, v, st in r]
        allev = self.comm.allgather(ev)
        return [e for part in allev for e in part]

    def close(self):
        if self.q is not None:
            self.q.free()
        self._sync()


def cpu_queue_run(q: BrokerQueue, workload: str, ops: int, batch: int = 1, verify: bool = True) -> dict:
    """One run of a workload on the CPU (MPI-RMA) queue ``q`` (collective)."""
    from .mpi_rma import Backoff

    expect(workload in ("enqdeq", "mixed"), "workload", "'enqdeq' or 'mixed'", workload)
    comm = q.pg.comm
    size, rank = comm.Get_size(), comm.Get_rank()
    q.reset()
    vals_out = []
    if workload == "enqdeq":
        mine, base = _share(ops, size, rank)
        comm.Barrier()
        t0 = time.perf_counter()
        _enqueue_all(q, np.arange(base, base + mine, dtype=np.int64), batch)
        q.pg.barrier()
        t1 = time.perf_counter()
        _dequeue_n(q, mine, batch, vals_out, Backoff)
        q.pg.barrier()
        t2 = time.perf_counter()
        times = {"enqueue_s": t1 - t0, "dequeue_s": t2 - t1, "total_s": t2 - t0}
    else:
        # Even ranks enqueue, odd ranks dequeue the same number of items (one rank: both).
        producers = [r for r in range(size) if r % 2 == 0]
        consumers = [r for r in range(size) if r % 2 == 1] or [0]
        pmine, pbase = _share(ops, len(producers), producers.index(rank)) if rank in producers else (0, 0)
        cmine = _share(ops, len(consumers), consumers.index(rank))[0] if rank in consumers else 0
        comm.Barrier()
        t0 = time.perf_counter()
        items = np.arange(pbase, pbase + pmine, dtype=np.int64)
        if size == 1:
            i = 0
            while i < pmine or len(vals_out) < cmine:
                if i < pmine:
                    b = items[i:i + batch]
                    if q.enqueue_many(b):
                        i += b.size
                got = q.dequeue_many(batch)
                vals_out.extend(got[:, 0].tolist())
        else:
            if rank in producers:
                _enqueue_all(q, items, batch)
            if rank in consumers:
                _dequeue_n(q, cmine, batch, vals_out, Backoff)
        q.pg.barrier()
        times = {"total_s": time.perf_counter() - t0}
    res = {"workload": workload, "kind": q.kind, "layout": q.layout, "ops": ops, "pes": size, "batch": batch,
           "capacity": q.capacity, **times, "mops_per_s": 2 * ops / times["total_s"] / 1e6}
    if verify:
        ok, why = check_permutation(comm, np.asarray(vals_out, np.int64), ops)
        res["verified"] = ok
        if not ok:
            res["why"] = why
    return res


def _enqueue_all(q, items, batch):
    from .mpi_rma import Backoff

    i = 0
    bo = None
    while i < items.size:
        b = items[i:i + batch]
        if q.enqueue_many(b):
            i += b.size
            bo = None
        else:
            bo = bo or Backoff("room in the queue")
            bo.wait()


def _dequeue_n(q, n, batch, out, Backoff):
    bo = None
    while len(out) < n:
        got = q.dequeue_many(min(batch, n - len(out)))
        if got.shape[0]:
            out.extend(got[:, 0].tolist())
            bo = None
        else:
            bo = bo or Backoff("items in the queue")
            bo.wait()
    if len(out) != n:
        raise DistgraphError(f"dequeued {len(out)} items, expected {n}")
