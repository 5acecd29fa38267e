"""Single-source shortest paths with negative weights: distributed Bellman-Ford.

What
    Distances and predecessors from one source on a graph whose arc weights may be
    negative; a negative cycle reachable from the source raises
    :class:`~distgraph.errors.NegativeCycleError` naming one such cycle (its weight
    recomputed from the graph and confirmed negative before raising), on every rank.

Algorithm
    Worklist Bellman-Ford, distributed by vertex blocks, as the queue-driven multi-GPU
    Bellman-Ford of Sec. III-C of ``../shared/papers/003`` ("A Concurrent Queue System for
    Multi-GPU Platforms: Application to Bellman-Ford SSSP"): each rank owns the vertices of
    one block and their out-arcs, scans the vertices whose distance improved (SLF worklist),
    and sends relaxations of other ranks' vertices to their owners. Two drivers (details,
    state arrays and the negative-cycle test in :mod:`distgraph.backends.cpu.bellman_ford`):

    * ``mode="rounds"`` (default): bulk-synchronous rounds, local work to a fixpoint, then
      one ``Alltoallv`` of the remote relaxations;
    * ``mode="async"``: queue-driven, over the distributed Broker Queue
      (``queue="bq"``) or Broker Work Distributor (``queue="bwd"``) of
      :mod:`distgraph.pgas.queue`, remote relaxations by remote atomic minimum plus
      enqueue (``remote="atomic"``) or by enqueue of ``(vertex, candidate, tail)``
      (``remote="enqueue"``), distributed termination detection; on GPUs also in batches
      (``remote="batch"``: candidates coalesced per vertex in local outboxes, shipped by
      one put per batch into the owner's inbox).

    The GPU backend (``backend="gpu"``, :mod:`distgraph.backends.gpu.bellman_ford`) runs
    the same two modes on GPUs: ``async`` as the queue-driven kernel of the paper over the
    device Broker Queue (one or several PEs, NVSHMEM one-sided remote relaxations; on one PE
    with a near-far priority, ``delta``), and ``rounds`` as Jacobi rounds, each one fused
    kernel (the plain CuPy rounds are the benchmarks' baseline), distributed over the PEs when
    there are several.

    Distances are identical for any mode, backend and number of ranks (the unique fixed point);
    predecessors too (the smallest tail of a tight arc), except on graphs whose tight arcs
    close a zero-weight cycle, where they are a valid tree that may differ.

    Measured on the CPU backend (``benchmarks/results/sssp_cpu*.json``: a 2-core machine,
    Kronecker 16-20 and road-NY/FLA, uniform and potential-shifted weights), geometric
    means of time relative to ``rounds``: on 1 rank all drivers do the same work; on 2
    ranks async is faster (BQ + atomic 0.79, BQ + enqueue 0.86, BWD + atomic 0.85, BWD +
    enqueue 1.03; per graph from 0.5 to 3.3); on 4 ranks sharing the 2 cores async is
    slower (1.09 to 1.45; it polls). ``rounds`` stays the default because it never falls
    far behind (async is up to 3x slower on road-FLA, where stale remote distances are
    propagated before the better ones arrive) and reports the same negative cycle
    whatever the timing; ``remote="atomic"`` is the default remote relaxation because it
    beats ``"enqueue"`` with either queue on 2 and 4 ranks.

Encoding of the result
    ``distance`` has the dtype of the weights (int32, int64, float32 or float64; int64
    for an unweighted graph, which counts every arc as 1). Unreached vertices hold
    :func:`unreachable` of that dtype: ``+inf`` for floats, the dtype's maximum for
    integers (``np.iinfo(dtype).max``). Sums are formed in int64 or float64 whatever the
    weight dtype (so float32 results are float64 distances rounded once, as scipy's).
    ``predecessor`` is int64, ``-1`` for the source and for unreached vertices.
    Vertex ids are the graph's, ``0 .. n-1``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import (GraphValueError, NegativeCycleError,
                      VerificationError, expect)
from ..graph.core import WEIGHT_DTYPES, Graph

__all__ = ["bellman_ford", "BellmanFord", "SSSPResult", "unreachable", "verify_sssp", "cycle_weight",
           "MODES", "QUEUES", "REMOTES"]

MODES = ("auto", "rounds", "async")
QUEUES = ("bq", "bwd")
REMOTES = ("atomic", "enqueue", "batch")


def unreachable(dtype):
    """The distance of an unreached vertex: ``+inf`` for floats, ``iinfo(dtype).max`` for ints.

    >>> float(unreachable(np.float32)), int(unreachable(np.int32))
    (inf, 2147483647)
    """
    dt = np.dtype(dtype)
    return dt.type(np.inf) if dt.kind == "f" else dt.type(np.iinfo(dt).max)


@dataclass
class SSSPResult:
    """Result of :func:`bellman_ford`, the same on every rank.

    Attributes
    ----------
    source : int, or ndarray of int64 (several sources)
    distance : ndarray, shape (n,), or (k, n) for k sources (a row each)
        In the weights' dtype; :func:`unreachable` for unreached vertices.
    predecessor : ndarray of int64, shape (n,) or (k, n), or None
        Tail of the last arc of a shortest path (the smallest such tail); ``-1`` for the
        source and unreached vertices. None unless ``predecessors=True``.
    stats : dict
        ``mode``, ``rounds`` (rounds mode), ``relaxations`` (arcs scanned, all ranks),
        ``canonical_predecessors`` (False: a zero-weight tight cycle made the tree the
        run's own; None: not computed), ``time_s`` and per-phase times, ``ranks``,
        ``backend`` (``"cpu"`` or ``"gpu"``: the one that ran).
    """

    source: int
    distance: np.ndarray
    predecessor: np.ndarray | None = None
    stats: dict = field(default_factory=dict)

    @property
    def reached(self) -> np.ndarray:
        """Boolean mask of the vertices reached from the source."""
        return self.distance != unreachable(self.distance.dtype)

    def to_numpy(self) -> np.ndarray:
        return self.distance

    def to_pandas(self):
        """A row per vertex (``vertex``, ``distance``, ``predecessor``); for several sources a
        row per source and vertex, with a ``source`` column first."""
        import pandas as pd

        d = self.distance
        n = d.shape[-1]
        cols = {"vertex": np.arange(n), "distance": d}
        if d.ndim == 2:
            cols = {"source": np.repeat(np.asarray(self.source), n), "vertex": np.tile(np.arange(n), d.shape[0]),
                    "distance": d.reshape(-1)}
        if self.predecessor is not None:
            cols["predecessor"] = self.predecessor.reshape(-1)
        return pd.DataFrame(cols)


# --------------------------------------------------------------------------- helpers
def _arc_weights(graph: Graph, weights):
    """The per-arc weights to use (None for unit weights), validated."""
    w = graph.weights if weights is None else weights
    if w is None:
        return None
    w = np.asarray(w)
    if w.shape != (graph.m,):
        raise GraphValueError(f"weights must have one entry per arc, shape ({graph.m},); got shape {w.shape}")
    if w.dtype not in WEIGHT_DTYPES:
        if w.dtype.kind in "iub":
            w = w.astype(np.int64)
        elif w.dtype.kind == "f":
            w = w.astype(np.float64)
        else:
            raise GraphValueError(f"weights must be int32, int64, float32 or float64; got dtype {w.dtype}")
    if w.dtype.kind == "f":
        bad = np.isnan(w) | (w == -np.inf)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise GraphValueError(f"weight of arc {k} is {w[k]}; weights must be numbers or +inf")
    return w


def _min_arc_weight(graph: Graph, w, u: int, v: int):
    """Smallest weight of an arc ``u -> v`` (rows are sorted), or None if there is none."""
    a, b = int(graph.indptr[u]), int(graph.indptr[u + 1])
    row = np.asarray(graph.indices[a:b])
    i = int(np.searchsorted(row, v, side="left"))
    j = int(np.searchsorted(row, v, side="right"))
    if i == j:
        return None
    if w is None:
        return 1
    return w[a + i:a + j].min().item()


def cycle_weight(graph: Graph, cycle, weights=None):
    """Total weight of the closed walk ``cycle[0] -> cycle[1] -> ... -> cycle[0]``.

    Each step takes the lightest parallel arc. Integers are summed exactly, floats with
    ``math.fsum``.

    Raises
    ------
    GraphValueError
        A step of the cycle is not an arc of the graph.

    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], [2, -1, -3])
    >>> cycle_weight(g, [0, 1, 2])
    -2
    """
    w = _arc_weights(graph, weights)
    cyc = [int(x) for x in cycle]
    steps = []
    for i, u in enumerate(cyc):
        v = cyc[(i + 1) % len(cyc)]
        x = _min_arc_weight(graph, w, u, v)
        if x is None:
            raise GraphValueError(f"{u} -> {v} is not an arc of the graph, so {cyc} is not a cycle of it")
        steps.append(x)
    if w is not None and w.dtype.kind == "f":
        return math.fsum(steps)
    return int(sum(steps))


def format_cycle(cycle, limit: int = 12) -> str:
    """``"a -> b -> c -> a"``; a cycle of more than ``limit`` vertices shows its first
    ``limit`` and ``" -> ... (N vertices)"`` instead of closing."""
    cyc = [int(x) for x in cycle]
    shown = " -> ".join(map(str, cyc[:limit] + ([] if len(cyc) > limit else cyc[:1])))
    if len(cyc) > limit:
        shown += f" -> ... ({len(cyc)} vertices)"
    return shown


def _negative_cycle_error(graph, w, source, cycle):
    wt = cycle_weight(graph, cycle, w)
    return NegativeCycleError(
        f"negative cycle reachable from source {source}: {format_cycle(cycle)} has total weight {wt}; "
        "shortest paths are undefined (use a graph without negative cycles)", cycle=list(cycle), weight=wt,
        source=int(source))


def _resolve_backend(backend, comm):
    """``"cpu"`` or ``"gpu"``. ``None``/``"auto"`` resolve as for every other algorithm
    (:func:`distgraph.runtime.context.get_context`: ``None`` takes ``DISTGRAPH_BACKEND``,
    ``"auto"`` is ``"gpu"`` when CuPy sees a GPU, else ``"cpu"``; collective, so all ranks
    agree); ``"gpu"`` raises BackendUnavailableError without CuPy or a GPU."""
    expect(backend in (None, "auto", "cpu", "gpu"), "backend", "None, 'auto', 'cpu' or 'gpu'", backend)
    if backend == "cpu":
        return "cpu"
    if backend == "gpu":
        from ..backends.gpu.loader import import_cupy

        import_cupy()
        return "gpu"
    from ..runtime.context import get_context

    return get_context(comm, backend).backend


# --------------------------------------------------------------------------- public
def bellman_ford(graph: Graph, source, *, weights=None, predecessors: bool = False,
                 mode: str = "auto", queue: str = "bq", remote: str = "atomic",
                 backend: str | None = None, comm=None, verify: bool = False, delta=None,
                 split: str = "auto", progress=None) -> SSSPResult:
    """Shortest-path distances from ``source`` (one vertex or several); negative weights allowed.

    Collective: every rank of ``comm`` calls it with the same arguments and gets the same
    result.

    Parameters
    ----------
    graph : Graph
        Directed or undirected (an undirected edge is two arcs, so a negative undirected
        edge is a negative cycle, as in scipy). Parallel arcs: the lightest counts.
    source : int or 1-D sequence of int
        Source vertex, in ``[0, n)``; or several (any order, repeats allowed), as scipy's
        ``indices``: then ``distance`` and ``predecessor`` have a row per source, shape
        ``(len(source), n)``, and what does not depend on the source (on GPUs: the upload, and
        for many sources the renaming by degree) is done once (:class:`BellmanFord`). On a
        GPU, without predecessors, up to 32 sources' rounds run together
        (``DISTGRAPH_GPU_SSSP_BATCH``): one read of an arc relaxes it for all of them.
    weights : array_like, shape (m,), optional
        Arc weights aligned with ``graph.indices``; default ``graph.weights``, and unit
        weights for an unweighted graph. int32, int64, float32 or float64; ``+inf``
        means no arc, NaN and ``-inf`` are rejected.
    predecessors : bool
        Also return the shortest-path tree.
    mode : {"auto", "rounds", "async"}
        Round-synchronous or queue-driven (see the module docstring). ``"auto"`` (default):
        ``"rounds"`` on CPUs (their faster mode); on GPUs the rounds for at most
        ``DISTGRAPH_GPU_SSSP_AUTO_ROUNDS`` (64) rounds, which settle low-diameter graphs, else
        the queue-driven kernel from scratch (17-42x the rounds on road-FLA);
        ``stats["mode"]`` names the mode that gave the result, ``stats["auto"]`` the choice.
    queue : {"bq", "bwd"}
        Queue of the async mode: linearizable Broker Queue or Broker Work Distributor.
    remote : {"atomic", "enqueue", "batch"}
        Remote relaxations of the async mode: atomic minimum then enqueue, or enqueue, or
        (GPU backend only; the CPU backend's async mode refuses it, its ``rounds`` mode
        batches already) per-vertex minima shipped in batches by one put each.
    backend : {None, "auto", "cpu", "gpu"}
        ``"gpu"``: :mod:`distgraph.backends.gpu.bellman_ford`, where ``mode="rounds"`` is
        the plain round-based CuPy Bellman-Ford (every rank runs the whole graph) and
        ``mode="async"`` the queue-driven kernel (one PE per rank; several ranks use
        NVSHMEM). As for every algorithm, ``None`` takes ``DISTGRAPH_BACKEND`` (default
        ``"auto"``) and ``"auto"`` the GPU when CuPy sees one, else the CPU
        (``stats["backend"]`` says which ran).
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``.
    verify : bool
        Check the result with :func:`verify_sssp` (each rank checks its block).
    delta : number, optional
        The near-far bucket width: vertices whose tentative distance is below a threshold go
        first, and the threshold rises by ``delta`` when they run out. Used by the GPU
        ``async`` mode on one PE (None: chosen from the mean weight and degree) and by the CPU
        rounds (None: ``DISTGRAPH_CPU_SSSP_DELTA``, 16, times the mean arc weight magnitude;
        on several ranks no block then floods its vertices from a far boundary value that a
        nearer one later corrects). 0 or inf: off. Only a priority: the result does not
        depend on it. Ignored elsewhere.
    split : {"auto", "graph", "sources"}
        Several sources on several ranks: ``"graph"`` runs each source on all ranks together
        (each rank its vertex block); ``"sources"`` deals the sources to the ranks (source ``i``
        to rank ``i % ranks``), each running its own on the whole graph alone (no exchange
        between ranks; each GPU then holds the whole graph), and gathers the rows on every
        rank. ``"auto"`` (default): ``"sources"`` when there are at least as many sources as
        ranks. The results do not depend on it.
    progress : bool, optional
        Several sources: a progress bar with ETA on rank 0 (default: ``DISTGRAPH_PROGRESS``,
        on a terminal only).

    Returns
    -------
    SSSPResult
        ``distance`` (n,) in the weights' dtype, :func:`unreachable` where unreached;
        ``predecessor`` (n,) int64 or None; ``stats``. For several sources ``(k, n)`` arrays,
        ``source`` the int64 array of sources, and ``stats`` with ``sources``, ``split``,
        ``time_s``, ``relaxations`` (all sources) and ``per_source`` (each run's stats).

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from ``source``; ``.cycle`` lists its vertices in
        arc order, ``.weight`` its (negative) weight. Raised on every rank. Several sources:
        for the first source (in the given order) that reaches one.
    DeviceMemoryError
        Several sources whose rows would not fit in the host's available memory (checked
        before any run, for all the ranks sharing a host).
    InvalidArgumentError
        A bad ``source``, ``mode``, ``queue``, ``remote`` or ``backend``.
    GraphValueError
        Bad weights, or int32 distances that overflow int32.
    BackendUnavailableError
        ``backend="gpu"`` (or ``DISTGRAPH_BACKEND=gpu``) without CuPy and a GPU (or, on
        several ranks with ``mode="async"``, nvshmem4py).
    VerificationError
        ``verify=True`` and the result fails the verifier.
    Exception
        With ``backend="cpu"``, an error on one rank mid-run (say ``MemoryError``) stops
        every rank, which all raise the first failing rank's error (same type and message).

    Notes
    -----
    Same results as ``scipy.sparse.csgraph.bellman_ford(A, indices=source)`` (which
    returns float64 and ``inf``), including ``NegativeCycleError`` exactly when a
    negative cycle is reachable from the source (from any of the sources).

    Examples
    --------
    >>> g = Graph.from_edges([0, 0, 1, 2], [1, 2, 3, 1], [4, 1, 2, -2])
    >>> r = bellman_ford(g, 0, predecessors=True)
    >>> r.distance.tolist(), r.predecessor.tolist()
    ([0, -1, 1, 1], [-1, 2, 0, 1])
    >>> bellman_ford(g, [2, 0]).distance.tolist()
    [[9223372036854775807, -2, 0, 0], [0, -1, 1, 1]]
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
    expect(split in SPLITS, "split", f"one of {SPLITS}", split)
    many = _is_many(source)
    if not many:
        _check_source(graph, source)
    with BellmanFord(graph, weights=weights, mode=mode, queue=queue, remote=remote, backend=backend, comm=comm,
                     delta=delta) as bf:
        if many:
            return bf.run_many(source, predecessors=predecessors, verify=verify, split=split, progress=progress)
        return bf.run(source, predecessors=predecessors, verify=verify)


def _is_many(source) -> bool:
    return not isinstance(source, (int, np.integer)) and np.ndim(source) != 0


def _check_source(graph, source):
    expect(isinstance(source, (int, np.integer)) and not isinstance(source, bool) and 0 <= source < graph.n,
           "source", f"in [0, {graph.n})", source)


def _check_sources(graph, sources) -> np.ndarray:
    """``sources`` as a 1-D int64 array of vertices (any order, repeats allowed)."""
    try:
        arr = np.asarray(sources)
    except Exception:  # noqa: BLE001 - ragged nesting and the like
        arr = None
    expect(arr is not None and arr.ndim == 1 and (arr.dtype.kind in "iu" or arr.size == 0)
           and (isinstance(sources, np.ndarray) or not any(isinstance(x, (bool, np.bool_)) for x in sources)),
           "source", f"a vertex or a 1-D sequence of vertices in [0, {graph.n})", sources)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= graph.n:  # before a cast could wrap it
        i = int(np.argmax(arr >= graph.n))
        expect(False, f"source[{i}]", f"a vertex in [0, {graph.n})", int(arr[i]))
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= graph.n))
    if bad.size:
        expect(False, f"source[{bad[0]}]", f"a vertex in [0, {graph.n})", int(arr[bad[0]]))
    return arr


SPLITS = ("auto", "graph", "sources")


class BellmanFord:
    """Shortest paths from many sources of one graph: what does not depend on the source
    (the weights' checks, the GPU's upload of the graph, the rounds' exchange arrays, the
    renaming by degree) is done once, not for every source.

    Collective: every rank of ``comm`` makes it, runs it and closes it with the same arguments.
    The arguments are those of :func:`bellman_ford`. Use it as a context manager (or call
    :meth:`close`: on GPUs it frees device and symmetric memory)::

        with BellmanFord(graph, backend="gpu") as bf:
            for s in sources:
                r = bf.run(s)          # an SSSPResult, as bellman_ford(graph, s) returns

    :meth:`run_many` (what ``bellman_ford(graph, sources)`` calls) returns every source's row.

    ``relabel`` (GPU backend, round-based mode): ``"degree"`` runs the rounds on the graph
    renamed by degree (``RoundsSSSP(relabel="degree")``; from 1024 sources on one H200 the
    rounds ran 1.16-1.27x faster on Kronecker 20-22 for 0.11-0.66 s of set-up, 245-423
    sources' gain: benchmarks/results/session19/); ``"none"``: never; None (default): only in
    :meth:`run_many` for sources run one at a time (with predecessors, say), once the rounds
    settled a source and at least ``DISTGRAPH_GPU_SSSP_RELABEL_RUNS`` (512) sources are left;
    never for batches (below), whose rounds ran no faster renamed. Results never depend on it.

    Batches (GPU backend, rounds or auto mode, one rank per source, no predecessors or
    verifier): :meth:`run_many` hands up to ``DISTGRAPH_GPU_SSSP_BATCH`` (32) sources at a time
    to the batched round kernels (``RoundsSSSP.run_batch``), which keep each vertex's
    distances from all of them side by side (4-byte keys for integer weights while they fit),
    so one read of an arc relaxes it for every source that needs it, and copy the batch's rows
    to the host while the next batch runs. Deep graphs (road networks) batch too: past round
    16 the rounds run in near-far order, in one persistent launch of up to 512 rounds, and
    after a deep batch up to 4 groups of sources run in step. A source whose rounds have not
    settled within ``DISTGRAPH_GPU_SSSP_BATCH_ROUNDS`` (16384, at most max(4n, 1024)), or
    whose keys fell below the negative-cycle bound, runs alone, as before, and so do the later
    ones. Results never depend on it. The CPU backend batches on one rank the same way
    (``DISTGRAPH_CPU_SSSP_BATCH``, :func:`~distgraph.backends.cpu.bellman_ford.run_batch`) for
    at most ``DISTGRAPH_CPU_SSSP_BATCH_ROUNDS`` (32) rounds; a batch not settled by then sends
    its unsettled sources, and the later ones, alone.

    Timings on one H200: see the README's "Many sources" and benchmarks/results/session22/.
    """

    def __init__(self, graph: Graph, *, weights=None, mode: str = "auto", queue: str = "bq",
                 remote: str = "atomic", backend: str | None = None, comm=None, delta=None, relabel=None):
        from mpi4py import MPI

        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
        expect(mode in MODES, "mode", f"one of {MODES}", mode)
        expect(queue in QUEUES, "queue", f"one of {QUEUES}", queue)
        expect(remote in REMOTES, "remote", f"one of {REMOTES}", remote)
        expect(relabel in (None, "none", "degree"), "relabel", "None, 'none' or 'degree'", relabel)
        from ..backends.gpu.bellman_ford import _check_delta  # NumPy only at import: no GPU needed

        _check_delta(delta)
        comm = comm if comm is not None else MPI.COMM_WORLD
        backend = _resolve_backend(backend, comm)
        # the same on every rank (the backend is resolved collectively): every rank raises
        expect(not (remote == "batch" and mode == "async" and backend != "gpu"), "remote",
               "'atomic' or 'enqueue' with the CPU backend's async mode ('batch' is GPU-only; mode='rounds' "
               "batches remote relaxations on CPUs)", remote)
        self.graph, self.comm, self.backend = graph, comm, backend
        self.mode, self.queue, self.remote, self.delta, self.relabel = mode, queue, remote, delta, relabel
        self.w = _arc_weights(graph, weights)
        self.out_dtype = np.dtype(np.int64) if self.w is None else self.w.dtype
        self._sessions: dict = {}  # GPU engines by scope ("all": comm, "self": this rank alone)
        self._cpu_no_batch = False  # a CPU batch left a source unsettled: one source at a time from then on
        self._cpu_arrays = None  # backends.cpu.bellman_ford.batch_arrays of the graph, for the CPU batches

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        """Free the GPU engines (collective: the exchange's symmetric arrays)."""
        sessions, self._sessions = self._sessions, {}
        err = None
        for s in sessions.values():  # every one (the "all" session's close is collective)
            try:
                s.close()
            except Exception as e:  # noqa: BLE001 - the first raised after all are closed
                err = err or e
        if err is not None:
            raise err

    def _flush(self) -> None:
        """Wait until the GPU rounds filled every row they were given."""
        for s in self._sessions.values():
            s.flush()

    def _confirm(self, cycle):
        return cycle_weight(self.graph, cycle, self.w) < 0

    def run(self, source: int, *, predecessors: bool = False, verify: bool = False) -> SSSPResult:
        """Shortest paths from ``source``, as :func:`bellman_ford` (collective)."""
        _check_source(self.graph, source)
        return self._run(int(source), predecessors, verify, self.comm, "all", 0)

    def _session(self, scope, comm, runs_left):
        from ..backends.gpu import bellman_ford as gpu

        s = self._sessions.get(scope)
        if s is None:
            s = self._sessions[scope] = gpu.Session(self.graph, self.w, comm, mode=self.mode, queue=self.queue,
                                                    remote=self.remote, delta=self.delta, relabel=self.relabel,
                                                    job_ranks=self.comm.Get_size())
        return s

    def _batch_size(self, scope, comm, want, direct):
        """How many sources :meth:`run_many` runs at once on ``comm`` now: the GPU session's
        batch size (rows copied straight in); on the CPU ``DISTGRAPH_CPU_SSSP_BATCH`` (at most 32)
        unless a batch left a source unsettled, and fewer where the batch's arrays (n * (8k +
        24) + 8m bytes) of every rank of the job would take more than half the host's
        available memory; 0 with predecessors or the verifier, several ranks per source, or the
        queue mode."""
        from ..runtime.config import config
        from ..runtime.hostmem import available_bytes

        if comm.Get_size() != 1 or want:
            return 0
        if self.backend == "gpu":
            return self._session(scope, comm, 0).batch_size(want) if direct else 0
        k = min(int(config.cpu_sssp_batch), 32)
        if k < 2 or self.mode == "async" or self._cpu_no_batch:
            return 0
        avail = available_bytes()
        if avail is not None:  # (the ranks of the job may share this host: each runs its batch)
            n, m, ranks = self.graph.n, self.graph.m, self.comm.Get_size()
            room = avail // (2 * ranks) - 8 * m - 24 * n
            k = min(k, room // max(8 * n, 1)) if room > 0 else 0
        return k if k >= 2 else 0

    def _cpu_batch(self, sources, outs):
        """The CPU backend's batched rounds (:func:`~distgraph.backends.cpu.bellman_ford.
        run_batch`) for at most ``DISTGRAPH_CPU_SSSP_BATCH_ROUNDS`` rounds: each source's stats,
        or None where they had not settled (a negative cycle, a deep graph: it runs alone, and
        so do the later sources: on a road network the rounds relax far more than the
        single-source worklist)."""
        from ..backends.cpu import bellman_ford as cpu
        from ..runtime.config import config

        if self._cpu_arrays is None:  # the same for every batch of this object
            self._cpu_arrays = cpu.batch_arrays(self.graph, self.w)
        res = cpu.run_batch(self.graph, self.w, sources, outs, arrays=self._cpu_arrays,
                            max_rounds=max(1, min(int(config.cpu_sssp_batch_rounds), self.graph.n)))
        if any(r is None for r in res):
            self._cpu_no_batch = True
        for r in res:
            if r is not None and self.mode == "auto":
                r["auto"] = {"chose": "rounds"}
        return res

    def _run(self, source, predecessors, verify, comm, scope, runs_left, out=None) -> SSSPResult:
        """One source on ``comm`` (all ranks, or this rank alone: ``scope``); ``runs_left``:
        the sources the caller will run after this one on this ``comm``; ``out``: a row of
        the output dtype for the GPU rounds to copy the distances into, not yet written; without
        predecessors and verifier they fill it in the background (read it after :meth:`_flush`)."""
        from ..backends.cpu import bellman_ford as cpu

        t0 = time.perf_counter()
        want = bool(predecessors or verify)
        w, mode = self.w, self.mode
        if self.backend == "gpu":
            dist, pred, stats, cycle = self._session(scope, comm, runs_left).run(
                source, self._confirm, want, runs_left=runs_left, out=out, defer=out is not None)
        elif mode in ("rounds", "auto"):
            dist, pred, stats, cycle = cpu.run_rounds(self.graph, w, source, comm, self._confirm, predecessors=want,
                                                      delta=self.delta)
            if mode == "auto":
                stats["auto"] = {"chose": "rounds"}
        else:
            dist, pred, stats, cycle = cpu.run_async(self.graph, w, source, comm, self._confirm, queue=self.queue,
                                                     remote=self.remote, predecessors=want)
        stats["time_s"] = time.perf_counter() - t0
        stats["ranks"] = comm.Get_size()
        stats.setdefault("backend", self.backend)
        if cycle is not None:  # found on every rank of comm (the drivers agree on it)
            from ..runtime.abort import _on_all_ranks

            raise _on_all_ranks(_negative_cycle_error(self.graph, w, source, cycle), comm, None)
        if verify:
            _verify_collective(self.graph, w, source, dist, pred, comm)
        distance = _to_output_dtype(dist, self.out_dtype)
        return SSSPResult(source, distance, pred if predecessors else None, stats)

    def run_many(self, sources, *, predecessors: bool = False, verify: bool = False, split: str = "auto",
                 progress=None, runs_after: int = 0) -> SSSPResult:
        """Shortest paths from each of ``sources`` (1-D, any order, repeats allowed): an
        :class:`SSSPResult` whose ``distance`` (and ``predecessor``) has a row per source,
        shape ``(len(sources), n)``; ``source`` is the array of sources. See
        :func:`bellman_ford` for ``split`` and ``progress``. ``runs_after``: the sources the
        caller will run after this call (in chunks: the renaming by degree counts them too).
        Collective."""
        from mpi4py import MPI

        from ..runtime.hostmem import check_host_memory
        from ..runtime.progress import Progress

        graph, comm = self.graph, self.comm
        src = _check_sources(graph, sources)
        expect(split in SPLITS, "split", f"one of {SPLITS}", split)
        size, rank = comm.Get_size(), comm.Get_rank()
        k, n = src.size, graph.n
        if split == "auto":  # every rank busy with whole sources, else the graph split over the ranks
            split = "sources" if size > 1 and k >= size else "graph"
        if split == "sources" and self.backend == "gpu":
            from ..runtime.context import get_context

            # the ranks bound to each GPU counted over the job (collective; backend="gpu" made no
            # context): each rank's COMM_SELF rounds then plan with their part of a shared GPU
            get_context(comm, "gpu")
        per_row = self.out_dtype.itemsize + (8 if predecessors else 0)
        check_host_memory(k * n * per_row, comm, "bellman_ford's distances" + (" and predecessors" if predecessors
                                                                               else "") + f" from {k} sources",
                          ("fewer sources per call (the rows of a call are all kept)",
                           "BellmanFord(graph).run(s) for one source at a time"))
        dist = np.empty((k, n), self.out_dtype)
        pred = np.empty((k, n), np.int64) if predecessors else None
        mine = range(rank, k, size) if split == "sources" else range(k)
        after = max(int(runs_after), 0) // (size if split == "sources" else 1)
        run_comm, scope = (MPI.COMM_SELF, "self") if split == "sources" else (comm, "all")
        per: list = [None] * k
        t0 = time.perf_counter()
        fail = None  # (index, exception): this rank's first failing source
        # the GPU rounds copy each row's distances straight into it: in their own dtype (int64
        # or float64 weights; unweighted: int64) or, when the predecessors (or the verifier) do
        # not need those, converted to the row's int32 / float32 on the device
        direct = self.backend == "gpu" and (self.w is None or self.w.dtype.itemsize == 8
                                            or not (predecessors or verify))
        mine = list(mine)
        with Progress(total=len(mine), desc="sssp sources", rank=rank, enabled=progress) as bar:
            j = 0
            while j < len(mine) and fail is None:
                # several sources' rounds together when the GPU session can (one rank per
                # source, no predecessors); a source they left unsettled runs alone below
                nb = self._batch_size(scope, run_comm, predecessors or verify, direct)
                chunk = mine[j:j + nb] if nb > 1 and len(mine) - j > 1 else mine[j:j + 1]
                done = [None] * len(chunk)
                if len(chunk) > 1:
                    t1 = time.perf_counter()
                    session = self._sessions.get(scope)
                    try:
                        if self.backend == "gpu":
                            done = session.run_batch(src[chunk], [dist[i] for i in chunk],
                                                     runs_left=len(mine) - j - len(chunk) + after)
                        else:
                            done = self._cpu_batch(src[chunk], [dist[i] for i in chunk])
                    except Exception as e:  # noqa: BLE001 - each source again alone, which raises its own error
                        import warnings

                        from ..errors import GraphValueError

                        if not isinstance(e, GraphValueError):  # a row's overflow: the single run raises it
                            warnings.warn(f"bellman_ford: the batched {self.backend.upper()} rounds failed "
                                          f"({type(e).__name__}: {e}); running the sources one at a time",
                                          RuntimeWarning, stacklevel=2)
                        if session is not None:
                            session.no_batch = True
                        elif not isinstance(e, GraphValueError):
                            self._cpu_no_batch = True
                        done = [None] * len(chunk)
                    for i, st in zip(chunk, done):
                        if st is not None:
                            st.update(time_s=(time.perf_counter() - t1) / len(chunk), ranks=1)
                            per[i] = st
                            bar.update()
                for c, i in enumerate(chunk):
                    if done[c] is not None:
                        continue
                    try:
                        r = self._run(int(src[i]), predecessors, verify, run_comm, scope,
                                      len(mine) - 1 - (j + c) + after, out=dist[i] if direct else None)
                    except Exception as e:  # noqa: BLE001 - raised on every rank below
                        if split != "sources":
                            raise  # raised on every rank together (the run is collective)
                        fail = (i, e)
                        break
                    if not np.shares_memory(r.distance, dist[i]):  # else filled by the GPU rounds (see _flush)
                        dist[i] = r.distance
                    if predecessors:
                        pred[i] = r.predecessor
                    per[i] = r.stats
                    bar.update()
                j += len(chunk)
        if split == "sources":
            try:
                self._flush()
            except Exception as e:  # noqa: BLE001 - a row's copy failed: raised on every rank below
                fail = fail or (k - 1, e)
            _raise_first(comm, fail, k)
            _gather_rows(comm, dist, k)
            if predecessors:
                _gather_rows(comm, pred, k)
            per = _gather_stats(comm, per, k)
        else:
            self._flush()  # each run was collective: an error here is every rank's
        stats = {"sources": k, "split": split, "ranks": size, "backend": self.backend,
                 "time_s": time.perf_counter() - t0,
                 "relaxations": sum(int(s.get("relaxations") or 0) for s in per), "per_source": per}
        return SSSPResult(src, dist, pred, stats)


def _raise_first(comm, fail, k):
    """Every rank raises the error of the first failing source (by its index in the call),
    or none fails."""
    from ..errors import DistgraphError
    from ..runtime.abort import _on_all_ranks, format_error

    idx = comm.allgather(k if fail is None else fail[0])
    first = min(idx)
    if first == k:
        return
    owner = idx.index(first)
    payload = None
    if comm.Get_rank() == owner:
        import pickle

        try:
            pickle.dumps(fail[1])
            payload = fail[1]
        except Exception:  # noqa: BLE001 - an unpicklable error travels as its message
            payload = DistgraphError(format_error(fail[1]))
    err = comm.bcast(payload, root=owner)
    raise _on_all_ranks(fail[1] if comm.Get_rank() == owner else err, comm, owner)


_GATHERV_MAX = 2 ** 31  # _gather_rows' Allgatherv counts and displacements are C ints


def _gather_rows(comm, a, k):
    """Row ``i`` of ``a`` comes from rank ``i % size``: one in-place ``Allgatherv`` per
    ``size`` rows (rows ``j*size .. j*size+size-1`` are one contiguous piece, in rank order)."""
    from mpi4py import MPI

    size, n = comm.Get_size(), a.shape[1]
    if n * size >= _GATHERV_MAX:  # displacements past a C int: a broadcast per row from its rank
        for i in range(k):
            comm.Bcast(a[i], root=i % size)
        return
    for j in range(0, k, size):
        rows = min(size, k - j)
        counts = [n if q < rows else 0 for q in range(size)]
        displs = [q * n if q < rows else 0 for q in range(size)]
        comm.Allgatherv(MPI.IN_PLACE, [a[j:j + rows].reshape(-1), (counts, displs)])


def _gather_stats(comm, per, k):
    size = comm.Get_size()
    mine = {i: per[i] for i in range(comm.Get_rank(), k, size)}
    out = [None] * k
    for part in comm.allgather(mine):
        for i, st in part.items():
            out[i] = st
    return out


def _to_output_dtype(dist, dt):
    from ..backends.cpu.bellman_ford import to_output_dtype

    return to_output_dtype(dist, dt)


# --------------------------------------------------------------------------- verifier
def _verify_rows(graph, w, source, dist, pred, lo, hi):
    """First violated fact among rows ``[lo, hi)`` as a message, or None."""
    from ..backends.cpu.bellman_ford import INF_OF, work_dtype

    dist = np.asarray(dist)
    wdt = np.dtype(np.int64) if w is None else work_dtype(w.dtype)
    if dist.dtype.kind != wdt.kind:
        return f"distance dtype {dist.dtype} does not match the weights' {'int64' if w is None else w.dtype}"
    # float32 distances are float64 ones rounded once: compare with a float32-sized slack.
    tol = 2.0 ** -21 if dist.dtype == np.float32 else 0.0
    d = np.where(dist == unreachable(dist.dtype), INF_OF(wdt), dist.astype(wdt))
    code, a, b = _verify_kernel(np.asarray(graph.indptr), np.asarray(graph.indices),
                                np.ones(1, wdt) if w is None else w.astype(wdt, copy=False), w is None,
                                d, pred, source, lo, hi, INF_OF(wdt), tol)
    if code == 0:
        return None
    if code == 1:
        return f"distance[{source}] (the source) is {d[source]}, not 0"
    if code == 2:
        return f"arc {a} -> {b} can still be relaxed: distance[{b}] = {d[b]}, distance[{a}] = {d[a]}"
    if code == 3:
        return f"vertex {a} is reached (distance {d[a]}) but {pred[a]} -> {a} is not an arc"
    if code == 4:
        return f"predecessor arc {pred[a]} -> {a} is not tight: distance[{a}] = {d[a]}, distance[{pred[a]}] = {d[pred[a]]}"
    if code == 5:
        return f"vertex {a} is unreached but has predecessor {pred[a]}"
    return f"verifier code {code} at {a}, {b}"


def _numba_kernels():
    from numba import njit

    @njit(cache=True)
    def kernel(indptr, indices, w, unit, d, pred, source, lo, hi, inf, tol):
        if lo <= source < hi and d[source] != 0:
            return 1, source, source
        for u in range(lo, hi):
            du = d[u]
            if du == inf:
                continue
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                c = du + (1 if unit else w[k])
                if d[v] > c and d[v] - c > tol * max(abs(c), 1.0):
                    return 2, u, v
        if pred.shape[0] == 0:
            return 0, 0, 0
        for v in range(lo, hi):
            p = pred[v]
            if d[v] == inf or v == source:
                if p != -1 and d[v] == inf:
                    return 5, v, p
                continue
            if p < 0 or p >= d.shape[0]:
                return 3, v, p
            best = inf
            found = False
            for k in range(indptr[p], indptr[p + 1]):
                if indices[k] == v:
                    c = d[p] + (1 if unit else w[k])
                    if not found or c < best:
                        best = c
                    found = True
            if not found:
                return 3, v, p
            if best != d[v] and abs(best - d[v]) > tol * max(abs(best), 1.0):
                return 4, v, p
        return 0, 0, 0

    return kernel


_kernel_cache = []


def _verify_kernel(*args):
    if not _kernel_cache:
        _kernel_cache.append(_numba_kernels())
    return _kernel_cache[0](*args)


def verify_sssp(graph: Graph, source: int, distance, predecessor=None, *, weights=None, rows=None) -> None:
    """Check a shortest-path result; raise :class:`VerificationError` at the first wrong fact.

    The facts (gapbs style): the source is at distance 0; no arc can be relaxed
    (``d[v] <= d[u] + w`` for every arc leaving a reached ``u``, which also makes every
    vertex reachable from the source reached); and, with ``predecessor``, every reached
    vertex but the source has a predecessor arc that is tight (``d[v] == d[p] + w``),
    unreached vertices have none, and the predecessor graph has no cycle (so it is a
    tree of shortest paths rooted at the source). Sums are formed as in
    :func:`bellman_ford` (int64 / float64), so float32 distances are checked only as
    far as float32 can say.

    ``rows=(lo, hi)`` checks only the arcs leaving, and the predecessors of, vertices
    ``lo .. hi-1`` (one rank's share).
    """
    from ..backends.cpu.bellman_ford import find_pred_cycle

    w = _arc_weights(graph, weights)
    dist = np.asarray(distance)
    if dist.shape != (graph.n,):
        raise VerificationError(f"distance must have shape ({graph.n},); got {dist.shape}")
    pred = np.zeros(0, np.int64) if predecessor is None else np.asarray(predecessor, dtype=np.int64)
    lo, hi = (0, graph.n) if rows is None else (int(rows[0]), int(rows[1]))
    msg = _verify_rows(graph, w, source, dist, pred, lo, hi)
    if msg is None and pred.size:
        if pred[source] != -1:
            msg = f"the source {source} has predecessor {pred[source]}, not -1"
        elif find_pred_cycle(pred) >= 0:
            msg = "the predecessor graph has a cycle"
    if msg is not None:
        raise VerificationError(f"shortest paths from {source} are wrong: {msg}")


def _verify_collective(graph, w, source, dist, pred, comm):
    from ..graph.partition import partition_by_edges
    from ..runtime.abort import collective_raise

    part = partition_by_edges(graph.indptr, comm.Get_size())
    err = None
    try:
        verify_sssp(graph, source, dist, pred, weights=w, rows=part.range(comm.Get_rank()))
    except VerificationError as e:
        err = e
    collective_raise(comm, err)
