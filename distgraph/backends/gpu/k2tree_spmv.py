"""GPU runner of the k2-tree (and CSR) semiring products: ``kernels/k2tree_spmv.cu``.

:class:`DeviceMatrix` uploads one rank's block once (signatures, directory, cached top,
optionally the cached frontier), plans the tiles of the descent on the host (Tosoni &
Mencagli, Sec. 3.4: the sequence of tiles depends only on the tree,
:func:`plan_tiles`) and allocates the exact scratch: one buffer of ``min(M, width)``
codes per written level below the top, and in scan mode one int32 offset per node of
the widest tile. ``nbytes()`` is the device working set of a product, known before any
kernel runs (:func:`memory_plan`).

A product fills ``y`` with the semiring's zero, then launches, depth-first over tiles,
one expand per tile of an internal level and one leaves kernel per tile of the last
internal level (leaves are visited in place). With the cached frontier (k2+F) it is one
leaves launch. The semiring and element type are ``#define``s of the kernel file (a
functor per semiring), compiled once per device by
:func:`distgraph.backends.gpu.loader.get_module`.

Defaults (the fastest configuration measured, ``benchmarks/results/k2tree_gpu.json``):

* ``kernels="auto"``: the block kernels when offsets come from the directory with
  S = 256: a block of 256 threads per directory sample, child offsets from one
  directory load plus a block scan of the fan-outs (instead of a popcount loop over up
  to S/2 bytes per thread), and the leaves combine the cells of a row (column) of each
  4 x 4 block in registers before the atomic update of ``y``. ``kernels="thread"``
  keeps the one-thread-per-node kernels of the first version (1.7x slower with the
  frontier cached on kron:20, 2.1x tree-only with the greedy tiles).
* ``bounded_tiles=True``: tiles cut so that a range descends to the leaves with one
  launch per level (330 launches instead of 517 at kron:20, 1.16x faster).
* ``compact_frontier=True``: the cached frontier as a 64-bit base per block of 256
  nodes plus 32-bit offsets, 4 bytes per node instead of 8 (:func:`split_frontier`),
  as fast as the 8-byte codes.
* ``levels_per_step=1``.
* ``chunks_per_block=4``: single-vector leaves (tree-only and k2+F) with 4 aligned
  chunks of 256 nodes per block, each step of the chain of dependent loads (signatures,
  codes and directory; block scans; the leaves' signatures; x) done for the 4 nodes of a
  thread at once (``distgraph_k2tree_leaves_k4``): k2+F right products on kron:20
  0.62 ms instead of 0.73 with one chunk per block (K = 2: 0.63, K = 8: 0.71).
* ``prefetch="auto"``, ``lane_combine="auto"``: wherever they exist (block kernels, K = 2
  or 4, ``aggregate=False``, a single vector, ``x`` C-contiguous from a 16-byte boundary)
  the single-vector leaves are the prefetching ones (``distgraph_k2tree_leaves_k<K>_pre``,
  below), at K = 4 with adjacent lanes combined (``distgraph_k2tree_leaves_k4_pre_lanes``);
  elsewhere the K-chunk (or one-chunk, thread, aggregated) leaves run, silently. k2+F
  single-vector products on an H200, time relative to cuSPARSE's on kron 21/22/23
  (``benchmarks/results/session6_x2/call6/h2/h2_k2tree_summary.json``): K-chunk leaves
  (``prefetch=False``) right 2.36/2.61/2.65x, left 1.33/1.61/1.57x; prefetching leaves
  right 2.21/2.46/2.52x, left 1.19/1.49/1.48x; prefetching leaves with lanes combined right
  1.98/2.11/2.05x, left 1.20/1.40/1.32x. Tree-only products take the same leaves; they
  were not timed with them (bench config ``k2_pre``, ``k2_pre_lanes``). ``True`` refuses a
  configuration without them; ``False`` keeps the K-chunk leaves. ``info["leaves"]`` names
  the leaves kernel of the last product (:func:`leaves_kernel`).

Options kept for comparison, not faster on the benchmark's graphs (single right
and left products, time relative to the default): ``levels_per_step=2`` (two levels
per launch, the middle level never written; tree-only 0.96-1.18x, 1.13-1.18x on kron
20-22, but about half the tile buffers: 0.61-1.0x the default's device bytes, e.g.
road-FLA 21.9 MB instead of 35.8 MB, below cuSPARSE's 25.8 MB: the choice when memory
is the limit). Removed after measurement: ``kernels="warp"`` (updates of a warp
combined with ``__match_any_sync``, 1.14-3.15x the time on every graph),
``kernels="hash"`` (updates of a block combined in a shared-memory hash table,
0.96-1.41x) and ``kernels="band"`` (k2+F nodes grouped by bands of rows, updates
combined per band in shared memory and added to ``y`` once per row and block, so no
scattered atomics: 0.98-1.07x the one-chunk block kernel on kron 20-23, 1.18x the
4-chunk one on kron:20; rows ``k2_warp``/``k2F_warp``/``k2_hash``/``k2F_hash``/
``k2F_band*`` of the results), and ``lane_combine="warp"`` (the prefetching leaves with
the lanes of a warp grouped by output row by ``__match_any_sync`` and each group's four
outputs combined in shared memory: made for degree-ordered trees, whose hub rows fill
whole warps, yet k2+F on them took 1.21-1.45x the default leaves' time on kron 20-24,
right and left, and 1.58-1.69x on the right unreordered; commit 365dae1,
``benchmarks/results/session8_x2/call2/``: combining within a warp does not help them),
and ``lane_combine="rows"`` (runs of adjacent lanes
with the same block row combining all four outputs by shuffles, as many scan steps as
the warp's longest run needs: 1.18-1.29x the default leaves' time on degree-ordered kron
20-24, 1.04-1.05x unreordered; commit 8a98c34, ``session8_x2/call5/``). On degree-ordered
trees the default's combining of each lane's first output is worth 1.26-1.36x over the
prefetching leaves without it (``session8_x2/call4/``).
What does make degree-ordered trees slow is the hub rows sharing lines of ``y``: their
atomics arrive from every SM, and 32 hubs numbered together share one 128-byte line.
``hub_outputs`` (H, "auto" on renumbered trees) gives each of the first H outputs a line
of its own (``HUB_PAD`` entries) and folds them into ``y`` after the leaves. Degree-ordered
kron 20/21/22/23/24, right product, H = 0.3% of the rows (``benchmarks/results/
session9_x2/call2/``, the same run): 0.472/0.947/1.907/3.888/7.915 ms against
0.664/1.278/2.450/4.701/9.153 ms without, and faster than the unreordered trees
(0.519/1.040/2.088/4.255/8.768 ms), whose trees are 2.0x larger; left alike. H = 1% and
5% time within 4.4% of 0.3% on the right, 5.7% on the left; padding the first 1% of an
unreordered tree costs 0.2-0.5%.
``aggregate=True`` (single-vector leaves with K = 2, 4 or 8 chunks,
``distgraph_k2tree_leaves_k<K>_agg``; measured slower, kept opt-in for the record: right
product 12.4/13.6/13.5x cuSPARSE's time on kron 21/22/23 at K = 4 against 2.36/2.60/2.68x
without, 7.3-8.1x at K = 2, 89-98x at K = 8, H200,
``benchmarks/results/k2tree_gpu_agg.json``; not analysed, a likely cause: the table's compare-and-swap
adds and the flush cost more than the repeated atomics they save): each block combines
its updates of ``y`` in a shared-memory table keyed by the index of ``y`` (``K *
aggregate_slots`` slots, linear probing over at most 8; a key that finds no slot
updates ``y`` directly) and issues one atomic per distinct row (column) of the block
instead of one per row of every 4 x 4 block. On Kronecker graphs the hub rows repeat
within a block: of the right product's updates on kron:21, 54.5% repeat a row already
updated by the 1024 Morton-consecutive nodes of their block (28.3% within the 32 nodes
of a warp step; left product: 49.6% and 23.8%; kron:20: 57.5%), counted on the host
from the tree (``benchmarks/k2tree_agg_count.py``, ``benchmarks/results/k2tree_agg_count.json``).
Unlike the removed ``hash`` kernel (one chunk, 256 nodes, a compare-and-swap per update)
it keeps the K-chunk loads, reads a slot before claiming it, and clears its table under
the barrier the leaves already have. Whether it pays is open: the removed band kernel,
with no scattered atomics at all, was not faster than the one-chunk leaves (above).
Batches are unchanged (``distgraph_k2tree_leaves_blk``).
The prefetching leaves (``prefetch``, single vectors with K = 2 or 4 chunks,
``distgraph_k2tree_leaves_k<K>_pre``; the default where they apply, above): the same product
with the 4 entries of ``x`` that a node's 4 x 4 block can read loaded in one vector load
together with its code, before the block scan, so that ``x`` no longer waits for the
scan and the leaves' signatures (the chain of dependent loads of a node goes from three
deep, signature, leaves' signatures, x, to two: {signature, leaves' signatures} beside
{code, x}); the K scans packed in the bytes of one word (one warp scan instead of K, the
warps' totals by ``__reduce_add_sync`` instead of a loop), rows and columns by an
unshuffle of 32-bit halves, and the cells of a block regrouped by row (left: column) by
bit permutations, so a node costs no branch per cell. Same updates of ``y`` as the
K-chunk leaves (one atomic per non-empty row of each 4 x 4 block). Static sm_90 code at
K = 4, both directions, float plus_times (nvcc 13.0, nvdisasm; not a measurement of
time): 2568 instructions against 4728, 62 branches against 388, 48 registers either.
Needs ``x`` C-contiguous from a 16-byte boundary (4 bytes for bool); another ``x`` (a
view into a larger array) runs the K-chunk leaves. With lanes combined (``lane_combine``,
K = 4, ``distgraph_k2tree_leaves_k4_pre_lanes``) the first updated row (column) of each node goes
through a segmented scan over runs of adjacent lanes that update the same entry of ``y``,
and each run's last lane updates ``y`` once: of the right product's updates on kron:18,
15.0% go to the entry the previous node updated (16.7% on kron:16; counted on the host
from the Morton-sorted arcs while writing this, not in a results file), for 7 more
shuffles (12 for 8-byte values) and a ballot per node. Measured on an H200 (k2+F, kron
21/22/23, ``benchmarks/results/session6_x2/call6/h2/``; time relative to the K-chunk
leaves'): prefetching 0.94/0.94/0.95 right, 0.90/0.93/0.94 left; with lanes combined
0.84/0.81/0.77 right, 0.91/0.87/0.84 left; at K = 2 prefetching 0.93/0.94/0.95 right
(cuSPARSE's time: 2.22/2.46/2.52x right, 1.19/1.49/1.48x left). The GPU tests of these
leaves (``tests/test_gpu_k2tree_prefetch.py``, 19) passed there.
Offsets from a scan per tile (``offsets="scan"``) use the thread kernels.

A tree of 2**32 nodes or more (kron:24: about 4.7e9) has an int64 directory; its kernels
are compiled with a 64-bit ``dir_t`` (``-DDIR_T``), the rest is unchanged.

Floating-point plus_times results depend on the order in which atomics land (within
rounding of the CPU result); lor_land and min_plus are exact.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError
from .loader import get_module, import_cupy

__all__ = ["DeviceMatrix", "plan_tiles", "buffer_levels", "memory_plan", "tree_from_csr", "split_frontier",
           "leaves_options", "leaves_kernel"]

THREADS = 256
BLOCK = 256  # nodes per block of the _blk kernels = the directory sample they need
KERNELS = ("auto", "block", "thread")
CHUNKS_PER_BLOCK = (1, 2, 4, 8)  # K of the single-vector leaves: their kernels
LEAVES_K = {1: "distgraph_k2tree_leaves_blk", 2: "distgraph_k2tree_leaves_k2", 4: "distgraph_k2tree_leaves_k4",
            8: "distgraph_k2tree_leaves_k8"}
# aggregate=True: the same leaves with the updates of a block combined in shared memory
LEAVES_AGG = {2: "distgraph_k2tree_leaves_k2_agg", 4: "distgraph_k2tree_leaves_k4_agg",
              8: "distgraph_k2tree_leaves_k8_agg"}
# prefetch (default "auto": where they apply): the same leaves with each block's inputs loaded with its code
HUB_PAD = 32  # entries per padded hub output (kernels/k2tree_spmv.cu DG_K2_HUB_PAD)
# hub_outputs="auto" on a renumbered tree: this fraction of the outputs. On degree-ordered
# kron 20-24 (benchmarks/results/session9_x2/call2/) 0.003, 0.01 and 0.05 time within 4.4%
# of each other on the right (5.7% on the left), 0.003 the fastest on kron:24; 0.003 n *
# HUB_PAD entries are 0.096 n.
HUB_AUTO_FRACTION = 0.003
LEAVES_PRE = {2: "distgraph_k2tree_leaves_k2_pre", 4: "distgraph_k2tree_leaves_k4_pre"}
LEAVES_PRE_LANES = {4: "distgraph_k2tree_leaves_k4_pre_lanes"}  # and lane_combine
LEAVES_THREAD = "distgraph_k2tree_leaves"  # the one-thread-per-node kernels (thread, scan offsets, S != 256)
AGG_SLOTS = (8, 16, 32, 64, 128, 256)  # slots of the table per chunk of 256 nodes (256: the kernel's default)
_VALUE_T = {np.dtype(np.float32): "float", np.dtype(np.float64): "double", np.dtype(np.int64): "long long",
            np.dtype(np.bool_): "unsigned char"}


_FIRST = [None, None]  # (weakref to the last tree, its first_children)


def first_children(tree) -> np.ndarray:
    """int64 ``N + 1``: the first child of every node (and of node N: the end),
    ``1 + popcount`` of the signatures before it; the last tree's is kept."""
    import weakref

    if _FIRST[0] is not None and _FIRST[0]() is tree:
        return _FIRST[1]
    from ...formats.k2tree import _nb_first_children

    first = _nb_first_children(tree.sig, tree.num_nodes)
    _FIRST[0], _FIRST[1] = weakref.ref(tree), first
    return first


def plan_tiles(tree, tile: int, bounded: bool = True, levels_per_step: int = 1):
    """The launches of a tree-only product, depth-first: a list of
    ``("expand", level, g0, n, src_pos, child0, nchild)``,
    ``("expand2", level, g0, n, src_pos, gchild0, ngchild)`` (two levels at once,
    ``levels_per_step=2``) and ``("leaves", level, g0, n, src_pos, leaf0)`` (node ids
    are global; ``src_pos`` is the position of node ``g0`` in the buffer of its level).

    A tile is a range of nodes with at most ``tile`` children (grandchildren for
    "expand2"), the buffer of the level it writes. Cut greedily on those alone, a range
    of ``tile`` nodes has a few more children (fan-out > 1), so every level splits again
    into a full and a small tile and half the launches are small. With ``bounded``
    (default) a range is cut instead so that its descendants at *every* deeper internal
    level fit in a buffer; such a range descends to the leaves with one launch per step.
    Where even one node's descendants do not fit, the greedy cut is used. Either plan
    needs the same scratch (one buffer of at most ``tile`` codes per written level,
    :func:`buffer_levels`). With two levels per step, a first single step is taken
    when the number of levels to descend is odd."""
    if levels_per_step not in (1, 2):
        raise InvalidArgumentError(f"levels_per_step must be 1 or 2; got {levels_per_step!r}")
    _check_tile(tile)
    if levels_per_step == 2 and tile < 16:
        raise InvalidArgumentError(f"tile must be >= 16 with two levels per step (a node has up to 16 "
                                   f"grandchildren); got {tile}")
    first = first_children(tree)
    L, last = tree.levels, tree.levels - 2
    steps = []

    def fits(level, a, b):  # descendants of [a, b) at levels level+1 .. last all <= tile
        for _ in range(level, last):
            a, b = first[a], first[b]
            if b - a > tile:
                return False
        return True

    def visit(level, ga, gb):  # nodes [ga, gb) of `level` sit at buffer positions 0..
        if level == last:
            steps.append(("leaves", level, ga, gb - ga, 0, int(first[ga])))
            return
        k = 2 if (levels_per_step == 2 and (last - level) % 2 == 0) else 1

        def down(v):
            for _ in range(k):
                v = first[v]
            return v

        a = ga
        while a < gb:
            # largest b with down(b) - down(a) <= tile
            ends = down(np.arange(a, gb + 1, dtype=np.int64)) if k == 2 else first[a:gb + 1]
            b = int(np.searchsorted(ends, ends[0] + tile, side="right")) - 1 + a
            b = max(b, a + 1)
            if bounded and fits(level, a, a + 1):
                lo, hi = a + 1, b  # fits(lo) holds; the largest b' <= b that fits
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if fits(level, a, mid):
                        lo = mid
                    else:
                        hi = mid - 1
                b = lo
            da, db = int(down(a)), int(down(b))
            steps.append(("expand" if k == 1 else "expand2", level, a, b - a, a - ga, da, db - da))
            visit(level + k, da, db)
            a = b

    if tree.num_nodes:
        d0 = tree.top_level
        visit(d0, int(tree.level_start[d0]), int(tree.level_start[d0 + 1]))
    return steps


def _check_tile(tile):
    """A buffer of ``tile`` codes must hold the children of one node (up to 4): a
    smaller one would be written past its end on the GPU."""
    if not isinstance(tile, (int, np.integer)) or isinstance(tile, bool) or tile < 4:
        raise InvalidArgumentError(f"tile must be an integer >= 4 (a node has up to 4 children); got {tile!r}")


def buffer_levels(tree, levels_per_step: int = 1):
    """The levels below the cached top whose codes a tree-only product writes to a
    buffer (every internal level; every other one with two levels per step)."""
    d0, last = tree.top_level, tree.levels - 2
    return [d for d in range(d0 + 1, last + 1) if levels_per_step == 1 or (last - d) % 2 == 0]


def split_frontier(tree):
    """The compact cached frontier of the block kernels: ``(base, delta)`` with
    ``base`` uint64, the code of the first node of level L-2 in each aligned block
    of ``BLOCK`` nodes, and ``delta`` uint32, each node's code minus its block's base
    (codes ascend within a level); ``None`` when some block spans 2**32 codes or more.
    4 bytes per node plus 8 per block, instead of 8 per node. The last frontier's
    result is kept (several matrices of one tree split it once)."""
    import weakref

    tree.with_frontier()
    F = tree.frontier
    if _SPLIT[0] is not None and _SPLIT[0]() is F and _SPLIT[2] == int(tree.level_start[tree.levels - 2]):
        return _SPLIT[1]
    out = _split_frontier(tree, F)
    ref = weakref.ref(F)
    _SPLIT[0], _SPLIT[1], _SPLIT[2] = ref, out, int(tree.level_start[tree.levels - 2])
    weakref.finalize(F, _forget_split, ref)  # the split is not kept beyond its frontier
    return out


_SPLIT = [None, None, None]  # (weakref to the last frontier, its split, its first node)


def _forget_split(ref):
    """Drop the kept split if it is still that of the frontier ``ref`` (an older frontier
    dying must not drop a newer one's)."""
    if _SPLIT[0] is ref:
        _SPLIT[0] = _SPLIT[1] = _SPLIT[2] = None


def _split_frontier(tree, F):
    n = int(F.shape[0])
    if n == 0:
        return None
    g0 = int(tree.level_start[tree.levels - 2])
    b0 = g0 // BLOCK
    nb = (g0 + n - 1) // BLOCK - b0 + 1
    starts = np.maximum(np.arange(b0, b0 + nb, dtype=np.int64) * BLOCK, g0) - g0
    base = np.ascontiguousarray(F[starts])
    delta = F - np.repeat(base, np.diff(np.append(starts, n)))
    if int(delta.max()) >= 1 << 32:
        return None
    return base, delta.astype(np.uint32)


def memory_plan(tree, *, tile=1 << 20, offsets="directory", cached_frontier=False, vectors=0,
                compact_frontier=False, levels_per_step=1, hub_outputs=0):
    """The device bytes of a product on ``tree``, before anything is allocated: the
    matrix (tree, directory, cached top or cached frontier), the frontier buffers of
    the tiles, the scan offsets, and ``vectors`` bytes of dense ``x`` and ``y``
    (a :class:`~distgraph.backends.gpu.memory.MemoryPlan`; ``.check()`` raises
    DeviceMemoryError when it does not fit). ``compact_frontier``: the frontier as
    :func:`split_frontier` stores it; ``levels_per_step``: as :func:`plan_tiles`;
    ``hub_outputs``: the padded hub outputs of :class:`DeviceMatrix` (8-byte entries, the
    widest element type: one buffer per element type and semiring in use)."""
    from .memory import MemoryPlan

    L = tree.levels
    sizes = np.diff(tree.level_start)
    items = {"k2tree.signatures": tree.sig.nbytes + 4, "k2tree.directory": tree.directory.nbytes}
    if tree.num_nodes and cached_frontier and compact_frontier:
        n = int(sizes[L - 2])
        g0 = int(tree.level_start[L - 2])
        items["k2tree.cached frontier"] = 4 * n + 8 * ((g0 + n - 1) // BLOCK - g0 // BLOCK + 1)
    elif tree.num_nodes and cached_frontier:
        items["k2tree.cached frontier"] = 8 * int(sizes[L - 2])
    elif tree.num_nodes:
        d0 = tree.top_level
        items["k2tree.cached top"] = 8 * int(sizes[d0])
        items["tile buffers"] = 8 * sum(min(int(tile), int(sizes[d])) for d in buffer_levels(tree, levels_per_step))
        if offsets == "scan":
            widest = max([int(sizes[d0])] + [min(int(tile), int(sizes[d])) for d in range(d0 + 1, L - 1)])
            items["scan offsets"] = 2 * 4 * widest
    if vectors:
        items["vectors x, y"] = int(vectors)
    if hub_outputs:
        items["padded hub outputs"] = 8 * HUB_PAD * int(hub_outputs)
    hints = ("a smaller tile (tile=2**16)", "cached_frontier=False (tree-only)", "a GPU with more memory")
    return MemoryPlan("k2-tree SpMV", items, hints)


def hub_outputs_for(tree, hub_outputs, prefetch, renumbered) -> int:
    """The padded hub outputs H of :class:`DeviceMatrix` (``hub_outputs``): an integer
    >= 0 as given (> 0 needs the prefetching leaves), or ``"auto"``:
    ``ceil(HUB_AUTO_FRACTION * n)`` for a renumbered square tree (``renumbered``: it had a
    ``perm``; degree order puts the hubs first) when the prefetching leaves run, else 0."""
    if isinstance(hub_outputs, str) and hub_outputs == "auto":
        if tree is None or not renumbered or not prefetch or tree.shape[0] != tree.shape[1]:
            return 0
        return int(math.ceil(HUB_AUTO_FRACTION * tree.shape[0]))
    if not isinstance(hub_outputs, (int, np.integer)) or isinstance(hub_outputs, bool) or hub_outputs < 0:
        raise InvalidArgumentError(f"hub_outputs must be 'auto' or an integer >= 0; got {hub_outputs!r}")
    if hub_outputs and not prefetch:
        raise InvalidArgumentError("hub_outputs > 0 needs the prefetching leaves (prefetch=True or 'auto' "
                                   "with the block kernels and chunks_per_block 2 or 4)")
    return int(hub_outputs)


def _flag(name, v):
    """True, False or "auto" (numpy booleans as booleans)."""
    if isinstance(v, str) and v == "auto":
        return "auto"
    if not isinstance(v, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True, False or 'auto'; got {v!r}")
    return bool(v)


def leaves_options(prefetch, lane_combine, *, block, chunks_per_block, aggregate):
    """``(prefetch, lane_combine)`` as :class:`DeviceMatrix` runs them, each given as
    True, False or ``"auto"``. ``block``: the block kernels run (directory offsets or the
    cached frontier, sample ``BLOCK``, ``kernels != "thread"``).

    The prefetching leaves exist for the block kernels with ``chunks_per_block`` in
    ``LEAVES_PRE`` and ``aggregate=False``; lane combining for those with
    ``chunks_per_block`` in ``LEAVES_PRE_LANES``. ``"auto"``: on where they exist, off
    elsewhere; ``True`` where they do not raises InvalidArgumentError; ``False``: off.
    Whether a product then runs them also depends on ``x`` (:func:`leaves_kernel`).

    >>> leaves_options("auto", "auto", block=True, chunks_per_block=4, aggregate=False)
    (True, True)
    >>> leaves_options("auto", "auto", block=True, chunks_per_block=2, aggregate=False)
    (True, False)
    >>> leaves_options("auto", "auto", block=True, chunks_per_block=8, aggregate=False)
    (False, False)
    """
    prefetch, lane_combine = _flag("prefetch", prefetch), _flag("lane_combine", lane_combine)
    can_pre = bool(block) and chunks_per_block in LEAVES_PRE and not aggregate
    if prefetch is True and not can_pre:
        raise InvalidArgumentError(f"prefetch=True needs the block kernels (directory offsets, sample={BLOCK}), "
                                   f"chunks_per_block in {tuple(LEAVES_PRE)} and aggregate=False")
    pre = can_pre and prefetch is not False
    can_lanes = pre and chunks_per_block in LEAVES_PRE_LANES
    if lane_combine is True and not can_lanes:
        raise InvalidArgumentError(f"lane_combine=True needs prefetch=True (or 'auto' where it applies) and "
                                   f"chunks_per_block in {tuple(LEAVES_PRE_LANES)}")
    return pre, can_lanes and lane_combine is not False


def leaves_kernel(*, block, chunks_per_block, B, prefetch, lane_combine, aggregate, aligned):
    """The name of the leaves kernel a product launches: ``prefetch`` and
    ``lane_combine`` as resolved by :func:`leaves_options`, ``B`` the vectors of the
    product, ``aligned`` whether the prefetching leaves can read its ``x``
    (:func:`_aligned4`). Batches and K = 1 run ``distgraph_k2tree_leaves_blk``; the
    prefetching leaves need an aligned ``x``, else the K-chunk leaves run."""
    if not block:
        return LEAVES_THREAD
    K = chunks_per_block if B == 1 else 1
    if K == 1:
        return LEAVES_K[1]
    if prefetch and aligned:
        return LEAVES_PRE_LANES[K] if lane_combine else LEAVES_PRE[K]
    return LEAVES_AGG[K] if aggregate else LEAVES_K[K]


class DeviceMatrix:
    """One rank's block on the GPU (a k2-tree, or a CSR ``(indptr, indices)``).

    Options as in the module docstring; ``kernels`` one of ``KERNELS``;
    ``chunks_per_block``: ``K`` of the single-vector leaves (1, 2, 4 or 8 aligned
    chunks of 256 nodes per block; 1 is ``distgraph_k2tree_leaves_blk``);
    ``aggregate``: the single-vector leaves combine the updates of a block in shared
    memory first (block kernels with K = 2, 4 or 8; indices of ``y`` below 2**32 - 1),
    in a table of ``aggregate_slots`` (one of ``AGG_SLOTS``) slots per chunk; 3-38x
    slower on Kronecker graphs (see the module docstring), not a default;
    ``prefetch``: the single-vector leaves load each 4 x 4 block's inputs with its code
    (block kernels with K = 2 or 4, not with ``aggregate``; see the module docstring);
    ``lane_combine``: with ``prefetch`` and K = 4, adjacent lanes updating the same entry
    of ``y`` combine first (module docstring). Each True, False or ``"auto"`` (default: on
    where they apply, :func:`leaves_options`; measured faster, module docstring).
    ``hub_outputs`` (H): the prefetching leaves accumulate the first H entries of ``y`` in a
    line of ``HUB_PAD`` entries each and fold them in after the leaves
    (``distgraph_k2tree_hub_fold``). For trees whose hubs were numbered first
    (``reorder="degree"``), where the hub rows' atomics from every SM would otherwise share
    a few lines of ``y``: that made degree-ordered trees 1.04-1.32x slower than unreordered
    ones (head orders up to 1.7x); padded, they are faster (module docstring). The padded
    outputs are one buffer per element type and semiring, shared by the products of this
    matrix: two products of it must not run at once on different streams. ``"auto"`` (default): see
    :func:`hub_outputs_for` (0.3% of the outputs of a renumbered tree, else none).
    ``hubs_first``: whether the tree's first ids are its hubs, for "auto" (None: when the tree
    carries a permutation; :class:`distgraph.SpMVPlan` passes True for ``reorder="degree"``
    and False for ``"rcm"``, whose first ids are not hubs).

    ``info``: ``prefetch`` and ``lane_combine`` as resolved, and ``leaves``, the leaves
    kernel of the last product (None before the first, and for a CSR block): the
    prefetching leaves run only for single vectors whose ``x`` is C-contiguous from a
    16-byte boundary (:func:`leaves_kernel`)."""

    def __init__(self, tree=None, csr=None, *, tile=1 << 20, offsets="directory", cached_frontier=False,
                 kernels="auto", bounded_tiles=True, csr_width=None, compact_frontier=True,
                 levels_per_step=1, chunks_per_block=4, aggregate=False, aggregate_slots=256,
                 prefetch="auto", lane_combine="auto", hub_outputs="auto", hubs_first=None):
        if kernels not in KERNELS:
            raise InvalidArgumentError(f"kernels must be one of {', '.join(KERNELS)}; got {kernels!r}")
        if offsets not in ("directory", "scan"):
            raise InvalidArgumentError(f"offsets must be 'directory' or 'scan'; got {offsets!r}")
        if (tree is None) == (csr is None):
            raise InvalidArgumentError("DeviceMatrix needs exactly one of tree= and csr=")
        if tree is not None:
            _check_tile(tile)
        self.perm = None  # (perm, inverse) on the device for a reordered tree
        if tree is not None and tree.perm is not None:
            tree, perm, inv = tree.raw(), tree.perm, tree.inverse_perm
            idt = np.int32 if perm.shape[0] < 2**31 else np.int64
            cp0 = import_cupy()
            self.perm = (cp0.asarray(perm.astype(idt)), cp0.asarray(inv.astype(idt)))
        self.tree = tree
        self.tile = int(tile)
        self.use_dir = offsets == "directory"
        self.cached = bool(cached_frontier)
        # block kernels: directory offsets with one sample per block of BLOCK nodes
        can_block = tree is not None and (self.use_dir or self.cached) and tree.sample == BLOCK
        if kernels == "block" and not can_block:
            raise InvalidArgumentError(f"kernels={kernels!r} needs directory offsets and sample={BLOCK}")
        if (not isinstance(chunks_per_block, (int, np.integer)) or isinstance(chunks_per_block, bool)
                or chunks_per_block not in CHUNKS_PER_BLOCK):  # (True == 1 and 4.0 == 4 are in the tuple)
            raise InvalidArgumentError(f"chunks_per_block must be one of {CHUNKS_PER_BLOCK}; "
                                       f"got {chunks_per_block!r}")
        self.chunks_per_block = int(chunks_per_block)
        if not isinstance(aggregate, (bool, np.bool_)):
            raise InvalidArgumentError(f"aggregate must be True or False; got {aggregate!r}")
        if (not isinstance(aggregate_slots, (int, np.integer)) or isinstance(aggregate_slots, bool)
                or aggregate_slots not in AGG_SLOTS):
            raise InvalidArgumentError(f"aggregate_slots must be one of {AGG_SLOTS}; got {aggregate_slots!r}")
        self.aggregate, self.aggregate_slots = bool(aggregate), int(aggregate_slots)
        if self.aggregate:
            if not can_block or kernels == "thread" or self.chunks_per_block not in LEAVES_AGG:
                raise InvalidArgumentError(f"aggregate=True needs the block kernels (directory offsets, "
                                           f"sample={BLOCK}) and chunks_per_block in {tuple(LEAVES_AGG)}")
            if max(tree.shape) >= 2**32 - 1:  # the table's keys are uint32, 2**32 - 1 the empty one
                raise InvalidArgumentError(f"aggregate=True needs fewer than 2**32 - 1 rows and columns; "
                                           f"got {tree.shape}")
        self.block = can_block and kernels != "thread"
        # "auto": the prefetching leaves (lanes combined at K = 4) wherever they apply
        self.prefetch, self.lane_combine = leaves_options(prefetch, lane_combine, block=self.block,
                                                          chunks_per_block=self.chunks_per_block,
                                                          aggregate=self.aggregate)
        self.info = {"prefetch": self.prefetch, "lane_combine": self.lane_combine, "leaves": None}
        if hubs_first is not None and not isinstance(hubs_first, (bool, np.bool_)):
            raise InvalidArgumentError(f"hubs_first must be True, False or None; got {hubs_first!r}")
        self.hub_outputs = hub_outputs_for(tree, hub_outputs, self.prefetch,
                                           renumbered=self.perm is not None if hubs_first is None else bool(hubs_first))
        self._yhub = {}  # (dtype, semiring code, hub) -> the padded hub outputs, kept at the zero
        cp = import_cupy()
        self.cp = cp
        self.arrays = {}
        if csr is not None:
            ip, ix = csr
            if ix.size and int(np.max(ix)) >= 2**31:
                raise InvalidArgumentError("CSR column ids must fit in int32 on the GPU")
            self.arrays["indptr"] = cp.asarray(np.asarray(ip, np.int64))
            self.arrays["indices"] = cp.asarray(np.asarray(ix, np.int32))
            self.nrows = int(len(ip) - 1)
            # lanes per row of a single-vector product: the power of two >= the mean
            # degree, at most 32 (1: one thread per row)
            mean = len(ix) / max(self.nrows, 1)
            self.csr_width = int(min(32, 1 << max(0, int(np.ceil(np.log2(max(mean, 1.0)))))))
            if csr_width is not None:
                if csr_width not in (1, 2, 4, 8, 16, 32):
                    raise InvalidArgumentError(f"csr_width must be a power of two <= 32; got {csr_width!r}")
                self.csr_width = int(csr_width)
            return
        # a tree of 2**32 nodes or more has a 64-bit directory (int64): kernels with a 64-bit dir_t
        self.dir64 = tree.directory.dtype != np.uint32
        if tree.sample % 2:
            raise InvalidArgumentError(f"sample must be even; got {tree.sample}")
        split = split_frontier(tree) if (self.cached and self.block and compact_frontier) else None
        self.compact = split is not None
        if levels_per_step not in (1, 2) or (levels_per_step == 2 and not self.block):
            raise InvalidArgumentError("levels_per_step must be 1, or 2 with the block kernels "
                                       f"(directory offsets, sample={BLOCK}); got {levels_per_step!r}")
        self.levels_per_step = 1 if self.cached else int(levels_per_step)
        self.plan = memory_plan(tree, tile=self.tile, offsets=offsets, cached_frontier=self.cached,
                                compact_frontier=self.compact, levels_per_step=self.levels_per_step,
                                hub_outputs=self.hub_outputs)
        self.plan.check()  # before allocating anything
        a = self.arrays
        a["sig"] = cp.asarray(np.concatenate([tree.sig, np.zeros(4, np.uint8)]))  # word reads stay in bounds
        a["dir"] = cp.asarray(np.asarray(tree.directory, np.uint64) if self.dir64 else tree.directory)
        if tree.num_nodes == 0:
            self.steps = []
            return
        L = tree.levels
        sizes = np.diff(tree.level_start)
        if self.cached:
            if self.compact:
                a["frontier_base"] = cp.asarray(split[0])
                a["frontier_delta"] = cp.asarray(split[1])
                self.bufs = {L - 2: a["frontier_base"]}  # not read: the kernels take base + delta
            else:
                tree.with_frontier()
                a["frontier"] = cp.asarray(tree.frontier)
                self.bufs = {L - 2: a["frontier"]}
            self.steps = [("leaves", L - 2, int(tree.level_start[L - 2]), int(sizes[L - 2]), 0,
                           int(tree.level_start[L - 1]))]
        else:
            self.steps = plan_tiles(tree, self.tile, bounded_tiles, self.levels_per_step)
            d0 = tree.top_level
            self.bufs = {d0: cp.asarray(tree.top_codes)}
            for d in buffer_levels(tree, self.levels_per_step):
                self.bufs[d] = cp.empty(min(self.tile, int(sizes[d])), dtype=cp.uint64)
            for d, b in self.bufs.items():
                a[f"codes{d}"] = b
            if not self.use_dir:
                widest = max(s[3] for s in self.steps)
                a["fan"] = cp.empty(widest, dtype=cp.int32)
                a["scan"] = cp.empty(widest, dtype=cp.int32)

    def nbytes(self) -> dict:
        """Device bytes held by this matrix: ``matrix`` (tree, directory, top codes and
        cached frontier [and permutation], or CSR) and ``scratch`` (frontier buffers, scan offsets,
        the padded hub outputs made so far)."""
        top = f"codes{self.tree.top_level}" if self.tree is not None and not self.cached else None
        mat = sum(int(v.nbytes) for k, v in self.arrays.items()
                  if k in ("sig", "dir", "frontier", "frontier_base", "frontier_delta", "indptr", "indices", top))
        tot = sum(int(v.nbytes) for v in self.arrays.values())
        if self.perm is not None:  # a reordered tree's permutation and its inverse
            p = int(self.perm[0].nbytes + self.perm[1].nbytes)
            mat, tot = mat + p, tot + p
        hub = sum(int(b.nbytes) for b in getattr(self, "_yhub", {}).values())
        return {"matrix": mat, "scratch": tot - mat + hub}

    def _module(self, sr, dtype):
        defines = {"SEMIRING": sr.code, "VALUE_T": _VALUE_T[np.dtype(dtype)]}
        if getattr(self, "dir64", False):
            defines["DIR_T"] = "unsigned long long"
        if getattr(self, "aggregate", False) and self.aggregate_slots != 256:
            defines["DG_K2_AGG_SLOTS"] = self.aggregate_slots
        return get_module("k2tree_spmv", defines=defines)

    def multiply(self, x, sr, left=False, out=None):
        """``y`` (host numpy, or the device array ``out``) of one product; ``x`` is an
        ``(k, B)`` host or device array already in ``sr.output_dtype``. A reordered
        tree (``tree.perm``) takes ``x`` and gives ``y`` in the caller's ids: one
        gather of ``x`` before and one of ``y`` after (:func:`permuted_product`);
        :meth:`run` and :meth:`graph` work on the stored ids."""
        cp = self.cp
        xd = cp.asarray(x)
        if xd.dtype not in _VALUE_T:
            raise InvalidArgumentError(f"x dtype {xd.dtype} is not supported on the GPU")
        if self.perm is not None:
            y = permuted_product(self.perm[0], self.perm[1], xd,
                                 lambda xs: self._product(xs, sr, left, None))
            if out is not None:
                out[...] = y
                return out
            return cp.asnumpy(y)
        y = self._product(xd, sr, left, out)
        return y if out is not None else cp.asnumpy(y)

    def _product(self, xd, sr, left, out):
        B = int(xd.shape[1])
        nout = (self.tree.shape[1] if left else self.tree.shape[0]) if self.tree is not None else self.nrows
        y = out if out is not None else self.cp.empty((nout, B), dtype=xd.dtype)
        y.fill(sr.zero(xd.dtype))
        self.run(xd, y, sr, left)
        return y

    def graph(self, xd, y, sr, left):
        """A CUDA graph of one whole product into ``y`` (fill + every launch), recorded
        once and replayed with one call (Sec. 3.4); ``None`` where capture fails (scan
        offsets, whose cumsum allocates) or is unsupported."""
        cp = self.cp
        if not (self.use_dir or self.cached) or "indptr" in self.arrays:
            return None
        y.fill(sr.zero(xd.dtype))  # compile and load everything outside the capture
        self.run(xd, y, sr, left)
        cp.cuda.Device().synchronize()
        stream = cp.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                y.fill(sr.zero(xd.dtype))
                self.run(xd, y, sr, left)
                g = stream.end_capture()
            g.upload() if hasattr(g, "upload") else None
            return g
        except Exception:
            try:
                if stream.is_capturing():
                    stream.end_capture()
            except Exception:
                pass
            return None

    def run(self, xd, y, sr, left):
        """Launch one product into the device array ``y`` (already holding the zero)."""
        cp = self.cp
        mod = self._module(sr, xd.dtype)
        B = int(xd.shape[1])
        a = self.arrays
        if "indptr" in a:
            if B == 1 and self.csr_width > 1:
                f = mod.get_function("distgraph_csr_rows_vector")
                nt = self.nrows * self.csr_width
                if nt:
                    f(((nt + THREADS - 1) // THREADS,), (THREADS,),
                      (a["indptr"], a["indices"], np.int64(self.nrows), xd, y, np.int32(self.csr_width)))
                return
            f = mod.get_function("distgraph_csr_rows")
            nt = self.nrows * B
            if nt:
                f(((nt + THREADS - 1) // THREADS,), (THREADS,),
                  (a["indptr"], a["indices"], np.int64(self.nrows), xd, y, np.int32(B)))
            return
        if self.block:
            self._run_block(mod, xd, y, B, left, sr)
            return
        expand = mod.get_function("distgraph_k2tree_expand")
        leaves = mod.get_function(LEAVES_THREAD)
        self.info["leaves"] = LEAVES_THREAD
        fanout = mod.get_function("distgraph_k2tree_fanout")
        sig, dr, S = a["sig"], a["dir"], np.int32(self.tree.sample)
        use_dir = np.int32(1 if (self.use_dir or self.cached) else 0)
        scan = a.get("scan", a["dir"])  # a dummy pointer in directory mode
        for st in self.steps:
            level, g0, n, pos = st[1], st[2], st[3], st[4]
            src = self.bufs[level][pos:pos + n]
            if not use_dir:
                fan = a["fan"][:n]
                fanout(((n + THREADS - 1) // THREADS,), (THREADS,), (sig, np.int64(g0), np.int64(n), fan))
                cp.cumsum(fan, dtype=cp.int32, out=scan[:n])
            if st[0] == "expand":
                expand(((n + THREADS - 1) // THREADS,), (THREADS,),
                       (sig, dr, S, use_dir, scan, src, np.int64(g0), np.int64(n), np.int64(st[5]),
                        self.bufs[level + 1]))
            else:
                nt = n * B
                leaves(((nt + THREADS - 1) // THREADS,), (THREADS,),
                       (sig, dr, S, use_dir, scan, src, np.int64(g0), np.int64(n), np.int64(st[5]), xd, y,
                        np.int32(B), np.int32(1 if left else 0)))

    def _run_block(self, mod, xd, y, B, left, sr):
        """The launches of :meth:`run` with the block kernels (one block per directory
        sample of ``BLOCK`` nodes; grid = the aligned blocks meeting the tile)."""
        expand = mod.get_function("distgraph_k2tree_expand_blk")
        expand2 = mod.get_function("distgraph_k2tree_expand2_blk")
        a = self.arrays
        sig, dr = a["sig"], a["dir"]
        null = np.uint64(0)  # a null pointer: codes come from `src`
        delta, base = (a["frontier_delta"], a["frontier_base"]) if self.compact else (null, null)
        K = self.chunks_per_block if B == 1 else 1
        name = leaves_kernel(block=True, chunks_per_block=self.chunks_per_block, B=B, prefetch=self.prefetch,
                             lane_combine=self.lane_combine, aggregate=self.aggregate,
                             aligned=self.prefetch and K > 1 and _aligned4(xd))
        self.info["leaves"] = name
        leaves = mod.get_function(name)
        pre = name in LEAVES_PRE.values() or name in LEAVES_PRE_LANES.values()
        if pre:
            nin = np.int64(xd.shape[0])
            hub = min(self.hub_outputs, int(y.shape[0])) if self.hub_outputs else 0
            yhub = self._hub_buffer(xd.dtype, hub, sr) if hub else y  # y: a pointer never used
        for st in self.steps:
            level, g0, n, pos = st[1], st[2], st[3], st[4]
            src = self.bufs[level][pos:pos + n]
            grid = ((g0 + n - 1) // BLOCK - g0 // BLOCK + 1,)
            if st[0] == "expand":
                expand(grid, (BLOCK,), (sig, dr, src, np.int64(g0), np.int64(n), np.int64(st[5]),
                                        self.bufs[level + 1]))
            elif st[0] == "expand2":
                expand2(grid, (BLOCK,), (sig, dr, src, np.int64(g0), np.int64(n), np.int64(st[5]),
                                         self.bufs[level + 2]))
            elif pre:
                leaves(((grid[0] + K - 1) // K,), (BLOCK,), (sig, dr, src, delta, base, np.int64(g0), np.int64(n),
                                                            xd, nin, y, np.int32(1 if left else 0),
                                                            np.int64(hub), yhub))
            elif K > 1:
                leaves(((grid[0] + K - 1) // K,), (BLOCK,), (sig, dr, src, delta, base, np.int64(g0), np.int64(n),
                                                            xd, y, np.int32(1 if left else 0)))
            else:
                leaves(grid, (BLOCK,), (sig, dr, src, delta, base, np.int64(g0), np.int64(n), xd, y, np.int32(B),
                                        np.int32(1 if left else 0)))

        if pre and hub:
            mod.get_function("distgraph_k2tree_hub_fold")(((hub + THREADS - 1) // THREADS,), (THREADS,),
                                                          (y, yhub, np.int64(hub)))

    def _hub_buffer(self, dtype, hub, sr):
        """The padded hub outputs (``HUB_PAD`` entries per output, all at the semiring's
        zero; the fold kernel resets them after each product), made once per element type
        and semiring outside any graph capture (:meth:`graph` runs a product first)."""
        key = (np.dtype(dtype).str, sr.code, hub)
        b = self._yhub.get(key)
        if b is None:
            b = self._yhub[key] = self.cp.full((hub * HUB_PAD,), sr.zero(dtype), dtype=dtype)
        return b


def _aligned4(xd):
    """Whether the prefetching leaves can read ``xd`` 4 entries at a time (16-byte vector
    loads, 4-byte for bool, at entries 4i): C-contiguous from a 16-byte boundary (4 bytes
    for 1-byte entries)."""
    a = min(16, 4 * xd.dtype.itemsize)
    return bool(xd.flags.c_contiguous) and xd.data.ptr % a == 0


def permuted_product(perm, inv, x, product):
    """``product(x[inv])[perm]``: a product on the stored ids of a reordered tree with
    ``x`` and the result in the caller's ids (``perm``: ``new_id``, ``inv`` its
    inverse; numpy or CuPy arrays alike, gathers along the first axis)."""
    return product(x[inv])[perm]


def tree_from_csr(indptr, indices, shape=None, **kw):
    """A :class:`~distgraph.formats.k2tree.K2Tree` of a CSR pattern with the Morton
    encoding and the sort done on the GPU (CuPy's radix sort), the levels on the host
    (:meth:`K2Tree.from_codes` with ``presorted=True``). Same tree as
    ``K2Tree.from_csr``; ``kw`` as there."""
    from ...formats.k2tree import K2Tree

    cp = import_cupy()
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    shape = (n, n) if shape is None else shape
    m = int(indptr[-1])
    ip = cp.asarray(indptr)
    rows = cp.searchsorted(ip, cp.arange(m, dtype=cp.int64), side="right") - 1
    codes = _spread_gpu(cp, rows) << cp.uint64(1)
    del rows
    codes |= _spread_gpu(cp, cp.asarray(indices))
    codes = cp.sort(codes)
    host = cp.asnumpy(codes)
    del codes, ip
    cp.get_default_memory_pool().free_all_blocks()
    return K2Tree.from_codes(host, shape, presorted=True, **kw)


def _spread_gpu(cp, v):
    v = v.astype(cp.uint64) & cp.uint64(0x00000000FFFFFFFF)
    for sh, m in ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
                  (2, 0x3333333333333333), (1, 0x5555555555555555)):
        v = (v | (v << cp.uint64(sh))) & cp.uint64(m)
    return v
