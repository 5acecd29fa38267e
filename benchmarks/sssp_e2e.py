"""Benchmark: ``bellman_ford()`` on the GPU end to end (issue 7), what a user's call costs:
the default ``mode="auto"`` with the graph's upload, the rounds' probe, the queue kernel when
it takes over, the finish (distances, and canonical predecessors with ``--predecessors``),
side by side with the CPU backend on one rank and scipy's Dijkstra (uniform weights: the
peer a user would pick when no weight is negative), on the same graph in the same run.

    python benchmarks/sssp_e2e.py --outdir DIR [--graphs road-FLA,kron:20,kron:22]
        [--weights uniform,shifted] [--trials 3] [--baseline TREE] [--no-cpu]

Graphs and weights as benchmarks/gpu_sssp.py builds them (``sssp_bench.build``: uniform
weights in [1, 255]; ``shifted``: potential-shifted, about 29% negative, no negative cycle;
the source is the largest out-degree vertex of a Kronecker graph, vertex 0 of a road).
Each graph is built once and saved as a .dgraph file (DIR/graphs/, removed at the end); the
GPU rows run in child processes that load it, each for one source tree: this one and, with
``--baseline TREE`` (a checkout of an older commit, e.g. made with ``git worktree add``), the
old code, so that ratios compare the two in the same run. A GPU row: best of ``--trials`` after a
warm-up call, wall time around ``bellman_ford(graph, source, backend="gpu")``, its stats
(setup, run, finish, auto's choice), and a SHA-1 of the distances (and predecessors), which
must equal the CPU backend's. The CPU backend's rows are one run each after a warm-up (seconds
per call on the largest graphs); scipy's Dijkstra is the best of ``--trials``. Writes DIR/sssp_e2e.json (commit, device, date).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _digest(a):
    return None if a is None else hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def child(args):
    """Times bellman_ford() from the tree it was started with (``--tree``), prints RESULT-JSON."""
    sys.path.insert(0, str(Path(args.tree).resolve()))
    from distgraph.algorithms.bellman_ford import bellman_ford
    from distgraph.formats.binary import load

    import distgraph

    g = load(args.graph_file, mmap=False)
    s = args.source
    out = {"tree": str(Path(args.tree).resolve()), "distgraph_file": distgraph.__file__}
    for pred in (False, True):
        bellman_ford(g, s, backend=args.backend, predecessors=pred)  # warm-up: kernels compiled or loaded
        times, res = [], None
        for _ in range(args.trials):
            t0 = time.perf_counter()
            res = bellman_ford(g, s, backend=args.backend, predecessors=pred)
            times.append(time.perf_counter() - t0)
        st = res.stats
        keep = ("mode", "time_setup_s", "time_run_s", "time_finish_s", "auto", "rounds", "relaxations", "phases",
                "canonical_predecessors")
        out["pred" if pred else "dist"] = {
            "time_s": min(times), "times_s": times, "gteps": g.m / min(times) / 1e9,
            "stats": {k: st[k] for k in keep if k in st},
            "distance_sha1": _digest(res.distance), "predecessor_sha1": _digest(res.predecessor)}
    print("RESULT-JSON " + json.dumps(out, default=float), flush=True)


def build(spec, weights, folder):
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from sssp_bench import build as build_case

    from distgraph.formats.binary import save
    from distgraph.generators import potential_shift

    t0 = time.perf_counter()
    g, s = build_case(spec)
    if weights == "shifted":
        g = potential_shift(g, seed=1)
    path = folder / f"{spec.replace(':', '')}_{weights}.dgraph"
    save(g, path)
    return g, s, path, time.perf_counter() - t0


def peers(g, s, weights, trials, no_cpu):
    """The CPU backend on one rank (this process) and scipy's Dijkstra (uniform weights)."""
    import scipy.sparse.csgraph as csg

    from distgraph.algorithms.bellman_ford import bellman_ford

    row = {}
    if no_cpu:
        return row, None
    bellman_ford(g, s, backend="cpu")  # numba compiles or loads its cache
    t = []
    ref = None
    for pred in (False, True):
        t0 = time.perf_counter()
        ref = bellman_ford(g, s, backend="cpu", predecessors=pred)
        t.append(time.perf_counter() - t0)
        row["cpu_1rank_pred" if pred else "cpu_1rank"] = {
            "time_s": t[-1], "distance_sha1": _digest(ref.distance), "predecessor_sha1": _digest(ref.predecessor)}
    if weights == "uniform":
        A = g.to_scipy(dtype=np.float64)
        best = None
        for _ in range(trials):
            t0 = time.perf_counter()
            d = csg.dijkstra(A, directed=True, indices=s)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        fin = np.isfinite(d)
        row["scipy_dijkstra"] = {"time_s": best, "same_as_cpu": bool(
            np.array_equal(fin, ref.reached) and np.array_equal(d[fin], ref.distance[fin].astype(np.float64)))}
    return row, ref


def run_child(tree, path, s, trials, timeout, backend):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--tree", str(tree), "--graph-file", str(path),
           "--source", str(s), "--trials", str(trials), "--backend", backend]
    from distgraph.testing import clean_mpi_env

    # a singleton MPI job of its own (no launcher variables inherited: under mpiexec the child's
    # MPI_Init would reach for its parent's PMI connection); distgraph from its tree only
    env = clean_mpi_env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve())] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p and Path(p).resolve() != ROOT])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT-JSON "):
            return json.loads(line[len("RESULT-JSON "):])
    return {"error": f"exit {r.returncode}: {(r.stderr or r.stdout)[-2000:]}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir")
    ap.add_argument("--graphs", default="road-FLA,kron:20,kron:22")
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--baseline", help="a checkout of an older commit, timed the same way in the same run")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU backend and scipy rows")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per child")
    ap.add_argument("--backend", default="gpu", help="the timed rows' backend (cpu: a smoke test of this script)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    ap.add_argument("--graph-file", help=argparse.SUPPRESS)
    ap.add_argument("--source", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.outdir:
        ap.error("--outdir is required")
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from _common import commit, sh

    out_dir = Path(args.outdir)
    gdir = out_dir / "graphs"
    gdir.mkdir(parents=True, exist_ok=True)
    res = {"benchmark": "sssp_e2e", "commit": commit(), "baseline_tree": args.baseline,
           "baseline_commit": (os.environ.get("BASELINE_COMMIT") or sh(f"git -C {args.baseline} rev-parse HEAD")
                               or "unknown") if args.baseline else None,
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "host_cpus": os.cpu_count(), "loadavg": list(os.getloadavg()),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "trials": args.trials, "command": " ".join(sys.argv), "runs": []}
    path_out = out_dir / "sssp_e2e.json"
    for spec in args.graphs.split(","):
        for weights in args.weights.split(","):
            g, s, path, build_s = build(spec, weights, gdir)
            row = {"graph": spec, "weights": weights, "vertices": g.n, "arcs": g.m, "source": s,
                   "build_s": build_s}
            print(f"{spec} {weights}: n={g.n} m={g.m}", flush=True)
            prow, ref = peers(g, s, weights, args.trials, args.no_cpu)
            row.update(prow)
            del g
            row["gpu"] = run_child(ROOT, path, s, args.trials, args.timeout, args.backend)
            if args.baseline:
                row["gpu_baseline"] = run_child(args.baseline, path, s, args.trials, args.timeout, args.backend)
            for key in ("gpu", "gpu_baseline"):
                r = row.get(key, {})
                for kind in ("dist", "pred"):
                    x = r.get(kind)
                    if not isinstance(x, dict):
                        continue
                    c = row.get("cpu_1rank_pred" if kind == "pred" else "cpu_1rank")
                    if c:
                        x["same_as_cpu"] = (x["distance_sha1"] == c["distance_sha1"]
                                            and (kind == "dist" or x["predecessor_sha1"] == c["predecessor_sha1"]))
                        x["speedup_vs_cpu_1rank"] = c["time_s"] / x["time_s"]
                    if kind == "dist" and "scipy_dijkstra" in row:
                        x["speedup_vs_scipy_dijkstra"] = row["scipy_dijkstra"]["time_s"] / x["time_s"]
                    b = row.get("gpu_baseline", {}).get(kind)
                    if key == "gpu" and isinstance(b, dict) and "time_s" in b:
                        x["speedup_vs_baseline"] = b["time_s"] / x["time_s"]
            print("  " + json.dumps({k: (v.get("time_s") if isinstance(v, dict) and "time_s" in v else
                                         {kk: vv.get("time_s") for kk, vv in v.items() if isinstance(vv, dict)}
                                         if isinstance(v, dict) else v)
                                     for k, v in row.items()}, default=float)[:600], flush=True)
            res["runs"].append(row)
            path.unlink(missing_ok=True)
            path_out.write_text(json.dumps(res, indent=1, default=float))
    try:
        gdir.rmdir()
    except OSError:
        pass
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
