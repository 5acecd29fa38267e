"""CSR of a generated graph by one sort of 64-bit keys: on a GPU (CuPy) or with numpy.

The host's builder (:func:`distgraph.generators._csr.build_csr`, a counting sort) scatters
every arc to a random place of a large array, and its rate falls as the arrays outgrow the
caches; on the GPU host of the BLEST benchmarks, generating and preprocessing urand:26 /
kron:26 did not finish in 510 s (issue 4; the share of each step was not measured).  This
builder does the same work as a sort, which a GPU does at memory speed, with the same array
code for CuPy and numpy (``xp``):

1. **fill**: the chunks of ``(src, dst)`` are copied as they come into one ``src``/``dst``
   pair of the index dtype on the device (one chunk at a time crosses from the host, so
   the host holds only the chunks in flight);
2. **count**: arcs per source range of ``2**shift`` vertices (at most ``2**COARSE_BITS``
   ranges), counting an undirected edge in both rows, a self-loop once or not at all;
3. **group**: consecutive ranges are grouped so that each group's keys and sort scratch
   fit in free device memory and are at most ``max_group_keys`` (CUB/thrust sorts used
   32-bit sizes, NVIDIA/cccl#744); one group when the graph fits;
4. per group: **keys** ``src << bits | dst`` (int64, ``bits = bit_length(n - 1)``, so
   ``n <= 2**31``) of its arcs and, when undirected, of the reverses of its in-arcs
   (self-loops dropped when asked), one **sort**, then in slices: **drop repeats** (a key
   equal to its predecessor), the low bits to ``indices`` (int32 on the host), the
   counts of the high bits to the degrees; ``indptr`` is their prefix sum.

Groups are contiguous source ranges in increasing order, so their outputs concatenate
to the sorted CSR.  The result is exactly what the counting-sort builder returns (rows
sorted, one arc per ordered pair; tests compare both).

Device memory (bytes; ``m``: drawn edges, ``A``: arcs of a group before deduplication,
``V``: its vertices): ``2 * 4 * m`` (``src``/``dst``) for the whole build, plus per group
``8 A`` (keys) + ``8 A`` (the sort's second buffer) + ``8 (V + 1)`` (degrees), plus a
fixed allowance for the sort's other scratch and the slice temporaries
(:func:`memory_plan`).  Checked against the free memory before allocating; what does
not fit in one group is split into more groups, and what cannot fit raises
:class:`~distgraph.errors.DeviceMemoryError`.  Host memory: ``4 A`` for ``indices``
(all groups) and ``8 (n + 1)`` for ``indptr``.  CuPy's memory pool is emptied of the
freed blocks at the end (the build's arrays would stay cached otherwise).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import DeviceMemoryError, InvalidArgumentError
from ..graph.core import Graph, index_dtype

__all__ = ["build_csr_keysort", "memory_plan", "MAX_GROUP_KEYS", "SLICE"]

#: Edges (fill, count, keys) or sorted keys (dedup) handled per step.
SLICE = 1 << 23
#: Keys sorted at once (CUB/thrust radix sorts have used int sizes; 2**30 keeps clear of them).
MAX_GROUP_KEYS = 1 << 30
#: The source ranges counted to form groups are at most 2**COARSE_BITS.
COARSE_BITS = 16
#: Bytes per slice element of the temporaries of one step (masks, selected ids, int64
#: keys, kept keys, their halves): an upper bound of what the expressions below allocate.
TEMP_PER_SLICE_ITEM = 64
#: Sort scratch beyond the second key buffer: CUB's histograms and look-back tiles (an
#: allowance, not measured).
SORT_EXTRA = 256 << 20


def _free_bytes(xp):
    """Device memory this rank may use (CuPy's pool counted as free; where ranks share the
    GPU, this rank's part of it): :func:`distgraph.backends.gpu.memory.free_bytes`, as
    memory.MemoryPlan.check uses."""
    from ..backends.gpu.memory import free_bytes

    return free_bytes(cp=xp)


def _is_cupy(xp) -> bool:
    return getattr(xp, "__name__", "") == "cupy"


def _to_host(xp, a):
    return xp.asnumpy(a) if _is_cupy(xp) else a


def _now(xp):
    """perf_counter after the device's queued work (phase times in ``info``)."""
    if _is_cupy(xp):
        xp.cuda.Stream.null.synchronize()
    return time.perf_counter()


def _group_bytes(keys: int, vertices: int) -> int:
    return 16 * int(keys) + 8 * (int(vertices) + 1) + SORT_EXTRA


def memory_plan(n: int, capacity: int, group_keys: int, group_vertices: int, *, slice_size: int = SLICE,
                itemsize: int | None = None):
    """The :class:`~distgraph.backends.gpu.memory.MemoryPlan` of a build whose largest
    group sorts ``group_keys`` keys of ``group_vertices`` sources (``capacity`` drawn
    edges; ``itemsize``: bytes of an id, default that of ``index_dtype(n)``)."""
    from ..backends.gpu.memory import MemoryPlan

    isz = index_dtype(n).itemsize if itemsize is None else int(itemsize)
    items = {"edges (src, dst)": 2 * isz * int(capacity),
             "slice temporaries": TEMP_PER_SLICE_ITEM * int(slice_size)}
    if group_keys:
        items["group keys (int64)"] = 8 * int(group_keys)
        items["sort buffer"] = 8 * int(group_keys) + SORT_EXTRA
        items["group degrees"] = 8 * (int(group_vertices) + 1)
    return MemoryPlan("GPU CSR build of a generated graph", items,
                      ("DISTGRAPH_GEN_DEVICE=cpu (the host's counting-sort builder)", "a GPU with more memory"))


def _raise_oom(xp, plan, err):
    """A CuPy allocation failed although the plan fitted (another process took memory)."""
    from ..backends.gpu.memory import format_bytes

    raise DeviceMemoryError(f"{plan.what}: device allocation failed ({err}); plan was "
                            f"{format_bytes(plan.total)} ({plan.describe()}); try "
                            + "; or ".join(plan.hints)) from err


def _group(counts, shift: int, n: int, budget: float, max_keys: int):
    """Consecutive source ranges grouped greedily: ``[(vlo, vhi, keys), ...]``; a group
    closes before its keys would exceed ``max_keys`` or its bytes ``budget``.  Returns
    ``(groups, largest single range (keys, vertices))`` (None when all fit)."""
    groups = []
    vlo, acc = 0, 0
    too_big = None
    for r, c in enumerate(counts.tolist()):
        lo = r << shift
        hi = min(n, (r + 1) << shift)
        if _group_bytes(c, hi - lo) > budget or c > max_keys:
            too_big = (c, hi - lo)
            break
        if acc and (acc + c > max_keys or _group_bytes(acc + c, hi - vlo) > budget):
            groups.append((vlo, lo, acc))
            vlo, acc = lo, 0
        acc += c
    else:
        if n:
            groups.append((vlo, n, acc))
    return groups, too_big


def build_csr_keysort(chunks, n: int, capacity: int, *, directed: bool, drop_self_loops: bool,
                      meta: dict | None = None, xp=None, free_bytes: int | None = None,
                      max_group_keys: int = MAX_GROUP_KEYS, slice_size: int = SLICE,
                      info: dict | None = None) -> Graph:
    """Build a :class:`Graph` from ``(src, dst)`` chunks by sorting 64-bit keys.

    Parameters
    ----------
    chunks : iterable of (ndarray, ndarray)
        Arcs (host arrays), ids in ``[0, n)`` (not checked: generators make them in range).
    n : int
        Number of vertices, at most ``2**31``.
    capacity : int
        Upper bound on the number of arcs yielded by ``chunks``.
    directed, drop_self_loops : bool
        As :func:`distgraph.generators._csr.build_csr`.
    meta : dict, optional
        The graph's ``meta``.
    xp : module, optional
        ``cupy`` (the default: the current CUDA device) or ``numpy`` (the same steps on
        the host; what the CPU tests run).
    free_bytes : int, optional
        Memory the build may use (default: the device's free memory for CuPy, this rank's
        part of it where ranks share the GPU, unbounded for numpy); smaller values force more
        groups (tests).
    max_group_keys, slice_size : int
        Keys sorted at once at most; elements per streaming step.
    info : dict, optional
        Filled with the groups, arc counts, the planned device bytes of the largest
        group and the seconds of each phase (``fill_s`` includes waiting for the
        generator; the others are summed over groups).

    Returns
    -------
    Graph
        ``indptr`` int64 and ``indices`` (int32 when ``n < 2**31``) numpy arrays, rows
        sorted, no repeated arcs: equal to the counting-sort builder's result.

    Raises
    ------
    DeviceMemoryError
        The edges, or the keys of one source range of ``2**shift`` vertices, do not fit
        in ``free_bytes`` (raised before allocating them).
    BackendUnavailableError
        ``xp`` is None and CuPy or a GPU is missing.
    """
    n = int(n)
    capacity = int(capacity)
    if n > 1 << 31:
        raise InvalidArgumentError(f"the key-sort CSR builder needs n <= 2**31 (64-bit keys src << 31 | dst); "
                                   f"got n = {n}; use DISTGRAPH_GEN_DEVICE=cpu")
    if xp is None:
        from ..backends.gpu.loader import import_cupy

        xp = import_cupy()
    info = {} if info is None else info
    try:
        indptr, indices = _build(chunks, n, capacity, bool(directed), bool(drop_self_loops), xp, free_bytes,
                                 int(max_group_keys), max(1, int(slice_size)), info)
    finally:  # the build's blocks (its arrays died with _build's frame) back to the device
        if _is_cupy(xp):
            xp.get_default_memory_pool().free_all_blocks()
    return Graph(indptr, indices, None, directed=directed, meta=dict(meta or {}))


def _build(chunks, n, capacity, directed, drop_self_loops, xp, free_bytes, max_group_keys, slice_size, info):
    """Steps 1-4 of the module docstring; returns ``(indptr, indices)`` on the host."""
    on_gpu = _is_cupy(xp)
    oom = xp.cuda.memory.OutOfMemoryError if on_gpu else MemoryError
    idt = index_dtype(n)
    bits = max(1, (n - 1).bit_length())
    shift = max(0, bits - COARSE_BITS)
    ranges = ((n - 1) >> shift) + 1 if n else 0
    if free_bytes is None:
        free_bytes = _free_bytes(xp) if on_gpu else float("inf")
    from ..backends.gpu.memory import HEADROOM, format_bytes

    t0 = time.perf_counter()
    # 1. fill (checked first: the edges stay on the device for the whole build)
    plan = memory_plan(n, capacity, 0, 0, slice_size=slice_size, itemsize=idt.itemsize)
    plan.check(free=free_bytes, device=xp.cuda.Device().id if on_gpu else None)
    try:
        src = xp.empty(capacity, dtype=idt)
        dst = xp.empty(capacity, dtype=idt)
    except oom as e:
        _raise_oom(xp, plan, e)
    m = 0
    for s, d in chunks:
        k = len(s)
        if m + k > capacity:
            raise InvalidArgumentError(f"chunks hold more than capacity = {capacity} arcs")
        src[m:m + k] = xp.asarray(s, dtype=idt)
        dst[m:m + k] = xp.asarray(d, dtype=idt)
        m += k
    src, dst = src[:m], dst[:m]
    t1 = _now(xp)
    info.update(edges=m, fill_s=t1 - t0)

    # 2. count arcs per source range
    counts = xp.zeros(ranges, dtype=np.int64)
    for lo in range(0, m, slice_size):
        s, d = src[lo:lo + slice_size], dst[lo:lo + slice_size]
        loop = s == d
        fwd = s[~loop] if drop_self_loops else s
        rev = d[~loop] if not directed else fwd[:0]
        # cupy.bincount of an empty array raises (it takes the maximum): a slice of self-loops
        for a in (fwd, rev):
            if a.size:
                counts += xp.bincount(a >> shift, minlength=ranges)
    counts = _to_host(xp, counts)
    total_arcs = int(counts.sum())

    # 3. groups of source ranges that fit
    free_now = free_bytes - plan.total  # what the plan allowed beyond the edges and temporaries
    if on_gpu:
        free_now = min(free_now, _free_bytes(xp) - plan.items["slice temporaries"])
    groups, too_big = _group(counts, shift, n, HEADROOM * free_now, int(max_group_keys))
    if too_big is not None:
        big = memory_plan(n, capacity, too_big[0], too_big[1], slice_size=slice_size, itemsize=idt.itemsize)
        if too_big[0] > max_group_keys:
            raise DeviceMemoryError(f"{big.what}: one source range of {too_big[1]} vertices has {too_big[0]} "
                                    f"arcs, more than max_group_keys = {max_group_keys} sorted at once")
        big.check(free=free_bytes, device=xp.cuda.Device().id if on_gpu else None)
        raise DeviceMemoryError(f"{big.what} needs {format_bytes(big.total)} for its largest source range "
                                f"({big.describe()}) but only {format_bytes(free_bytes)} is free; try "
                                + "; or ".join(big.hints))

    largest = max(groups, key=lambda g: g[2], default=(0, 0, 0))
    info.update(arcs_before_dedup=total_arcs, groups=len(groups), count_s=_now(xp) - t1,
                plan_bytes=memory_plan(n, capacity, largest[2], largest[1] - largest[0], slice_size=slice_size,
                                       itemsize=idt.itemsize).total, keys_s=0.0, sort_s=0.0, dedup_s=0.0)

    # 4. per group: keys, sort, drop repeats, indices and degrees
    indices = np.empty(total_arcs, dtype=idt)
    indptr = np.zeros(n + 1, dtype=np.int64)
    mask = (1 << bits) - 1
    out = 0
    for vlo, vhi, nkeys in groups:
        if nkeys == 0:
            continue
        whole = vlo == 0 and vhi == n
        t2 = time.perf_counter()
        try:
            keys = xp.empty(nkeys, dtype=np.int64)
        except oom as e:
            _raise_oom(xp, memory_plan(n, capacity, nkeys, vhi - vlo, slice_size=slice_size), e)
        pos = 0
        for lo in range(0, m, slice_size):
            s, d = src[lo:lo + slice_size], dst[lo:lo + slice_size]
            sel = (s != d) if drop_self_loops else None
            if not whole:
                inr = (s >= vlo) & (s < vhi)
                sel = inr if sel is None else sel & inr
            a, b = (s, d) if sel is None else (s[sel], d[sel])
            k = a.size
            keys[pos:pos + k] = (a.astype(np.int64) << bits) | b
            pos += k
            if not directed:
                sel = s != d
                if not whole:
                    sel &= (d >= vlo) & (d < vhi)
                a, b = d[sel], s[sel]
                k = a.size
                keys[pos:pos + k] = (a.astype(np.int64) << bits) | b
                pos += k
        assert pos == nkeys, (pos, nkeys)
        t3 = _now(xp)
        try:
            keys.sort()
        except oom as e:
            _raise_oom(xp, memory_plan(n, capacity, nkeys, vhi - vlo, slice_size=slice_size), e)
        t4 = _now(xp)
        for lo in range(0, nkeys, slice_size):
            seg = keys[lo:lo + slice_size]
            keep = xp.empty(seg.size, dtype=bool)
            if lo == 0:
                keep[:1] = True
            else:
                xp.not_equal(seg[:1], keys[lo - 1:lo], out=keep[:1])
            xp.not_equal(seg[1:], seg[:-1], out=keep[1:])
            kept = seg[keep]
            k = int(kept.size)
            if k == 0:
                continue
            rows = kept >> bits
            first, last = (int(x) for x in _to_host(xp, rows[xp.asarray([0, k - 1])]))
            indptr[first + 1:last + 2] += _to_host(xp, xp.bincount(rows - first, minlength=last - first + 1))
            indices[out:out + k] = _to_host(xp, (kept & mask).astype(idt))
            out += k
        del keys
        info["keys_s"] += t3 - t2
        info["sort_s"] += t4 - t3
        info["dedup_s"] += time.perf_counter() - t4
    np.cumsum(indptr, out=indptr)
    assert int(indptr[n]) == out, (int(indptr[n]), out)
    info.update(arcs=out, total_s=time.perf_counter() - t0)
    if out < total_arcs:  # a view when little was dropped, as the counting-sort builder
        indices = indices[:out].copy() if out < 0.9 * total_arcs else indices[:out]
    return indptr, indices
