"""Exact closeness centrality of all vertices (or of a given set), over MPI ranks.

Every vertex's closeness needs its distances to (or from) every other vertex, so
this is all-pairs BFS: batches of up to 512 sources run as one bit-parallel BFS
(:mod:`distgraph.algorithms.msbfs`), batches are dealt to ranks, and the partial
sums -- farness (uint64), reach counts (int64) and harmonic sums (exact fixed point)
-- are added with MPI collectives. Integer sums make the result bit-identical for
any number of ranks and threads, and after a resume from a checkpoint.

Two ways to aggregate, chosen by what is asked:

* all vertices: BFS from every vertex and add, *per reached vertex* v, the distance
  from each source (BLEST eq. 7, ``far[v] += l * popc(diff)``); run on G for
  incoming distances, on the reversed graph for outgoing ones. Sources without arcs
  reach only themselves and are not searched.
* a set ``S``: BFS from each ``s`` in S (on the reversed graph for incoming
  distances) and add, *per source*, the distances of all vertices it reaches.

Conventions (``r`` = vertices that reach v, or v reaches, including v;
``far`` = sum of those distances; ``n`` = number of vertices):

==============  ==========  ===================================================
convention      distances   closeness(v)
==============  ==========  ===================================================
``networkx``    incoming    ``(r-1)/far * (r-1)/(n-1)``; 0 when ``far == 0``
                            (networkx.closeness_centrality, wf_improved=True)
``networkit``   outgoing    same formula (networkit Closeness, normalized,
                            ClosenessVariant.GENERALIZED)
``igraph``      outgoing    ``(r-1)/far`` over reachable vertices only; NaN when
                            v reaches nothing (igraph closeness(mode="out"))
``harmonic``    incoming    ``sum over u != v of 1/d(u, v)``
                            (networkx.harmonic_centrality)
==============  ==========  ===================================================

For undirected graphs incoming and outgoing distances agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from .msbfs import check_batch_size, check_graph, check_vertices, cpu_batch_order, run_batches

__all__ = ["closeness", "ClosenessResult", "CONVENTIONS", "closeness_from_sums", "verify_closeness", "leaf_folds"]

#: convention -> True when it uses incoming distances (d(u, v) for closeness of v)
CONVENTIONS = {"networkx": True, "networkit": False, "igraph": False, "harmonic": True}


@dataclass
class ClosenessResult:
    """Closeness of ``vertices`` (all vertices, in order, unless a set was given).

    Attributes
    ----------
    closeness : float64 ``(k,)`` -- the value of the chosen convention.
    farness : uint64 ``(k,)`` -- sum of distances to (or from) the reached vertices.
    reach : int64 ``(k,)`` -- number of vertices at finite distance, the vertex included.
    harmonic : float64 ``(k,)`` -- sum of ``1/d`` over the other reached vertices.
    vertices : int64 ``(k,)``
    convention : str
    """

    closeness: np.ndarray
    farness: np.ndarray
    reach: np.ndarray
    harmonic: np.ndarray
    vertices: np.ndarray
    convention: str

    def to_numpy(self) -> np.ndarray:
        return self.closeness


def closeness_from_sums(farness, reach, harmonic, n: int, convention: str) -> np.ndarray:
    """Closeness values from the sums (see the module docstring for the formulas)."""
    if convention == "harmonic":
        return np.asarray(harmonic, dtype=np.float64).copy()
    far = np.asarray(farness).astype(np.float64)
    r1 = np.asarray(reach).astype(np.float64) - 1.0
    pos = far > 0
    out = np.zeros(far.shape, dtype=np.float64)
    if convention == "igraph":
        out[:] = np.nan
        out[pos] = r1[pos] / far[pos]
        return out
    if n > 1:
        out[pos] = r1[pos] / far[pos]
        out[pos] *= r1[pos] / (n - 1.0)
    return out


def closeness(graph, *, vertices=None, convention="networkx", backend=None, comm=None, batch_size=None,
              checkpoint=None, resume=False, checkpoint_interval=None, progress=None) -> ClosenessResult:
    """Exact closeness centrality, distributed over MPI ranks.

    Parameters
    ----------
    graph : Graph
        Directed or undirected; weights are ignored (unit lengths).
    vertices : sequence of int or None
        Compute only these vertices (any order, repeats allowed); default all.
    convention : {"networkx", "networkit", "igraph", "harmonic"}
        Which definition; see the module docstring. Default ``"networkx"``.
    backend : {"auto", "cpu", "gpu"} or None
    comm : mpi4py communicator or None
        Default ``MPI.COMM_WORLD``; every rank gets the result.
    batch_size : int or None
        Sources per bit-parallel batch, 1..512 (default ``config.msbfs_batch``).
    checkpoint : str or os.PathLike or None
        Directory in which the finished batches are stored durably: every
        ``checkpoint_interval`` seconds, at the end, when a batch fails (then the error is
        raised) and at the next batch boundary after ``SIGTERM`` or ``SIGUSR1`` (then
        :class:`~distgraph.runtime.checkpoint.CheckpointInterrupted` is raised); see
        :mod:`distgraph.runtime.checkpoint`.
    resume : bool
        Continue the run stored in ``checkpoint`` (bit-identical result).
    checkpoint_interval : float or None
        Seconds between a rank's saves, ``0``: after every batch (default
        ``config.checkpoint_interval``, ``DISTGRAPH_CHECKPOINT_INTERVAL``, 60).
    progress : bool or None
        Progress bar with ETA on rank 0 (None: ``config.progress``).

    Returns
    -------
    ClosenessResult
        ``closeness`` float64, ``farness`` uint64, ``reach`` int64, ``harmonic`` float64,
        one entry per vertex of ``vertices``.

    Raises
    ------
    TypeError
        ``graph`` is not a :class:`~distgraph.Graph`.
    InvalidArgumentError
        Unknown convention, vertex id out of range, bad batch size or checkpoint interval.
    CheckpointError
        ``checkpoint`` holds another run, or a run while ``resume`` is false.
    CheckpointInterrupted
        (a ``CheckpointError``) ``SIGTERM`` or ``SIGUSR1`` arrived during a checkpointed run;
        every rank saved its finished batches: resume to continue.
    BackendUnavailableError
        ``backend="gpu"`` without CuPy or a GPU (or, partitioned mode, without nvshmem4py).
    DeviceMemoryError
        ``backend="gpu"``: the memory plan does not fit the GPU (raised before allocating).

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    >>> closeness(g).closeness.round(4).tolist()
    [0.5, 0.75, 0.75, 0.5]
    >>> closeness(g, convention="harmonic", vertices=[1]).closeness.tolist()
    [2.5]
    """
    from ..backends.cpu.bits import limbs_to_float
    from ..runtime.context import get_context

    check_graph(graph)
    if convention not in CONVENTIONS:
        raise InvalidArgumentError(f"convention must be one of {', '.join(CONVENTIONS)}; got {convention!r}")
    bs = check_batch_size(batch_size)
    n = graph.n
    per_source = vertices is not None
    verts = check_vertices(vertices, n, "vertices") if per_source else np.arange(n, dtype=np.int64)
    ctx = get_context(comm, backend)

    incoming = CONVENTIONS[convention]
    fwd = (graph.indptr, graph.indices)
    rev = graph.csc()[:2]
    # H is the graph the BFSs run on: distances d_H(s, v) must be the ones we sum.
    # per-vertex sums over all sources give incoming distances on G;
    # per-source sums give outgoing distances of the source on G.
    use_fwd = incoming != per_source
    hptr, hidx = fwd if use_fwd else rev
    tptr, tidx = rev if use_fwd else fwd
    if per_source:
        sources = verts
    else:
        sources = np.flatnonzero(np.diff(hptr) > 0).astype(np.int64)

    runner = None
    gpu_order = "input"
    fold = None
    if ctx.backend == "gpu" and sources.size:
        # GPU dispatch: the tensor-core MS-BFS (BLEST Alg. 5) adds the same integer sums
        from ..backends.gpu.closeness import make_runner
        from ..runtime.config import config

        wave = str(config.gpu_closeness_wave).strip().lower()
        depth = False   # the high-diameter test, computed once for the wave and the ball order
        if wave == "auto" and not per_source and checkpoint is None and not graph.directed and ctx.size == 1:
            from .msbfs import depth_unless_scale_free

            depth = depth_unless_scale_free(hptr, hidx, tptr)
        if wave != "off" and not per_source and checkpoint is None and not graph.directed \
                and (wave == "on" or (ctx.size == 1 and _wave_pays(hptr, hidx, depth))):
            # high diameter: the distance-profile wave (GpuWave), each vertex once per batch
            from ..backends.gpu.msbfs_wave import WaveRunner

            runner = WaveRunner(hptr, hidx, ctx=ctx)
        else:
            runner = make_runner(hptr, hidx, tptr, tidx, ctx=ctx, all_sources=not per_source)
        if not per_source and hasattr(runner, "fold_leaves") and getattr(runner, "symmetric", False) \
                and config.gpu_closeness_fold_leaves and checkpoint is None:
            # vertices whose only neighbour is p get their sums from p's BFS (leaf_folds); not in a
            # checkpointed run, whose batches must return their sums one by one: those go to the
            # grid-schedule companion, which does not fold (and checkpoints stay as before)
            fold = leaf_folds(hptr, hidx)
            if fold[0].size:
                runner.fold_leaves(fold[2])
                searched = np.ones(n, np.bool_)
                searched[fold[0]] = False
                sources = sources[searched[sources]]
            else:
                fold = None
        if not per_source and cpu_batch_order(hptr, tptr, sources, per_source=False, hidx=hidx, depth=depth) == "ball":
            # compact groups of the runner's batch width, on the CPU backend's rule (asked for, or
            # "auto" on graphs of high diameter that are not scale-free; from the graph alone, so a
            # checkpoint resumes on either GPU schedule). Measured on the block schedule: road-NY
            # 2.69 against 5.09 s of kernel at 1024 threads per block (the host grouping took
            # 0.23 s), benchmarks/results/gpu_closeness_block_sweep.json; on cond-mat-2005 and
            # email-Enron, which "auto" leaves in input order, the kernel saved 6 and 2 ms against
            # 0.12 and 0.10 s of grouping (batch_order_s)
            from .msbfs import ball_sources

            if hasattr(runner, "set_aside"):
                # the wave: groups filled from more than one ball (sources maybe far apart, the
                # wave's slowest batches and those that give up their bytes) go to the bit kernel,
                # beside the wave (road-NY: 25 of 1033 groups, among them all 19 that span 150 or more)
                sources, spread = ball_sources(hptr, hidx, tptr, tidx, sources, runner.kappa, spread=True)
                runner.set_aside(sources[spread])
            else:
                sources = ball_sources(hptr, hidx, tptr, tidx, sources, int(getattr(runner, "kappa", bs)))
            gpu_order = "ball"

    try:  # the runner's device memory is freed also when the checkpoint or a batch fails
        store = None
        if checkpoint is not None:
            from ..runtime.checkpoint import CheckpointStore, array_checksum, graph_checksum

            identity = {"algorithm": "closeness", "graph": graph_checksum(graph), "n": n, "m": graph.m,
                        "directed": bool(graph.directed), "sources": array_checksum(sources),
                        "num_sources": int(sources.size), "per_source": per_source,
                        "distances": "incoming" if incoming else "outgoing", "convention": convention,
                        "batch_size": bs,
                        "order": cpu_batch_order(hptr, tptr, sources, per_source=per_source, hidx=hidx)
                        if runner is None else gpu_order}
            hints = {"order": ("the checkpoint's batches group the sources another way (DISTGRAPH_MSBFS_BATCH_ORDER, "
                               "or a checkpoint made before compact batches on graphs that are not scale-free: "
                               "resume with DISTGRAPH_MSBFS_BATCH_ORDER=degree), or start a new checkpoint "
                               "directory")}
            if getattr(runner, "symmetric", False):  # batches hold per-source sums (GpuMSBFS docs)
                identity["sums"] = "per source"
                hints["sums"] = ("the checkpoint holds per-vertex sums, which the grid schedule keeps; "
                                 "resume with DISTGRAPH_GPU_MSBFS_GROUPS=1, or start a new checkpoint directory")
            elif runner is not None and not per_source and not graph.directed:
                hints["sums"] = ("the checkpoint holds the block schedule's per-source sums; this run took the "
                                 "grid schedule (DISTGRAPH_GPU_MSBFS_GROUPS, or 'auto' found the blocks' state "
                                 "too large for some rank's GPU: more ranks per GPU or less free memory); "
                                 "resume with DISTGRAPH_GPU_MSBFS_GROUPS=blocks on as many "
                                 "ranks per GPU as the checkpointed run, or start a new checkpoint directory")
            store = CheckpointStore(checkpoint, identity, comm=ctx.comm, resume=resume, hints=hints,
                                    interval=checkpoint_interval)

        far, reach, h0, h1, h2, _ = run_batches(hptr, hidx, tptr, tidx, sources, per_source=per_source,
                                                batch_size=bs, ctx=ctx, store=store, progress=progress,
                                                desc="closeness", runner=runner)
    finally:
        if runner is not None:
            runner.close()
    if fold is not None:
        _unfold_leaves(far, reach, h0, h1, h2, *fold)
    if not per_source:
        # sources without arcs were not searched: they reach themselves only
        lonely = np.diff(hptr) == 0
        reach[lonely] += 1
    harm = limbs_to_float(h0, h1, h2)
    c = closeness_from_sums(far, reach, harm, n, convention)
    return ClosenessResult(c, far, reach, harm, verts, convention)


def _wave_pays(hptr, hidx, depth=False) -> bool:
    from ..backends.gpu.msbfs_wave import wave_pays

    return wave_pays(hptr, hidx, depth=depth)


def leaf_folds(hptr, hidx):
    """The leaves that closeness of every vertex of an undirected graph need not search from.

    A vertex ``f`` whose only neighbour (self-loops and repeated arcs aside) is ``p`` has
    ``d(f, x) = 1 + d(p, x)`` for every ``x != f``: its farness is ``far(p) + reach(p) - 2``,
    its reach ``reach(p)``, its harmonic sum ``1 + sum over x != p, f of 1 / (d(p, x) + 1)``.
    So the BFS from ``p`` can add, besides its own sums, those of ``f`` (each vertex it reaches at
    level ``l`` counted at level ``l + 1``: ``GpuMSBFS.fold_leaves``), and ``f`` is not searched
    (folded: road-NY 15.6% of the vertices, email-Enron 28.6%, cond-mat-2005 8.2%).  Of two
    vertices that are each other's only neighbour, the higher id is folded into the lower.

    Returns ``(leaves, parents, rep)``: the folded vertices (int64, increasing), the neighbour
    of each, and ``rep`` (int64, ``(n,)``): for each parent its lowest folded leaf, whose sums
    the searches add (-1 elsewhere); :func:`_unfold_leaves` gives every leaf its values.
    """
    n = int(hptr.shape[0]) - 1
    lo, hi = _neighbour_range(np.asarray(hptr, np.int64), np.asarray(hidx))
    leaf = (lo >= 0) & (lo == hi)
    parent = np.where(leaf, lo, -1)
    v = np.arange(n, dtype=np.int64)
    folded = leaf & ~(leaf[np.maximum(parent, 0)] & (parent > v))
    leaves = np.flatnonzero(folded).astype(np.int64)
    parents = parent[leaves]
    rep = np.full(n, -1, np.int64)
    firsts, at = np.unique(parents, return_index=True)  # leaves increase: the first is the lowest
    rep[firsts] = leaves[at]
    return leaves, parents, rep


def _neighbour_range(hptr, hidx):
    """Lowest and highest neighbour of each vertex other than itself (-1, -1: none)."""
    from numba import njit

    global _neighbour_range_nb
    if _neighbour_range_nb is None:
        @njit(cache=True, nogil=True)
        def kernel(hptr, hidx):
            n = hptr.shape[0] - 1
            lo = np.full(n, -1, np.int64)
            hi = np.full(n, -1, np.int64)
            for u in range(n):
                for e in range(hptr[u], hptr[u + 1]):
                    w = np.int64(hidx[e])
                    if w == u:
                        continue
                    if lo[u] < 0 or w < lo[u]:
                        lo[u] = w
                    if w > hi[u]:
                        hi[u] = w
            return lo, hi

        _neighbour_range_nb = kernel
    return _neighbour_range_nb(hptr, hidx)


_neighbour_range_nb = None


def _unfold_leaves(far, reach, h0, h1, h2, leaves, parents, rep):
    """Every folded leaf's sums from those its parent's BFS added at ``rep[parent]`` (in place).

    The search counted ``rep[p]`` itself at level 2 from itself (it is at level 1 from ``p``):
    its farness holds 2 and its harmonic sum 1/2 too many; the other leaves of ``p`` have the
    same sums as ``rep[p]``.  Harmonic limbs are normalized (``h1, h2 < 2**32``); the 1/2 is
    taken off the 128-bit fixed-point value ``h0 + (h1 * 2**32 + h2) / 2**64``.
    """
    from ..backends.cpu.bits import MASK32, normalize_limbs, recip_fixed

    normalize_limbs(h0, h1, h2)
    src = rep[parents]
    half = recip_fixed(2)  # 2**63
    frac = (h1[src] << np.uint64(32)) | h2[src]
    borrow = (frac < half).astype(np.uint64)
    frac = frac - half
    far[leaves] = far[src] - np.uint64(2)
    reach[leaves] = reach[src]
    h0[leaves] = h0[src] - borrow
    h1[leaves] = frac >> np.uint64(32)
    h2[leaves] = frac & MASK32


def verify_closeness(graph, result: ClosenessResult, *, sample: int = 16, seed: int = 0) -> None:
    """Check ``sample`` random entries of ``result`` against single-source BFSs.

    Farness and reach must match exactly; harmonic and closeness to 1e-12 (relative).

    Raises
    ------
    VerificationError
        With the first vertex whose values disagree.
    """
    from ..errors import VerificationError
    from .bfs import bfs

    verts = np.asarray(result.vertices)
    if verts.size == 0:
        return
    rng = np.random.default_rng(seed)
    picks = rng.choice(verts.size, size=min(sample, verts.size), replace=False)
    h = graph.transpose() if CONVENTIONS[result.convention] else graph
    from ..graph.core import Graph

    h = Graph(h.indptr, h.indices, None, directed=h.directed)
    for i in picks.tolist():
        v = int(verts[i])
        lv = bfs(h, v, comm=_self_comm()).levels
        d = lv[lv > 0].astype(np.int64)
        far, reach = int(d.sum()), int(d.size) + 1
        harm = float(np.sum(1.0 / np.sort(d)[::-1])) if d.size else 0.0
        c = closeness_from_sums(np.array([far], np.uint64), np.array([reach]), np.array([harm]), graph.n,
                                result.convention)[0]
        got = (int(result.farness[i]), int(result.reach[i]), float(result.harmonic[i]), float(result.closeness[i]))
        ok = got[0] == far and got[1] == reach and np.isclose(got[2], harm, rtol=1e-12, atol=0) and \
            (np.isclose(got[3], c, rtol=1e-12, atol=0) or (np.isnan(got[3]) and np.isnan(c)))
        if not ok:
            raise VerificationError(f"closeness of vertex {v}: got farness {got[0]}, reach {got[1]}, harmonic "
                                    f"{got[2]!r}, closeness {got[3]!r}; a single BFS gives {far}, {reach}, "
                                    f"{harm!r}, {c!r}")


def _self_comm():
    from mpi4py import MPI

    return MPI.COMM_SELF
