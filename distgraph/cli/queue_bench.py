"""``distgraph queue-bench``: the queue workloads of the multi-GPU queue paper (EnqDeq, Mixed).

CPU (MPI-RMA queue): ``mpiexec -n 4 distgraph queue-bench --backend cpu --ops 20000 --batch 16``
GPU (NVSHMEM queue): ``mpirun -n 1 distgraph queue-bench --backend gpu --threads 256 --blocks 132``
Rank 0 prints one line per run (and ``--json``: one JSON line per run). Every run checks that the
values dequeued over all ranks are exactly 0..ops-1; a failed check exits non-zero.
"""

from __future__ import annotations

import json
import sys

NAME = "queue-bench"
HELP = "benchmark the distributed Broker Queue / BWD (EnqDeq and Mixed workloads)"


def add_arguments(p) -> None:
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default=None,
                   help="compute backend (default: DISTGRAPH_BACKEND, else gpu when CuPy sees one)")
    p.add_argument("--workload", choices=("enqdeq", "mixed", "both"), default="both")
    p.add_argument("--kind", choices=("bq", "bwd", "both"), default="both", help="Broker Queue or Broker Work Distributor")
    p.add_argument("--ops", type=int, default=None,
                   help="items over all ranks (enqueues = dequeues = ops); default 10M on gpu, 20000 on cpu")
    p.add_argument("--capacity", type=int, default=None,
                   help="slots per segment, a power of two (default: enough for ops / segments)")
    p.add_argument("--layout", choices=("distributed", "centralized"), default="distributed",
                   help="cpu: one segment per rank, or one segment on rank 0")
    p.add_argument("--batch", type=int, default=16, help="cpu: items per enqueue/dequeue (one reservation)")
    p.add_argument("--threads", type=int, nargs="+", default=[256], help="gpu: threads per block")
    p.add_argument("--blocks", type=int, nargs="+", default=[132], help="gpu: blocks")
    p.add_argument("--policy", choices=("round-robin", "own"), default="round-robin",
                   help="gpu: enqueue into the segments round-robin, or into one's own")
    p.add_argument("--warp", action="store_true", help="gpu: warp-aggregated reservations")
    p.add_argument("--trials", "-n", type=int, default=1, help="timed trials per configuration (best is printed)")
    p.add_argument("--json", action="store_true", help="rank 0 prints one JSON line per run")


def run(args) -> int:
    from mpi4py import MPI

    from ..errors import expect
    from ..pgas import get_pgas
    from ..pgas.bench import cpu_queue_run, next_pow2
    from ..runtime.context import get_context

    ctx = get_context(backend=args.backend)
    comm = MPI.COMM_WORLD
    gpu = ctx.backend == "gpu"
    ops = args.ops if args.ops is not None else (10_000_000 if gpu else 20_000)
    expect(ops >= 1, "--ops", "a positive integer", ops)
    expect(args.trials >= 1, "--trials", "a positive integer", args.trials)
    wls = ["enqdeq", "mixed"] if args.workload == "both" else [args.workload]
    kinds = ["bq", "bwd"] if args.kind == "both" else [args.kind]
    nseg = comm.Get_size() if args.layout == "distributed" else 1
    cap = args.capacity or next_pow2(ops // nseg + 1)
    results = []
    if gpu:
        from ..pgas.bench import GpuQueueBench

        expect(args.layout == "distributed", "--layout", "'distributed' on the gpu backend", args.layout)
        pg = get_pgas(comm, "gpu")
        bench = GpuQueueBench(cap, nvshmem=True, pgas=pg)
        try:
            for th in args.threads:
                for bl in args.blocks:
                    for wl in wls:
                        for k in kinds:
                            runs = [bench.run(wl, k, th, bl, ops, policy=int(args.policy == "round-robin"),
                                              warp=args.warp, verify=(t == args.trials - 1))
                                    for t in range(args.trials)]
                            best = min(runs, key=lambda r: r["total_s"])
                            best["verified"] = runs[-1]["verified"]
                            results.append(best)
                            _report(ctx, args, best)
        finally:
            bench.close()
            pg.finalize()
    else:
        from ..pgas.queue import BrokerQueue

        expect(1 <= args.batch <= cap, "--batch", f"in [1, capacity={cap}]", args.batch)
        pg = get_pgas(comm, "cpu")
        for wl in wls:
            for k in kinds:
                with BrokerQueue(cap, kind=k, layout=args.layout, pgas=pg) as q:
                    runs = [cpu_queue_run(q, wl, ops, batch=args.batch, verify=(t == args.trials - 1))
                            for t in range(args.trials)]
                best = min(runs, key=lambda r: r["total_s"])
                best["verified"] = runs[-1]["verified"]
                results.append(best)
                _report(ctx, args, best)
    return 0 if all(r["verified"] for r in results) else 1


def _report(ctx, args, r) -> None:
    if ctx.rank != 0:
        return
    if args.json:
        sys.stdout.write(json.dumps(r) + "\n")
    else:
        where = f"{r['threads']}x{r['blocks']} " if "threads" in r else f"batch {r['batch']} "
        sys.stdout.write(f"{r['workload']:6s} {r['kind']:3s} pes={r['pes']} {where}ops={r['ops']} "
                         f"time={r['total_s']:.4f}s {r['mops_per_s']:.3f} Mops/s verified={r['verified']}"
                         + (f" ({r['why']})" if "why" in r else "") + "\n")
    sys.stdout.flush()
