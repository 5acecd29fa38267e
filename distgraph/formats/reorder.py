"""Vertex reorderings for BVSS (BLEST Sec. 4): scale-free test, Jaccard-with-windows, RCM, U_div.

BLEST relabels the graph symmetrically before building BVSS:

* scale-free-like graphs (footnote 2, :func:`is_scale_free`) get JACCARD WITH WINDOWS
  (Alg. 1, :func:`jaccard_windows`), which packs columns with overlapping neighbour
  sets into the same slice set of 8, so masks hold more bits and BVSS shrinks;
* other graphs get Reverse Cuthill-McKee (:func:`rcm`, scipy's implementation), which
  narrows the bandwidth so the rows updated by one warp are close together; the
  update divergence U_div (Sec. 4.2, :func:`update_divergence`) measures that.

Every ordering is returned as ``new_id`` (int64, shape ``(n,)``): vertex ``v`` of the
input is vertex ``new_id[v]`` of the reordered graph (``permute_graph``).  Results of an
algorithm on the reordered graph come back to the caller's ids as
``result_reordered[new_id]``.

References
----------
D. Elbek and K. Kaya, "Graph Traversal on Tensor Cores: A BFS Framework for Modern
GPUs" (BLEST), arXiv:2606.05081, 2026, Sec. 4, Alg. 1, footnote 2, Table 1.
E. Cuthill and J. McKee, "Reducing the bandwidth of sparse symmetric matrices", 1969.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import expect

__all__ = ["is_scale_free", "rcm", "order_by_degree", "jaccard_windows", "update_divergence", "update_divergence_numpy",
           "permute_graph", "permute_rows", "reorder_graph", "REORDERINGS", "degree_order", "pattern_order"]

REORDERINGS = ("auto", "jaccard", "rcm", "none")


# --------------------------------------------------------------------- scale-free test
def _heavy_tail(deg: np.ndarray) -> dict:
    n = deg.shape[0]
    total = float(deg.sum())
    d = np.sort(deg)[::-1]
    k1 = max(1, int(np.ceil(0.01 * n)))
    k10 = max(1, int(np.ceil(0.10 * n)))
    top1 = float(d[:k1].sum()) / total if total else 0.0
    top10 = float(d[:k10].sum()) / total if total else 0.0
    out = {"top1_share": top1, "top10_share": top10, "heavy_tail": bool(top1 >= 0.05 and top10 >= 0.40)}
    # log-log fit of the degree histogram for k >= 5
    hist = np.bincount(deg)
    k = np.flatnonzero(hist)
    k = k[k >= 5]
    gamma, r2, ok = float("nan"), float("nan"), False
    if k.shape[0] >= 3:
        x, y = np.log(k.astype(np.float64)), np.log(hist[k].astype(np.float64))
        slope, icept = np.polyfit(x, y, 1)
        resid = y - (slope * x + icept)
        ss_tot = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float((resid ** 2).sum()) / ss_tot if ss_tot > 0 else 0.0
        gamma = -float(slope)
        ok = bool(r2 >= 0.70 and 1.0 <= gamma <= 5.0)
    out.update({"gamma": gamma, "r2": r2, "power_law_fit": ok})
    return out


def is_scale_free(graph):
    """BLEST's scale-free-like test (footnote 2).

    A graph is scale-free-like if its in- or out-degree distribution is heavy-tailed:
    the top 1% and 10% of vertices hold at least 5% and 40% of the total degree, or a
    least-squares fit of the log-log degree histogram for ``k >= 5`` has slope
    ``-gamma`` with ``R^2 >= 0.70`` and ``gamma`` in ``[1, 5]``.

    Returns
    -------
    (bool, dict)
        The verdict and, per direction (``out``; ``in`` too for directed graphs),
        ``top1_share``, ``top10_share``, ``heavy_tail``, ``gamma``, ``r2``,
        ``power_law_fit``.

    Examples
    --------
    >>> from distgraph.graph import Graph
    >>> star = Graph.from_edges([0] * 99, list(range(1, 100)), directed=False)
    >>> is_scale_free(star)[0]
    True
    """
    if graph.n == 0:
        return False, {"out": {}}
    info = {"out": _heavy_tail(graph.out_degree())}
    if graph.directed:
        info["in"] = _heavy_tail(graph.in_degree())
    verdict = any(d["heavy_tail"] or d["power_law_fit"] for d in info.values())
    return bool(verdict), info


# --------------------------------------------------------------------------------- RCM
def _symmetric_pattern(graph):
    import scipy.sparse as sp

    A = sp.csr_matrix((np.ones(graph.m, dtype=np.int8), graph.indices, graph.indptr), shape=(graph.n, graph.n))
    if graph.directed:
        A = (A + A.T).tocsr()
    return A


def rcm(graph) -> np.ndarray:
    """Reverse Cuthill-McKee order (scipy.sparse.csgraph) of the symmetrized graph.

    Returns ``new_id`` (see the module docstring).
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    if graph.n == 0:
        return np.zeros(0, dtype=np.int64)
    order = reverse_cuthill_mckee(_symmetric_pattern(graph), symmetric_mode=True)
    new_id = np.empty(graph.n, dtype=np.int64)
    new_id[order] = np.arange(graph.n, dtype=np.int64)
    return new_id


# ------------------------------------------------------------------ degree order
def _order_to_new_id(order, xp=np):
    new_id = xp.empty(order.shape[0], dtype=xp.int64)
    new_id[order] = xp.arange(order.shape[0], dtype=xp.int64)
    return new_id


def order_by_degree(deg, runs: int = 1, xp=np):
    """The vertices (old ids, in their new order) by descending ``deg``, ties by id (one stable
    sort), dealt to ``runs`` runs: the vertex of degree rank r goes to run r mod ``runs``, each
    run in degree order. ``xp``: the array module of ``deg`` (NumPy, or CuPy: the GPU
    Bellman-Ford's renaming finds the same order on the device). :func:`degree_order`'s core."""
    order = xp.argsort(-deg, kind="stable")
    if runs > 1:
        order = xp.concatenate([order[i::runs] for i in range(int(runs))])
    return order


def degree_order(graph, head: float | None = None, runs: int = 1) -> np.ndarray:
    """Vertices by descending degree (out + in for a directed graph; ties by id).

    Used by the k2-tree (``reorder="degree"``): it gathers the rows and columns of the
    hubs of a scale-free graph whose ids were scrambled (Kronecker graphs) into one
    corner, so far fewer quadrants are non-empty. Returns ``new_id``.

    ``head`` (a fraction in (0, 1]): only the ``ceil(head * n)`` vertices of largest degree
    move to the front, by degree; the others keep their order after them. Between the
    input order and the full one: a k2-tree of kron:20 is 2.32x smaller than its FP32 CSR
    unreordered, 2.76/3.02/3.46/3.94/4.38x with head 0.001/0.003/0.01/0.03/0.1 and 4.63x
    fully ordered (``benchmarks/results/k2tree_head_order_sizes.json``): most of the gain
    for a small corner of hubs (full degree order makes the GPU's right products slower).

    >>> from distgraph.graph import Graph
    >>> degree_order(Graph.from_edges([0, 1, 2], [2, 2, 0], directed=True)).tolist()
    [1, 2, 0]
    >>> g = Graph.from_edges([0, 3, 3, 3, 1], [3, 0, 1, 2, 3])
    >>> degree_order(g, head=0.25).tolist()  # vertex 3 (degree 4) first, the rest in order
    [1, 2, 3, 0]

    ``runs`` (P >= 1): the order dealt to P runs, one after the other: the vertex of degree
    rank r goes to run r mod P, each run in degree order. P blocks of about equal arcs
    (:func:`~distgraph.graph.partition.partition_by_edges`) then each get their share of the
    hubs, packed at their start. The GPU Bellman-Ford's ``relabel="degree"`` uses it: the
    distances its relaxations hit most share cache lines (Kronecker 23 / 24 on one H200:
    rounds 1.46 / 1.57x faster; benchmarks/results/session18/).

    >>> degree_order(g, runs=2).tolist()  # degree ranks 3, 0, 1, 2 dealt: runs [3, 1], [0, 2]
    [2, 1, 3, 0]
    """
    expect(isinstance(runs, (int, np.integer)) and not isinstance(runs, bool) and runs >= 1, "runs",
           "an int >= 1", runs)
    expect(head is None or runs == 1, "head", "None with runs > 1", head)
    deg = np.diff(graph.indptr).astype(np.int64)
    if graph.directed:
        deg = deg + graph.in_degree().astype(np.int64)
    order = order_by_degree(deg, runs)
    if head is not None:
        ok = isinstance(head, (float, int, np.floating, np.integer)) and not isinstance(head, bool) and 0 < head <= 1
        expect(ok, "head", "a fraction in (0, 1] of the vertices", head)
        from fractions import Fraction

        top = order[: math.ceil(Fraction(str(float(head))) * order.shape[0])]  # 0.07 of 100: 7, not 8
        rest = np.ones(order.shape[0], np.bool_)
        rest[top] = False
        order = np.concatenate([top, np.flatnonzero(rest)])
    return _order_to_new_id(order)


def pattern_order(rows, cols, n: int, method: str) -> np.ndarray:
    """``new_id`` of the ``n`` vertices of the square pattern ``(rows, cols)`` by
    ``method``: ``"degree"`` (:func:`degree_order`: row plus column counts) or
    ``"rcm"`` (:func:`rcm` of the symmetrized pattern)."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if method == "degree":
        deg = np.bincount(rows, minlength=n) + np.bincount(cols, minlength=n)
        return _order_to_new_id(np.argsort(-deg, kind="stable"))
    expect(method == "rcm", "method", "'degree' or 'rcm'", method)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    A = sp.csr_matrix((np.ones(rows.shape[0], np.int8), (rows, cols)), shape=(n, n))
    A = (A + A.T).tocsr()
    return _order_to_new_id(reverse_cuthill_mckee(A, symmetric_mode=True).astype(np.int64))


# ----------------------------------------------------------------- Jaccard with windows
@functools.cache
def _jaccard_kernel():
    import numba as nb

    @nb.njit(cache=True, inline="always")
    def _lower_bound(a, lo, hi, x):
        while lo < hi:
            mid = (lo + hi) >> 1
            if a[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @nb.njit(cache=True)
    def _window(ws, we, sigma, ip, ix, tip, tix, slot_of, stamp, stamp_base, inter, assigned, Q, touched):
        # One window [ws, we) of Alg. 1.  Columns j are vertices; nbrs_A(j) = out-arcs of j
        # in G (ip/ix), nbrs_{A^T}(i) = in-arcs of i (tip/tix).  slot_of[j] receives the new id.
        wl = we - ws
        deg = np.empty(wl, np.int64)
        for j in range(wl):
            deg[j] = ip[ws + j + 1] - ip[ws + j]
        by_deg = np.argsort(-deg, kind="mergesort")
        for j in range(wl):
            assigned[j] = False
            inter[j] = 0
        nxt = 0  # pointer into by_deg for the highest-degree unassigned column
        nsets = (wl + sigma - 1) // sigma
        for s in range(nsets):
            ss = ws + s * sigma
            se = min(ss + sigma, we)
            gid = stamp_base + s + 1
            qlen = 0
            ntouched = 0
            rsize = 0
            for slot in range(ss, se):
                if slot == ss or qlen == 0:
                    while assigned[by_deg[nxt]]:
                        nxt += 1
                    jl = by_deg[nxt]
                else:
                    best = -1.0
                    bq = 0
                    for q in range(qlen):
                        j = Q[q]
                        it = inter[j]
                        score = it / (rsize + deg[j] - it)
                        if score > best:
                            best = score
                            bq = q
                    jl = Q[bq]
                    qlen -= 1
                    Q[bq] = Q[qlen]
                assigned[jl] = True
                slot_of[ws + jl] = slot
                # extend R with the rows of jl and update inter[] through A^T
                jg = ws + jl
                for p in range(ip[jg], ip[jg + 1]):
                    i = ix[p]
                    if stamp[i] == gid:
                        continue
                    stamp[i] = gid
                    rsize += 1
                    lo = _lower_bound(tix, tip[i], tip[i + 1], ws)
                    for pp in range(lo, tip[i + 1]):
                        j2 = tix[pp]
                        if j2 >= we:
                            break
                        jj = j2 - ws
                        if assigned[jj]:
                            continue
                        if inter[jj] == 0:
                            Q[qlen] = jj
                            qlen += 1
                            touched[ntouched] = jj
                            ntouched += 1
                        inter[jj] += 1
            for t in range(ntouched):
                inter[touched[t]] = 0

    @nb.njit(cache=True, parallel=True)
    def _all(n, window, sigma, ip, ix, tip, tix, nthreads, stamps):
        # stamps: (nthreads, n) zeros, one row per thread (int32 when the set ids fit)
        slot_of = np.empty(n, np.int64)
        nwin = (n + window - 1) // window
        for t in nb.prange(nthreads):
            stamp = stamps[t]
            inter = np.zeros(window, np.int64)
            assigned = np.zeros(window, np.bool_)
            Q = np.empty(window, np.int64)
            touched = np.empty(window, np.int64)
            for w in range(t, nwin, nthreads):
                ws = w * window
                we = min(ws + window, n)
                _window(ws, we, sigma, ip, ix, tip, tix, slot_of, stamp, w * (window // sigma + 1),
                        inter, assigned, Q, touched)
        return slot_of

    return _all


def jaccard_windows(graph, window: int = 2**16, *, sigma: int = 8) -> np.ndarray:
    """JACCARD WITH WINDOWS (BLEST Alg. 1): group columns of similar neighbourhoods.

    The vertex range is cut into windows of ``window`` vertices, processed in parallel
    (numba).  Inside a window, slice sets of ``sigma`` slots are filled greedily: a
    highest-degree unassigned column seeds the set, then the column maximizing the
    Jaccard index ``inter / (|R| + deg - inter)`` with the rows ``R`` covered so far is
    added, falling back to the highest degree when no candidate shares a row.

    Parameters
    ----------
    graph : Graph
    window : int
        Window width ``W``, a multiple of ``sigma`` (default ``2**16`` as in the paper).

    Returns
    -------
    numpy.ndarray
        ``new_id`` (int64, ``(n,)``); vertices never leave their window.
    """
    expect(isinstance(window, (int, np.integer)) and window >= sigma and window % sigma == 0,
           "window", f"a positive multiple of {sigma}", window)
    n = graph.n
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    import numba as nb

    tip, tix, _ = graph.csc()
    ix = graph.indices
    kern = _jaccard_kernel()
    nthreads = max(1, min(nb.get_num_threads(), (n + window - 1) // window))
    # each thread marks the rows a slice set covers with the set's id in a scratch of n
    # entries: int32 when every id fits (n < 2**31 windows of any size), half the memory
    # (2**27 vertices, 16 threads: 8.6 GB instead of 17.2)
    stamps = np.zeros((nthreads, n), _stamp_dtype(n, int(window), sigma))
    return kern(n, int(window), int(sigma), graph.indptr, ix, tip, tix, nthreads, stamps)


def _stamp_dtype(n: int, window: int, sigma: int):
    """dtype of Jaccard's per-thread row stamps: int32 when the largest slice-set id,
    ``nwin * (window // sigma + 1)``, fits it, else int64."""
    nwin = (n + window - 1) // window
    return np.int32 if nwin * (window // sigma + 1) < 2**31 - 1 else np.int64


# ------------------------------------------------------------------- update divergence
@functools.cache
def _udiv_kernel():
    import numba as nb

    @nb.njit(cache=True, parallel=True)
    def _per_vss(row_ids, masks, nv, tau, theta):
        out = np.empty(nv, np.float64)
        for v in nb.prange(nv):
            base = v * tau
            acc = 0.0
            ncol = 0
            for c in range(theta):       # column c: slices 4t + c of the lanes t
                k = 0
                s1 = 0.0
                for t in range(tau // theta):
                    i = base + t * theta + c
                    if masks[i] != 0:
                        k += 1
                        s1 += row_ids[i]
                if k == 0:
                    continue
                mean = s1 / k
                s2 = 0.0
                for t in range(tau // theta):
                    i = base + t * theta + c
                    if masks[i] != 0:
                        dlt = row_ids[i] - mean
                        s2 += dlt * dlt
                acc += np.sqrt(s2 / k)
                ncol += 1
            out[v] = acc / max(ncol, 1)
        return out

    return _per_vss


def update_divergence(bvss) -> float:
    """BLEST's update divergence U_div (Sec. 4.2) of a :class:`~distgraph.formats.bvss.BVSS`.

    For each VSS, each of its 4 columns (lane-major: slice ``4t + c`` is column ``c``)
    has a *column divergence*: the standard deviation of the row ids of its non-empty
    slices.  ``U_div(s)`` is the mean over the VSS's non-empty columns, and U_div the
    mean over all VSSs.  Lower means the rows one warp updates are closer together.
    Computed per VSS in parallel (numba); :func:`update_divergence_numpy` is the
    vectorized reference.
    """
    from .bvss import TAU, THETA

    nv = bvss.num_vss
    if nv == 0:
        return 0.0
    per_vss = _udiv_kernel()(bvss.row_ids, bvss.masks, nv, TAU, THETA)
    return float(per_vss.sum()) / nv


def update_divergence_numpy(bvss) -> float:
    """:func:`update_divergence` with numpy (the reference the tests compare with)."""
    from .bvss import TAU, THETA

    nv = bvss.num_vss
    if nv == 0:
        return 0.0
    total = 0.0
    chunk = 1 << 16  # VSSs per chunk, bounds the temporaries
    for a in range(0, nv, chunk):
        b = min(nv, a + chunk)
        rows = bvss.row_ids[a * TAU:b * TAU].reshape(b - a, 32, THETA).astype(np.float64)
        valid = bvss.masks[a * TAU:b * TAU].reshape(b - a, 32, THETA) != 0
        cnt = valid.sum(axis=1)                                   # (v, 4)
        s1 = np.where(valid, rows, 0.0).sum(axis=1)
        mean = s1 / np.maximum(cnt, 1)
        dev = np.where(valid, rows - mean[:, None, :], 0.0)
        std = np.sqrt((dev * dev).sum(axis=1) / np.maximum(cnt, 1))
        nonempty = cnt > 0
        per_vss = np.where(nonempty, std, 0.0).sum(axis=1) / np.maximum(nonempty.sum(axis=1), 1)
        total += float(per_vss.sum())
    return total / nv


# ------------------------------------------------------------------------- relabeling
@functools.cache
def _rows_kernel():
    import numba as nb

    # one function, no nested dispatcher: numba's cache key pickles a closure's variables, and
    # a dispatcher pickles differently in every process (the cache would never hit)
    @nb.njit(cache=True, parallel=True)
    def _rows(ip, ix, w, new_id, rows, new_ip, out_ix, out_w, weighted, sort, stripes):
        # new row r = old row rows[r], heads renamed and (sort) sorted, stable; weights moved
        # along. Runs of 64 rows are dealt to `stripes` stripes (run t, t + stripes, ...), one
        # a thread (prange gives each thread a contiguous range of stripes): a degree order
        # holds its hubs first, which contiguous ranges of rows would give one thread
        nrun = (rows.shape[0] + 63) // 64
        for t in nb.prange(stripes):
            for c in range(t, nrun, stripes):
                for r in range(64 * c, min(64 * c + 64, rows.shape[0])):
                    o = rows[r]
                    q0 = new_ip[r]
                    p0 = ip[o]
                    d = ip[o + 1] - p0
                    if not sort:
                        for k in range(d):
                            out_ix[q0 + k] = new_id[ix[p0 + k]]
                            if weighted:
                                out_w[q0 + k] = w[p0 + k]
                    elif d <= 48:  # insertion sort in place
                        for k in range(d):
                            v = new_id[ix[p0 + k]]
                            x = w[p0 + k] if weighted else w[0]
                            j = k
                            while j > 0 and out_ix[q0 + j - 1] > v:
                                out_ix[q0 + j] = out_ix[q0 + j - 1]
                                if weighted:
                                    out_w[q0 + j] = out_w[q0 + j - 1]
                                j -= 1
                            out_ix[q0 + j] = v
                            if weighted:
                                out_w[q0 + j] = x
                    else:  # (new head, position) pairs in one int64 each, sorted: stable, no index array
                        keys = np.empty(d, np.int64)
                        for k in range(d):
                            keys[k] = (new_id[ix[p0 + k]] << 32) | k
                        keys.sort()
                        for k in range(d):
                            out_ix[q0 + k] = keys[k] >> 32
                            if weighted:
                                out_w[q0 + k] = w[p0 + (keys[k] & 0xFFFFFFFF)]

    return _rows


def permute_rows(indptr, indices, weights, new_id, rows, sort: bool = True, dtype=None):
    """Some rows of a graph renamed by ``new_id``: ``(indptr, indices, weights)`` of the rows
    ``rows`` (old ids, in that order; ``indptr`` from 0, int64), each row's heads renamed and
    (``sort``) sorted, stable, ``weights`` (aligned with ``indices``, or None) moved along.
    The rows of one rank's block of the renamed graph, ``rows = old_of_new[lo:hi]``, without
    renaming the rest (:func:`permute_graph` renames all). The sort costs most of the time
    (Kronecker 20, all rows in degree order, on two cores: 1.3 s sorted, 0.3 s unsorted).
    ``dtype``: the heads' (default int32 when the ids fit, else int64)."""
    import numba

    new_id = np.asarray(new_id, dtype=np.int64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    expect(new_id.shape == (n,), "new_id", f"an array of shape ({n},)", new_id.shape)
    expect(not rows.size or (int(rows.min()) >= 0 and int(rows.max()) < n), "rows", f"ids in [0, {n})",
           f"[{rows.min()}, {rows.max()}]" if rows.size else rows)
    deg = indptr[rows + 1] - indptr[rows]
    new_ip = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(deg, out=new_ip[1:])
    m = int(new_ip[-1])
    out_ix = np.empty(m, dtype=dtype or (np.int32 if new_id.shape[0] <= 2**31 - 1 else np.int64))
    weighted = weights is not None
    out_w = np.empty(m if weighted else 1, dtype=weights.dtype if weighted else np.int8)
    _rows_kernel()(indptr, np.asarray(indices), np.asarray(weights) if weighted else out_w, new_id, rows,
                   new_ip, out_ix, out_w, weighted, bool(sort), numba.get_num_threads())
    return new_ip, out_ix, (out_w if weighted else None)


def permute_graph(graph, new_id: np.ndarray):
    """The graph with vertex ``v`` renamed ``new_id[v]`` (rows sorted, weights kept).

    Rows are renamed and sorted in parallel (numba, :func:`permute_rows`); repeated arcs of a
    directed graph keep their relative order. The weights move with their arcs, so no index
    array of the arcs is made."""
    from ..graph.core import Graph

    n = graph.n
    new_id = np.asarray(new_id, dtype=np.int64)
    expect(new_id.shape == (n,), "new_id", f"an array of shape ({n},)", new_id.shape)
    old_of_new = np.empty(n, dtype=np.int64)
    old_of_new[new_id] = np.arange(n, dtype=np.int64)
    indptr, indices, weights = permute_rows(graph.indptr, graph.indices, graph.weights, new_id, old_of_new,
                                            dtype=graph.indices.dtype)
    labels = None if graph.labels is None else graph.labels[old_of_new]
    return Graph(indptr, indices, weights, directed=graph.directed, labels=labels, meta=dict(graph.meta))


def reorder_graph(graph, method: str = "auto", *, window: int = 2**16):
    """Apply a reordering by name.

    Returns ``(graph_reordered, new_id_or_None, info)``; ``info`` holds the method chosen
    and, for ``"auto"``, the scale-free verdict.  ``"none"`` returns the graph itself.
    """
    expect(method in REORDERINGS, "reorder", "one of " + ", ".join(REORDERINGS), method)
    info = {"requested": method}
    if method == "auto":
        sf, detail = is_scale_free(graph)
        info["scale_free"] = sf
        method = "jaccard" if sf else "rcm"
    info["method"] = method
    if method == "none" or graph.n == 0:
        return graph, None, info
    new_id = jaccard_windows(graph, window) if method == "jaccard" else rcm(graph)
    return permute_graph(graph, new_id), new_id, info
