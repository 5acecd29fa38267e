"""Bit-parallel multi-source BFS: per-vertex sums of distances over many sources.

Sources are cut into batches of ``k <= 512`` (one bit each in ``k / 64`` machine
words) and every batch runs as one bit-parallel BFS (Then et al., PVLDB 2014; BLEST
Sec. 6.1; kernel in :mod:`distgraph.backends.cpu.msbfs`). Batches are dealt to MPI
ranks (each rank holds the whole graph, BLEST's replicated mode) first come, first
served when the ranks share a node (one MPI-3 atomic counter, :class:`_Dealer`, so a
rank whose core is shared with other jobs takes fewer batches), round-robin across
nodes and with a GPU runner, and, inside a rank, to threads; the partial sums are
exact integers (uint64 distance sums, int64 reach counts, fixed-point harmonic sums),
so the reduction over threads and ranks gives bit-identical results for any number
of either, whichever rank ran which batch.

:func:`run_batches` is the shared driver (also used by closeness): it skips batches
a checkpoint already holds, stores the finished batches durably (every
``store.interval`` seconds, at the end, on an error and after SIGTERM/SIGUSR1: see
:mod:`distgraph.runtime.checkpoint`), and draws a progress bar on rank 0.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from ..errors import BackendUnavailableError, InvalidArgumentError, expect
from ..graph.core import Graph

__all__ = ["msbfs", "MSBFSResult", "run_batches", "check_batch_size"]

MAX_BATCH = 512

# Test hook: called as _BATCH_HOOK(batch_id) on each rank after a batch is merged (and
# checkpointed when a save was due; tests raise from it to simulate a job killed mid-way).
_BATCH_HOOK = None

#: Deal batches to ranks first come, first served when they share one node (False, ranks
#: on several nodes, or a GPU runner: round-robin, batch i to rank i % p).
DYNAMIC_DEALING = True


def _one_node(comm) -> bool:
    """All ranks of ``comm`` share one node (collective). Only then is the dealer used:
    between nodes, an MPI without asynchronous progress may complete a rank's atomic
    only when rank 0 next enters MPI, i.e. after its current batch."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_size() == comm.Get_size()
    finally:
        node.Free()


class _Dealer:
    """First come, first served dealing of the batch ids ``todo`` over the ranks of
    ``comm``: one int64 counter on rank 0, taken with ``MPI_Fetch_and_op(SUM)`` inside
    one passive-target epoch (``MPI_Win_lock_all`` for the whole run: an atomic then
    completes without rank 0 entering MPI, about 4 us; a ``MPI_Win_lock`` per call
    waited for rank 0's kernel to end). Creating and freeing it is collective."""

    def __init__(self, comm, todo):
        from mpi4py import MPI

        self._op = MPI.SUM
        self.todo = todo
        self.win = MPI.Win.Allocate(8 if comm.Get_rank() == 0 else 0, 8, comm=comm)
        if comm.Get_rank() == 0:
            self.win.Lock(0, MPI.LOCK_EXCLUSIVE)
            self.win.Put(np.zeros(1, np.int64), 0)
            self.win.Unlock(0)
        comm.Barrier()
        self.win.Lock_all()
        self._one = np.ones(1, np.int64)
        self._got = np.zeros(1, np.int64)
        self.dealt = 0  # batches dealt to all ranks so far, as last seen by this rank

    def __iter__(self):
        while True:
            self.win.Fetch_and_op(self._one, self._got, 0, 0, self._op)
            self.win.Flush(0)
            i = int(self._got[0])
            self.dealt = min(i + 1, self.todo.size)
            if i >= self.todo.size:
                return
            yield int(self.todo[i])

    def stop(self):
        """Deal no more batches to any rank (after an error on this one): the counter is
        pushed past the end, so every rank's next draw ends its loop."""
        self.win.Fetch_and_op(np.array([self.todo.size + 1], np.int64), self._got, 0, 0, self._op)
        self.win.Flush(0)

    def close(self):
        """Collective: leave the epoch and free the window (every rank, also after an
        error, which :func:`_run_batches` reports only after this)."""
        self.win.Unlock_all()
        self.win.Free()


@dataclass
class MSBFSResult:
    """Aggregates of a multi-source BFS over ``sources``.

    Attributes
    ----------
    sources : int64 ``(k,)``
    distance_sum : uint64 ``(n,)`` -- ``sum over s of d(s, v)`` over the sources reaching v.
    reach : int64 ``(n,)`` -- how many sources reach v (a source reaches itself).
    harmonic : float64 ``(n,)`` -- ``sum over s != v of 1 / d(s, v)``.
    levels : int32 ``(k, n)`` or None -- ``d(sources[i], v)``, -1 when unreachable
        (only with ``levels=True``).
    """

    sources: np.ndarray
    distance_sum: np.ndarray
    reach: np.ndarray
    harmonic: np.ndarray
    levels: np.ndarray | None = None

    def to_numpy(self) -> np.ndarray:
        return self.distance_sum


def check_batch_size(batch_size) -> int:
    from ..runtime.config import config

    if batch_size is None:
        batch_size = config.msbfs_batch
    expect(isinstance(batch_size, (int, np.integer)) and not isinstance(batch_size, bool),
           "batch_size", "an integer", batch_size)
    expect(1 <= batch_size <= MAX_BATCH, "batch_size", f"in [1, {MAX_BATCH}]", batch_size)
    return int(batch_size)


def check_graph(graph) -> None:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph.Graph; got {type(graph).__name__}")


def check_vertices(vertices, n: int, name: str) -> np.ndarray:
    v = np.asarray(vertices)
    if v.ndim != 1:
        raise InvalidArgumentError(f"{name} must be a 1-D sequence of vertex ids; got shape {v.shape}")
    if v.size and not np.issubdtype(v.dtype, np.integer):
        raise InvalidArgumentError(f"{name} must hold integer vertex ids; got dtype {v.dtype}")
    v = v.astype(np.int64, copy=False)
    if v.size:
        bad = v[(v < 0) | (v >= n)]
        expect(bad.size == 0, name, f"vertex ids in [0, {n})", int(bad[0]) if bad.size else None)
    return v


def thread_count(ctx) -> int:
    """Threads per rank: numba's thread setting, at most the cores per local rank."""
    import numba

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 1
    return max(1, min(numba.get_num_threads(), cores // max(1, ctx.local_size)))


def _words(k: int) -> int:
    w = 1
    while w * 64 < k:
        w *= 2
    return w


def cpu_batch_order(hptr, tptr, sources, *, per_source: bool, want_levels: bool = False, hidx=None,
                    depth=False) -> str:
    """How the CPU backend groups ``sources`` into batches: ``"ball"`` (compact groups,
    :func:`~distgraph.backends.cpu.msbfs.ball_order`) or ``"degree"`` (consecutive in the
    decreasing-degree numbering). ``config.msbfs_batch_order`` ("auto": ball on graphs of
    high diameter whose out- and in-degrees are not heavy-tailed -- road networks, meshes,
    geometric graphs, where BFSs from far-apart sources rarely meet -- and degree otherwise:
    a BFS from the largest-degree vertex of H (``hidx`` given) must go deeper than 2 log2 n
    levels. On urand graphs, not scale-free but of low diameter, balls were 0-35% slower).
    Per-source sums, levels and repeated sources keep the degree order (their batches must
    hold the sources as given). The same on every rank (from the graph alone); part of a
    checkpoint's identity. ``depth``: :func:`depth_unless_scale_free` of the same arrays, when
    the caller has it (False: computed here)."""
    from ..runtime.config import config

    how = config.msbfs_batch_order
    if per_source or want_levels or how == "degree":
        return "degree"
    src = np.asarray(sources)
    if repeats(src):
        return "degree"
    if how == "ball":
        return "ball"
    if depth is False:
        depth = None if hidx is None else depth_unless_scale_free(hptr, hidx, tptr)
    return "ball" if depth is not None and depth > 2 * np.log2(np.asarray(hptr).shape[0] - 1) else "degree"


def depth_unless_scale_free(hptr, hidx, tptr=None):
    """The depth of a BFS from the largest-degree vertex of H (CSR ``hptr``/``hidx``), or None
    when the out-degrees (or those of ``tptr``, the in-degrees) are heavy-tailed, or H has fewer
    than 2 vertices or no arcs: the high-diameter test of the ball order (:func:`cpu_batch_order`)
    and of the GPU's profile wave (``msbfs_wave.wave_pays``)."""
    from ..backends.cpu.msbfs import bfs_depth
    from ..formats.reorder import _heavy_tail

    hp = np.asarray(hptr, np.int64)
    if hp.shape[0] < 3 or hp[-1] == 0:
        return None
    for ptr in (hp,) if tptr is None else (hp, tptr):
        d = np.diff(np.asarray(ptr, np.int64))
        if d.sum():
            t = _heavy_tail(d)
            if t["heavy_tail"] or t["power_law_fit"]:
                return None
    return bfs_depth(hp, np.asarray(hidx), int(np.argmax(np.diff(hp))))


def repeats(ids, n=None) -> int:
    """How many entries of the int array ``ids`` repeat an earlier one (a count over
    ``[0, n)``, n default ``max + 1``, when the ids are non-negative: numpy's hashed
    ``unique`` took 0.10 s for road-NY's 264k sources, the count 0.5 ms:
    benchmarks/results/host_unique_cost.json)."""
    ids = np.asarray(ids)
    if ids.size == 0:
        return 0
    if ids.min() < 0:
        return int(ids.size - np.unique(ids).size)
    c = np.bincount(ids.astype(np.int64, copy=False), minlength=0 if n is None else int(n))
    return int(ids.size - np.count_nonzero(c))


def ball_sources(hptr, hidx, tptr, tidx, sources, group: int, *, spread: bool = False):
    """``sources`` (distinct vertex ids of H) reordered so that consecutive groups of
    ``group`` are compact BFS balls (:func:`~distgraph.backends.cpu.msbfs.ball_order`);
    for runners that batch sources in the order given (the GPU's). ``spread``: also return a
    bool per source of the order, True in a group filled from more than one ball (whose
    sources may lie far apart; False everywhere when the order is not changed)."""
    from ..backends.cpu.msbfs import ball_order

    n = hptr.shape[0] - 1
    src = np.asarray(sources, np.int64)
    if src.size == 0 or repeats(src, n):
        return (src, np.zeros(src.size, np.bool_)) if spread else src
    is_src = np.zeros(n, np.bool_)
    is_src[src] = True
    seeds = np.zeros(-(-src.size // int(group)) + 1, np.int64) if spread else None
    out = ball_order(np.asarray(hptr, np.int64), np.asarray(hidx), np.asarray(tptr, np.int64), np.asarray(tidx),
                     is_src, int(group), 16 * int(group), seeds)
    if not spread:
        return out
    return out, np.repeat(seeds > 1, int(group))[:out.size]


def run_batches(hptr, hidx, tptr, tidx, sources, *, per_source: bool, batch_size: int, ctx,
                want_levels: bool = False, store=None, progress=None, desc: str = "MS-BFS", runner=None):
    """Run all batches of ``sources`` on the graph ``H`` (CSR ``hptr/hidx``, its
    transpose ``tptr/tidx``) over the ranks of ``ctx`` and threads.

    Returns ``(far, reach, h0, h1, h2, levels)`` summed over every batch and rank,
    identical on every rank: per vertex of H (``per_source=False``) or per source.
    ``store`` is a :class:`~distgraph.runtime.checkpoint.CheckpointStore` or None.
    ``runner`` (e.g. :class:`distgraph.backends.gpu.msbfs.GpuMSBFS`) replaces the CPU
    kernel: ``runner.run(sources, per_source, out, defer)`` adds a batch's sums into
    ``out`` (or, with ``defer``, keeps them until ``runner.drain(far, reach, h0, h1, h2)``
    at the end; a runner with ``defers = True`` promises to leave ``out`` alone then, and
    gets empty arrays); a runner with ``collective = True`` is run by every rank for every
    batch and the batch's sums are kept by the rank the batch is dealt to.

    With the CPU kernel, vertices are renumbered inside by decreasing out-degree in H
    (the hubs' state words share cache lines, vertices without arcs come last; about
    20% faster on scale-free graphs) and, for per-vertex sums without levels, sources
    are batched in that order or, on graphs that are not scale-free, in compact groups
    (:func:`cpu_batch_order`). Results come back in the caller's ids.

    An exception on one rank (a failing batch or checkpoint write, an unreadable
    checkpoint, memory) is raised on every rank once all have stopped, so no rank is
    left waiting in a collective; every rank first saves the batches it finished.
    With a ``store``, SIGTERM and SIGUSR1 make each rank that gets one save at its next
    batch boundary and stop (:class:`~distgraph.runtime.checkpoint.CheckpointInterrupted`,
    raised on every rank like an error).
    """
    if runner is not None:
        return _run_batches(hptr, hidx, tptr, tidx, sources, per_source=per_source, batch_size=batch_size,
                            ctx=ctx, want_levels=want_levels, store=store, progress=progress, desc=desc,
                            runner=runner)
    from ..backends.cpu.msbfs import ball_order, permute_csr

    n = hptr.shape[0] - 1
    same = tptr is hptr
    how = cpu_batch_order(hptr, tptr, sources, per_source=per_source, want_levels=want_levels, hidx=hidx)
    perm = np.argsort(-np.diff(hptr), kind="stable").astype(np.int64)
    rank_of = np.empty(n, np.int64)
    rank_of[perm] = np.arange(n, dtype=np.int64)
    hptr, hidx = permute_csr(hptr, hidx, perm, rank_of)
    if same:
        tptr, tidx = hptr, hidx
    else:
        tptr, tidx = permute_csr(tptr, tidx, perm, rank_of)
    sources = rank_of[np.asarray(sources, dtype=np.int64)]
    if how == "ball" and sources.size:
        is_src = np.zeros(n, np.bool_)
        is_src[sources] = True
        sources = ball_order(hptr, hidx, tptr, tidx, is_src, int(batch_size), 16 * int(batch_size))
    elif not per_source and not want_levels:
        sources = np.sort(sources)
    far, reach, h0, h1, h2, levels = _run_batches(
        hptr, hidx, tptr, tidx, sources, per_source=per_source, batch_size=batch_size, ctx=ctx,
        want_levels=want_levels, store=store, progress=progress, desc=desc, runner=None)
    if not per_source:
        far, reach, h0, h1, h2 = far[rank_of], reach[rank_of], h0[rank_of], h1[rank_of], h2[rank_of]
    if levels is not None:
        levels = np.ascontiguousarray(levels[:, rank_of])
    return far, reach, h0, h1, h2, levels


def _run_batches(hptr, hidx, tptr, tidx, sources, *, per_source, batch_size, ctx, want_levels, store, progress,
                 desc, runner):
    from ..backends.cpu.bits import normalize_limbs
    from ..backends.cpu.msbfs import BU_RATIO
    from ..runtime.progress import Progress

    n = hptr.shape[0] - 1
    k = sources.shape[0]
    size_out = k if per_source else n
    nb = (k + batch_size - 1) // batch_size
    acc = {"far": np.zeros(size_out, np.uint64), "reach": np.zeros(size_out, np.int64),
           "h0": np.zeros(size_out, np.uint64), "h1": np.zeros(size_out, np.uint64),
           "h2": np.zeros(size_out, np.uint64)}
    levels = None
    if want_levels:
        levels = np.full((k, n), -1, dtype=np.int32)
    base = None
    done = np.zeros(0, np.int64)
    if store is not None:
        err = None
        try:  # every rank reads the checkpoint; a rank-local failure is raised on all of them
            done, base = store.load()
            _check_checkpoint(done, base, nb, acc)
        except Exception as e:
            err = e
        _raise_on_all(ctx, err)
    todo = np.setdiff1d(np.arange(nb, dtype=np.int64), done)
    mine = todo[ctx.rank::ctx.size]  # round-robin share; with a dealer, the progress bar's estimate
    dynamic = runner is None and ctx.size > 1 and DYNAMIC_DEALING and _one_node(ctx.comm)

    nthreads = min(thread_count(ctx), max(1, (todo if dynamic else mine).size)) if runner is None else 1
    pool_work = []
    wmax = _words(min(batch_size, max(k, 1)))
    err = None
    try:  # scratch of 3 n W words per thread: a rank out of memory raises on every rank
        for _ in range(nthreads if runner is None else 0):
            pool_work.append(_scratch(n, wmax))
    except MemoryError as e:
        err = e
    _raise_on_all(ctx, err)
    dealer = _Dealer(ctx.comm, todo) if dynamic else None
    batches = dealer if dealer is not None else mine.tolist()
    free = list(range(nthreads))
    finished = []
    unsaved = [0]  # batches merged since this rank's last save
    stop = None
    if store is not None:
        from ..runtime.checkpoint import CheckpointInterrupted, StopSignals

        stop = StopSignals()

    def boundary():
        # after each batch: save when the interval is up or a stop signal came (each
        # rank for itself: a save is rank-local), then stop on that signal
        if stop.signum is not None or (unsaved[0] and store.due()):
            if unsaved[0]:
                store.save(finished, acc)
                unsaved[0] = 0
            if stop.signum is not None:
                raise CheckpointInterrupted(stop.signum)

    # Without a checkpoint to keep current, a runner may keep per-vertex sums on its device
    # until drain() below. One that promises to leave `out` alone then (``runner.defers``)
    # gets empty arrays and no per-batch merge: 5 arrays of n allocated, added and
    # normalized per batch cost 17 ms on the host, 35 s for kron:20's 2048 batches,
    # several times the GPU's own time.
    defer = runner is not None and store is None
    deferred = defer and not per_source and not want_levels and bool(getattr(runner, "defers", False))
    no_out = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint64),
              np.zeros(0, np.uint64))

    def job(b, slot):
        lo, hi = int(b) * batch_size, min(k, (int(b) + 1) * batch_size)
        src = np.ascontiguousarray(sources[lo:hi])
        if deferred:
            runner.run(src, per_source, no_out, defer=True)
            return b, lo, hi, slot, None
        W = _words(hi - lo)
        m = hi - lo if per_source else n
        out = (np.zeros(m, np.uint64), np.zeros(m, np.int64), np.zeros(m, np.uint64),
               np.zeros(m, np.uint64), np.zeros(m, np.uint64))
        lv = levels[lo:hi] if want_levels else np.zeros((1, 1), np.int32)
        if runner is not None:
            runner.run(src, per_source, out, defer=defer)
        else:
            seen, front, nxt, touched, act, tl = pool_work[slot]
            _run_kernel(hptr, hidx, tptr, tidx, src, W, per_source, want_levels, BU_RATIO,
                        seen, front, nxt, touched, act, tl, *out, lv)
        normalize_limbs(out[2], out[3], out[4])
        return b, lo, hi, slot, out

    def merge(res):
        b, lo, hi, slot, out = res
        if out is not None:
            sl = slice(lo, hi) if per_source else slice(None)
            for name, a in zip(("far", "reach", "h0", "h1", "h2"), out):
                acc[name][sl] += a
            normalize_limbs(acc["h0"], acc["h1"], acc["h2"])
        finished.append(int(b))
        free.append(slot)
        if store is not None:
            unsaved[0] += 1
            boundary()
        if _BATCH_HOOK is not None:
            _BATCH_HOOK(int(b))

    def advance():
        # with a dealer, rank 0 shows all ranks' batches (dealt so far: the ones running
        # elsewhere count as done a little early); otherwise its own
        bar.update(max(0, dealer.dealt - bar.n) if dealer is not None else 1)

    bar = Progress(total=int((todo if dynamic else mine).size),
                   desc=f"{desc} batches ({'all ranks' if dynamic else f'rank 0 of {ctx.size}'})", rank=ctx.rank,
                   enabled=progress)
    err = None
    with bar, (stop if stop is not None else nullcontext()):
        try:
            if nthreads == 1:
                collective = getattr(runner, "collective", False)
                for i, b in enumerate(todo if collective else batches):
                    res = job(b, free.pop())
                    if not collective:
                        merge(res)
                        advance()
                        continue
                    if i % ctx.size != ctx.rank:
                        free.append(res[3])  # run by every rank; kept by the rank it is dealt to
                        if store is not None:
                            try:
                                boundary()  # a stop signal here stops every rank below
                            except Exception as e:
                                err = e
                    else:
                        try:
                            merge(res)
                            advance()
                        except Exception as e:
                            err = e
                    # every rank runs the next batch collectively: all stop if one failed
                    if _any_failed(ctx, err):
                        break
            else:
                it = iter(batches)
                with ThreadPoolExecutor(max_workers=nthreads) as ex:
                    running = set()
                    while True:
                        while free and len(running) < nthreads:
                            b = next(it, None)
                            if b is None:
                                break
                            running.add(ex.submit(job, b, free.pop()))
                        if not running:
                            break
                        fin, running = wait(running, return_when=FIRST_COMPLETED)
                        for f in fin:
                            merge(f.result())
                            advance()
        except Exception as e:  # raised on every rank below, once all have stopped
            err = e
            if dealer is not None:
                dealer.stop()
        if dealer is not None and err is None:
            advance()  # this rank's dealer is exhausted: every batch is dealt
        if unsaved[0]:
            # the end of this rank's batches, or an error (here or, through the dealer or
            # the collective runner's vote, on another rank): keep what is finished
            try:
                store.save(finished, acc)
                unsaved[0] = 0
            except Exception as e:
                err = err or e

    # a rank that failed stops taking batches; the others finish the batches they hold
    # (with a dealer, they take no new ones; with a collective runner, all stop before
    # the next batch), then all leave the dealer's epoch, free its window and raise the
    # first rank's error: no rank waits in a collective. (An error inside a collective
    # runner's own collective step still leaves the other ranks waiting there.)
    if dealer is not None:
        dealer.close()
    _raise_on_all(ctx, err)
    if runner is not None and hasattr(runner, "drain"):
        # a deferring runner does its work here (the wave: every batch): a failure on one rank is
        # raised on all of them before the reduction below, so none waits there
        err = None
        try:
            runner.drain(acc["far"], acc["reach"], acc["h0"], acc["h1"], acc["h2"])
        except Exception as e:
            err = e
        _raise_on_all(ctx, err)
        normalize_limbs(acc["h0"], acc["h1"], acc["h2"])
    if base and ctx.rank == 0:
        for name in acc:
            if name in base:
                acc[name] += base[name].astype(acc[name].dtype)
        normalize_limbs(acc["h0"], acc["h1"], acc["h2"])
    if ctx.size > 1:
        from mpi4py import MPI

        for name in acc:
            ctx.comm.Allreduce(MPI.IN_PLACE, acc[name], op=MPI.SUM)
        normalize_limbs(acc["h0"], acc["h1"], acc["h2"])
        if want_levels:
            # rows of other ranks' batches are -1 here: shift to 0-based, sum, shift back
            levels += 1
            ctx.comm.Allreduce(MPI.IN_PLACE, levels, op=MPI.SUM)
            levels -= 1
    return acc["far"], acc["reach"], acc["h0"], acc["h1"], acc["h2"], levels


def _scratch(n: int, W: int):
    """One thread's state arrays for the CPU kernel (``seen, front, nxt`` of ``n W``
    words, ``touched, act, tl`` of ``n``)."""
    return (np.zeros(n * W, np.uint64), np.zeros(n * W, np.uint64), np.zeros(n * W, np.uint64),
            np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64))


def _check_checkpoint(done, base, nb, acc) -> None:
    """The batches and arrays a checkpoint holds fit this run (checked on every rank,
    before any batch runs)."""
    from ..errors import CheckpointError

    if done.size and (done[-1] >= nb or done[0] < 0):
        bad = int(done[-1]) if done[-1] >= nb else int(done[0])
        raise CheckpointError(f"checkpoint lists batch {bad} but this run has batches 0..{nb - 1}")
    for name, a in (base or {}).items():
        if name in acc and a.shape != acc[name].shape:
            raise CheckpointError(f"checkpoint array {name} has shape {a.shape}; this run needs {acc[name].shape}")


def _any_failed(ctx, err) -> bool:
    """Whether any rank of ``ctx`` has an error (collective when there are several)."""
    if ctx.size == 1:
        return err is not None
    from mpi4py import MPI

    return bool(ctx.comm.allreduce(err is not None, op=MPI.LOR))


def _raise_on_all(ctx, err) -> None:
    """Raise ``err`` (or the first failing rank's error) on every rank of ``ctx``."""
    if ctx.size > 1:
        from ..runtime.abort import collective_raise

        collective_raise(ctx.comm, err)
    elif err is not None:
        raise err


def _run_kernel(*args):
    from ..backends.cpu.msbfs import msbfs_batch_w

    msbfs_batch_w(*args)


def msbfs(graph, sources, *, levels=False, backend=None, comm=None, batch_size=None, progress=None) -> MSBFSResult:
    """Multi-source BFS: for every vertex, sums over the sources of its distances.

    Parameters
    ----------
    graph : Graph
        Directed or undirected; weights are ignored (every arc has length 1).
    sources : sequence of int
        Source vertices (repeats allowed: each counts once per occurrence).
    levels : bool
        Also return the ``(k, n)`` int32 matrix of distances (memory ``4 k n`` bytes).
    backend : {"auto", "cpu", "gpu"} or None
    comm : mpi4py communicator or None
        Default ``MPI.COMM_WORLD``; the result is returned on every rank.
    batch_size : int or None
        Sources per bit-parallel batch, 1..512 (default ``config.msbfs_batch``).
    progress : bool or None
        Progress bar on rank 0 (None: ``config.progress``).

    Returns
    -------
    MSBFSResult
        ``distance_sum`` (uint64), ``reach`` (int64), ``harmonic`` (float64) per vertex,
        identical for any number of ranks and threads.

    Examples
    --------
    >>> from distgraph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    >>> r = msbfs(g, [0, 3])
    >>> r.distance_sum.tolist(), r.reach.tolist()
    ([3, 3, 3, 3], [2, 2, 2, 2])
    """
    from ..backends.cpu.bits import limbs_to_float
    from ..runtime.context import get_context

    check_graph(graph)
    src = check_vertices(sources, graph.n, "sources")
    bs = check_batch_size(batch_size)
    ctx = get_context(comm, backend)
    tptr, tidx, _ = graph.csc()
    runner = None
    if ctx.backend == "gpu":
        if levels:
            raise BackendUnavailableError("msbfs(levels=True) is not available on backend 'gpu' (the GPU kernel "
                                          "keeps only the sums); use backend='cpu' for the level matrix")
        if src.size:
            from ..backends.gpu.closeness import make_runner

            runner = make_runner(graph.indptr, graph.indices, tptr, tidx, ctx=ctx)
    try:
        far, reach, h0, h1, h2, lv = run_batches(graph.indptr, graph.indices, tptr, tidx, src, per_source=False,
                                                 batch_size=bs, ctx=ctx, want_levels=bool(levels),
                                                 progress=progress, desc="msbfs", runner=runner)
    finally:  # device memory freed also when a batch fails
        if runner is not None:
            runner.close()
    return MSBFSResult(src, far, reach, limbs_to_float(h0, h1, h2), lv)
