"""Distributed Bellman-Ford on the CPU: numba kernels, a round-synchronous driver and a
queue-driven asynchronous driver over the MPI-RMA Broker Queue.

Algorithm
---------
Bellman-Ford with a worklist (the "FIFO" or Bellman-Ford-Moore variant): only vertices
whose distance improved are scanned again. Rank ``r`` owns the vertex block
``[lo, hi)`` of :func:`distgraph.graph.partition.partition_by_edges` and its out-arcs;
it alone writes ``dist``/``pred`` of its vertices. An arc ``u -> v`` with ``v`` owned by
another rank becomes a *remote relaxation* ``(v, d(u) + w, u)`` sent to ``v``'s owner.

``rounds`` (round-synchronous, Jacobi): in round ``k`` every vertex that improved in
round ``k-1`` relaxes its out-arcs with its distance *at the end of round ``k-1``*; the
candidates for each vertex are reduced to the minimum (ties: the smallest tail id),
remote ones travel in one ``Alltoallv``; a vertex improves when its candidate is
strictly smaller. Round ``k`` thus yields the shortest walks of at most ``k`` arcs, and
distances *and* predecessors do not depend on the number of ranks. Termination: an
``Allreduce`` of the number of vertices that improved.

``async`` (queue-driven, Sec. III-C of ../shared/papers/003, "multi-GPU Bellman-Ford"):
each rank owns one segment of a distributed BQ/BWD (:class:`distgraph.pgas.queue.
BrokerQueue`, items ``(v, candidate, u)`` of three int64). A rank scans batches of its
own improved vertices in place (Gauss-Seidel: a local improvement is visible at once)
and ships remote relaxations one-sidedly, in one of two ways:

* ``remote="enqueue"``: the triples are enqueued into the owner's segment; the owner
  dequeues them and keeps the improving ones;
* ``remote="atomic"``: first an atomic minimum on the owner's distance (one
  ``MPI_Get_accumulate(MPI_MIN)`` per batch, on an indexed datatype: element-wise
  atomic, so it is the compare-and-swap loop of a GPU done by the MPI library), then
  only the triples whose minimum improved the distance are enqueued (so the owner
  learns the predecessor and rescans the vertex).

Termination detection: every rank counts items it enqueued (``sent``) and dequeued
(``recv``); waves of non-blocking ``Iallreduce`` sum ``(sent, recv, busy)``; the run ends
at the second consecutive wave that shows no busy rank and ``sent == recv`` with the
same totals (Mattern's four-counter method), so no work is in any queue or in flight.

Negative cycles (both drivers): any cycle of the predecessor graph has negative weight
(Tarjan; Cherkassky and Goldberg, "Negative-cycle detection algorithms", Math. Prog.
1999), and once some distance falls below ``-B`` (``B``: the sum of the magnitudes of
the negative arc weights) the predecessor graph must contain one. So the drivers gather
the predecessor array and walk it for a cycle ("walk to root") whenever about ``n``
vertex scans happened since the last look, or a distance fell below ``-B``; a cycle
found is handed back, and the caller confirms its weight before raising.

State arrays (per rank, ``nl = hi - lo`` owned vertices; distances in the *work dtype*,
int64 for integer weights and float64 for float weights)
``dist[nl]``      distance of owned vertex ``lo + i``; ``INF`` (int64 max or +inf) unreached
``pred[nl]``      int64 tail of the arc that gave ``dist``, ``-1`` for none
``cand_d/cand_p`` size ``n``: this round's best candidate per vertex (``cand_p < 0``: none)
``sent[n]``       best candidate ever sent for a remote vertex (a later, larger one is
                  pointless: the owner already holds something at least as small)
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

__all__ = ["run_rounds", "run_async", "find_pred_cycle", "work_dtype", "INF_OF"]


def work_dtype(weight_dtype) -> np.dtype:
    """int64 for integer weights, float64 for float weights."""
    return np.dtype(np.int64) if np.dtype(weight_dtype).kind in "iub" else np.dtype(np.float64)


def INF_OF(dtype):
    dt = np.dtype(dtype)
    return dt.type(np.inf) if dt.kind == "f" else dt.type(np.iinfo(dt).max)


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _relax(frontier, nfront, lo, hi, indptr, indices, w, dist, sent, cand_d, cand_p, tl, tr):
    """Relax the out-arcs of ``frontier`` (local ids) into ``cand_*`` (Jacobi: ``dist`` is
    not written). Returns (#touched local, #touched remote, arcs scanned)."""
    ntl = 0
    ntr = 0
    arcs = 0
    for i in range(nfront):
        ul = frontier[i]
        du = dist[ul]
        u = ul + lo
        a = indptr[ul]
        b = indptr[ul + 1]
        arcs += b - a
        for k in range(a, b):
            v = indices[k]
            c = du + w[k]
            local = lo <= v < hi
            if local:
                if not c < dist[v - lo]:
                    continue
            elif not c < sent[v]:
                continue
            if cand_p[v] < 0:
                cand_d[v] = c
                cand_p[v] = u
                if local:
                    tl[ntl] = v
                    ntl += 1
                else:
                    tr[ntr] = v
                    ntr += 1
            elif c < cand_d[v] or (c == cand_d[v] and u < cand_p[v]):
                cand_d[v] = c
                cand_p[v] = u
    return ntl, ntr, arcs


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
def _merge(rv, rc, nrecv, lo, dist, cand_d, cand_p, tl, ntl):
    """Fold received triples (vertex, candidate, tail) into ``cand_*``."""
    for i in range(nrecv):
        v = rv[3 * i]
        c = rc[3 * i + 1]
        u = rv[3 * i + 2]
        if not c < dist[v - lo]:
            continue
        if cand_p[v] < 0:
            cand_d[v] = c
            cand_p[v] = u
            tl[ntl] = v
            ntl += 1
        elif c < cand_d[v] or (c == cand_d[v] and u < cand_p[v]):
            cand_d[v] = c
            cand_p[v] = u
    return ntl


@njit(cache=True)
def _apply(tl, ntl, lo, cand_d, cand_p, dist, pred, frontier, bound, inf):
    """Commit this round's candidates; the improved vertices form the next frontier."""
    nf = 0
    below = 0
    for i in range(ntl):
        v = tl[i]
        c = cand_d[v]
        if c < dist[v - lo]:
            dist[v - lo] = c
            pred[v - lo] = cand_p[v]
            frontier[nf] = v - lo
            nf += 1
            if c < bound:
                below = 1
        cand_d[v] = inf
        cand_p[v] = -1
    return nf, below


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
    w = np.ones(b - a, wdt) if weights is None else np.asarray(weights[a:b]).astype(wdt)
    return part, lo, hi, indptr, indices, w, wdt


def _neg_bound(w, wdt, comm):
    """``-B - 1`` (see the module docstring) and whether any arc is negative, globally."""
    from mpi4py import MPI

    neg = w[w < 0]
    tot = np.array([float(-neg.astype(np.float64).sum()), float(neg.size)])
    comm.Allreduce(MPI.IN_PLACE, tot, op=MPI.SUM)
    if wdt.kind == "f":
        bound = -(tot[0] * (1 + 1e-9)) - 1.0
    else:
        bound = -int(min(tot[0], 2.0 ** 62)) - 1
    return wdt.type(bound), tot[1] > 0


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


# --------------------------------------------------------------------------- rounds
def run_rounds(graph, weights, source, comm, confirm):
    """Round-synchronous driver. Returns ``(dist, pred, stats, cycle)`` with whole arrays
    (work dtype, int64) on every rank; ``cycle`` is a predecessor-graph cycle (list, arc
    order) that ``confirm(cycle)`` accepted as negative, else None."""
    from mpi4py import MPI

    t0 = time.perf_counter()
    size = comm.Get_size()
    part, lo, hi, indptr, indices, w, wdt = _setup(graph, weights, source, comm)
    n, nl = graph.n, hi - lo
    inf = INF_OF(wdt)
    bound, has_neg = _neg_bound(w, wdt, comm)
    dist = np.full(nl, inf, wdt)
    pred = np.full(nl, -1, np.int64)
    cand_d = np.full(n, inf, wdt)
    cand_bits = cand_d.view(np.int64)
    cand_p = np.full(n, -1, np.int64)
    sent = np.full(n, inf, wdt)
    tl = np.empty(max(nl, 1), np.int64)
    tr = np.empty(max(n - nl, 1), np.int64)
    frontier = np.empty(max(nl, 1), np.int64)
    nf = 0
    if lo <= source < hi:
        dist[source - lo] = 0
        frontier[0] = source - lo
        nf = 1
    offsets = part.offsets
    scounts = np.zeros(size, np.int64)
    rcounts = np.zeros(size, np.int64)
    sendbuf = np.empty(3 * max(n - nl, 1), np.int64)
    recvbuf = np.empty(0, np.int64)
    red = np.zeros(3, np.int64)
    rounds = arcs_total = scans_since = 0
    cycle = None
    t_setup = time.perf_counter() - t0
    while True:
        ntl, ntr, arcs = _relax(frontier, nf, lo, hi, indptr, indices, w, dist, sent, cand_d, cand_p, tl, tr)
        if size > 1:
            _pack(tr, ntr, offsets, cand_d, cand_bits, cand_p, sent, inf, sendbuf, scounts)
            comm.Alltoall(scounts, rcounts)
            nrecv = int(rcounts.sum())
            if recvbuf.size < nrecv:
                recvbuf = np.empty(max(nrecv, 2 * recvbuf.size), np.int64)
            sdispl = np.zeros(size, np.int64)
            np.cumsum(scounts[:-1], out=sdispl[1:])
            rdispl = np.zeros(size, np.int64)
            np.cumsum(rcounts[:-1], out=rdispl[1:])
            comm.Alltoallv([sendbuf, (scounts, sdispl), MPI.INT64_T], [recvbuf, (rcounts, rdispl), MPI.INT64_T])
            ntl = _merge(recvbuf, recvbuf.view(wdt), nrecv // 3, lo, dist, cand_d, cand_p, tl, ntl)
        nf, below = _apply(tl, ntl, lo, cand_d, cand_p, dist, pred, frontier, bound, inf)
        red[0], red[1], red[2] = nf, arcs, below
        if size > 1:
            comm.Allreduce(MPI.IN_PLACE, red, op=MPI.SUM)
        rounds += 1
        arcs_total += int(red[1])
        if red[0] == 0:
            break
        scans_since += int(red[0])
        if has_neg and (red[2] > 0 or scans_since >= n):
            scans_since = 0
            cycle = _pred_cycle(pred, part, comm, confirm)
            if cycle is not None:
                break
    t_run = time.perf_counter() - t0 - t_setup
    stats = {"mode": "rounds", "rounds": rounds, "relaxations": arcs_total,
             "time_setup_s": t_setup, "time_run_s": t_run}
    if cycle is not None:
        return None, None, stats, cycle
    return _gather(dist, part, comm), _gather(pred, part, comm), stats, None


# --------------------------------------------------------------------------- async
@njit(cache=True)
def _push(wl, in_q, ht, vl):
    if in_q[vl] == 0:
        in_q[vl] = 1
        wl[(ht[0] + ht[1]) % wl.shape[0]] = vl
        ht[1] += 1


@njit(cache=True)
def _process(wl, in_q, ht, lo, hi, indptr, indices, w, dist, pred, sent, cand_d, cand_p, tr, budget, bound):
    """Scan worklist vertices in place (Gauss-Seidel) until ``budget`` arcs are scanned.
    Local improvements are pushed at once; remote candidates collect in ``cand_*``/``tr``.
    Returns (#remote touched, arcs, scans, below)."""
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
        du = dist[ul]
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
                    _push(wl, in_q, ht, vl)
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
def _absorb(items, vals, lo, dist, pred, wl, in_q, ht, bound):
    """Apply dequeued ``(v, candidate, u)`` triples; improved vertices join the worklist."""
    below = 0
    for i in range(items.shape[0]):
        v = items[i, 0]
        c = vals[i, 1]
        if c < dist[v - lo]:
            dist[v - lo] = c
            pred[v - lo] = items[i, 2]
            if c < bound:
                below = 1
            _push(wl, in_q, ht, v - lo)
    return below


def run_async(graph, weights, source, comm, confirm, queue="bq", remote="enqueue",
              capacity=1 << 15, budget=1 << 15):
    """Queue-driven driver (see the module docstring). Same contract as :func:`run_rounds`."""
    from mpi4py import MPI
    from mpi4py.util.dtlib import from_numpy_dtype

    from ...pgas import get_pgas
    from ...pgas.queue import BrokerQueue

    t0 = time.perf_counter()
    size, rank = comm.Get_size(), comm.Get_rank()
    part, lo, hi, indptr, indices, w, wdt = _setup(graph, weights, source, comm)
    n, nl = graph.n, hi - lo
    inf = INF_OF(wdt)
    bound, has_neg = _neg_bound(w, wdt, comm)
    dist = np.full(nl, inf, wdt)
    pred = np.full(nl, -1, np.int64)
    wl = np.empty(max(nl, 1), np.int64)
    in_q = np.zeros(max(nl, 1), np.int8)
    ht = np.zeros(2, np.int64)  # worklist head, count
    cand_d = np.full(n, inf, wdt)
    cand_bits = cand_d.view(np.int64)
    cand_p = np.full(n, -1, np.int64)
    sent = np.full(n, inf, wdt)
    tr = np.empty(max(n - nl, 1), np.int64)
    sendbuf = np.empty(3 * max(n - nl, 1), np.int64)
    counts = np.zeros(size, np.int64)
    if lo <= source < hi:
        dist[source - lo] = 0
        _push(wl, in_q, ht, source - lo)
    pg = get_pgas(comm, "cpu")
    q = BrokerQueue(capacity, "int64", width=3, kind=queue, pgas=pg)
    chunk = capacity // 4
    wmin = None
    mpitype = from_numpy_dtype(wdt)
    if remote == "atomic":
        wmin = pg.array(int(part.sizes().max()) if n else 1, wdt)
        wmin.local[...] = inf
        pg.barrier()
    outbox = []  # (owner, items) not yet enqueued: the owner's segment was full
    sent_n = recv_n = 0
    scans_since = relax_total = arcs_total = 0
    below = 0
    wave = np.zeros(5, np.int64)
    wave_out = np.zeros(5, np.int64)
    req = None
    prev = None
    cycle = None
    t_setup = time.perf_counter() - t0
    try:
        while True:
            # 1. what other ranks sent to my segment
            while True:
                items = q.dequeue_many(chunk, pe=rank) if size > 1 else np.empty((0, 3), np.int64)
                if items.shape[0] == 0:
                    break
                recv_n += items.shape[0]
                below |= _absorb(items, items.view(wdt), lo, dist, pred, wl, in_q, ht, bound)
            # 2. a batch of my own work
            ntr, arcs, scans, b = _process(wl, in_q, ht, lo, hi, indptr, indices, w, dist, pred, sent,
                                           cand_d, cand_p, tr, budget, bound)
            below |= b
            arcs_total += arcs
            scans_since += scans
            # 3. ship remote relaxations to their owners
            if ntr:
                _pack(tr, ntr, part.offsets, cand_d, cand_bits, cand_p, sent, inf, sendbuf, counts)
                trip = sendbuf[:3 * ntr].reshape(-1, 3)
                start = 0
                for r in range(size):
                    k = int(counts[r]) // 3
                    if k == 0:
                        continue
                    its = trip[start:start + k].copy()
                    start += k
                    if wmin is not None:
                        its = _atomic_min(wmin, its, r, int(part.offsets[r]), wdt, mpitype)
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
            busy = int(ht[1] > 0 or bool(outbox))
            # 4. termination / negative-cycle waves (non-blocking allreduce)
            if req is None:
                wave[:] = (sent_n, recv_n, busy, scans_since, below)
                scans_since = 0
                below = 0
                req = comm.Iallreduce(wave, wave_out, op=MPI.SUM)
                continue
            if not req.Test():
                continue
            req = None
            tot = wave_out.copy()
            relax_total += int(tot[3])
            if tot[2] == 0 and tot[0] == tot[1]:
                if prev is not None and np.array_equal(prev[:3], tot[:3]):
                    break
                prev = tot
            else:
                prev = None
            if has_neg and (tot[4] > 0 or relax_total >= n):
                relax_total = 0
                cycle = _pred_cycle(pred, part, comm, confirm)
                if cycle is not None:
                    break
    finally:
        if wmin is not None:
            pg.free(wmin)
        q.free()
    t_run = time.perf_counter() - t0 - t_setup
    stats = {"mode": "async", "queue": queue, "remote": remote,
             "relaxations": int(comm.allreduce(arcs_total)), "items_sent": int(comm.allreduce(sent_n)),
             "time_setup_s": t_setup, "time_run_s": t_run}
    if cycle is not None:
        return None, None, stats, cycle
    return _gather(dist, part, comm), _gather(pred, part, comm), stats, None


def _atomic_min(wmin, its, owner, off, wdt, mpitype):
    """Remote atomic minimum of the candidates on ``owner``'s ``wmin`` (one
    ``MPI_Get_accumulate(MIN)`` on an indexed datatype); keep the triples that lowered it."""
    from mpi4py import MPI

    win = wmin._impl.win
    vals = np.ascontiguousarray(its[:, 1]).view(wdt)
    old = np.empty_like(vals)
    disp = (its[:, 0] - off).astype(np.int32)
    idx = mpitype.Create_indexed_block(1, disp.tolist()).Commit()
    try:
        win.Get_accumulate([vals, vals.size, mpitype], [old, old.size, mpitype], owner,
                           target=(0, 1, idx), op=MPI.MIN)
        win.Flush(owner)
    finally:
        idx.Free()
    return its[vals < old]
