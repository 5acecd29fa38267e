"""Bellman-Ford SSSP on GPUs: the queue-driven kernel (one or several PEs) and the round-based
Bellman-Ford (fused round kernels, or the plain CuPy baseline; one or several PEs).

``mode="async"``: :class:`QueueSSSP`, the queue-driven Bellman-Ford of Sec. III-C of
``../shared/papers/003`` in ``kernels/bellman_ford.cuh`` (read its header: warps dequeue
improved vertices from the device Broker Queue, BQ or BWD, relax their out-arcs with a
64-bit atomic minimum and enqueue the improved heads once, through an in-queue flag).
One PE runs ``kernels/bellman_ford.cu`` (NVRTC, no NVSHMEM). Several PEs (one per MPI
rank; they may share one GPU in NVSHMEM's limited MPG mode, which checks correctness, not
speed) run ``kernels/bellman_ford_nvshmem.cu``: each PE owns the vertex block of
:func:`distgraph.graph.partition.partition_by_edges`, its distances, in-queue flags and
queue segment in the symmetric heap, and relaxes another PE's vertex by a remote
compare-and-swap minimum plus a remote enqueue of the vertex (``remote="atomic"``), by a
remote enqueue of ``(vertex, candidate, tail)`` (``remote="enqueue"``), or in batches
(``remote="batch"``): candidates are claimed in local per-destination outboxes, coalesced
per vertex (the smallest candidate wins, kept in the ghost keys), and shipped by one
``nvshmemx_putmem_signal_warp`` of up to :data:`BATCH` items into the owner's inbox, which
applies them (no remote access per arc; see ``kernels/bellman_ford.cuh``). Termination is
detected in device code from per-PE counters of items sent and finished. ``stats`` count
the remote candidates: dropped by the ghost keys, claimed, coalesced, shipped, applied; in the
atomic modes the CASes that found another key than expected (``cas_failed``), the remote minima
that lowered the owner's key (``remote_wins``; ``remote_first``: of those, from +inf, the flag
set without a fetch) and the enqueues into other PEs' segments (``remote_pushes``, also in
enqueue mode). ``remote="atomic"`` starts its CAS loop from the ghost key (one round trip when
it is current) and reserves the warp's remote enqueues once per destination;
``remote="atomic_fetch"`` (:class:`QueueSSSP` only, for A/B timings) is the path before: a
fetch first, a flag swap always, one reservation per lane.
The near-far priority (``delta``) runs on one PE by default; ``multi_pe_phases=True`` (opt-in)
runs it on several PEs with one global threshold, the host changing the phase between
launches (an MPI min-reduction of the PEs' smallest far keys).

``mode="rounds"``: :class:`RoundsSSSP`, rounds (round ``k`` relaxes the out-arcs of the
vertices improved in round ``k - 1``). ``engine="kernel"`` (default, :func:`rounds_kernel`):
each round is fused kernels (``kernels/bf_rounds.cu``: a warp per frontier vertex, hubs in
pieces of :data:`BIG_DEGREE` arcs a block each, 64-bit atomicMin on keys), by default
asynchronous (``order="async"``: a vertex relaxed from its latest candidate, skipped when its
arcs were relaxed from it already; ``"jacobi"``: from the distances at the round's start), plus,
once a negative cycle is proven, Jacobi rounds again with a pass for the tails
(:meth:`RoundsSSSP.run`). ``engine="cupy"``
(:func:`rounds_cupy`): the baseline a CuPy user would write, array
operations only (the frontier's arcs expanded, one scatter-minimum per round:
``cupy.minimum.at`` or ``cupyx.scatter_min``, whichever is exact for the dtype, else a sort).
The kernels run their rounds in :func:`_pull_loop` (settle kernels end each round: the
next frontier, the stop checks, the next round's arrays; the host does not wait for a round), the CuPy rounds in :func:`_round_loop`;
both give the same Jacobi rounds (the kernels' asynchronous ones: the same distances and stops). On several ranks with nvshmem4py the rounds are distributed: each PE
holds and relaxes its vertex block's arcs. The kernels keep no replicated distances: each owner
pulls, over NVLink, the chunks of its vertices that a peer lowered (:class:`_PeerPull`,
``exchange="pull"``); the CuPy rounds (and the kernels with ``exchange="dense"``) combine
replicated distances after each round through NVSHMEM peer views (:class:`_PeerMin`). Without
nvshmem4py every rank runs the whole graph. ``mode="auto"`` runs the rounds
first and the queue kernel if they do not settle (:func:`run_auto`).

The graph is uploaded in its own dtypes (large arrays from their page-locked pages,
:func:`_to_device`) and converted on the device (:class:`_Block`).

Distances on the device are 64-bit keys: int64 sums for integer weights, float64 sums for
float weights stored as "ordered ints" (the double's bits, the 63 low bits flipped when
negative), so a signed 64-bit ``atomicMin`` orders them as the doubles (no CAS loop on
one GPU; NVSHMEM has no atomic minimum, so remote minima are CAS loops). The results are
those of the CPU backend: the same unique fixed point, the same canonical predecessors (the
smallest tail of a tight arc, recomputed from the distances on the device by
``kernels/sssp_tight.cu`` and min-reduced over the ranks, as the CPU backend's ``_finish`` does).

Negative cycles: as on the CPU, the predecessor graph is searched for a cycle when a
distance falls below ``-B`` (``B`` the sum of the magnitudes of the negative weights; the
predecessor graph must then hold a negative cycle) or after about ``4 n`` vertex scans
since the last look; the kernel stops between items (the queues keep the work), the host
walks the predecessors and relaunches. Predecessors are written after the atomic minimum
without a lock, so the host confirms a cycle's weight before reporting it; when the
``-B`` trigger fired three times, or three predecessor cycles failed the confirmation, or
after :data:`MAX_CHECKS` checks, without a confirmed cycle (racing writers can hide it),
the CPU driver on the host decides, once: it names the cycle, or finds none and the GPU
run goes on (a later ``-B`` stop then raises :class:`~distgraph.errors.DistgraphError`:
only float rounding can bring a distance below ``-B`` without a negative cycle). So the
number of checks is bounded.

Measured on the H200 (``benchmarks/results/sssp_gpu.json``, one source, best of 3, device
arrays already uploaded; relaxations per arc = arcs scanned / arcs). Road-FLA (2.7 M arcs,
1973 Bellman-Ford rounds): the queue kernel with its defaults (near-far delta factor 4,
kept vertices, hubs in chunks) takes 61 / 45 ms with uniform / potential-shifted weights
and scans each arc 2.6 / 3.1 times; the session-2 kernel (one warp scanning its 32
vertices one after the other, FIFO) took 177 / 173 ms at 7.7 / 5.0; the CuPy rounds 1050 /
1894 ms, the CPU backend on one core 200 / 239 ms (3.3 / 5.3x slower). Near-far with factor
1 scans 1.5 / 1.8 times per arc but takes 82 / 61 ms: each of its 146 / 90 phases waits for
its longest chain of improvements. Kronecker 20 (31.4 M arcs): the CuPy rounds are still
faster, 18.5 / 25.9 ms against 29.8 / 27.4 ms (25.5 / 28.5 ms without kept vertices); both
scan arcs 3.2 (rounds) to 6.5 (queue) times, hubs being rescanned after late
improvements; the CPU backend on one core takes 1.17 / 1.83 s. (Session 14: the fused round
kernels take 10.8 ms on Kronecker 20 with uniform weights, benchmarks/results/session14/call7/.)
So ``rounds`` suits
low-diameter graphs and ``mode="async", queue="bwd"`` high-diameter ones; BWD was faster
than BQ in every case measured (its dequeue gives up at once instead of proving
emptiness).
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import DistgraphError, GraphValueError, InvalidArgumentError, expect

__all__ = ["QueueSSSP", "RoundsSSSP", "rounds_cupy", "rounds_kernel", "run_queue", "run_rounds", "to_keys",
           "from_keys"]

BLOCK = 128
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_SENT, _DONE, _STOPREQ = 0, 8, 16
_C_SCANS, _C_ARCS, _C_BELOW, _C_FINISHED, _C_STOP, _C_ABORT, _C_ITEMS = range(7)
#: ctl counters of remote candidates (several PEs), summed over PEs into ``stats`` under these names
_C_COUNTERS = {"ghost_dropped": 7, "remote_claims": 8, "coalesced": 9, "shipped": 10, "applied": 11,
               "flushes": 12, "cas_failed": 13, "remote_wins": 14, "remote_pushes": 15, "remote_first": 16}
_CTL = 24
#: remote_mode of the kernel per ``remote`` (``atomic_fetch``: the atomic path before session 7, for A/B)
_REMOTE_MODE = {"atomic": 0, "enqueue": 1, "batch": 2, "atomic_fetch": 3}
#: ph slots (near-far state, see kernels/bellman_ford.cuh): thr, phase, pile counts, pile minima,
#: delta, +inf, host-driven phases (1), scan tasks the host asks warp 0 to queue, their entries
_P_THR, _P_PHASE, _P_CNT, _P_FMIN, _P_DELTA, _P_INF, _P_HOST, _P_TASKS, _P_TCNT = 0, 1, 2, 4, 6, 7, 8, 9, 10
_PH = 16
#: Most outbox entries one put ships (``remote="batch"``; DG_BF_BATCH in the kernel).
BATCH = 1024
#: Default ``flush``: a warp ships an outbox once it holds this many entries (warp 0 ships any
#: after each of its turns). Not measured yet: a guess between few large puts and short waits.
FLUSH = 256
#: Largest inbox ring per source PE (items of 24 bytes; ``remote="batch"``); read at
#: construction (a test shrinks it to make puts wrap around and wait for credit).
_RING_MAX = 1 << 20
#: Stops for a negative-cycle check after which the CPU driver names the cycle (or says
#: there is none, and the GPU run goes on without asking again); 3 "below -B" stops or 3
#: unconfirmed predecessor cycles call it earlier. Bounds the checks when racing pred
#: writes hide a cycle at every look.
MAX_CHECKS = 16


def to_keys(x: np.ndarray) -> np.ndarray:
    """Work-dtype distances (int64 or float64) as the kernel's int64 keys (host)."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return x.astype(np.int64)
    k = x.astype(np.float64).view(np.int64).copy()
    k[k < 0] ^= _FLIP
    return k


def from_keys(k: np.ndarray, wdt) -> np.ndarray:
    """The inverse of :func:`to_keys`."""
    k = np.asarray(k, dtype=np.int64)
    if np.dtype(wdt).kind != "f":
        return k.copy()
    k = k.copy()
    k[k < 0] ^= _FLIP
    return k.view(np.float64)


#: Longest sleep (ns) of an idle warp between looks at the queue (QueueSSSP's idle_ns).
IDLE_NS = 2048
#: Out-arcs above which a vertex is scanned in chunks of this many arcs by several warps.
SPLIT = 4096
#: Scan tasks per phase change of the near-far priority (DG_BF_MAX_TASKS in the kernel).
_MAX_TASKS = 1024
#: Default near-far delta: this many times mean |w| * max(1, 32 / mean degree) (Davidson et
#: al.'s heuristic, delta = w * 32 / degree, at least one mean weight): wide buckets where few
#: arcs leave a vertex (road graphs). In the sweep of benchmarks/results/sssp_gpu.json (kept
#: vertices, idle 2048 ns) 4 was the fastest of the factors 0, 1, 4 on road-FLA shifted (44.9
#: ms; 0: 52.9) and Kronecker 20 (29.8 / 27.4 ms; 0: 30.1 / 30.5), but not on road-FLA
#: uniform (61.5 ms; 0, no near-far: 58.4). 1 and 0.25 (previous call) scan fewer arcs but
#: pay ~0.2-0.5 ms per phase change: a phase waits for its longest chain.
DELTA_FACTOR = 4.0


def _check_delta(delta):
    """``delta`` is None or a real number >= 0 (the check of :func:`~distgraph.algorithms.
    bellman_ford.bellman_ford` too): a bool, NaN, a complex number (a NumPy complex is an
    ``np.number``, and compares) and a ``timedelta64`` (an ``np.integer``) are refused."""
    expect(delta is None or (isinstance(delta, (int, float, np.integer, np.floating))
                             and not isinstance(delta, (bool, np.timedelta64)) and delta >= 0),
           "delta", "None or a number >= 0 (0 or inf: no near-far)", delta)


def _pick_delta(indptr, ww, isf, delta):
    """The near-far delta in the weights' units (0: off); ``delta`` the caller's value.
    A delta that is not finite, or not below 2**63 - 1 with integer weights (an int64
    threshold cannot exceed it: nothing would ever go far), is off too."""
    if delta is not None:
        if delta == 0 or (not isinstance(delta, (int, np.integer)) and not np.isfinite(delta)):
            return 0  # (np.isfinite refuses Python ints past int64)
        return float(min(delta, float(np.finfo(np.float64).max))) if isf else _int_delta(delta)
    n = indptr.shape[0] - 1
    m = int(indptr[-1] - indptr[0]) if n else 0
    if m == 0:
        return 0
    a = np.abs(ww[::max(1, ww.shape[0] // (1 << 20))].astype(np.float64))  # a strided sample
    a = a[np.isfinite(a)]
    wmean = float(a.mean()) if a.size else 1.0
    d = DELTA_FACTOR * max(wmean, 1e-300 if isf else 1.0) * max(1.0, 32.0 * n / m)
    if not np.isfinite(d):
        return 0
    return d if isf else _int_delta(d)


def _int_delta(d):
    """An integer delta (rounded up, at least 1), 0 (off) from 2**63 - 1 on: the kernel's
    threshold and delta are int64 (a larger value overflowed building its start state)."""
    v = max(int(d) if isinstance(d, (int, np.integer)) else int(np.ceil(d)), 1)
    return 0 if v >= np.iinfo(np.int64).max else v


def _grid(cp, kernel, block):
    """Co-resident blocks of ``kernel`` on this GPU: the driver's occupancy
    (:func:`~distgraph.backends.gpu.loader.blocks_per_sm`) times the SMs, at least one block an
    SM. The queue kernel's blocks wait on each other, so only the driver's count is trusted:
    where it cannot be asked, one block an SM (not the register estimate, which does not see
    static shared memory)."""
    from .loader import blocks_per_sm, sm_count

    per_sm, source = blocks_per_sm(kernel, block)
    return sm_count(cp) * (max(per_sm, 1) if source == "driver" else 1)


def _cpu_cycle(graph, w, source, confirm):
    """Name a negative cycle with the CPU driver (one rank, host)."""
    from mpi4py import MPI

    from ..cpu.bellman_ford import run_rounds as cpu_rounds

    _, _, _, cycle = cpu_rounds(graph, w, source, MPI.COMM_SELF, confirm, predecessors=False)
    return cycle


def _tight_tree(graph, w, d, source):
    """A shortest-path tree over the tight arcs (BFS from the source), for graphs whose
    tight arcs close a zero-weight cycle (no canonical tree)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    from ..cpu.bellman_ford import INF_OF

    n = graph.n
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
    dst = np.asarray(graph.indices, dtype=np.int64)
    ww = np.ones(dst.shape[0], d.dtype) if w is None else w.astype(d.dtype)
    inf = INF_OF(d.dtype)
    ok = (d[src] != inf) & (d[dst] != inf) & (d[src] + ww == d[dst])
    a = sp.csr_matrix((np.ones(int(ok.sum()), np.int8), (src[ok], dst[ok])), shape=(n, n))
    _, pred = breadth_first_order(a, source, directed=True, return_predecessors=True)
    pred = pred.astype(np.int64)
    pred[pred < 0] = -1
    return pred


#: Host arrays of at least this many bytes are copied to the device from their own pages,
#: registered for the copy (page-locked, DMA at full speed, no staging copy): on the H200
#: host, 125 MB of int32 heads in 6.9 ms registration included, against 20 ms by
#: cupy.asarray's staging (benchmarks/results/session14/call3/h2d_upload.json).
REGISTER_BYTES = 16 << 20


def _to_device(cp, a):
    """A device copy of the host array ``a``: large arrays by one copy from their registered
    pages (read-only pages with cudaHostRegisterReadOnly); small ones, or any whose pages
    cannot be registered (already registered elsewhere), by ``cupy.asarray``."""
    a = np.ascontiguousarray(a)
    if a.nbytes < REGISTER_BYTES:
        return cp.asarray(a)
    rt = cp.cuda.runtime
    ptr = a.ctypes.data
    for flags in ((0,) if a.flags.writeable else ()) + (8,):  # 8: cudaHostRegisterReadOnly
        try:
            rt.hostRegister(ptr, a.nbytes, flags)
        except Exception:  # noqa: BLE001 - not registrable this way: the next, else a staged copy
            continue
        try:
            out = cp.empty(a.shape, a.dtype)
            # on the current stream (the pool orders out's memory on it), complete before unregistering
            stream = cp.cuda.get_current_stream()
            rt.memcpyAsync(out.data.ptr, ptr, a.nbytes, rt.memcpyHostToDevice, stream.ptr)
            stream.synchronize()
        finally:
            rt.hostUnregister(ptr)
        return out
    return cp.asarray(a)


def _store_dtype(weight_dtype) -> np.dtype:
    """The dtype :class:`_Block` keeps weights in: int32 and float32 stay 4 bytes (the round
    and tight-arc kernels widen them exactly), smaller ones widen to those, anything else to the
    work dtype (int64, float64)."""
    dt = np.dtype(weight_dtype)
    if dt.kind == "f":
        return np.dtype(np.float32 if dt.itemsize <= 4 else np.float64)
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize <= 4) or (dt.kind == "u" and dt.itemsize <= 2):
        return np.dtype(np.int32)
    return np.dtype(np.int64)


WEIGHT_SUFFIX = {"int64": "i64", "int32": "i32", "float64": "f64", "float32": "f32"}  # kernels by stored dtype


class _Block:
    """One rank's block of the graph (vertices ``[lo, hi)`` and their out-arcs) on the device.

    Uploaded from the graph's own arrays (views of the block, in their own dtypes: int32
    heads and weights cross the bus as 4 bytes) and converted on the device: row pointers to
    int64 from 0, heads to int32, weights to their stored dtype (:func:`_store_dtype`: int32
    and float32 kept 4 bytes wide, the round kernels read them so; ``wdt`` is the work dtype,
    int64 or float64; None: unit weights). No host copy of the arcs is made (on Kronecker 20
    the host conversions took longer than the kernels).

    ``arcs``: the block's ``(indptr, indices, weights)`` given instead (``indptr`` of
    ``hi - lo + 1`` entries, indices and weights those rows' arcs; weights None exactly when
    ``weights`` is): the rows of a renamed graph (RoundsSSSP's ``relabel``); ``graph`` is then
    None, so that no queue kernel takes the block for the graph's own."""

    def __init__(self, cp, graph, weights, lo, hi, arcs=None):
        from ..cpu.bellman_ford import work_dtype

        self.cp, self.graph, self.lo, self.hi, self.nl = cp, graph, int(lo), int(hi), int(hi) - int(lo)
        self.wdt = work_dtype(weights.dtype) if weights is not None else np.dtype(np.int64)
        self.sdt = _store_dtype(weights.dtype) if weights is not None else None
        self.isf = self.wdt.kind == "f"
        if arcs is None:
            a, b = int(graph.indptr[lo]), int(graph.indptr[hi])
            ip, ix, wb = graph.indptr[lo:hi + 1], graph.indices[a:b], None if weights is None else weights[a:b]
        else:
            ip, ix, wb = arcs
            a, b = int(ip[0]), int(ip[-1])
        self.m = b - a
        self.indptr = _to_device(cp, np.asarray(ip)).astype(cp.int64) - a
        if b > a:
            self.indices = _to_device(cp, np.asarray(ix)).astype(cp.int32, copy=False)
            self.w = None if weights is None else \
                _to_device(cp, np.asarray(wb)).astype(self.sdt, copy=False)
        else:  # no arcs: one-element stand-ins (a kernel argument needs an allocation)
            self.indices = cp.zeros(1, cp.int32)
            self.w = None if weights is None else cp.zeros(1, self.sdt)

    @property
    def suffix(self):
        """The kernels' name suffix for the stored weights (unit weights: ``i64``, unread)."""
        return "i64" if self.w is None else WEIGHT_SUFFIX[np.dtype(self.w.dtype).name]

    def w_work(self):
        """The weights in the work dtype (a converted copy when stored narrower; None: unit)."""
        return None if self.w is None else self.w.astype(self.wdt, copy=False)

    def max_degree(self):
        """The block's largest out-degree (0 for no vertex; computed once)."""
        if getattr(self, "_max_degree", None) is None:
            self._max_degree = int((self.indptr[1:] - self.indptr[:-1]).max()) if self.nl else 0
        return self._max_degree

    def w_bits(self):
        """The weights as the queue kernel reads them: int64 values, or float64 bits as int64
        (unit weights: ones)."""
        if self.w is None:
            return self.cp.ones(max(self.m, 1), self.cp.int64)
        w = self.w_work()
        return w.view(self.cp.int64) if self.isf else w

    def neg_magnitude(self):
        """This block's ``(B, count)`` as :func:`~distgraph.backends.cpu.bellman_ford.
        _neg_magnitude` gives them on the host (``neg_bound_of`` turns them into the bound,
        collectively), summed on the device: exact for integers (64-bit magnitudes summed as
        32-bit halves in uint64, as the host does), float64 for floats."""
        cp = self.cp
        if self.w is None or self.m == 0:
            return (0.0 if self.isf else 0), 0
        neg = self.w[self.w < 0].astype(self.wdt, copy=False)  # summed in the work dtype, as the host
        k = int(neg.shape[0])
        if not k:
            return (0.0 if self.isf else 0), 0
        if self.isf:
            return float(-neg.sum()), k
        mag = (-neg).view(cp.uint64)  # |x| in [1, 2**63]: -(-2**63) wraps to 2**63 as uint64
        hi = int((mag >> cp.uint64(32)).sum(dtype=cp.uint64))
        lo = int((mag & cp.uint64(0xFFFFFFFF)).sum(dtype=cp.uint64))  # < 2**32 arcs: no wrap
        return (hi << 32) + lo, k

    def tight_pred(self, d, names=None, order=None):
        """``best[v]``: the smallest tail ``u`` in this block of a tight arc ``u -> v``
        (``d[u] + w == d[v]``, both finite), uint64, ``2**64 - 1`` where there is none;
        ``d`` the whole distance array in the work dtype (host, or device: not copied).
        ``kernels/sssp_tight.cu``. ``names`` (device int64, n): the tails compared and kept
        by their names ``names[u]`` (a renamed graph's tails by the caller's ids); ``order``
        (device, n): ``best[order]`` returned (the caller's order of the heads)."""
        from ..cpu.bellman_ford import INF_OF
        from .loader import get_module

        cp = self.cp
        n = int(d.shape[0])
        best = cp.full(max(n, 1), np.iinfo(np.uint64).max, cp.uint64)
        if self.nl and self.m:
            dd = _to_device(cp, np.ascontiguousarray(d, dtype=self.wdt)) if isinstance(d, np.ndarray) \
                else cp.ascontiguousarray(d, dtype=self.wdt)
            fn = get_module("sssp_tight").get_function("distgraph_sssp_tight_pred_" + self.suffix)
            sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
            blocks = int(min(-(-self.nl // 8), 32 * sms))  # a warp per tail vertex, 8 per block
            fn((blocks,), (256,), (self.indptr, self.indices, dd if self.w is None else self.w,
                                   np.int32(self.w is None), dd, np.int64(self.nl), np.int64(self.lo),
                                   INF_OF(self.wdt), best, np.uint64(0) if names is None else names))
        return (best[:n] if order is None else best[order]).get()


STAGE_BYTES = 64 << 20  # the largest pinned staging buffer _to_host keeps
PINNED_FROM = 32 << 20  # _to_host's smaller arrays: a.get() (glibc reuses their pages: no faults)


def _cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity`` where there is one)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class _Prefault:
    """A new host array of ``shape`` and ``dtype`` whose pages threads fault in (a byte a page)
    while the GPU works, for :func:`_to_host`'s ``out``: an array of :data:`PINNED_FROM` bytes or
    more is mapped afresh by glibc, and its first touch (the kernel zeroing every page) cost
    much of a run's copy to the host. On an H200 host (benchmarks/results/session17/README.md,
    call 3): Kronecker 22's 32 MB took 5.1 ms into a fresh array, 2.2 ms into a faulted one;
    faulting 32 MB in took 4.2 ms on 2 threads (a thread per 16 MB, up to ``threads``), 64 MB
    4.6 ms on 4, hidden behind the rounds. (Registering the faulted pages with CUDA from the
    thread as well made the copy 1.3-1.5 ms, but the registration stalled the rounds'
    launches: runs 0.2-0.8 ms slower on one GPU, 2 ms on two.) With one CPU or ``threads`` 0
    (``DISTGRAPH_GPU_SSSP_PREFAULT_THREADS``) nothing is done.
    :meth:`take` waits for the threads and returns the array; :meth:`close` drops it without
    waiting (the threads end on their own, holding their parts). Smaller arrays: nothing is
    done (``take`` gives None). ``out``: the caller's array to fault in instead of a new one
    (C-contiguous, not yet written: a byte of each page is zeroed), which :meth:`take` returns
    whatever its size (a row of ``bellman_ford(graph, sources)``'s result)."""

    def __init__(self, shape, dtype, threads=4, out=None):
        import threading

        self.out, self._threads, self.wait_s, self.given = out, [], 0.0, out is not None
        nb, cpus = int(np.prod(shape)) * np.dtype(dtype).itemsize, _cpus()
        if nb < PINNED_FROM or cpus < 2 or threads < 1:  # one CPU: the threads would slow the launches
            return
        if self.out is None:
            self.out = np.empty(shape, dtype)
        flat = self.out.reshape(-1).view(np.uint8)
        k = max(1, min(int(threads), cpus - 1, nb >> 24))  # a thread per 16 MB
        cuts = np.linspace(0, nb, k + 1).astype(np.int64)
        for j in range(k):
            part = flat[cuts[j]:cuts[j + 1]]
            t = threading.Thread(target=part[::4096].fill, args=(0,), daemon=True)  # numpy drops the GIL
            t.start()
            self._threads.append(t)

    def close(self):
        """Drop the array, not waiting for the threads (a run that copies no distances: a
        capped or probing run, a negative cycle), unless it is the caller's (``out``): its
        threads are waited for, so that none writes into it after."""
        if self.given:
            for t in self._threads:
                t.join()
        self._threads, self.out = [], None

    def take(self):
        """The array (None for a small one), its pages faulted in: waits for the threads."""
        t0 = time.perf_counter()
        for t in self._threads:
            t.join()
        self._threads = []
        self.wait_s += time.perf_counter() - t0  # how long the caller waited for the threads
        out, self.out = self.out, None
        return out


def _to_host(a, holder, out=None):
    """A new host copy of the contiguous device array ``a``, through a pinned staging buffer
    that ``holder`` keeps for the next call (up to :data:`STAGE_BYTES`; larger arrays go
    through it in pieces), copied out by up to 8 threads; arrays under :data:`PINNED_FROM`
    by ``a.get()``. A pageable ``a.get()`` of Kronecker 22's distances (32 MB) took 10-12 ms on
    an H200 host, the pinned copy 0.6 ms; the rest is the new array's page faults (glibc maps
    arrays of 32 MB or more afresh), which threads share: 4.3 ms in all
    (benchmarks/results/session16/). Kronecker 20's 8 MB took 1 ms by ``a.get()``. ``out``: a
    host array of ``a``'s size and item size to copy into instead, its pages already faulted in
    (by :class:`_Prefault` while the GPU ran): ``get(out=)`` straight into it, 2.2 ms for 32 MB
    against 2.7 ms through the pinned buffer and threads (benchmarks/results/session17/, call 3)."""
    from concurrent.futures import ThreadPoolExecutor

    import cupyx

    flat = a.reshape(-1)
    nb = int(flat.nbytes)
    if out is not None:  # pages faulted in already: CuPy's pageable copy is the fastest way
        out = out.reshape(-1).view(flat.dtype)
        assert out.shape == flat.shape, (out.shape, flat.shape)
        flat.get(out=out)
        return out.reshape(a.shape)
    if nb < PINNED_FROM:
        return a.get()
    out = np.empty(flat.shape, flat.dtype)
    stage = getattr(holder, "_stage", None)
    want = min(nb, STAGE_BYTES)
    if stage is None or stage.nbytes < want:
        stage = holder._stage = cupyx.empty_pinned(want, np.uint8)
    per = max(stage.nbytes // flat.itemsize, 1)
    threads = max(1, min(8, _cpus(), nb >> 22))
    with ThreadPoolExecutor(threads) as pool:
        for lo in range(0, flat.shape[0], per):
            hi = min(lo + per, flat.shape[0])
            view = stage[:(hi - lo) * flat.itemsize].view(flat.dtype)
            flat[lo:hi].get(out=view)
            cuts = np.linspace(0, hi - lo, threads + 1).astype(np.int64)
            list(pool.map(lambda j: np.copyto(out[lo + cuts[j]:lo + cuts[j + 1]], view[cuts[j]:cuts[j + 1]]),
                          range(threads)))
    return out.reshape(a.shape)


class _RowSink:
    """Host rows filled while the GPU goes on (``bellman_ford(graph, sources)`` without
    predecessors). :meth:`put_rows` (and :meth:`put`, one row) takes device rows that no later
    GPU work writes (made for them, and kept here until copied) and returns at once: the next
    source's (or batch's) rounds run while the rows cross the bus. Each piece of at most
    ``piece_bytes`` (one row at least) waits in a queue for one of ``slots`` pinned buffers; a
    buffer is free once its last rows are in the caller's rows. The pieces are copied into free
    buffers on the sink's own CUDA stream, each after the work that made it (an event recorded
    at the put); once a copy is done, up to ``threads`` threads copy the rows from the buffer
    into the caller's rows (a part of 4 MB or more each; NumPy drops the GIL), which also faults
    their pages in. :meth:`poll` (called at each put, and by the batched rounds between their
    launches) moves the pieces along without waiting; a put waits only while more than
    ``backlog_bytes`` of device pieces are queued. The pieces are views: a put's whole array
    stays on the device until its last piece is copied, so the sink can keep up to the backlog
    plus the arrays of the puts being drained (a batch's rows). They are blocks of CuPy's pool in
    use, which the next batch's plan does not count as free (``_batch_fits``).

    The buffers are small (4 of 64 MB) because pinning host memory is slow: on one H200 the
    first call on road-FLA spent 0.375 s allocating 4 buffers of 256 MB, 45% of its time
    (benchmarks/results/session22/), and the queue lets a batch's many rows through few
    buffers without holding up the next batch. (Session 19: the gather to the caller's ids, the
    narrowing to int32 and a blocking copy took 1.0 ms a source on Kronecker 22's 16 MB rows.)
    :meth:`flush` waits for every row (and raises a thread's error); :meth:`close` too, then
    frees the threads, the stream and the buffers."""

    def __init__(self, threads=4, slots=4, piece_bytes=64 << 20, backlog_bytes=2 << 30):
        from collections import deque

        self.threads = max(1, min(int(threads), _cpus()))
        self.piece = max(int(piece_bytes), 1)
        self.backlog = max(int(backlog_bytes), 0)
        k = max(2, int(slots))
        self._bufs, self._jobs, self._pool = [None] * k, [[] for _ in range(k)], None
        self._used = [0] * k  # when each buffer was last given a piece (the oldest is waited for)
        self._clock = 0
        self._queued = deque()  # (ready event, device piece, rows): no buffer yet, oldest first
        self._queued_bytes = 0
        self._pending = []  # (slot, done, device piece kept alive, pinned view, rows), oldest first
        self._stream = None
        self.failed = None  # the first copy into a row that failed: raised by every put, poll and flush
        self.wait_s = 0.0  # how long puts and flushes waited for a buffer
        self.pinned_bytes = 0  # the pinned buffers' bytes (allocated)

    @staticmethod
    def _ready():
        """An event after the current stream's queued work (the piece's making)."""
        import cupy as cp

        ev = cp.cuda.Event(disable_timing=True)
        ev.record()
        return ev

    def _copy(self, dev, view, ready):
        """Start copying the contiguous device array ``dev`` into the pinned ``view`` on the
        sink's stream, once ``ready`` (its making) is done; returns the copy's event."""
        import cupy as cp

        if self._stream is None:
            self._stream = cp.cuda.Stream(non_blocking=True)
        self._stream.wait_event(ready)
        cp.cuda.runtime.memcpyAsync(view.ctypes.data, dev.data.ptr, view.nbytes,
                                    cp.cuda.runtime.memcpyDeviceToHost, self._stream.ptr)
        done = cp.cuda.Event(disable_timing=True)
        done.record(self._stream)
        return done

    def _hand(self, slot=None):
        """Hand the rows whose copy is done, oldest first, to the threads; with ``slot``,
        wait for the copies up to that buffer's."""
        from concurrent.futures import ThreadPoolExecutor

        while self._pending:
            j, done, _, view, rows = self._pending[0]
            if not done.done and not (slot is not None and any(p[0] == slot for p in self._pending)):
                break
            self._pending.pop(0)
            done.synchronize()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads)
            for src, dst in zip(view, rows):
                parts = max(1, min(self.threads, int(dst.nbytes) >> 22))  # a part of 4 MB at least
                cuts = np.linspace(0, dst.shape[0], parts + 1).astype(np.int64)
                self._jobs[j] += [self._pool.submit(np.copyto, dst[x:y], src[x:y])
                                  for x, y in zip(cuts[:-1], cuts[1:])]

    def _free(self, j, wait):
        """Whether buffer ``j`` is free: no copy into it in flight and its rows done (``wait``:
        made so). A row that failed is kept in :attr:`failed` (raised by :meth:`_check`)."""
        if any(p[0] == j for p in self._pending):
            if not wait:
                return False
            self._hand(j)
        jobs = self._jobs[j]
        if not wait and not all(f.done() for f in jobs):
            return False
        self._jobs[j] = []
        for f in jobs:
            try:
                f.result()
            except Exception as e:  # noqa: BLE001 - kept: raised by every put, poll and flush from now on
                self.failed = self.failed or e
        return True

    def _check(self):
        if self.failed is not None:
            raise self.failed

    def _pump(self, wait=False):
        """Copy queued pieces into free buffers (``wait``: every piece, waiting for the oldest
        buffer when none is free)."""
        self._hand()
        while self._queued:
            ready, part, rows = self._queued[0]
            nb = int(part.nbytes)
            order = sorted(range(len(self._bufs)), key=lambda s: (  # big enough, then unallocated, then oldest
                self._bufs[s] is None or self._bufs[s].nbytes < nb, self._bufs[s] is not None, self._used[s]))
            j = next((s for s in order if self._free(s, False)), None)
            if j is None:
                if not wait:
                    return
                j = min(range(len(self._bufs)), key=self._used.__getitem__)
                t0 = time.perf_counter()
                try:
                    self._free(j, True)
                finally:
                    self.wait_s += time.perf_counter() - t0
            self._queued.popleft()
            self._queued_bytes -= nb
            buf = self._bufs[j]
            if buf is None or buf.nbytes < nb:
                import cupyx

                if buf is not None:
                    self.pinned_bytes -= buf.nbytes
                buf = self._bufs[j] = None  # the old one freed first
                buf = self._bufs[j] = cupyx.empty_pinned(max(nb, 1), np.uint8)
                self.pinned_bytes += buf.nbytes
            self._clock += 1
            self._used[j] = self._clock
            view = buf[:nb].view(part.dtype).reshape(part.shape)
            self._pending.append((j, self._copy(part, view, ready), part, view, rows))
            self._hand()

    def put(self, dev, row):
        """Fill the host ``row`` (C-contiguous, ``dev``'s size and dtype) from the device
        vector ``dev`` (no later GPU work writes it) in the background."""
        self.put_rows(dev.reshape(1, -1), [row])

    def put_rows(self, dev, rows):
        """Fill the host rows ``rows[i]`` (C-contiguous, each ``dev.shape[1]`` items of
        ``dev``'s dtype) from the rows of the C-contiguous 2-D device array ``dev`` in the
        background. No later GPU work may write ``dev`` (an array made for these rows): it is
        kept until its copy is done."""
        k, n = dev.shape
        assert len(rows) == k, (len(rows), k)
        per = max(1, self.piece // max(n * dev.dtype.itemsize, 1))
        ready = self._ready()
        for a in range(0, k, per):
            part = dev[a:a + per]
            mine = [r.reshape(-1) for r in rows[a:a + per]]
            for r in mine:
                assert r.shape == (n,) and r.dtype == part.dtype, (r.shape, r.dtype, part.shape, part.dtype)
            self._queued.append((ready, part, mine))
            self._queued_bytes += int(part.nbytes)
        self._pump()
        if self._queued_bytes > self.backlog:  # too many device pieces held: wait for buffers
            t0 = time.perf_counter()
            while self._queued_bytes > self.backlog:  # the oldest buffer waited for, then pumped
                self._free(min(range(len(self._bufs)), key=self._used.__getitem__), True)
                self._pump()
            self.wait_s += time.perf_counter() - t0
        self._check()

    def poll(self, wait=False):
        """Move the rows along: copies done to the threads, queued pieces into free buffers
        (``wait``: every piece copied to a buffer, and every copy handed to the threads)."""
        self._pump(wait)
        if wait:
            self._hand(slot=self._pending[-1][0] if self._pending else None)
        self._check()

    def flush(self):
        """Wait for every row; raise the first failed copy (once: it is then cleared)."""
        try:
            self._pump(wait=True)
            for j in range(len(self._bufs)):
                self._free(j, True)
            self._check()
        finally:
            self.failed = None

    def close(self):
        try:
            self.flush()
        finally:
            if self._pending and self._stream is not None:  # flush raised with copies in flight
                try:  # done before their pinned buffers and device pieces are let go
                    self._stream.synchronize()
                except Exception:  # noqa: BLE001 - flush's error is the one raised
                    pass
            self._pending = []
            self._queued.clear()
            self._queued_bytes = 0
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._pool, self._bufs, self._stream = None, [None] * len(self._bufs), None
            self.pinned_bytes = 0


def _finish_device(block, graph, w, comm, part, source, dist_local, predecessors, whole=False, renamed=None):
    """Whole distances on every rank and, with ``predecessors``, the canonical ones (the
    smallest tail of a tight arc: what the CPU backend's ``_finish`` gives, found on the
    device by :meth:`_Block.tight_pred` and min-reduced over the ranks); a tree over the
    tight arcs when they close a (zero-weight) cycle. ``(d, pred, canonical)``.
    ``dist_local``: this rank's block of the distances, or (``whole``) all of them.
    ``renamed``: ``(d_block_ids, names, order)`` when the block is of a renamed graph
    (RoundsSSSP's ``relabel``): the device distances by the block's ids, the caller's id of
    each (``old_of_new``) and the block's id of each of the caller's (``new_id``), for
    :meth:`_Block.tight_pred`; ``dist_local`` and the result are in the caller's ids."""
    from mpi4py import MPI

    from ..cpu.bellman_ford import _gather, find_pred_cycle

    d = dist_local if whole else _gather(dist_local, part, comm)
    if not predecessors:
        return d, None, None
    best = block.tight_pred(d) if renamed is None else block.tight_pred(renamed[0], names=renamed[1],
                                                                        order=renamed[2])
    if comm.Get_size() > 1:
        comm.Allreduce(MPI.IN_PLACE, best, op=MPI.MIN)
    best = best.view(np.int64)  # 2**64 - 1 (no tight arc in) reads as -1
    best[source] = -1
    if find_pred_cycle(best) >= 0:
        return d, _tight_tree(graph, w, d, source), False
    return d, best, True


# --------------------------------------------------------------------------- queue-driven
class QueueSSSP:
    """The queue-driven GPU Bellman-Ford on one graph (device arrays kept for several runs).

    Collective over ``comm`` (one PE per rank); the arguments are checked on every rank
    together, and ``queue``, ``remote``, ``capacity`` and ``use_nvshmem`` must be the same
    on every rank (else every rank raises the same error). ``use_nvshmem`` defaults to
    ``comm.Get_size() > 1``; True runs the NVSHMEM kernel even on one PE (for tests).
    ``capacity``: queue slots per PE (a power of two; default: room for every own vertex,
    and with ``remote="enqueue"`` on several PEs, whose items are not deduplicated, the larger
    of four times that and the largest block's arcs, plus 2**16). ``grid``: blocks (default:
    all co-resident ones). ``timeout``: seconds one launch may take before the host aborts
    it and raises (default ``DISTGRAPH_HANG_TIMEOUT`` when positive, else 600). ``delta``: the near-far bucket
    width in the weights' units (one PE only; see ``kernels/bellman_ford.cuh``): None picks
    :data:`DELTA_FACTOR` mean weights times ``max(1, 32 / mean degree)``, 0 or inf turns the
    priority off (plain FIFO queue, as on several PEs); :meth:`set_delta` changes it
    between runs. ``keep``: a warp scans the vertices it lowered itself next (up to 32, the
    rest are enqueued) instead of sending all through the queue. ``idle_ns``: the longest
    sleep of an idle warp between looks at the queue (it doubles from 32 ns). ``split``: a
    vertex of more out-arcs is scanned in chunks of ``split`` arcs by several warps (0: one
    warp scans it). ``keep``, ``idle_ns`` and ``split`` are attributes a run reads (a
    benchmark may change them between runs; a nonzero ``split`` not below the one the queue
    was sized for, whose capacity has room for ``2 * arcs // split`` chunks, none when sized
    with 0). ``ghost``: on several PEs, keep the smallest key sent to (or read back from) each
    remote head and drop candidates that are not below it without a remote access (8 bytes
    per vertex of the graph on every PE; see ``kernels/bellman_ford.cuh``); an attribute a
    run reads. ``remote="batch"`` always keeps them (they are its outboxes: 20 bytes per
    vertex of the graph with the flags and predecessors, plus outbox rings of 4 bytes per
    slot, and symmetric inbox rings of up to 2**20 items per source PE); ``flush``
    (``remote="batch"``): a warp ships an outbox once it holds this many entries, warp 0
    any after each of its turns (an attribute a run reads, 1 to :data:`BATCH`).
    ``block``: this PE's block already on the device (``mode="auto"`` passes the rounds'
    upload; a block of another graph, other vertices, dtype or weights is ignored).
    ``multi_pe_phases`` (opt-in, the same on every rank): the near-far priority on several PEs
    too (and on one PE with ``use_nvshmem=True``), phases driven by the host: ``delta`` (None:
    the largest of the PEs' picks of the default rule over their own blocks) gives one global
    threshold; a launch ends when no near work is left anywhere, and the host raises the
    threshold to the smallest far key over the PEs plus ``delta`` (MPI min-reduction) and
    relaunches with the far vertices below it queued again (see ``kernels/bellman_ford.cuh``).
    Each phase costs a relaunch, a reduction and two barriers: meant for few phases (the default
    delta gave 2 on Kronecker 18-22 on one PE, benchmarks/results/session6_x2/call5/h3/
    gpu_sssp_pes.json). Off (default): several PEs run a plain FIFO queue, ``delta`` ignored.
    """

    batch = False  # remote="batch" on several PEs (set by __init__)
    host_phases = False  # multi_pe_phases on the NVSHMEM kernel (set by __init__)
    flush = FLUSH

    def __init__(self, graph, weights, comm, *, queue="bq", remote="atomic", use_nvshmem=None,
                 capacity=None, grid=None, timeout=None, delta=None, keep=True, idle_ns=IDLE_NS, split=SPLIT,
                 ghost=True, flush=FLUSH, multi_pe_phases=False, block=None):
        from ...graph.partition import partition_by_edges
        from ...runtime.context import get_context
        from ..cpu.bellman_ford import work_dtype
        from .loader import import_cupy

        # validated before touching the device (a bad value used to surface as an unknown
        # kernel name, or a queue indexed with a mask that is not one: capacity 100), on
        # every rank together (an error on one rank only left the others waiting in the
        # first collective); queue, remote protocol and capacity the same on every rank
        from ...runtime.abort import collective_check

        err = None
        try:
            expect(queue in ("bq", "bwd"), "queue", "'bq' or 'bwd'", queue)
            expect(remote in _REMOTE_MODE, "remote", "'atomic', 'enqueue', 'batch' or 'atomic_fetch'", remote)
            expect(capacity is None or (isinstance(capacity, (int, np.integer)) and capacity >= 64
                                        and capacity & (capacity - 1) == 0),
                   "capacity", "None or a power of two >= 64 (queue slots per PE)", capacity)
            expect(grid is None or (isinstance(grid, (int, np.integer)) and grid >= 1), "grid",
                   "None or a positive number of blocks", grid)
            expect(timeout is None or (isinstance(timeout, (int, float, np.number)) and timeout > 0), "timeout",
                   "None or a positive number of seconds", timeout)
            _check_delta(delta)
            expect(isinstance(keep, (bool, np.bool_)), "keep", "True or False", keep)
            expect(isinstance(ghost, (bool, np.bool_)), "ghost", "True or False", ghost)
            expect(isinstance(multi_pe_phases, (bool, np.bool_)), "multi_pe_phases", "True or False",
                   multi_pe_phases)
            expect(isinstance(idle_ns, (int, np.integer)) and not isinstance(idle_ns, bool)
                   and 32 <= idle_ns <= 1 << 20, "idle_ns", "an int in [32, 2**20] (nanoseconds)", idle_ns)
            expect(isinstance(split, (int, np.integer)) and not isinstance(split, bool) and (split == 0 or split >= 32),
                   "split", "0 (off) or an int >= 32 (arcs per chunk of a large vertex)", split)
            expect(isinstance(flush, (int, np.integer)) and not isinstance(flush, bool) and 1 <= flush <= BATCH,
                   "flush", f"an int in [1, {BATCH}] (outbox entries)", flush)
        except InvalidArgumentError as e:
            err = e
        collective_check(comm, err, {"queue": queue, "remote": remote, "capacity": capacity,
                                     "use_nvshmem": comm.Get_size() > 1 if use_nvshmem is None else bool(use_nvshmem),
                                     "multi_pe_phases": bool(multi_pe_phases)},
                         "one queue-driven run over the ranks")
        self.keep, self.idle_ns, self.split = bool(keep), int(idle_ns), int(split)
        self.ghost = bool(ghost)
        self.flush = int(flush)
        t0 = time.perf_counter()
        cp = import_cupy()
        get_context(comm, "gpu")
        self.cp, self.comm, self.graph, self.w = cp, comm, graph, weights
        self.queue, self.remote = queue, remote
        size, rank = comm.Get_size(), comm.Get_rank()
        self.nvs = size > 1 if use_nvshmem is None else bool(use_nvshmem)
        if size > 1 and not self.nvs:
            raise DistgraphError("several ranks need the NVSHMEM kernel (use_nvshmem=True)")
        if graph.n >= 2 ** 31:
            raise GraphValueError(f"the GPU Bellman-Ford takes graphs of fewer than 2**31 vertices; got {graph.n}")
        self.part = partition_by_edges(graph.indptr, size)
        self.lo, self.hi = self.part.range(rank)
        self.wdt = work_dtype(weights.dtype) if weights is not None else np.dtype(np.int64)
        self.isf = self.wdt.kind == "f"
        # host views of the block for the default delta (a sample of the weights); the device
        # block is made in _init_device (or given: mode="auto" passes the rounds' upload)
        a, b = int(graph.indptr[self.lo]), int(graph.indptr[self.hi])
        self._h_indptr = np.asarray(graph.indptr[self.lo:self.hi + 1])
        self._h_w = np.ones(1, np.int64) if weights is None else np.asarray(weights[a:b])
        self._given_block = block
        self.nl = self.hi - self.lo
        # host-driven near-far phases (opt-in): several PEs, or one PE on the NVSHMEM kernel
        self.host_phases = bool(multi_pe_phases) and self.nvs
        self.delta = self._global_delta(delta) if size == 1 or self.host_phases else 0
        maxnl = max(int(self.part.sizes().max()), 1)
        self.far_cap = maxnl
        if capacity is None:
            # the largest block's arcs: the segments are symmetric (this rank's arcs gave PEs of
            # one run different capacities)
            arcs = int(np.diff(np.asarray(graph.indptr, np.int64)[self.part.offsets]).max())
            if remote in ("atomic", "atomic_fetch", "batch") or size == 1:
                # room for every own vertex, plus the near-far scan tasks of one phase change
                # (batch mode queues own vertices only: remote candidates go through the inboxes)
                need = maxnl + _MAX_TASKS + 64
            else:
                # remote enqueue: items (vertex, candidate) are not deduplicated, and two PEs
                # whose segments are both full wait on each other (4 * maxnl stalled on kron:18
                # over two H200s: 2**20 slots per PE); room for one relaxation of every arc of a
                # block, 32 bytes a slot
                need = max(4 * maxnl, arcs) + (1 << 16)
            if self.split:
                need += 2 * (arcs // self.split)  # arc chunks of large vertices
            capacity = 1 << max(int(need - 1).bit_length(), 6)
        self.capacity = int(capacity)
        # batch mode (several PEs): outbox ring slots per destination (more than the entries it
        # can hold, one per flagged vertex, plus a put's worth) and inbox ring items per source
        self.batch = remote == "batch" and size > 1
        self.obox_cap = 1 << int(maxnl + BATCH + 64 - 1).bit_length()
        self.ring_in = 1 << int(min(max(maxnl, 4 * BATCH), _RING_MAX) - 1).bit_length()
        self.ring_in = max(self.ring_in, 32)
        self.d_offsets = cp.asarray(self.part.offsets.astype(np.int64))
        defines = {"DG_BF_FLOAT": int(self.isf), "DG_BF_BLOCK": BLOCK}
        if self.nvs:
            defines["DG_BF_BATCH"] = BATCH
        self.pg, self.q, self._sym = None, None, []
        try:
            self._init_device(cp, comm, queue, maxnl, defines, grid, timeout)
        except BaseException:
            self.close()  # the symmetric arrays allocated so far (collective, as their allocation)
            raise
        self.setup_s = time.perf_counter() - t0

    def _init_device(self, cp, comm, queue, maxnl, defines, grid, timeout):
        if self.nvs:
            from ...pgas import get_pgas
            from ...pgas.queue import BrokerQueue
            from .nvshmem_build import load_module

            pg = self.pg = get_pgas(comm, "gpu")
            for shape, dt in ((maxnl, "int64"), (maxnl, "int64"), (maxnl, "int32"), (24, "int64")):
                self._sym.append(pg.array(shape, dt))
            self.dist, self.pred, self.inq, self.ctr = (a.local for a in self._sym)
            if self.batch:
                # credit and signal lines, inbox rings (one per source PE), staging (one per
                # destination): symmetric (see kernels/bellman_ford.cuh)
                size = comm.Get_size()
                for shape, dt in ((2 * size * 8, "uint64"), ((size * self.ring_in, 3), "int64"),
                                  ((size * BATCH, 3), "int64")):
                    self._sym.append(pg.array(shape, dt))
                self.bsym, self.inbox, self.stage = (a.local for a in self._sym[4:7])
            self.q = BrokerQueue(self.capacity, "int64", width=3, kind=queue, pgas=pg)
            self.ring, self.tickets, self.meta = self.q.ring.local, self.q.tickets.local, self.q.meta.local
            mod = load_module("bellman_ford_nvshmem", defines=defines, comm=comm)
        else:
            from .loader import get_module

            self.dist = cp.empty(maxnl, cp.int64)
            self.pred = cp.empty(maxnl, cp.int64)
            self.inq = cp.zeros(maxnl, cp.int32)
            self.ctr = cp.zeros(24, cp.int64)
            self.ring = cp.zeros((self.capacity, 3), cp.int64)
            self.tickets = cp.zeros(self.capacity, cp.int64)
            self.meta = cp.zeros(24, cp.int64)
            mod = get_module("bellman_ford", defines=defines)
        # batch mode: kernels of their own (the batch code's registers would lower the others' occupancy)
        self.kernel = mod.get_function(f"distgraph_bf_queue_{queue}" + ("_batch" if self.batch else ""))
        self._upload(cp, comm)
        self.ctl = cp.zeros(_CTL, cp.int64)
        self.ph = cp.zeros(_PH, cp.int64)
        if comm.Get_size() > 1 and not self.host_phases:
            self.far_cap = 0  # no near-far on several PEs (nothing is ever put in a pile)
        self.far = cp.zeros(max(2 * self.far_cap, 1), cp.int32)
        # ghost keys of remote heads (several PEs): 8 bytes per vertex of the whole graph, local;
        # batch mode: (key, tail) pairs of 16 bytes (16-byte CAS), outbox flags and rings, control words
        n, size = self.graph.n, comm.Get_size()
        self.d_ghost = cp.empty((2 if self.batch else 1) * n if size > 1 else 1, cp.int64)
        self.bst = cp.zeros(6 * size * 8 if self.batch else 1, cp.int64)
        self.oint = cp.zeros(n + size * self.obox_cap if self.batch else 1, cp.int32)
        if not self.batch:
            self.bsym = cp.zeros(1, cp.uint64)
            self.inbox = self.stage = cp.zeros((1, 3), cp.int64)
        self.grid = int(grid) if grid is not None else _grid(cp, self.kernel, BLOCK)
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.side = cp.cuda.Stream(non_blocking=True)
        self._one = np.ones(1, np.int32)
        if timeout is None:
            from ...runtime.config import config

            timeout = float(config.hang_timeout) or 600.0
        self.timeout = float(timeout)
        self.timed_out = False
        cp.cuda.Device().synchronize()

    def _upload(self, cp, comm):
        """This PE's block on the device (or the one given) and the negative-cycle bound; an
        upload that fails on one rank (out of memory) raises on every rank."""
        from ...runtime.abort import collective_raise
        from ..cpu.bellman_ford import neg_bound_of

        err = bk = None
        try:
            blk = self._given_block
            if (blk is None or blk.graph is not self.graph or (blk.lo, blk.hi) != (self.lo, self.hi)
                    or blk.wdt != self.wdt or (blk.w is None) != (self.w is None)):
                blk = _Block(cp, self.graph, self.w, self.lo, self.hi)
            self.block, self._given_block = blk, None
            if blk.w is not None and blk.w.dtype != blk.wdt:  # the queue kernel reads 8-byte
                blk.w = blk.w_work()  # weights: the block keeps that copy, not the 4-byte one too
            self.d_indptr, self.d_indices, self.d_w = blk.indptr, blk.indices, blk.w_bits()
            bk = blk.neg_magnitude()
        except Exception as e:  # noqa: BLE001 - raised on every rank below
            err = e
        collective_raise(comm, err)
        self.bound, self.has_neg = neg_bound_of(bk, self.wdt, comm)

    def set_delta(self, delta):
        """Change the near-far delta for the next runs (one PE, or ``multi_pe_phases``: then
        collective; see the class docstring)."""
        _check_delta(delta)
        if self.comm.Get_size() == 1 or self.host_phases:
            self.delta = self._global_delta(delta)

    def _global_delta(self, delta):
        """:func:`_pick_delta` on this rank's block; on several ranks (host-driven phases: one
        threshold for all PEs) the largest pick over the ranks (collective), so every PE has the
        same delta (a given delta is the same everywhere already; the default's mean weight and
        degree are those of each block)."""
        d = _pick_delta(self._h_indptr, self._h_w, self.isf, delta)
        if self.comm.Get_size() > 1:
            d = max(self.comm.allgather(d))  # 0 (off) only if off everywhere (a block without arcs picks 0)
        return d

    def close(self):
        """Free the symmetric arrays (collective); also after a failed construction."""
        if self.pg is not None:
            if self.q is not None:
                self.q.free()
            for a in self._sym:
                self.pg.free(a)
            self.pg, self.q, self._sym = None, None, []

    def _barrier(self):
        self.cp.cuda.Device().synchronize()
        if self.pg is not None:
            self.pg.barrier()

    def _reset(self, source):
        cp = self.cp
        inf = np.float64(np.inf).view(np.int64) if self.isf else np.iinfo(np.int64).max
        self.dist.fill(int(inf))
        # batch mode: (key, tail) pairs, all set to +inf (the tails are read only after a claim)
        self.d_ghost[:(2 if self.batch else 1) * self.graph.n if self.comm.Get_size() > 1 else 1].fill(int(inf))
        self.pred.fill(-1)
        for a in (self.inq, self.ctr, self.ring, self.tickets, self.meta, self.ctl):
            a.fill(0)
        if self.batch:  # outbox and inbox state; the rings' contents need no reset
            for a in (self.bst, self.oint, self.bsym):
                a.fill(0)
        ph = np.zeros(self.ph.shape[0], np.int64)
        ph[:8] = self._ph0(int(inf))
        if self.host_phases and self.delta:
            ph[_P_HOST] = 1  # the kernel leaves phase changes to _next_phase
        self.ph.set(ph)
        self.timed_out = False
        if self.lo <= source < self.hi:
            sl = source - self.lo
            self.dist[sl] = 0
            self.inq[sl] = 1
            self.ring[0, 0], self.ring[0, 1], self.ring[0, 2] = sl, 0, -1
            self.tickets[0] = 1  # slot 0 full for round 0
            self.meta[0] = 1     # count
            self.meta[16] = 1    # tail
            self.ctr[_SENT] = 1
        cp.cuda.Device().synchronize()
        self._barrier()

    def _ph0(self, inf):
        """Near-far state at a run's start (see bellman_ford.cuh): threshold 0 + delta
        (INT64_MAX: off), phase 0, empty piles, delta and +inf as keys."""
        if not self.delta:
            thr, dkey = np.iinfo(np.int64).max, 0
        elif self.isf:
            dkey = int(np.float64(self.delta).view(np.int64))
            thr = int(to_keys(np.array([np.float64(self.delta)]))[0])
        else:
            dkey = thr = int(self.delta)
        return np.array([thr, 0, 0, 0, inf, inf, dkey, inf], np.int64)

    def _next_thr(self, thr, fmin, inf):
        """The next threshold key: max(thr, fmin) + delta (saturating at +inf; float keys: the
        doubles added and ordered again), at least the next key up (the kernel's rule)."""
        base = max(int(thr), int(fmin))
        if self.isf:
            if base >= inf:
                return int(inf)
            d = from_keys(np.array([base], np.int64), np.float64)[0] + np.float64(self.delta)
            nt = int(to_keys(np.array([d], np.float64))[0])
        else:
            dl = int(self.delta)
            nt = int(inf) if base >= int(inf) - dl else base + dl
        if nt <= base < int(inf):
            nt = base + 1
        return nt

    def _next_phase(self):
        """Host-driven phases, after a launch that ended with no near work anywhere (collective):
        the largest pile count and smallest pile key over the PEs; all piles empty: False (the run
        is over). Else every PE gets the next threshold and phase, counts its scan tasks over its
        pile in SENT and clears the stop state; a barrier before the relaunch, so that no PE's
        termination test can see a quiescence before every PE's tasks are counted."""
        from mpi4py import MPI

        comm = self.comm
        ph = np.asarray(self.ph.get(), np.int64).copy()
        cur = int(ph[_P_PHASE]) & 1
        cnt, inf = int(ph[_P_CNT + cur]), int(ph[_P_INF])
        red = np.array([-cnt, int(ph[_P_FMIN + cur]) if cnt else inf], np.int64)
        if comm.Get_size() > 1:
            comm.Allreduce(MPI.IN_PLACE, red, op=MPI.MIN)
        if red[0] == 0:
            return False
        ntasks = min(-(-cnt // 64), _MAX_TASKS)
        ph[_P_THR] = self._next_thr(ph[_P_THR], red[1], inf)
        ph[_P_CNT + (cur ^ 1)] = 0
        ph[_P_FMIN + (cur ^ 1)] = inf
        ph[_P_PHASE] += 1
        ph[_P_TASKS], ph[_P_TCNT] = ntasks, cnt
        self.ph.set(ph)
        self.ctl[_C_FINISHED] = 0
        self.ctl[_C_STOP] = 0
        self.ctl[_C_BELOW] = 0
        if ntasks:
            self.ctr[_SENT] += ntasks
        self._barrier()
        if comm.Get_rank() == 0:
            self.ctr[_STOPREQ] = 0
        self._barrier()
        return True

    def _launch(self, scan_limit):
        """One launch on a side stream, watched: past ``timeout`` seconds the host sets the
        kernel's abort flag by a copy (no SM needed while the persistent grid holds them all)."""
        cp = self.cp
        with self.stream:
            self.kernel((self.grid,), (BLOCK,),
                        (self.d_indptr, self.d_indices, self.d_w, self.dist, self.pred, self.inq, self.ring,
                         self.tickets, self.meta, np.uint64(self.capacity), self.d_offsets,
                         np.int32(self.comm.Get_size()), np.int32(self.comm.Get_rank()), self.ctr, self.ctl,
                         np.int64(self.bound_key), np.int64(scan_limit),
                         np.int32(_REMOTE_MODE[self.remote]), self.ph, self.far,
                         np.int64(self.far_cap), np.int32(self.keep), np.uint32(self.idle_ns),
                         np.int64(self.split), self.d_ghost,
                         np.int32((self.ghost or self.batch) and self.comm.Get_size() > 1), self.bst, self.oint,
                         self.bsym, self.inbox, self.stage, np.int64(self.ring_in), np.int64(self.obox_cap),
                         np.int64(self.flush)))
            ev = self.stream.record()
        t0 = time.monotonic()
        spin = 0
        while not ev.done:
            if time.monotonic() - t0 > self.timeout:
                cp.cuda.runtime.memcpyAsync(self.ctl.data.ptr + 8 * _C_ABORT, self._one.ctypes.data, 4,
                                            cp.cuda.runtime.memcpyHostToDevice, self.side.ptr)
                self.stream.synchronize()
                self.timed_out = True
                return
            spin += 1
            if spin > 100:
                time.sleep(5e-5)
        self.stream.synchronize()

    @property
    def bound_key(self):
        return int(to_keys(np.array([self.bound]))[0]) if self.has_neg else np.iinfo(np.int64).min

    def run(self, source, confirm, predecessors=False):
        """One source. Returns ``(dist, pred, stats, cycle)`` as the CPU drivers do."""
        from mpi4py import MPI

        from ..cpu.bellman_ford import _gather, cycle_from_pred, find_pred_cycle

        comm, size = self.comm, self.comm.Get_size()
        t0 = time.perf_counter()
        self._reset(source)
        n = self.graph.n
        scan_limit = max(4 * n // size, 1 << 16) if self.has_neg else 0
        launches = checks = below_hits = unconfirmed = 0
        cpu_checked = False
        cycle = None
        flags = np.zeros(3, np.int64)
        while True:
            self._launch(scan_limit)
            launches += 1
            ctl = self.ctl.get()
            flags[:] = (ctl[_C_FINISHED], (ctl[_C_ABORT] & 0xFFFFFFFF) + 2 * self.timed_out, ctl[_C_BELOW])
            if size > 1:
                comm.Allreduce(MPI.IN_PLACE, flags, op=MPI.MAX)
            if flags[1] >= 2:
                raise DistgraphError(f"the GPU Bellman-Ford kernel did not finish within {self.timeout:g} s "
                                     "(DISTGRAPH_HANG_TIMEOUT) on some PE and was aborted")
            if flags[1]:
                raise DistgraphError(
                    f"the GPU Bellman-Ford queue stalled (a spin limit was hit; queue capacity "
                    f"{self.capacity} per PE, remote={self.remote!r}): rerun with a larger capacity")
            if flags[0]:
                # host-driven phases: every PE saw no near work anywhere; the next phase, if any pile holds a vertex
                if self.host_phases and self._next_phase():
                    continue
                break
            # stopped for a negative-cycle check
            checks += 1
            pred = _gather(self.pred[:self.nl].get(), self.part, comm)
            v = find_pred_cycle(pred)
            if v >= 0:
                cyc = cycle_from_pred(pred, v)
                if confirm(cyc):
                    cycle = cyc
                    break
                unconfirmed += 1
            below_hits += bool(flags[2])
            if not cpu_checked and (below_hits >= 3 or unconfirmed >= 3 or checks >= MAX_CHECKS):
                # racing pred writers may hide a cycle at every look: the CPU driver decides, once
                cpu_checked = True
                cycle = _cpu_cycle(self.graph, self.w, source, confirm)
                if cycle is not None:
                    break
            if cpu_checked and flags[2]:
                raise DistgraphError(
                    f"the GPU Bellman-Ford saw a distance below {self.bound} (-B - 1, B the sum of the "
                    f"negative weights' magnitudes) but the CPU driver finds no negative cycle reachable "
                    f"from {source} (float rounding of the distances?); use backend='cpu'")
            self.ctl[_C_STOP] = 0
            self.ctl[_C_BELOW] = 0
            self.ctl[_C_SCANS] = 0
            self._barrier()
            if comm.Get_rank() == 0:
                self.ctr[_STOPREQ] = 0
            self._barrier()
        t_run = time.perf_counter() - t0
        ctl = self.ctl.get()
        red = np.array([ctl[_C_ARCS], ctl[_C_ITEMS]] + [ctl[i] if i < len(ctl) else 0 for i in _C_COUNTERS.values()],
                       np.int64)
        if size > 1:
            comm.Allreduce(MPI.IN_PLACE, red, op=MPI.SUM)
        stats = {"mode": "async", "backend": "gpu", "queue": self.queue, "remote": self.remote,
                 "keep": self.keep, "idle_ns": self.idle_ns, "split": self.split,
                 "ghost": bool(self.ghost or self.batch), "flush": self.flush if self.batch else None,
                 **{k: int(v) for k, v in zip(_C_COUNTERS, red[2:])},
                 "nvshmem": self.nvs, "launches": launches, "checks": checks, "relaxations": int(red[0]),
                 "delta": self.delta, "phases": int(self.ph.get()[_P_PHASE]) + 1 if self.delta else None,
                 "multi_pe_phases": self.host_phases,
                 "items": int(red[1]), "grid": [self.grid, BLOCK], "capacity": self.capacity,
                 "time_setup_s": self.setup_s, "time_run_s": t_run}
        if cycle is not None:
            return None, None, stats, cycle
        local = from_keys(self.dist[:self.nl].get(), self.wdt)
        d, p, canon = _finish_device(self.block, self.graph, self.w, comm, self.part, source, local, predecessors)
        stats["canonical_predecessors"] = canon
        stats["time_finish_s"] = time.perf_counter() - t0 - t_run
        return d, p, stats, None


def run_queue(graph, weights, source, comm, confirm, queue="bq", remote="atomic", predecessors=False, **kw):
    """:class:`QueueSSSP` for one source (allocates, runs, frees)."""
    s = QueueSSSP(graph, weights, comm, queue=queue, remote=remote, **kw)
    try:
        return s.run(source, confirm, predecessors)
    finally:
        s.close()


# --------------------------------------------------------------------------- round-based
_EXACT: dict = {}


def _scatter_fn(cp, dtype):
    """The first exact scatter-minimum of ``cupy.minimum.at`` and ``cupyx.scatter_min`` for
    ``dtype``, probed once (through ``cupyx.scatter_min`` the float64 distances of
    cond-mat-2005 came back rounded to float32 on the H200, CuPy 14.2), or None (then a
    sort does it)."""
    key = np.dtype(dtype).str
    if key in _EXACT:
        return _EXACT[key]
    import cupyx

    fns = []
    if hasattr(cp.minimum, "at"):
        fns.append(lambda a, i, x: cp.minimum.at(a, i, x))
    fns.append(lambda a, i, x: cupyx.scatter_min(a, i, x))
    if np.dtype(dtype).kind == "f":
        vals, inf = np.array([0.9, 1.0, 0.1 + 2.0 ** -40, 7.0]), np.inf
    else:
        vals, inf = np.array([2 ** 53 + 1, 2 ** 60, -(2 ** 41) - 3, 7]), np.iinfo(np.int64).max
    idx = np.array([0, 0, 1, 2])
    want = np.array([vals[0], vals[2], vals[3]]).astype(dtype)
    found = None
    for fn in fns:
        try:
            a = cp.full(3, inf, dtype)
            fn(a, cp.asarray(idx), cp.asarray(vals.astype(dtype)))
            if np.array_equal(a.get(), want):
                found = fn
                break
        except Exception:  # noqa: BLE001 - an unsupported dtype: try the next
            continue
    _EXACT[key] = found
    return found


def _scatter_min(cp, dist, v, c):
    """``dist[v] = min(dist[v], c)`` with repeated ``v``: an exact CuPy scatter-minimum, or a sort."""
    fn = _scatter_fn(cp, dist.dtype)
    if fn is not None:
        fn(dist, v, c)
        return
    order = cp.lexsort(cp.stack([c, v]))
    vs, cs = v[order], c[order]
    first = cp.ones(vs.shape[0], dtype=bool)
    first[1:] = vs[1:] != vs[:-1]
    vs, cs = vs[first], cs[first]
    dist[vs] = cp.minimum(dist[vs], cs)


def rounds_cupy(indptr, indices, w, source, *, n=None, bound=None, track_pred=False, max_rounds=None,
                probe_round=None, lo=0, exchange=None):
    """The plain round-based Bellman-Ford in CuPy (the baseline a CuPy user would write).

    Round ``k`` relaxes the out-arcs of the vertices whose distance changed in round
    ``k - 1`` (Jacobi: candidates from the distances at the start of the round), with one
    exact scatter-minimum (``cupy.minimum.at`` / ``cupyx.scatter_min``). Without a
    negative cycle no distance changes after round
    ``n - 1``.

    Parameters
    ----------
    indptr, indices, w : cupy arrays
        CSR (int64 row pointers), heads, weights (int64 or float64; None for unit weights)
        of vertices ``lo, lo + 1, ...`` (all of them unless ``exchange`` is given).
    source : int
    bound : number, optional
        Stop (``status="below"``) when a distance falls below it.
    track_pred : bool
        Keep a predecessor per vertex (a winning tail of the round that set its distance).
    max_rounds : int, optional
        Default ``n``: a vertex still changing in round ``n`` proves a negative cycle.
    probe_round : int, optional
        Stop (``status="deep"``) if round ``probe_round`` still reaches a vertex for the first
        time: some vertex is ``probe_round`` arcs or more from the source (after round ``k``
        exactly the vertices within ``k`` arcs are reached), so the rounds will be many
        (``mode="auto"`` then runs the queue kernel instead).
    lo, exchange : int, :class:`_PeerMin`, optional
        Several PEs (``RoundsSSSP`` on several ranks): this PE's arcs are those of its vertex
        block from ``lo``; the distances (all ``n``) are replicated. A round writes this PE's
        candidates into ``exchange.buffer()`` and ``exchange.combine`` takes the minimum over
        the PEs, so that every PE ends each round with the distances one GPU would have.

    Returns
    -------
    dist, pred, info
        ``dist`` int64 (int64 max unreached) or float64 (inf); ``pred`` int64 or None;
        ``info`` with ``rounds``, ``relaxations`` (this PE's) and ``status`` (``"done"``,
        ``"cycle"``: still changing after ``max_rounds`` rounds, ``"below"`` or ``"deep"``);
        with ``exchange``, also ``exchange_s``: seconds in :meth:`_PeerMin.combine` after this
        PE's relaxations had finished (waiting for the slowest PE, and the minimum).
    """
    import cupy as cp

    nl = int(indptr.shape[0] - 1)
    n = nl if n is None else int(n)
    dt = cp.int64 if w is None or w.dtype.kind != "f" else cp.float64
    inf = np.iinfo(np.int64).max if dt == cp.int64 else np.inf

    def relax(own, dist, cand, predc):
        """Expand the frontier's arcs, one exact scatter-minimum; the winning tails."""
        if not own.shape[0]:
            return 0
        starts = indptr[own - lo]
        deg = indptr[own - lo + 1] - starts
        csum = cp.cumsum(deg)
        tot = int(csum[-1])
        if tot == 0:
            return 0
        pos = cp.arange(tot, dtype=cp.int64)
        seg = cp.searchsorted(csum, pos, side="right")
        eidx = starts[seg] + pos - (csum[seg] - deg[seg])
        u = own[seg]
        v = indices[eidx].astype(cp.int64)
        c = dist[u] + (1 if w is None else w[eidx])
        _scatter_min(cp, cand, v, c)
        if predc is not None:
            win = (cand[v] < dist[v]) & (c == cand[v])
            predc[v[win]] = u[win]
        return tot

    return _round_loop(cp, relax, n, source, inf, dt, lo, lo + nl, bound=bound, track_pred=track_pred,
                       max_rounds=max_rounds, probe_round=probe_round, exchange=exchange)


def _round_loop(cp, relax, n, source, inf, dt, lo, hi, *, bound, track_pred, max_rounds, probe_round, exchange):
    """The rounds of :func:`rounds_cupy`, and of :func:`rounds_kernel` with the dense exchange
    (:class:`_PeerMin`; the kernels' own loop is :func:`_pull_loop`): ``relax(own,
    dist, cand, predc)`` relaxes the out-arcs of this PE's frontier vertices ``own`` (global ids)
    from ``dist`` (the distances at the start of the round, ``inf`` unreached) into ``cand`` (a
    copy of them) and, with ``predc``, writes winning tails there; it returns its relaxations
    (or 0 when it counts them itself). Then the PEs' candidates are combined (``exchange``), the
    changed vertices are the next frontier, and the rounds stop as :func:`rounds_cupy` says;
    ``bound`` in ``dist``'s units."""
    dist = cp.full(n, inf, dt)
    dist[source] = 0
    pred = cp.full(n, -1, cp.int64) if track_pred else None
    front = cp.asarray([source], dtype=cp.int64)
    own = front if lo <= source < hi else front[:0]
    max_rounds = n if max_rounds is None else int(max_rounds)
    rounds = relaxed = 0
    exchange_s = 0.0
    status = "done"
    while front.shape[0]:
        if rounds >= max_rounds:
            status = "cycle"
            break
        rounds += 1
        cand = dist.copy()
        predc = pred.copy() if track_pred else None
        relaxed += relax(own, dist, cand, predc)
        if exchange is not None:
            cp.cuda.Device().synchronize()  # this PE's relaxations done: the rest is the exchange
            t_x = time.perf_counter()
            exchange.buffer()[...] = cand
            if track_pred:
                exchange.pred_buffer()[...] = predc
            cand, predc = exchange.combine(cand, predc, dist)  # the same minimum on every PE
            cp.cuda.Device().synchronize()
            exchange_s += time.perf_counter() - t_x
        front = cp.flatnonzero(cand < dist)
        # after round k exactly the vertices within k arcs are reached: new ones now mean more
        new_reached = rounds == probe_round and front.shape[0] and bool((dist[front] == inf).any())
        dist, pred = cand, predc
        own = front if exchange is None else front[(front >= lo) & (front < hi)]
        if new_reached:
            status = "deep"
            break
        if bound is not None and rounds % 16 == 0 and front.shape[0] and bool(dist.min() < bound):
            status = "below"
            break
    info = {"rounds": rounds, "relaxations": relaxed, "status": status}
    if exchange is not None:
        info["exchange_s"] = exchange_s
    return dist, pred, info


#: Most sources of a group of RoundsSSSP.run_batch (a bit each in a vertex's 32-bit mask; a
#: batch runs up to 8 groups in step, :data:`BATCH_GROUPS`).
BATCH_MAX = 32
#: The batched rounds' hubs: vertices of this many arcs or more, relaxed in pieces of as many
#: arcs, a block each (each arc is up to 32 relaxations there).
BATCH_BIG_DEGREE = 256
#: The batched rounds skip a frontier vertex's source whose arcs were relaxed from its current
#: key already (kernels/bf_rounds.cu's rel; n * 256 more bytes of device memory). Off: on one
#: H200 it saved 2-4% of the relaxations but not time (Kronecker 20 / 22, 1024 sources, 0.96-1.09x
#: the time without it: benchmarks/results/session20/, call 2).
BATCH_SKIP = False
#: The batched rounds keep integer weights' distances as 4-byte keys (a vertex's 32 in one
#: 128-byte line) while they fit; a sum outside int32's range runs the batch again, and the
#: later ones, with 8-byte keys.
BATCH_KEYS32 = True
#: The batched rounds read their frontier's length back after each of the first this many
#: rounds (a low-diameter graph settles in them: Kronecker 20-22 in 11-12), then after every
#: :data:`BATCH_CHECK` rounds queued without a host read, or after a persistent launch of up to
#: :data:`BATCH_PERSIST_STEP` (a deep graph: road networks need thousands of rounds; a round
#: with an empty frontier does nothing).
BATCH_EXACT = 16
BATCH_CHECK = 30
#: ... those queued rounds go as CUDA graphs of 6 rounds (18 kernels, one launch; the grids
#: rounded up to powers of two, a graph kept per grid), not 18 launches from Python.
BATCH_GRAPHS = True
#: ... or, on a deep graph, as one cooperative launch of up to :data:`BATCH_PERSIST_STEP`
#: rounds (kernels/bf_rounds.cu, dg_bk_persist: grid syncs between a round's passes, no
#: launches), on this many blocks an SM (at most the occupancy's), while a group's frontier
#: fits 8 strides of its share of that grid (256 vertices a block a stride: with the share of
#: one group in 4 the CUDA graphs' fallback, captured per group, cost road-FLA 0.3 s, call 4 of
#: session 22); 0: off (the CUDA graphs above).
BATCH_PERSIST = 4
BATCH_PERSIST_STEP = 512
#: Groups of up to :data:`BATCH_MAX` sources whose rounds run in step (one launch for all past
#: the first rounds, each group on its share of the grid): a deep graph's round is mostly the
#: latency of chains of dependent memory accesses, so four groups' round costs about twice one
#: group's, not four times. :meth:`Session.batch_size` offers this many groups' sources once a
#: batch has proved the graph deep (16 persistent rounds or more), where their arrays fit; 1:
#: one group a batch. road-FLA, 4 blocks an SM: a persistent round of one group took 19 us, of
#: four groups in step 34-38 us (calls 5-6 of session 22).
BATCH_GROUPS = 4
_GROUPS_CAP = 8  # (the groups' counters: rows of one array, kept for the CUDA graphs' pointers)
#: The batched rounds' thin frontier vertices: at most this many (source, arc) pairs (arcs
#: times its sources in the round: a road network's, whose sources' wavefronts seldom meet).
#: A warp takes up to 32 frontier vertices (fewer on a small frontier, so that every warp of
#: the grid takes some) and deals their thin pairs over its lanes; the others go
#: to a second pass, a warp each (kernels/bf_rounds.cu, dg_bk_round); 0: every vertex there.
BATCH_THIN = 32
#: Near-far order in the batched rounds (kernels/bf_rounds.cu, ph): a frontier vertex's source
#: whose key there is at or past a threshold waits in a far list; when no frontier is left the
#: threshold moves to the list's smallest key plus delta and a round takes the list. "deep":
#: from round :data:`BATCH_EXACT` on (a graph not settled by then); "always"; "off".
BATCH_NEAR_FAR = "deep"
#: ... its delta: this many times the mean arc weight (the mean of |w|; 1 for unit weights).
BATCH_DELTA_FACTOR = 16.0
#: ph's slots (kernels/bf_rounds.cu, DG_BK_*)
_PH_THR, _PH_FROUND, _PH_BOUND, _PH_DELTA, _PH_PHASES, _PH_CYCLE, _PH_LEN = 0, 2, 7, 8, 9, 10, 11
BIG_DEGREE = 2048  # the round kernels' hubs: vertices of this many arcs or more, relaxed in pieces of as many
#                    arcs by a block each (kernels/bf_rounds.cu)


ORDERS = ("async", "jacobi")  # the round kernels' orders (rounds_kernel, RoundsSSSP)


def rounds_kernel(block, source, *, n, bound_key=None, track_pred=False, max_rounds=None, probe_round=None,
                  exchange=None, order="jacobi"):
    """The rounds of :func:`rounds_cupy` (same stopping rules, same results) with each round's
    relaxation as fused kernels (``kernels/bf_rounds.cu``: a warp per frontier vertex, hubs in
    pieces a block each, 64-bit atomicMin on keys) instead of CuPy's expand-gather-scatter:
    ``engine="kernel"`` of :class:`RoundsSSSP`. ``block``: this PE's :class:`_Block`; distances
    are 64-bit keys (see :func:`to_keys`), returned as the work dtype's values. ``bound_key``: the
    key of the negative-cycle bound (None: no check). ``exchange`` as in :func:`rounds_cupy` (over
    keys), or a :class:`_PeerPull` (:func:`_pull_loop`).

    ``order``: ``"jacobi"``, rounds_cupy's rounds exactly (each vertex relaxed from its distance
    at the round's start: the same rounds and relaxations); ``"async"``, each frontier vertex
    relaxed from its latest candidate of the round and skipped when its arcs were relaxed from
    that distance already (the same distances and stops, no more rounds, fewer relaxations, but
    rounds and relaxations that vary from run to run). The tails pass (``track_pred``) is
    always Jacobi's: its tails match the round's candidates."""
    import cupy as cp

    from .loader import get_module

    expect(order in ORDERS, "order", "'async' or 'jacobi'", order)
    mod = get_module("bf_rounds")
    sfx = block.suffix  # the weights as stored (int32 and float32: 4 bytes an arc)
    pulled = isinstance(exchange, _PeerPull)
    fns = {what: (mod.get_function(f"distgraph_bf_round_{what}_{sfx}"),
                  mod.get_function(f"distgraph_bf_round_{what}_big_{sfx}")) for what in ("relax", "tails", "mark")}
    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    inf = int(np.float64(np.inf).view(np.int64)) if block.isf else np.iinfo(np.int64).max
    unit = block.w is None
    w = block.indptr if unit else block.w  # unit weights: a placeholder pointer, never read
    count = cp.zeros(1, cp.uint64)
    nbig = cp.zeros(1, cp.uint64)
    bigdeg = int(BIG_DEGREE)
    m_local = int(block.indices.shape[0])
    # the round's hubs in pieces of bigdeg arcs: sum ceil(d / bigdeg) over hubs (each listed once
    # a round) <= m / bigdeg + (number of hubs) <= both bounds
    big = cp.empty(min(block.hi - block.lo + m_local // bigdeg + 1, 2 * (m_local // bigdeg) + 2), cp.int64)
    # no hub in the block: the hub kernels have nothing to do (not launched)
    hubs = block.max_degree() >= bigdeg
    nothing = np.uint64(0)  # a null pointer
    # asynchronous rounds: the distance each block vertex's arcs were last relaxed from (+inf: never)
    rel = cp.full(max(block.nl, 1), inf, cp.int64) if order == "async" and not track_pred else None

    def run_round(own, dist, cand, pred, flags, nfp=None):
        """This PE's round on its frontier ``own``: the relaxation (``flags``: the mark kernel),
        then with ``pred`` the tails pass; each a warp per vertex, then the hubs. With ``nfp``
        (the pull loop) the frontier's length is read on the device from ``nfp[0]`` (``own``
        holds up to the block's vertices) and the last settle kernel zeroed the hub list."""
        nown = int(own.shape[0])
        if not nown:
            return 0
        if nfp is None:
            nbig[...] = 0
        args = (block.indptr, block.indices, w, np.int32(unit), own, np.int64(nown), np.int64(block.lo),
                np.int64(block.hi), dist, cand, nothing if pred is None else pred, count,
                nothing if flags is None else flags, big, nbig, np.int64(bigdeg), nothing if nfp is None else nfp,
                nothing if rel is None else rel)
        warps = (int(min(-(-nown // 8), 32 * sms)),)  # a warp per frontier vertex, 8 per block
        for what in ("mark" if flags is not None else "relax",) + (("tails",) if pred is not None else ()):
            fn, fn_big = fns[what]
            fn(warps, (256,), args)
            if hubs:
                fn_big((4 * sms,), (256,), args)  # a block per piece
        return 0  # counted by the kernel

    loop_kw = {"bound": bound_key, "track_pred": track_pred, "max_rounds": max_rounds, "probe_round": probe_round}
    if exchange is None or pulled:
        ex = exchange if pulled else _PeerPull(_LocalPG(), n, [0, n], track_pred)
        settle_fn = mod.get_function("distgraph_bf_round_settle")
        chunks_fn = mod.get_function("distgraph_bf_round_settle_chunks")

        def settle(k, cand, dist, pred, clear, res, res_next):
            # the block's vertices in the chunks some PE flagged (a block at least: it also resets
            # res_next and the hub list), then the chunks this PE lowered elsewhere (its flags
            # this round: flags(k)) and the next round's flags cleared (one PE too)
            settle_fn((int(max(1, min(-(-block.nl // 256), 32 * sms))),), (256,),
                      (np.int64(block.lo), np.int64(block.hi), np.int32(ex.pg.my_pe),
                       np.int32(ex.npes), ex.ptrs[k], cand, dist, nothing if pred is None else pred, ex.front,
                       res, np.int64(inf), res_next, nbig))
            nf = int(clear.shape[0])
            chunks_fn((int(max(1, min(-(-nf // 256), 32 * sms))),), (256,),
                      (np.int64(n), np.int64(block.lo), np.int64(block.hi), ex.flags(k), cand, dist, clear,
                       np.int64(nf)))

        try:
            dist, pred, info = _pull_loop(
                cp, lambda own, dist, cand, flags, pred, nfp: run_round(own, dist, cand, pred, flags, nfp),
                settle, n, source, inf, block.lo, block.hi, exchange=ex, **loop_kw)
        finally:
            if ex is not exchange:
                ex.close()
    else:  # the dense exchange (_PeerMin)
        dist, pred, info = _round_loop(cp, lambda own, dist, cand, pred: run_round(own, dist, cand, pred, None), n,
                                       source, inf, cp.int64, block.lo, block.hi, exchange=exchange, **loop_kw)
    info["relaxations"] = int(count[0])
    if block.isf:  # keys back to doubles
        dist = cp.where(dist < 0, dist ^ _FLIP, dist).view(cp.float64)
    return dist, pred, info


class _PeerMin:
    """The rounds' exchange on several PEs over NVSHMEM: each PE writes its candidate
    distances (and tails) into symmetric arrays, two of each used in turn (so one barrier per
    round: a PE rewrites an array only after every PE has passed the next round's barrier,
    which it enters after reading); :meth:`combine` takes the minimum over the PEs' arrays
    through peer views (NVLink loads), in PE order, so every PE gets the same distances and
    the same tails (the last PE's winning tail among equal candidates that improved a vertex)."""

    def __init__(self, pg, n, wdt, track_pred):
        self.pg, self.n = pg, int(n)
        self.bufs, self.pbufs = [], []
        try:
            for _ in range(2):
                self.bufs.append(pg.array(max(self.n, 1), np.dtype(wdt).name))
                if track_pred:
                    self.pbufs.append(pg.array(max(self.n, 1), "int64"))
        except BaseException:
            self.close()
            raise
        size = pg.n_pes
        self.views = [[pg.peer(b, q) for q in range(size)] for b in self.bufs]
        self.pviews = [[pg.peer(b, q) for q in range(size)] for b in self.pbufs]
        self.k = 0

    def buffer(self):
        return self.bufs[self.k].local[:self.n]

    def pred_buffer(self):
        return self.pbufs[self.k].local[:self.n]

    def _view(self, views, arrs, q):
        v = views[self.k][q]
        return v[:self.n] if v is not None else self.pg.get(arrs[self.k], q, 0, self.n)

    def combine(self, cand, predc, old):
        import cupy as cp

        self.pg.barrier()  # every PE's candidates of this round are written
        me = self.pg.my_pe
        new = cand.copy()
        for q in range(self.pg.n_pes):
            if q != me:
                cp.minimum(new, self._view(self.views, self.bufs, q), out=new)
        newp = None
        if predc is not None:
            newp = predc.copy()
            for q in range(self.pg.n_pes):
                cq = cand if q == me else self._view(self.views, self.bufs, q)
                pq = predc if q == me else self._view(self.pviews, self.pbufs, q)
                take = (cq == new) & (cq < old)
                newp = cp.where(take, pq, newp)
        self.k ^= 1
        return new, newp

    def close(self):
        """Free the symmetric arrays (collective)."""
        for b in self.bufs + self.pbufs:
            self.pg.free(b)
        self.bufs, self.pbufs, self.views, self.pviews = [], [], [], []


def _device_ptr(a) -> int:
    """The device address of a CuPy array (a function: the host tests stand NumPy in for it)."""
    return int(a.data.ptr)


class _LocalPG:
    """One PE without NVSHMEM for :class:`_PeerPull`: its arrays on this GPU, no peer, no barrier
    (the round kernels' loop on one GPU, or on every rank of a job without nvshmem4py)."""

    n_pes, my_pe = 1, 0

    def __init__(self):
        from mpi4py import MPI

        self.comm = MPI.COMM_SELF

    def array(self, shape, dtype):
        import types

        import cupy as cp

        return types.SimpleNamespace(local=cp.zeros(shape, dtype))

    def peer(self, arr, q):
        return arr.local

    def barrier_on_stream(self):
        pass

    def free(self, arr):
        pass


class _PeerPull:
    """The distributed rounds without replicated distances (the default exchange of
    :class:`RoundsSSSP` with ``engine="kernel"`` where every PE's heap is mapped here). Each PE
    relaxes its frontier's arcs into its own copy of all candidates (exact on its vertex block,
    an upper bound elsewhere) and flags the chunks of 32 vertices it lowered (its own block's
    too: the settle skips the chunks no PE flagged); after a barrier each owner pulls, from
    every peer that flagged one of its chunks, that chunk's candidates (and tails) and keeps
    the smallest (``kernels/bf_rounds.cu``). So only
    chunks some PE lowered cross NVLink, each once (:class:`_PeerMin` reads whole arrays; a push
    of every lowering by a remote atomicMin was slower still: benchmarks/results/session15/).
    Symmetric arrays: candidates ``X[0], X[1]`` and flags ``F[0], F[1]`` used in turn, the tails
    ``P`` in place. ``ptrs[k]``: the device table of the PEs' addresses of ``X[k]``, ``F[k]``,
    ``P``; ``mapped``: every PE's heap is mapped on every PE (else RoundsSSSP falls back to
    :class:`_PeerMin`; agreed by all, collective)."""

    CHUNK = 32  # vertices per flag (kernels/bf_rounds.cu: v >> 5)

    def __init__(self, pg, n, bounds, track_pred):
        import cupy as cp

        self.pg, self.n, self.npes = pg, int(n), pg.n_pes
        nf = max(-(-self.n // self.CHUNK), 1)
        self.arrs = []
        try:
            for shape, dt in [(max(self.n, 1), "int64")] * 2 + [(nf, "int32")] * 2:
                self.arrs.append(pg.array(shape, dt))
            if track_pred:
                self.arrs.append(pg.array(max(self.n, 1), "int64"))
        except BaseException:
            self.close()
            raise
        views = [[pg.peer(b, q) for q in range(self.npes)] for b in self.arrs]
        ok = all(v is not None and v.size == b.local.size for b, row in zip(self.arrs, views) for v in row)
        self.mapped = bool(pg.comm.allreduce(int(ok), op=_mpi_min()))
        self.views = views if self.mapped else None
        self.lohi = [(int(bounds[q]), int(bounds[q + 1])) for q in range(self.npes)]
        lo, hi = self.lohi[pg.my_pe]
        self.front = cp.empty(max(hi - lo, 1), cp.int64)  # this PE's frontier (the settle kernel's list)
        # the settle kernel's count, probe flag and smallest key; two, used in turn (a round's
        # relaxation reads its frontier's length from the other, the last round's)
        self.res = cp.zeros((2, 3), cp.int64)
        self.ptrs = []
        if self.mapped:
            addr = [[_device_ptr(v) for v in row] for row in views]
            tails = addr[4] if track_pred else addr[0]  # no tails: a placeholder, never read
            self.ptrs = [cp.asarray(np.array(addr[k] + addr[2 + k] + tails, np.int64)) for k in range(2)]

    def x(self, k):
        """This PE's candidates ``X[k]``."""
        return self.arrs[k].local[:self.n]

    def flags(self, k):
        return self.arrs[2 + k].local

    def tails(self):
        return self.arrs[4].local[:self.n] if len(self.arrs) > 4 else None

    def gather(self, a, i):
        """All of this PE's array ``a`` (``self.arrs[i]``'s local part), each block from its owner."""
        me = self.pg.my_pe
        out = a.copy()
        for q, (lo, hi) in enumerate(self.lohi):
            if q != me and hi > lo:
                out[lo:hi] = self.views[i][q][lo:hi]
        return out

    def close(self):
        """Free the symmetric arrays (collective)."""
        for b in self.arrs:
            self.pg.free(b)
        self.arrs, self.views, self.ptrs = [], None, []


def _mpi_min():
    from mpi4py import MPI

    return MPI.MIN


def _mpi_sum():
    from mpi4py import MPI

    return MPI.SUM


LAG = 4  # rounds the pull loop's host may launch before it reads the first of them's results


class _Ring:
    """The pull loop's device-to-host traffic without a sync per round: each round's results
    (this PE's ``res`` row: the next frontier's length, the probe's flag, the smallest key)
    copied into pinned host memory behind the round's kernels, read by the host a few rounds
    later (``slots`` rounds in flight at most); and, for the first :attr:`TIMED` rounds, CUDA
    events between the steps (relaxation, barrier, settle) for the profile. The host tests
    stand a synchronous one in."""

    TIMED = 64

    def __init__(self, cp, slots):
        import cupyx

        self.cp, self.stream = cp, cp.cuda.get_current_stream()
        self.host = cupyx.empty_pinned((slots, 3), np.int64)
        self.events = [None] * slots
        self.marks = []

    def stage(self, r, res):
        """Round ``r``'s results ``res`` (a device row of 3 int64) to the host, in stream order."""
        i = r % len(self.events)
        self.cp.cuda.runtime.memcpyAsync(self.host[i].ctypes.data, res.data.ptr, 24, 2, self.stream.ptr)
        ev = self.events[i] = self.cp.cuda.Event(block=False, disable_timing=True)
        ev.record(self.stream)

    def read(self, r):
        """Round ``r``'s results (waits for them)."""
        i = r % len(self.events)
        self.events[i].synchronize()
        return [int(x) for x in self.host[i]]

    def mark(self, r, step):
        if r <= self.TIMED:
            ev = self.cp.cuda.Event()
            ev.record(self.stream)
            self.marks.append((r, step, ev))

    def steps(self):
        """``{round: [seconds of each step]}`` of the timed rounds (after a sync)."""
        out, last = {}, {}
        for r, step, ev in self.marks:
            if step:
                out.setdefault(r, []).append(self.cp.cuda.get_elapsed_time(last[r], ev) / 1e3)
            last[r] = ev
        return out


def _pull_loop(cp, relax, settle, n, source, inf, lo, hi, *, bound, track_pred, max_rounds, probe_round,
               exchange):
    """The rounds of :func:`_round_loop` (same stops and distances; with Jacobi's relaxation the
    same rounds and relaxations) over
    :class:`_PeerPull` (several PEs, or one), launched by the host without waiting for them.

    ``relax(own, dist, cand, flags, pred, nfp)`` enqueues this PE's round (the mark kernel, then
    with ``pred`` the tails kernel; local arrays only; the frontier's length read on the device
    from ``nfp``); ``settle(k, cand, dist, pred, clear, res, res_next)`` the settle kernel, after
    which this PE's block of ``cand = X[k]`` is final, ``exchange.front`` holds the next
    frontier and ``res`` its length, the probe's flag and the block's smallest key so far, ``dist``
    (the other ``X``) and ``clear`` (the other flags) are the next round's, and ``res_next`` is
    reset for the next round. A round on the stream: the relaxation; a barrier of all PEs on
    the stream (every PE's round is done); the settle kernel (with tails, a second barrier: no
    PE's next tails pass writes ``P`` while an owner may still pull from it); the copy of ``res``
    to the host (:class:`_Ring`). With the arrays used in turn, a PE's next round writes only
    what no owner reads in this one, so no host sync separates the rounds.

    The host keeps up to :data:`LAG` rounds in flight, reads their results in order, and makes
    one MPI sum a round (the frontiers' sizes, the probe's and the bound's flags) to decide when
    to stop (no barrier on the host: the run ends with one on the stream after the gather,
    which a next run's reset of the arrays follows; a peer reads them only after the first
    round's barrier). It stops launching after a round whose decision may stop the run (the probe round,
    every 16th with a bound, ``max_rounds``) until that decision is made, so the state returned
    is that of the round that stopped. After an empty round every PE has launched the same
    rounds (how far the host runs ahead depends only on the rounds decided), which change
    nothing: the distances are those of the stopping round. They (and the tails) are gathered
    from their owners at the end, so every PE returns all of them. ``info["exchange_s"]``: GPU
    seconds of the barrier and settle steps over the first ``_Ring.TIMED`` rounds;
    ``profile_s``: each step's GPU seconds over those rounds, the host's seconds waiting for
    results (``wait``) and in the sums (``sum``), its seconds before the first round
    (``init``), in the loop and after it (``finish``: the last rounds, the gather), the rounds
    launched, and the first rounds' frontier sizes and relaxation and settle seconds."""
    t_start = time.perf_counter()
    ex = exchange
    comm = ex.pg.comm
    # no PE still reads the arrays of a previous run: it ended with a barrier after its gather
    x0 = ex.x(0)
    x0[...] = inf
    x0[source] = 0
    ex.x(1)[...] = x0
    ex.flags(0)[...] = 0
    ex.flags(1)[...] = 0
    pred = ex.tails()
    if track_pred:
        pred[...] = -1
    nown = int(lo <= source < hi)
    ex.front[:nown] = source
    # round r's results go to res[r % 2]; round 1 reads its frontier's length from res[0]
    ex.res[...] = cp.asarray(np.array([[nown, 0, 0], [0, 0, np.iinfo(np.int64).max]], np.int64))
    max_rounds = n if max_rounds is None else int(max_rounds)
    ring = _Ring(cp, LAG + 1)
    # no barrier here: a peer reads these arrays only after the first round's barrier, which
    # follows this reset in stream order

    def checkpoint(r):  # a round whose results may stop the run (max_rounds: none is launched after it)
        return r == probe_round or (bound is not None and r % 16 == 0)

    def launch(r):
        k, o = (r - 1) % 2, r % 2  # the round's start X[k], its candidates X[1 - k]; results res[o]
        ring.mark(r, 0)
        relax(ex.front, ex.x(k), ex.x(1 - k), ex.flags(1 - k), pred if track_pred else None, ex.res[1 - o])
        ring.mark(r, 1)
        ex.pg.barrier_on_stream()  # every PE's candidates, tails and flags of this round are written
        ring.mark(r, 2)
        settle(1 - k, ex.x(1 - k), ex.x(k), pred if track_pred else None, ex.flags(k), ex.res[o], ex.res[1 - o])
        ring.mark(r, 3)
        ring.stage(r, ex.res[o])
        if track_pred:  # each round's tails match its candidates: no PE's next tails pass writes P
            ex.pg.barrier_on_stream()  # before the owners have pulled (a tail taken too early
            # would be replaced by the next round's pull, as that PE lowered the vertex again)

    launched = decided = 0
    t_loop = time.perf_counter()
    status, wait_s, sum_s, fronts = "cycle", 0.0, 0.0, []  # "cycle": max_rounds rounds, not settled
    flags, sums = np.zeros(3, np.int64), np.zeros(3, np.int64)
    while True:
        while launched < max_rounds and launched - decided < LAG and not (launched > decided
                                                                          and checkpoint(launched)):
            launched += 1
            launch(launched)
        if decided == launched:  # max_rounds rounds decided, none stopped the run
            break
        decided += 1
        t0 = time.perf_counter()
        res = ring.read(decided)
        t1 = time.perf_counter()
        flags[0] = res[0]
        flags[1] = decided == probe_round and res[1]  # this PE's vertices reached for the first time
        flags[2] = bound is not None and decided % 16 == 0 and res[2] < bound
        comm.Allreduce(flags, sums, op=_mpi_sum())
        wait_s, sum_s = wait_s + t1 - t0, sum_s + time.perf_counter() - t1
        fronts.append(res[0])
        total, deep, below = (int(x) for x in sums)
        if not total:
            status = "done"
            break
        if deep:
            status = "deep"
            break
        if below:
            status = "below"
            break
    sync = cp.cuda.Device().synchronize
    t_end = time.perf_counter()
    sync()  # the rounds launched after the last one decided (empty ones)
    k = decided % 2
    dist = ex.gather(ex.x(k), k)
    pred = ex.gather(pred, 4) if track_pred else None
    ex.pg.barrier_on_stream()  # every PE has its copies before any PE's next run writes its arrays
    sync()
    steps = ring.steps()
    prof = {"relax": 0.0, "barrier": 0.0, "settle": 0.0, "wait": wait_s, "sum": sum_s, "launched": launched,
            "init": t_loop - t_start, "loop": t_end - t_loop, "finish": time.perf_counter() - t_end}
    per_round = prof["per_round"] = []
    for r in sorted(steps):
        relax_s, barrier_s, settle_s = steps[r]
        prof["relax"] += relax_s
        prof["barrier"] += barrier_s
        prof["settle"] += settle_s
        if r <= len(fronts):  # this PE's frontier, its relaxation's and settle's seconds
            per_round.append((fronts[r - 2] if r > 1 else nown, relax_s, settle_s))
    return dist, pred, {"rounds": decided, "relaxations": 0, "status": status,
                        "exchange_s": prof["barrier"] + prof["settle"], "profile_s": prof}


def _host(a):
    """A host copy of device array ``a`` (a host array itself)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _degree_order_device(cp, graph, runs):
    """``(old_of_new, new_id)`` of :func:`~distgraph.formats.reorder.degree_order` with
    ``runs``, on the device (one stable sort of the degrees; the same order): the vertices by
    descending degree (out + in for a directed graph; ties by id), dealt to ``runs`` runs.
    Kronecker 24 on the host took seconds, most of it in NumPy's stable sort. A directed
    graph's in-degrees are counted on the device too, :data:`SORT_ARCS` heads at a time: NumPy's
    ``bincount`` of Kronecker 22's heads (a potential-shifted graph is directed) took 1.1 s of
    the renaming's 1.6 s on an H200 host (benchmarks/results/session19/, call 3)."""
    n = graph.n
    indptr = _to_device(cp, np.asarray(graph.indptr, dtype=np.int64))
    deg = indptr[1:] - indptr[:-1]
    del indptr
    if graph.directed:
        heads = np.asarray(graph.indices)
        for a in range(0, heads.shape[0], SORT_ARCS):
            deg += cp.bincount(_to_device(cp, heads[a:a + SORT_ARCS]), minlength=n)[:n]
    from ...formats.reorder import _order_to_new_id, order_by_degree

    order = order_by_degree(deg, runs, xp=cp)
    del deg
    return order.astype(cp.int64, copy=False), _order_to_new_id(order, xp=cp)


#: _sort_rows sorts this many arcs at a time at most (rows whole): about 40 bytes an arc of
#: temporary device memory (the keys, their sorted copy, the order, the sort's own buffer;
#: 5.4 GB at 2**27 arcs, kept by CuPy's pool after)
SORT_ARCS = 1 << 27


def _sort_rows(cp, block):
    """Sort each row of ``block``'s arcs by head (stable; weights along), on the device: the
    arcs of up to :data:`SORT_ARCS` at a time (whole rows) by one stable sort of
    ``row << 32 | head`` keys. A hub's heads in order put the hubs it reaches (the first ids
    of a degree order) side by side in a warp's loads: Kronecker 23, renamed by degree, on two
    H200s, rounds 1.13x faster than unsorted (benchmarks/results/session18/)."""
    m, nl = block.m, block.nl
    if m < 2:
        return
    ip = _host(block.indptr)
    r0 = 0
    while r0 < nl:
        a0 = int(ip[r0])
        r1 = max(int(np.searchsorted(ip, a0 + SORT_ARCS, side="right")) - 1, r0 + 1)  # at least one row
        a1 = int(ip[r1])
        if a1 - a0 > 1:
            pos = cp.arange(a0, a1, dtype=cp.int64)
            row = cp.searchsorted(block.indptr[r0:r1 + 1], pos, side="right").astype(cp.uint64)
            del pos
            key = (row << cp.uint64(32)) | block.indices[a0:a1].astype(cp.uint64)
            del row
            order = cp.argsort(key, kind="stable")
            block.indices[a0:a1] = (key[order] & cp.uint64(0xFFFFFFFF)).astype(cp.int32)
            del key
            if block.w is not None:
                block.w[a0:a1] = block.w[a0:a1][order]
            del order
        r0 = r1


_NARROW = {"i": np.dtype(np.int32), "f": np.dtype(np.float32)}  # a work dtype's (by kind) narrower output


class RoundsSSSP:
    """The round-based Bellman-Ford on one graph (device arrays kept for several runs):
    ``engine="kernel"`` (default) runs each round as fused kernels (:func:`rounds_kernel`),
    ``engine="cupy"`` as plain CuPy array operations (:func:`rounds_cupy`, the baseline a CuPy
    user would write); the same results (with ``order="jacobi"`` the same rounds).

    On several ranks with nvshmem4py (``distributed``, default: when every rank has it) each
    PE uploads only its vertex block's arcs and relaxes them, and the result is one GPU's (the
    Jacobi rounds too; the asynchronous rounds' count and relaxations vary with the PEs). ``exchange``: ``"pull"`` (the default for the kernels where every PE's
    symmetric heap is mapped on every PE: one host) keeps no replicated distances; each owner
    pulls the chunks of its vertices that a peer lowered (:class:`_PeerPull`); ``"dense"`` (the
    CuPy engine's, and the fallback) combines replicated distances after each round
    (:class:`_PeerMin`, whole arrays read from every peer); not distributed, ``exchange`` has no
    effect. ``order`` (the kernels): ``"async"`` (the default) relaxes each frontier vertex from
    its latest candidate and skips one whose arcs were relaxed from it already, ``"jacobi"``
    runs the CuPy engine's rounds exactly (see :func:`rounds_kernel`); the same distances and
    stops. With negative weights the rounds keep no tails (only a negative cycle's search
    needs them) unless a negative cycle is proven; then they run again (Jacobi's) with tails.
    Timings on one and two H200s: benchmarks/results/session16/ and session17/. Without
    nvshmem4py every rank runs the whole graph (no speed-up).

    ``relabel="degree"``: the rounds run on the graph renamed by degree (hubs first: the
    distances the relaxations hit most share cache lines), dealt over the PEs (the order of
    :func:`~distgraph.formats.reorder.degree_order` with ``runs`` = the PEs, found on the
    device; each rank renames its block's rows by
    :func:`~distgraph.formats.reorder.permute_rows`, and the device sorts them); the results
    come back in the caller's ids (the distances renamed on the device, the predecessors still
    the smallest tight tail by the caller's ids, a cycle in them). It pays off over many runs
    from one graph: on Kronecker 23 / 24 the rounds ran 1.46 / 1.57x faster on one H200 and
    1.36 / 1.55x on two, for 0.9 / 1.7 s of set-up, about 250 runs' gain
    (benchmarks/results/session18/). Graphs whose ids are already local gain nothing:
    road-FLA's rounds ran 0.96x as fast renamed on one H200. Default None: the caller's ids.
    Collective.
    """

    relabel = new_id = old_of_new = d_new_id = d_names = None  # the caller's ids (see _place)
    job_ranks = 1  # the job's ranks when each runs alone (Session's split="sources"): the prefault's rule

    def __init__(self, graph, weights, comm, *, distributed=None, engine="kernel", exchange=None, order=None,
                 relabel=None):
        from mpi4py import MPI

        from ...runtime.abort import collective_check, collective_raise
        from ...runtime.context import get_context
        from ..cpu.bellman_ford import neg_bound_of
        from .loader import import_cupy

        # checked on every rank together (a bad value on one rank must not leave the others in
        # the first collective; engines differing by rank would exchange keys against values)
        err = None
        try:
            expect(distributed is None or isinstance(distributed, (bool, np.bool_)), "distributed",
                   "None, True or False", distributed)
            expect(engine in ("kernel", "cupy"), "engine", "'kernel' or 'cupy'", engine)
            expect(exchange in (None, "pull", "dense"), "exchange", "None, 'pull' or 'dense'", exchange)
            expect(exchange != "pull" or engine == "kernel", "exchange",
                   "'dense' or None with engine='cupy' (only the round kernels pull)", exchange)
            expect(order is None or order in ORDERS, "order", "None, 'async' or 'jacobi'", order)
            expect(order != "async" or engine == "kernel", "order",
                   "'jacobi' or None with engine='cupy' (its rounds are Jacobi's)", order)
            expect(relabel in (None, "none", "degree"), "relabel", "None, 'none' or 'degree'", relabel)
        except InvalidArgumentError as e:
            err = e
        self.engine = engine
        self.order = order if order is not None else ("async" if engine == "kernel" else "jacobi")
        size = comm.Get_size()
        have = size > 1 and all(comm.allgather(_nvshmem_available()))
        if err is None and size > 1 and distributed and not have:
            err = DistgraphError("RoundsSSSP(distributed=True) needs nvshmem4py on every rank")
        collective_check(comm, err, {"distributed": distributed, "engine": engine, "exchange": exchange,
                                     "order": order, "relabel": relabel},
                         "the round-based GPU Bellman-Ford")
        self.distributed = size > 1 and (have if distributed is None else bool(distributed))
        t0 = time.perf_counter()
        cp = import_cupy()
        get_context(comm, "gpu")
        self.cp, self.comm, self.graph, self.w = cp, comm, graph, weights
        self.exchange = None
        scope = comm if self.distributed else MPI.COMM_SELF
        self.relabel = None if relabel == "none" else relabel
        err = bk = None
        try:
            self.block = self._place(graph, weights, scope)
            bk = self.block.neg_magnitude()
        except Exception as e:  # noqa: BLE001 - raised on every rank below
            err = e
        if self.distributed:
            collective_raise(comm, err)
        elif err is not None:
            raise err
        self.wdt = self.block.wdt
        self.bound, self.has_neg = neg_bound_of(bk, self.wdt, scope)
        # the CuPy rounds' weights in the work dtype (the kernels read them as stored)
        self.d_indptr, self.d_indices = self.block.indptr, self.block.indices
        self.d_w = self.block.w if engine == "kernel" else self.block.w_work()
        if self.distributed:
            from ...pgas import get_pgas

            pg = get_pgas(comm, "gpu")
            if engine == "kernel" and exchange != "dense":
                bounds = [self.part.range(q)[0] for q in range(comm.Get_size())] + [graph.n]
                self.exchange = _PeerPull(pg, graph.n, bounds, self.has_neg)
                if not self.exchange.mapped:  # some peer's heap is not mapped here (agreed by all)
                    self.close()
                    if exchange == "pull":
                        raise DistgraphError("RoundsSSSP(exchange='pull') needs every PE's symmetric heap mapped "
                                             "on every PE (NVLink or one GPU); use exchange='dense'")
            if self.exchange is None:
                # the kernel engine exchanges 64-bit keys, the CuPy one values
                self.exchange = _PeerMin(pg, graph.n, "int64" if engine == "kernel" else self.wdt, self.has_neg)
        self.exchange_kind = None if self.exchange is None else (
            "pull" if isinstance(self.exchange, _PeerPull) else "dense")
        cp.cuda.Device().synchronize()
        self.setup_s = time.perf_counter() - t0

    def _place(self, graph, weights, scope):
        """This rank's :class:`_Block` (``self.part``: the blocks), of the graph as given or
        renamed (``self.relabel``: ``self.new_id``, ``self.old_of_new`` on the host and, for
        the finish, on the device)."""
        from ...graph.partition import partition_by_edges

        cp = self.cp
        if self.relabel is None:
            self.part = partition_by_edges(graph.indptr, scope.Get_size())
            return _Block(cp, graph, weights, *self.part.range(scope.Get_rank()))
        from ...formats.reorder import permute_rows

        t0 = time.perf_counter()
        n = graph.n
        self.d_names, self.d_new_id = _degree_order_device(cp, graph, scope.Get_size())
        self.old_of_new, self.new_id = _host(self.d_names), _host(self.d_new_id)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.diff(graph.indptr)[self.old_of_new], out=indptr[1:])
        self.part = partition_by_edges(indptr, scope.Get_size())
        lo, hi = self.part.range(scope.Get_rank())
        # the rows renamed on the host (unsorted: the sort is the device's, 2-5x less host time)
        t1 = time.perf_counter()
        arcs = permute_rows(graph.indptr, graph.indices, weights, self.new_id, self.old_of_new[lo:hi], sort=False)
        t2 = time.perf_counter()
        block = _Block(cp, None, weights, lo, hi, arcs=arcs)
        del arcs
        cp.cuda.Device().synchronize()
        t3 = time.perf_counter()
        _sort_rows(cp, block)
        cp.cuda.Device().synchronize()
        self.relabel_s = time.perf_counter() - t0
        # its steps: the order (device) and row pointers, the rows renamed (host), their upload, the sort (device)
        self.relabel_steps_s = {"order": t1 - t0, "rows": t2 - t1, "upload": t3 - t2, "sort": t0 + self.relabel_s - t3}
        return block

    @property
    def bound_key(self):
        return int(to_keys(np.array([self.bound]))[0])

    def close(self):
        """Free the exchange's symmetric arrays (collective on several PEs), the pinned
        buffer of :func:`_to_host` and the batches' arrays."""
        self._stage = self._batches = self._batch_tab = self._batch_cnts = None
        if self.exchange is not None:
            self.exchange.close()
            self.exchange = None

    def run(self, source, confirm, predecessors=False, max_rounds=None, probe_round=None, out=None, sink=None):
        """``(dist, pred, stats, cycle)``; with ``max_rounds`` (fewer than n), None when the
        rounds had not settled by then (nothing concluded: the caller goes on another way);
        with ``probe_round``, None too when that round still reached new vertices (see
        :func:`rounds_cupy`). ``self.last_stats`` says which (``"stopped"``). The rounds
        keep no tails; a negative cycle proven, they run again with tails (``stats["tails_rerun"]``;
        ``relaxations`` then counts both runs, the other stats are the second run's). The
        distances' host array is faulted in by threads while the GPU works (:class:`_Prefault`).
        ``out``: a host array of n items to receive the distances (``dist`` is then ``out``),
        not yet written (its pages are faulted in the same way): of the work dtype (int64 or
        float64) or, without ``predecessors``, of int32 or float32, converted on the device
        (:func:`~distgraph.backends.cpu.bellman_ford.to_output_dtype`: half the copy, no pass on
        the host). ``sink`` (a :class:`_RowSink`, with ``out`` and without ``predecessors``):
        ``out`` is filled in the background; the caller reads it only after ``sink.flush()``."""
        from ...runtime.config import config

        expect(isinstance(source, (int, np.integer)) and not isinstance(source, bool)
               and 0 <= int(source) < self.graph.n, "source", f"a vertex in [0, {self.graph.n})", source)
        threads = int(config.gpu_sssp_prefault_threads)
        if threads < 0:  # auto: on one rank only (several PEs' rounds stalled while their hosts faulted)
            threads = 0 if max(self.comm.Get_size(), self.job_ranks) > 1 else 4
        if out is not None:
            ok = [self.wdt] + ([] if predecessors else [_NARROW[self.wdt.kind]])
            expect(isinstance(out, np.ndarray) and out.shape == (self.graph.n,) and out.dtype in ok
                   and out.flags.c_contiguous, "out",
                   f"a C-contiguous ({self.graph.n},) host array of {' or '.join(map(str, ok))}"
                   + ("" if len(ok) > 1 else " (predecessors need the distances in the work dtype)"),
                   getattr(out, "shape", out))
        expect(sink is None or (out is not None and not predecessors), "sink",
               "None, or given with out and without predecessors", sink)
        if sink is not None:  # the sink's threads fault the row in, after the run
            threads = 0
        pre = _Prefault((self.graph.n,), self.wdt if out is None else out.dtype, threads=threads, out=out)
        try:
            return self._run(source, confirm, predecessors, max_rounds, probe_round, pre, sink)
        finally:
            pre.close()

    def _run(self, source, confirm, predecessors, max_rounds, probe_round, pre, sink=None):
        from mpi4py import MPI

        from ..cpu.bellman_ford import cycle_from_pred, find_pred_cycle, to_output_dtype

        t0 = time.perf_counter()
        n = self.graph.n
        renamed = self.new_id is not None
        src = int(self.new_id[source]) if renamed else source  # the rounds' id of the source
        capped = max_rounds is not None and int(max_rounds) < n
        rkw = {"track_pred": False, "max_rounds": int(max_rounds) if capped else None,
               "probe_round": int(probe_round) if capped and probe_round else None, "exchange": self.exchange}

        def rounds():
            if self.engine == "kernel":
                return rounds_kernel(self.block, src, n=n, bound_key=self.bound_key if self.has_neg else None,
                                     order=self.order, **rkw)
            return rounds_cupy(self.d_indptr, self.d_indices, self.d_w, src, n=n,
                               bound=self.bound if self.has_neg else None, lo=self.block.lo, **rkw)

        # no tails at first: the distances' finish (_finish_device) does not need them, only a
        # negative cycle's search does. A negative cycle proven (a distance below the bound, or
        # n rounds unsettled; the same on every rank), Jacobi rounds again with tails, which
        # then hold it. Without tails, shifted weights' rounds cost half (one pass over the
        # arcs a round, not two).
        dist, pred, info = rounds()
        reran = info["status"] == "below" or (info["status"] == "cycle" and not capped)
        if reran and self.has_neg:
            first = info["relaxations"]
            rkw["track_pred"] = True
            dist, pred, info = rounds()
            info["relaxations"] += first
        self.cp.cuda.Device().synchronize()
        t_run = time.perf_counter() - t0
        relax = info["relaxations"]
        # the order of the rounds the stats describe (the tails rerun's are Jacobi's)
        order = "jacobi" if reran and self.has_neg else self.order
        stats = {"mode": "rounds", "backend": "gpu", "engine": self.engine, "order": order, "rounds": info["rounds"],
                 "relaxations": relax, "distributed": self.distributed, "exchange": self.exchange_kind,
                 "tails_rerun": bool(reran and self.has_neg), "relabel": self.relabel,
                 "time_setup_s": self.setup_s,
                 "time_run_s": t_run}
        if renamed:
            stats["time_relabel_s"] = self.relabel_s  # of time_setup_s: the order and this rank's rows
            stats["time_relabel_steps_s"] = getattr(self, "relabel_steps_s", None)
        if self.distributed:
            stats["relaxations"] = self.comm.allreduce(relax)
            # the exchange's share per PE (the pull: GPU seconds of the barrier and settle steps
            # over the first _Ring.TIMED rounds; dense: host seconds over all rounds): the
            # largest and smallest over the PEs, and the most relaxations one PE did (the
            # balance of the split)
            stats["time_exchange_max_s"] = self.comm.allreduce(info["exchange_s"], op=MPI.MAX)
            stats["time_exchange_min_s"] = self.comm.allreduce(info["exchange_s"], op=MPI.MIN)
            stats["relaxations_max_pe"] = self.comm.allreduce(relax, op=MPI.MAX)
        if "profile_s" in info:  # the pull loop's steps per PE (see _pull_loop)
            stats["time_profile_s"] = self.comm.allgather(info["profile_s"]) if self.distributed \
                else [info["profile_s"]]
        if capped and info["status"] in ("cycle", "deep"):  # not settled within max_rounds, or won't be
            stats["stopped"] = "max_rounds" if info["status"] == "cycle" else "deep"
            self.last_stats = stats
            return None
        if info["status"] != "done":
            p = _to_host(pred, self)
            v = find_pred_cycle(p)
            cycle = None
            if v >= 0:
                cyc = cycle_from_pred(p, v)
                if renamed:  # in the caller's ids, from the smallest
                    cyc = [int(x) for x in self.old_of_new[cyc]]
                    i = cyc.index(min(cyc))
                    cyc = cyc[i:] + cyc[:i]
                cycle = cyc if confirm(cyc) else None
            if cycle is None:
                cycle = _cpu_cycle(self.graph, self.w, source, confirm)
            if cycle is not None:
                return None, None, stats, cycle
            raise DistgraphError(f"the round-based GPU Bellman-Ford stopped ({info['status']}) "
                                 "but no negative cycle was found")
        t1 = time.perf_counter()
        if renamed:  # the caller's order made on the device (a gather), then copied
            gathered = dist[self.d_new_id]
            self.cp.cuda.Device().synchronize()
            stats["time_rename_s"] = time.perf_counter() - t1  # of time_d2h_s
        host = pre.take()
        dev = gathered if renamed else dist
        if pre.given and host.dtype != dev.dtype:  # the caller's narrower dtype, made on the device
            dev = to_output_dtype(dev, host.dtype, xp=self.cp)
        if sink is not None:  # into pinned memory now, into the row in the background
            sink.put(dev, host)  # the rounds' result is a new array each run (no later write)
            d = host
        else:
            d = _to_host(dev, self, out=host)
        stats["time_d2h_s"] = time.perf_counter() - t1
        stats["time_prefault_wait_s"] = pre.wait_s  # of time_d2h_s: the page-touching threads not done
        d, p, canon = _finish_device(self.block, self.graph, self.w, self.comm if self.distributed else MPI.COMM_SELF,
                                     self.part, source, d, predecessors, whole=True,
                                     renamed=(dist, self.d_names, self.d_new_id) if renamed else None)
        stats["time_finish_s"] = time.perf_counter() - t0 - t_run
        stats["canonical_predecessors"] = canon
        return d, p, stats, None


    def run_batch(self, sources, outs, *, max_rounds, sink=None, wide=False, group=BATCH_MAX):
        """Distances from several sources at once (in groups of at most ``group`` sources, up
        to :data:`BATCH_MAX`, and up to 8 groups; one PE, the kernel engine): the batched
        round kernels of ``kernels/bf_rounds.cu`` keep each vertex's distances from a group's
        sources side by side, so one read of an arc relaxes it for every source that
        needs it; the groups (the sources split evenly, each with its own arrays) run their
        rounds in step, a deep graph's in one persistent launch for all. ``outs[b]``: a host row
        of n items (the work dtype, or its int32 / float32) that receives ``sources[b]``'s
        distances if its rounds settle within ``max_rounds`` rounds, through ``sink`` (a
        :class:`_RowSink`: read the rows after its flush) or, without one, at once. Returns a
        list: each source's stats (``batch``: its group's sources, ``groups``, ``batch_sources``:
        the call's; ``time_batch_run_s`` and ``persistent_rounds`` are the call's), or None
        where its rounds had not settled (a negative cycle, or a graph deeper than
        ``max_rounds``: the caller runs that source alone, which finds the cycle or goes on).
        No predecessors; a key below the negative-cycle bound leaves its source unsettled.
        Integer weights run on 4-byte keys unless ``wide`` (or :data:`BATCH_KEYS32` is off); a
        sum outside their range runs the batch again on 8-byte keys (``self.last_batch["keys"]``
        says which)."""
        from .loader import get_module

        cp, n = self.cp, self.graph.n
        src = np.asarray(sources, dtype=np.int64).reshape(-1)
        nb = int(src.size)
        expect(1 <= int(group) <= BATCH_MAX, "group", f"1 to {BATCH_MAX} sources", group)
        ng = -(-nb // int(group))  # the groups, of sizes differing by one at most
        expect(1 <= nb and ng <= _GROUPS_CAP, "sources", f"1 to {_GROUPS_CAP} groups of {int(group)}", nb)
        assert len(outs) == nb, (nb, len(outs))
        assert not self.distributed and self.engine == "kernel" and self.block.lo == 0 and self.block.hi == n
        ok = (self.wdt, _NARROW[self.wdt.kind])
        for row in outs:
            expect(isinstance(row, np.ndarray) and row.shape == (n,) and row.dtype in ok and row.flags.c_contiguous
                   and row.dtype == outs[0].dtype, "outs",
                   f"C-contiguous ({n},) host rows, all of {' or '.join(map(str, ok))}", getattr(row, "shape", row))
        t0 = time.perf_counter()
        block = self.block
        renamed = self.new_id is not None
        ids = self.new_id[src] if renamed else src  # the rounds' ids of the sources
        # 4-byte keys for integer weights until a sum leaves their range (then 8 from here on)
        k32 = not block.isf and BATCH_KEYS32 and not wide
        kdt = cp.int32 if k32 else cp.int64
        inf = np.iinfo(np.int32).max if k32 else (int(np.float64(np.inf).view(np.int64)) if block.isf
                                                  else np.iinfo(np.int64).max)
        # near-far: off until the threshold is set (at once, or once the graph proves deep)
        mode, dbits = BATCH_NEAR_FAR, self._batch_delta(self._batch_arrays(0))
        expect(mode in ("off", "deep", "always"), "BATCH_NEAR_FAR", "'off', 'deep' or 'always'", mode)
        top = np.iinfo(np.int64).max
        thr0 = top if dbits is None or mode == "off" else dbits[1]
        # the negative-cycle bound (a key below it: the source's rounds run alone, see dg_bk_lower)
        bound = self.bound_key if self.has_neg else np.iinfo(np.int64).min
        mod = get_module("bf_rounds")
        sfx = block.suffix + ("_k32" if k32 else "")
        fns = (mod.get_function(f"distgraph_bf_batch_round_{sfx}"), mod.get_function(f"distgraph_bf_batch_big_{sfx}"),
               mod.get_function("distgraph_bf_batch_advance_" + ("float" if block.isf else "int")))
        sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        unit = block.w is None
        w = block.indptr if unit else block.w  # unit weights: a placeholder pointer, never read
        hubs = block.max_degree() >= BATCH_BIG_DEGREE
        thin = np.int32(min(max(int(BATCH_THIN), 0), 1024))  # (pairs summed over a warp in 32 bits)
        sizes = [nb // ng + (j < nb % ng) for j in range(ng)]
        groups = []
        for j in range(ng):
            lo = sum(sizes[:j])
            groups.append(self._batch_group(j, ids[lo:lo + sizes[j]], lo, kdt, inf, mode, thr0, top, bound, dbits,
                                            unit, w, thin))
        cnts = self._batch_cnts
        nf = {j: g["nf"] for j, g in enumerate(groups)}  # the live groups' frontier lengths
        rounds, got, persisted = 0, cnts[:ng].get(), 0
        while nf and rounds < max_rounds:
            live, ran = sorted(nf), False  # ran: the live groups' rounds in one persistent launch
            if rounds < BATCH_EXACT:  # one round, its frontier's length known
                step = 1
            else:  # rounds queued unread (the kernels stride: grids for twice the last lengths read)
                step = min(BATCH_CHECK, max_rounds - rounds)
                if rounds == BATCH_EXACT and mode == "deep" and thr0 != top:
                    for j in live:  # a deep graph: near-far from here on
                        groups[j]["st"]["ph"][_PH_THR:_PH_THR + 1].fill(thr0)
                pk = self._batch_persist(groups[0]["st"], sfx)
                if pk is not None and pk[1] >= len(live) and max(nf.values()) <= 256 * 8 * (pk[1] // len(live)):
                    # a deep graph's frontiers (8 strides of a group's share of the grid at most):
                    # every live group's rounds in one launch
                    tab = self._batch_table(live, [groups[j] for j in live])
                    try:
                        pk[0]((pk[1],), (256,), (block.indptr, block.indices, w, np.int32(unit), tab,
                                                 np.int32(len(live)), np.uint32((1 << len(live)) - 1),
                                                 np.int64(BATCH_BIG_DEGREE), thin, np.int64(rounds),
                                                 np.int64(min(int(BATCH_PERSIST_STEP), max_rounds - rounds))))
                        ran, step = True, min(int(BATCH_PERSIST_STEP), max_rounds - rounds)
                    except cp.cuda.driver.CUDADriverError:  # (a cooperative launch refused) the graphs
                        self._batch_arrays(0)["no_persist"] = True
            if not ran:
                for j in live:
                    self._batch_steps(groups[j], fns, rounds, step, nf[j] if step == 1 else 2 * nf[j], sms, hubs,
                                      sfx, thin)
            got = cnts[:ng].get()
            if ran:
                persisted += int(got[live, 5].max())
            # each live group's next frontier: after the launch's rounds, or its own cnt[5] where
            # it stopped sooner (its frontier empty, or an overflow)
            nf = {j: x for j in live if (x := int(got[j][(rounds + (int(got[j][5]) if ran else step)) % 3]))}
            rounds += step
            if k32 and got[:, 3].any():
                break  # a sum past int32's range: run again on 8-byte keys (below)
            if sink is not None:  # the last batch's rows, once on the host, to the threads
                sink.poll()
        if k32 and got[:ng, 3].any():  # a sum past int32's range: the batch again with 8-byte keys
            return self.run_batch(sources, outs, max_rounds=max_rounds, sink=sink, wide=True, group=group)
        t_run, out_stats, t_out = time.perf_counter() - t0, [None] * nb, 0.0
        summary = {"rounds": 0, "phases": 0, "unsettled": 0, "relaxations": 0}
        # the persistent rounds' shares (each launch's in its first live group's row)
        tot = got[:ng, 8:12].sum(axis=0)
        split = [float(x) * 1e-9 for x in tot[:3]] + [int(tot[3])]
        for j, g in enumerate(groups):
            t1 = time.perf_counter()
            res = self._batch_finish(g, j in nf, k32, inf, outs, sink)
            t_out += time.perf_counter() - t1
            rounds_j = int(got[j][4])  # the rounds that had work
            for b, count in enumerate(res["counts"]):
                if count is None:
                    continue
                out_stats[g["lo"] + b] = {
                    "mode": "rounds", "backend": "gpu", "engine": "kernel", "order": "async", "batch": g["nb"],
                    "groups": ng, "batch_sources": nb, "rounds": rounds_j, "relaxations": count,
                    "distributed": False, "exchange": None, "tails_rerun": False, "keys": 4 if k32 else 8, "phases": res["phases"],
                    "persistent_rounds": persisted, "relabel": self.relabel, "time_setup_s": self.setup_s,
                    "persistent_split_s": [x / nb for x in split[:3]]}  # (this source's share)
                if renamed:
                    out_stats[g["lo"] + b]["time_relabel_s"] = self.relabel_s
            summary["rounds"] = max(summary["rounds"], rounds_j)
            summary["phases"] = max(summary["phases"], res["phases"])
            summary["unsettled"] += res["unsettled"]
            summary["relaxations"] += res["relaxations"]
        for x in out_stats:
            if x is not None:
                x.update(time_run_s=t_run / nb, time_batch_run_s=t_run, time_d2h_s=t_out / nb)
        self.last_batch = {"sources": nb, "groups": ng, "keys": 4 if k32 else 8, "persistent_rounds": persisted,
                           "persistent_split_s": split,
                           "time_run_s": t_run, "time_out_s": t_out, **summary}
        return out_stats

    def _batch_group(self, slot, ids, lo, kdt, inf, mode, thr0, top, bound, dbits, unit, w, thin):
        """One group of a batch on the arrays of ``slot``: its keys, masks and counters reset, its
        sources (``ids``, in the rounds' ids; ``lo``: its first in the batch) as round 0's
        frontier, and the arguments of its rounds (``rargs``, by round mod 6)."""
        cp, n, block = self.cp, self.graph.n, self.block
        nb = int(ids.size)
        st = self._batch_arrays(slot)
        dist = st["dist"].view(kdt)[:n * nb]
        dist.fill(inf)
        rel = st["rel"].view(kdt)[:n * nb] if BATCH_SKIP else None
        if rel is not None:
            rel.fill(inf)
        act, nact, front, nxt, cnt = st["act"], st["nact"], st["front"], st["next"], st["cnt"]
        act.fill(0)  # (a batch stopped by an error or an interrupt may have left bits)
        nact.fill(0)
        st["farm"].fill(0)
        ph = st["ph"]
        ph.set(np.array([top if mode != "always" else thr0, 0, 0, 0, 0, top, top, bound,
                         0 if dbits is None else dbits[0], 0, 0], np.int64))
        # cnt: the frontiers' lengths (three in turn: round r reads cnt[r % 3], appends to
        # cnt[(r + 1) % 3] and zeroes cnt[(r + 2) % 3]), in cnt[3] the overflow flag of 4-byte
        # keys, in cnt[4] the rounds whose frontier was not empty, in cnt[5] the rounds the last
        # persistent launch ran, in cnt[8..11] (each launch's in its first group's row) the
        # persistent rounds' time in their first passes, second passes and advances (ns, each to
        # its grid sync) and the rounds that ran a second pass
        cnt.fill(0)
        ovf = cnt[3:4].view(cp.uint32)[:1]
        st["nbig"].fill(0)
        st["count"].fill(0)
        uniq, inv = np.unique(ids, return_inverse=True)
        masks = np.zeros(uniq.size, np.uint32)
        np.bitwise_or.at(masks, inv.reshape(-1), (np.uint32(1) << np.arange(nb, dtype=np.uint32)))
        dist[cp.asarray(ids) * nb + cp.arange(nb)] = 0  # the key of 0 (and of 0.0)
        act[cp.asarray(uniq)] = cp.asarray(masks)
        front[:uniq.size] = cp.asarray(uniq, dtype=cp.int32)
        cnt[0] = uniq.size
        fronts, acts, nbig = (front, nxt), (act, nact), st["nbig"]  # nbig: (pieces, mid) of even, odd rounds
        rargs = [(block.indptr, block.indices, w, np.int32(unit), fronts[r % 2], cnt[r % 3:r % 3 + 1], np.int32(nb),
                  dist, acts[r % 2], acts[1 - r % 2], fronts[1 - r % 2], cnt[(r + 1) % 3:(r + 1) % 3 + 1],
                  st["big"], st["bigm"], nbig[2 * (r % 2):2 * (r % 2) + 2], np.int64(BATCH_BIG_DEGREE), st["count"],
                  np.uint64(0) if rel is None else rel, ovf, cnt[(r + 2) % 3:(r + 2) % 3 + 1],
                  nbig[2 - 2 * (r % 2):4 - 2 * (r % 2)], cnt[4:5], thin, st["mid"], st["midm"],
                  ph, st["far0"], st["far1"], st["farm"]) for r in range(6)]  # the passes' arguments, r % 6
        rargs = [(a, (a[11], ph)) for a in rargs]  # and the advance's: the next frontier's length, ph
        # the persistent launch's row of the groups' table (kernels/bf_rounds.cu, DG_BG_LEN)
        row = [dist, front, nxt, act, nact, cnt, st["big"], st["bigm"], nbig, st["count"], rel, st["mid"],
               st["midm"], ph, st["far0"], st["far1"], st["farm"]]
        row = [0 if a is None else int(a.data.ptr) for a in row] + [nb]
        return {"st": st, "nb": nb, "lo": lo, "dist": dist, "rargs": rargs, "nf": int(uniq.size), "row": row,
                "skip": rel is not None}

    def _batch_steps(self, g, fns, rounds, step, est, sms, hubs, sfx, thin):
        """Rounds ``rounds`` to ``rounds + step`` of group ``g`` (launches, or CUDA graphs of 6
        rounds when ``step`` is 6 or more): grids for ``est`` frontier vertices."""
        st, rargs = g["st"], g["rargs"]
        # the first pass: up to 32 vertices a warp, 8 warps a block; the second (the mid list's
        # vertices, a warp each, and the hubs' pieces, a block each): a warp per vertex
        grid = max(-(-est // 256), 1 if step == 1 else sms)
        grid2 = max(-(-est // 8), 4 * sms if hubs else 1)
        graphs = BATCH_GRAPHS and step >= 6 and not st.get("no_graphs")
        if graphs:
            grid, grid2 = 1 << (grid - 1).bit_length(), 1 << (grid2 - 1).bit_length()
        grid, grid2 = int(min(grid, 32 * sms)), int(min(grid2, 32 * sms))
        r = rounds
        while r < rounds + step:
            if graphs and rounds + step - r >= 6:
                key = (sfx, g["nb"], r % 6, grid, grid2, int(thin), g["skip"], BATCH_BIG_DEGREE)
                gr = self._batch_graph(st, key, fns, rargs, grid, grid2)
                if gr is not None:
                    gr.launch()
                    r += 6
                    continue
            _batch_round(fns, rargs[r % 6], grid, grid2)
            r += 1

    def _batch_table(self, live, groups):
        """The persistent launch's table of the ``live`` groups (their rows, kernels/bf_rounds.cu's
        DG_BG_LEN words each) on the device, kept while the same groups run."""
        key = (tuple(live), tuple(tuple(g["row"]) for g in groups))
        got = getattr(self, "_batch_tab", None)
        if got is None or got[0] != key:
            got = self._batch_tab = (key, self.cp.asarray(np.array([g["row"] for g in groups], np.int64)))
        return got[1]

    def _batch_finish(self, g, unsettled_front, k32, inf, outs, sink):
        """Group ``g``'s rows: its settled sources' distances (in the caller's ids) to their
        ``outs`` rows (through ``sink``, or at once); returns its counts (a source's relaxations,
        None where not settled: below the bound, or still in a frontier or far list when
        ``unsettled_front``), phases, unsettled and relaxations."""
        from ..cpu.bellman_ford import to_output_dtype

        cp, n, block = self.cp, self.graph.n, self.block
        st, nb, lo, dist = g["st"], g["nb"], g["lo"], g["dist"]
        phv = st["ph"].get()
        # not settled: the sources that went below the negative-cycle bound, and those some
        # frontier vertex (or far list) still holds
        left = int(phv[_PH_CYCLE]) & ((1 << nb) - 1)
        if unsettled_front:
            bits = st["act"] | st["nact"] | st["farm"]
            left |= int(np.bitwise_or.reduce(bits[bits != 0].get(), initial=np.uint32(0)))
        counts = st["count"].get()
        settled = [b for b in range(nb) if not (left >> b) & 1]
        if settled:
            # the settled sources' rows, in the caller's ids, as one (k, n) block: the vertices'
            # lines gathered (renamed: 4 or 8 bytes per source, side by side), the settled
            # columns, the keys back to doubles, the narrowing to the rows' dtype (one range
            # check for all: an overflow is raised here, and the source run alone names it)
            mat = dist.reshape(n, nb)
            if self.new_id is not None:
                mat = mat[self.d_new_id]
            cols = mat.T[settled] if len(settled) < nb else mat.T
            blk = cp.ascontiguousarray(cols)
            del cols, mat
            base = st["dist"].data.ptr
            if base <= blk.data.ptr < base + st["dist"].nbytes:  # a view of the keys (n or nb of 1): a copy
                blk = blk.copy()
            if block.isf:  # keys back to doubles
                blk = cp.where(blk < 0, blk ^ _FLIP, blk).view(cp.float64)
            dt = outs[lo + settled[0]].dtype
            if k32 and dt != np.int32:  # +inf as the int64 one, for the rows' dtype below
                blk = cp.where(blk == inf, np.iinfo(np.int64).max, blk.astype(cp.int64))
            if blk.dtype != dt:
                blk = to_output_dtype(blk, dt, xp=cp)
            rows = [outs[lo + b] for b in settled]
            if sink is not None:
                sink.put_rows(blk, rows)  # made here: the next batch runs during its copy
            else:
                for j, row in enumerate(rows):
                    _to_host(blk[j], self, out=row)
            del blk
        return {"counts": [None if (left >> b) & 1 else int(counts[b]) for b in range(nb)],
                "phases": int(phv[_PH_PHASES]), "unsettled": bin(left).count("1"),
                "relaxations": int(counts[:nb].sum())}

    @staticmethod
    def _batch_graph(st, key, fns, phases, grid, grid2):
        """The CUDA graph of 6 batched rounds from phase ``key[2]`` (captured once per key
        on a stream of its own; the arguments are the batch arrays, kept across batches), or
        None where a capture cannot begin (an old CuPy or driver: the rounds go one by one from
        then on, ``st["no_graphs"]``; an error once capturing is raised)."""
        from .loader import import_cupy

        gs = st.setdefault("graphs", {})
        g = gs.get(key)
        if g is None:
            cp = import_cupy()
            stream = cp.cuda.Stream(non_blocking=True)
            try:
                with stream:
                    stream.begin_capture()
            except Exception:  # noqa: BLE001 - launched one by one instead (the same rounds)
                st["no_graphs"] = True
                return None
            with stream:
                try:
                    for j in range(6):
                        _batch_round(fns, phases[(key[2] + j) % 6], grid, grid2)
                except BaseException:
                    try:
                        stream.end_capture()  # (invalidated by the error: its own error would hide it)
                    except Exception:  # noqa: BLE001
                        pass
                    raise
                g = stream.end_capture()
            gs[key] = g
        return g

    @staticmethod
    def _batch_persist(st, sfx):
        """The persistent rounds' kernel for keys ``sfx`` and its grid (:data:`BATCH_PERSIST`
        blocks an SM, at most the occupancy's: every block resident) as ``(kernel, grid)``, or
        None (off, refused once, no block fits, or the driver's occupancy could not be asked:
        a cooperative grid is not sized from an estimate); kept in ``st``."""
        if BATCH_PERSIST <= 0 or st.get("no_persist"):
            return None
        key = (sfx, int(BATCH_PERSIST))
        gs = st.setdefault("persist", {})
        if key not in gs:
            from .loader import blocks_per_sm, get_module, import_cupy, sm_count

            cp = import_cupy()
            fn = get_module("bf_rounds", cooperative=True).get_function("distgraph_bf_batch_persist_" + sfx)
            per_sm, source = blocks_per_sm(fn, 256)
            ok = source == "driver" and per_sm > 0
            gs[key] = (fn, min(int(BATCH_PERSIST), per_sm) * sm_count(cp)) if ok else None
        return gs[key]

    def _batch_delta(self, st=None):
        """The batched rounds' near-far delta as ``(addend, threshold key)``: the int64 value
        (integer weights) or the float64's bits and key (floats), :data:`BATCH_DELTA_FACTOR`
        times the mean |w| of a strided sample (unit weights: 1); None when off (no arcs, or
        a delta that does not fit). Kept in ``st`` (the batch arrays) for the next batch."""
        if st is not None:
            got = st.get("delta")
            if got is None or got[0] != BATCH_DELTA_FACTOR:
                got = st["delta"] = (BATCH_DELTA_FACTOR, self._batch_delta())
            return got[1]
        block, cp = self.block, self.cp
        m = int(block.indices.shape[0])
        if BATCH_DELTA_FACTOR <= 0 or m == 0:
            return None
        if block.w is None:
            mean = 1.0
        else:
            a = cp.abs(block.w[::max(1, m // (1 << 20))].astype(cp.float64))
            mean = float(a.mean())
        d = BATCH_DELTA_FACTOR * mean
        if block.isf:
            if not np.isfinite(d) or d <= 0:
                return None
            bits = int(np.float64(d).view(np.int64))
            return bits, int(to_keys(np.array([d], np.float64))[0])
        v = _int_delta(max(d, 1.0))
        return (v, v) if v else None

    def _batch_arrays(self, slot):
        """Group ``slot``'s device arrays, kept for the next batch (the distances for
        :data:`BATCH_MAX` sources and, with :data:`BATCH_SKIP`, the keys their arcs were last
        relaxed from: n * 512 bytes; the masks, frontiers, mid and far lists: n * 36). The
        groups' counters are rows of one array (``self._batch_cnts``: read back at once).
        :meth:`batch_bytes` bounds them."""
        sts = getattr(self, "_batches", None)
        if sts is None:
            sts = self._batches = []
            self._batch_cnts = self.cp.zeros((_GROUPS_CAP, 16), self.cp.uint64)
        while len(sts) <= slot:
            cp, n, m = self.cp, self.graph.n, int(self.block.indices.shape[0])
            cap = 2 * (m // BATCH_BIG_DEGREE) + 2  # pieces of a round's hubs (see rounds_kernel's big)
            sts.append({
                "dist": cp.empty(n * BATCH_MAX, cp.int64), "act": cp.zeros(max(n, 1), cp.uint32),
                "nact": cp.zeros(max(n, 1), cp.uint32), "front": cp.empty(max(n, 1), cp.int32),
                "next": cp.empty(max(n, 1), cp.int32), "cnt": self._batch_cnts[len(sts)],
                "nbig": cp.zeros(4, cp.uint64), "mid": cp.empty(max(n, 1), cp.int32),
                "midm": cp.empty(max(n, 1), cp.uint32), "far0": cp.empty(max(n, 1), cp.int32),
                "far1": cp.empty(max(n, 1), cp.int32), "farm": cp.zeros(max(n, 1), cp.uint32),
                "ph": cp.zeros(_PH_LEN, cp.int64), "big": cp.empty(cap, cp.int64), "bigm": cp.empty(cap, cp.uint32),
                "count": cp.zeros(32, cp.uint64),
                "rel": cp.empty(n * BATCH_MAX, cp.int64) if BATCH_SKIP else None})
        return sts[slot]

    @staticmethod
    def batch_bytes(n, m, groups=1):
        """Device bytes :meth:`run_batch` needs for a graph of n vertices and m arcs and batches
        of ``groups`` groups, an upper bound: each group's arrays (kept: the keys, the skip's, the
        masks, frontiers, mid and far lists, the hub pieces), 1 KB for the counters and 512 bytes
        a group for its small arrays, and the rows at the end of a batch (a group's gather and
        conversion to the rows' dtype, up to 24 bytes a distance at its peak) with the batch's
        other groups' rows and the last batch's still being copied to the host (8 bytes a
        distance at most)."""
        return groups * _group_bytes(n, m) + n * BATCH_MAX * (16 + 16 * groups) + 1024 + 512 * groups


def _group_bytes(n, m):
    """A batch group's kept arrays (:meth:`RoundsSSSP.batch_bytes`)."""
    keys = 8 * BATCH_MAX * (2 if BATCH_SKIP else 1)
    return n * (keys + 36) + (2 * (m // BATCH_BIG_DEGREE) + 2) * 12


def _batch_round(fns, args, grid, grid2):
    """One batched round's launches: the first pass and the second (mid list, hubs' pieces)
    on ``args[0]``, near-far's advance (one thread) on ``args[1]``."""
    fns[0]((grid,), (256,), args[0])
    fns[1]((grid2,), (256,), args[0])
    fns[2]((1,), (32,), args[1])


def run_rounds(graph, weights, source, comm, confirm, predecessors=False):
    """:class:`RoundsSSSP` for one source (collective; its exchange freed after)."""
    with Session(graph, weights, comm, mode="rounds") as s:
        return s.run(source, confirm, predecessors)


def _nvshmem_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("nvshmem") is not None


def run_auto(graph, weights, source, comm, confirm, *, queue="bq", remote="atomic", predecessors=False,
             delta=None, max_rounds=None):
    """``mode="auto"`` for one source (see :class:`Session`)."""
    with Session(graph, weights, comm, mode="auto", queue=queue, remote=remote, delta=delta,
                 max_rounds=max_rounds) as s:
        return s.run(source, confirm, predecessors)


def _batch_fits(graph, groups=1, held=0) -> bool:
    """Whether the batched rounds' arrays for ``groups`` groups (:meth:`RoundsSSSP.batch_bytes`;
    ``held``: bytes of them allocated already) take at most half the device memory this rank
    may use, CuPy's pool's cached blocks counted as free (else the sources run one at a time, or
    in one group): :func:`~distgraph.backends.gpu.memory.free_bytes`, so ``k`` ranks bound to
    one GPU (``split="sources"``) each plan with at most half of their ``1/k`` of it."""
    from .loader import import_cupy
    from .memory import free_bytes

    free = free_bytes(held, cp=import_cupy())
    return RoundsSSSP.batch_bytes(graph.n, graph.m, groups) <= free // 2


class Session:
    """The GPU Bellman-Ford engines of one graph, kept across runs from several sources
    (:class:`distgraph.algorithms.bellman_ford.BellmanFord`'s GPU side; collective).

    ``mode="rounds"``: :class:`RoundsSSSP`; ``"async"``: :class:`QueueSSSP`; ``"auto"``: the
    rounds for at most ``max_rounds`` rounds (default ``config.gpu_sssp_auto_rounds``), which
    settle low-diameter graphs (Kronecker: 11-12 rounds) at the rounds' speed; if they have not
    settled, the queue-driven kernel from scratch, which is 17-42x faster than the rounds on road
    networks (road-FLA needs 1973 rounds). The rounds stop sooner, at round
    ``config.gpu_sssp_auto_probe`` (16), when that round still reaches vertices for the first
    time (the source has vertices that far away: a road network). The queue kernel runs on the
    rounds' upload of the graph (no second upload), and the later runs of the session go
    straight to it (the graph is deep: ``stats["auto"]["chose"]`` is ``"async"`` with
    ``"sticky": True``). A negative cycle ends the rounds early ("below" the bound) or leaves
    them unsettled; either way it is found and confirmed as in the chosen mode. On several ranks
    without nvshmem4py the rounds run to the end (the queue kernel would need it). The same
    choice on every rank: the rounds' outcome is agreed by a collective sum each round (or the
    rounds run to the end everywhere).

    ``relabel``: ``"degree"`` runs the rounds on the graph renamed by degree
    (``RoundsSSSP(relabel="degree")``); ``"none"`` never; None renames once the rounds settled a
    run and the caller announced (``runs_left`` of :meth:`run`) at least
    ``config.gpu_sssp_relabel_runs`` more runs, which repay the renaming's set-up, unless the
    session runs batches (:meth:`run_batch`): their rounds ran no faster renamed.
    """

    def __init__(self, graph, weights, comm, *, mode="auto", queue="bq", remote="atomic", delta=None,
                 max_rounds=None, relabel=None, job_ranks=None):
        from ...runtime.config import config

        self.graph, self.w, self.comm = graph, weights, comm
        # the ranks running beside this one (split="sources": each alone on COMM_SELF): several
        # fault host pages in the rounds' place (the prefault) and copy rows with one thread each
        self.job_ranks = max(int(job_ranks or 1), comm.Get_size())
        self.mode, self.queue_kind, self.remote, self.delta, self.relabel = mode, queue, remote, delta, relabel
        self.cap = int(config.gpu_sssp_auto_rounds if max_rounds is None else max_rounds)
        self.probe = int(config.gpu_sssp_auto_probe)
        if mode == "auto" and comm.Get_size() > 1 and not all(comm.allgather(_nvshmem_available())):
            self.cap = graph.n  # no queue kernel to go on with: rounds to the end
        self.rounds = self.queue = None
        self.sink = None  # the rows the rounds fill in the background (run's defer)
        self.sticky = None  # auto: the stats of the first run the rounds left to the queue kernel
        self.settled = False  # some run settled in the rounds (renaming by degree may pay off)
        self.no_batch = False  # a batch left a source unsettled: one source at a time from then on
        self.batch_wide = False  # a batch's sums left int32's range: 8-byte keys from then on
        self.batching = False  # run_batch was called: no renaming by degree unless asked for
        self._batch_fits = None  # the batched rounds' arrays fit in half the free device memory
        self.batch_groups = 1  # groups a batch (BATCH_GROUPS once a batch proved the graph deep)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def flush(self):
        """Wait until every row of a deferred run is filled."""
        if self.sink is not None:
            self.sink.flush()

    def close(self):
        """Fill the deferred rows; free both engines' symmetric arrays (collective on several PEs)."""
        try:
            if self.sink is not None:
                self.sink.close()
                self.sink = None
        finally:
            for e in (self.rounds, self.queue):
                if e is not None:
                    e.close()
            self.rounds = self.queue = None

    def _rounds(self, runs_left):
        from ...runtime.config import config

        k = int(config.gpu_sssp_relabel_runs)  # 0 (or less): never
        # not for batches (the default): their rounds ran no faster renamed (a vertex's keys
        # share lines already), benchmarks/results/session20/ call 6
        want = self.relabel == "degree" or (self.relabel is None and k > 0 and self.settled and runs_left >= k
                                            and not self.batching)
        if self.rounds is not None and want and self.rounds.relabel is None:
            self.rounds.close()  # collective: runs_left and settled are the same on every rank
            self.rounds = None
        if self.rounds is None:
            self.rounds = RoundsSSSP(self.graph, self.w, self.comm, relabel="degree" if want else None)
            self.rounds.job_ranks = self.job_ranks
        return self.rounds

    def _queue(self):
        if self.queue is None:
            r = self.rounds
            # the rounds' upload of the graph (on several ranks only when distributed: this rank's block)
            block = r.block if r is not None and (self.comm.Get_size() == 1 or r.distributed) \
                and r.relabel is None else None
            if r is not None:
                r.close()  # collective: the rounds' exchange arrays (the block lives on in the queue)
                self.rounds = None
            del r  # a renamed block is freed before the queue uploads the graph
            self.queue = QueueSSSP(self.graph, self.w, self.comm, queue=self.queue_kind, remote=self.remote,
                                   delta=self.delta, block=block)
        return self.queue

    def _sink_threads(self, one):
        """The threads copying rows to the host: ``one`` when this rank runs alone, one for
        each of several ranks (split="sources")."""
        return one if self.job_ranks == 1 else 1

    def batch_size(self, predecessors=False):
        """How many sources :meth:`run_batch` takes at once now: 0 when it would not run
        (predecessors, the queue mode, a deep graph or a batch that left a source unsettled,
        several PEs per source, ``config.gpu_sssp_batch`` under 2, or too little device memory
        for the batch's arrays)."""
        from ...runtime.config import config

        k = min(int(config.gpu_sssp_batch), BATCH_MAX)
        if k < 2 or predecessors or self.mode == "async" or self.sticky is not None or self.no_batch \
                or self.comm.Get_size() > 1:
            return 0
        if self._batch_fits is None:
            self._rounds(0)  # the engine first (the graph on the device), then the free memory
            self._batch_fits = _batch_fits(self.graph)
        return k * self.batch_groups if self._batch_fits else 0

    def batch_rounds(self):
        """The rounds a batch may run before its unsettled sources run alone
        (``config.gpu_sssp_batch_rounds``, at most max(4n, 1024): a heuristic, no bound. Without
        near-far a source's rounds settle within n unless it reaches a negative cycle, which the
        kernels' bound key may flag sooner; near-far's far rounds add some)."""
        from ...runtime.config import config

        return max(1, min(int(config.gpu_sssp_batch_rounds), max(4 * self.graph.n, 1024)))

    def run_batch(self, sources, outs, runs_left=0):
        """Distances from ``sources`` (at most :meth:`batch_size`) at once
        (:meth:`RoundsSSSP.run_batch`) into the host rows ``outs``, filled in the background
        (read them after :meth:`flush`). Returns each source's stats, or None for a source
        whose rounds had not settled within ``max_rounds`` (the caller runs it by :meth:`run`);
        after such a batch the session runs one source at a time."""
        from ...runtime.config import config

        if self.sink is None:
            self.sink = _RowSink(threads=self._sink_threads(8))
        self.batching = True
        r = self._rounds(runs_left)
        res = r.run_batch(sources, outs, max_rounds=self.batch_rounds(), sink=self.sink,
                          wide=self.batch_wide, group=min(int(config.gpu_sssp_batch), BATCH_MAX))
        self.batch_wide = r.last_batch["keys"] == 8  # a sum past int32's range: 8-byte keys from now on
        want = min(max(int(BATCH_GROUPS), 1), _GROUPS_CAP)
        if r.last_batch["persistent_rounds"] >= BATCH_EXACT and self.batch_groups < want:
            # a deep graph (not a Kronecker batch's round or two past the first 16): several
            # groups' rounds in step from the next batch on, if they fit (group 0's arrays are
            # held already)
            held = _group_bytes(self.graph.n, self.graph.m)
            self.batch_groups = want if _batch_fits(self.graph, want, held) else self.batch_groups
        if any(x is None for x in res):
            self.no_batch = True  # a negative cycle or a deep graph: the single runs see to it
        if any(x is not None for x in res):
            self.settled = True
        for x in res:
            if x is not None:
                # the sink so far: its pinned buffers, and how long puts waited for one
                x.update(sink_pinned_bytes=self.sink.pinned_bytes, sink_wait_s=self.sink.wait_s)
                if self.mode == "auto":
                    x["auto"] = {"max_rounds": self.batch_rounds(), "chose": "rounds"}
        return res

    def run(self, source, confirm, predecessors=False, runs_left=0, out=None, defer=False):
        """``(dist, pred, stats, cycle)`` from ``source``; ``runs_left``: the runs the caller
        will make after this one (the same on every rank); ``out``: a host array for the
        rounds' distances (``RoundsSSSP.run``; the queue kernel makes its own); ``defer``
        (with ``out``, without ``predecessors``): the rounds fill ``out`` in the background
        (:class:`_RowSink`): read it after :meth:`flush`."""
        sink = None
        if defer and out is not None and not predecessors:
            if self.sink is None:
                self.sink = _RowSink(threads=self._sink_threads(4))
            sink = self.sink
        if self.mode == "async":
            return self._queue().run(source, confirm, predecessors)
        if self.mode == "rounds":
            res = self._rounds(runs_left).run(source, confirm, predecessors, out=out, sink=sink)
            self.settled = True
            return res
        if self.sticky is not None:
            res = self._queue().run(source, confirm, predecessors)
            res[2]["auto"] = dict(self.sticky, sticky=True)
            return res
        t0 = time.perf_counter()
        cap, probe, n = self.cap, self.probe, self.graph.n
        r = self._rounds(runs_left)
        # no probe when the rounds must run to the end (cap n: no queue kernel to go on with)
        res = r.run(source, confirm, predecessors, max_rounds=cap,
                    probe_round=probe if 0 < probe < cap < n else None, out=out, sink=sink)
        if res is not None:
            self.settled = True
            res[2]["auto"] = {"max_rounds": cap, "probe_round": probe, "chose": "rounds"}
            return res
        tried = {"max_rounds": cap, "probe_round": probe, "chose": "async", "rounds_s": time.perf_counter() - t0,
                 "rounds_stopped": r.last_stats["stopped"], "rounds_run": r.last_stats["rounds"],
                 "rounds_relaxations": r.last_stats["relaxations"]}
        self.sticky = {k: tried[k] for k in ("max_rounds", "probe_round", "chose")}
        res = self._queue().run(source, confirm, predecessors)
        res[2]["auto"] = tried
        return res
