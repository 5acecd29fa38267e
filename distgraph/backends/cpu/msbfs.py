"""Bit-parallel multi-source BFS (MS-BFS) on the CPU: one numba kernel per batch.

Algorithm: Then et al., "The more the merrier: efficient multi-source graph
traversal", PVLDB 8(4), 2014 (MS-BFS, Listing 2 / Sec. 4), with the per-vertex
aggregation of BLEST (Sec. 6.1-6.2, eq. 7: ``far[v] += l * popc(diff)``) and a
direction switch (top-down / bottom-up) per level as in Beamer et al., SC 2012.

One batch runs ``k <= 64 * W`` BFSs at once (``W <= 8`` machine words, so with
``k = 512`` one vertex's state is exactly one 64-byte cache line). Bit ``c`` of a
vertex's words belongs to the BFS from ``sources[c]``.

State arrays (flat uint64, ``W`` words per vertex, vertex ``v`` at ``v*W .. v*W+W-1``):

* ``seen[v]``  -- bit c set: BFS c has reached v (at this level or before);
* ``front[v]`` -- bit c set: v is in BFS c's frontier (reached at level ``l``);
* ``nxt[v]``   -- bits of the next frontier, collected during a step (``& ~seen``);
* ``touched``  -- uint8 per vertex: v is already in the list ``tl`` of this step;
* ``act``      -- the vertices whose ``front`` is non-zero (the MS-BFS frontier).

Top-down step: for every active u and arc u->v, ``nxt[v] |= front[u] & ~seen[v]``.
Bottom-up step: for every v not yet reached by all k BFSs, OR the ``front`` words of
its in-neighbours. The kernel picks bottom-up when the arcs out of the frontier
times ``bu_ratio`` exceed the in-arcs of the vertices still missing some bit.

Aggregates, added into the output arrays (never reset by the kernel):

* per-vertex mode (``per_source=False``): for vertex v, over the k sources,
  ``far[v] += sum d(s, v)`` (uint64), ``reach[v] +=`` number of s reaching v
  (int64, v itself counted at distance 0), harmonic ``sum 1/d(s, v)`` in the
  fixed-point limbs ``h0, h1, h2`` (see :mod:`.bits`);
* per-source mode (``per_source=True``): the same sums indexed by bit c, over the
  vertices BFS c reaches.

``levels`` (int32, ``(k, n)``, pre-filled with -1 by the caller) receives
``d(sources[c], v)`` when ``want_levels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bits import ctz64, popc64, recip_fixed

__all__ = ["msbfs_batch", "msbfs_batch_w", "permute_csr", "BU_RATIO"]

#: Switch to bottom-up when ``arcs_out_of_frontier * BU_RATIO > in_arcs_of_unfinished``.
BU_RATIO = 4


@njit(cache=True, nogil=True)
def msbfs_batch(indptr, indices, tindptr, tindices, sources, W, per_source, want_levels, bu_ratio,
                seen, front, nxt, touched, act, tl, far, reach, h0, h1, h2, levels):
    n = indptr.shape[0] - 1
    k = sources.shape[0]
    one = np.uint64(1)
    s32 = np.uint64(32)
    mask32 = np.uint64(0xFFFFFFFF)
    for i in range(n * W):
        seen[i] = 0
    full = np.zeros(W, np.uint64)
    for c in range(k):
        full[c >> 6] |= one << np.uint64(c & 63)
    acc = np.zeros(W, np.uint64)
    cnt = np.zeros(k, np.int64)

    # level 0: the sources themselves
    nact = 0
    for c in range(k):
        s = sources[c]
        if touched[s] == 0:
            touched[s] = 1
            act[nact] = s
            nact += 1
        b = one << np.uint64(c & 63)
        seen[s * W + (c >> 6)] |= b
        front[s * W + (c >> 6)] |= b
        if per_source:
            reach[c] += 1
        else:
            reach[s] += 1
        if want_levels:
            levels[c, s] = 0
    mu = tindptr[n]  # in-arcs of vertices not yet reached by every BFS
    for i in range(nact):
        v = act[i]
        touched[v] = 0
        done = True
        for w in range(W):
            if seen[v * W + w] != full[w]:
                done = False
        if done:
            mu -= tindptr[v + 1] - tindptr[v]

    lev = 0
    while nact > 0:
        lev += 1
        mf = 0
        for i in range(nact):
            u = act[i]
            mf += indptr[u + 1] - indptr[u]
        nt = 0
        if mf * bu_ratio > mu:
            # bottom-up: every unfinished vertex pulls from its in-neighbours
            for v in range(n):
                base = v * W
                done = True
                for w in range(W):
                    if seen[base + w] != full[w]:
                        done = False
                if done:
                    continue
                for w in range(W):
                    acc[w] = 0
                for e in range(tindptr[v], tindptr[v + 1]):
                    ub = tindices[e] * W
                    for w in range(W):
                        acc[w] |= front[ub + w]
                anyb = np.uint64(0)
                for w in range(W):
                    d = acc[w] & ~seen[base + w]
                    nxt[base + w] = d
                    anyb |= d
                if anyb != 0:
                    tl[nt] = v
                    nt += 1
        else:
            # top-down: every frontier vertex pushes its bits to its out-neighbours
            for i in range(nact):
                u = act[i]
                ub = u * W
                for e in range(indptr[u], indptr[u + 1]):
                    v = indices[e]
                    base = v * W
                    anyb = np.uint64(0)
                    for w in range(W):
                        d = front[ub + w] & ~seen[base + w]
                        nxt[base + w] |= d
                        anyb |= d
                    if anyb != 0 and touched[v] == 0:
                        touched[v] = 1
                        tl[nt] = v
                        nt += 1
        for i in range(nact):
            ub = act[i] * W
            for w in range(W):
                front[ub + w] = 0

        # finalize: new frontier = next & ~seen, aggregates for distance lev
        rf = recip_fixed(lev) if lev >= 2 else np.uint64(0)
        rhi = rf >> s32
        rlo = rf & mask32
        ulev = np.uint64(lev)
        for i in range(nt):
            v = tl[i]
            touched[v] = 0
            base = v * W
            p = np.uint64(0)
            done = True
            for w in range(W):
                d = nxt[base + w]
                nxt[base + w] = 0
                sw = seen[base + w] | d
                seen[base + w] = sw
                front[base + w] = d
                if sw != full[w]:
                    done = False
                p += popc64(d)
                if per_source or want_levels:
                    x = d
                    while x != 0:
                        c = (w << 6) + np.int64(ctz64(x))
                        x &= x - one
                        if per_source:
                            cnt[c] += 1
                        if want_levels:
                            levels[c, v] = lev
            if done:
                mu -= tindptr[v + 1] - tindptr[v]
            if not per_source:
                far[v] += ulev * p
                reach[v] += np.int64(p)
                if lev == 1:
                    h0[v] += p
                else:
                    h1[v] += p * rhi
                    h2[v] += p * rlo
            act[i] = v
        nact = nt
        if per_source:
            for c in range(k):
                q = cnt[c]
                if q != 0:
                    uq = np.uint64(q)
                    far[c] += ulev * uq
                    reach[c] += q
                    if lev == 1:
                        h0[c] += uq
                    else:
                        h1[c] += uq * rhi
                        h2[c] += uq * rlo
                    cnt[c] = 0


def _fixed_w(Wc):
    """A jitted entry point that calls :func:`msbfs_batch` with the word count ``Wc`` as
    a compile-time constant (a closure constant is typed ``Literal[int]``)."""

    @njit(cache=True, nogil=True)
    def kernel(indptr, indices, tindptr, tindices, sources, W, per_source, want_levels, bu_ratio,
               seen, front, nxt, touched, act, tl, far, reach, h0, h1, h2, levels):
        msbfs_batch(indptr, indices, tindptr, tindices, sources, Wc, per_source, want_levels, bu_ratio,
                    seen, front, nxt, touched, act, tl, far, reach, h0, h1, h2, levels)

    return kernel


_BY_W = {w: _fixed_w(w) for w in (1, 2, 4, 8)}


def msbfs_batch_w(indptr, indices, tindptr, tindices, sources, W, per_source, want_levels, bu_ratio,
                  seen, front, nxt, touched, act, tl, far, reach, h0, h1, h2, levels):
    """:func:`msbfs_batch` compiled for the word count ``W`` (1, 2, 4 or 8) as a
    constant, so that the inner word loops unroll and vectorize (2-3x faster).

    One plain jitted function per ``W`` (not ``numba.literally``, whose dispatch
    re-ran numba's type inference at every call: ~15 ms a batch, more than the
    kernel itself on a scale-14 Kronecker graph)."""
    _BY_W[W](indptr, indices, tindptr, tindices, sources, W, per_source, want_levels, bu_ratio,
             seen, front, nxt, touched, act, tl, far, reach, h0, h1, h2, levels)


@njit(cache=True)
def bfs_depth(indptr, indices, source):
    """The number of levels of a BFS from ``source`` minus one (its eccentricity in its
    reachable set)."""
    n = indptr.shape[0] - 1
    lev = np.full(n, -1, np.int64)
    q = np.empty(n, np.int64)
    lev[source] = 0
    q[0] = source
    h, t, d = 0, 1, 0
    while h < t:
        u = q[h]
        h += 1
        for p in range(indptr[u], indptr[u + 1]):
            v = indices[p]
            if lev[v] < 0:
                lev[v] = lev[u] + 1
                d = max(d, lev[v])
                q[t] = v
                t += 1
    return d


@njit(cache=True)
def ball_order(hptr, hidx, tptr, tidx, is_src, batch, cap, seeds=None):
    """The sources (``is_src``) in an order whose consecutive groups of ``batch`` are
    compact: seeds are taken in the BFS order of the whole graph (arcs of H and of its
    transpose, component by component); from each seed not yet taken, a BFS (``cap``
    vertices at most) takes the untaken sources it meets until the group is full, and a
    group that a ball cannot fill goes on from the next seed. On a road network the searches
    of such a group reach each vertex at nearly the same level, so a multi-source BFS meets
    each vertex at fewer distinct levels (road-NY, 256 sources: 23 against 41-49 for
    consecutive ids; benchmarks/results/closeness_batch_order_cpu.json). Deterministic.
    ``seeds`` (optional, at least ``ceil(#sources / batch)`` int64 zeros): gets, per group, the
    balls it was filled from (more than one: its sources may lie far apart; road-NY: all 19 of
    its 1033 groups of 256 whose sources lie 150 or more apart came from 2 or 3 balls,
    benchmarks/results/ball_spread_groups_roadNY.json)."""
    n = hptr.shape[0] - 1
    order = np.empty(n, np.int64)
    seen = np.zeros(n, np.bool_)
    m = 0
    for r in range(n):
        if seen[r]:
            continue
        seen[r] = True
        order[m] = r
        h = m
        m += 1
        while h < m:
            u = order[h]
            h += 1
            for p in range(hptr[u], hptr[u + 1]):
                v = hidx[p]
                if not seen[v]:
                    seen[v] = True
                    order[m] = v
                    m += 1
            for p in range(tptr[u], tptr[u + 1]):
                v = tidx[p]
                if not seen[v]:
                    seen[v] = True
                    order[m] = v
                    m += 1
    nsrc = 0
    for v in range(n):
        if is_src[v]:
            nsrc += 1
    out = np.empty(nsrc, np.int64)
    taken = np.zeros(n, np.bool_)
    stamp = np.zeros(n, np.int64)
    q = np.empty(n, np.int64)
    k = 0
    cur = 0
    st = 0
    for i in range(n):
        s = order[i]
        if not is_src[s] or taken[s]:
            continue
        st += 1
        if seeds is not None:
            seeds[k // batch] += 1
        stamp[s] = st
        q[0] = s
        qh = 0
        qt = 1
        while qh < qt:
            u = q[qh]
            qh += 1
            if is_src[u] and not taken[u]:
                taken[u] = True
                out[k] = u
                k += 1
                cur += 1
                if cur == batch:
                    cur = 0
                    break
            if qt >= cap:
                continue  # the ball is as large as allowed: take what it holds
            for p in range(hptr[u], hptr[u + 1]):
                v = hidx[p]
                if stamp[v] != st:
                    stamp[v] = st
                    q[qt] = v
                    qt += 1
            for p in range(tptr[u], tptr[u + 1]):
                v = tidx[p]
                if stamp[v] != st:
                    stamp[v] = st
                    q[qt] = v
                    qt += 1
    return out[:k]


@njit(cache=True, nogil=True)
def permute_csr(indptr, indices, perm, rank):
    """The CSR with vertex ``perm[i]`` renamed ``i`` (``rank`` is the inverse of
    ``perm``). Used to number vertices by decreasing degree: the hubs' state words,
    touched at almost every level, then share cache lines, and vertices without
    arcs come last, where the kernel never looks."""
    n = perm.shape[0]
    ip = np.zeros(n + 1, np.int64)
    for i in range(n):
        v = perm[i]
        ip[i + 1] = ip[i] + indptr[v + 1] - indptr[v]
    ix = np.empty(ip[n], indices.dtype)
    for i in range(n):
        v = perm[i]
        p = ip[i]
        for e in range(indptr[v], indptr[v + 1]):
            ix[p] = rank[indices[e]]
            p += 1
    return ip, ix
