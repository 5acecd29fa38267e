"""The PGAS interface over NVSHMEM through nvshmem4py (the GPU backend).

Initialisation follows the recipe verified on the H200 (``../shared/notes/gpu-stack.md``):
``nvshmem.core.init(device, mpi_comm=comm, initializer_method="emulated_mpi")`` (works with any
MPI), after binding the rank's GPU. Symmetric arrays are ``nvshmem.core.array`` CuPy arrays,
so kernels take their pointers and call device-side NVSHMEM on them (``kernels/*.cuh``).

OpenSHMEM call   realisation (all on one internal CUDA stream)
--------------  ----------------------------------------------------------------------------
put / get       ``putmem_on_stream`` / ``getmem_on_stream`` on pointers (any sub-range), then a
                stream sync (blocking semantics); ``*_nbi`` complete at ``quiet``
peer            ``get_peer_array``: a CuPy view of a same-node peer's copy (``nvshmem_ptr``)
put_signal      ``putmem_signal_on_stream`` (SIGNAL_SET / SIGNAL_ADD)
signal_wait     host polling of the local signal with back-off: ``signal_wait_until_on_stream``
                kills the process when several PEs share a GPU (limited MPG)
atomic_*        a one-thread kernel with ``nvshmem_ulonglong_atomic_*``
                (``kernels/queue_bench_nvshmem.cu``): host-side AMOs are not implemented in
                the NVSHMEM build of the test machine; integer arrays of 8-byte elements only
fence, quiet    ``quiet_on_stream`` + stream sync (a fence is a quiet here)
barrier         device sync, quiet, ``barrier_all_on_stream`` (team barriers kill limited MPG)
barrier_on_stream  ``barrier_all_on_stream`` on CuPy's current stream, the host not waiting (GPU only)

Collectives (reductions) go through MPI on host copies; team collectives are avoided for the
same limited-MPG reason.
"""

from __future__ import annotations

import numpy as np

from ..errors import BackendUnavailableError, InvalidArgumentError
from . import CMP_OPS, PGAS, SymmetricArray

__all__ = ["NVSHMEM"]

_AMO = {"fetch_add": 0, "fetch": 1, "set": 2, "cas": 3}


class NVSHMEM(PGAS):
    """PGAS over NVSHMEM on the GPU bound to this rank (see the module docstring)."""

    name = "nvshmem"

    def __init__(self, comm):
        super().__init__(comm)
        try:
            import cupy
            import nvshmem.bindings as nb
            import nvshmem.core as nvshmem
            from cuda.core import Device
        except ImportError as e:
            raise BackendUnavailableError(
                f"the GPU PGAS layer needs CuPy, cuda.core and nvshmem4py ({e}); "
                "pip install 'distgraph[gpu]' (cupy-cuda13x nvshmem4py-cu13)") from None
        from ..runtime.context import get_context

        ctx = get_context(comm, backend="gpu")
        self._cp, self._nv, self._nb = cupy, nvshmem, nb
        self.device = Device(ctx.device)
        self.device.set_current()
        cupy.cuda.Device(ctx.device).use()
        nvshmem.init(device=self.device, mpi_comm=comm, initializer_method="emulated_mpi")
        if nvshmem.my_pe() != self.my_pe or nvshmem.n_pes() != self.n_pes:
            raise BackendUnavailableError(
                f"NVSHMEM PE {nvshmem.my_pe()}/{nvshmem.n_pes()} does not match MPI rank {self.my_pe}/{self.n_pes}")
        from ..backends.gpu import memory
        from ..runtime.context import device_key

        # the heap's part of the GPU, which the plans of PEs sharing it leave out (collective)
        memory.measure_overhead(comm, device_key(cupy, ctx.device), "nvshmem", share=memory.device_share(), cp=cupy)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._pending = []
        self._amo_fn = None
        self._amo_out = cupy.zeros(1, cupy.uint64)
        self._finalized = False

    @property
    def limited_mpg(self) -> bool:
        """True when several PEs share this GPU without MPS (correctness only, no speed)."""
        return int(self._nv.init_status()) == int(self._nb.Init_status.STATUS_LIMITED_MPG)

    # -- allocation ---------------------------------------------------------------------
    def array(self, shape, dtype="int64") -> SymmetricArray:
        shape = self._shape(shape)
        dt = np.dtype(dtype)
        local = self._nv.array(shape if shape else (1,), dtype=dt.name)
        if not shape:
            local = local.reshape(())
        local[...] = 0
        self._cp.cuda.Device().synchronize()
        self.barrier()
        from ..backends.gpu.memory import add_symmetric

        add_symmetric(local.nbytes)
        arr = SymmetricArray(local, None, self)
        self._live.add(arr)
        return arr

    def free(self, arr):
        if arr not in self._live:
            raise InvalidArgumentError("arr must be a live symmetric array of this PGAS; got a freed or foreign one")
        self.barrier()
        self._live.discard(arr)
        from ..backends.gpu.memory import add_symmetric

        add_symmetric(-arr.local.nbytes)
        self._nv.free_array(arr.local)
        arr.local = None

    # -- RMA ------------------------------------------------------------------------------
    def _src(self, dst, src):
        return self._cp.ascontiguousarray(self._cp.asarray(src, dtype=dst.dtype).reshape(-1))

    def put(self, dst, src, pe, offset=0):
        pe = self._check_pe(pe)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        self._cp.cuda.get_current_stream().synchronize()
        self._nb.putmem_on_stream(dst.ptr + offset * dst.dtype.itemsize, s.data.ptr, s.nbytes, pe, self.stream.ptr)
        self.stream.synchronize()

    def put_nbi(self, dst, src, pe, offset=0):
        pe = self._check_pe(pe)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        self._cp.cuda.get_current_stream().synchronize()
        self._nb.putmem_nbi_on_stream(dst.ptr + offset * dst.dtype.itemsize, s.data.ptr, s.nbytes, pe, self.stream.ptr)
        self._pending.append(s)

    def get(self, src, pe, offset=0, count=None, out=None):
        pe = self._check_pe(pe)
        count = src.size - offset if count is None else int(count)
        self._check_range(src, offset, count)
        out = self._cp.empty(count, src.dtype) if out is None else out
        self._nb.getmem_on_stream(out.data.ptr, src.ptr + offset * src.dtype.itemsize, count * src.dtype.itemsize,
                                  pe, self.stream.ptr)
        self.stream.synchronize()
        return out

    def peer(self, arr, pe):
        """A CuPy view of PE ``pe``'s copy of ``arr`` (loads and stores go over NVLink, or to
        this GPU's memory when PEs share it), or None where the peer's heap is not mapped here
        (another node: use :meth:`get`). Valid until ``arr`` is freed."""
        pe = self._check_pe(pe)
        if pe == self.my_pe:
            return arr.local
        try:
            view = self._nv.get_peer_array(arr.local, pe)
        except Exception:  # noqa: BLE001 - not mapped (or not offered by this nvshmem4py)
            return None
        return view if view is not None and getattr(view, "size", 0) == arr.local.size else None

    def get_nbi(self, src, pe, offset, count, out):
        pe = self._check_pe(pe)
        self._check_range(src, offset, count)
        self._nb.getmem_nbi_on_stream(out.data.ptr, src.ptr + offset * src.dtype.itemsize, count * src.dtype.itemsize,
                                      pe, self.stream.ptr)
        self._pending.append(out)

    def put_signal(self, dst, src, pe, sig, value, op="set", offset=0, sig_index=0):
        self._check_sigop(op)
        pe = self._check_pe(pe)
        self._check_u64(sig)
        s = self._src(dst, src)
        self._check_range(dst, offset, s.size)
        self._check_range(sig, sig_index, 1, "sig_index")
        so = self._nb.Signal_op.SIGNAL_SET if op == "set" else self._nb.Signal_op.SIGNAL_ADD
        self._cp.cuda.get_current_stream().synchronize()
        self._nb.putmem_signal_on_stream(dst.ptr + offset * dst.dtype.itemsize, s.data.ptr, s.nbytes,
                                         sig.ptr + 8 * sig_index, int(value), int(so), pe, self.stream.ptr)
        self.stream.synchronize()

    def signal_wait(self, sig, cmp, value, sig_index=0):
        from .mpi_rma import Backoff

        self._check_cmp(cmp)
        self._check_u64(sig)
        self._check_range(sig, sig_index, 1, "sig_index")
        test = CMP_OPS[cmp]
        bo = Backoff(f"signal {cmp} {value}", max_sleep=1e-3)
        flat = sig.local.reshape(-1)
        while True:
            v = int(flat[sig_index].get())
            if test(v, value):
                return v
            bo.wait()

    # -- atomics (device kernel) ------------------------------------------------------------
    def _check_u64(self, arr):
        if arr.dtype.itemsize != 8 or arr.dtype.kind not in "iu":
            raise InvalidArgumentError(f"atomics and signals need an int64/uint64 symmetric array; got {arr.dtype}")

    def _amo(self, arr, op, pe, index, value=0, cond=0):
        self._check_u64(arr)
        pe = self._check_pe(pe)
        self._check_range(arr, index, 1, "index")
        if self._amo_fn is None:
            from ..backends.gpu.nvshmem_build import load_module

            self._amo_fn = load_module("queue_bench_nvshmem", comm=self.comm).get_function("distgraph_pgas_amo")
        m = (1 << 64) - 1
        with self.stream:
            self._amo_fn((1,), (1,), (np.uint64(arr.ptr + 8 * index), np.int32(pe), np.int32(_AMO[op]),
                                      np.uint64(int(value) & m), np.uint64(int(cond) & m), self._amo_out))
        self.stream.synchronize()
        v = int(self._amo_out.get()[0])
        return v - (1 << 64) if arr.dtype.kind == "i" and v >= 1 << 63 else v

    def atomic_fetch_add(self, arr, value, pe, index=0):
        return self._amo(arr, "fetch_add", pe, index, value)

    def atomic_fetch(self, arr, pe, index=0):
        return self._amo(arr, "fetch", pe, index)

    def atomic_set(self, arr, value, pe, index=0):
        self._amo(arr, "set", pe, index, value)

    def atomic_compare_swap(self, arr, cond, value, pe, index=0):
        return self._amo(arr, "cas", pe, index, value, cond)

    def peek(self, arr, pe, indices):
        """Atomic reads of several elements of PE ``pe``'s copy (for inspection)."""
        return [self.atomic_fetch(arr, pe, int(i)) for i in indices]

    # -- ordering -------------------------------------------------------------------------
    def fence(self):
        self.quiet()

    def quiet(self):
        self._nb.quiet_on_stream(self.stream.ptr)
        self.stream.synchronize()
        self._pending.clear()

    def barrier_on_stream(self, stream=None):
        """A barrier of all PEs enqueued on ``stream`` (default: CuPy's current stream), the host
        not waiting: what the stream runs after it starts once every PE's stream has reached it,
        and sees what their kernels wrote before it (the pull rounds of
        distgraph/backends/gpu/bellman_ford.py). Collective."""
        s = self._cp.cuda.get_current_stream() if stream is None else stream
        self._nb.barrier_all_on_stream(s.ptr)

    def barrier(self):
        self._cp.cuda.Device().synchronize()
        self._nb.quiet_on_stream(self.stream.ptr)
        self._nb.barrier_all_on_stream(self.stream.ptr)
        self.stream.synchronize()
        self._pending.clear()

    def finalize(self):
        """Free all arrays, unregister our modules, finalize NVSHMEM (collective, once)."""
        if self._finalized:
            return
        super().finalize()
        from ..backends.gpu.nvshmem_build import unload_modules

        unload_modules()
        self._nv.finalize()
        self._finalized = True
        from ..backends.gpu.memory import forget_overhead

        forget_overhead("nvshmem")  # the heap and its arrays are gone
        from . import _cache

        for k in [k for k, v in _cache.items() if v is self]:
            del _cache[k]
