"""Distributed Bellman-Ford on the CPU: numba kernels, a round-synchronous driver and a
queue-driven asynchronous driver over the MPI-RMA Broker Queue.

Algorithm
---------
Label-correcting Bellman-Ford with a worklist (Bellman-Ford-Moore): only vertices whose
distance improved are scanned again. Rank ``r`` owns the vertex block ``[lo, hi)`` of
:func:`distgraph.graph.partition.partition_by_edges` and its out-arcs; it alone writes
``dist``/``pred`` of its vertices. An arc ``u -> v`` whose head another rank owns becomes
a *remote relaxation* ``(v, d(u) + w, u)`` for ``v``'s owner. The local worklist is a
deque with Bertsekas' SLF rule ("small label first": a vertex whose distance is below the
head's is pushed at the front), which on road graphs cuts the scans from about 20 per
arc (plain FIFO) to about 2.

``rounds`` (bulk-synchronous): in a round every rank works its worklist in place until it
is empty (or ``budget`` arcs were scanned), then the best candidate per remote vertex
travels in one ``Alltoallv`` and the improving ones join the owners' worklists. The run
ends when an ``Allreduce`` finds every worklist empty. Rounds count how often shortest
paths cross block boundaries, not their length. Near-far order across the ranks: only
vertices at most a threshold are scanned; the others wait in a far list (``in_q == 2``),
and when no rank has work below the threshold (after the round's exchange: none is in
flight) an ``Allreduce`` finds the smallest waiting distance and the threshold rises to it
plus ``delta`` (:func:`rounds_delta`: 16 mean weights). Without it a block floods its
vertices from the first, far boundary value it receives, and nearer ones then correct them
(road-FLA on 2 ranks: 13x the relaxations).

``async`` (queue-driven, Sec. III-C of ../shared/papers/003, "multi-GPU Bellman-Ford"):
each rank owns one segment of a distributed BQ/BWD (:class:`distgraph.pgas.queue.
BrokerQueue`, items ``(v, candidate, u)`` of three int64). A rank alternates between
draining its segment, scanning a batch of its worklist and shipping the batch's remote
relaxations one-sidedly, in one of two ways:

* ``remote="enqueue"``: the triples are enqueued into the owner's segment; the owner
  dequeues them and keeps the improving ones;
* ``remote="atomic"``: first an atomic minimum on the owner's distance
  (:meth:`distgraph.pgas.PGAS.atomic_min_many`: one ``MPI_Get_accumulate(MPI_MIN)`` per
  batch and owner, on an indexed datatype: atomic per element, the compare-and-swap loop
  of a GPU done by the MPI library), then only the
  triples that lowered it are enqueued (so the owner learns the tail and rescans).

Termination detection: every rank counts items it enqueued (``sent``) and dequeued
(``recv``); waves of non-blocking ``Iallreduce`` sum ``(sent, recv, busy)``; the run ends
at the second consecutive wave that shows no busy rank and ``sent == recv`` with the
same totals (Mattern's four-counter method), so no work is in any queue or in flight.

Distances are the unique fixed point ``d(v) = min(d(v), d(u) + w)`` (sums in int64 or
float64; the minimum over paths of the rounded path sums), whatever the order of the
relaxations, so they do not depend on the driver or the number of ranks. Predecessors
are recomputed from them at the end (:func:`_finish`): the smallest tail of a tight arc,
the same tree for any run, unless tight arcs close a zero-weight cycle.

Negative cycles (both drivers): any cycle of the predecessor graph has negative weight
(Tarjan; Cherkassky and Goldberg, "Negative-cycle detection algorithms", Math. Prog.
1999), and once some distance falls below ``-B`` (``B``: the sum of the magnitudes of
the negative arc weights) the predecessor graph must contain one. So the drivers gather
the predecessor array and walk it for a cycle ("walk to root") whenever about ``n``
vertex scans happened since the last look, or a distance fell below ``-B``; a cycle
found is returned only when the caller's ``confirm`` recomputes a negative weight. Which
negative cycle is found first may depend on the number of ranks.

Failures (issue 7): an exception on one rank (a bad weight, ``MemoryError``, a bug,
``KeyboardInterrupt``) must not leave the other ranks waiting. The failing rank stops
working but keeps joining the drivers' collective steps, carrying a flag: in ``rounds``
it sends nothing and sets the flag in the round's ``Allreduce``; in ``async`` it posts
the flag in its next termination wave (a sixth counter). Every rank leaves the loop
after the same round or wave, the async driver frees the queue collectively, and all
raise the first failing rank's error (:func:`distgraph.runtime.abort.collective_raise`:
same type and message). A failure while a rank builds its state (out of memory) is
raised on every rank before the first collective step. Not covered: an error inside an
MPI call itself, or inside a queue operation between reserving slots and filling them
(other ranks spin on those tickets).

Exact bound: for integer weights ``B`` is summed exactly (Python ints; float64 would
round above 2^53), for float weights in float64 with a relative margin.

State arrays (per rank, ``nl = hi - lo`` owned vertices; distances in the *work dtype*,
int64 for integer weights and float64 for float weights)
``dist[nl]``      distance of owned vertex ``lo + i``; ``INF`` (int64 max or +inf) unreached
``pred[nl]``      int64 tail of the arc that gave ``dist``, ``-1`` for none
``wl[nl]``, ``in_q[nl]``, ``ht[3]``  the worklist: a ring of local ids, membership flags
                  (1: in the worklist, 2: in the far list), (head, count, far count)
``far[nl]``       the far list of the rounds' near-far order: vertices above the threshold
                  ``thr`` (INF in the async driver: none)
``cand_d/cand_p`` size ``n``: the best pending candidate per remote vertex (``cand_p < 0``:
                  none)
``sent[n]``       best candidate ever sent for a remote vertex (a later, larger one is
                  pointless: the owner already holds something at least as small)
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ...runtime.abort import collective_raise

__all__ = ["run_rounds", "run_async", "find_pred_cycle", "work_dtype", "INF_OF"]

# What a driver catches on one rank to stop every rank together and raise it on all of
# them (see "Failures" in the module docstring); anything else (SystemExit) propagates.
_FAILURES = (Exception, KeyboardInterrupt)


def work_dtype(weight_dtype) -> np.dtype:
    """int64 for integer weights, float64 for float weights."""
    return np.dtype(np.int64) if np.dtype(weight_dtype).kind in "iub" else np.dtype(np.float64)


def INF_OF(dtype):
    dt = np.dtype(dtype)
    return dt.type(np.inf) if dt.kind == "f" else dt.type(np.iinfo(dt).max)


def to_output_dtype(dist, dt, xp=np):
    """The distances ``dist`` (the work dtype, int64 or float64; unreached: :func:`INF_OF`) in
    the caller's dtype ``dt`` (the weights'), unreached ones the dtype's maximum (ints) or inf;
    integer distances out of ``dt``'s range raise :class:`~distgraph.errors.GraphValueError`.
    ``xp``: the array module of ``dist`` (NumPy, or CuPy: the GPU rounds convert each row on
    the device before copying it, reading back only the two extremes)."""
    from ...errors import GraphValueError

    dt = np.dtype(dt)
    if dist.dtype == dt:
        return dist
    if dt.kind != "i" or dist.size == 0:
        return dist.astype(dt)
    top, info = np.iinfo(dist.dtype), np.iinfo(dt)
    fin = dist != top.max
    lo, hi = xp.stack([xp.where(fin, dist, top.max).min(), xp.where(fin, dist, top.min).max()]).tolist()
    if lo <= hi and (lo < info.min or hi >= info.max):  # lo > hi: no finite distance
        raise GraphValueError(f"distances overflow {dt} (range [{lo}, {hi}]); pass int64 weights")
    return xp.where(fin, dist, info.max).astype(dt)


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _pack(tr, ntr, offsets, cand_d, cand_bits, cand_p, sent, inf, sendbuf, counts):
    """Sort the remote candidates by vertex (so by owner), write triples, reset them."""
    t = np.sort(tr[:ntr])
    counts[:] = 0
    r = 0
    for i in range(ntr):
        v = t[i]
        while v >= offsets[r + 1]:
            r += 1
        counts[r] += 3
        sendbuf[3 * i] = v
        sendbuf[3 * i + 1] = cand_bits[v]
        sendbuf[3 * i + 2] = cand_p[v]
        sent[v] = cand_d[v]
        cand_d[v] = inf
        cand_p[v] = -1


@njit(cache=True)
def _push(wl, in_q, ht, vl, dist):
    """Append ``vl`` to the worklist unless it is in it; with the SLF rule (Bertsekas'
    "small label first") a vertex whose distance is below the head's goes to the front.
    A vertex waiting in the far list (``in_q == 2``) moves to the worklist."""
    if in_q[vl] != 1:
        in_q[vl] = 1
        nl = wl.shape[0]
        if ht[1] > 0 and dist[vl] < dist[wl[ht[0]]]:
            ht[0] = (ht[0] - 1 + nl) % nl
            wl[ht[0]] = vl
        else:
            wl[(ht[0] + ht[1]) % nl] = vl
        ht[1] += 1


@njit(cache=True)
def _push_nf(wl, in_q, ht, far, vl, dist, thr):
    """:func:`_push` for a vertex whose distance is at most ``thr``; a larger one waits in
    the far list ``far`` (``ht[2]`` entries, ``in_q == 2``) until the threshold passes it."""
    if dist[vl] <= thr:
        _push(wl, in_q, ht, vl, dist)
    elif in_q[vl] == 0:
        in_q[vl] = 2
        far[ht[2]] = vl
        ht[2] += 1


@njit(cache=True)
def _far_min(far, in_q, ht, dist, inf):
    """The smallest distance in the far list (``inf`` if it holds none)."""
    m = inf
    for i in range(ht[2]):
        v = far[i]
        if in_q[v] == 2 and dist[v] < m:
            m = dist[v]
    return m


@njit(cache=True)
def _far_advance(far, in_q, ht, wl, dist, thr):
    """Move the far list's vertices at most ``thr`` to the worklist; keep the others
    (entries of vertices that left the far list meanwhile are dropped)."""
    j = 0
    for i in range(ht[2]):
        v = far[i]
        if in_q[v] != 2:
            continue
        if dist[v] <= thr:
            _push(wl, in_q, ht, v, dist)
        else:
            far[j] = v
            j += 1
    ht[2] = j


@njit(cache=True)
def _process(wl, in_q, ht, lo, hi, indptr, indices, w, dist, pred, sent, cand_d, cand_p, tr, budget, bound,
             far, thr):
    """Scan worklist vertices in place (Gauss-Seidel) until ``budget`` arcs are scanned.
    Local improvements are pushed at once; remote candidates collect in ``cand_*``/``tr``.
    Vertices above ``thr`` wait in the far list instead (:func:`_push_nf`; ``thr`` = INF:
    none do). Returns (#remote touched, arcs, scans, below)."""
    ntr = 0
    arcs = 0
    scans = 0
    below = 0
    nl = wl.shape[0]
    while ht[1] > 0 and arcs < budget:
        ul = wl[ht[0]]
        ht[0] = (ht[0] + 1) % nl
        ht[1] -= 1
        in_q[ul] = 0
        du = dist[ul]  # at most thr: it was when pushed, and thr never falls
        u = ul + lo
        scans += 1
        a = indptr[ul]
        b = indptr[ul + 1]
        arcs += b - a
        for k in range(a, b):
            v = indices[k]
            c = du + w[k]
            if lo <= v < hi:
                vl = v - lo
                if c < dist[vl]:
                    dist[vl] = c
                    pred[vl] = u
                    if c < bound:
                        below = 1
                    _push_nf(wl, in_q, ht, far, vl, dist, thr)
            elif c < sent[v]:
                if cand_p[v] < 0:
                    cand_d[v] = c
                    cand_p[v] = u
                    tr[ntr] = v
                    ntr += 1
                elif c < cand_d[v] or (c == cand_d[v] and u < cand_p[v]):
                    cand_d[v] = c
                    cand_p[v] = u
    return ntr, arcs, scans, below


@njit(cache=True)
def _absorb(items, vals, lo, dist, pred, wl, in_q, ht, bound, far, thr):
    """Apply dequeued ``(v, candidate, u)`` triples; improved vertices join the worklist
    (or the far list, above ``thr``)."""
    below = 0
    for i in range(items.shape[0]):
        v = items[i, 0]
        c = vals[i, 1]
        if c < dist[v - lo]:
            dist[v - lo] = c
            pred[v - lo] = items[i, 2]
            if c < bound:
                below = 1
            _push_nf(wl, in_q, ht, far, v - lo, dist, thr)
    return below


@njit(cache=True)
def _tight_min_pred(lo, hi, indptr, indices, w, d, inf, best):
    """``best[v] = min(best[v], u)`` over the tight arcs ``u -> v`` (``d[u] + w == d[v]``)
    leaving this rank's reached vertices; ``d`` is the whole distance array."""
    for ul in range(hi - lo):
        du = d[ul + lo]
        if du == inf:
            continue
        for k in range(indptr[ul], indptr[ul + 1]):
            v = indices[k]
            if d[v] != inf and du + w[k] == d[v] and ul + lo < best[v]:
                best[v] = ul + lo


@njit(cache=True)
def find_pred_cycle(pred):
    """A vertex on a cycle of the functional graph ``v -> pred[v]`` (``-1`` ends a chain),
    the first found scanning ``v = 0, 1, ...``; ``-1`` when there is none."""
    n = pred.shape[0]
    state = np.zeros(n, np.int8)  # 0 new, 1 on the current walk, 2 finished
    for s in range(n):
        if state[s] != 0:
            continue
        v = s
        while v >= 0 and state[v] == 0:
            state[v] = 1
            v = pred[v]
        hit = -1
        if v >= 0 and state[v] == 1:
            hit = v
        u = s
        while u >= 0 and state[u] == 1:
            state[u] = 2
            u = pred[u]
        if hit >= 0:
            return hit
    return -1


def cycle_from_pred(pred, v):
    """The cycle through ``v`` of the predecessor graph, in arc order, from its smallest id."""
    cyc = [int(v)]
    u = int(pred[v])
    while u != v:
        cyc.append(u)
        u = int(pred[u])
    cyc.reverse()  # pred points backwards along arcs
    i = cyc.index(min(cyc))
    return cyc[i:] + cyc[:i]


# --------------------------------------------------------------------------- plumbing
def _setup(graph, weights, source, comm):
    from ...graph.partition import partition_by_edges

    size, rank = comm.Get_size(), comm.Get_rank()
    part = partition_by_edges(graph.indptr, size)
    lo, hi = part.range(rank)
    a, b = int(graph.indptr[lo]), int(graph.indptr[hi])
    indptr = np.asarray(graph.indptr[lo:hi + 1], dtype=np.int64) - a
    indices = np.asarray(graph.indices[a:b])
    wdt = work_dtype(weights.dtype) if weights is not None else np.dtype(np.int64)
    # a view when the weights are in the work dtype already (no copy of m weights: the
    # drivers only read them)
    w = np.ones(b - a, wdt) if weights is None else np.asarray(weights[a:b]).astype(wdt, copy=False)
    return part, lo, hi, indptr, indices, w, wdt


@njit(cache=True)
def _neg_sums_int(w):
    """One pass over integer weights: the count of negative ones and their magnitudes'
    high and low 32-bit halves summed in uint64 (|w| <= 2^63: no sum overflows)."""
    k = 0
    hi = np.uint64(0)
    lo = np.uint64(0)
    for x in w:
        if x < 0:
            k += 1
            m = np.uint64(0) - np.uint64(np.int64(x))  # |x| in [1, 2^63], exact
            hi += m >> np.uint64(32)
            lo += m & np.uint64(0xFFFFFFFF)
    return k, hi, lo


@njit(cache=True)
def _neg_sums_float(w):
    k = 0
    t = 0.0
    for x in w:
        if x < 0:
            k += 1
            t -= np.float64(x)
    return k, t


def _neg_magnitude(w, wdt):
    """This rank's ``B`` (the sum of ``|w|`` over its negative arcs) and their number.
    Exact for integer weights (a Python int: int64 magnitudes are split into 32-bit halves
    summed in uint64, so no sum overflows and none is rounded as float64 sums above 2^53
    are); float64 for float weights. One numba pass (the NumPy masks and copies took 0.5 s
    of a GPU run's setup on Kronecker 20)."""
    if w.size == 0:
        return (0.0 if wdt.kind == "f" else 0), 0
    if wdt.kind == "f":
        k, t = _neg_sums_float(w)
        return float(t), int(k)
    k, hi, lo = _neg_sums_int(w)
    return (int(hi) << 32) + int(lo), int(k)


def _neg_bound(w, wdt, comm):
    """``-B - 1`` (see the module docstring) in the work dtype and whether any arc is
    negative, globally (collective). Integer weights: exact (summed as Python ints over
    the ranks), clamped to the int64 minimum, which no distance goes below; float
    weights: the float64 sum with a relative margin for its rounding."""
    return neg_bound_of(_neg_magnitude(w, wdt), wdt, comm)


def neg_bound_of(bk, wdt, comm):
    """:func:`_neg_bound` from this rank's ``(B, count)`` (as :func:`_neg_magnitude` returns
    them; the GPU backend sums its block on the device). Collective."""
    b, k = bk
    if comm.Get_size() > 1:
        pairs = comm.allgather((b, k))  # Python ints (or floats): summed exactly here
        b, k = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    if wdt.kind == "f":
        return wdt.type(-(b * (1 + 1e-9)) - 1.0), k > 0
    return wdt.type(max(-b - 1, int(np.iinfo(np.int64).min))), k > 0


def _gather(local, part, comm):
    """The whole array from every rank's block (Allgatherv)."""
    from mpi4py import MPI
    from mpi4py.util.dtlib import from_numpy_dtype

    if comm.Get_size() == 1:
        return local.copy()
    out = np.empty(part.n, local.dtype)
    counts = part.sizes().astype(np.int64)
    displs = part.offsets[:-1].astype(np.int64)
    comm.Allgatherv(np.ascontiguousarray(local), [out, (counts, displs), from_numpy_dtype(local.dtype)])
    return out


def _pred_cycle(pred_l, part, comm, confirm):
    """Gather ``pred`` and walk it: a cycle (list, arc order) that ``confirm`` accepts, or
    None. Collective; every rank gets the same answer."""
    pred = _gather(pred_l, part, comm)
    v = find_pred_cycle(pred)
    if v < 0:
        return None
    cyc = cycle_from_pred(pred, v)
    return cyc if confirm(cyc) else None


def _pred_cycle_guarded(pred_l, part, comm, confirm):
    """:func:`_pred_cycle`, returning ``(cycle, None)``, or ``(None, error)`` when this rank
    failed after the gather (in the walk or in ``confirm``): the caller's next collective
    step carries the failure to the other ranks. Collective: when any rank failed, no rank
    returns a cycle, so none leaves the loop while the failed one goes on to the next step."""
    try:
        cyc, err = _pred_cycle(pred_l, part, comm, confirm), None
    except _FAILURES as e:
        cyc, err = None, e
    if comm.Get_size() > 1 and not all(comm.allgather(err is None)):
        cyc = None
    return cyc, err


def _finish(graph, comm, part, lo, hi, indptr, indices, w, wdt, source, dist, pred, want_pred=True):
    """Whole distance array and the canonical predecessors, on every rank (collective).

    The predecessor of a reached ``v != source`` is the smallest ``u`` with a tight arc
    ``u -> v`` (``d[u] + w == d[v]``): it depends on the distances only, which are the
    same for any number of ranks and either driver, so the tree is too. Following these
    arcs backwards can only end at the source, unless tight arcs close a cycle (of weight
    zero); then the tree the run built is returned instead (valid, not canonical)."""
    from mpi4py import MPI

    d = _gather(dist, part, comm)
    if not want_pred:
        return d, None, None
    big = np.iinfo(np.int64).max
    best = np.full(graph.n, big, np.int64)
    _tight_min_pred(lo, hi, indptr, indices, w, d, INF_OF(wdt), best)
    if comm.Get_size() > 1:
        comm.Allreduce(MPI.IN_PLACE, best, op=MPI.MIN)
    best[best == big] = -1
    best[source] = -1
    if find_pred_cycle(best) >= 0:
        return d, _gather(pred, part, comm), False
    return d, best, True


class _State:
    """Per-rank arrays of both drivers (see the module docstring)."""

    def __init__(self, graph, weights, source, comm):
        err = None
        try:  # rank-local; a rank that fails here (out of memory) raises on every rank
            self._allocate(graph, weights, source, comm)
        except _FAILURES as e:
            err = e
        collective_raise(comm, err)
        self.bound, self.has_neg = _neg_bound(self.w, self.wdt, comm)

    def _allocate(self, graph, weights, source, comm):
        self.part, self.lo, self.hi, self.indptr, self.indices, self.w, self.wdt = _setup(graph, weights, source, comm)
        n, nl = graph.n, self.hi - self.lo
        self.inf = INF_OF(self.wdt)
        self.dist = np.full(nl, self.inf, self.wdt)
        self.pred = np.full(nl, -1, np.int64)
        self.wl = np.empty(max(nl, 1), np.int64)
        self.in_q = np.zeros(max(nl, 1), np.int8)  # 1: in the worklist, 2: in the far list
        self.ht = np.zeros(3, np.int64)  # worklist head, count; far list count
        self.far = np.empty(max(nl, 1), np.int64)
        self.thr = self.wdt.type(self.inf)  # vertices above it wait in the far list (rounds' near-far order)
        self.cand_d = np.full(n, self.inf, self.wdt)
        self.cand_bits = self.cand_d.view(np.int64)
        self.cand_p = np.full(n, -1, np.int64)
        self.sent = np.full(n, self.inf, self.wdt)
        self.tr = np.empty(max(n - nl, 1), np.int64)
        self.sendbuf = np.empty(3 * max(n - nl, 1), np.int64)
        self.counts = np.zeros(comm.Get_size(), np.int64)
        if self.lo <= source < self.hi:
            self.dist[source - self.lo] = 0
            _push(self.wl, self.in_q, self.ht, source - self.lo, self.dist)

    def process(self, budget):
        """Scan own improved vertices (SLF worklist, in place) for about ``budget`` arcs;
        remote candidates are left in ``cand_*``. Returns (#remote, arcs, scans, below)."""
        return _process(self.wl, self.in_q, self.ht, self.lo, self.hi, self.indptr, self.indices, self.w,
                        self.dist, self.pred, self.sent, self.cand_d, self.cand_p, self.tr, budget, self.bound,
                        self.far, self.thr)

    def far_min(self):
        """The smallest distance waiting in the far list (INF: none)."""
        return _far_min(self.far, self.in_q, self.ht, self.dist, self.inf)

    def advance(self, thr):
        """Raise the threshold to ``thr``: far vertices at most it join the worklist."""
        self.thr = self.wdt.type(thr)
        _far_advance(self.far, self.in_q, self.ht, self.wl, self.dist, self.thr)

    def pack(self, ntr):
        """The remote candidates as (v, candidate bits, u) triples sorted by owner."""
        _pack(self.tr, ntr, self.part.offsets, self.cand_d, self.cand_bits, self.cand_p, self.sent, self.inf,
              self.sendbuf, self.counts)
        return self.sendbuf[:3 * ntr]

    def absorb(self, trip):
        """Apply received triples (k, 3); returns the below-bound flag."""
        return _absorb(trip, trip.view(self.wdt), self.lo, self.dist, self.pred, self.wl, self.in_q, self.ht,
                       self.bound, self.far, self.thr)


# --------------------------------------------------------------------------- rounds
@njit(cache=True)
def _abs_sum(w):
    """The sum of ``|w|`` in float64 over the finite weights, and their count, in one pass (no
    temporary of m values). An infinite weight is no arc: counted, one would make the mean
    infinite and turn the near-far order off."""
    s = 0.0
    k = 0
    for x in w:
        a = abs(float(x))
        if a < np.inf:
            s += a
            k += 1
    return s, k


def _raised(m, delta, inf, wdt):
    """The threshold ``m + delta``, saturating at ``inf`` (integers must not wrap)."""
    if wdt.kind == "f":
        return wdt.type(m + delta)
    return wdt.type(min(int(m) + int(delta), int(inf)))


def rounds_delta(w, wdt, comm, factor=None):
    """The near-far width of the CPU rounds: ``factor`` (default
    ``DISTGRAPH_CPU_SSSP_DELTA``) times the mean finite arc weight magnitude over all ranks
    (of every rank's arcs, or of a strided sample of about 2^16 of them), at
    least 1 for integer weights; 0 when ``factor`` is 0 (near-far off). Collective."""
    from mpi4py import MPI

    from ...runtime import config

    err = None
    try:  # a rank that fails here still joins the sum, then every rank raises its error
        factor = float(config.cpu_sssp_delta if factor is None else factor)
        # a strided sample of at most about 2^16 weights: the width is a heuristic, and a pass
        # over every arc would cost each run time the order does not give back on Kronecker graphs
        loc = np.array(_abs_sum(w[::max(1, w.size >> 16)]) if w.size else (0.0, 0), np.float64)
    except _FAILURES as e:
        err, loc = e, np.zeros(2)
    if comm.Get_size() > 1:
        comm.Allreduce(MPI.IN_PLACE, loc, op=MPI.SUM)
    collective_raise(comm, err)
    mean = loc[0] / loc[1] if loc[1] else 1.0
    d = factor * mean
    if not d > 0:
        return 0
    return max(1, int(np.ceil(d))) if wdt.kind != "f" else d


def run_rounds(graph, weights, source, comm, confirm, budget=None, predecessors=True, delta=None):
    """Round-synchronous driver. Returns ``(dist, pred, stats, cycle)``: whole arrays (work
    dtype, int64 canonical predecessors or None unless ``predecessors``) on every rank, or
    ``cycle`` (list, arc order), a predecessor-graph cycle that ``confirm(cycle)`` accepted
    as negative. ``delta``: the near-far width (None: :func:`rounds_delta`; 0 or inf: none):
    a round scans only vertices at most a threshold, which rises by ``delta`` past the
    smallest waiting distance when no rank has work below it. So a block does not flood its
    vertices from a far boundary value that a nearer one then corrects, and on one rank the
    worklist scans fewer vertices twice (road networks: 1.4-1.6x fewer relaxations; Kronecker
    graphs settle within one threshold). Only the order changes; the distances do not."""
    from mpi4py import MPI

    t0 = time.perf_counter()
    size = comm.Get_size()
    st = _State(graph, weights, source, comm)
    n = graph.n
    if delta is None:
        delta = rounds_delta(st.w, st.wdt, comm)
    near_far = bool(0 < delta < np.inf)
    err = None  # this rank's failure: it still joins every collective of the round
    if near_far:
        if st.wdt.kind != "f":  # integer distances: a whole step of at least 1
            delta = max(1, int(np.ceil(delta)))
        try:
            st.advance(_raised(0, delta, st.inf, st.wdt))  # the source's distance is 0
        except _FAILURES as e:
            err = e
    phases = 0
    if budget is None:  # a round ends at the local fixpoint, or after this many arcs
        budget = max(4 * int(st.indptr[-1]), 1 << 16)
    rcounts = np.zeros(size, np.int64)
    sdispl = np.zeros(size, np.int64)
    rdispl = np.zeros(size, np.int64)
    recvbuf = np.empty(0, np.int64)
    red = np.zeros(6, np.int64)
    rounds = arcs_total = scans_since = 0
    cycle = None
    t_setup = time.perf_counter() - t0
    while True:
        ntr = arcs = scans = below = 0
        sendbuf = recvbuf[:0]
        if err is None:
            try:
                ntr, arcs, scans, below = st.process(budget)
                if size > 1:
                    sendbuf = st.pack(ntr)
            except _FAILURES as e:
                err, ntr, arcs, scans, below = e, 0, 0, 0, 0
        if size > 1:
            if err is not None:
                st.counts[:] = 0  # a failed rank sends nothing
                sendbuf = recvbuf[:0]
            comm.Alltoall(st.counts, rcounts)
            nrecv = int(rcounts.sum())
            if recvbuf.size < nrecv:
                recvbuf = np.empty(max(nrecv, 2 * recvbuf.size), np.int64)
            np.cumsum(st.counts[:-1], out=sdispl[1:])
            np.cumsum(rcounts[:-1], out=rdispl[1:])
            comm.Alltoallv([sendbuf, (st.counts, sdispl), MPI.INT64_T], [recvbuf, (rcounts, rdispl), MPI.INT64_T])
            if err is None:
                try:
                    below |= st.absorb(recvbuf[:nrecv].reshape(-1, 3))
                except _FAILURES as e:
                    err = e
        red[0], red[1], red[2], red[3], red[4], red[5] = st.ht[1], arcs, below, scans, err is not None, st.ht[2]
        if size > 1:
            comm.Allreduce(MPI.IN_PLACE, red, op=MPI.SUM)
        rounds += 1
        arcs_total += int(red[1])
        if red[4] > 0 or red[0] + red[5] == 0:  # a rank failed (all leave after this round), or done
            break
        if red[0] == 0:  # no rank has work below the threshold, and none is in flight: raise it
            m = np.array([st.inf])
            try:
                m[0] = st.far_min()
            except _FAILURES as e:  # still joins the minimum; every rank leaves after the next round
                err = e
            if size > 1:
                comm.Allreduce(MPI.IN_PLACE, m, op=MPI.MIN)
            if err is None:
                try:
                    st.advance(_raised(m[0], delta, st.inf, st.wdt))
                except _FAILURES as e:
                    err = e
            phases += 1
        scans_since += int(red[3])
        if st.has_neg and (red[2] > 0 or scans_since >= n):
            scans_since = 0
            cycle, e = _pred_cycle_guarded(st.pred, st.part, comm, confirm)
            err = e if err is None else err  # a failure in this round's threshold step stands
            if cycle is not None:
                break
    collective_raise(comm, err)  # the first failing rank's error, on every rank
    t_run = time.perf_counter() - t0 - t_setup
    stats = {"mode": "rounds", "rounds": rounds, "relaxations": arcs_total, "time_setup_s": t_setup,
             "time_run_s": t_run, "delta": float(delta) if near_far else None, "phases": phases}
    if cycle is not None:
        return None, None, stats, cycle
    d, p, canon = _finish(graph, comm, st.part, st.lo, st.hi, st.indptr, st.indices, st.w, st.wdt, source,
                          st.dist, st.pred, predecessors)
    stats["canonical_predecessors"] = canon
    return d, p, stats, None


# --------------------------------------------------------------------------- async
def run_async(graph, weights, source, comm, confirm, queue="bq", remote="enqueue",
              capacity=1 << 15, budget=1 << 15, predecessors=True):
    """Queue-driven driver (see the module docstring). Same contract as :func:`run_rounds`."""
    from mpi4py import MPI

    from ...pgas import get_pgas
    from ...pgas.queue import BrokerQueue

    t0 = time.perf_counter()
    size, rank = comm.Get_size(), comm.Get_rank()
    st = _State(graph, weights, source, comm)
    part, wdt, inf, n = st.part, st.wdt, st.inf, graph.n
    pg = get_pgas(comm, "cpu")
    q = BrokerQueue(capacity, "int64", width=3, kind=queue, pgas=pg)
    chunk = capacity // 4
    wmin = None
    if remote == "atomic":
        wmin = pg.array(int(part.sizes().max()) if n else 1, wdt)
        wmin.local[...] = inf
        pg.barrier()
    outbox = []  # (owner, items) not yet enqueued: the owner's segment was full
    sent_n = recv_n = 0
    scans_since = relax_total = arcs_total = 0
    below = 0
    wave = np.zeros(6, np.int64)  # sent, recv, busy, scans, below, failed
    wave_out = np.zeros(6, np.int64)
    req = None
    prev = None
    cycle = None
    err = None  # this rank's failure: it stops working but keeps joining the waves
    t_setup = time.perf_counter() - t0
    while True:
        busy = 1
        if err is None:
            try:
                # 1. what other ranks sent to my segment
                while True:
                    items = q.dequeue_many(chunk, pe=rank) if size > 1 else np.empty((0, 3), np.int64)
                    if items.shape[0] == 0:
                        break
                    recv_n += items.shape[0]
                    below |= st.absorb(items)
                # 2. a batch of my own work
                ntr, arcs, scans, b = st.process(budget)
                below |= b
                arcs_total += arcs
                scans_since += scans
                # 3. ship remote relaxations to their owners
                if ntr:
                    trip = st.pack(ntr).reshape(-1, 3)
                    start = 0
                    for r in range(size):
                        k = int(st.counts[r]) // 3
                        if k == 0:
                            continue
                        its = trip[start:start + k].copy()
                        start += k
                        if wmin is not None:
                            its = _atomic_min(pg, wmin, its, r, int(part.offsets[r]))
                        if its.shape[0]:
                            outbox.append((r, its))
                if outbox:
                    left = []
                    for r, its in outbox:
                        for i in range(0, its.shape[0], chunk):
                            part_items = its[i:i + chunk]
                            if q.enqueue_many(part_items, pe=r):
                                sent_n += part_items.shape[0]
                            else:
                                left.append((r, its[i:]))
                                break
                    outbox = left
                busy = int(st.ht[1] > 0 or bool(outbox))
            except _FAILURES as e:
                err = e
        # 4. termination / negative-cycle / failure waves (non-blocking allreduce); a
        # failed rank posts its flag in its next wave, and every rank leaves the loop
        # after the first wave that carries one
        if req is None:
            wave[:] = (sent_n, recv_n, busy, scans_since, below, err is not None)
            scans_since = 0
            below = 0
            req = comm.Iallreduce(wave, wave_out, op=MPI.SUM)
            continue
        if err is not None:
            req.Wait()  # nothing left to do here: the others post this wave
        elif not req.Test():
            continue
        req = None
        tot = wave_out.copy()
        if tot[5] > 0:
            break
        relax_total += int(tot[3])
        if tot[2] == 0 and tot[0] == tot[1]:
            if prev is not None and np.array_equal(prev[:3], tot[:3]):
                break
            prev = tot
        else:
            prev = None
        if st.has_neg and (tot[4] > 0 or relax_total >= n):
            relax_total = 0
            cycle, e = _pred_cycle_guarded(st.pred, part, comm, confirm)
            err = err if e is None else e
            if cycle is not None:
                break
    # every rank left the loop after the same wave: free the queue collectively, then
    # raise the first failing rank's error (type and message) on every rank
    if wmin is not None:
        pg.free(wmin)
    q.free()
    collective_raise(comm, err)
    t_run = time.perf_counter() - t0 - t_setup
    stats = {"mode": "async", "queue": queue, "remote": remote,
             "relaxations": int(comm.allreduce(arcs_total)), "items_sent": int(comm.allreduce(sent_n)),
             "time_setup_s": t_setup, "time_run_s": t_run}
    if cycle is not None:
        return None, None, stats, cycle
    d, p, canon = _finish(graph, comm, part, st.lo, st.hi, st.indptr, st.indices, st.w, wdt, source,
                          st.dist, st.pred, predecessors)
    stats["canonical_predecessors"] = canon
    return d, p, stats, None


def _atomic_min(pg, wmin, its, owner, off):
    """Remote atomic minimum of the candidates on ``owner``'s ``wmin``
    (:meth:`distgraph.pgas.PGAS.atomic_min_many`: one ``MPI_Get_accumulate(MIN)`` per batch
    and owner, atomic per element); keep the triples that lowered it (vertices are distinct)."""
    vals = np.ascontiguousarray(its[:, 1]).view(wmin.dtype)
    old = pg.atomic_min_many(wmin, its[:, 0] - off, vals, owner)
    return its[vals < old]


# --------------------------------------------------------------------------- batches
@njit(cache=True)
def _batch_rounds(indptr, indices, w, srcs, dist, front, nxt, act, nact, bits, dus, counts, bound, has_neg,
                  max_rounds):
    """The batched rounds (one rank): up to 32 sources at once, as the GPU's
    (kernels/bf_rounds.cu): ``dist[v * nb + b]`` is source b's distance at v (+inf / the
    integer maximum to start), ``act[v]`` / ``nact[v]`` the bits of the sources whose distance
    at v changed for this round / the next, ``front`` this round's vertices once each. A
    vertex's arcs are read once and relax every source in its mask (the keys of v for all
    sources side by side). Asynchronous: a vertex is relaxed from its keys when its turn
    comes. A sum below ``bound`` (with negative arcs) is a walk through a negative cycle:
    its source's bit goes to the returned mask of unsettled sources and is not stored.
    Returns ``(rounds, unsettled bits, frontier length left)``."""
    nb = srcs.shape[0]
    nf = 0
    for j in range(nb):
        s = srcs[j]
        dist[s * nb + j] = 0
        if act[s] == 0:
            front[nf] = s
            nf += 1
        act[s] |= np.uint32(1) << np.uint32(j)
    rounds = 0
    cyc = np.uint32(0)
    while nf > 0 and rounds < max_rounds:
        nn = 0
        for i in range(nf):
            u = front[i]
            m = act[u]
            act[u] = 0
            p = 0
            for b in range(nb):
                if (m >> np.uint32(b)) & np.uint32(1):
                    bits[p] = b
                    dus[p] = dist[u * nb + b]
                    p += 1
            beg, end = indptr[u], indptr[u + 1]
            for q in range(p):
                counts[bits[q]] += end - beg
            for k in range(beg, end):
                v = indices[k]
                wk = w[k]
                base = v * nb
                for q in range(p):
                    b = bits[q]
                    c = dus[q] + wk
                    if c < dist[base + b]:
                        if has_neg and c < bound:
                            cyc |= np.uint32(1) << np.uint32(b)
                            continue
                        dist[base + b] = c
                        if nact[v] == 0:
                            nxt[nn] = v
                            nn += 1
                        nact[v] |= np.uint32(1) << np.uint32(b)
        front, nxt = nxt, front
        act, nact = nact, act
        nf = nn
        rounds += 1
    left = cyc
    for i in range(nf):
        left |= act[front[i]]
        act[front[i]] = 0
    return rounds, left, nf


def batch_arrays(graph, weights):
    """What :func:`run_batch` needs of the graph, the same for every batch (a caller running
    several keeps it): int64 row offsets, the heads, the weights in the work dtype (ones when
    unweighted), and the negative-cycle bound with whether any arc is negative."""
    from mpi4py import MPI

    indptr = np.asarray(graph.indptr, dtype=np.int64)
    indices = np.asarray(graph.indices)
    wdt = work_dtype(weights.dtype) if weights is not None else np.dtype(np.int64)
    w = np.ones(indices.shape[0], wdt) if weights is None else np.asarray(weights).astype(wdt, copy=False)
    bound, has_neg = neg_bound_of(_neg_magnitude(w, wdt), wdt, MPI.COMM_SELF)
    return indptr, indices, w, bound, has_neg


def run_batch(graph, weights, sources, outs, max_rounds=None, arrays=None):
    """Distances from several sources at once on one rank (at most 32; no predecessors):
    :func:`_batch_rounds` into ``outs[b]`` (host rows of n items, the output dtype: converted
    with :func:`to_output_dtype`, whose overflow error names the int64 weights). ``arrays``:
    :func:`batch_arrays` of the graph (made here when None). Returns a list: each source's
    stats, or None where its rounds had not settled within ``max_rounds`` (default n) or went
    below the negative-cycle bound (a negative cycle: the caller runs it alone, which finds
    and names it)."""
    from ...errors import InvalidArgumentError

    t0 = time.perf_counter()
    src = np.asarray(sources, dtype=np.int64).reshape(-1)
    nb, n = int(src.size), graph.n
    if not (1 <= nb <= 32 and len(outs) == nb):
        raise InvalidArgumentError(f"run_batch takes 1 to 32 sources and a row for each; got {nb} sources "
                                   f"and {len(outs)} rows")
    indptr, indices, w, bound, has_neg = batch_arrays(graph, weights) if arrays is None else arrays
    wdt = w.dtype
    dist = np.full(n * nb, INF_OF(wdt), wdt)
    front, nxt = np.empty(max(n, 1), np.int64), np.empty(max(n, 1), np.int64)
    act, nact = np.zeros(max(n, 1), np.uint32), np.zeros(max(n, 1), np.uint32)
    counts = np.zeros(32, np.int64)
    rounds, left, _ = _batch_rounds(indptr, indices, w, src, dist, front, nxt, act, nact,
                                    np.empty(32, np.int64), np.empty(32, wdt), counts, bound, has_neg,
                                    n if max_rounds is None else int(max_rounds))
    t_run = time.perf_counter() - t0
    res = []
    for j in range(nb):
        if (int(left) >> j) & 1:
            res.append(None)
            continue
        row = dist[j::nb]
        outs[j][...] = to_output_dtype(row, outs[j].dtype)
        res.append({"mode": "rounds", "backend": "cpu", "order": "async", "batch": nb, "rounds": int(rounds),
                    "relaxations": int(counts[j]), "time_run_s": t_run / nb, "time_batch_run_s": t_run})
    return res
