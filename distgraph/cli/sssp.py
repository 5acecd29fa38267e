"""``distgraph sssp GRAPH``: single-source shortest paths with negative weights (Bellman-Ford).

    distgraph sssp road-NY.gr.xz --source 1 --output dist.npy --predecessors pred.npy
    mpiexec -n 4 distgraph sssp kron:16:weights=uniform --mode async --queue bwd --verify
    distgraph sssp road-NY.gr.xz --source 1 --backend gpu --mode async     # queue kernel on a GPU
    distgraph sssp road-NY.gr.xz --source 1 --backend gpu                  # auto: rounds, else the queue kernel
    distgraph sssp kron:20:weights=uniform --backend gpu --mode rounds     # round-based (fused kernels)
    distgraph sssp road-FLA.gr.xz --backend gpu --mode async --queue bwd --delta 1000

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

from .common import (add_graph_arguments, add_run_arguments, load_graph, pick_sources, print_json,
                     resolve_source, write_output)

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
                   help="GPU async mode on one rank: near-far bucket width (vertices below a threshold first; "
                        "0 or inf: off; default: from the mean weight and degree); only a priority, the "
                        "result does not depend on it; ignored elsewhere")


def run(args) -> int:
    from mpi4py import MPI

    from ..algorithms.bellman_ford import bellman_ford, format_cycle
    from ..errors import NegativeCycleError

    comm = MPI.COMM_WORLD
    t0 = time.perf_counter()
    g = load_graph(args, comm)
    t_read = time.perf_counter() - t0
    if args.source is None:
        src = int(pick_sources(g, 1, args.seed)[0])
    else:
        src = resolve_source(g, args.source)
    ids = g.input_ids()
    times = []
    r = None
    for _ in range(max(1, args.trials)):
        try:
            r = bellman_ford(g, src, predecessors=args.predecessors is not None, mode=args.mode,
                             queue=args.queue, remote=args.remote, backend=args.backend, comm=comm,
                             verify=args.verify, delta=args.delta)
        except NegativeCycleError as e:
            if g.labels is None:
                raise
            cyc = [int(ids[v]) for v in e.cycle]
            raise NegativeCycleError(
                f"negative cycle reachable from source {int(ids[src])}: {format_cycle(cyc)} (input ids) "
                f"has total weight {e.weight}", cycle=cyc, weight=e.weight) from None
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
    summary = {"command": "sssp", "graph": args.graph, "source": int(ids[src]), "vertices": g.n, "arcs": g.m,
               "reached": reached, "mode": r.stats.get("mode", args.mode), "backend": r.stats.get("backend", "cpu"),
               "ranks": comm.Get_size(), "time_read_s": t_read,
               "time_s": best, "times_s": times, "gteps": g.m / best / 1e9 if best > 0 else None,
               "relaxations": r.stats.get("relaxations"), "rounds": r.stats.get("rounds"),
               "verified": bool(args.verify)}
    if summary["mode"] == "async":
        summary.update(queue=args.queue, remote=args.remote)
    if "auto" in r.stats:
        summary["auto"] = r.stats["auto"]
    if args.json:
        print_json(_Root(comm), summary)
    elif comm.Get_rank() == 0:
        print(f"sssp from {summary['source']}: {reached:,} of {g.n:,} vertices reached; "
              f"best of {len(times)} {best:.4f} s ({summary['gteps']:.4f} GTEPS) on {comm.Get_size()} rank(s), "
              f"backend {summary['backend']}, mode {summary['mode']}" + (", verified" if args.verify else ""))
    return 0


class _Root:
    """The one attribute :func:`print_json` reads of a context."""

    def __init__(self, comm):
        self.rank = comm.Get_rank()
