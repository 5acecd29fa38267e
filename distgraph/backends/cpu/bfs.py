"""Direction-optimizing BFS kernels for the CPU (numba).

Algorithm: S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First
Search", SC 2012, as written in gapbs ``src/bfs.cc``: top-down steps from a queue
while the frontier is small, bottom-up steps over a bitmap of the frontier when the
arcs out of the frontier exceed ``edges_to_check / alpha``, and back to top-down when
the frontier shrinks below ``n / beta`` vertices.

State arrays:

* ``levels`` -- int32 ``(n,)``: BFS depth, ``-1`` while unreached;
* ``parents`` -- ``(n,)``: the *smallest* vertex id at depth ``levels[v] - 1``
  with an arc to ``v`` (``parents[source] == source``; ``-1`` unreached). The
  top-down kernels take it as an *unsigned* view (uint32 when ids fit: half the cache
  lines; uint64 otherwise), where unreached (all ones) is the largest value. Taking the
  minimum in both directions makes the parent array a function of the graph and the
  source only, so it is the same for any number of ranks;
* ``queue`` -- ``n + 1`` vertex ids (int32 when ids fit): the frontier as a list
  (top-down), a sliding window as gapbs's SlidingQueue; the extra slot takes the
  branch-free top-down step's speculative write;
* ``front`` / ``nxt`` -- uint64 bitmaps, bit ``v & 63`` of word ``v >> 6`` (bottom-up).

The top-down step is written for memory-level parallelism, which is what a BFS on a
long thin graph (road networks: ~900 vertices a level, >1000 levels) is bound by:

* no data-dependent branch on the arc loop: ``levels`` is read as uint32, where
  unreached (-1) is the largest value, so "claim ``v``" is ``levels[v] = min(levels[v],
  depth)`` and the queue tail advances by the comparison's 0/1 (a mispredicted branch
  on a cache-missing ``levels[v]`` would serialize the misses of successive vertices);
  parents likewise as ``min`` over uint32 / uint64 (unreached -1 is the largest);
* software prefetch of the CSR rows of queue entries a fixed distance ahead, in two
  stages (``indptr`` of the vertex ``PF_FAR`` ahead, then ``indices`` of the vertex
  ``PF_NEAR`` ahead, whose ``indptr`` entry is in cache by then), as in S. Ainsworth,
  T. M. Jones, "Software Prefetching for Indirect Memory Accesses", CGO 2017.

On road-FLA this made a single-source BFS about 1.4x faster than the plain queue loop
of session 1 (measured while developing it; ``benchmarks/results/cpu_bfs.json`` holds
the comparison with scipy and networkit, not with the old loop).

:func:`bfs_serial` runs the whole search inside one compiled function (no Python per
level). The distributed driver in :mod:`distgraph.algorithms.bfs` runs small levels
redundantly on every rank with :func:`td_until` (every rank holds the whole graph; no
message), and only levels with many arcs to inspect on its rank's rows with the step
functions below, merging the ranks' discoveries with :func:`merge_discoveries`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bits import ctz64, prefetch

__all__ = ["bfs_serial", "td_until", "td_step_local", "bu_step_local", "merge_discoveries"]

PF_FAR = 32  # prefetch indptr[queue[i + PF_FAR]]
PF_NEAR = 16  # prefetch indices[indptr[queue[i + PF_NEAR]]]


@njit(cache=True, nogil=True)
def _td_step(indptr, indices, levels, parents, queue, qs, qe, lev, want_parents):
    """Expand queue[qs:qe] (depth lev); append discoveries at queue[qe:]. Returns
    (new qe, sum of out-degrees of the expanded vertices). Branch-free on the arcs,
    with prefetch (see the module comment)."""
    lu = levels.view(np.uint32)  # unreached (-1) reads as the largest value
    pu = parents  # unsigned already: likewise
    nl = np.uint32(lev + 1)
    tail = qe
    expanded = 0
    for i in range(qs, qe):
        j = i + PF_FAR
        if j < tail:
            prefetch(indptr, queue[j])
        j = i + PF_NEAR
        if j < tail:
            prefetch(indices, indptr[queue[j]])
        u = queue[i]
        uu = np.uint64(u)
        b, f = indptr[u], indptr[u + 1]
        expanded += f - b
        for e in range(b, f):
            v = indices[e]
            x = lu[v]  # <= nl when reached: nothing deeper than nl exists yet
            new = x > nl
            queue[tail] = v  # kept only when new (queue has a spare slot)
            tail += new
            lu[v] = min(x, nl)
            if want_parents:
                p = pu[v]
                pu[v] = min(p, uu) if x >= nl else p
    return tail, expanded


@njit(cache=True, nogil=True)
def _out_arcs(indptr, queue, qs, qe):
    """Sum of the out-degrees of queue[qs:qe] (prefetching rows ahead)."""
    total = 0
    for i in range(qs, qe):
        j = i + PF_FAR
        if j < qe:
            prefetch(indptr, queue[j])
        u = queue[i]
        total += indptr[u + 1] - indptr[u]
    return total


@njit(cache=True, nogil=True)
def _bu_step(tindptr, tindices, levels, parents, front, nxt, lev, want_parents):
    """Every unreached vertex looks for an in-neighbour in ``front``; returns how many woke."""
    n = levels.shape[0]
    awake = 0
    nl = lev + 1
    one = np.uint64(1)
    for i in range(nxt.shape[0]):
        nxt[i] = 0
    for v in range(n):
        if levels[v] >= 0:
            continue
        for e in range(tindptr[v], tindptr[v + 1]):
            u = tindices[e]
            if (front[u >> 6] >> np.uint64(u & 63)) & one:
                levels[v] = nl
                if want_parents:
                    parents[v] = u
                nxt[v >> 6] |= one << np.uint64(v & 63)
                awake += 1
                break
    return awake


@njit(cache=True, nogil=True)
def td_until(indptr, indices, levels, parents, queue, qs, qe, lev, edges_to_check, scout, max_degree, alpha,
             limit, want_parents):
    """Top-down levels from the frontier ``queue[qs:qe]`` (depth ``lev``) while it is not
    empty, the direction-optimizing rule keeps top-down (``scout <= edges_to_check /
    alpha``, ``scout`` = the frontier's out-degree sum) and ``scout <= limit``.

    ``scout`` is the first frontier's out-degree sum, or -1 when unknown. For later
    levels it is computed only when ``frontier size * max_degree`` could exceed a
    bound (on a road network: never), so the arc loop does not look up the degree of
    every vertex it discovers; the decisions are exactly gapbs's.

    Returns ``(qs, qe, lev, edges_to_check, scout)`` of the frontier where it stopped
    (``scout`` exact there unless the frontier is empty)."""
    while qe > qs:
        bound = min(edges_to_check / alpha, limit)
        if scout < 0 and (qe - qs) * max_degree > bound:
            scout = _out_arcs(indptr, queue, qs, qe)
        if scout > bound:
            break
        nqe, expanded = _td_step(indptr, indices, levels, parents, queue, qs, qe, lev, want_parents)
        edges_to_check -= scout if scout >= 0 else expanded  # gapbs: scout (1 right after bottom-up)
        # slide the window (gapbs SlidingQueue): the new part is the next frontier.
        # Every vertex enters the queue once after each reset, so n + 1 entries suffice.
        qs, qe = qe, nqe
        lev += 1
        scout = -1
    return qs, qe, lev, edges_to_check, scout


@njit(cache=True, nogil=True)
def bfs_serial(indptr, indices, tindptr, tindices, source, alpha, beta, levels, parents, want_parents, queue,
               max_degree):
    """Whole direction-optimizing BFS from ``source``; fills ``levels`` (and ``parents``,
    uint32 or uint64, all ones where unreached).
    ``queue`` is scratch of ``n + 1`` entries (int32 when ids fit: half the memory traffic);
    ``max_degree`` the largest out-degree (row pointers may be int32 when ``m`` fits)."""
    n = indptr.shape[0] - 1
    one = np.uint64(1)
    for i in range(n):
        levels[i] = -1
    if want_parents:
        for i in range(n):
            parents[i] = -1  # all ones in the unsigned array
        parents[source] = source
    levels[source] = 0
    nw = (n + 63) >> 6
    front = np.zeros(nw, np.uint64)
    nxt = np.zeros(nw, np.uint64)
    queue[0] = source
    qs, qe = 0, 1
    lev = 0
    edges_to_check = np.int64(indptr[n])
    scout = np.int64(indptr[source + 1] - indptr[source])
    big = np.iinfo(np.int64).max
    while True:
        qs, qe, lev, edges_to_check, scout = td_until(indptr, indices, levels, parents, queue, qs, qe, lev,
                                                      edges_to_check, scout, max_degree, alpha, big,
                                                      want_parents)
        if qe == qs:
            break
        # queue -> bitmap, then bottom-up while the frontier grows or stays large
        for i in range(nw):
            front[i] = 0
        for i in range(qs, qe):
            u = queue[i]
            front[u >> 6] |= one << np.uint64(u & 63)
        awake = qe - qs
        while True:
            old = awake
            awake = _bu_step(tindptr, tindices, levels, parents, front, nxt, lev, want_parents)
            lev += 1
            front, nxt = nxt, front
            if not (awake >= old or awake > n / beta):
                break
        # bitmap -> queue
        qs, qe = 0, 0
        for w in range(nw):
            x = front[w]
            while x != 0:
                queue[qe] = (w << 6) + np.int64(ctz64(x))
                qe += 1
                x &= x - one
        scout = 1


# ----------------------------------------------------------------- distributed steps
@njit(cache=True, nogil=True)
def td_step_local(lindptr, lindices, lo, hi, frontier, levels, claim, out):
    """Top-down on this rank's rows: the vertices of ``frontier`` (global ids) in
    ``[lo, hi)`` are expanded, the others skipped.

    Writes pairs ``(child, parent)`` into ``out`` (int64 ``(2*cap,)``: children at even,
    parents at odd positions) for every unreached child, keeping the smallest parent
    per child. ``claim`` (int64 ``(n,)``, all -1) is scratch and is left all -1.
    Returns the number of pairs."""
    k = 0
    for i in range(frontier.shape[0]):
        u = frontier[i]
        if u < lo or u >= hi:
            continue
        r = u - lo
        for e in range(lindptr[r], lindptr[r + 1]):
            v = lindices[e]
            if levels[v] >= 0:
                continue
            c = claim[v]
            if c < 0:
                claim[v] = k
                out[2 * k] = v
                out[2 * k + 1] = u
                k += 1
            elif out[2 * c + 1] > u:
                out[2 * c + 1] = u
    for i in range(k):
        claim[out[2 * i]] = -1
    return k


@njit(cache=True, nogil=True)
def bu_step_local(tlindptr, tlindices, lo, hi, levels, lev, out):
    """Bottom-up on this rank's rows: every unreached ``v`` in ``[lo, hi)`` takes its
    smallest in-neighbour at depth ``lev``. Pairs as in :func:`td_step_local`."""
    k = 0
    for v in range(lo, hi):
        if levels[v] >= 0:
            continue
        r = v - lo
        for e in range(tlindptr[r], tlindptr[r + 1]):
            u = tlindices[e]
            if levels[u] == lev:
                out[2 * k] = v
                out[2 * k + 1] = u
                k += 1
                break
    return k


@njit(cache=True, nogil=True)
def merge_discoveries(pairs, levels, parents, lev, indptr, frontier):
    """Apply gathered ``(child, parent)`` pairs found at depth ``lev + 1``.

    Every rank calls this on the same gathered array, so all keep identical
    ``levels`` / ``parents``. Writes the new frontier (each child once) into
    ``frontier``; returns ``(its length, the sum of its out-degrees)``."""
    nl = lev + 1
    k = 0
    scout = 0
    for i in range(pairs.shape[0] // 2):
        v = pairs[2 * i]
        u = pairs[2 * i + 1]
        if levels[v] < 0:
            levels[v] = nl
            parents[v] = u
            frontier[k] = v
            k += 1
            scout += indptr[v + 1] - indptr[v]
        elif levels[v] == nl and parents[v] > u:
            parents[v] = u
    return k, scout
