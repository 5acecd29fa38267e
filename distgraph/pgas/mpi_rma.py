"""The PGAS interface over MPI-3 one-sided communication (the CPU backend).

Each symmetric array is one window from ``MPI_Win_allocate`` over the communicator, with a
displacement unit of one element, opened once with ``MPI_Win_lock_all(MPI_MODE_NOCHECK)``
(a passive-target epoch for the window's whole life) and closed by :meth:`MPIRMA.free`.

OpenSHMEM call          MPI-3 realisation
---------------------  -------------------------------------------------------------------
put / put_nbi          ``MPI_Put`` (+ ``MPI_Win_flush_local`` for the blocking put)
get / get_nbi          ``MPI_Get`` (+ ``MPI_Win_flush`` for the blocking get)
put_signal             ``MPI_Put``; ``MPI_Win_flush`` (data delivered); ``MPI_Accumulate``
                       (REPLACE or SUM) on the signal; ``MPI_Win_flush``
signal_wait            ``MPI_Fetch_and_op(NO_OP)`` on one's own window in a polling loop
atomic_*               ``MPI_Fetch_and_op`` (SUM, NO_OP, REPLACE, MIN), ``MPI_Compare_and_swap``,
                       each followed by ``MPI_Win_flush``; ranges use ``MPI_Get_accumulate``
                       / ``MPI_Accumulate`` (atomic per element, not as a whole), and
                       ``atomic_min_many`` one ``MPI_Get_accumulate(MIN)`` on an indexed type
fence, quiet           ``MPI_Win_flush_all`` on every live window (MPI has no cheaper fence)
barrier                quiet, ``MPI_Barrier``, ``MPI_Win_sync`` on every live window

MPI accumulate operations on the same element are atomic with respect to each other (MPI-3.1
Sec. 11.7.1), which is what the atomics rely on; mixing them with ``MPI_Put`` on the same
element is not atomic, so an element is either a data element or an atomic one, never both.
Polling loops back off (``sched_yield``, then sleeps up to 0.2 ms) so that 4 ranks on 2 cores
still let the rank being waited for run. ``DISTGRAPH_HANG_TIMEOUT`` (seconds, 0 = forever)
turns a wait that never ends into a :class:`~distgraph.errors.DistgraphError`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import DistgraphError, InvalidArgumentError
from . import CMP_OPS, PGAS, SymmetricArray

__all__ = ["MPIRMA", "Backoff"]


class Backoff:
    """Spin, then yield, then sleep with a growing delay (up to ``max_sleep`` seconds).

    ``wait()`` raises :class:`DistgraphError` naming ``what`` once more than
    ``config.hang_timeout`` seconds passed (when that is positive)."""

    __slots__ = ("n", "what", "t0", "limit", "max_sleep")

    def __init__(self, what: str = "a remote update", max_sleep: float = 2e-4):
        from ..runtime.config import config

        self.n = 0
        self.what = what
        self.t0 = None
        self.limit = float(config.hang_timeout)
        self.max_sleep = max_sleep

    def wait(self) -> None:
        self.n += 1
        if self.n <= 4:
            return
        if self.n <= 16:
            os.sched_yield()
            return
        if self.t0 is None:
            self.t0 = time.monotonic()
        elif self.limit > 0 and time.monotonic() - self.t0 > self.limit:
            raise DistgraphError(f"no progress for {self.limit:g} s while waiting for {self.what} "
                                 "(DISTGRAPH_HANG_TIMEOUT); a peer rank is stuck or has failed")
        time.sleep(min(self.max_sleep, 1e-6 * (1 << min(self.n - 16, 20))))


class _Win:
    __slots__ = ("win", "mpitype", "pending")

    def __init__(self, win, mpitype):
        self.win = win
        self.mpitype = mpitype
        self.pending = []  # buffers of nbi operations, kept alive until quiet()


class MPIRMA(PGAS):
    """PGAS over MPI-3 RMA windows on ``comm`` (see the module docstring)."""

    name = "mpi-rma"

    def __init__(self, comm):
        super().__init__(comm)
        from mpi4py import MPI

        self._MPI = MPI
        self._one = np.zeros(1, np.int64)
        self._res = np.zeros(1, np.int64)
        self._cmp = np.zeros(1, np.int64)

    # -- allocation ---------------------------------------------------------------------
    def array(self, shape, dtype="int64") -> SymmetricArray:
        from mpi4py.util.dtlib import from_numpy_dtype

        MPI = self._MPI
        shape = self._shape(shape)
        dt = np.dtype(dtype)
        if dt.kind not in "iufb" or dt.byteorder not in "=|":
            raise InvalidArgumentError(f"dtype must be a native integer, float or bool type; got {dt}")
        n = int(np.prod(shape, dtype=np.int64))
        win = MPI.Win.Allocate(max(n, 1) * dt.itemsize, disp_unit=dt.itemsize, comm=self.comm)
        local = np.frombuffer(win.tomemory(), dtype=dt, count=n).reshape(shape)
        local[...] = 0
        win.Lock_all(MPI.MODE_NOCHECK)
        win.Sync()
        self.comm.Barrier()
        arr = SymmetricArray(local, _Win(win, from_numpy_dtype(dt)), self)
        self._live.add(arr)
        return arr

    def free(self, arr: SymmetricArray) -> None:
        if arr not in self._live:
            raise InvalidArgumentError("arr must be a live symmetric array of this PGAS; got a freed or foreign one")
        self._live.discard(arr)
        w = arr._impl
        w.win.Flush_all()
        self.comm.Barrier()
        w.win.Unlock_all()
        arr.local = None
        w.win.Free()

    # -- RMA ------------------------------------------------------------------------------
    def _src(self, dst, src):
        s = np.ascontiguousarray(src, dtype=dst.dtype).reshape(-1)
        return s

    def put(self, dst, src, pe, offset=0):
        pe = self._check_pe(pe)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        w = dst._impl
        w.win.Put(s, pe, target=(offset, s.size, w.mpitype))
        w.win.Flush_local(pe)

    def put_nbi(self, dst, src, pe, offset=0):
        pe = self._check_pe(pe)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        w = dst._impl
        w.win.Put(s, pe, target=(offset, s.size, w.mpitype))
        w.pending.append(s)

    def get(self, src, pe, offset=0, count=None, out=None):
        pe = self._check_pe(pe)
        count = src.size - offset if count is None else int(count)
        self._check_range(src, offset, count)
        out = np.empty(count, src.dtype) if out is None else out
        w = src._impl
        w.win.Get(out, pe, target=(offset, count, w.mpitype))
        w.win.Flush(pe)
        return out

    def get_nbi(self, src, pe, offset, count, out):
        pe = self._check_pe(pe)
        self._check_range(src, offset, count)
        if not (isinstance(out, np.ndarray) and out.dtype == src.dtype and out.size >= count and out.flags.c_contiguous):
            raise InvalidArgumentError(f"out must be a contiguous {src.dtype} array of at least {count} elements")
        w = src._impl
        w.win.Get(out, pe, target=(offset, count, w.mpitype))
        w.pending.append(out)

    def put_signal(self, dst, src, pe, sig, value, op="set", offset=0, sig_index=0):
        self._check_sigop(op)
        pe = self._check_pe(pe)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        self._check_range(sig, sig_index, 1, "sig_index")
        MPI = self._MPI
        w = dst._impl
        w.win.Put(s, pe, target=(offset, s.size, w.mpitype))
        w.win.Flush(pe)
        sw = sig._impl
        v = np.array([value], sig.dtype)
        sw.win.Accumulate(v, pe, target=(sig_index, 1, sw.mpitype), op=MPI.REPLACE if op == "set" else MPI.SUM)
        sw.win.Flush(pe)

    def signal_wait(self, sig, cmp, value, sig_index=0):
        self._check_cmp(cmp)
        self._check_range(sig, sig_index, 1, "sig_index")
        test = CMP_OPS[cmp]
        bo = Backoff(f"signal {cmp} {value}")
        while True:
            v = self._fop(sig, 0, self.my_pe, sig_index, self._MPI.NO_OP)
            if test(v, value):
                return v
            bo.wait()

    # -- atomics --------------------------------------------------------------------------
    def _fop(self, arr, value, pe, index, op):
        w = arr._impl
        if arr.dtype == np.int64:  # the common case: reuse two buffers (complete after Flush)
            one, res = self._one, self._res
            one[0] = value
        else:
            one, res = np.array([value], arr.dtype), np.empty(1, arr.dtype)
        w.win.Fetch_and_op(one, res, pe, index, op)
        w.win.Flush(pe)
        return res[0].item()

    def atomic_fetch_add(self, arr, value, pe, index=0):
        return self._fop(arr, value, self._check_pe(pe), index, self._MPI.SUM)

    def atomic_fetch(self, arr, pe, index=0):
        return self._fop(arr, 0, self._check_pe(pe), index, self._MPI.NO_OP)

    def atomic_set(self, arr, value, pe, index=0):
        self._fop(arr, value, self._check_pe(pe), index, self._MPI.REPLACE)

    def atomic_compare_swap(self, arr, cond, value, pe, index=0):
        pe = self._check_pe(pe)
        w = arr._impl
        org = np.array([value], arr.dtype)
        cmpb = np.array([cond], arr.dtype)
        res = np.empty(1, arr.dtype)
        w.win.Compare_and_swap(org, cmpb, res, pe, index)
        w.win.Flush(pe)
        return res[0].item()

    def atomic_min(self, arr, value, pe, index=0):
        """``MPI_Fetch_and_op(MIN)`` on one element (integer or float arrays)."""
        self._check_range(arr, index, 1, "index")
        value = self._min_operands(arr, value, "value").item()
        return self._fop(arr, value, self._check_pe(pe), index, self._MPI.MIN)

    def atomic_min_many(self, arr, indices, values, pe, out=None):
        """One ``MPI_Get_accumulate(MIN)`` on an indexed datatype, atomic per element.
        Repeated indices are first reduced to their minimum (one datatype entry per target
        element), and every occurrence gets the element's value from before the batch."""
        pe = self._check_pe(pe)
        uniq, inv, best = self._min_batch(arr, indices, values)
        out = np.empty(inv.size, arr.dtype) if out is None else out
        if inv.size == 0:
            return out
        old = np.empty_like(best)
        w = arr._impl
        dt = w.mpitype.Create_indexed_block(1, uniq.astype(np.int32).tolist()).Commit()
        try:
            w.win.Get_accumulate([best, best.size, w.mpitype], [old, old.size, w.mpitype], pe,
                                 target=(0, 1, dt), op=self._MPI.MIN)
            w.win.Flush(pe)
        finally:
            dt.Free()
        out[:] = old[inv]
        return out

    def atomic_fetch_range(self, arr, pe, offset, count, out=None):
        """Fetch ``count`` elements, each read atomically (``MPI_Get_accumulate(NO_OP)``)."""
        w = arr._impl
        out = np.empty(count, arr.dtype) if out is None else out
        w.win.Get_accumulate(out, out, pe, target=(offset, count, w.mpitype), op=self._MPI.NO_OP)
        w.win.Flush(pe)
        return out

    def atomic_set_range(self, arr, values, pe, offset):
        """Set ``len(values)`` elements, each written atomically (``MPI_Accumulate(REPLACE)``)."""
        w = arr._impl
        v = np.ascontiguousarray(values, dtype=arr.dtype)
        w.win.Accumulate(v, pe, target=(offset, v.size, w.mpitype), op=self._MPI.REPLACE)
        w.win.Flush(pe)

    # -- ordering -------------------------------------------------------------------------
    def fence(self):
        self.quiet()

    def quiet(self):
        for arr in self._live:
            w = arr._impl
            w.win.Flush_all()
            w.pending.clear()

    def barrier(self):
        self.quiet()
        for arr in self._live:   # publish local stores before the barrier, see remote ones after
            arr._impl.win.Sync()
        self.comm.Barrier()
        for arr in self._live:
            arr._impl.win.Sync()
