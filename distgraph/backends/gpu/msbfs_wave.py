"""Closeness sums on undirected graphs by a distance-profile wave (closeness()'s runner for
every vertex of undirected graphs of high diameter: ``config.gpu_closeness_wave``).

``kernels/msbfs_wave.cu`` runs a batch of 256 sources as one BFS from all of them (the base
levels) carrying, per vertex, the 256 distances as byte offsets from its base: each vertex is
visited once per batch instead of once per level that brings it new bits (about 20 times on
road networks, where the bit-parallel kernels of :mod:`.msbfs` are latency-bound); improvements
that arrive after a visit are pushed on (a worklist), so the result is exact. The host model
``benchmarks/msbfs_profile_model.py`` estimated 0.2-1.1 fixes per vertex on road-NY.

:class:`GpuWave` adds the same per-source sums (farness, reach, harmonic limbs) as
``GpuMSBFS(symmetric=True)``: each BFS's sums at its source vertex, so that over all sources
they equal the CPU backend's per-vertex sums bit for bit. Finite offsets are kept at 254 while
the wave runs; a batch stops at the end of the level where a push first writes an offset of 254
(its sources may lie 254 or more apart; a temporary upper bound can do it too) and is run by the
bit-parallel kernel after the wave (``GpuMSBFS(symmetric=True)`` on its block schedule,
``info["overflow_batches"]``), or (``wide="halves"``) its two halves of 128 sources run again
with 2-byte offsets on the next free blocks (``info["wide_batches"]``), a half whose offsets
pass 65534 too (a graph of that diameter) going to the bit-parallel kernel. Sources set
``aside`` run on the bit-parallel kernel beside the wave. ``info`` also holds the wave's and the
sums pass's clock cycles (thread 0 of each block, summed over the blocks), the worklist rounds
and the vertices they pushed again (fixes); ``timeline`` the last launch's batches.
``benchmarks/gpu_closeness.py`` times it (variant ``wave``), ``benchmarks/closeness_wave_e2e.py``
closeness() end to end.

First version (H200, benchmarks/results/session11_x2/call9/, the kernel as at 0d059f4: a warp per
vertex, one neighbour after another): exact on every test graph; on road-NY the kernel's clock
cycles, averaged over the blocks at an assumed 1.98 GHz, came to about 0.37 s in the wave (about
90 us per level of a batch, in dependent loads) and 0.18 s in the sums pass, against 1.20 s of
wall time for the bit-parallel kernel's whole run. Session 12 (benchmarks/results/session12_x2/,
README there): groups of 8 lanes per vertex, four batches per SM, one barrier per worklist
round, the next level discovered in the pull, give-up at 254, leaves folded, the ball order's
spread groups aside: road-NY 0.56 s with folding against 1.15 s for the bit-parallel kernel
(call 12; 0.53 s in calls 9-10, before the review's fixes to the push loop). Session 13
(benchmarks/results/session13_x2/, README there): the sums pass's fast path (``fast_sums``: its
time per slot 0.141 -> 0.077 s, call 1), the give-up test moved to the CAS that writes, 4 sources
per thread in the sums pass and the first 8 neighbours in an ELL array: road-NY 0.385-0.391 s
(call 7), 1.05-1.07x the BLEST bar's per-GPU rate (0.41 s), against 1.14 s for the bit-parallel
kernel; ``closeness()`` end to end 0.602 s."""

from __future__ import annotations

import time

import numpy as np

from ...errors import DeviceMemoryError, expect
from .memory import device_share, free_bytes
from .msbfs import GpuMSBFS, _func_attr, _grid_size, _recip_fixed, add_sums, ell4, leaf_map, self_context

__all__ = ["GpuWave", "WaveRunner", "recip_table", "WAVE_MIN_DEPTH", "wave_pays"]

KAPPA = 256
#: entries of the kernel's table of round(2^64 / d); larger distances are divided in the kernel
RECIP_MAX = 1 << 16


def recip_table(size: int) -> np.ndarray:
    """round(2^64 / d) for d < size (uint64; 0 for d = 0, 1): the harmonic sums' fixed point
    (:func:`~distgraph.backends.gpu.msbfs._recip_fixed`, the CPU backend's ``recip_fixed``).
    A read-only copy of one table computed once per process (42 ms for 65536 entries)."""
    size = max(int(size), 0)
    global _RECIP
    if _RECIP.size < size:
        t = np.zeros(max(size, RECIP_MAX), np.uint64)
        t[2:] = [_recip_fixed(d) for d in range(2, t.size)]
        t.flags.writeable = False
        _RECIP = t
    return _RECIP[:size].copy()


_RECIP = np.zeros(0, np.uint64)


class GpuWave:
    """The profile-wave runner of one undirected graph (``hptr, hidx``: its CSR, symmetric).

    Parameters
    ----------
    hptr, hidx : arrays
        CSR of an undirected graph (every arc in both directions).
    reorder : {"auto", "rcm", "jaccard", "none"}
        Vertex reordering before the run (the profiles of neighbours then lie close together).
    slots : int or None
        Batches run at once (one block of ``block_threads`` each); None: the resident blocks of
        the compiled kernel, fewer when their state (``n * 276`` bytes each) does not fit in half
        the free device memory (this rank's part of it where ranks share the GPU:
        :func:`~distgraph.backends.gpu.memory.free_bytes`).
    block_threads : {256, 512, 1024}
        Threads per block (256, the default: with ``min_blocks`` 4, 64 registers, four batches
        at once per SM, the fastest on road-NY; ptxas of nvcc 13.0 for sm_90). Blocks of 128
        (eight per SM, every batch of road-NY at once) took 0.41-0.42 s against 0.39 s: a batch
        takes twice as long with half the groups (session 13, call 6), so they are not offered.
    unroll : int
        Visited vertices in flight per thread in the sums pass (``DG_WV_UNR``).
    min_blocks : int or None
        Resident blocks per SM the kernel's registers are capped for (``DG_WV_MINB``): batches
        run at once per SM (the default slots follow); None: ``1024 // block_threads``.
    sources_per_thread : {1, 2, 4}
        Sources a thread adds up in the sums pass (``DG_WV_SPT``; bytes of one load). 4 (the
        default) and 2 were within the runs' spread on road-NY: 0.385-0.401 s in 11 runs
        against 0.386-0.408 s in 6 (session 13, calls 4-7). With 4 the sums pass takes 0.059
        s per slot against 0.071, and the wave 0.208 against 0.200, for the spills of 64
        registers.
    neighbours : {1, 2, 4}
        Neighbour profiles a group of 8 lanes loads at once in the pull and the push (``DG_WV_NB``).
    ctx : Context or None
        The caller's context: the bit-parallel runner of given-up and aside batches is made for
        this rank alone on its GPU (None: ``get_context(COMM_SELF, "gpu")``, which binds GPU 0).
    recip_shared : int
        Entries of the reciprocal table the sums pass reads from shared memory (``DG_WV_RSH``;
        8 bytes each; 0: all from the global table).
    fast_sums : bool
        The sums pass's fast path (``DG_WV_FSUMS``): a vertex whose bytes of the thread's sources
        are all finite and below the cap, with a base of 2 or more within the shared reciprocal
        table (``recip_shared - 256``), counts reach and its base once, the offsets per source,
        and reads each reciprocal at ``table[base + offset]`` (about 7 instructions per distance
        against 25). Needs ``recip_shared >= 512``; False: every distance the general way.
    ell : bool
        A vertex's first 8 neighbours also in an ELL array (``n * 32`` bytes), read beside its
        arc range instead of after it (``DG_WV_ELL``): one dependent load less in each pull
        and push.
    group_sync : bool
        A ``__syncwarp`` of the group of 8 lanes between its CAS loops and lane 0's worklist flag
        (``DG_WV_GSYNC``). Only ``__syncwarp`` orders the lanes' memory operations for lane 0 (a
        vote does not), so it stays on; False is for benchmarks (within the runs' spread on
        road-NY: 0.399-0.400 against 0.392-0.408 s, session 13 call 4).
    wide : {"bits", "halves"}
        A batch whose offsets reach 254 (its sources lie 254 or more apart): "bits" runs it on the
        bit-parallel kernel after the wave; "halves" runs its two halves of 128 sources again on
        the wave with 2-byte offsets, on the next free blocks (on road-NY each half took about 2.5
        times a batch: slower; session 12, call 4).
    """

    def __init__(self, hptr, hidx, *, reorder="auto", slots=None, block_threads=256, unroll=8, min_blocks=None,
                 sources_per_thread=4, neighbours=1, wide="bits", recip_shared=2048, fast_sums=True,
                 group_sync=True, ell=True, ctx=None):
        from ...formats.reorder import reorder_graph
        from ...graph.core import Graph
        from .loader import get_module, import_cupy

        hptr = np.asarray(hptr, np.int64)
        hidx = np.asarray(hidx)
        n = self.n = int(hptr.shape[0]) - 1
        expect(slots is None or (isinstance(slots, (int, np.integer)) and slots >= 1), "slots",
               "None or a positive int", slots)
        _check_symmetric(hptr, hidx, n)   # before CuPy: the same error with or without a GPU
        cp = self._cp = import_cupy()
        g = Graph(hptr, hidx, None, directed=False)
        g2, new_id, info = reorder_graph(g, reorder)
        self.new_id = None if new_id is None else np.asarray(new_id, np.int64)
        self.info = {"reorder": info.get("method"), "overflow_batches": 0, "levels": 0, "batches": 0,
                     "wave_cycles": 0, "sums_cycles": 0, "fix_rounds": 0, "fixes": 0, "wide_batches": 0,
                     "wave_s": 0.0, "fallback_s": 0.0, "aside_batches": 0}
        self._ptr = cp.asarray(np.asarray(g2.indptr, np.int64))
        self._idx = cp.asarray(np.asarray(g2.indices, np.int32) if g2.indices.size else np.zeros(1, np.int32))
        self.block_threads = int(block_threads)
        expect(self.block_threads in (256, 512, 1024), "block_threads", "256, 512 or 1024", block_threads)
        expect(unroll in (1, 2, 4, 8, 16, 32), "unroll", "1, 2, 4, 8, 16 or 32 (vertices in flight per thread in "
               "the sums pass)", unroll)
        self.unroll = int(unroll)
        if min_blocks is None:
            min_blocks = 1024 // self.block_threads   # 32 warps per SM: 64 registers
        expect(min_blocks in (1, 2, 3, 4, 6, 8), "min_blocks", "1, 2, 3, 4, 6 or 8", min_blocks)
        expect(sources_per_thread in (1, 2, 4), "sources_per_thread", "1, 2 or 4", sources_per_thread)
        expect(neighbours in (1, 2, 4), "neighbours", "1, 2 or 4", neighbours)
        self.min_blocks, self.spt, self.nb = int(min_blocks), int(sources_per_thread), int(neighbours)
        expect(recip_shared in (0, 256, 512, 1024, 2048, 4096), "recip_shared", "0, 256, 512, 1024, 2048 or 4096",
               recip_shared)
        self.recip_shared = int(recip_shared)
        for name, val in (("fast_sums", fast_sums), ("group_sync", group_sync), ("ell", ell)):
            expect(isinstance(val, (bool, np.bool_)), name, "True or False", val)
        self.fast_sums, self.group_sync, self.ell = bool(fast_sums), bool(group_sync), bool(ell)
        self._ell = cp.asarray(ell4(g2.indptr, g2.indices, n, 8)) if self.ell else None
        expect(wide in ("bits", "halves"), "wide", "'bits' or 'halves'", wide)
        self.wide = wide
        expect(self.block_threads * self.spt >= 256, "sources_per_thread",
               f"at least {256 // self.block_threads} with blocks of {self.block_threads} threads (a vertex's 256 "
               "bytes are read by one group of threads in the sums pass)", sources_per_thread)
        self._k = get_module("msbfs_wave", {"DG_WV_BLOCK": self.block_threads, "DG_WV_UNR": self.unroll,
                                            "DG_WV_MINB": self.min_blocks, "DG_WV_SPT": self.spt,
                                            "DG_WV_NB": self.nb, "DG_WV_RSH": self.recip_shared,
                                            "DG_WV_FSUMS": int(self.fast_sums), "DG_WV_GSYNC": int(self.group_sync),
                                            "DG_WV_ELL": int(self.ell)}).get_function(
            "distgraph_msbfs_wave_blocks")
        self.info["registers"] = _func_attr(self._k, "NUM_REGS")
        self.info["local_bytes"] = _func_attr(self._k, "LOCAL_SIZE_BYTES")
        per = max(n, 1) * (256 + 4 * 5)
        free = free_bytes(cp=cp)   # this rank's part of the GPU (1/k of it where k ranks share it)
        fit = max(0, (free // 2) // per)
        want = _grid_size(cp, self._k, self.block_threads) if slots is None else int(slots)   # the resident blocks
        self.slots = min(want, fit)
        if self.slots < 1:
            share = device_share()
            raise DeviceMemoryError(f"the profile wave needs {per} bytes per batch slot for {n} vertices; "
                                    f"{free} bytes free on the GPU for this rank"
                                    + (f" ({share} ranks share the GPU on this host: each plans with at most "
                                       f"1/{share} of its memory)" if share > 1 else ""))
        S, n1 = self.slots, max(n, 1)
        self._prof = cp.full(S * n1 * 64, 0xFFFFFFFF, cp.uint32)
        self._base = cp.full(S * n1, -1, cp.int32)
        self._order = cp.zeros(S * n1, cp.int32)
        self._wl = cp.zeros(S * 2 * n1, cp.int32)
        self._inwl = cp.zeros(S * n1, cp.int32)
        self._ctl = cp.zeros(4, cp.uint32)   # next batch, queue head and tail, batches in flight
        self._stats = cp.zeros(6, cp.int64)
        self._fallback = None
        self._ctx = ctx
        self._leaf = None
        self._rep = None
        self._recip = cp.asarray(recip_table(min(n + 2, RECIP_MAX)))   # distances up to n - 1
        self._graph = (hptr, hidx)

    def run(self, sources, out, aside=None) -> None:
        """Add the sums of the BFSs from ``sources`` (distinct caller ids) at the source vertices
        into ``out`` (``far, reach, h0, h1, h2``, host arrays of n; limbs not normalized).

        ``aside`` (a bool per source, optional): sources to run on the bit-parallel kernel
        instead, launched first on a stream of their own so that its blocks run beside the
        wave's (closeness() puts there the groups of the ball order filled from more than one
        ball, whose sources may lie far apart: on road-NY the slowest batches of the wave, 400-500
        ms against 210 for most, and those that give up their bytes). Batches that give up their
        bytes run there too, after the wave."""
        cp = self._cp
        src = np.asarray(sources, np.int64)
        if src.shape[0] == 0:
            return
        _check_sources(src, self.n)
        if aside is not None:
            aside = np.asarray(aside)
            expect(aside.shape == src.shape and aside.dtype == np.bool_, "aside",
                   f"a bool per source, shape {src.shape}", f"{aside.dtype} of shape {aside.shape}")
            if not aside.any():
                aside = None
        # runners made first, so that ``out`` gets nothing when one cannot be; the streams wait for
        # the work queued so far on the legacy stream (the runners' set-up), then run beside each
        # other and beside anything queued on the legacy stream later (non-blocking streams)
        bits = self._bits() if aside is not None else None
        side = self._stream() if aside is not None else None
        try:
            if aside is not None:
                with side:
                    bits.run(src[aside], False, out, defer=True)   # ``out`` untouched until drain
                    bits.launch_held()
                self.info["aside_batches"] += -(-int(aside.sum()) // KAPPA)
                src = src[~aside]
            t0 = time.perf_counter()
            k = int(src.shape[0])
            host, bad = None, np.zeros(0, np.int64)
            if k:
                with self._stream():
                    host, st, ovf_h = self._launch(src, k)
                bad = np.flatnonzero(ovf_h)
            self.info["wave_s"] += time.perf_counter() - t0
            if bad.size and bits is None:
                bits = self._bits()
                side = self._stream()
            if bad.size:
                # batches that gave up their bytes (wide="bits"), or halves of 128 sources whose
                # 2-byte offsets overflowed too (diameter 65534 or more): on the bit-parallel kernel
                self.info["overflow_batches"] += int(bad.size)
                half = KAPPA // 2
                redo = np.concatenate([src[b * KAPPA + h * half:b * KAPPA + (h + 1) * half] for b in bad
                                       for h in (0, 1) if ovf_h[b] >> h & 1])
                with side:
                    bits.run(redo, False, out, defer=True)
            if host is not None:
                add_sums(out, host)
                for key, v in zip(("levels", "wave_cycles", "sums_cycles", "fix_rounds", "fixes", "wide_batches"),
                                  st):
                    self.info[key] += int(v)
            if bits is not None:
                t0 = time.perf_counter()
                with side:
                    bits.drain(*out)   # the block schedule: the held sources launched, the sums added
                    side.synchronize()   # its accumulators reset before the next run's stream uses them
                self.info["fallback_s"] += time.perf_counter() - t0
        except BaseException:
            if bits is not None:   # nothing held or deferred may reach a later run's ``out``
                bits.discard_deferred()
                cp.cuda.Device().synchronize()
            raise

    def _stream(self):
        """A non-blocking stream that first waits for the work queued on the legacy stream."""
        cp = self._cp
        ev = cp.cuda.Event(disable_timing=True)
        ev.record(cp.cuda.Stream.null)
        s = cp.cuda.Stream(non_blocking=True)
        s.wait_event(ev)
        return s

    def _launch(self, src, k):
        """One launch of the wave kernel over ``src`` (on the current stream); its per-source sums
        (host, caller ids), stats and overflow flags."""
        cp = self._cp
        internal = self.new_id[src] if self.new_id is not None else src
        nb = -(-k // KAPPA)
        srcs = np.zeros(nb * KAPPA, np.int32)
        srcs[:k] = internal
        nsrcs = np.full(nb, KAPPA, np.int32)
        nsrcs[-1] = k - (nb - 1) * KAPPA
        sums = tuple(cp.zeros(self.n, cp.uint64) for _ in range(5))
        ovf = cp.zeros(nb, cp.int32)
        self._ctl.fill(0)
        self._stats.fill(0)
        queue = cp.full(2 * nb, -1, cp.int32)
        btime = cp.zeros(6 * nb, cp.int64)
        self._k((min(self.slots, nb),), (self.block_threads,),
                (self._ptr, self._idx, np.int32(self.n), cp.asarray(srcs), cp.asarray(nsrcs), np.int32(nb),
                 self._prof, self._base, self._order, self._wl, self._inwl, self._recip,
                 np.int32(self._recip.shape[0]),
                 *sums, self._ctl, queue, ovf, self._stats, btime, np.int32(self.wide == "halves"),
                 self._leaf if self._leaf is not None else np.uint64(0),
                 self._ell if self._ell is not None else np.uint64(0)))
        host = [a.get() for a in sums]
        if self.new_id is not None:
            host = [h[self.new_id] for h in host]
        #: per batch of the last launch: start, end (ns, the GPU's globaltimer), end of its last
        #: 2-byte half (0: none), SM, levels and fixes (of its byte run)
        self.timeline = btime.get().reshape(nb, 6)
        self.info["batches"] += nb
        return host, self._stats.get(), ovf.get()

    def fold_leaves(self, rep) -> None:
        """The BFS from vertex ``p`` also adds, at ``rep[p] >= 0`` (caller ids, -1: none), the
        sums of a vertex whose only neighbour is ``p``, each distance one more, its own term
        included, as :meth:`GpuMSBFS.fold_leaves <distgraph.backends.gpu.msbfs.GpuMSBFS.fold_leaves>`
        does (:func:`distgraph.algorithms.closeness._unfold_leaves` finishes); the bit-parallel
        runner of given-up batches folds the same way. ``None``: no folding."""
        if rep is None:
            self._leaf = self._rep = None
            if self._fallback is not None:
                self._fallback.fold_leaves(None)
            return
        leaf, folded = leaf_map(rep, self.n, self.new_id)
        self._leaf = self._cp.asarray(leaf)
        self._rep = np.asarray(rep, np.int64)
        self.info["folded_into"] = folded
        if self._fallback is not None:
            self._fallback.fold_leaves(rep)

    def _bits(self):
        """The bit-parallel runner of the same graph (``GpuMSBFS(symmetric=True)``, made at first
        use), on this rank alone and its GPU (``ctx`` given: :func:`~.msbfs.self_context`)."""
        if self._fallback is None:
            if self._ctx is not None:
                ctx = self_context(self._ctx)
            else:
                from mpi4py import MPI

                from ...runtime.context import get_context

                ctx = get_context(MPI.COMM_SELF, "gpu")
            hptr, hidx = self._graph
            self._fallback = GpuMSBFS(hptr, hidx, hptr, hidx, ctx=ctx, kappa=KAPPA,
                                      groups="blocks", symmetric=True, announce=False, slots=48)
            if self._rep is not None:
                self._fallback.fold_leaves(self._rep)
        return self._fallback


#: BFS levels (from the largest-degree vertex) from which closeness' "auto" takes the wave
WAVE_MIN_DEPTH = 128


def wave_pays(hptr, hidx, *, memory: bool = True, depth=False) -> bool:
    """Whether closeness' ``gpu_closeness_wave="auto"`` takes the wave on this undirected graph:
    degrees not heavy-tailed, a BFS from the largest-degree vertex at least
    :data:`WAVE_MIN_DEPTH` levels deep (road networks, meshes: road-NY about 500 levels; not
    cond-mat-2005 or email-Enron, where the bit-parallel kernel was 8x and 6x faster), and the
    state of one batch per SM (``n * 276`` bytes each) within half the GPU's free memory (this
    rank's part of it, :func:`~distgraph.backends.gpu.memory.free_bytes`)
    (``memory=False``: the graph alone). ``depth``: ``depth_unless_scale_free(hptr, hidx)`` when
    the caller has it (False: computed here; closeness() passes the one with ``tptr``, its
    in-degrees, which on an undirected graph are the same)."""
    from ...algorithms.msbfs import depth_unless_scale_free

    hp = np.asarray(hptr, np.int64)
    if depth is False:
        depth = depth_unless_scale_free(hp, hidx)
    if depth is None or depth < WAVE_MIN_DEPTH:
        return False
    if not memory:
        return True
    from .loader import import_cupy

    cp = import_cupy()   # a batch at once per SM must fit in half the free memory (GpuWave's slots)
    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    return sms * (hp.shape[0] - 1) * (256 + 4 * 5) <= free_bytes(cp=cp) // 2


class WaveRunner:
    """:func:`~distgraph.algorithms.closeness.closeness`'s batch runner around :class:`GpuWave`
    (the protocol of :func:`distgraph.algorithms.msbfs.run_batches`): closeness of every vertex
    of an undirected graph, sums per source at the sources (``symmetric``: over all sources they
    are the per-vertex sums). Deferred batches are held and run in one launch at :meth:`drain`
    (the wave's slots take them all at once); a batch run alone (a checkpointed run) is one
    launch of one batch."""

    defers = True
    symmetric = True
    collective = False
    kappa = KAPPA

    def __init__(self, hptr, hidx, ctx=None, **kw):
        self.wave = GpuWave(hptr, hidx, ctx=ctx, **kw)
        self.info = self.wave.info
        self._held = []
        self._aside = None

    def set_aside(self, vertices) -> None:
        """Sources (caller ids) that the held runs put on the bit-parallel kernel instead
        (:meth:`GpuWave.run`'s ``aside``): closeness() gives the ball order's spread groups."""
        self._aside = np.zeros(self.wave.n, np.bool_)
        self._aside[np.asarray(vertices, np.int64)] = True

    def run(self, sources, per_source: bool, out, defer: bool = False) -> None:
        expect(not per_source, "per_source", "False (the wave adds each BFS's sums at its source: closeness of "
               "every vertex)", per_source)
        if defer:
            self._held.append(np.asarray(sources, np.int64))
        else:
            self.wave.run(sources, out)

    def fold_leaves(self, rep) -> None:
        self.wave.fold_leaves(rep)

    def drain(self, far, reach, h0, h1, h2) -> None:
        if self._held:
            src = np.concatenate(self._held)
            self._held = []
            self.wave.run(src, (far, reach, h0, h1, h2), None if self._aside is None else self._aside[src])

    def close(self) -> None:
        self._held = []


def _check_symmetric(hptr, hidx, n: int) -> None:
    """The wave reads a vertex's arcs as its in-arcs: the CSR must hold every arc both ways."""
    import scipy.sparse as sp

    A = sp.csr_matrix((np.ones(hidx.size, np.int8), np.asarray(hidx), np.asarray(hptr)), shape=(n, n))
    A.sum_duplicates()
    A.data[:] = 1   # a repeated arc counts once
    expect((A != A.T).nnz == 0, "the graph", "undirected (every arc in both directions): the profile wave reads "
           "a vertex's arcs as its in-arcs", "a CSR with one-way arcs")


def _check_sources(src: np.ndarray, n: int) -> None:
    """Distinct vertex ids in [0, n) (a repeated source would be counted twice in its batch)."""
    bad = np.flatnonzero((src < 0) | (src >= n))
    expect(bad.size == 0, "sources", f"vertex ids in [0, {n})",
           f"sources[{int(bad[0])}] = {int(src[bad[0]])}" if bad.size else None)
    from ...algorithms.msbfs import repeats

    rep = repeats(src, n)
    expect(rep == 0, "sources", "distinct vertex ids", f"{rep} repeated")
