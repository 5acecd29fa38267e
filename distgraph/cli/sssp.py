"""``distgraph sssp GRAPH``: single-source shortest paths with negative weights (Bellman-Ford).

    distgraph sssp road-NY.gr.xz --source 1 --output dist.npy --predecessors pred.npy
    mpiexec -n 4 distgraph sssp kron:16:weights=uniform --mode async --queue bwd --verify
    distgraph sssp road-NY.gr.xz --source 1 --backend gpu --mode async     # queue kernel on a GPU
    distgraph sssp road-NY.gr.xz --source 1 --backend gpu                  # auto: rounds, else the queue kernel
    distgraph sssp kron:20:weights=uniform --backend gpu --mode rounds     # round-based (fused kernels)
    distgraph sssp road-FLA.gr.xz --backend gpu --mode async --queue bwd --delta 1000
    distgraph sssp kron:20:weights=uniform --sources random:1000 --output dist.npy   # a row per source
    mpiexec -n 4 distgraph sssp road-NY.gr.xz --sources 1,5,9 --split graph -o d.npy

``--sources`` (input ids: ``3,17,42``; ``random:K``, K picked with ``--seed`` among the vertices
with arcs; or a file of ids, .npy or one per line) runs every source on one set-up of the graph
(:class:`~distgraph.algorithms.bellman_ford.BellmanFord`); ``--output`` (.npy only) then holds
a ``(sources, vertices)`` array, a row per source in the given order, and ``--predecessors``
likewise. Under mpiexec ``--split sources`` (the default when there are at least as many sources
as ranks) deals the sources to the ranks, each running the whole graph; ``--split graph`` runs
each source on all ranks together.

On GPUs, ``--mode rounds`` is the faster on low-diameter graphs (Kronecker, urand) and
``--mode async`` on high-diameter ones (road networks: 17-42x the rounds on road-FLA,
benchmarks/results/sssp_gpu.json); ``--mode auto`` (the default) runs the rounds for at most
64 rounds and then, if they have not settled, the queue kernel.

Distances are written in vertex order (the input ids of a SNAP/CSV list are the
``vertex`` column of a .csv output); unreached vertices hold ``inf`` (float weights) or the
integer dtype's maximum. Predecessors are written as input ids, ``-1`` for none. A
negative cycle reachable from the source ends the run with exit status 2 and one line
``distgraph: error: negative cycle reachable from source ...``.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InvalidArgumentError
from .common import (VALUE_EXTS, add_graph_arguments, add_progress_arguments, add_run_arguments, check_outputs,
                     load_graph, pick_sources, print_json, read_vertex_ids, resolve_source, resolve_vertex_ids,
                     write_output)

NAME = "sssp"
HELP = "single-source shortest paths, negative weights allowed (distributed Bellman-Ford)"


def add_arguments(p) -> None:
    from ..algorithms.bellman_ford import MODES, QUEUES, REMOTES

    add_graph_arguments(p)
    add_run_arguments(p, source=True)
    s = p.add_argument_group("sssp")
    s.add_argument("--predecessors", "-p", metavar="PRED", default=None,
                   help="also write the shortest-path tree (predecessor input ids, -1 for none) to PRED")
    s.add_argument("--mode", choices=MODES, default="auto",
                   help="round-synchronous, queue-driven, or auto: rounds on CPUs; on GPUs rounds while they "
                        "settle within DISTGRAPH_GPU_SSSP_AUTO_ROUNDS (64), else the queue kernel")
    s.add_argument("--queue", choices=QUEUES, default="bq", help="queue of the async mode (Broker Queue or BWD)")
    s.add_argument("--remote", choices=REMOTES, default="atomic",
                   help="remote relaxation of the async mode: atomic minimum + enqueue, enqueue of (vertex, "
                        "candidate, tail), or batch (GPU backend on several ranks: the smallest candidate per "
                        "vertex kept in a local outbox, shipped by one put per batch; the CPU async mode refuses it)")
    s.add_argument("--delta", type=float, default=None,
                   help="near-far bucket width (vertices below a threshold first; 0 or inf: off) of the CPU "
                        "rounds (default: DISTGRAPH_CPU_SSSP_DELTA, 16, times the mean weight) and of the GPU "
                        "async mode on one rank (default: from the mean weight and degree); only a priority, "
                        "the result does not depend on it; ignored elsewhere")
    s.add_argument("--sources", default=None, metavar="SPEC",
                   help="several sources (instead of --source): input ids '3,17,42', 'random:K' (picked with "
                        "--seed), or a file of ids (.npy, or one per line); the outputs get a row per source")
    s.add_argument("--checkpoint", metavar="DIR", default=None,
                   help="with --sources: run them in chunks of --chunk, keeping the finished rows in DIR "
                        "(written to --output at the end); SIGTERM or SIGUSR1 saves and stops at the next chunk")
    s.add_argument("--resume", action="store_true", help="continue the run stored in --checkpoint DIR")
    s.add_argument("--chunk", type=int, default=256, metavar="K",
                   help="with --checkpoint: sources per chunk, the rows a save covers (default 256)")
    add_progress_arguments(s, " over the sources of --sources")
    s.add_argument("--split", choices=("auto", "graph", "sources"), default="auto",
                   help="several sources under mpiexec: each source on all ranks (graph), or the sources dealt "
                        "to the ranks, each running the whole graph (sources); auto: sources when there are at "
                        "least as many as ranks")


def run(args) -> int:
    from mpi4py import MPI

    from ..algorithms.bellman_ford import bellman_ford, format_cycle
    from ..errors import NegativeCycleError
    from ..runtime.abort import _on_all_ranks, found_on_rank, raised_on_all_ranks

    comm = MPI.COMM_WORLD
    many = args.sources is not None
    exts, why = ((".npy",), " with --sources (a row per source)") if many else (VALUE_EXTS, "")
    check_outputs(comm, [("--output", args.output, exts, why), ("--predecessors", args.predecessors, exts, why)])
    t0 = time.perf_counter()
    g = load_graph(args, comm)
    t_read = time.perf_counter() - t0
    if args.resume and not args.checkpoint:
        raise InvalidArgumentError("--resume needs --checkpoint DIR")
    if args.checkpoint and not (many and args.output):
        raise InvalidArgumentError("--checkpoint needs --sources and --output (the rows it keeps go there)")
    if args.chunk < 1:
        raise InvalidArgumentError(f"--chunk must be >= 1; got {args.chunk}")
    if many:
        if args.source is not None:
            raise InvalidArgumentError("give --source or --sources, not both")
        src = _parse_sources(g, args.sources, args.seed)
    elif args.source is None:
        src = int(pick_sources(g, 1, args.seed)[0])
    else:
        src = resolve_source(g, args.source)
    ids = g.input_ids()

    def in_input_ids(e):
        """A negative cycle in the input ids of a labelled graph (SNAP/CSV lists)."""
        if g.labels is None:
            return e
        cyc = [int(ids[v]) for v in e.cycle]
        s = e.source if e.source is not None else (None if many else src)
        where = f"source {int(ids[s])}" if s is not None else "a source"
        err = NegativeCycleError(
            f"negative cycle reachable from {where}: {format_cycle(cyc)} (input ids) "
            f"has total weight {e.weight}", cycle=cyc, weight=e.weight,
            source=None if s is None else int(ids[s]))
        if raised_on_all_ranks(e, comm):  # so is its copy in input ids: the job ends without MPI_Abort
            err = _on_all_ranks(err, comm, found_on_rank(e))
        return err

    if args.checkpoint:
        from ..runtime.checkpoint import CheckpointInterrupted

        try:
            return _run_checkpointed(args, g, src, comm, t_read)
        except CheckpointInterrupted as e:  # raised on every rank after the save: no abort needed
            if comm.Get_rank() == 0:
                import sys

                print(f"distgraph sssp: {e} (checkpoint {args.checkpoint})", file=sys.stderr, flush=True)
            return 128 + e.signum
        except NegativeCycleError as e:
            raise in_input_ids(e) from None
    times = []
    r = None
    for _ in range(max(1, args.trials)):
        try:
            r = bellman_ford(g, src, predecessors=args.predecessors is not None, mode=args.mode,
                             queue=args.queue, remote=args.remote, backend=args.backend, comm=comm,
                             verify=args.verify, delta=args.delta, split=args.split, progress=args.progress)
        except NegativeCycleError as e:
            raise in_input_ids(e) from None
        times.append(r.stats["time_s"])
    if comm.Get_rank() == 0:
        if args.output:
            write_output(args.output, r.distance, g, name="distance")
        if args.predecessors:
            pred = r.predecessor
            out = np.where(pred >= 0, ids[np.maximum(pred, 0)], -1).astype(np.int64)
            write_output(args.predecessors, out, g, name="predecessor")
    best = min(times)
    reached = int(np.count_nonzero(r.reached))
    k = len(src) if many else 1
    modes = sorted({st.get("mode", args.mode) for st in r.stats["per_source"]}) if many else None
    summary = {"command": "sssp", "graph": args.graph,
               "source": [int(x) for x in ids[src]] if many else int(ids[src]), "vertices": g.n, "arcs": g.m,
               "reached": reached, "mode": ",".join(modes) if many else r.stats.get("mode", args.mode),
               "backend": r.stats.get("backend", "cpu"),
               "ranks": comm.Get_size(), "time_read_s": t_read,
               "time_s": best, "times_s": times, "gteps": k * g.m / best / 1e9 if best > 0 else None,
               "relaxations": r.stats.get("relaxations"), "rounds": r.stats.get("rounds"),
               "verified": bool(args.verify)}
    if many:
        summary.update(sources=k, split=r.stats["split"])
    if summary["mode"] == "async":
        summary.update(queue=args.queue, remote=args.remote)
    if "auto" in r.stats:
        summary["auto"] = r.stats["auto"]
    if args.json:
        print_json(_Root(comm), summary)
    elif comm.Get_rank() == 0 and many:
        print(f"sssp from {k:,} sources: {reached:,} (source, vertex) pairs of {k * g.n:,} reached; "
              f"best of {len(times)} {best:.4f} s ({summary['gteps']:.4f} GTEPS) on {comm.Get_size()} rank(s), "
              f"split {summary['split']}, backend {summary['backend']}, mode {summary['mode']}"
              + (", verified" if args.verify else ""))
    elif comm.Get_rank() == 0:
        print(f"sssp from {summary['source']}: {reached:,} of {g.n:,} vertices reached; "
              f"best of {len(times)} {best:.4f} s ({summary['gteps']:.4f} GTEPS) on {comm.Get_size()} rank(s), "
              f"backend {summary['backend']}, mode {summary['mode']}" + (", verified" if args.verify else ""))
    return 0


def _run_checkpointed(args, g, src, comm, t_read) -> int:
    """``--sources`` with ``--checkpoint DIR``: the sources in chunks of ``--chunk`` on one
    :class:`BellmanFord`; rank 0 writes each chunk's rows into ``DIR/distance.npy`` (and
    ``predecessor.npy``, input ids), flushes them, then records the chunk done in
    ``DIR/state.json`` (written aside, fsync'ed, renamed over: a kill leaves the old or the new
    state). ``--resume`` checks ``DIR/manifest.json`` (graph, weights, sources, options) and
    goes on from the first chunk not recorded. A stop signal is acted on at the next chunk
    boundary, on every rank together (one MPI max per chunk). At the end the rows are moved to
    ``--output`` / ``--predecessors``."""
    import json
    import os
    import shutil

    from ..algorithms.bellman_ford import BellmanFord
    from ..errors import CheckpointError
    from ..runtime.abort import collective_raise
    from ..runtime.checkpoint import (CheckpointInterrupted, StopSignals, _make_directory, _write_atomic,
                                      array_checksum, graph_checksum)
    from ..runtime.progress import Progress

    ck, rank = args.checkpoint, comm.Get_rank()
    k, n, ids = len(src), g.n, g.input_ids()
    want_pred = args.predecessors is not None
    bf = BellmanFord(g, mode=args.mode, queue=args.queue, remote=args.remote, backend=args.backend, comm=comm,
                     delta=args.delta)
    ident = {"format": 1, "command": "sssp", "graph": graph_checksum(g),
             "weights": None if bf.w is None else array_checksum(bf.w), "sources": array_checksum(src),
             "vertices": n, "dtype": bf.out_dtype.str, "predecessors": want_pred, "chunk": int(args.chunk)}
    paths = {"manifest": os.path.join(ck, "manifest.json"), "state": os.path.join(ck, "state.json"),
             "distance": os.path.join(ck, "distance.npy"), "predecessor": os.path.join(ck, "predecessor.npy")}
    done, err, mm = 0, None, {}
    if rank == 0:
        try:
            if args.resume:
                try:
                    with open(paths["manifest"]) as f:
                        have = json.load(f)
                    with open(paths["state"]) as f:
                        done = int(json.load(f)["done"])
                except (OSError, ValueError, KeyError) as e:
                    raise CheckpointError(f"--resume: {ck} holds no sssp checkpoint to resume ({e})") from None
                diff = [key for key in ident if have.get(key) != ident[key]]
                if diff:
                    raise CheckpointError(f"--resume: {ck} holds another run (its {', '.join(diff)} differ); "
                                          "use another directory or the same graph, weights, sources and options")
                if not 0 <= done <= k:
                    raise CheckpointError(f"--resume: {paths['state']} says {done} rows done of {k}")
                if done == k:
                    raise CheckpointError(f"--resume: the run in {ck} is complete; its rows were written to "
                                          "--output (and --predecessors)")
                mm["distance"] = np.lib.format.open_memmap(paths["distance"], mode="r+")
                if want_pred:
                    mm["predecessor"] = np.lib.format.open_memmap(paths["predecessor"], mode="r+")
            else:
                if os.path.exists(paths["manifest"]):
                    raise CheckpointError(f"--checkpoint {ck} already holds a run: pass --resume to continue it, "
                                          "or use another directory")
                _make_directory(ck, "--checkpoint")
                mm["distance"] = np.lib.format.open_memmap(paths["distance"], mode="w+", dtype=bf.out_dtype,
                                                           shape=(k, n))
                if want_pred:
                    mm["predecessor"] = np.lib.format.open_memmap(paths["predecessor"], mode="w+", dtype=np.int64,
                                                                  shape=(k, n))
                _write_atomic(paths["state"], lambda f: f.write(json.dumps({"done": 0}).encode()))
                _write_atomic(paths["manifest"], lambda f: f.write(json.dumps(ident, indent=1).encode()))
        except (OSError, ValueError, CheckpointError) as e:
            err = e
    collective_raise(comm, err)
    done = comm.bcast(done, root=0)
    start, t0 = done, time.perf_counter()
    relax = 0
    try:
        with StopSignals() as stop, Progress(total=k, initial=done, desc="sssp sources", rank=rank,
                                             enabled=args.progress) as bar:
            while done < k:
                hi = min(done + args.chunk, k)
                r = bf.run_many(src[done:hi], predecessors=want_pred, verify=args.verify, split=args.split,
                                runs_after=k - hi, progress=False)  # the chunks' bar is this one
                relax += int(r.stats["relaxations"])
                if rank == 0:
                    try:
                        mm["distance"][done:hi] = r.distance
                        mm["distance"].flush()
                        if want_pred:
                            p = r.predecessor
                            mm["predecessor"][done:hi] = np.where(p >= 0, ids[np.maximum(p, 0)], -1)
                            mm["predecessor"].flush()
                        _write_atomic(paths["state"], lambda f, d=hi: f.write(json.dumps({"done": d}).encode()))
                    except OSError as e:
                        err = e
                collective_raise(comm, err)
                bar.update(hi - done)
                done = hi
                signum = max(comm.allgather(stop.signum or 0)) if done < k else 0
                if signum:  # every rank stops here together, the chunk saved
                    raise CheckpointInterrupted(signum)
    finally:
        bf.close()
        mm.clear()
    if rank == 0:
        shutil.move(paths["distance"], args.output)
        if want_pred:
            shutil.move(paths["predecessor"], args.predecessors)
    elapsed = time.perf_counter() - t0
    summary = {"command": "sssp", "graph": args.graph, "sources": k, "vertices": n, "arcs": g.m,
               "ranks": comm.Get_size(), "backend": bf.backend, "split": args.split, "time_read_s": t_read,
               "time_s": elapsed, "rows_this_run": k - start, "resumed": bool(args.resume),
               "checkpoint": ck, "relaxations": relax, "verified": bool(args.verify)}
    if args.json:
        print_json(_Root(comm), summary)
    elif rank == 0:
        print(f"sssp from {k:,} sources: {k - start:,} rows this run in {elapsed:.3f} s on {comm.Get_size()} rank(s), "
              f"backend {bf.backend}; rows in {args.output}" + (" (resumed)" if args.resume else ""))
    return 0


def _parse_sources(g, spec: str, seed: int) -> np.ndarray:
    """``--sources``: input ids ``3,17,42``, ``random:K``, or a file of ids (.npy, or text:
    whitespace separated, as ``closeness --vertices``)."""
    import os
    import re

    spec = str(spec)
    if spec.startswith("random:"):
        try:
            k = int(spec[len("random:"):])
        except ValueError:
            k = -1
        if k < 1:
            raise InvalidArgumentError(f"--sources random:K needs a count K >= 1; got {spec!r}")
        return np.asarray(pick_sources(g, k, seed), np.int64)
    if re.fullmatch(r"\s*-?\d+(\s*,\s*-?\d+)*\s*,?\s*", spec):  # ids, even where a file has that name
        return resolve_vertex_ids(g, [int(x) for x in spec.split(",") if x.strip()], "--sources", f"in {spec!r}")
    if os.path.isfile(spec):
        src, ids = read_vertex_ids(spec, g, "--sources")
        if not ids.size:
            raise InvalidArgumentError(f"--sources {spec!r} names no vertex")
        return src
    what = "is not a file" if os.path.exists(spec) else "is not ids, random:K or an existing file"
    raise InvalidArgumentError(f"--sources must be input ids '3,17,42', 'random:K' or an existing file; "
                               f"got {spec!r}, which {what}")


class _Root:
    """The one attribute :func:`print_json` reads of a context."""

    def __init__(self, comm):
        self.rank = comm.Get_rank()
