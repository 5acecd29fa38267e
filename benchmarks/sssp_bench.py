"""Benchmark: one-source SSSP with negative weights, distgraph's distributed Bellman-Ford on
the CPU backend against the peers a user would pick instead, same graph, same run.

    python benchmarks/sssp_bench.py --peers [--cases kron:16,road-FLA] [--out FILE]
    mpiexec -n 2 python benchmarks/sssp_bench.py [--cases ...] [--out FILE]

Graphs: ``kron:S`` (Graph500/GAP Kronecker, undirected) and ``road-NY`` / ``road-FLA``
(``../shared/data``), each with integer weights uniform in [1, 255] (``uniform``) and
the same weights potential-shifted (``shifted``: ``w + p(u) - p(v)``, about 29% of the
arcs negative, no negative cycle; directed). One source: the vertex of largest
out-degree (Kronecker) or vertex 0 (roads).

distgraph: ``bellman_ford`` in every mode (``rounds``; ``async`` with BQ and BWD, remote
atomic-min and enqueue) on all ranks of this job; a warm-up call first (numba compiles or
loads its cache), then the best of ``--trials`` runs. Peers (rank 0, with ``--peers``):
scipy.sparse.csgraph ``bellman_ford`` and ``johnson`` (and ``dijkstra`` where weights
are >= 0), igraph ``distances(algorithm="bellman_ford")``, networkx
``single_source_bellman_ford_path_length`` (small graphs only); a peer that would run
longer than ``--peer-limit`` seconds on the previous size is skipped. Every distance
vector is compared with distgraph's rounds result. Ratios: peer time / distgraph rounds
time (> 1: distgraph faster; a run without ``--peers`` keeps the peer times already in the
file and recomputes the ratios), for wall time and for CPU time of the process (on a shared,
loaded machine wall time includes waiting for a core; CPU time does not; for ranks > 1 the
CPU time is the largest of any rank, busy polling included). GTEPS = stored arcs / wall time. The JSON records commit,
machine, ranks and date; runs with other rank counts are merged into the same file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from _common import commit, sh as _sh
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("DISTGRAPH_DATA", ROOT.parent / "shared" / "data"))
MODES = [("rounds", "bq", "enqueue"), ("async", "bq", "enqueue"), ("async", "bwd", "enqueue"),
         ("async", "bq", "atomic"), ("async", "bwd", "atomic"), ("rounds_nofar", "bq", "enqueue")]
# rounds_nofar: the rounds with delta=0, each round working a block to its fixpoint (the rounds
# before their near-far order)


def build(case: str):
    """(graph with uniform weights, source) for a case name."""
    from distgraph.generators import kronecker, uniform_weights

    if case.startswith("kron:"):
        g = uniform_weights(kronecker(int(case.split(":")[1])))
        return g, int(np.argmax(np.diff(g.indptr)))
    from distgraph.graph.readers import read_graph

    g = uniform_weights(read_graph(DATA / f"{case}.gr.xz"))
    return g, 0


def best_of(fn, trials):
    """(best wall seconds, CPU seconds of that trial, last result)."""
    times, out = [], None
    for _ in range(trials):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    wall, cpu = min(times)
    return wall, cpu, out


def peers(g, s, trials, limit, skip, last):
    """Peer timings on rank 0: {name: (seconds or None, distances or None)}."""
    import scipy.sparse.csgraph as csg

    A = g.to_scipy(dtype=np.float64)
    res = {}
    neg = bool((g.weights < 0).any())

    nm = float(g.n) * float(g.m)

    def run(name, fn, t=trials, quadratic=False):
        # quadratic: scipy's bellman_ford (and johnson's Bellman-Ford from a virtual source)
        # relax every arc n - 1 times with no early exit, so time ~ n m: predict from the
        # last graph and skip when the prediction is over the limit.
        if name in skip:
            res[name] = {"skipped": f"took > {limit} s on a smaller graph"}
            return
        if quadratic and name in last:
            pred_s = last[name][0] * nm / last[name][1]
            if pred_s > limit:
                res[name] = {"skipped": f"predicted {pred_s:.0f} s (n m scaling from {last[name][2]}) > {limit} s"}
                return
        sec, cpu, d = best_of(fn, t)
        res[name] = {"time_s": sec, "cpu_s": cpu, "dist": d}
        if quadratic:
            last[name] = (cpu, nm, f"{g.n} vertices, {g.m} arcs: {cpu:.1f} s cpu")
        elif sec > limit:
            skip.add(name)

    run("scipy_bellman_ford", lambda: csg.bellman_ford(A, indices=s), 1, True)
    run("scipy_johnson", lambda: csg.johnson(A, indices=s), 1, True)
    if not neg:
        run("scipy_dijkstra", lambda: csg.dijkstra(A, indices=s))
    try:
        import igraph as ig

        src, dst, w = g.edges()
        G = ig.Graph(n=g.n, edges=np.column_stack([src, dst]).tolist(), directed=True)
        G.es["weight"] = w.tolist()
        run("igraph_bellman_ford", lambda: np.asarray(G.distances(source=[s], weights="weight",
                                                                   algorithm="bellman_ford")[0]), 1)
        del G
    except ImportError:
        pass
    if g.m <= 2_000_000:
        import networkx as nx

        def nxrun():
            G = g.to_networkx()
            if not g.directed:
                G = G.to_directed()
            t0, c0 = time.perf_counter(), time.process_time()
            dd = nx.single_source_bellman_ford_path_length(G, s)
            nxrun.t, nxrun.c = time.perf_counter() - t0, time.process_time() - c0
            d = np.full(g.n, np.inf)
            d[list(dd.keys())] = list(dd.values())
            return d

        if "networkx_bellman_ford" in skip:
            res["networkx_bellman_ford"] = {"skipped": f"took > {limit} s on a smaller graph"}
        else:
            d = nxrun()
            res["networkx_bellman_ford"] = {"time_s": nxrun.t, "cpu_s": nxrun.c, "dist": d, "note": "graph conversion not timed"}
            if nxrun.t > limit:
                skip.add("networkx_bellman_ford")
    return res


def scipy_bound(case, seconds):
    """scipy's bellman_ford on ``case`` shifted, in a child limited to ``seconds`` of CPU."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(seconds), int(seconds) + 5))

    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "--scipy-only", case], capture_output=True, text=True,
                       preexec_fn=limit, env=dict(os.environ, OMP_NUM_THREADS="1"))
    wall = time.perf_counter() - t0
    if p.returncode == 0:
        return {"graph": case, "weights": "shifted", "finished": True, **json.loads(p.stdout.strip().splitlines()[-1])}
    return {"graph": case, "weights": "shifted", "finished": False, "cpu_limit_s": seconds, "wall_s": wall,
            "returncode": p.returncode, "note": "killed at the CPU limit (SIGXCPU) before finishing"}


def _scipy_only(case):
    import scipy.sparse.csgraph as csg

    from distgraph.generators import potential_shift

    base, s = build(case)
    A = potential_shift(base, seed=1).to_scipy(dtype=np.float64)
    t0, c0 = time.perf_counter(), time.process_time()
    csg.bellman_ford(A, indices=s)
    print(json.dumps({"time_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--scipy-only":
        return _scipy_only(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="kron:14,kron:16,road-NY,road-FLA")
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--peers", action="store_true", help="also time the peers (rank 0)")
    ap.add_argument("--peer-limit", type=float, default=300.0)
    ap.add_argument("--modes", default="all",
                    help="'all' or a comma list of rounds, async_bq_enqueue, async_bwd_enqueue, async_bq_atomic, "
                         "async_bwd_atomic, rounds_nofar")
    ap.add_argument("--scipy-bound", default=None, metavar="CASE:SECONDS",
                    help="also run scipy's bellman_ford on CASE (shifted) limited to SECONDS of CPU")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sssp_cpu.json"))
    args = ap.parse_args()

    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import bellman_ford
    from distgraph.generators import potential_shift

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    def mode_name(m):
        return m[0] if m[0].startswith("rounds") else f"async_{m[1]}_{m[2]}"

    modes = [m for m in MODES if args.modes == "all" or mode_name(m) in args.modes.split(",")]
    rows = []
    skip, last = set(), {}
    for case in args.cases.split(","):
        base, s = build(case)
        for wk in args.weights.split(","):
            g = base if wk == "uniform" else potential_shift(base, seed=1)
            bellman_ford(g, s, comm=comm, backend="cpu")  # warm-up: numba cache, page faults
            row = {"graph": case, "weights": wk, "vertices": g.n, "arcs": g.m, "source": s,
                   "negative_arcs": int((g.weights < 0).sum()), "ranks": size, "distgraph": {}}
            ref = None
            for mode, queue, remote in modes:
                if size == 1 and mode == "async" and (queue, remote) != ("bq", "enqueue"):
                    continue  # one rank: no queue traffic, the variants are the same run
                name = mode_name((mode, queue, remote))
                kw = {"mode": "rounds", "delta": 0} if mode == "rounds_nofar" else {"mode": mode}
                comm.Barrier()
                sec, cpu, r = best_of(lambda: bellman_ford(g, s, comm=comm, backend="cpu", queue=queue,
                                                           remote=remote, **kw),
                                      args.trials)
                sec = comm.allreduce(sec, op=MPI.MAX)
                cpu = comm.allreduce(cpu, op=MPI.MAX)
                d = np.where(r.reached, r.distance.astype(np.float64), np.inf)
                if ref is None:
                    ref = d
                row["distgraph"][name] = {"time_s": sec, "cpu_s_max_rank": cpu, "gteps": g.m / sec / 1e9,
                                          "relaxations": r.stats.get("relaxations"), "rounds": r.stats.get("rounds"),
                                          "delta": r.stats.get("delta"), "phases": r.stats.get("phases"),
                                          "same_as_rounds": bool(np.array_equal(d, ref))}
                if rank == 0:
                    print(f"{case} {wk} {size} rank(s) {name}: {sec:.4f} s (cpu {cpu:.4f} s), {g.m / sec / 1e9:.4f} GTEPS",
                          flush=True)
            if args.peers and rank == 0:
                pr = peers(g, s, args.trials, args.peer_limit, skip, last)
                ours = row["distgraph"]["rounds"]["time_s"]
                ours_cpu = row["distgraph"]["rounds"]["cpu_s_max_rank"]
                row["peers"] = {}
                for k, v in pr.items():
                    if "dist" in v:
                        v["matches_distgraph"] = bool(np.array_equal(np.asarray(v.pop("dist"), np.float64), ref))
                        v["ratio_vs_rounds"] = v["time_s"] / ours
                        v["cpu_ratio_vs_rounds"] = v["cpu_s"] / ours_cpu
                        print(f"{case} {wk} peer {k}: {v['time_s']:.3f} s, cpu {v['cpu_s']:.3f} s "
                              f"({v['ratio_vs_rounds']:.1f}x / cpu {v['cpu_ratio_vs_rounds']:.1f}x distgraph rounds),"
                              f" same distances: {v['matches_distgraph']}", flush=True)
                    row["peers"][k] = v
            rows.append(row)
            comm.Barrier()
    bound = None
    if args.scipy_bound and rank == 0:
        case, _, sec = args.scipy_bound.rpartition(":")
        bound = scipy_bound(case, float(sec))
        print("scipy bound:", bound, flush=True)
    if rank == 0:
        out = Path(args.out)
        doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "sssp_cpu", "runs": []}
        if bound is not None:
            doc.setdefault("scipy_bellman_ford_bounded", {})[bound["graph"]] = bound
        key = lambda r: (r["graph"], r["weights"], r["ranks"])  # noqa: E731
        old = {key(r): r for r in doc["runs"]}
        for r in rows:  # a run without --peers keeps the peers measured before, ratios redone
            prev = old.get(key(r), {})
            if "peers" not in r and "peers" in prev and "rounds" in r["distgraph"]:
                r["peers"] = prev["peers"]
                r["peers_from"] = prev.get("measured", "an earlier run")
                ours = r["distgraph"]["rounds"]
                for v in r["peers"].values():
                    if "time_s" in v:
                        v["ratio_vs_rounds"] = v["time_s"] / ours["time_s"]
                        v["cpu_ratio_vs_rounds"] = v["cpu_s"] / ours["cpu_s_max_rank"]
            r.setdefault("measured", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
            old[key(r)] = r
        doc["runs"] = list(old.values())
        doc.setdefault("machines", {})[f"ranks={size}"] = {
            "commit": commit(), "dirty": bool(_sh("git status --porcelain -- distgraph benchmarks/sssp_bench.py")),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu": _sh("lscpu | grep 'Model name' | sed 's/.*: *//'"), "cores": os.cpu_count(),
            "python": platform.python_version(), "mpi": MPI.Get_library_version().splitlines()[0],
            "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")},
            "loadavg": os.getloadavg(), "command": " ".join(sys.argv)}
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
