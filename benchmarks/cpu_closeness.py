"""Exact closeness on the CPU: distgraph vs networkit (and igraph), same graph, same run.

    python benchmarks/cpu_closeness.py                   # Kronecker scale 14 and 16
    python benchmarks/cpu_closeness.py --scales 12 --no-igraph --out /tmp/x.json

Graphs: Kronecker (Graph500/GAP R-MAT), edge factor 16, symmetrized, seed 27491095
(``distgraph.generators.kronecker``). Peers, on the same graph in the same process:

* networkit ``centrality.Closeness(G, True, ClosenessVariant.GENERALIZED)`` with
  ``nk.setNumberOfThreads(THREADS)``;
* igraph ``Graph.closeness(mode="out", normalized=True)`` (single-threaded; only at
  the scales given by ``--igraph-scales``);
* distgraph ``closeness(g, convention="networkit")`` in one process with THREADS
  numba threads (batches spread over threads), and over 1 and 2 MPI ranks with one
  thread each (``mpiexec -n R python benchmarks/cpu_closeness.py --worker ...``).

Each contestant runs in its own process; times are wall-clock (and CPU) seconds of
the closeness call alone (graph building and numba compilation excluded: a warm-up
call on a small graph runs first). A peer still running after ``--timeout`` seconds
is stopped and the speedup reported as a lower bound. Values are checked against
networkit's and igraph's. Results go to ``benchmarks/results/cpu_closeness.json``
with commit, host, date and the load average before and after (other jobs on the
machine slow every contestant alike, but read the numbers with that in mind).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

T_PROCESS = time.perf_counter()  # for startup_s: imports, graph, numba cache loads / warm-up
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def kron(scale):
    from distgraph.generators.kron import kronecker

    return kronecker(scale, 16)


def warm_up(comm=None):
    from distgraph.algorithms.closeness import closeness
    from distgraph.generators.kron import kronecker

    g = kronecker(8, 16)
    for bs in (512, 64, 300):
        closeness(g, convention="networkit", batch_size=bs, comm=comm)


def worker(args) -> int:
    """One contestant on one graph, in its own process: prints a JSON line with the
    wall-clock and CPU seconds of the closeness call alone."""
    if args.tool == "distgraph-mpi":
        from mpi4py import MPI

        from distgraph.algorithms.closeness import closeness

        comm = MPI.COMM_WORLD
        g = kron(args.scale)
        warm_up(comm)
        comm.Barrier()
        startup = time.perf_counter() - T_PROCESS
        t, c = time.perf_counter(), time.process_time()
        r = closeness(g, convention="networkit", comm=comm, progress=False)
        own = time.perf_counter() - t  # this rank's call, the final Allreduce included
        comm.Barrier()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        per_rank = comm.gather({"call_s": own, "cpu_s": cpu, "startup_s": startup}, root=0)
        if comm.rank == 0:
            print(json.dumps({"time_s": wall, "cpu_s": float(sum(p["cpu_s"] for p in per_rank)), "ranks": comm.size,
                              "per_rank": per_rank, "checksum": float(np.sum(r.closeness))}))
        return 0
    g = kron(args.scale)
    if args.tool == "distgraph":
        import numba

        from distgraph.algorithms.closeness import closeness

        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
        warm_up()
        startup = time.perf_counter() - T_PROCESS
        t, c = time.perf_counter(), time.process_time()
        vals = closeness(g, convention=args.convention, progress=False).closeness
        out = {"threads": numba.get_num_threads(), "startup_s": startup}
    elif args.tool == "networkit":
        import networkit as nk

        nk.setNumberOfThreads(args.threads)
        G = to_networkit(g)
        t, c = time.perf_counter(), time.process_time()
        cl = nk.centrality.Closeness(G, True, nk.centrality.ClosenessVariant.GENERALIZED)
        cl.run()
        vals = np.asarray(cl.scores())
        out = {"threads": nk.getMaxNumberOfThreads()}
    else:  # igraph
        import igraph as ig

        src, dst, _ = g.edges()
        keep = src < dst
        G = ig.Graph(n=g.n, edges=np.column_stack([src[keep], dst[keep]]).tolist(), directed=False)
        t, c = time.perf_counter(), time.process_time()
        vals = np.asarray(G.closeness(mode="out", normalized=True), dtype=np.float64)
        out = {"threads": 1}
    out.update(time_s=time.perf_counter() - t, cpu_s=time.process_time() - c)
    if args.save:
        np.save(args.save, vals)
    print(json.dumps(out))
    return 0


def run_worker(cmd, timeout, env=None):
    """Run a worker; ``None`` when it ran past ``timeout`` seconds. Adds ``process_s``
    (the whole command: start-up, graph, warm-up, the call) and the load average."""
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t
    res["load_avg_at_end"] = os.getloadavg()
    return res


def git_commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "distgraph", "benchmarks/cpu_closeness.py"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def to_networkit(g):
    import networkit as nk

    src, dst, _ = g.edges()
    keep = src < dst
    G = nk.Graph(g.n, directed=False)
    G.addEdges((src[keep].astype(np.uint64), dst[keep].astype(np.uint64)))
    return G


def contention(args) -> int:
    """One rank alone, two independent one-rank jobs at the same time, and one job on two
    ranks, alternating, ``args.contention`` times per scale. If two independent jobs
    each take longer than one alone, the cores slow each other (shared L3 and memory
    bandwidth, another VM), and no dealing or reduction can make 2 ranks reach 2x."""
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--tool", "distgraph-mpi"]
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    rows = []
    for scale in [int(s) for s in args.scales.split(",") if s]:
        cmd1 = ["mpiexec", "-n", "1"] + me + ["--scale", str(scale)]
        cmd2 = ["mpiexec", "-n", "2"] + me + ["--scale", str(scale)]
        row = {"graph": f"kron:{scale}", "alone_s": [], "two_jobs_at_once_s": [], "two_ranks_s": [], "load_avg": []}
        for _ in range(args.contention):
            row["alone_s"].append(run_worker(cmd1, None, env=env)["time_s"])
            procs = [subprocess.Popen(cmd1, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT) for _ in range(2)]
            row["two_jobs_at_once_s"].append([json.loads(p.communicate()[0].strip().splitlines()[-1])["time_s"]
                                              for p in procs])
            row["two_ranks_s"].append(run_worker(cmd2, None, env=env)["time_s"])
            row["load_avg"].append(os.getloadavg())
        row["median_alone_s"] = float(np.median(row["alone_s"]))
        row["median_two_jobs_at_once_s"] = float(np.median(row["two_jobs_at_once_s"]))
        row["median_two_ranks_s"] = float(np.median(row["two_ranks_s"]))
        row["speedup_2_ranks_vs_alone"] = row["median_alone_s"] / row["median_two_ranks_s"]
        row["speedup_2_ranks_vs_jobs_at_once"] = row["median_two_jobs_at_once_s"] / row["median_two_ranks_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {"benchmark": "cpu_closeness_contention", "commit": git_commit(), "host": platform.node(),
           "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "note": "time_s of the closeness call alone (networkit convention, compilation excluded); "
                   "two_jobs_at_once: two independent one-rank processes started together; medians over the reps",
           "results": rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scales", default="14,16")
    p.add_argument("--igraph-scales", default="14")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ranks", default="1,2", help="MPI rank counts for the rank-scaling runs ('' to skip)")
    p.add_argument("--rank-reps", type=int, default=3, help="runs per rank count, alternating; best and median "
                   "are reported")
    p.add_argument("--contention", type=int, default=0, metavar="REPS",
                   help="instead of the comparison: REPS times each, one rank alone, two one-rank jobs at once, "
                   "and two ranks (does a second busy core slow the first?); output to --out")
    p.add_argument("--no-peers", action="store_true", help="time distgraph only (no networkit / igraph)")
    p.add_argument("--timeout", type=float, default=1500, help="seconds after which a peer's run is stopped "
                   "(its time is then reported as a lower bound)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "cpu_closeness.json"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tool", default="distgraph", help=argparse.SUPPRESS)
    p.add_argument("--scale", type=int, default=14, help=argparse.SUPPRESS)
    p.add_argument("--convention", default="networkit", help=argparse.SUPPRESS)
    p.add_argument("--save", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)

    if args.contention:
        return contention(args)

    import tempfile

    import networkit as nk
    import numba

    load_before = os.getloadavg()
    commit = git_commit()  # of the code measured, taken before the runs
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--threads", str(args.threads)]
    tmp = tempfile.mkdtemp(prefix="dg-bench-")
    rows = []
    for scale in [int(s) for s in args.scales.split(",") if s]:
        g = kron(scale)
        row = {"graph": f"kron:{scale} (edge factor 16, symmetrized, seed 27491095)", "n": g.n, "arcs": g.m,
               "edges": g.num_edges, "isolated": int(np.count_nonzero(np.diff(g.indptr) == 0)),
               "load_avg_at_start": os.getloadavg()}
        del g
        f_ours, f_nk = os.path.join(tmp, f"ours{scale}.npy"), os.path.join(tmp, f"nk{scale}.npy")
        ours = run_worker(me + ["--tool", "distgraph", "--scale", str(scale), "--save", f_ours], None)
        row["distgraph"] = ours
        peer = None if args.no_peers else run_worker(me + ["--tool", "networkit", "--scale", str(scale), "--save",
                                                          f_nk], args.timeout)
        if args.no_peers:
            pass
        elif peer is None:
            row["networkit"] = {"time_s": None, "timed_out_after_s": args.timeout}
            row["speedup_vs_networkit_at_least"] = args.timeout / ours["time_s"]
        else:
            row["networkit"] = peer
            row["speedup_vs_networkit"] = peer["time_s"] / ours["time_s"]
            row["cpu_ratio_vs_networkit"] = peer["cpu_s"] / ours["cpu_s"]
            row["max_abs_diff_vs_networkit"] = float(np.max(np.abs(np.load(f_ours) - np.load(f_nk))))
        if str(scale) in args.igraph_scales.split(",") and not args.no_peers:
            f_ig, f_oi = os.path.join(tmp, f"ig{scale}.npy"), os.path.join(tmp, f"oi{scale}.npy")
            ig_ = run_worker(me + ["--tool", "igraph", "--scale", str(scale), "--save", f_ig], args.timeout)
            run_worker(me + ["--tool", "distgraph", "--scale", str(scale), "--convention", "igraph",
                             "--save", f_oi], None)
            row["igraph"] = ig_ if ig_ is not None else {"time_s": None, "timed_out_after_s": args.timeout}
            if ig_ is not None:
                row["speedup_vs_igraph"] = ig_["time_s"] / ours["time_s"]
                row["max_abs_diff_vs_igraph"] = float(np.nanmax(np.abs(np.load(f_oi) - np.load(f_ig))))
        if args.threads > 1:  # the same in one process on one thread: thread scaling beside rank scaling
            row["distgraph_1_thread"] = run_worker(me[:-1] + ["1", "--tool", "distgraph", "--scale", str(scale)],
                                                   None, env=dict(os.environ, NUMBA_NUM_THREADS="1"))
            row["speedup_threads_vs_1"] = row["distgraph_1_thread"]["time_s"] / ours["time_s"]
        ranks = {}
        env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
        counts = [int(x) for x in args.ranks.split(",") if x]
        for _ in range(args.rank_reps):  # alternate 1, 2, 1, 2, ...: the load drifts alike for both
            for r in counts:
                ranks.setdefault(str(r), []).append(run_worker(
                    ["mpiexec", "-n", str(r)] + me + ["--tool", "distgraph-mpi", "--scale", str(scale)], None, env=env))
        if ranks:
            row["mpi_ranks"] = ranks
            best = {r: min(x["time_s"] for x in runs) for r, runs in ranks.items()}
            med = {r: float(np.median([x["time_s"] for x in runs])) for r, runs in ranks.items()}
            row["mpi_best_s"], row["mpi_median_s"] = best, med
            if "1" in ranks and "2" in ranks:
                row["speedup_2_ranks_vs_1"] = best["1"] / best["2"]
                row["speedup_2_ranks_vs_1_median"] = med["1"] / med["2"]
                # CPU seconds per rank: what the ranks got of the cores (the rest went to other jobs)
                row["cpu_share_2_ranks"] = [min(1.0, p["cpu_s"] / p["call_s"]) for x in ranks["2"]
                                            for p in x["per_rank"]]
                row["process_s_2_ranks_vs_1"] = (min(x["process_s"] for x in ranks["1"]) /
                                                 min(x["process_s"] for x in ranks["2"]))
        row["load_avg_at_end"] = os.getloadavg()
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {"benchmark": "cpu_closeness", "commit": commit, "host": platform.node(),
           "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
           "versions": {"networkit": nk.__version__, "numba": numba.__version__, "numpy": np.__version__,
                        "python": platform.python_version()},
           "note": "time_s: wall-clock seconds of the closeness call alone (each contestant in its own process, "
                   "graph building and compilation excluded); cpu_s: CPU seconds of that call, all threads. "
                   "networkit with setNumberOfThreads(threads); distgraph with the same number of numba threads; "
                   "mpi_ranks: distgraph over MPI ranks, one thread each, --rank-reps runs alternating between rank counts "
                   "(speedup_2_ranks_vs_1 from the best runs; _median from the medians); process_s: the whole "
                   "command (start-up, graph generation, numba cache loads and warm-up, the call); cpu_share: CPU "
                   "seconds / wall seconds of each rank's call (MPICH ranks spin while they wait, so a rank "
                   "that waits still counts as busy; below 1 means other jobs had the core). The machine was shared with other jobs "
                   "(see load averages), which slows every contestant, OpenMP codes that spin-wait the most.",
           "threads": args.threads, "results": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
