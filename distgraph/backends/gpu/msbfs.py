"""Multi-source BFS on tensor cores (BLEST Alg. 5): the host side of ``kernels/msbfs.cu``.

A batch of up to 512 sources (one batch of the shared driver
:func:`distgraph.algorithms.msbfs.run_batches`) runs as ``ceil(k / kappa)`` launches of
``kappa`` in {32, 64, 128, 256} concurrent BFSs over the BVSS of the graph ``H`` the
driver searches.  The kernels add, per vertex (or per source), the exact integer sums the
CPU backend adds -- farness (uint64), reach and the fixed-point harmonic limbs of
:mod:`distgraph.backends.cpu.bits` -- so the driver's checkpoint, progress bar and MPI
reduction are the CPU backend's and results are bit-identical to it.

Two modes, picked by :func:`msbfs_plan` (``mode="auto"``) or forced:

``replicated``
    Every rank holds the whole BVSS (BLEST's 100-GPU run); the driver deals batches to
    ranks; one cooperative kernel launch runs all levels of a batch (``groups`` launches'
    worth at once, each on a part of the grid), or -- ``groups="blocks"``, the default on
    small graphs -- one kernel runs many kappa-source batches, one thread block each,
    dealt by an atomic counter, levels separated by block barriers only (small and
    high-diameter graphs, whose levels cannot fill the GPU).  In that schedule, with
    ``symmetric=True`` (closeness of every vertex of an undirected graph), per-vertex sums
    are taken per source: farness of v = sum of d(v, u) over u, the sum BLEST keeps.
``partitioned``
    For a BVSS larger than one GPU: rank ``r`` owns the rows (pulling vertices) of slice
    sets ``[bounds[r], bounds[r+1])`` (balanced by in-arcs) and the BVSS of those rows
    only.  Every rank runs every batch; a level is stage 1 on the local queue, stage 2 on
    the own slice sets, then the own frontier words ``F``, ``act`` and ``wasact`` are put
    into every peer's symmetric copies with NVSHMEM (:mod:`distgraph.pgas`), a barrier,
    and each rank builds its next queue from the now complete ``wasact``.  Per-batch
    sums (non-zero only at own vertices) are added over ranks with MPI.  No bottom-up
    levels in this mode (the switch test needs global counts each level).  The
    symmetric heap must hold ``F``, ``act`` and ``wasact`` (about ``1.13 * kappa / 8``
    bytes per vertex): set ``NVSHMEM_SYMMETRIC_SIZE`` (default 1 GiB) above that.
``stepwise``
    The partitioned code on one rank without NVSHMEM (one launch per stage): a second
    code path to check the kernels against, and no cooperative launch needed.

Layout helpers (:func:`get_vi`, :func:`exchange_ranges`, :func:`slice_set_bounds`) and
:func:`emulate_batch`, a numpy model of the kernels step by step (the tests check it
against the CPU backend in CI, where there is no GPU), need neither CuPy nor a GPU.

References
----------
D. Elbek and K. Kaya, "Graph Traversal on Tensor Cores: A BFS Framework for Modern GPUs"
(BLEST), arXiv:2606.05081, 2026, Sec. 6 (Alg. 5, Eq. 7).
"""

from __future__ import annotations

import sys

import numpy as np

from ...errors import DeviceMemoryError, InvalidArgumentError, expect
from ...formats.bvss import SIGMA, TAU, THETA, build_bvss
from .memory import MemoryPlan, format_bytes

__all__ = ["KAPPAS", "MODES", "get_vi", "exchange_ranges", "slice_set_bounds", "rows_subgraph",
           "emulate_batch", "msbfs_plan", "auto_groups", "auto_schedule", "sparse_share", "auto_sparse",
           "SPARSE_CHOICES", "PULL_CHOICES", "GpuMSBFS"]

#: kappa 512 (sixteen words per element) was built and measured for the pull kernels of the block
#: schedule (8d6659b, reverted): exact (229 GPU tests passed) but road-NY took 4.29 s against 1.49 s
#: for 256, cond-mat-2005 38.4 against 16.7 ms, with blocks of 1024 or 512 threads, although compact
#: balls of 512 cut the events of a run to 0.67x (31.5 instead of 23.4 per vertex and batch, host
#: count, benchmarks/results/closeness_batch_order_cpu_k512.json): the 64-register cap leaves too
#: few elements of 64 bytes in flight per thread (benchmarks/results/session10_x2/call2/).
KAPPAS = (32, 64, 128, 256)
MODES = ("auto", "replicated", "partitioned", "stepwise")
BLOCK = 256
#: ``groups="blocks"``: the threads per block (one block per kappa-source batch) allowed.  At
#: least kappa (the per-source counts of a level are flushed by one thread per BFS), at most
#: the 1024 of a CUDA block.
BLOCK_THREADS = (256, 512, 1024)
#: the most threads an SM holds (sm_80/sm_90): ``block_threads * min_blocks`` may not exceed it
SM_THREADS = 2048
#: default bottom-up switch: ``out-arcs of the frontier * BU_RATIO > in-arcs of unfinished
#: vertices`` (the CPU backend's test); 0 disables bottom-up levels.  1, not the CPU's 4:
#: a top-down level over BVSS costs less per arc than a bottom-up one on scale-free graphs
#: (kron:18 on the H200: 1.16e12 edge visits/s with 1, 1.07e12 never, 8.1e11 with 4, 16 or
#: 64).  Road-like and small graphs prefer 4 (road-NY 1.39e10 vs 1.02e10, email-Enron
#: 5.1e11 vs 4.6e11); benchmarks/results/gpu_closeness_profile.json.
BU_RATIO = 1
#: stage 1 uses the per-BFS tensor-core loop (ballot + 2 MMAs per active BFS) on a VSS when
#: ``popc(activeSets[s]) <= TC_RATIO * (frontier vertices of s)``, else ORs whole kappa-bit
#: elements on CUDA cores (about 4 MMA-loop iterations cost one element OR of W words
#: into 4 rows).
TC_RATIO = 4
#: bottom-up gives a warp to each vertex with more in-arcs than this, a thread to the others.
BU_HEAVY = 32
#: ``groups="auto"``: 4 concurrent launches up to this many arcs, 2 up to twice as many.
GROUPS_ARCS = 2**21
#: ``groups="auto"``: one block per batch (``"blocks"``) up to this many arcs.
BLOCKS_ARCS = 2**22
#: ``sparse="auto"``: stage 1's one-slice-per-lane path for VSSs of at most 32 slices
#: (``DG_MS_SPARSE``, :func:`sparse_share`) when at least this share of the VSSs are that sparse.
#: On a sparse VSS the MMA loop costs ~28 instructions per active BFS (2 BMMAs) and a flush of 4
#: rows per lane with up to 4 dependent round trips; the sparse path ~23 instructions per step
#: (1-3 steps) and one row's flush (host replay of road-NY's first two ball batches: ~540-590
#: warp instructions per queued VSS fall to ~160, benchmarks/results/msbfs_sparse_share.json).
#: The path costs one more ballot on every VSS it does not take.  Measured on an H200 (blocks of
#: 1024 threads, every source, totals equal to the path's absence;
#: benchmarks/results/session6_x2/call6/h1/gpu_closeness_sparse.json): road-NY (every VSS
#: sparse) 2.67 -> 1.71 s, cond-mat-2005 29.2 -> 25.2 ms and email-Enron 13.3 -> 11.0 ms (69% of
#: their VSSs sparse).  Kronecker and urand graphs hold 12-23% sparse VSSs at scales 16-18 after
#: the default reordering (Kronecker with Jaccard 19-23%, urand with RCM 12%; 9-18% in other
#: orders; benchmarks/results/msbfs_sparse_share_synthetic.json) and were not measured with it:
#: they stay off.
SPARSE_SHARE = 0.6
#: ``sparse`` values: "auto" (:data:`SPARSE_SHARE`), "on"/True, "off"/False.
SPARSE_CHOICES = ("auto", "on", "off", True, False)
#: ``shared_dbits``: the most bytes of dirty bits kept in shared memory (the dynamic shared
#: memory a launch gets without opting in).
SHARED_DBITS_MAX = 48 * 1024
#: ``pull`` values: "auto" (the pull kernel where stage 1 would take the sparse path and no vertex
#: has more than :data:`PULL_MAX_IN_DEGREE` in-arcs), "on"/True (block schedule), "off"/False.
PULL_CHOICES = ("auto", "on", "off", True, False)
#: ``pull_candidates``: the vertices a pull level evaluates: "sets" (every vertex of a slice set
#: holding an out-neighbour of the previous frontier, distgraph_msbfs_pull_blocks) or "vertices"
#: (exactly those out-neighbours, deduplicated by a bit per vertex,
#: distgraph_msbfs_pull_vertex_blocks).
#: "auto": "vertices" where the bit per vertex fits in shared memory (with the counters, as the
#: candidate bits of "sets" must), the graph has at most PULL_VERTEX_MEAN_DEGREE arcs per
#: vertex and no vertex more than PULL_MAX_IN_DEGREE out-arcs (one thread marks a vertex's).
#: H200, closeness of every vertex, blocks of 1024, ball order (benchmarks/results/
#: session9_x2/call4/s/): road-NY (2.8 arcs per vertex) 1.345 s against 1.535 s with "sets",
#: cond-mat-2005 (8.7) 18.0 against 17.1 ms.  Since the pull marks the next level's candidates
#: (444c94d): road-NY 1.204-1.219 s (session10_x2/call4, call6); cond-mat-2005 about even, 16.4 /
#: 16.7 ms against 17.0 / 16.6 ms with "sets" (call4, call8).
PULL_CANDIDATES = ("auto", "sets", "vertices")
PULL_VERTEX_MEAN_DEGREE = 4
#: The pull kernel scans a vertex's in-arcs in one thread, so a level waits for its longest scan.
#: H200, every source, blocks of 1024 threads (benchmarks/results/session7_x2/call6/): road-NY
#: (largest in-degree 8) 1.60 s against 1.73 s for stage 1 + 2, cond-mat-2005 (278) 16.3 against
#: 18.7 ms, email-Enron (1383) 11.7 against 9.0 ms.
PULL_MAX_IN_DEGREE = 512


def pull_bit_words(n: int, vertices: bool) -> int:
    """uint32 words of one candidate bit array of a pull block: a bit per vertex
    (``vertices``) or per slice set (the set kernel keeps two such arrays, level parity)."""
    return (max(int(n), 1) if vertices else max((int(n) + SIGMA - 1) // SIGMA, 1)) // 32 + 1


def pull_bits_shared(n: int, vertices: bool) -> bool:
    """Whether a pull block's candidate bits fit in shared memory beside its 4 KB of static
    counters (:data:`SHARED_DBITS_MAX`, read at the call)."""
    return (4 if vertices else 8) * pull_bit_words(n, vertices) <= SHARED_DBITS_MAX - 4096


def ell4(tptr, tidx, n: int, width: int = 4) -> np.ndarray:
    """The first ``width`` in-arcs of every vertex (``tptr``/``tidx``: CSR of the transpose), -1
    where it has fewer: int32 ``(max(n, 1), width)``, the ``ell`` of the pull kernel (4) and of
    the profile wave (8)."""
    tptr = np.asarray(tptr, dtype=np.int64)
    out = np.full((max(int(n), 1), int(width)), -1, np.int32)
    deg = np.diff(tptr)
    for k in range(int(width)):
        has = np.flatnonzero(deg > k)
        out[has, k] = np.asarray(tidx)[tptr[has] + k]
    return out


def set_graph(tptr, tidx, n: int):
    """The slice-set graph of the pull kernel (``distgraph_msbfs_pull_blocks``): an arc
    ``s -> t`` for every slice set ``t`` holding the head ``u`` of an arc ``v -> u`` of
    the searched graph with ``v`` in set ``s`` (``tptr``/``tidx``: its in-arcs, CSR of the
    transpose).  A set of level ``l``'s frontier makes its successors the candidates of
    level ``l + 1``.  int32 ``(rho + 1,)`` pointers and int32 heads, heads sorted."""
    rho = (int(n) + SIGMA - 1) // SIGMA
    tptr = np.asarray(tptr, dtype=np.int64)
    if rho == 0 or tptr[-1] == 0:
        return np.zeros(rho + 1, np.int32), np.zeros(0, np.int32)
    heads = np.repeat(np.arange(n, dtype=np.int64) // SIGMA, np.diff(tptr))
    key = np.sort((np.asarray(tidx, dtype=np.int64) // SIGMA) * rho + heads)
    if key.size:   # np.unique (numpy 2.4): 0.10 s on road-NY's 730k arcs, sorting 0.01 s (host_unique_cost.json)
        key = key[np.r_[True, key[1:] != key[:-1]]]
    s, t = np.divmod(key, rho)
    if key.shape[0] >= 2**31:
        raise InvalidArgumentError(f"pull: the slice-set graph has {key.shape[0]} arcs, more than the kernel's "
                                   "int32 pointers hold; use pull='off'")
    ptr = np.zeros(rho + 1, np.int64)
    np.cumsum(np.bincount(s, minlength=rho), out=ptr[1:])
    return ptr.astype(np.int32), t.astype(np.int32)


# ============================================================================ layout
def get_vi(u, rho):
    """BLEST's getVI: the storage position of vertex ``u``, ``(u % 8) * rho + u // 8``."""
    return (np.asarray(u, dtype=np.int64) % SIGMA) * rho + np.asarray(u, dtype=np.int64) // SIGMA


def words(kappa: int) -> int:
    """uint32 words per kappa-bit element."""
    return kappa // 32


def full_words(nsrc: int, W: int) -> np.ndarray:
    """The element with bits ``0 .. nsrc-1`` set (every BFS of the launch)."""
    bits = np.zeros(32 * W, dtype=np.uint8)
    bits[:nsrc] = 1
    return np.packbits(bits, bitorder="little").view(np.uint32).copy()


def slice_set_bounds(in_deg: np.ndarray, parts: int) -> np.ndarray:
    """Cut the ``rho`` slice sets into ``parts`` contiguous blocks of about equal in-arcs
    (the BVSS slices of a block's rows) plus one per slice set; int64 ``(parts + 1,)``."""
    n = in_deg.shape[0]
    rho = (n + SIGMA - 1) // SIGMA
    w = np.zeros(rho * SIGMA, dtype=np.int64)
    w[:n] = in_deg
    cost = w.reshape(rho, SIGMA).sum(axis=1) + 1
    cum = np.cumsum(cost)
    targets = cum[-1] * np.arange(1, parts, dtype=np.float64) / parts if rho else np.zeros(parts - 1)
    inner = np.searchsorted(cum, targets, side="left") + 1 if rho else np.zeros(parts - 1, np.int64)
    b = np.concatenate([[0], np.minimum(inner, rho), [rho]]).astype(np.int64)
    return np.maximum.accumulate(b)


def exchange_ranges(lo: int, hi: int, rho: int, W: int):
    """What a rank owning slice sets ``[lo, hi)`` sends to its peers after stage 2, as
    ``(array, offset, count)`` element ranges (in uint32 words for ``F`` and ``act``, bytes
    for ``wasact``): its 8 getVI runs of ``F``, its ``act`` words and ``wasact`` bytes."""
    out = []
    if hi <= lo:
        return out
    for b in range(SIGMA):
        out.append(("F", (b * rho + lo) * W, (hi - lo) * W))
    out.append(("act", lo * W, (hi - lo) * W))
    out.append(("wasact", lo, hi - lo))
    return out


def rows_subgraph(indptr, indices, n: int, v_lo: int, v_hi: int):
    """The arcs of ``H`` whose head is in ``[v_lo, v_hi)`` as a Graph (its BVSS holds
    exactly the slices of those rows)."""
    from ...graph.core import Graph

    deg = np.diff(indptr)
    keep = (indices >= v_lo) & (indices < v_hi)
    src = np.repeat(np.arange(n, dtype=np.int64), deg)[keep]
    ip = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ip[1:])
    return Graph(ip, np.ascontiguousarray(indices[keep]).astype(np.int32), None, directed=True)


def add_sums(out, host) -> None:
    """Add host arrays ``far, reach, h0, h1, h2`` into ``out`` (the drivers' accumulators; reach
    as int64)."""
    far, reach, h0, h1, h2 = out
    far += host[0]
    reach += host[1].astype(np.int64)
    h0 += host[2]
    h1 += host[3]
    h2 += host[4]


def _popc(a: np.ndarray) -> np.ndarray:
    return np.bitwise_count(a).astype(np.int64)


def _recip_fixed(d: int) -> int:
    """round(2**64 / d) (as ``recip_fixed`` of the CPU backend, in Python integers)."""
    q, r = divmod(1 << 64, d)
    return q + (1 if 2 * r >= d else 0)


# ============================================================================ numpy model
def emulate_batch(n, sources, kappa, *, per_source, bvss_parts, bounds, t_indptr=None, t_indices=None,
                  h_indptr=None, bu_ratio=0, out=None, sparse=False):
    """Run one launch of ``kernels/msbfs.cu`` (``len(sources) <= kappa``) as a numpy model.

    The model keeps the kernel's state arrays in its layout (getVI positions, kappa-bit
    elements of uint32 words, ``act``/``wasact``/``dirty`` per slice set, VSS queues) and
    runs its steps: seeding, stage 1 (the warp ballot that rebuilds alpha, the 8x128 slice
    products, the per-row register accumulation), bottom-up, stage 2 (dirty sets, clearing
    of sets no longer active, the sums of Eq. 7 and the harmonic limbs) and, with several
    parts, the exchange of :func:`exchange_ranges` between private copies of ``F``, ``act``
    and ``wasact``.  (Stage 1's CUDA-core path, taken when many BFSs are active, gives the
    same products as the MMA loop modelled here; bottom-up pulls only the BFSs of the
    frontier union ``G`` that have not reached the vertex, as the kernel does.)

    Parameters
    ----------
    bvss_parts : list of BVSS
        One BVSS per part (rank): the slices of the rows of its slice sets.
    bounds : int array ``(parts + 1,)``
        Slice-set blocks (:func:`slice_set_bounds`).
    t_indptr, t_indices, h_indptr
        CSR of ``H^T`` and ``H``'s row pointers: only for bottom-up levels (``bu_ratio > 0``,
        one part).
    out : tuple of 5 uint64 arrays
        ``far, reach, h0, h1, h2`` to add to (length ``n``, or ``len(sources)`` per source).
    sparse : bool
        Stage 1 as built with ``DG_MS_SPARSE``: a VSS whose lanes 8-31 hold no slice runs
        lane by lane as ``dg_ms_sparse_vss`` does -- lane t's row id and mask taken from lane
        t/4's int4 of row ids and 32-bit word of masks (byte t%4), the mask cut to the
        frontier vertices, the OR of their whole frontier elements -- the others as above.

    Returns
    -------
    dict
        ``levels`` (levels run), ``bottom_up`` (bottom-up levels), ``max_queue``.
    """
    P = len(bvss_parts)
    k = len(sources)
    W = words(kappa)
    rho = (n + SIGMA - 1) // SIGMA
    nhat = rho * SIGMA
    full = full_words(k, W)
    use_bu = bu_ratio > 0 and P == 1 and t_indptr is not None
    far, reach, h0, h1, h2 = out
    Vc = np.zeros((nhat, W), np.uint32)
    Vn = np.zeros((nhat, W), np.uint32)
    dirty = np.zeros(rho, np.uint8)
    F = [np.zeros((nhat, W), np.uint32) for _ in range(P)]
    act = [np.zeros((rho, W), np.uint32) for _ in range(P)]
    wasact = [np.zeros(rho, np.uint8) for _ in range(P)]
    cnt = np.zeros(32 * W, np.int64)
    stats = {"levels": 0, "bottom_up": 0, "max_queue": 0}
    mu = int(t_indptr[n]) if use_bu else 0
    mf = 0

    # seeding
    for c, s in enumerate(np.asarray(sources, dtype=np.int64)):
        Vn[get_vi(s, rho), c >> 5] |= np.uint32(1 << (c & 31))
        dirty[s >> 3] = 1

    def stage2(p, level):
        nonlocal mu, mf
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        own = np.arange(lo, hi, dtype=np.int64)
        d = dirty[own] != 0
        clr = own[~d & (wasact[p][own] != 0)]
        wasact[p][clr] = 0
        act[p][clr] = 0
        F[p][(np.arange(SIGMA)[None, :] * rho + clr[:, None]).ravel()] = 0
        ds = own[d]
        dirty[ds] = 0
        pos = np.arange(SIGMA)[None, :] * rho + ds[:, None]          # (k, 8) getVI positions
        verts = ds[:, None] * SIGMA + np.arange(SIGMA)[None, :]
        nx = Vn[pos]
        diff = Vc[pos] ^ nx
        F[p][pos] = diff
        Vc[pos] = nx
        A = np.bitwise_or.reduce(diff, axis=1) if ds.size else np.zeros((0, W), np.uint32)
        act[p][ds] = A
        wasact[p][ds] = (A != 0).any(axis=1)
        pc = _popc(diff).sum(axis=2)                                  # (k, 8)
        new = (pc > 0) & (verts < n)
        u, q = verts[new], pc[new].astype(np.uint64)
        rf = _recip_fixed(level) if level >= 2 else 0
        if per_source:
            bits = np.unpackbits(diff[new].view(np.uint8), axis=-1, bitorder="little")
            cnt[:] += bits.reshape(-1, 32 * W).sum(axis=0).astype(np.int64)
        else:
            far[u] += np.uint64(level) * q
            reach[u] += q
            if level == 1:
                h0[u] += q
            elif level >= 2:
                h1[u] += q * np.uint64(rf >> 32)
                h2[u] += q * np.uint64(rf & 0xFFFFFFFF)
        if use_bu:
            mf += int(np.diff(h_indptr)[u].sum())
            done = (nx[new] == full).all(axis=1)
            mu -= int((t_indptr[u[done] + 1] - t_indptr[u[done]]).sum())

    def flush(level):
        if not per_source:
            return
        q = cnt[:k].astype(np.uint64)
        far[:k] += np.uint64(level) * q
        reach[:k] += q
        if level == 1:
            h0[:k] += q
        elif level >= 2:
            rf = _recip_fixed(level)
            h1[:k] += q * np.uint64(rf >> 32)
            h2[:k] += q * np.uint64(rf & 0xFFFFFFFF)
        cnt[:] = 0

    def exchange():
        for p in range(P):
            for name, off, num in exchange_ranges(int(bounds[p]), int(bounds[p + 1]), rho, W):
                src = {"F": F[p].reshape(-1), "act": act[p].reshape(-1), "wasact": wasact[p]}[name]
                for r in range(P):
                    if r != p:
                        dst = {"F": F[r].reshape(-1), "act": act[r].reshape(-1), "wasact": wasact[r]}[name]
                        dst[off:off + num] = src[off:off + num]

    def queue(p):
        b = bvss_parts[p]
        ss = np.flatnonzero(wasact[p])
        cnts = b.real_ptrs[ss + 1] - b.real_ptrs[ss]
        vss = np.concatenate([np.arange(b.real_ptrs[s], b.real_ptrs[s + 1]) for s in ss]) if ss.size else \
            np.zeros(0, np.int64)
        return vss.astype(np.int64), np.repeat(ss, cnts)

    def stage1_sparse(b, vss, ss, fv):
        # the kernel's lane words: lane l's int4 of row ids and uint32 of masks (4 slices each)
        u4 = b.row_ids[vss * TAU:(vss + 1) * TAU].reshape(32, THETA)
        mk = b.masks[vss * TAU:(vss + 1) * TAU].view(np.uint32)              # little-endian bytes
        if (mk[8:] != 0).any():
            return False                                                       # not sparse: MMA loop
        fmask = sum(1 << i for i in range(SIGMA) if fv[i].any())              # ballot of lanes 0-7
        for t in range(32):
            frm, c = t >> 2, t & 3                                             # __shfl_sync from lane t/4
            row = int(u4[frm, c])
            m = (int(mk[frm]) >> (8 * c)) & fmask
            M = np.zeros(W, np.uint32)
            while m:
                bb = (m & -m).bit_length() - 1
                m &= m - 1
                M |= fv[bb]
            if M.any():
                i = get_vi(row, rho)
                Vn[i] |= M
                dirty[row >> 3] = 1
        return True

    def stage1(p, qv, qs):
        b = bvss_parts[p]
        for vss, ss in zip(qv.tolist(), qs.tolist()):
            fv = F[p][np.arange(SIGMA) * rho + ss]                                # lanes 0-7 load
            if sparse and stage1_sparse(b, vss, ss, fv):
                continue
            fbits = np.unpackbits(fv.view(np.uint8), axis=1, bitorder="little")  # (8, kappa)
            abits = np.unpackbits(act[p][ss].view(np.uint8), bitorder="little")  # activeSets[ss]
            # column c of fbits is the ballot of bit c (alpha of BFS c); masked by activeSets
            alpha = fbits & abits[None, :]
            sl = slice(vss * TAU, (vss + 1) * TAU)
            mbits = np.unpackbits(b.masks[sl][:, None], axis=1, bitorder="little")  # (128, 8)
            prod = (mbits.astype(np.int32) @ alpha.astype(np.int32)) != 0          # the MMA products
            hit = prod.any(axis=1)
            if not hit.any():
                continue
            rows = b.row_ids[sl][hit].astype(np.int64)
            M = np.packbits(prod[hit], axis=1, bitorder="little").view(np.uint32)  # register buffers
            np.bitwise_or.at(Vn, get_vi(rows, rho), M)
            dirty[rows >> 3] = 1

    def bottom_up():
        G = np.bitwise_or.reduce(act[0], axis=0)   # frontier union: the BFSs still running
        for u in range(n):
            i = int(get_vi(u, rho))
            cur = Vc[i]
            tgt = G & ~cur
            if not tgt.any():
                continue
            nb = t_indices[t_indptr[u]:t_indptr[u + 1]].astype(np.int64)
            acc = np.bitwise_or.reduce(F[0][get_vi(nb, rho)], axis=0) if nb.size else np.zeros(W, np.uint32)
            if (acc & tgt).any():
                Vn[i] = cur | acc
                dirty[u >> 3] = 1

    for p in range(P):
        stage2(p, 0)
    exchange()
    flush(0)
    level = 0
    while True:
        if not any(w.any() for w in wasact):
            break
        qs = [queue(p) for p in range(P)]
        if sum(q[0].size for q in qs) == 0:
            break
        stats["max_queue"] = max(stats["max_queue"], max(q[0].size for q in qs))
        level += 1
        if use_bu and mf * bu_ratio > mu:
            stats["bottom_up"] += 1
            bottom_up()
        else:
            for p in range(P):
                stage1(p, *qs[p])
        mf = 0
        for p in range(P):
            stage2(p, level)
        exchange()
        flush(level)
    stats["levels"] = level
    return stats


# ============================================================================ memory plan
def sparse_share(bvss) -> float:
    """The share of the VSSs of ``bvss`` with at most 32 slices (lanes 8-31 of the warp hold
    no slice): those that stage 1 runs one slice per lane with ``sparse`` on
    (``dg_ms_sparse_vss`` in kernels/msbfs.cu).  0 for a BVSS without VSSs."""
    nv = int(bvss.num_vss)
    if not nv:
        return 0.0
    m = np.asarray(bvss.masks).reshape(nv, TAU)
    dense = np.count_nonzero(m[:, 32:].any(axis=1))
    return float(nv - dense) / nv


def auto_sparse(bvss) -> bool:
    """``sparse="auto"``: on when at least :data:`SPARSE_SHARE` of the VSSs are sparse."""
    return sparse_share(bvss) >= SPARSE_SHARE


def _bvss_device_bytes(bvss) -> int:
    """Bytes of the BVSS arrays GpuMSBFS uploads (row ids, masks, real pointers; no
    virtual-to-real map), as allocated (an empty BVSS gets one VSS of zeros)."""
    if not bvss.num_vss:
        return 5 * TAU + int(bvss.real_ptrs.nbytes)
    return int(bvss.row_ids.nbytes + bvss.masks.nbytes + bvss.real_ptrs.nbytes)


def msbfs_plan(n: int, bvss, kappa: int, *, bottom_up: bool, t_arcs: int = 0, parts: int = 1,
               bvss_bytes: int | None = None, batch: int = 512, groups: int = 1, slots: int = 0,
               reordered: bool = False, deferred: bool = True, heavy: int | None = None,
               pull_arcs: int | None = None, pull_out_arcs: int | None = None) -> MemoryPlan:
    """Device memory of one rank: BVSS (or its part), kappa-bit state (one copy per group of
    concurrent launches, or per block with ``slots`` > 0: ``groups="blocks"``), queues, sums.

    Also counted: the per-vertex sums a deferred run keeps on the device (``deferred``,
    5 x 8n, allocated at the first deferred batch), and with a reordering (``reordered``)
    the id map to the caller's ids (8n) and one sum array gathered through it at a time
    (8n).  ``heavy``: vertices of the bottom-up heavy list (None: every vertex).  The pull
    kernel: ``pull_arcs`` arcs of its slice-set graph, or with per-vertex candidates
    ``pull_out_arcs``, the arcs of the graph (its CSR is uploaded instead)."""
    rho1 = max((n + SIGMA - 1) // SIGMA, 1)
    extra = {}
    if deferred:
        extra["deferred sums (5 x n)"] = 5 * 8 * n
    if reordered:
        extra["id map + one gathered sum array"] = 8 * n + 8 * n
    bv = int(_bvss_device_bytes(bvss) if bvss_bytes is None else bvss_bytes)
    if slots:
        W = words(kappa)
        nhat = rho1 * SIGMA
        items = {"bvss": bv,
                 ("frontiers F (two levels), visited Vc" if pull_arcs is not None or pull_out_arcs is not None else
                  "frontier F, visited Vc, Vn"): slots * 3 * 4 * W * nhat,
                 "activeSets, dirty bits and lists": slots * (4 * W * rho1 + 4 * (rho1 // 32 + 1) + 12 * rho1),
                 "VSS queues": slots * 2 * 8 * max(bvss.num_vss, 1),
                 "sources, sums (far, reach, 3 harmonic limbs)": 4 * slots * kappa * 4 + 5 * 8 * max(n, batch),
                 "counters, launch sources": rho1 + 8 * kappa + 256 + 8 * W + 80, **extra}
        if pull_arcs is not None:   # pull: in-arcs and the set graph instead of the VSS queues
            items["VSS queues"] = 0
            items["activeSets, dirty bits and lists"] = slots * (8 * (rho1 // 32 + 1) + 12 * rho1)
            items["in-arcs (CSR of the transpose, first four per vertex), slice-set graph"] = (
                8 * (n + 1) + 4 * max(t_arcs, 1) + 16 * max(n, 1) + 4 * (rho1 + 1) + 4 * max(pull_arcs, 1))
        elif pull_out_arcs is not None:   # per-vertex candidates: the out-arcs instead of the set graph
            n1 = max(n, 1)
            items["VSS queues"] = 0
            items["activeSets, dirty bits and lists"] = slots * (4 * (n1 // 32 + 1) + 16 * n1)
            items["in-arcs (CSR of the transpose, first four per vertex), out-arcs (CSR)"] = (
                8 * (n + 1) + 4 * max(t_arcs, 1) + 16 * n1 + 8 * (n + 1) + 4 * max(pull_out_arcs, 1))
        hints = ["a smaller kappa (fewer state words per vertex)", "groups=1 (one state copy for the whole GPU)"]
        return MemoryPlan(f"GPU closeness (kappa={kappa}, one block per batch, {slots} blocks)", items, tuple(hints))
    W = words(kappa)
    rho = (n + SIGMA - 1) // SIGMA
    nhat = rho * SIGMA
    g = max(int(groups), 1)
    items = {"bvss" + (f" (1/{parts})" if parts > 1 else ""): bv,
             "frontier F, visited Vc, Vn": g * 3 * 4 * W * nhat,
             "activeSets, wasact, dirtySets": g * (4 * W * rho1 + 2 * rho1),
             "VSS queues": g * 2 * 8 * max(bvss.num_vss, 1),
             "sums (far, reach, 3 harmonic limbs)": 5 * 8 * max(n, batch),
             "counters, launch sources": g * (256 + 12 * kappa + 16 + 8 * W) + 36, **extra}
    if bottom_up:
        items["transpose CSR + out-degrees, heavy list"] = (8 * (n + 1) + 4 * max(t_arcs, 1) + 8 * (n + 1)
                                                            + 4 * max(n if heavy is None else heavy, 1))
    else:
        items["counters, launch sources"] += 16   # one-entry stand-ins for the bottom-up arrays
    hints = ["a smaller kappa (fewer state words per vertex)",
             "mode='partitioned' over more GPUs (each holds a part of the BVSS)",
             "reorder='jaccard' (a smaller BVSS on scale-free graphs)"]
    grp = f", {g} concurrent launches" if g > 1 else ""
    return MemoryPlan(f"GPU closeness (kappa={kappa}, {parts} part{'s' if parts > 1 else ''}{grp})", items,
                      tuple(hints))


def auto_groups(arcs: int) -> int:
    """Concurrent launches per persistent kernel for a graph of ``arcs`` arcs: the levels of
    one 256-source launch on a small graph (or a road network's thin frontiers) leave most
    of the GPU idle, so small graphs run 4 launches at once on quarters of the grid."""
    if arcs <= GROUPS_ARCS:
        return 4
    if arcs <= 2 * GROUPS_ARCS:
        return 2
    return 1


def auto_schedule(arcs: int):
    """``groups="auto"``: ``"blocks"`` (one thread block per batch) for graphs of at most
    :data:`BLOCKS_ARCS` arcs, else :func:`auto_groups`."""
    return "blocks" if arcs <= BLOCKS_ARCS else auto_groups(arcs)


def self_context(ctx):
    """``ctx`` for this rank alone (COMM_SELF, rank 0 of 1), on the device it is bound to:
    ``get_context(COMM_SELF)`` would rebind the device by the node rank of COMM_SELF, 0."""
    import dataclasses
    import types

    from mpi4py import MPI

    one = {"comm": MPI.COMM_SELF, "rank": 0, "size": 1}
    return dataclasses.replace(ctx, **one) if dataclasses.is_dataclass(ctx) else \
        types.SimpleNamespace(**{**vars(ctx), **one})


def leaf_map(rep, n: int, new_id) -> tuple:
    """Leaf folding's ``rep`` (caller ids: for each vertex p the leaf whose sums p's BFS adds, -1:
    none; checked) as the kernels' ``leaf`` array (int32, internal ids through ``new_id``, or
    None for none), and how many vertices fold a leaf."""
    rep = np.asarray(rep)
    expect(rep.shape == (n,) and rep.dtype.kind in "iu", "rep", f"an integer array of shape ({n},)",
           f"{rep.dtype} of shape {rep.shape}")
    rep = rep.astype(np.int64)
    bad = np.flatnonzero((rep < -1) | (rep >= n))
    expect(bad.size == 0, "rep", f"-1 or a vertex id in [0, {n})",
           f"rep[{int(bad[0])}] = {int(rep[bad[0]])}" if bad.size else None)
    leaf = np.full(n, -1, np.int32)
    p = np.flatnonzero(rep >= 0)
    if new_id is not None:
        leaf[new_id[p]] = new_id[rep[p]]
    else:
        leaf[p] = rep[p]
    return leaf, int(p.size)


def _grid_size(cp, kernel, block: int, smem: int = 0) -> int:
    """Resident blocks of ``kernel`` on the device: blocks of ``block`` threads with ``smem``
    bytes of dynamic shared memory each, per SM (the driver's occupancy, else the estimate from
    the registers and the shared memory: :func:`~distgraph.backends.gpu.loader.blocks_per_sm`),
    at least one, times the SMs."""
    from .loader import blocks_per_sm, sm_count

    per_sm, _ = blocks_per_sm(kernel, block, smem)
    return int(sm_count(cp) * max(per_sm, 1))


def _check_min_blocks(min_blocks, threads: int) -> None:
    """``min_blocks``: None or blocks of ``threads`` per SM, at most ``SM_THREADS / threads``."""
    hi = SM_THREADS // max(int(threads), BLOCK)
    expect(min_blocks is None or (isinstance(min_blocks, (int, np.integer)) and not isinstance(min_blocks, bool)
                                  and 1 <= min_blocks <= hi),
           "min_blocks", f"None or an integer in [1, {hi}] ({SM_THREADS} threads per SM over blocks of "
           f"{max(int(threads), BLOCK)})", min_blocks)


def _func_attr(kernel, name: str) -> int:
    """``CU_FUNC_ATTRIBUTE_<name>`` of a compiled kernel, ``NUM_REGS`` (registers per thread)
    or ``LOCAL_SIZE_BYTES`` (local memory per thread: spills), or -1 where it cannot be read."""
    try:
        from cupy.cuda import driver

        fn = getattr(kernel, "kernel", kernel)
        return int(driver.funcGetAttribute({"LOCAL_SIZE_BYTES": 3, "NUM_REGS": 4}[name], fn.ptr))
    except Exception:
        return -1


def _ranks_sharing_gpu(ctx, cp) -> int:
    """How many ranks (this one included) are bound to this rank's GPU: those of the job that
    :func:`~distgraph.runtime.context.get_context` counted
    (:func:`~distgraph.backends.gpu.memory.device_share`), or those of ``ctx`` on this host with
    the same device (:func:`~distgraph.runtime.context.ranks_sharing_device`) where more (a
    context not made by get_context). Collective over ``ctx.comm`` when it has several ranks."""
    from ...runtime.context import device_key, ranks_sharing_device
    from .memory import device_share

    mine = ranks_sharing_device(ctx.comm, device_key(cp, cp.cuda.Device().id)) if ctx.size > 1 else 1
    return max(device_share(), mine)


# ============================================================================ GPU runner
class GpuMSBFS:
    """Batch runner of the GPU multi-source BFS for :func:`~distgraph.algorithms.msbfs.run_batches`.

    Parameters
    ----------
    hptr, hidx : arrays
        CSR of the graph ``H`` the BFSs run on.
    tptr, tidx : arrays
        CSR of ``H^T`` (in-neighbours), for bottom-up levels.
    ctx : Context
        The SPMD context (``distgraph.runtime.context``).
    kappa : {32, 64, 128, 256}
        Concurrent BFSs per launch (default 256).
    mode : {"auto", "replicated", "partitioned", "stepwise"}
        See the module docstring.  ``"auto"``: replicated when the plan fits this GPU,
        partitioned over the ranks otherwise.
    reorder : {"auto", "jaccard", "rcm", "none"}
        Vertex reordering before BVSS (``distgraph.formats.reorder``).
    bu_ratio : int
        Bottom-up switch constant (0: never; default :data:`BU_RATIO`).
    announce : bool or None
        Print the memory plan and mode on rank 0 before the run (None: when progress bars
        are shown, ``config.progress``).
    tc_ratio : int
        Stage 1 runs the per-BFS tensor-core loop on a VSS while its active BFSs are at
        most ``tc_ratio`` times its slice set's frontier vertices, else ORs whole elements
        on CUDA cores (default :data:`TC_RATIO`; a huge value: tensor cores always, 0: never).
    bu_heavy : int
        Bottom-up gives a warp to vertices with more in-arcs than this (default
        :data:`BU_HEAVY`).
    min_blocks : int or None
        Resident blocks per SM the persistent kernel is compiled for (register cap;
        None: the kernel's default), or the block kernel (None: see ``block_threads``); at
        most ``2048 / threads per block``.
    groups : "auto", "blocks", int or None
        Replicated mode: launches of ``kappa`` sources that one persistent kernel runs at
        once, each on ``1/groups`` of the grid with its own state and barrier; ``"blocks"``:
        one thread block per ``kappa``-source batch, as many batches at once as there are
        resident blocks (``slots``), no bottom-up levels; ``"auto"``: :func:`auto_schedule`
        (blocks up to :data:`BLOCKS_ARCS` arcs, then 1 group, since :func:`auto_groups` gives 4
        or 2 only below that size, which the grid-schedule companion of small runs uses; the
        grid schedule with 1 group when the blocks' state does not fit on some rank); None:
        ``config.gpu_msbfs_groups``.
    slots : int or None
        ``groups="blocks"``: blocks (state copies) of the kernel; None: every block that
        can be resident, fewer if their state does not fit.
    symmetric : bool
        ``groups="blocks"``: the caller promises that ``H`` is symmetric (undirected) and
        that it adds the per-vertex sums of :meth:`run` over a source set holding every
        vertex with arcs, each once (closeness of all vertices).  Then each BFS adds its own
        sums (farness of the source) at its source vertex: the per-batch sums differ from
        the CPU backend's, their total over all sources is the same, bit for bit, at a
        fraction of the memory traffic on graphs where few BFSs of a batch meet.
    shared_dbits : bool
        ``groups="blocks"``: keep each block's dirty bits (one per slice set) in shared
        memory instead of device memory when they fit in :data:`SHARED_DBITS_MAX` bytes
        (stage 1 then marks a slice set without a round trip to device memory).
    prefetch : bool
        ``groups="blocks"``: software-pipelined stage 1 (a warp loads the next VSS's
        frontier words while it works on the current one; ``DG_MS_PREFETCH``).
    pull : "auto", "on", "off", bool or None
        ``groups="blocks"``: run each level as one pull over the candidate slice sets
        (``distgraph_msbfs_pull_blocks``: a thread per vertex of a set that holds an
        out-neighbour of the previous frontier ORs its in-neighbours' frontier elements; no
        VSS queue, no atomics on the state, two block barriers per level) instead of stage
        1 + stage 2.  ``"auto"``: where ``sparse`` is on and no vertex has more than
        :data:`PULL_MAX_IN_DEGREE` in-arcs (road networks; not email-Enron, whose hubs' scans
        held every level up); None: ``config.gpu_msbfs_pull``.  Same sums.  ``prefetch`` and
        ``flush4`` are stage 1's and do not apply to it; its candidate bits go to shared memory
        whenever they fit, whatever ``shared_dbits`` says.
    pull_candidates : {"auto", "sets", "vertices"} or None
        The vertices a pull level evaluates: every vertex of each candidate slice set
        (``"sets"``), or exactly the out-neighbours of the previous level's frontier, each once
        (``"vertices"``, ``distgraph_msbfs_pull_vertex_blocks``: a bit per vertex dedups them,
        the frontier is kept as a list of vertices; uploads the graph's CSR instead of the
        slice-set graph).  ``"auto"``: see :data:`PULL_CANDIDATES` (per vertex on road networks
        whose bits fit in shared memory).  None: ``config.gpu_msbfs_pull_candidates``.  Same sums.
    block_threads : {256, 512, 1024}, optional
        ``groups="blocks"``: threads of the block that runs one batch (``DG_MS_BLOCK`` of
        its kernel; default ``config.gpu_msbfs_block_threads`` = 1024, 32 warps: road-NY
        5.09 s against 7.61 s at 256, cond-mat-2005 31 against 46 ms, email-Enron 15 against
        27 ms, H200, benchmarks/results/gpu_closeness_block_sweep.json): more warps share one
        batch's queue of VSSs.
        Unless ``min_blocks`` says otherwise the kernel is compiled for
        ``max(1, 512 // block_threads)`` resident blocks per SM, i.e. for the register
        budget of the default (128 per thread) at 256 and 512 threads; 1024 threads make
        ``__launch_bounds__`` cap the kernel at 64 registers (kappa 256: 24 bytes of spills
        per thread, ``local_bytes`` of the b1024 rows of
        benchmarks/results/gpu_closeness_block_sweep.json).  Warps per SM are set by the
        registers the kernel uses (``65536 / (32 * registers)``), not by this option: with
        kappa 256 the kernel needs 96 registers (ptxas of CUDA 13.0 for sm_90;
        ``info["registers"]`` has the device build's), so 2 blocks of 256 or 1 of 512 fit an
        SM (16 warps either way); 32 warps per SM need a cap of 64 registers:
        ``block_threads=1024``, ``512`` with ``min_blocks=2`` or ``256`` with ``min_blocks=4``.
        Fewer, larger blocks also mean fewer batches at once (less state in L2) and, for
        deferred runs, launches of fewer sources (sources are held until every block gets 4
        batches).  Other schedules always run blocks of 256 threads.
    flush4 : bool
        ``groups="blocks"``: stage 1 flushes a lane's four rows together (``DG_MS_FLUSH4``):
        their visited words are loaded at once, then ORed into, then their slice sets marked
        -- about 3 device-memory round trips per VSS instead of up to 12, the same results.
        Needs about 12 more registers (108 at 256 threads, ptxas of CUDA 13.0 for sm_90):
        meant for 256 or 512 threads at the default register budget; under a 64-register cap
        (1024 threads, ``min_blocks`` 2 at 512) it spills.
    sparse : {"auto", "on", "off", True, False} or None
        Stage 1 runs each virtual slice set of at most 32 slices one slice per lane on CUDA
        cores (``DG_MS_SPARSE``, every schedule): lane t ORs the frontier elements of the
        vertices its slice's mask names (shuffled from lanes 0-7) and flushes its one row,
        instead of the per-BFS MMA loop or the per-vertex ORs over 4 rows a lane of the
        128-slice layout.  The same products, hence the same sums.  ``"auto"``: on when at
        least :data:`SPARSE_SHARE` of the VSSs are that sparse (:func:`sparse_share`; road
        networks); None: ``config.gpu_msbfs_sparse``.

    Attributes
    ----------
    collective : bool
        True in partitioned mode: every rank runs every batch (the driver keeps each
        batch's sums on one rank).
    plan : MemoryPlan
        What this rank allocates (also the deferred sums and, with a reordering, the id
        map and one array gathered through it).  It is checked against this rank's share
        of the free memory: the free memory over the ranks of the node bound to the same
        GPU.  An allocation that fails anyway is raised on every rank as a
        DeviceMemoryError (replicated and stepwise modes; partitioned mode's symmetric
        arrays are allocated collectively by NVSHMEM, which reports its own failures).
    info : dict
        Mode, kappa, preprocessing times, BVSS summary, levels and launches run.
    """

    def __init__(self, hptr, hidx, tptr, tidx, *, ctx, kappa=256, mode="auto", reorder="auto", window=None,
                 bu_ratio=None, announce=None, cache_dir=None, tc_ratio=None, bu_heavy=None, min_blocks=None,
                 groups=None, slots=None, symmetric=False, shared_dbits=False, prefetch=False, block_threads=None,
                 flush4=False, sparse=None, pull=None, pull_candidates=None, _is_companion=False):
        from ...graph.core import Graph
        from ...runtime.config import config
        from .loader import import_cupy

        expect(kappa in KAPPAS, "kappa", "one of 32, 64, 128, 256", kappa)
        expect(mode in MODES, "mode", "one of " + ", ".join(MODES), mode)
        bu_ratio = BU_RATIO if bu_ratio is None else bu_ratio
        expect(isinstance(bu_ratio, (int, np.integer)) and bu_ratio >= 0, "bu_ratio", "an integer >= 0", bu_ratio)
        tc_ratio = TC_RATIO if tc_ratio is None else tc_ratio
        expect(isinstance(tc_ratio, (int, np.integer)) and 0 <= tc_ratio < 2**31 // 8, "tc_ratio",
               "an integer in [0, 2**28)", tc_ratio)
        groups = config.gpu_msbfs_groups if groups is None else groups
        if isinstance(groups, str) and groups.strip().isdigit():
            groups = int(groups)
        expect(groups in ("auto", "blocks") or (isinstance(groups, (int, np.integer)) and 1 <= groups <= 16),
               "groups", "'auto', 'blocks' or an integer in [1, 16]", groups)
        expect(slots is None or (isinstance(slots, (int, np.integer)) and 1 <= slots <= 2**16), "slots",
               "None or an integer in [1, 65536]", slots)
        bu_heavy = BU_HEAVY if bu_heavy is None else bu_heavy
        expect(isinstance(bu_heavy, (int, np.integer)) and bu_heavy >= 0, "bu_heavy", "an integer >= 0", bu_heavy)
        for name, flag in (("symmetric", symmetric), ("shared_dbits", shared_dbits), ("prefetch", prefetch),
                           ("flush4", flush4)):
            expect(isinstance(flag, (bool, np.bool_)), name, "True or False", flag)
        sparse = config.gpu_msbfs_sparse if sparse is None else sparse
        if isinstance(sparse, str):
            sparse = sparse.strip().lower()
        expect(isinstance(sparse, (bool, np.bool_)) or sparse in ("auto", "on", "off"), "sparse",
               "'auto', 'on', 'off', True or False", sparse)
        pull = config.gpu_msbfs_pull if pull is None else pull
        if isinstance(pull, str):
            pull = pull.strip().lower()
        expect(isinstance(pull, (bool, np.bool_)) or pull in ("auto", "on", "off"), "pull",
               "'auto', 'on', 'off', True or False", pull)
        pull_candidates = config.gpu_msbfs_pull_candidates if pull_candidates is None else pull_candidates
        if isinstance(pull_candidates, str):
            pull_candidates = pull_candidates.strip().lower()
        expect(pull_candidates in PULL_CANDIDATES, "pull_candidates", "'auto', 'sets' or 'vertices'",
               pull_candidates)
        block_threads = config.gpu_msbfs_block_threads if block_threads is None else block_threads
        expect(isinstance(block_threads, (int, np.integer)) and block_threads in BLOCK_THREADS, "block_threads",
               "one of " + ", ".join(map(str, BLOCK_THREADS)), block_threads)
        # min_blocks caps the registers of the kernel that runs: blocks of block_threads on the
        # block schedule, of BLOCK (256) on the grid schedules (block_threads ignored there), so
        # it is checked against block_threads only where the block schedule is asked for here,
        # and again below once groups="auto" has picked it
        _check_min_blocks(min_blocks, int(block_threads) if groups == "blocks" else BLOCK)
        n = int(hptr.shape[0] - 1)
        if n >= 2**31 - 8:
            raise InvalidArgumentError(f"graph must have fewer than 2**31 - 8 vertices for the GPU MS-BFS; got n={n}")
        cp = import_cupy()
        self._cp = cp
        self.ctx = ctx
        self.n = n
        self.kappa = int(kappa)
        self.W = words(kappa)
        self.rho = (n + SIGMA - 1) // SIGMA
        self.info = {"kappa": self.kappa, "launches": 0, "levels": 0, "bottom_up_levels": 0, "grid_runs": 0}
        window = config.gpu_bfs_window if window is None else window
        # ---- reorder + BVSS of H (cached with the ordering, as the GPU BFS does)
        from .bfs import _cached_preprocess

        graph = Graph(np.asarray(hptr, dtype=np.int64), np.asarray(hidx), None, directed=True)
        g2, new_id, bvss, _udiv, pinfo = _cached_preprocess(graph, reorder, window, cache_dir)
        self.info.update({"reorder": pinfo["method"], "reorder_s": pinfo.get("reorder_s", 0.0),
                          "bvss_s": pinfo.get("bvss_s", 0.0), "bvss": bvss.summary()})
        self.new_id = None if new_id is None else np.asarray(new_id, dtype=np.int64)
        if g2 is None:
            from ...formats.reorder import permute_graph

            g2 = permute_graph(graph, self.new_id) if self.new_id is not None else graph
        # ---- mode
        size = ctx.size
        # ranks bound to the same GPU each allocate their own plan: each may use its share of
        # the device (collective, as construction is on several ranks)
        self._share = _ranks_sharing_gpu(ctx, cp)
        self._plan_kw = dict(reordered=self.new_id is not None, deferred=not _is_companion)
        if mode == "auto":
            plan = msbfs_plan(n, bvss, kappa, bottom_up=bu_ratio > 0, t_arcs=int(tptr[-1]), **self._plan_kw)
            try:
                self._check(plan)
                fits = True
            except DeviceMemoryError:
                fits = False
            if size > 1:  # every rank must pick the same mode
                fits = all(ctx.comm.allgather(fits))
            mode = "replicated" if fits or size == 1 else "partitioned"
        self.mode = mode
        self.collective = mode == "partitioned"
        #: run(..., defer=True) with per-vertex sums leaves ``out`` alone (run_batches then
        #: passes empty arrays and skips its per-batch merge)
        self.defers = True
        parts = size if mode == "partitioned" else 1
        self.use_bu = bu_ratio > 0 and parts == 1
        self.bu_ratio = int(bu_ratio)
        self.tc_ratio = int(tc_ratio)
        self.bu_heavy = int(bu_heavy)
        if parts > 1 or mode == "stepwise":
            self.bounds = slice_set_bounds(np.diff(g2.csc()[0]), parts)
            part = ctx.rank if parts > 1 else 0
            self.ss_lo, self.ss_hi = int(self.bounds[part]), int(self.bounds[part + 1])
            if parts > 1:
                bvss = build_bvss(rows_subgraph(g2.indptr, g2.indices, n, SIGMA * self.ss_lo,
                                                min(SIGMA * self.ss_hi, n)))
        else:
            self.bounds = np.array([0, self.rho], np.int64)
            self.ss_lo, self.ss_hi = 0, self.rho
        t2ptr, t2idx, _ = g2.csc()
        # stage 1's sparse path (a compile-time switch of every kernel that runs stage 1)
        self.sparse_share = sparse_share(bvss)
        self.sparse = (self.sparse_share >= SPARSE_SHARE) if sparse == "auto" else (sparse in ("on", True))
        ng = 1
        self.schedule = "grid"
        self.slots = 0
        self.symmetric = False
        self.shared_dbits = False
        self.prefetch = False
        self.flush4 = False
        self.pull = False
        self.pull_candidates = None   # "sets" or "vertices" where the pull kernel runs
        self.block_threads = BLOCK   # threads per block of the launches (block_threads: block schedule only)
        if mode == "replicated":
            pick = auto_schedule(int(t2ptr[-1])) if groups == "auto" else groups
            if pick == "blocks":
                self.schedule = "blocks"
            else:
                ng = int(pick)
        err = None
        if self.schedule == "blocks":
            # as many state copies as blocks can be resident (at most 2048 threads per SM),
            # halved while they do not fit; the occupancy of the compiled kernel trims it below
            self.block_threads = int(block_threads)
            _check_min_blocks(min_blocks, self.block_threads)
            sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
            S = int(slots) if slots is not None else sms * (SM_THREADS // self.block_threads)
            # the pull kernel (distgraph_msbfs_pull_blocks) where stage 1 would take the sparse path
            self.pull = (bool(self.sparse) and int(np.diff(t2ptr).max(initial=0)) <= PULL_MAX_IN_DEGREE
                         if pull == "auto" else pull in ("on", True))
            if self.pull:
                if pull_candidates == "auto":
                    fits = pull_bits_shared(n, True)
                    few = int(t2ptr[-1]) <= PULL_VERTEX_MEAN_DEGREE * max(n, 1)
                    # a thread marks the out-arcs of one frontier vertex: no long out-arc lists
                    # (pull itself bounds the in-arcs; a directed graph's out-arcs are not)
                    short = int(np.diff(g2.indptr).max(initial=0)) <= PULL_MAX_IN_DEGREE
                    pull_candidates = "vertices" if fits and few and short else "sets"
                self.pull_candidates = pull_candidates
                if pull_candidates == "vertices":   # out-arcs instead of the set graph
                    self._plan_kw["pull_out_arcs"] = int(g2.indptr[-1])
                else:
                    self._sg = set_graph(t2ptr, t2idx, n)
                    self._plan_kw["pull_arcs"] = int(self._sg[1].shape[0])
                self._plan_kw["t_arcs"] = int(t2ptr[-1])
            while True:
                self.plan = msbfs_plan(n, bvss, kappa, bottom_up=False, slots=S, **self._plan_kw)
                try:
                    self._check(self.plan)
                    err = None
                    break
                except DeviceMemoryError as e:
                    err = e
                if slots is not None or S <= sms:
                    break
                S = max(S // 2, sms)
            self.slots = S
            fits = err is None
            if size > 1 and groups == "auto":
                # every rank must pick the same schedule: symmetric sums (blocks) and per-vertex
                # sums (grid) add up to the result only over all sources, not mixed across ranks
                fits = all(ctx.comm.allgather(fits))
            if not fits and groups == "auto":  # one grid-wide launch at a time may still fit
                self.schedule, self.slots, err = "grid", 0, None
                self.block_threads = BLOCK
                self.pull = False
                self.pull_candidates = None
                self._sg = None
                self._plan_kw.pop("pull_arcs", None)
                self._plan_kw.pop("pull_out_arcs", None)
                self._plan_kw.pop("t_arcs", None)
            else:
                self.use_bu = False
                self.symmetric = bool(symmetric)
                # runs too small to occupy the blocks go to a grid-schedule runner of the same graph
                self._companion = None
                self._companion_kw = dict(hptr=hptr, hidx=hidx, tptr=tptr, tidx=tidx, kappa=kappa,
                                          mode="replicated", reorder=reorder, window=window, bu_ratio=bu_ratio,
                                          announce=False, cache_dir=cache_dir, tc_ratio=tc_ratio,
                                          bu_heavy=bu_heavy, min_blocks=min_blocks, block_threads=BLOCK,
                                          groups=auto_groups(int(t2ptr[-1])), sparse=self.sparse,
                                          _is_companion=True)
        tdeg = np.diff(t2ptr)
        nheavy = int(np.count_nonzero(tdeg > int(bu_heavy)))
        if self.schedule == "grid":
            self.plan = msbfs_plan(n, bvss, kappa, bottom_up=self.use_bu, t_arcs=int(t2ptr[-1]), parts=parts,
                                   groups=ng, heavy=nheavy, **self._plan_kw)
            try:
                self._check(self.plan)
            except DeviceMemoryError as e:
                err = e
        if err is not None and groups == "auto" and ng > 1:  # one launch at a time may still fit
            ng = 1
            self.plan = msbfs_plan(n, bvss, kappa, bottom_up=self.use_bu, t_arcs=int(t2ptr[-1]), parts=parts,
                                   heavy=nheavy, **self._plan_kw)
            try:
                self._check(self.plan)
                err = None
            except DeviceMemoryError as e:
                err = e
        self.groups = ng
        if size > 1:  # all ranks raise together (the next steps are collective)
            from ...runtime.abort import collective_raise

            collective_raise(ctx.comm, err)
        elif err is not None:
            raise err
        self.info.update({"mode": mode, "parts": parts, "groups": ng, "schedule": self.schedule,
                          "symmetric": self.symmetric, "device_bytes": self.plan.total, "sparse": self.sparse,
                          "pull": self.pull, "pull_candidates": self.pull_candidates,
                          "sparse_share": round(self.sparse_share, 4),
                          "local_bvss": bvss.summary()})
        if announce is None:
            announce = config.progress == "on" or (config.progress == "auto" and sys.stderr.isatty())
        if announce and ctx.rank == 0:
            print(f"distgraph closeness (GPU): mode {mode}, kappa {kappa}, {parts} part(s); per-GPU plan "
                  f"{format_bytes(self.plan.total)} ({self.plan.describe()})", file=sys.stderr)
        # ---- upload.  Every rank allocates what its plan counts; an allocation that fails
        # anyway (another process, or more ranks on this GPU than _share saw) is raised on
        # every rank (_agree), not on one while the others wait in the next collective.  In
        # partitioned mode the symmetric arrays (NVSHMEM) are allocated collectively: a
        # failure there is NVSHMEM's to report (symmetric heap too small on every PE alike).
        nhat, W = self.rho * SIGMA, self.W
        self._pgas = None
        self._stats_seen = np.zeros(4, np.int64)
        self._prof = None
        self._sums = None
        self._deferred = None
        self._held = None      # deferred sources waiting for a launch of `groups` groups
        self._pending = False
        self._new_id_dev = None
        self._leaf = None      # fold_leaves: the representative folded leaf of each source (internal ids)
        err = None
        try:
            self._row_ids = cp.asarray(bvss.row_ids) if bvss.num_vss else cp.zeros(TAU, cp.int32)
            self._masks = cp.asarray(bvss.masks) if bvss.num_vss else cp.zeros(TAU, cp.uint8)
            self._real_ptrs = cp.asarray(bvss.real_ptrs)
            self._qcap = max(bvss.num_vss, 1)
            if self.use_bu:
                self._t_ip = cp.asarray(t2ptr.astype(np.int64, copy=False))
                self._t_ix = (cp.asarray(t2idx.astype(np.int32, copy=False)) if t2idx.shape[0] else
                              cp.zeros(1, cp.int32))
                self._h_ip = cp.asarray(g2.indptr.astype(np.int64, copy=False))
                heavy = np.flatnonzero(tdeg > self.bu_heavy)
                heavy = heavy[np.argsort(-tdeg[heavy], kind="stable")].astype(np.int32)
            else:
                self._t_ip = self._h_ip = cp.zeros(1, cp.int64)
                self._t_ix = cp.zeros(1, cp.int32)
                heavy = np.zeros(0, np.int32)
            self._nheavy = int(heavy.shape[0])
            self._heavy = cp.asarray(heavy) if heavy.shape[0] else cp.zeros(1, cp.int32)
            self.info["heavy_vertices"] = self._nheavy
            self._m_in = int(t2ptr[-1])
            if self.new_id is not None:   # caller ids of the sums (plan: "id map")
                self._new_id_dev = cp.asarray(self.new_id)
        except Exception as e:
            err = self._device_error(e)
        self._agree(err)
        try:
            if mode == "partitioned":
                from ...pgas import get_pgas

                self._pgas = get_pgas(ctx.comm, "gpu")
                self._symF = self._pgas.array((nhat * W,), "uint32")
                self._symA = self._pgas.array((max(self.rho, 1) * W,), "uint32")
                self._symW = self._pgas.array((max(self.rho, 1),), "uint8")
                self._F, self._act, self._wasact = self._symF.local, self._symA.local, self._symW.local
            elif self.schedule == "blocks":  # per-block state: allocated once the kernel's occupancy is known
                ng = 0
                self._F = self._act = None
                self._wasact = cp.zeros(1, cp.uint8)
            else:  # one copy per group (the persistent kernel offsets them by its group)
                self._F = cp.zeros(ng * nhat * W, cp.uint32)
                self._act = cp.zeros(ng * max(self.rho, 1) * W, cp.uint32)
                self._wasact = cp.zeros(ng * max(self.rho, 1), cp.uint8)
            if ng:
                self._Vc = cp.zeros(ng * nhat * W, cp.uint32)
                self._Vn = cp.zeros(ng * nhat * W, cp.uint32)
                self._Q = cp.zeros(ng * 2 * self._qcap * 2, cp.int32)
            self._dirty = cp.zeros(max(ng, 1) * max(self.rho, 1), cp.uint8)
            self._ctr = cp.zeros(max(ng, 1) * 32, cp.int64)
            self._cnt = cp.zeros(max(ng, 1) * self.kappa, cp.uint32)
            self._srcs = cp.zeros(max(ng, 1) * self.kappa, cp.int32)
            self._nsrcs = cp.zeros(max(ng, 1), cp.int32)
            self._bar = cp.zeros(2 * max(ng, 1), cp.uint32)
            self._G = cp.zeros(max(ng, 1) * 2 * W, cp.uint32)
            self._next = cp.zeros(1, cp.uint32)   # batch counter of the block schedule
            self._stats = cp.zeros(4, cp.int64)   # levels, bottom-up levels (persistent kernel)
            # ---- kernels
            from .loader import get_module

            defs = {"DG_MS_WORDS": W, "DG_MS_BLOCK": BLOCK}
            if self.sparse:
                defs["DG_MS_SPARSE"] = 1
            if min_blocks is not None:
                defs["DG_MS_MINB"] = int(min_blocks)
            if self.schedule == "blocks":
                self.prefetch = bool(prefetch) and not self.pull   # stage 1's options
                if self.prefetch:
                    defs["DG_MS_PREFETCH"] = 1
                self.flush4 = bool(flush4) and not self.pull
                if self.flush4:
                    defs["DG_MS_FLUSH4"] = 1
                # the block size, and the blocks per SM its register cap is computed for (the
                # default's 512 threads per SM, or one block of 1024)
                defs["DG_MS_BLOCK"] = self.block_threads
                defs["DG_MS_MINB"] = int(min_blocks) if min_blocks is not None else \
                    max(1, 512 // self.block_threads)
                self._block_defs = dict(defs)   # what the block kernel is built with (profiling builds reuse it)
                mod = get_module("msbfs", defines=defs)
                vert = self.pull_candidates == "vertices"
                self._blocks = mod.get_function(("distgraph_msbfs_pull_vertex_blocks" if vert else
                                                 "distgraph_msbfs_pull_blocks") if self.pull else
                                                "distgraph_msbfs_blocks")
                # the dynamic shared memory of a block: the pull kernel's candidate bits (two arrays
                # of a bit per slice set, or one of a bit per vertex), or the block kernel's dirty
                # bits with shared_dbits, where they fit
                dbw = pull_bit_words(n, vert)
                smem = ((4 if vert else 8) * dbw if pull_bits_shared(n, vert) else 0) if self.pull else \
                    (4 * dbw if shared_dbits and 4 * dbw <= SHARED_DBITS_MAX else 0)
                self.slots = self.grid = max(1, min(self.slots, _grid_size(cp, self._blocks, self.block_threads,
                                                                           smem)))
                # the plan of what is allocated (the check above was for the untrimmed count)
                self.plan = msbfs_plan(n, bvss, kappa, bottom_up=False, slots=self.slots, **self._plan_kw)
                self.info["device_bytes"] = self.plan.total
                rho1 = max(self.rho, 1)
                S = self.slots
                self._dbw = dbw if self.pull else rho1 // 32 + 1
                self._F = cp.zeros(S * nhat * W, cp.uint32)
                self._Vc = cp.zeros(S * nhat * W, cp.uint32)
                self._Vn = cp.zeros(S * nhat * W, cp.uint32)   # pull: the frontier of odd levels
                # per slot: the active sets of even / odd levels and the candidate sets; with
                # per-vertex candidates, the frontier vertices and the candidates of even / odd levels
                self._lists = cp.zeros(S * (4 * max(n, 1) if vert else 3 * rho1), cp.int32)
                if self.pull:
                    # the candidate bits (two arrays, level parity, of a bit per slice set; one of a
                    # bit per vertex), per block, in shared memory when they fit
                    self.shared_dbits = pull_bits_shared(n, vert)
                    self._dbits = cp.zeros(1 if self.shared_dbits else S * (1 if vert else 2) * self._dbw,
                                           cp.uint32)
                    self._act = cp.zeros(1, cp.uint32)
                    self._Q = cp.zeros(2, cp.int32)
                    self._pt_ip = cp.asarray(t2ptr.astype(np.int64, copy=False))
                    self._pt_ix = (cp.asarray(t2idx.astype(np.int32, copy=False)) if t2idx.shape[0] else
                                   cp.zeros(1, cp.int32))
                    self._ell = cp.asarray(ell4(t2ptr, t2idx, n))
                    # what gives the candidates: the out-arcs of the frontier vertices, or the set graph
                    if vert:
                        # H symmetric: the kernel marks a vertex's out-neighbours from its in-arcs
                        self._sym_arcs = int(np.array_equal(g2.indptr, t2ptr) and np.array_equal(g2.indices, t2idx))
                        self._cand_ptr = cp.asarray(np.asarray(g2.indptr, np.int64))
                        self._cand_idx = (cp.asarray(np.asarray(g2.indices, np.int32)) if g2.indices.shape[0] else
                                        cp.zeros(1, cp.int32))
                    else:
                        self._cand_ptr = cp.asarray(self._sg[0])
                        self._cand_idx = cp.asarray(self._sg[1]) if self._sg[1].shape[0] else cp.zeros(1, cp.int32)
                        del self._sg   # on the device now
                else:
                    self.shared_dbits = bool(shared_dbits) and 4 * self._dbw <= SHARED_DBITS_MAX
                    self._act = cp.zeros(S * rho1 * W, cp.uint32)
                    self._dbits = cp.zeros(S * self._dbw, cp.uint32)
                    self._Q = cp.zeros(S * 2 * self._qcap * 2, cp.int32)
                self.info.update({"slots": S, "shared_dbits": self.shared_dbits, "prefetch": self.prefetch,
                                  "pull": self.pull,
                                  "flush4": self.flush4, "block_threads": self.block_threads,
                                  "min_blocks": defs["DG_MS_MINB"],
                                  "registers": _func_attr(self._blocks, "NUM_REGS"),
                                  "local_bytes": _func_attr(self._blocks, "LOCAL_SIZE_BYTES")})
            elif mode == "replicated":
                mod = get_module("msbfs", defines=defs, cooperative=True)
                self._persistent = mod.get_function("distgraph_msbfs_persistent")
                self.grid = max(_grid_size(cp, self._persistent, BLOCK) // ng, 1) * ng  # whole groups
            else:
                mod = get_module("msbfs", defines=defs)
                self._k = {name: mod.get_function(f"distgraph_msbfs_{name}")
                           for name in ("seed", "stage1", "bottom_up", "stage2", "build_queue", "flush_sources")}
                self.grid = int(cp.cuda.Device().attributes["MultiProcessorCount"]) * 8
        except Exception as e:
            err = self._device_error(e)
        try:
            self._agree(err)
        except BaseException:
            self.close()   # collective in partitioned mode: every rank raises here
            raise
        self.info["grid"] = [self.grid, self.block_threads]
        self.info.update({"tc_ratio": self.tc_ratio, "bu_heavy": self.bu_heavy})

    # ------------------------------------------------------------------ memory
    def _check(self, plan) -> None:
        """``plan.check()`` against this rank's part of the device memory
        (:func:`~distgraph.backends.gpu.memory.free_bytes` for the ranks bound to this GPU,
        :func:`_ranks_sharing_gpu`: with ``k`` of them at most ``1/k`` of the device each)."""
        from .memory import free_bytes

        cp = self._cp
        plan.check(free=free_bytes(cp=cp, share=self._share), device=cp.cuda.Device().id, share=self._share)

    def _device_error(self, e: Exception) -> Exception:
        """A failed device allocation as a DeviceMemoryError that says what was asked and
        what to try (other errors as they are)."""
        text = str(e)
        if isinstance(e, DeviceMemoryError) or not (isinstance(e, MemoryError) or "out of memory" in text.lower()
                                                    or "MemoryAllocation" in text):
            return e
        share = f"; {self._share} ranks share this GPU" if self._share > 1 else ""
        return DeviceMemoryError(
            f"GPU closeness: a device allocation failed on rank {self.ctx.rank} ({type(e).__name__}: {text}) "
            f"although the plan, {format_bytes(self.plan.total)} ({self.plan.describe()}), passed the check of "
            f"the free memory{share}: another process or rank took memory meanwhile; try fewer ranks per GPU, "
            "DISTGRAPH_GPU_MSBFS_GROUPS=1 (one state copy instead of one per block of the block schedule), "
            "or a smaller DISTGRAPH_GPU_MSBFS_KAPPA")

    def _agree(self, err) -> None:
        """Raise ``err`` -- or another rank's -- on every rank (collective with several)."""
        if self.ctx.size > 1:
            from ...runtime.abort import collective_raise

            collective_raise(self.ctx.comm, err)
        elif err is not None:
            raise err

    # ------------------------------------------------------------------ batches
    def _reset(self):
        for a in (self._F, self._act, self._wasact, self._Vc, self._Vn, self._dirty, self._ctr, self._cnt, self._G,
                  self._bar):
            a.fill(0)
        if self.use_bu:
            self._ctr.reshape(-1, 32)[:, 4] = self._m_in

    def _sum_arrays(self, size):
        cp = self._cp
        if self._sums is None or self._sums[0].shape[0] != size:
            self._sums = None   # the old arrays go before the new ones come (the plan holds one set)
            self._sums = tuple(cp.zeros(size, cp.uint64) for _ in range(5))
        else:
            for a in self._sums:
                a.fill(0)
        return self._sums

    def _launch_persistent(self, nsrc, per_source, sums):
        self._persistent((self.grid,), (BLOCK,),
                         (self._row_ids, self._masks, self._real_ptrs, self._t_ip, self._t_ix, self._h_ip,
                          np.int32(self.n), self._srcs, self._nsrcs, np.int32(per_source),
                          np.int32(self.use_bu), np.int32(self.bu_ratio), self._F, self._Vc, self._Vn, self._act,
                          self._wasact, self._dirty, self._Q, np.int64(self._qcap), self._ctr, self._cnt, *sums,
                          self._G, self._heavy, np.int64(self._nheavy), np.int64(self.bu_heavy),
                          np.int32(self.tc_ratio), self._stats, np.int32(self.groups), self._bar))

    def _sync_stats(self):
        """Add the levels counted on the device since the last call to ``info`` (one transfer;
        the persistent kernel does not make the host wait for it after every launch)."""
        now = self._stats.get()
        d = now - self._stats_seen
        self._stats_seen = now
        self.info["levels"] += int(d[0])
        self.info["bottom_up_levels"] += int(d[1])

    def profile(self, on: bool = True) -> dict:
        """Time every kernel of the stepwise/partitioned modes with CUDA events (a breakdown
        by phase for benchmarks); returns the dict ``{kernel: [milliseconds, launches]}``
        that later runs add to."""
        self._prof = {} if on else None
        self._prof_events = []
        return self._prof

    def _launch(self, name, grid, block, args):
        if self._prof is None:
            self._k[name](grid, block, args)
            return
        cp = self._cp
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        self._k[name](grid, block, args)
        e1.record()
        self._prof_events.append((name, e0, e1))

    def _prof_collect(self):
        if self._prof is None or not self._prof_events:
            return
        self._prof_events[-1][2].synchronize()
        for name, e0, e1 in self._prof_events:
            t = self._prof.setdefault(name, [0.0, 0])
            t[0] += self._cp.cuda.get_elapsed_time(e0, e1)
            t[1] += 1
        self._prof_events = []

    def _exchange(self):
        pg = self._pgas
        if pg is None:
            return
        # every rank must be past stage 1 (which reads F and act) before peers overwrite them
        pg.barrier()
        arrs = {"F": self._symF, "act": self._symA, "wasact": self._symW}
        for name, off, num in exchange_ranges(self.ss_lo, self.ss_hi, self.rho, self.W):
            a = arrs[name]
            for pe in range(pg.n_pes):
                if pe != pg.my_pe:
                    pg.put_nbi(a, a.local[off:off + num], pe, offset=off)
        pg.barrier()

    def _run_stepwise(self, nsrc, per_source, sums):
        cp = self._cp
        g, b = (self.grid,), (BLOCK,)
        k = self._launch
        n32 = np.int32(self.n)
        W = self.W
        qc = self._Q.reshape(2, self._qcap, 2)
        k("seed", ((nsrc + BLOCK - 1) // BLOCK,), b, (self._srcs, np.int32(nsrc), n32, self._Vn, self._dirty))
        level = 0
        while True:
            gl = self._G[(level & 1) * W:(level & 1) * W + W]   # this level's frontier union
            if level:
                gl.fill(0)
            k("stage2", g, b, (self._real_ptrs, self._t_ip, self._h_ip, n32, self._F, self._Vc, self._Vn, self._act,
                               self._wasact, self._dirty, qc[(level + 1) & 1], self._ctr, np.int64(self.ss_lo),
                               np.int64(self.ss_hi), np.int32(level), np.int32(nsrc), np.int32(per_source),
                               np.int32(0), np.int32(self.use_bu), self._cnt, *sums, gl))
            if per_source:
                k("flush_sources", ((self.kappa + BLOCK - 1) // BLOCK,), b,
                  (self._cnt, np.int32(level), np.int32(nsrc), *sums))
            self._exchange()
            nxt = (level + 1) & 3
            self._ctr[nxt] = 0
            self._ctr[16] = 0
            k("build_queue", g, b, (self._real_ptrs, self._wasact, n32, qc[(level + 1) & 1], self._ctr[nxt:],
                                    self._ctr))
            c = self._ctr.get()
            if int(c[16]) == 0:  # no active slice set on any rank (wasact is replicated)
                break
            level += 1
            nq = int(c[nxt])
            mf = int(c[8 + ((level - 1) & 3)])
            self._ctr[8 + (level & 3)] = 0
            if self.use_bu and mf * self.bu_ratio > int(c[4]):
                self.info["bottom_up_levels"] += 1
                gp = self._G[((level - 1) & 1) * W:((level - 1) & 1) * W + W]
                k("bottom_up", g, b, (self._t_ip, self._t_ix, n32, self._F, self._Vc, self._Vn, self._dirty,
                                      np.int64(SIGMA * self.ss_lo), np.int64(min(SIGMA * self.ss_hi, self.n)),
                                      gp, self._heavy, np.int64(self._nheavy), np.int64(self.bu_heavy)))
            elif nq:
                k("stage1", g, b, (self._row_ids, self._masks, n32, self._F, self._act, self._Vn, self._dirty,
                                   qc[level & 1], np.int64(nq), np.int32(self.tc_ratio)))
        self.info["levels"] += level
        cp.cuda.get_current_stream().synchronize()
        self._prof_collect()

    def fold_leaves(self, rep) -> None:
        """Symmetric sums (``symmetric=True``): the BFS from vertex ``p`` also adds, at
        ``rep[p] >= 0`` (caller ids, -1: none), the sums of a vertex whose only neighbour is
        ``p``, each count of level ``l`` as level ``l + 1`` (``dg_ms_block_flush_counts``), so
        that such leaves need no BFS of their own.  ``rep[p]`` itself counts at level 2 once,
        as its own term: :func:`distgraph.algorithms.closeness._unfold_leaves` takes it off.
        ``rep`` None: no folding.  Runs then stay on the block schedule (the grid-schedule
        companion of small runs has no folding)."""
        if rep is None:
            self._leaf = None
            self.info.pop("folded_into", None)
            return
        expect(self.symmetric, "fold_leaves' runner", "one with symmetric sums (GpuMSBFS(symmetric=True) on the "
               "block schedule)", f"schedule {self.schedule!r}, symmetric={self.symmetric}")
        leaf, folded = leaf_map(rep, self.n, self.new_id)
        self._leaf = self._cp.asarray(leaf)
        self.info["folded_into"] = folded

    def _leaf_arg(self):
        return self._leaf if self._leaf is not None else np.uint64(0)  # a null pointer: no folding

    def run(self, sources, per_source: bool, out, defer: bool = False) -> None:
        """Add the sums of the BFSs from ``sources`` (caller ids, at most 512) into ``out``
        (``far, reach, h0, h1, h2`` host arrays: per vertex, or per source when
        ``per_source``).  Collective over the ranks in partitioned mode.

        With ``defer`` (per-vertex sums only) the sums stay in device accumulators and
        ``out`` is left alone; :meth:`drain` adds them to the host later (one transfer for
        the whole run instead of one per batch; the driver defers when there is no
        checkpoint to keep up to date).  With several groups, deferred sources may wait
        for the next batch so that every launch runs all its groups; with the block
        schedule, until every block gets a few batches.  A run that is not deferred and
        would keep fewer than half the blocks busy runs on a grid-schedule runner of the
        same graph (made at first use).
        """
        cp = self._cp
        src = np.asarray(sources, dtype=np.int64)
        internal = self.new_id[src] if self.new_id is not None else src
        k = src.shape[0]
        defer = bool(defer) and not per_source
        if defer:
            if self._deferred is None:
                self._deferred = tuple(cp.zeros(self.n, cp.uint64) for _ in range(5))
            self._pending = True
            if self.schedule == "blocks":
                # hold sources until every block gets a few batches (the driver's batches of 512
                # would keep 2-16 blocks busy); drain() runs the rest
                held = internal if self._held is None else np.concatenate([self._held, internal])
                if held.shape[0] >= 4 * self.slots * self.kappa:
                    self._launch_sources(held, False, self._deferred)
                    held = held[:0]
                self._held = held
                return
            step = self.kappa * self.groups
            if self.groups > 1:
                # hold sources until a launch can run all its groups (the driver's batches of
                # 512 would leave half of 4 groups idle); drain() runs the rest
                held = internal if self._held is None else np.concatenate([self._held, internal])
                full = (held.shape[0] // step) * step
                if full:
                    self._launch_sources(held[:full], False, self._deferred)
                self._held = held[full:]
                return
            self._launch_sources(internal, False, self._deferred)
            return
        if self.schedule == "blocks" and self._leaf is None and -(-k // self.kappa) < max(self.slots // 2, 1):
            # a run whose sums are wanted now (checkpoint, per-source sums) that would keep
            # few blocks busy: the grid schedule spreads its BFSs over the whole GPU
            comp = self._grid_companion()
            if comp is not None:
                self.info["grid_runs"] += 1
                if per_source or not self.symmetric:
                    comp.run(src, per_source, out)
                    return
                # symmetric sums: each BFS's own sums, added at its source
                part = tuple(np.zeros(k, a.dtype) for a in out)
                comp.run(src, True, part)
                for a, b in zip(out, part):
                    np.add.at(a, src, b)
                return
        sums = self._sum_arrays(k if per_source else self.n)
        self._launch_sources(internal, per_source, sums)
        self._add_to_host(sums, per_source, out, reduce=self.collective)
        if self.mode == "replicated":
            self._sync_stats()

    def _launch_sources(self, internal, per_source, sums):
        """Launches over ``internal`` (vertex ids of the reordered graph), ``kappa * groups``
        sources each, adding into the device arrays ``sums``."""
        cp = self._cp
        k = internal.shape[0]
        if self.schedule == "blocks":
            self._launch_blocks(internal, per_source, sums)
            return
        step = self.kappa * self.groups   # one launch runs `groups` kappa-source MS-BFSs
        for lo in range(0, k, step):
            hi = min(k, lo + step)
            self._reset()
            self._srcs[: hi - lo] = cp.asarray(internal[lo:hi].astype(np.int32))
            if self.mode == "replicated":
                self._nsrcs[...] = cp.asarray(np.clip(hi - lo - self.kappa * np.arange(self.groups), 0,
                                                      self.kappa).astype(np.int32))
            part = tuple(a[lo:hi] for a in sums) if per_source else sums
            if self.mode == "replicated":
                self._launch_persistent(hi - lo, int(per_source), part)
            else:
                self._run_stepwise(hi - lo, int(per_source), part)
            self.info["launches"] += 1

    def _grid_companion(self):
        """The grid-schedule runner of the same graph (made at first use, on this rank alone:
        replicated mode runs no collectives), or None when it does not fit the GPU."""
        if self._companion is None:
            ctx = self_context(self.ctx)
            try:
                self._companion = GpuMSBFS(ctx=ctx, **self._companion_kw)
            except DeviceMemoryError:
                self._companion = False
        return self._companion or None

    def _launch_blocks(self, internal, per_source, sums):
        """One launch of the block schedule: ``ceil(k / kappa)`` batches dealt to the blocks by
        the kernel's counter; per-source sums at the batch positions, per-vertex sums at the
        vertices, or (``symmetric``) per-source sums added at the source vertices."""
        cp = self._cp
        k = int(internal.shape[0])
        if k == 0:
            return
        K = self.kappa
        nb = (k + K - 1) // K
        srcs = np.zeros(nb * K, np.int32)
        srcs[:k] = internal
        nsrcs = np.full(nb, K, np.int32)
        nsrcs[-1] = k - (nb - 1) * K
        how = 1 if per_source else (2 if self.symmetric else 0)
        self._next.fill(0)
        if self.pull:
            vert = self.pull_candidates == "vertices"   # that kernel also takes sym_arcs
            self._blocks((min(self.slots, nb),), (self.block_threads,),
                         (self._pt_ip, self._pt_ix, self._ell, self._cand_ptr, self._cand_idx,
                          *((np.int32(self._sym_arcs),) if vert else ()), np.int32(self.n), cp.asarray(srcs),
                          cp.asarray(nsrcs), np.int32(nb), np.int32(how), self._F, self._Vn, self._Vc, self._dbits,
                          np.int64(self._dbw), np.int32(self.shared_dbits), self._lists, *sums,
                          self._leaf_arg(), self._next, self._stats),
                         shared_mem=(4 if vert else 8) * self._dbw if self.shared_dbits else 0)
            self.info["launches"] += nb
            self.info["block_launches"] = self.info.get("block_launches", 0) + 1
            return
        self._blocks((min(self.slots, nb),), (self.block_threads,),
                     (self._row_ids, self._masks, self._real_ptrs, np.int32(self.n), cp.asarray(srcs),
                      cp.asarray(nsrcs), np.int32(nb), np.int32(how), np.int32(self.tc_ratio), self._F, self._Vc,
                      self._Vn, self._act, self._dbits, np.int64(self._dbw), np.int32(self.shared_dbits),
                      self._lists, self._Q, np.int64(self._qcap), *sums, self._leaf_arg(), self._next,
                      self._stats),
                     shared_mem=4 * self._dbw if self.shared_dbits else 0)
        self.info["launches"] += nb   # kappa-source MS-BFSs, as in the other schedules
        self.info["block_launches"] = self.info.get("block_launches", 0) + 1

    def discard_deferred(self) -> None:
        """Forget the sources held and the sums deferred so far (after a failed run whose
        caller will not drain them: a later drain must not add them elsewhere)."""
        self._held = None
        self._pending = False
        if self._deferred is not None:
            for a in self._deferred:
                a.fill(0)

    def launch_held(self) -> None:
        """Launch the sources that deferred runs still hold (see :meth:`run`) now, without
        waiting for them (on the current CUDA stream); :meth:`drain` collects the sums."""
        if self._held is not None and self._held.shape[0]:
            self._launch_sources(self._held, False, self._deferred)
        self._held = None

    def drain(self, far, reach, h0, h1, h2) -> None:
        """Run the sources still held (see :meth:`run`), add the deferred per-vertex sums into
        host arrays and reset them.  Not collective: in partitioned mode each rank adds its
        own vertices' part and the driver's final reduction over ranks completes them."""
        self.launch_held()
        if self.mode == "replicated":
            self._sync_stats()
        if not self._pending:
            return
        self._pending = False
        self._add_to_host(self._deferred, False, (far, reach, h0, h1, h2), reduce=False)
        for a in self._deferred:
            a.fill(0)

    def _add_to_host(self, sums, per_source, out, reduce):
        cp = self._cp
        if not per_source and self.new_id is not None:
            if self._new_id_dev is None:
                self._new_id_dev = cp.asarray(self.new_id)
            # back to the caller's ids, on the device, one array at a time (the plan's 8n)
            host = [a[self._new_id_dev].get() for a in sums]
        else:
            host = [a.get() for a in sums]
        if reduce and self.ctx.size > 1:
            from mpi4py import MPI

            for h in host:
                self.ctx.comm.Allreduce(MPI.IN_PLACE, h, op=MPI.SUM)
        add_sums(out, host)

    def close(self) -> None:
        """Free the symmetric arrays (partitioned mode; collective)."""
        if self._pgas is not None:
            syms = [getattr(self, k, None) for k in ("_symF", "_symA", "_symW")]
            # after a failed construction: free only when every rank holds all three
            if all(self.ctx.comm.allgather(all(a is not None for a in syms))):
                for a in syms:
                    self._pgas.free(a)
            self._pgas = None

