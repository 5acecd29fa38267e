"""PGAS layer: symmetric arrays, one-sided put/get, signals, atomics, ordering, barrier.

One interface, two implementations chosen with the backend:

* :class:`~distgraph.pgas.mpi_rma.MPIRMA` (CPU): every symmetric array is an MPI-3 window
  (``MPI_Win_allocate``, passive target, ``Lock_all`` for its whole life). Puts and gets are
  ``MPI_Put``/``MPI_Get``, atomics are ``MPI_Fetch_and_op``/``MPI_Compare_and_swap``/
  ``MPI_Get_accumulate``, ``quiet`` is ``MPI_Win_flush_all`` over every live window.
* :class:`~distgraph.pgas.nvshmem.NVSHMEM` (GPU): nvshmem4py, bootstrapped from the MPI
  communicator; symmetric arrays live on the NVSHMEM heap as CuPy arrays, so our own
  kernels can pass their pointers to device-side NVSHMEM calls (see ``kernels/broker_queue.cuh``).

The model is OpenSHMEM's (the vocabulary of the NVSHMEM paper in ``../shared/papers``):

``array(shape, dtype)``
    Collective. The same shape and dtype on every PE; element ``i`` of PE ``p``'s copy is
    addressed as ``(arr, p, i)`` by every other PE. ``arr.local`` is this PE's copy
    (a NumPy array on the CPU, a CuPy array on the GPU).
``put(dst, src, pe, offset)`` / ``get(src, pe, offset, count)``
    Blocking: on return ``src`` may be reused (put) or the data has arrived (get).
    A blocking put is *delivered* only after ``quiet()``, as in OpenSHMEM.
``put_nbi`` / ``get_nbi``
    Non-blocking: buffers may be touched only after ``quiet()``.
``put_signal(dst, src, pe, sig, value, op)`` / ``signal_wait(sig, cmp, value)``
    The data is delivered before the signal update (``op`` ``"set"`` or ``"add"``) becomes
    visible at ``pe``; ``signal_wait`` blocks until the local signal satisfies ``cmp``.
``atomic_fetch_add / atomic_fetch / atomic_set / atomic_compare_swap``
    On one integer element of a PE's copy, atomic with respect to each other.
``atomic_min(arr, value, pe, index)`` / ``atomic_min_many(arr, indices, values, pe)``
    Fetch-and-minimum on one element / on many elements (atomic per element), returning
    the old values: the remote relaxation of a distributed Bellman-Ford.
``fence()`` / ``quiet()`` / ``barrier()``
    Order puts to each PE / complete all outstanding operations / ``quiet`` then a barrier.

Offsets and counts are in elements of the array's flattened local copy.

>>> from distgraph.pgas import get_pgas            # doctest: +SKIP
>>> pg = get_pgas()                                 # CPU: MPI windows over COMM_WORLD
>>> a = pg.array(4, "int64")
>>> pg.put(a, [7, 8], pe=(pg.my_pe + 1) % pg.n_pes, offset=2); pg.barrier()
>>> a.local                                        # written by the left neighbour
array([0, 0, 7, 8])
>>> pg.free(a)
"""

from __future__ import annotations

import abc

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["PGAS", "SymmetricArray", "get_pgas", "CMP_OPS", "SIGNAL_OPS"]

#: Comparisons accepted by :meth:`PGAS.signal_wait`.
CMP_OPS = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
           "lt": np.less, "le": np.less_equal}
#: Signal updates accepted by :meth:`PGAS.put_signal`.
SIGNAL_OPS = ("set", "add")


class SymmetricArray:
    """A handle to one symmetric allocation (the same shape on every PE).

    Attributes
    ----------
    local : numpy.ndarray or cupy.ndarray
        This PE's copy. On the CPU, read it only at points where no remote operation on it
        can be in flight (after a barrier), or through the PGAS calls with ``pe=my_pe``.
    shape, dtype, size, nbytes
        As for the local array.
    """

    __slots__ = ("local", "shape", "dtype", "size", "nbytes", "_impl", "_pgas")

    def __init__(self, local, impl, pgas):
        self.local = local
        self.shape = tuple(local.shape)
        self.dtype = np.dtype(local.dtype)
        self.size = int(local.size)
        self.nbytes = int(local.nbytes)
        self._impl = impl
        self._pgas = pgas

    @property
    def ptr(self) -> int:
        """Device address of the local copy (GPU only; the symmetric address)."""
        return int(self.local.data.ptr)

    def __repr__(self):
        return f"SymmetricArray(shape={self.shape}, dtype={self.dtype}, backend={self._pgas.name})"


def _integral_in(x, lo: int, hi: int) -> bool:
    """Whether ``x`` is an integral number in ``[lo, hi]`` (for object arrays of values)."""
    try:
        i = int(x)
    except (TypeError, ValueError, OverflowError):
        return False
    return i == x and lo <= i <= hi


class PGAS(abc.ABC):
    """The PGAS interface; see the module docstring for the semantics."""

    name = "abstract"

    def __init__(self, comm):
        self.comm = comm
        self.my_pe = comm.Get_rank()
        self.n_pes = comm.Get_size()
        self._live = set()

    # -- allocation ---------------------------------------------------------------------
    @abc.abstractmethod
    def array(self, shape, dtype="int64") -> SymmetricArray:
        """Collectively allocate a zero-filled symmetric array."""

    @abc.abstractmethod
    def free(self, arr: SymmetricArray) -> None:
        """Collectively free ``arr`` (every PE, in the same order as allocated or not)."""

    # -- RMA ------------------------------------------------------------------------------
    @abc.abstractmethod
    def put(self, dst: SymmetricArray, src, pe: int, offset: int = 0) -> None: ...

    @abc.abstractmethod
    def put_nbi(self, dst: SymmetricArray, src, pe: int, offset: int = 0) -> None: ...

    @abc.abstractmethod
    def get(self, src: SymmetricArray, pe: int, offset: int = 0, count: int | None = None, out=None): ...

    @abc.abstractmethod
    def get_nbi(self, src: SymmetricArray, pe: int, offset: int, count: int, out) -> None: ...

    @abc.abstractmethod
    def put_signal(self, dst: SymmetricArray, src, pe: int, sig: SymmetricArray, value: int,
                   op: str = "set", offset: int = 0, sig_index: int = 0) -> None: ...

    @abc.abstractmethod
    def signal_wait(self, sig: SymmetricArray, cmp: str, value: int, sig_index: int = 0) -> int: ...

    # -- atomics --------------------------------------------------------------------------
    @abc.abstractmethod
    def atomic_fetch_add(self, arr: SymmetricArray, value: int, pe: int, index: int = 0) -> int: ...

    @abc.abstractmethod
    def atomic_fetch(self, arr: SymmetricArray, pe: int, index: int = 0) -> int: ...

    @abc.abstractmethod
    def atomic_set(self, arr: SymmetricArray, value: int, pe: int, index: int = 0) -> None: ...

    @abc.abstractmethod
    def atomic_compare_swap(self, arr: SymmetricArray, cond: int, value: int, pe: int, index: int = 0) -> int: ...

    def atomic_min(self, arr: SymmetricArray, value, pe: int, index: int = 0):
        """Atomic fetch-and-minimum: ``old = arr[pe][index]; arr[pe][index] = min(old, value)``;
        returns ``old`` (a Python number). ``value`` is taken in ``arr.dtype`` (see
        :meth:`_min_operands`: an integer array refuses a fraction or an out-of-range value
        instead of truncating it; NaN is refused). The default is a compare-and-swap loop,
        for integer arrays of the implementation's atomic width only; implementations
        override it with a native operation (MPI-RMA: integer and float arrays)."""
        self._check_range(arr, index, 1, "index")
        if arr.dtype.kind not in "iu":
            raise InvalidArgumentError(
                f"arr must be an integer symmetric array for the compare-and-swap atomic_min of "
                f"{type(self).__name__}; got dtype {arr.dtype}")
        value = self._min_operands(arr, value, "value").item()
        old = self.atomic_fetch(arr, pe, index)
        while value < old:
            seen = self.atomic_compare_swap(arr, old, value, pe, index)
            if seen == old:
                break
            old = seen
        return old

    def atomic_min_many(self, arr: SymmetricArray, indices, values, pe: int, out=None):
        """Batched :meth:`atomic_min` on elements ``indices`` of PE ``pe``'s copy (atomic per
        element, not as a whole). Returns the old values (array of ``arr.dtype``, in the order
        of ``indices``): each element's value from before the batch, so ``values[i] <
        old[i]`` exactly when the batch lowered element ``indices[i]`` (an index may repeat:
        its smallest value is applied once, and every occurrence gets the same old value)."""
        uniq, inv, best = self._min_batch(arr, indices, values)
        out = np.empty(inv.size, arr.dtype) if out is None else out
        old = np.array([self.atomic_min(arr, v, pe, k) for k, v in zip(uniq.tolist(), best.tolist())], arr.dtype)
        out[:] = old[inv] if inv.size else old[:0]
        return out

    @staticmethod
    def _min_operands(arr: SymmetricArray, values, what: str = "values") -> np.ndarray:
        """``values`` as an array of ``arr.dtype`` for a minimum. Integer arrays take integral
        values in the dtype's range exactly (a fraction would be truncated to a smaller,
        wrong minimum); float arrays round to the dtype; NaN (unordered) is refused."""
        dt = arr.dtype
        if dt.kind not in "iuf":
            raise InvalidArgumentError(f"arr must be an integer or float symmetric array for a minimum; got dtype {dt}")
        v = np.asarray(values)
        if v.dtype != dt:
            if v.dtype.kind not in "iubfO":
                raise InvalidArgumentError(f"{what} must be numbers; got dtype {v.dtype}")
            if dt.kind in "iu" and v.size:
                info = np.iinfo(dt)
                flat = v.reshape(-1)
                if v.dtype.kind == "f":
                    top = 2.0 ** (8 * dt.itemsize - (dt.kind == "i"))
                    ok = np.isfinite(flat) & (flat >= float(info.min)) & (flat < top)
                    ok[ok] = flat[ok] == np.floor(flat[ok])
                elif v.dtype.kind == "O":
                    ok = np.array([_integral_in(x, info.min, info.max) for x in flat], bool)
                else:
                    ok = (flat >= info.min) & (flat <= info.max)
                if not ok.all():
                    x = flat[int(np.flatnonzero(~ok)[0])]
                    x = x.item() if isinstance(x, np.generic) else x
                    raise InvalidArgumentError(
                        f"{what} must be integers in [{info.min}, {info.max}] for a symmetric array of dtype {dt} "
                        f"(a fraction would be truncated to a smaller minimum); got {x!r}")
            try:
                v = v.astype(dt)
            except (TypeError, ValueError):
                raise InvalidArgumentError(f"{what} must be numbers; got {values!r}") from None
        if dt.kind == "f" and np.isnan(v).any():
            raise InvalidArgumentError(f"{what} must not be NaN (unordered) for a minimum")
        return v

    def _min_batch(self, arr: SymmetricArray, indices, values):
        """Validated batch of a minimum: ``(uniq, inv, best)``, the distinct target indices
        (sorted), the position in ``uniq`` of each input, and each target's smallest value."""
        idx = np.asarray(indices)
        if idx.size and idx.dtype.kind not in "iu":
            raise InvalidArgumentError(f"indices must be integers; got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=False).reshape(-1)
        vals = self._min_operands(arr, values).reshape(-1)
        if idx.shape != vals.shape:
            raise InvalidArgumentError(f"values must have one entry per index ({idx.size}); got {vals.size}")
        if idx.size and (idx.min() < 0 or idx.max() >= arr.size):
            raise InvalidArgumentError(f"indices must lie in [0, {arr.size}) of the symmetric array")
        uniq, inv = np.unique(idx, return_inverse=True)
        inv = inv.reshape(-1)
        if uniq.size == idx.size:
            best = np.empty_like(vals)
            best[inv] = vals
        else:
            best = np.full(uniq.size, vals.max(), arr.dtype)
            np.minimum.at(best, inv, vals)
        return uniq, inv, best

    def atomic_fetch_range(self, arr: SymmetricArray, pe: int, offset: int, count: int, out=None):
        """``count`` elements, each read atomically (not the range as a whole)."""
        vals = [self.atomic_fetch(arr, pe, offset + i) for i in range(count)]
        out = np.empty(count, arr.dtype) if out is None else out
        out[:count] = vals
        return out

    def atomic_set_range(self, arr: SymmetricArray, values, pe: int, offset: int) -> None:
        """Set ``len(values)`` elements, each atomically (not the range as a whole)."""
        for i, v in enumerate(np.asarray(values).reshape(-1).tolist()):
            self.atomic_set(arr, v, pe, offset + i)

    # -- ordering -------------------------------------------------------------------------
    @abc.abstractmethod
    def fence(self) -> None: ...

    @abc.abstractmethod
    def quiet(self) -> None: ...

    @abc.abstractmethod
    def barrier(self) -> None: ...

    def finalize(self) -> None:
        """Free every live array (collective)."""
        for arr in sorted(self._live, key=id):
            self.free(arr)

    # -- shared validation ----------------------------------------------------------------
    def _check_pe(self, pe) -> int:
        if not isinstance(pe, (int, np.integer)) or not 0 <= pe < self.n_pes:
            raise InvalidArgumentError(f"pe must be in [0, {self.n_pes}); got {pe!r}")
        return int(pe)

    @staticmethod
    def _check_range(arr: SymmetricArray, offset: int, count: int, what: str = "offset") -> None:
        if offset < 0 or count < 0 or offset + count > arr.size:
            raise InvalidArgumentError(
                f"{what} range [{offset}, {offset + count}) must lie in [0, {arr.size}) of the symmetric array")

    @staticmethod
    def _check_cmp(cmp: str) -> None:
        if cmp not in CMP_OPS:
            raise InvalidArgumentError(f"cmp must be one of {sorted(CMP_OPS)}; got {cmp!r}")

    @staticmethod
    def _check_sigop(op: str) -> None:
        if op not in SIGNAL_OPS:
            raise InvalidArgumentError(f"op must be one of {SIGNAL_OPS}; got {op!r}")

    @staticmethod
    def _shape(shape) -> tuple:
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if any((not isinstance(s, (int, np.integer))) or s < 0 for s in shape):
            raise InvalidArgumentError(f"shape must be non-negative integers; got {shape!r}")
        return tuple(int(s) for s in shape)


_cache: dict = {}


def get_pgas(comm=None, backend: str | None = None) -> PGAS:
    """The PGAS implementation for ``comm`` and the backend (memoized per communicator).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``.
    backend : {"cpu", "gpu", None}
        ``None`` takes the backend of :func:`distgraph.runtime.get_context`.

    Returns
    -------
    PGAS
        :class:`~distgraph.pgas.mpi_rma.MPIRMA` on ``"cpu"``,
        :class:`~distgraph.pgas.nvshmem.NVSHMEM` on ``"gpu"``.

    Raises
    ------
    BackendUnavailableError
        ``"gpu"`` without CuPy, a GPU or nvshmem4py.
    """
    from mpi4py import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    if backend is None:
        from ..runtime.context import get_context

        backend = get_context(comm).backend
    if backend not in ("cpu", "gpu"):
        raise InvalidArgumentError(f"backend must be 'cpu' or 'gpu'; got {backend!r}")
    key = (backend, MPI._handleof(comm) if hasattr(MPI, "_handleof") else id(comm))
    if key not in _cache:
        if backend == "cpu":
            from .mpi_rma import MPIRMA

            _cache[key] = MPIRMA(comm)
        else:
            from .nvshmem import NVSHMEM

            _cache[key] = NVSHMEM(comm)
    return _cache[key]
