"""GPU single-source BFS on tensor cores (BLEST), driven from Python.

Pipeline, once per graph (:class:`GpuBFS`):

1. reorder (``distgraph.formats.reorder``): Jaccard-with-windows for scale-free-like
   graphs, RCM otherwise (``reorder="auto"``), or as asked;
2. build BVSS of the reordered graph (``distgraph.formats.bvss``); the ordering and
   BVSS are cached together under ``config.cache_dir/bvss`` keyed by the graph checksum;
3. measure the update divergence U_div and pick the update scheme: lazy (Alg. 3) when
   U_div > ``config.gpu_bfs_udiv_threshold`` (25000), else direct (Alg. 2);
4. plan the device memory, raise DeviceMemoryError if it does not fit, upload;
5. compile ``kernels/bvss_bfs.cu`` through the one loader and size the cooperative grid
   from the occupancy;
6. for ``variant="auto"``, the first-sources check of the paper: run 3 seeded sources
   without switching, with switching (Eq. 6, ``eta``, and the edge test ``alpha``) and
   with switching by Eq. 6 alone, and keep the fastest.

Then every :meth:`GpuBFS.levels` is one cooperative kernel launch (init + all levels).
Levels come back as int32 in the caller's vertex ids, -1 for unreachable vertices.
:meth:`GpuBFS.levels_and_parents` adds BFS-tree parents by a second, cheap kernel once
the levels are known (not in BLEST, whose MMA gives no parent): for each reached vertex
the smallest in-neighbour one level up, in the caller's ids over the caller's CSR of
G^T, so the parents are exactly the CPU backend's.

Variants: ``"plain"`` (Alg. 2), ``"lazy"`` (Alg. 3), ``"switch"`` (Alg. 3 + Alg. 4 with
Eq. 6), ``"auto"``.  In the plain scheme, levels whose queue holds at most ``tiny`` VSSs
run on one block without grid syncs (``tiny``, default :data:`TINY_DEFAULT`; 0 = off),
which is what high-diameter graphs (roads) spend their time on.
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import InvalidArgumentError, expect
from ...formats.bvss import BVSS, MAX_VSS, build_bvss, graph_checksum
from ...formats.reorder import REORDERINGS, permute_graph, reorder_graph, update_divergence
from .loader import blocks_per_sm, estimate_blocks_per_sm, get_module, import_cupy, sm_count
from .memory import bfs_plan

__all__ = ["GpuBFS", "bfs_gpu", "VARIANTS", "TINY_DEFAULT", "MAX_VERTICES"]

VARIANTS = ("auto", "plain", "lazy", "switch")
_MODE = {"plain": 0, "lazy": 1, "switch": 2}
# Not in the paper, for measurements: lazy marking that first skips rows already visited;
# "plain-s1": the direct scheme with session 1's update code (rows one after the other),
# kept for A/B runs in one benchmark.
# "plain-v": the direct scheme with the visited bitmap and slice-set claims (mode bit 16);
# one round trip less per level but more VSSs queued: measured slower on every graph
# (road-FLA 5.10 vs 4.82 ms, kron:22 5.97 vs 2.25 ms; benchmarks/results/gpu_bfs_session2.json).
_MODE_EXTRA = {"lazy+filter": 5, "switch+filter": 6, "plain-s1": 8, "plain-v": 16}
BLOCK = 256
#: Plain scheme: a level whose work queue holds at most this many VSSs runs on block 0
#: alone (no grid sync); one VSS per warp of the block.  Swept on road-FLA (RCM, 64
#: sources): 0 -> 4.95 ms, 8 -> 4.82, 16 -> 4.85, 32 -> 5.61 (serialized VSSs).
TINY_DEFAULT = 8
N_CTR = 48  # DG_BFS_NCTR in kernels/bvss_bfs.cu
#: Vertices the kernels take at most.  kernels/bvss_bfs.cu indexes vertices, bitmap words
#: (``(n + 31) >> 5``) and its grid-stride loops (``i += gridDim.x * blockDim.x`` while
#: ``i < n``) in 32-bit ints: with grids of up to 2**22 threads (an H200's co-resident grid
#: has 132 SMs x 2048 = 270336) none of them passes 2**31 - 1 below this bound.  Arcs are
#: not bounded by it: the CSR of G^T is indexed by 64-bit offsets and the BVSS by
#: :data:`~distgraph.formats.bvss.MAX_VSS`.
MAX_VERTICES = 2**31 - 2**22


def _cached_preprocess(graph, method, window, cache_dir):
    """Reordering + BVSS + U_div, from the cache when possible.

    Returns ``(graph_reordered or None when it came from the cache, new_id or None, bvss,
    udiv, info)``."""
    import os
    from pathlib import Path

    if cache_dir is None:
        from ...runtime.config import config

        cache_dir = config.cache_dir
    path = None
    if cache_dir is not False:
        tag = f"{graph_checksum(graph)}-{method}-w{window}"
        path = Path(cache_dir) / "bvss" / f"{tag}.npz"
        if path.is_file():
            try:
                with np.load(path, allow_pickle=False) as d:
                    arr = {k: d[k] for k in d.files}
                b = BVSS.from_arrays(arr)
                new_id = arr["new_id"] if arr["new_id"].shape[0] == graph.n else None
                info = {"method": str(arr["method"]), "scale_free": bool(arr["scale_free"]),
                        "reorder_s": 0.0, "bvss_s": 0.0, "cached": True}
                return None, new_id, b, float(arr["udiv"]), info
            except (OSError, ValueError, KeyError):
                pass
    t0 = time.perf_counter()
    g2, new_id, rinfo = reorder_graph(graph, method, window=window)
    t1 = time.perf_counter()
    b = build_bvss(g2)
    t2 = time.perf_counter()
    udiv = update_divergence(b)
    info = {"method": rinfo["method"], "scale_free": bool(rinfo.get("scale_free", False)),
            "reorder_s": t1 - t0, "bvss_s": t2 - t1, "udiv_s": time.perf_counter() - t2, "cached": False}
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, **b.to_arrays(), new_id=(new_id if new_id is not None else np.zeros(0, np.int64)),
                     udiv=np.float64(udiv), method=np.str_(info["method"]),
                     scale_free=np.bool_(info["scale_free"]))
            os.replace(tmp, path)
        except OSError:
            pass
    return g2, new_id, b, udiv, info


class GpuBFS:
    """A BLEST BFS engine for one graph: preprocessing and device arrays built once.

    Parameters
    ----------
    graph : Graph
        Directed or undirected (weights ignored); at most :data:`MAX_VERTICES` vertices (any
        number of arcs: the BVSS may have at most :data:`~distgraph.formats.bvss.MAX_VSS` =
        2**26 virtual slice sets; kron:24 and urand:24 had 4.4-5.3 million
        (benchmarks/results/gpu_bfs_scale24.json), so scale 27 should need about 8x that).
    variant : {"auto", "plain", "lazy", "switch"}
        Update scheme (see the module docstring).  ``"auto"`` picks lazy or plain by
        U_div, then checks on 3 sources whether switching pays.
    reorder : {"auto", "jaccard", "rcm", "none"}
    window : int, optional
        Jaccard window ``W`` (default ``config.gpu_bfs_window`` = 16384: on kron:22 the BFS
        after W=16384 took 0.328 ms against 0.404 ms after the paper's 2**16, and the
        reordering is cheaper; benchmarks/results/gpu_bfs_session3.json).
    eta : int, optional
        Switching constant of Eq. 6 (default ``config.gpu_bfs_eta`` = 10).
    alpha : float, optional
        Edge test that must hold too before a level runs bottom-up (not in the paper; default
        ``config.gpu_bfs_alpha`` on undirected graphs, 0 on directed ones, whose frontier's
        in-arcs do not measure the top-down work): the in-arcs the bottom-up pass is expected to scan,
        ``min(mu, unvisited * m / mf)``, at most ``alpha * mf``, where ``mf`` counts the
        in-arcs of the frontier and ``mu`` those of the unvisited vertices.  Eq. 6 alone
        sent urand:24 bottom-up at a level whose frontier held 6% of the vertices (2.3-2.6 ms
        against 0.84-0.99 ms top-down, 4 sources, benchmarks/results/gpu_bfs_levels.json).
        0 = Eq. 6 alone.
    udiv_threshold : float, optional
        Lazy updates when U_div is above it (default ``config.gpu_bfs_udiv_threshold``).
    cache_dir : path, None or False
        Where the ordering and BVSS are cached (None: ``config.cache_dir``; False: off).
    bu_chunk : int, optional
        In-arcs an unvisited vertex checks per round of a bottom-up level (Alg. 4), their
        loads issued together (default ``config.gpu_bfs_bu_chunk``; 1, 2, 4, 8 or 16).
    bu_list : bool or "auto", optional
        Bottom-up levels hand unvisited vertices to idle lanes from a work list per warp
        (default ``config.gpu_bfs_bu_list`` = "auto": on for graphs that are not scale-free-like,
        where it was measured faster: urand:27 13.18 vs 13.51 ms; kron:21 was 16% slower).
    tiny : int, optional
        Plain scheme: levels with at most ``tiny`` queued VSSs run on one block without
        grid syncs (default :data:`TINY_DEFAULT`; 0 = every level on the whole grid).

    Attributes
    ----------
    variant : str
        The variant that runs (after ``"auto"`` was resolved).
    info : dict
        Preprocessing times (s), ordering, U_div, BVSS size, grid, auto decisions.

    Examples
    --------
    >>> eng = GpuBFS(graph)                       # doctest: +SKIP
    >>> eng.levels(0)                             # doctest: +SKIP
    array([0, 1, 2, ...], dtype=int32)
    """

    def __init__(self, graph, *, variant="auto", reorder="auto", window=None, eta=None,
                 udiv_threshold=None, cache_dir=None, tiny=None, alpha=None, bu_chunk=None, bu_list=None):
        from ...graph.core import Graph
        from ...runtime.config import config

        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
        if graph.n > MAX_VERTICES:
            raise InvalidArgumentError(f"graph must have at most 2**31 - 2**22 = {MAX_VERTICES} vertices for the GPU "
                                       f"BFS (32-bit vertex and grid-stride indices in kernels/bvss_bfs.cu); "
                                       f"got n={graph.n}")
        expect(variant in VARIANTS, "variant", "one of " + ", ".join(VARIANTS), variant)
        expect(reorder in REORDERINGS, "reorder", "one of " + ", ".join(REORDERINGS), reorder)
        window = config.gpu_bfs_window if window is None else window
        eta = config.gpu_bfs_eta if eta is None else eta
        if alpha is None:
            # the edge test counts in-arcs (the kernel holds G^T's indptr): on an undirected graph
            # those are the frontier's out-arcs, the top-down work; on a directed one a frontier
            # with few in-arcs would veto bottom-up levels that pay, so Eq. 6 alone by default
            alpha = 0.0 if graph.directed else config.gpu_bfs_alpha
        udiv_threshold = config.gpu_bfs_udiv_threshold if udiv_threshold is None else udiv_threshold
        expect(isinstance(eta, (int, np.integer)) and eta >= 0, "eta", "an integer >= 0", eta)
        # alpha reaches the kernel as a float32: larger values would be +inf there, and inf * 0
        # (a frontier without in-arcs) NaN, a veto
        expect(isinstance(alpha, (int, float, np.integer, np.floating)) and not isinstance(alpha, bool)
               and np.isfinite(alpha) and 0 <= alpha <= float(np.finfo(np.float32).max), "alpha",
               "a finite number >= 0 that fits a float32 (at most 3.4e38)", alpha)
        expect(isinstance(window, (int, np.integer)) and not isinstance(window, bool) and window >= 8
               and window % 8 == 0, "window", "a positive multiple of 8 (the slice-set size)", window)
        expect(isinstance(udiv_threshold, (int, float, np.integer, np.floating))
               and not isinstance(udiv_threshold, bool) and not np.isnan(udiv_threshold),
               "udiv_threshold", "a number", udiv_threshold)
        tiny = TINY_DEFAULT if tiny is None else tiny
        bu_chunk = config.gpu_bfs_bu_chunk if bu_chunk is None else bu_chunk
        expect(isinstance(bu_chunk, (int, np.integer)) and not isinstance(bu_chunk, bool)
               and bu_chunk in (1, 2, 4, 8, 16), "bu_chunk", "one of 1, 2, 4, 8, 16", bu_chunk)
        self._bu_chunk = int(bu_chunk)
        bu_list = config.gpu_bfs_bu_list if bu_list is None else bu_list
        expect(isinstance(bu_list, (bool, np.bool_)) or (isinstance(bu_list, str) and bu_list == "auto"),
               "bu_list", "True, False or 'auto'", bu_list)
        self._bu_list = bu_list if isinstance(bu_list, str) else bool(bu_list)  # "auto": resolved below
        expect(isinstance(tiny, (int, np.integer)) and not isinstance(tiny, bool) and 0 <= tiny < 2**31,
               "tiny", "an integer >= 0", tiny)
        if graph.n == 0:
            raise InvalidArgumentError("graph must have at least one vertex for BFS; got n=0")
        cp = import_cupy()
        self._cp = cp
        self.n = graph.n
        self.graph = graph
        self.eta = int(eta)
        self.alpha = float(alpha)
        self.tiny = int(tiny)
        g2, new_id, b, udiv, info = _cached_preprocess(graph, reorder, window, cache_dir)
        if b.num_vss > MAX_VSS:  # build_bvss refuses these; a cached or hand-made BVSS may not
            raise InvalidArgumentError(f"the BVSS must have at most MAX_VSS = 2**26 virtual slice sets for the GPU BFS "
                                       f"(kernels/bvss_bfs.cu reads lane words at vss * 32 + lane in 32-bit ints); "
                                       f"got {b.num_vss}")
        self.new_id = new_id
        self.bvss = b
        self.info = dict(info)
        self.info.update({"udiv": udiv, "bvss": b.summary(), "window": window, "eta": self.eta,
                          "alpha": self.alpha, "udiv_threshold": udiv_threshold})
        base = "lazy" if udiv > udiv_threshold else "plain"
        self.info["udiv_choice"] = base
        if self._bu_list == "auto":
            if reorder == "auto":  # the classifier's verdict (computed, or saved with the cached BVSS)
                sf = bool(info["scale_free"])
            else:
                from ...formats.reorder import is_scale_free

                sf = bool(is_scale_free(graph)[0])
            self._bu_list = not sf
        self.info["bu_list"] = self._bu_list
        self.info["bu_chunk"] = self._bu_chunk
        need_t = variant in ("auto", "switch")
        # CSR of G^T in the reordered ids for the bottom-up pass (Alg. 4)
        t_ip = t_ix = None
        if need_t:
            t0 = time.perf_counter()
            if g2 is None:
                g2 = permute_graph(graph, new_id) if new_id is not None else graph
            t_ip, t_ix, _ = g2.csc()
            self.info["transpose_s"] = time.perf_counter() - t0
        plan = bfs_plan(self.n, b, None if t_ix is None else int(t_ix.shape[0]), reordered=new_id is not None)
        plan.check()
        self.info["device_bytes"] = plan.total
        # ---- upload
        self._row_ids = cp.asarray(b.row_ids) if b.num_vss else cp.zeros(128, cp.int32)
        self._masks = cp.asarray(b.masks) if b.num_vss else cp.zeros(128, cp.uint8)
        self._real_ptrs = cp.asarray(b.real_ptrs)
        self._v2r = cp.asarray(b.virtual_to_real) if b.num_vss else cp.zeros(1, cp.int32)
        self._has_transpose = need_t
        if need_t:
            self._t_ip = cp.asarray(t_ip.astype(np.int64, copy=False))
            self._t_ix = cp.asarray(t_ix.astype(np.int32, copy=False)) if t_ix.shape[0] else cp.zeros(1, cp.int32)
        else:
            self._t_ip = cp.zeros(1, cp.int64)
            self._t_ix = cp.zeros(1, cp.int32)
        nw = (self.n + 31) // 32
        self._level = cp.empty(self.n, cp.int32)
        self._F = cp.empty(3 * nw, cp.uint32)   # three frontier bitmaps
        self._V = cp.empty(2 * nw, cp.uint32)   # visited: current, next
        self._qcap = max(b.num_vss, 1)
        self._Q = cp.empty(3 * self._qcap * 2, cp.int32)  # int2 (VSS, slice set) entries
        self._ctr = cp.zeros(N_CTR, cp.int32)
        self._sslev = cp.empty(max((self.n + 7) // 8, 1), cp.int32)  # slice-set claims (plain-v)
        self._new_id_dev = None
        self._par = None  # parents pass: (kernel, t_indptr, t_indices, parents) on first use
        # ---- kernel and grid
        # the all-modes kernel sizes the grid (64 registers: 4 blocks per SM, the grid every
        # measurement used); runs launch the direct-only or lazy-only compilation of it
        # (the lazy path alone needs 38 registers and is session 1's code, see the .cu)
        self._load_kernels()
        # Grid: all co-resident blocks for lazy/switch (much work per level).  The direct
        # scheme: one block per SM on graphs whose U_div picks it (high diameter, levels
        # short and bound by the grid sync: road-FLA 4.79 ms at 132 blocks, 5.54 at 264,
        # gpu_bfs_session2.json), the full grid otherwise (kron:22 2.45 vs 3.70 ms, urand:22
        # 2.47 vs 3.78, kron:23 5.35 vs 8.44 at 528 vs 132 blocks, gpu_bfs_session3.json).
        # ``grid`` set to an int overrides.
        self.grid_full = self._grid_size()
        sms = int(self._cp.cuda.Device().attributes["MultiProcessorCount"])
        self.grid_plain = min(self.grid_full, sms) if base == "plain" else self.grid_full
        self.grid = None
        self.info["grid"] = {"plain": [self.grid_plain, BLOCK], "lazy/switch": [self.grid_full, BLOCK]}
        self.info["tiny"] = self.tiny
        # ---- variant
        if variant == "auto":
            variant = self._first_sources_check(base)
        self.variant = variant
        self.info["variant"] = variant

    # ------------------------------------------------------------------ internals
    def _grid_size(self) -> int:
        """All co-resident blocks of the all-modes kernel: the driver's occupancy times the SMs,
        or, where the driver cannot be asked or finds no block fits, the estimate from its
        registers (:func:`~distgraph.backends.gpu.loader.blocks_per_sm`);
        ``info["occupancy_source"]`` says which (``"driver"`` or ``"registers"``)."""
        per_sm, source = blocks_per_sm(self._kernel, BLOCK)
        if per_sm < 1:
            per_sm, source = estimate_blocks_per_sm(self._kernel, BLOCK), "registers"
        self.info["occupancy_source"] = source
        return int(sm_count(self._cp) * per_sm)

    def _launch(self, src_internal: int, mode: int) -> None:
        direct = (mode & 3) == 0
        grid = self.grid if self.grid is not None else (self.grid_plain if direct else self.grid_full)
        kern = self._k_direct if direct else self._k_lazy
        kern((int(grid),), (BLOCK,),
                     (self._row_ids, self._masks, self._real_ptrs, self._v2r, self._t_ip, self._t_ix,
                      np.int32(self.n), np.int32(mode), np.int32(self.eta), np.float32(self.alpha),
                      np.int32(self.tiny if direct else 0), np.int32(src_internal),
                      self._level, self._F, self._V, self._Q, np.int32(self._qcap), self._ctr, self._sslev))

    def _internal(self, source: int) -> int:
        return int(self.new_id[source]) if self.new_id is not None else int(source)

    def _check_source(self, source):
        if isinstance(source, (bool, np.bool_)) or not isinstance(source, (int, np.integer)):
            raise TypeError(f"source must be an integer vertex id; got {type(source).__name__}")
        expect(0 <= int(source) < self.n, "source", f"in [0, {self.n})", int(source))

    def _first_sources_check(self, base: str, k: int = 3, seed: int = 27491095) -> str:
        """BLEST's check whether switching pays: k seeded sources with and without it."""
        deg = np.diff(self.graph.indptr)
        cand = np.flatnonzero(deg > 0)
        if cand.shape[0] == 0:
            return base
        rng = np.random.default_rng(seed)
        srcs = rng.choice(cand, size=min(k, cand.shape[0]), replace=False)
        times = {}
        alpha = self.alpha
        # switching with the edge test (alpha) and by Eq. 6 alone (alpha 0): where both take
        # the same levels bottom-up, alpha 0 saves stage 2's degree reads (means of 4 sources,
        # benchmarks/results/gpu_bfs_levels24.json: kron:24 1.14 vs 1.25 ms, same decisions;
        # urand:24 3.14 vs 1.67 ms)
        cands = [(base, alpha), ("switch", alpha)] + ([("switch", 0.0)] if alpha > 0 else [])
        for v, a in cands:
            self.alpha = a
            self.run_device(int(srcs[0]), v)  # warm up (compile, caches)
            times[v if a == alpha else "switch-eq6"] = float(np.mean([self.run_device(int(s), v)[1] for s in srcs]))
        self.info["auto_check_ms"] = times
        best = min(times, key=times.get)
        self.alpha = 0.0 if best == "switch-eq6" else alpha
        self.info["alpha"] = self.alpha
        return "switch" if best == "switch-eq6" else best

    # ------------------------------------------------------------------ public
    def run_device(self, source: int, variant: str | None = None):
        """Run one BFS; returns ``(levels_device_internal_ids, milliseconds)``.

        The time is measured with CUDA events around the one kernel launch (init of the
        state included).  The returned CuPy array is overwritten by the next run.
        """
        cp = self._cp
        variant = self.variant if variant is None else variant
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self._launch(self._internal(source), _MODE[variant] if variant in _MODE else _MODE_EXTRA[variant])
        stop.record()
        stop.synchronize()
        return self._level, float(cp.cuda.get_elapsed_time(start, stop))

    def stats(self) -> dict:
        """Counters of the last run: ``levels`` (levels run) and ``bottom_up_levels``."""
        c = self._ctr.get()
        return {"levels": int(c[8]), "bottom_up_levels": int(c[9])}

    def _check_variant(self, variant):
        if variant is not None:
            expect(variant in _MODE, "variant", "one of plain, lazy, switch", variant)
            if variant == "switch" and not self._has_transpose:
                raise InvalidArgumentError("variant must be one the engine was built for (plain or lazy: "
                                           "it holds no transpose for Alg. 4); got 'switch' "
                                           "(build GpuBFS with variant='switch' or 'auto')")

    def _levels_caller_device(self, source, variant):
        """Levels in the caller's ids as a CuPy array (a copy when the engine reorders)."""
        lev, _ = self.run_device(int(source), variant)
        if self.new_id is None:
            return lev
        if self._new_id_dev is None:
            self._new_id_dev = self._cp.asarray(self.new_id)
        return lev[self._new_id_dev]

    def levels(self, source, *, variant: str | None = None) -> np.ndarray:
        """BFS levels from ``source`` (caller's id) as int32 ``(n,)``, -1 = unreachable."""
        self._check_source(source)
        self._check_variant(variant)
        return self._levels_caller_device(source, variant).get()

    @property
    def bu_chunk(self) -> int:
        """In-arcs per round of the bottom-up scan; setting it recompiles (memoized) the kernels."""
        return self._bu_chunk

    @bu_chunk.setter
    def bu_chunk(self, k):
        expect(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k in (1, 2, 4, 8, 16),
               "bu_chunk", "one of 1, 2, 4, 8, 16", k)
        self._bu_chunk = int(k)
        self.info["bu_chunk"] = self._bu_chunk
        self._load_kernels()

    @property
    def bu_list(self) -> bool:
        """Bottom-up work lists per warp; setting it recompiles (memoized) the kernels."""
        return self._bu_list

    @bu_list.setter
    def bu_list(self, on):
        expect(isinstance(on, (bool, np.bool_)), "bu_list", "True or False", on)
        self._bu_list = bool(on)
        self.info["bu_list"] = self._bu_list
        self._load_kernels()

    def _load_kernels(self):
        mod = get_module("bvss_bfs", defines=self.kernel_defines(), cooperative=True)
        self._kernel = mod.get_function("distgraph_bfs_persistent")
        self._k_direct = mod.get_function("distgraph_bfs_direct")
        self._k_lazy = mod.get_function("distgraph_bfs_lazy")

    def kernel_defines(self, **extra) -> dict:
        """The compile-time defines of this engine's kernels (plus ``extra``, e.g. a timing build)."""
        d = {"DG_BFS_BLOCK": BLOCK}
        if self._bu_chunk != 1:
            d["DG_BFS_BU_CHUNK"] = self._bu_chunk
        if self._bu_list:
            d["DG_BFS_BU_LIST"] = 1
        d.update(extra)
        return d

    def _parents_setup(self):
        """Compile the parents kernel and upload the caller's CSR of G^T (once).

        The caller's CSC is the CSR itself for an undirected graph; when the engine does
        not reorder and already holds G^T for Alg. 4, that copy is reused."""
        from .memory import parents_plan

        cp = self._cp
        mod = get_module("bvss_bfs", defines=self.kernel_defines(), cooperative=True)
        kern = mod.get_function("distgraph_bfs_parents")
        if self.new_id is None and self._has_transpose:
            t_ip, t_ix = self._t_ip, self._t_ix
            plan = parents_plan(self.n, None)
        else:
            ip, ix, _ = self.graph.csc()
            plan = parents_plan(self.n, int(ix.shape[0]))
            plan.check()  # before uploading
            t_ip = cp.asarray(np.asarray(ip, dtype=np.int64))
            t_ix = cp.asarray(np.asarray(ix, dtype=np.int32)) if ix.shape[0] else cp.zeros(1, cp.int32)
        if t_ip is self._t_ip:
            plan.check()
        par = cp.empty(self.n, cp.int64)
        self._par = (kern, t_ip, t_ix, par)
        self.info["parents_device_bytes"] = plan.total

    def parents_device(self, levels_caller, source: int):
        """Run the parents pass on levels in the caller's ids (a CuPy int32 array);
        returns ``(parents CuPy int64 array, milliseconds)``; overwritten by the next call."""
        cp = self._cp
        if self._par is None:
            self._parents_setup()
        kern, t_ip, t_ix, par = self._par
        sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        grid = max(1, min(sms * 8, -(-self.n // BLOCK)))
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kern((grid,), (BLOCK,), (t_ip, t_ix, levels_caller, np.int32(self.n), np.int32(source), par))
        stop.record()
        stop.synchronize()
        return par, float(cp.cuda.get_elapsed_time(start, stop))

    def levels_and_parents(self, source, *, variant: str | None = None):
        """BFS levels and BFS-tree parents from ``source`` (caller's ids).

        Returns
        -------
        levels : numpy.ndarray
            int32 ``(n,)``, -1 = unreachable.
        parents : numpy.ndarray
            int64 ``(n,)``: the smallest in-neighbour one level up (the CPU backend's
            rule), ``parents[source] == source``, -1 = unreachable.
        """
        self._check_source(source)
        self._check_variant(variant)
        lev = self._levels_caller_device(source, variant)
        par, _ = self.parents_device(lev, int(source))
        return lev.get(), par.get()


def bfs_gpu(graph, source, *, variant="auto", reorder="auto", window=None, eta=None,
            udiv_threshold=None, cache_dir=None, parents=False, alpha=None):
    """Single-source BFS levels on the GPU with BLEST (tensor cores over BVSS).

    Parameters
    ----------
    graph : Graph
    source : int
        Source vertex, in the caller's ids.
    variant, reorder, window, eta, alpha, udiv_threshold, cache_dir
        See :class:`GpuBFS`.  For many sources build one :class:`GpuBFS` and call
        :meth:`GpuBFS.levels` (preprocessing is then paid once).
    parents : bool
        Also return BFS-tree parents (see :meth:`GpuBFS.levels_and_parents`).

    Returns
    -------
    numpy.ndarray, or (numpy.ndarray, numpy.ndarray) when ``parents``
        int32 ``(n,)``: ``levels[v]`` is the hop distance from ``source``, -1 when
        ``v`` is unreachable; with ``parents`` also int64 ``(n,)`` parents
        (``parents[source] == source``, -1 when unreachable).

    Raises
    ------
    BackendUnavailableError
        No CuPy or no GPU.
    DeviceMemoryError
        The run does not fit in device memory (raised before allocating).
    InvalidArgumentError
        Bad ``source``, ``variant`` or ``reorder``.
    """
    from ...graph.core import Graph

    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
    if isinstance(source, (bool, np.bool_)) or not isinstance(source, (int, np.integer)):
        raise TypeError(f"source must be an integer vertex id; got {type(source).__name__}")
    expect(0 <= int(source) < graph.n, "source", f"in [0, {graph.n})", int(source))
    eng = GpuBFS(graph, variant=variant, reorder=reorder, window=window, eta=eta, alpha=alpha,
                 udiv_threshold=udiv_threshold, cache_dir=cache_dir)
    if parents:
        return eng.levels_and_parents(int(source))
    return eng.levels(int(source))
