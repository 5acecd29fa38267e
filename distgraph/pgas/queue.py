"""The Broker Queue (BQ) and the Broker Work Distributor (BWD), distributed over PEs.

Algorithm: Kerbl, Kenzel, Mueller, Schmalstieg, Steinberger, "The Broker Queue: A Fast,
Linearizable FIFO Queue for Fine-Granular Work Distribution on the GPU", ICS 2018 (restated in
``../shared/notes/broker-queue.md``), distributed as in Sec. III-B of the multi-GPU queue paper
(``../shared/papers/003_2f1f88597b3d0e64.txt``): the global queue is cut into one *segment* per
PE, each segment living in its owner's symmetric heap, every PE operating on any segment with
remote atomics on its count/head/tail and remote put/get on its ring slots.

State of one segment (symmetric arrays, so every PE has the same layout)

``meta``     int64[3 * 8]: ``count`` at 0, ``head`` at 8, ``tail`` at 16 (one 64-byte line each).
             ``count`` is the broker: enqueue reservations minus dequeue reservations, in [0, N]
             once settled. ``head``/``tail`` are 64-bit positions that never wrap.
``tickets``  int64[N]: slot P is free for round r when ``tickets[P] == 2r``, full when ``2r+1``.
``ring``     item[N, width]: the slots; an item is ``width`` elements of ``dtype``.

Position ``pos`` is slot ``pos % N`` in round ``pos // N``. The GPU device code in
``kernels/broker_queue.cuh`` uses exactly this layout and protocol, so a segment written by one
backend's rules reads by the other's.

Operations (``k`` items at a time: a batch is one reservation, as a warp-aggregated one on GPUs)

``ensure_enqueue(k)``  ``num = count; while num + k <= N: if fetch_add(count, k) + k <= N: ok;
                       num = fetch_add(count, -k) - k`` (undo, look again); else no room.
                       (The MPI code tries one ``fetch_add`` before the first load: one round
                       trip fewer when there is room.)
``ensure_dequeue(k)``  ``num = count; while num > 0: t = min(k, num); old = fetch_add(count, -t);``
                       ``if old >= t: got t; if old > 0: give back t - old, got old; undo``.
``put``                ``pos = fetch_add(tail, k)``; wait ``tickets == 2r``; write slots; flush;
                       ``tickets = 2r + 1``.
``take``               ``pos = fetch_add(head, m)``; wait ``tickets == 2r + 1``; read slots;
                       ``tickets = 2r + 2``.
BQ                     repeats ``ensure_*`` until it succeeds or the queue is provably FULL
                       (``tail - head > N - k``, reading tail then head) or EMPTY
                       (``tail - head <= 0``, reading head then tail). Each pair of reads bounds
                       the true difference at the instant of the second read, which is where
                       FULL/EMPTY linearize (the GPU original reads both in one 64-bit load).
BWD                    one ``ensure_*`` attempt; FULL/EMPTY may be spurious while other
                       reservations and undos move ``count``: callers treat EMPTY as "look again
                       or check termination", never as proof.

A PE that reserved must finish its put/take: other PEs spin on its tickets.

Layouts: ``"distributed"`` (one segment per PE; ``pe=None`` enqueues round-robin over the
segments starting at one's own and dequeues from one's own segment first, then the others) or
``"centralized"`` (one segment, on PE 0: Fig. 2a of the paper; a linearizable FIFO across PEs
for the BQ). ``check_history`` and ``check_linearizable`` verify recorded histories.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import InvalidArgumentError, expect

__all__ = ["BrokerQueue", "check_history", "check_linearizable", "COUNT", "HEAD", "TAIL", "META_SIZE"]

COUNT, HEAD, TAIL = 0, 8, 16
META_SIZE = 24
KINDS = ("bq", "bwd")
LAYOUTS = ("distributed", "centralized")


def _check_args(capacity, dtype, width, kind, layout) -> dict:
    """This PE's arguments, validated, by name (the dtype as its ``str``)."""
    expect(isinstance(capacity, (int, np.integer)) and not isinstance(capacity, bool) and capacity >= 2
           and capacity & (capacity - 1) == 0, "capacity", "a power of two >= 2", capacity)
    expect(isinstance(width, (int, np.integer)) and not isinstance(width, bool) and width >= 1,
           "width", "a positive integer", width)
    expect(kind in KINDS, "kind", f"one of {KINDS}", kind)
    expect(layout in LAYOUTS, "layout", f"one of {LAYOUTS}", layout)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    expect(dt is not None, "dtype", "a numpy dtype", dtype)
    return {"capacity": int(capacity), "dtype": dt.str, "width": int(width), "kind": kind, "layout": layout}


def _check_symmetric(pgas, capacity, dtype, width, kind, layout) -> None:
    """Validate the arguments on every PE and check that they agree (collective).

    The segments are symmetric: every PE allocates the same arrays, and an operation on a
    remote segment indexes the owner's ring with this PE's capacity and width (different
    capacities: NVSHMEM allocations of different sizes, items written into wrong slots; a
    different kind on the GPU: another kernel's protocol). A bad or mismatched argument on
    one PE raises the same error on every PE, before any allocation (not a hang in the
    first collective allocation, or a corrupted queue)."""
    from ..runtime.abort import collective_check

    err, args = None, {}
    try:
        args = _check_args(capacity, dtype, width, kind, layout)
    except InvalidArgumentError as e:
        err = e
    collective_check(pgas.comm if pgas.n_pes > 1 else None, err, args,
                     "the queue's segments are symmetric", unit="PE")


class BrokerQueue:
    """A BQ or BWD whose segments live in the symmetric heaps of the PEs (collective).

    Parameters
    ----------
    capacity : int
        Slots per segment, a power of two >= 2. It and the other arguments but ``pgas`` must
        be the same on every PE: they are compared over the PEs before any allocation, and a
        bad or differing one raises the same :class:`~distgraph.errors.InvalidArgumentError`
        on every PE.
    dtype : numpy dtype, default int64
        Element type of the items.
    width : int, default 1
        Elements per item (e.g. 2 for a (vertex, distance) pair of int64).
    kind : {"bq", "bwd"}
        Linearizable Broker Queue or the cheaper Broker Work Distributor.
    layout : {"distributed", "centralized"}
        One segment per PE, or a single segment on PE 0.
    pgas : PGAS, optional
        Default: :func:`distgraph.pgas.get_pgas` for the context's backend.

    Notes
    -----
    On the CPU (MPI-RMA PGAS) the host methods ``enqueue``/``dequeue`` and their batch forms
    run the protocol with MPI one-sided atomics. On the GPU (NVSHMEM PGAS) the items move in
    device code (``kernels/broker_queue.cuh``); the handle allocates, resets, inspects and
    frees the segments and hands their addresses to kernels (:meth:`device_args`).

    Examples
    --------
    >>> q = BrokerQueue(8, kind="bq")                    # doctest: +SKIP
    >>> q.enqueue(5), q.dequeue(), q.dequeue()
    (True, 5, None)
    >>> q.free()
    """

    def __init__(self, capacity: int, dtype="int64", width: int = 1, kind: str = "bq",
                 layout: str = "distributed", pgas=None):
        if pgas is None:
            from . import get_pgas

            pgas = get_pgas()
        _check_symmetric(pgas, capacity, dtype, width, kind, layout)
        self.pg = pgas
        self.capacity = int(capacity)
        self.width = int(width)
        self.kind = kind
        self.layout = layout
        self.dtype = np.dtype(dtype)
        self.nseg = pgas.n_pes if layout == "distributed" else 1
        self.meta = pgas.array(META_SIZE, "int64")
        self.tickets = pgas.array(self.capacity, "int64")
        self.ring = pgas.array((self.capacity, self.width), self.dtype)
        self._cursor = pgas.my_pe % self.nseg
        self._freed = False
        self._host = pgas.name == "mpi-rma"

    # -- lifecycle ------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty every segment (collective; no operation may be in flight)."""
        self.pg.barrier()
        self._zero_local()
        self.pg.barrier()
        self._cursor = self.pg.my_pe % self.nseg

    def _zero_local(self):
        for a in (self.meta, self.tickets, self.ring):
            a.local[...] = 0
        if not self._host:
            import cupy

            cupy.cuda.runtime.deviceSynchronize()

    def free(self) -> None:
        """Release the symmetric arrays (collective)."""
        if not self._freed:
            self._freed = True
            for a in (self.ring, self.tickets, self.meta):
                self.pg.free(a)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False

    def inspect(self, pe: int | None = None) -> list[dict] | dict:
        """``{"count", "head", "tail", "size"}`` of segment ``pe`` (all segments when None).

        One-sided atomic reads, no synchronisation: a snapshot while others operate."""
        if pe is not None:
            pe = self._seg(pe)
        segs = range(self.nseg) if pe is None else [pe]
        out = []
        for s in segs:
            if self._host:
                c = self.pg.atomic_fetch(self.meta, s, COUNT)
                h = self.pg.atomic_fetch(self.meta, s, HEAD)
                t = self.pg.atomic_fetch(self.meta, s, TAIL)
            else:
                c, h, t = self.pg.peek(self.meta, s, [COUNT, HEAD, TAIL])
            out.append({"segment": s, "count": int(c), "head": int(h), "tail": int(t), "size": int(t - h)})
        return out if pe is None else out[0]

    def device_args(self) -> tuple:
        """``(ring_ptr, tickets_ptr, meta_ptr, capacity, width, nseg)`` for the kernels (GPU)."""
        return (self.ring.ptr, self.tickets.ptr, self.meta.ptr, self.capacity, self.width, self.nseg)

    def _seg(self, pe) -> int:
        if not isinstance(pe, (int, np.integer)) or not 0 <= pe < self.nseg:
            raise InvalidArgumentError(f"pe must be a segment in [0, {self.nseg}); got {pe!r}")
        return int(pe)

    def _need_host(self):
        if not self._host:
            raise InvalidArgumentError(
                "host enqueue/dequeue need the CPU (MPI-RMA) PGAS; on GPUs items move in device code "
                "(kernels/broker_queue.cuh) and the handle only allocates, resets, inspects and frees")

    # -- the broker -----------------------------------------------------------------------
    def _ensure_enqueue(self, s: int, k: int) -> bool:
        # One round trip fewer than the GPU code in the common case: reserve first, look after
        # (count may overshoot N for a moment, exactly as when two reservations race on the GPU).
        pg, N = self.pg, self.capacity
        if pg.atomic_fetch_add(self.meta, k, s, COUNT) + k <= N:
            return True
        num = pg.atomic_fetch_add(self.meta, -k, s, COUNT) - k
        while num + k <= N:
            if pg.atomic_fetch_add(self.meta, k, s, COUNT) + k <= N:
                return True
            num = pg.atomic_fetch_add(self.meta, -k, s, COUNT) - k
        return False

    def _ensure_dequeue(self, s: int, k: int) -> int:
        pg = self.pg
        num = pg.atomic_fetch(self.meta, s, COUNT)
        while num > 0:
            t = min(k, num)
            old = pg.atomic_fetch_add(self.meta, -t, s, COUNT)
            if old >= t:
                return t
            if old > 0:
                pg.atomic_fetch_add(self.meta, t - old, s, COUNT)
                return old
            num = pg.atomic_fetch_add(self.meta, t, s, COUNT) + t
        return 0

    def _slots(self, pos: int, k: int):
        """Contiguous slot ranges of positions [pos, pos + k): (slot, count, first position)."""
        N = self.capacity
        s0 = pos % N
        first = min(k, N - s0)
        out = [(s0, first, pos)]
        if first < k:
            out.append((0, k - first, pos + first))
        return out

    def _wait_tickets(self, s, slot, c, p0, odd):
        from .mpi_rma import Backoff

        exp = 2 * ((p0 + np.arange(c, dtype=np.int64)) // self.capacity) + odd
        buf = np.empty(c, np.int64)
        bo = Backoff(f"queue tickets of segment {s}")
        while True:
            self.pg.atomic_fetch_range(self.tickets, s, slot, c, out=buf)
            if np.array_equal(buf, exp):
                return exp
            bo.wait()

    def _put(self, s: int, items: np.ndarray) -> None:
        k = items.shape[0]
        pos = self.pg.atomic_fetch_add(self.meta, k, s, TAIL)
        done = 0
        rw = self.ring._impl.win
        for slot, c, p0 in self._slots(pos, k):
            exp = self._wait_tickets(s, slot, c, p0, 0)
            src = np.ascontiguousarray(items[done:done + c]).reshape(-1)
            rw.Put(src, s, target=(slot * self.width, src.size, self.ring._impl.mpitype))
            rw.Flush(s)
            self.pg.atomic_set_range(self.tickets, exp + 1, s, slot)
            done += c

    def _take(self, s: int, m: int) -> np.ndarray:
        pos = self.pg.atomic_fetch_add(self.meta, m, s, HEAD)
        out = np.empty((m, self.width), self.dtype)
        done = 0
        for slot, c, p0 in self._slots(pos, m):
            exp = self._wait_tickets(s, slot, c, p0, 1)
            self.pg.get(self.ring, s, slot * self.width, c * self.width, out=out[done:done + c].reshape(-1))
            self.pg.atomic_set_range(self.tickets, exp + 1, s, slot)
            done += c
        return out

    def _full(self, s: int, k: int) -> bool:
        t = self.pg.atomic_fetch(self.meta, s, TAIL)
        h = self.pg.atomic_fetch(self.meta, s, HEAD)
        return t - h > self.capacity - k

    def _empty(self, s: int) -> bool:
        h = self.pg.atomic_fetch(self.meta, s, HEAD)
        t = self.pg.atomic_fetch(self.meta, s, TAIL)
        return t - h <= 0

    def _enqueue_seg(self, s: int, items: np.ndarray) -> bool:
        from .mpi_rma import Backoff

        k = items.shape[0]
        bo = None
        while not self._ensure_enqueue(s, k):
            if self.kind == "bwd" or self._full(s, k):
                return False
            bo = bo or Backoff(f"room in queue segment {s}")
            bo.wait()
        self._put(s, items)
        return True

    def _dequeue_seg(self, s: int, k: int) -> np.ndarray | None:
        from .mpi_rma import Backoff

        bo = None
        while True:
            m = self._ensure_dequeue(s, k)
            if m:
                return self._take(s, m)
            if self.kind == "bwd" or self._empty(s):
                return None
            bo = bo or Backoff(f"an item in queue segment {s}")
            bo.wait()

    # -- public host operations (CPU) -----------------------------------------------------
    def _as_items(self, items) -> np.ndarray:
        a = np.asarray(items, dtype=self.dtype)
        if self.width == 1 and a.ndim <= 1:
            a = a.reshape(-1, 1)
        if a.ndim != 2 or a.shape[1] != self.width:
            raise InvalidArgumentError(f"items must have shape (k, {self.width}); got {np.shape(items)}")
        if a.shape[0] > self.capacity:
            raise InvalidArgumentError(f"a batch must hold at most capacity={self.capacity} items; got {a.shape[0]}")
        return a

    def enqueue_many(self, items, pe: int | None = None) -> bool:
        """Enqueue a batch (one reservation): True, or False (FULL: nothing enqueued).

        ``pe=None``: segment chosen round-robin, the next segments tried on FULL."""
        self._need_host()
        a = self._as_items(items)
        if a.shape[0] == 0:
            return True
        if pe is not None:
            return self._enqueue_seg(self._seg(pe), a)
        for i in range(self.nseg):
            s = (self._cursor + i) % self.nseg
            if self._enqueue_seg(s, a):
                self._cursor = (s + 1) % self.nseg
                return True
        return False

    def dequeue_many(self, k: int, pe: int | None = None) -> np.ndarray:
        """Dequeue up to ``k`` items (one reservation): shape (m, width), m == 0 for EMPTY.

        ``pe=None``: one's own segment first, then the others."""
        self._need_host()
        expect(isinstance(k, (int, np.integer)) and 1 <= k <= self.capacity, "k", f"in [1, {self.capacity}]", k)
        segs = [self._seg(pe)] if pe is not None else [(self.pg.my_pe + i) % self.nseg for i in range(self.nseg)]
        for s in segs:
            got = self._dequeue_seg(s, int(k))
            if got is not None:
                return got
        return np.empty((0, self.width), self.dtype)

    def enqueue(self, item, pe: int | None = None) -> bool:
        """Enqueue one item: True, or False when FULL (BWD: possibly spuriously)."""
        return self.enqueue_many(np.asarray(item, self.dtype).reshape(1, self.width), pe)

    def dequeue(self, pe: int | None = None):
        """Dequeue one item (a scalar when width == 1), or None when EMPTY (BWD: maybe spurious)."""
        got = self.dequeue_many(1, pe)
        if got.shape[0] == 0:
            return None
        return got[0, 0].item() if self.width == 1 else got[0]


# ---------------------------------------------------------------------------------------
# Verifiers of recorded histories. An event is (invoke_time, response_time, op, value) with
# op "enq" (value: the item, result True/False in a 5th field) or "deq" (value: item or None).
# ---------------------------------------------------------------------------------------

def check_history(events, domains=None) -> list[str]:
    """FIFO-queue violations in a history with distinct enqueued values (empty list: none).

    The four patterns of Henzinger, Sezgin and Vafeiadis (CONCUR 2013), whose absence makes a
    history with distinct values of an unbounded queue linearizable: VFresh (a value dequeued
    that no enqueue started before), VRepet (a value dequeued twice), VOrd (``enq(a)`` before
    ``enq(b)`` but ``deq(b)`` before ``deq(a)``, or ``a`` never dequeued), VWit (an EMPTY
    dequeue whose whole interval is covered by values certainly in the queue).
    Events: ``(t_invoke, t_response, "enq", value, ok)`` and ``(t_invoke, t_response, "deq", value)``
    with ``value`` None for EMPTY; failed (FULL) enqueues are ignored.

    ``domains``, optional, one key per event: the clock that timed it. Times of different
    clocks cannot be compared (each GPU's ``%globaltimer`` runs on its own: PEs on two GPUs
    disagree by more than an operation lasts), so the real-time patterns (VFresh's "before",
    VOrd, VWit) are then only checked among events of one clock; a value dequeued that no
    one enqueued, and VRepet, are checked across all.
    """
    dom = list(domains) if domains is not None else [0] * len(events)
    if len(dom) != len(events):
        raise ValueError(f"domains must have one key per event; got {len(dom)} for {len(events)} events")
    enq, deq, empties, errs = {}, {}, [], []
    for e, d in zip(events, dom):
        if e[2] == "enq":
            if len(e) < 5 or e[4]:
                if e[3] in enq:
                    errs.append(f"value {e[3]} enqueued twice (values must be distinct)")
                enq[e[3]] = (e[0], e[1], d)
        elif e[3] is None:
            empties.append((e[0], e[1], d))
        else:
            if e[3] in deq:
                errs.append(f"VRepet: value {e[3]} dequeued twice")
            deq[e[3]] = (e[0], e[1], d)
    for v, (i, r, d) in deq.items():
        if v not in enq:
            errs.append(f"VFresh: value {v} dequeued but never enqueued")
        elif enq[v][2] == d and enq[v][0] > r:
            errs.append(f"VFresh: value {v} dequeued (response at {r}) before its enqueue began ({enq[v][0]})")
    inf = float("inf")
    vals = sorted(enq, key=lambda v: enq[v][1])
    for a, b in itertools.permutations(vals, 2):
        if enq[a][2] == enq[b][2] and enq[a][1] < enq[b][0] and b in deq:
            da = deq.get(a, (inf, inf, deq[b][2]))
            if da[2] == deq[b][2] and deq[b][1] < da[0]:
                errs.append(f"VOrd: enq({a}) precedes enq({b}) but deq({b}) precedes deq({a})")
    for (i, r, d) in empties:
        # Values certainly in the queue over (enq response, deq invocation), on this clock.
        spans = sorted((enq[v][1], deq.get(v, (inf, inf, d))[0]) for v in enq
                       if enq[v][2] == d and deq.get(v, (0, 0, d))[2] == d)
        t = i
        for lo, hi in spans:
            if lo < t and hi > t:
                t = hi
        if t > r:
            errs.append(f"VWit: EMPTY over [{i}, {r}] while the queue was certainly non-empty")
    return errs


def check_linearizable(events, capacity: int | None = None) -> bool:
    """Exact linearizability of a small history of a bounded FIFO queue (Wing & Gong search).

    Events as for :func:`check_history` (FULL enqueues included: ``ok`` False). Exponential in
    the worst case, memoized on (linearized set, queue contents); meant for a few dozen events.
    """
    ev = sorted(events, key=lambda e: e[0])
    n = len(ev)
    cap = capacity if capacity is not None else n + 1
    seen = set()

    def step(done: int, q: tuple) -> bool:
        if done == (1 << n) - 1:
            return True
        key = (done, q)
        if key in seen:
            return False
        seen.add(key)
        # Candidates: pending ops invoked before the earliest response among pending ops.
        first_resp = min(ev[j][1] for j in range(n) if not done >> j & 1)
        for j in range(n):
            if done >> j & 1 or ev[j][0] > first_resp:
                continue
            e = ev[j]
            if e[2] == "enq":
                ok = e[4] if len(e) > 4 else True
                if ok and len(q) < cap and step(done | 1 << j, q + (e[3],)):
                    return True
                if not ok and len(q) >= cap and step(done | 1 << j, q):
                    return True
            else:
                if e[3] is None:
                    if not q and step(done | 1 << j, q):
                        return True
                elif q and q[0] == e[3] and step(done | 1 << j, q[1:]):
                    return True
        return False

    return step(0, ())
