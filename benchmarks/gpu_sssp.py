"""Benchmark: one-source SSSP with negative weights on the GPU (issue 7): the queue-driven
Bellman-Ford kernel (BQ and BWD) and the plain round-based CuPy Bellman-Ford, side by side
with distgraph's CPU backend and scipy, on the same graph in the same run.

    python benchmarks/gpu_sssp.py --outdir DIR [--graphs kron:20,kron:22,road-FLA]
        [--pes 1,2,4] [--pes-graph kron:16] [--cpu-ranks 16] [--trials 3]

Graphs (``benchmarks/sssp_bench.py``'s cases): ``kron:S`` (undirected Kronecker) and
``road-FLA`` (``$DISTGRAPH_DATA`` or ../shared/data), integer weights uniform in [1, 255]
(``uniform``) and the same weights potential-shifted (``shifted``: ``w + p(u) - p(v)``,
about 29% of the arcs negative, no negative cycle). One source: the vertex of largest
out-degree (Kronecker) or vertex 0 (roads).

Per graph and weights (best of ``--trials`` after a warm-up run; device arrays uploaded
once, not timed; GTEPS = stored arcs / seconds):

* ``gpu_queue_bq`` / ``gpu_queue_bwd``: :class:`QueueSSSP` on one PE (one kernel launch,
  plus host checks for negative cycles on shifted weights);
* ``gpu_rounds_cupy``: :func:`rounds_cupy`, the round-based baseline in plain CuPy;
* ``cpu_1rank``: distgraph's CPU backend (``rounds`` driver) in this process: one timed run
  after numba's compile on a tiny graph (not best of ``--trials``: a GPU row's
  ``speedup_vs_cpu_1rank`` may be overstated by the CPU's run-to-run spread);
* ``cpu_Nranks`` (``--cpu-ranks N`` on ``--cpu-ranks-graphs``/``--cpu-ranks-weights``,
  graphs up to 2**21 vertices): the same under ``mpirun -n N`` on this host's cores (each
  rank builds the graph; run time only);
* ``scipy_dijkstra``: on the uniform weights (on the shifted ones, Dijkstra on the
  unshifted weights plus potentials is the reference, timed the same);
  scipy ``bellman_ford``/``johnson`` are not run: both are O(n m) here (98 s and 116 s
  from one source on Kronecker scale 14, benchmarks/results/sssp_cpu.json).

Every distance vector is compared with the CPU backend's. ``--pes 1,2,4``: ``mpirun -n P``
workers run the NVSHMEM kernel (all four remote relaxation / queue variants) on
``--pes-graph`` with several PEs sharing the one GPU (limited MPG: the ratios show the
protocol's cost and check correctness; they are not multi-GPU scaling).
Writes DIR/gpu_sssp.json with commit, device and date (``--merge FILE`` keeps the rows of
an earlier file that this run does not redo).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from _common import commit, sh as _sh
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))



_BUILT: dict = {}


def case(spec, weights):
    """(graph, source, unshifted graph, potential or None); the base graph is built once."""
    from sssp_bench import build

    from distgraph.generators import potential_shift

    if spec not in _BUILT:
        _BUILT.clear()
        _BUILT[spec] = build(spec)
    base, s = _BUILT[spec]
    if weights == "uniform":
        return base, s, base, None
    g, p = potential_shift(base, seed=1, return_potential=True)
    return g, s, base, p


def best(fn, trials):
    out, times = None, []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, out


def bench_case(spec, weights, trials, cpu_ranks, row, cpu_weights=("uniform", "shifted")):
    import cupy as cp
    import scipy.sparse.csgraph as csg
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP, RoundsSSSP
    from distgraph.graph import Graph

    t0 = time.perf_counter()
    g, s, base, pot = case(spec, weights)
    row.update(vertices=g.n, arcs=g.m, source=s, negative_arcs=int((g.weights < 0).sum()),
               build_s=time.perf_counter() - t0)
    w = _arc_weights(g, None)
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    # CPU backend (one rank, this process)
    tiny = Graph.from_edges([0], [1], np.array([1], w.dtype))
    run_rounds(tiny, tiny.weights, 0, MPI.COMM_SELF, confirm)  # numba compiles or loads its cache
    t_cpu, times, out = best(lambda: run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=False), 1)
    ref = out[0]
    row["cpu_1rank"] = {"time_s": t_cpu, "gteps": g.m / t_cpu / 1e9, "relaxations": out[2]["relaxations"],
                        "rounds": out[2]["rounds"]}
    print(f"  cpu 1 rank {t_cpu:.3f} s", flush=True)
    # scipy reference (Dijkstra on the unshifted weights)
    t_sp, _, dd = best(lambda: csg.dijkstra(base.to_scipy(dtype=np.float64), indices=s), 1)
    fin = np.isfinite(dd)
    expect = np.full(g.n, np.iinfo(np.int64).max, np.int64)
    expect[fin] = dd[fin].astype(np.int64) + (0 if pot is None else pot[s] - pot[fin])
    row["scipy_dijkstra"] = {"time_s": t_sp, "on": "uniform weights" if pot is None else
                             "the unshifted weights (+ potentials = the reference)",
                             "matches_cpu": bool(np.array_equal(expect, ref))}
    row["scipy_bellman_ford"] = {"skipped": "O(n m): 98 s from one source on kron:14 (sssp_cpu.json)"}
    # GPU
    runners = {"gpu_queue_bq": lambda: QueueSSSP(g, w, MPI.COMM_SELF, queue="bq"),
               "gpu_queue_bwd": lambda: QueueSSSP(g, w, MPI.COMM_SELF, queue="bwd"),
               "gpu_rounds_cupy": lambda: RoundsSSSP(g, w, MPI.COMM_SELF)}
    for name, make in runners.items():
        try:
            r = make()
            r.run(s, confirm)  # warm-up (kernel compile / load)
            t, times, out = best(lambda: r.run(s, confirm), trials)
            cp.cuda.Device().synchronize()
            st = out[2]
            row[name] = {"time_s": t, "times_s": times, "gteps": g.m / t / 1e9, "same_as_cpu": bool(np.array_equal(out[0], ref)),
                         "relaxations": st.get("relaxations"), "setup_s": st.get("time_setup_s"),
                         "kernel_or_loop_s": st.get("time_run_s"),
                         **{k: st[k] for k in ("launches", "checks", "items", "grid", "rounds") if k in st},
                         "speedup_vs_cpu_1rank": t_cpu / t}
            r.close()
            del r
        except Exception as e:  # one runner failing must not lose the others' numbers
            row[name] = {"error": repr(e)[:2000]}
        print(f"  {name} {json.dumps(row[name], default=float)[:300]}", flush=True)
    if "time_s" in row.get("gpu_rounds_cupy", {}):
        for q in ("gpu_queue_bq", "gpu_queue_bwd"):
            if "time_s" in row.get(q, {}):
                row[q]["speedup_vs_rounds_cupy"] = row["gpu_rounds_cupy"]["time_s"] / row[q]["time_s"]
    if cpu_ranks and g.n <= 1 << 21 and weights in cpu_weights:
        row[f"cpu_{cpu_ranks}ranks"] = mpirun_json(cpu_ranks, ["--worker-cpu", spec, weights], 180)
        if "time_s" in row[f"cpu_{cpu_ranks}ranks"]:
            row[f"cpu_{cpu_ranks}ranks"]["gteps"] = g.m / row[f"cpu_{cpu_ranks}ranks"]["time_s"] / 1e9
        print(f"  cpu {cpu_ranks} ranks {row[f'cpu_{cpu_ranks}ranks']}", flush=True)


def mpirun_json(n, args, timeout):
    mpirun = os.environ.get("MPIRUN", "/usr/bin/mpirun")
    env = [x for v in ("PYTHONPATH", "NVSHMEM_DISABLE_NVLS", "NVSHMEM_REMOTE_TRANSPORT", "NVSHMEM_SYMMETRIC_SIZE",
                       "DISTGRAPH_HANG_TIMEOUT", "DISTGRAPH_DATA", "DISTGRAPH_CACHE_DIR") if v in os.environ
           for x in ("-x", v)]
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(n)] + env + [sys.executable, __file__] + args
    from distgraph.testing import clean_mpi_env

    try:
        # clean_mpi_env: this process started MPI (singleton); a child mpirun that inherits the
        # singleton's variables exits at once without a word (the first H200 run lost these rows)
        pr = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_mpi_env())
        line = [x for x in pr.stdout.splitlines() if x.startswith("RESULT-JSON ")]
        return json.loads(line[-1][12:]) if line else \
            {"error": f"exit status {pr.returncode}: " + (pr.stderr + pr.stdout)[-2000:]}
    except Exception as e:
        return {"error": repr(e)}


def worker_cpu(spec, weights):
    """Under mpirun: the CPU backend's rounds driver on all ranks (rank 0 prints JSON)."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.cpu.bellman_ford import run_rounds

    comm = MPI.COMM_WORLD
    g, s, _, _ = case(spec, weights)
    w = _arc_weights(g, None)
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    run_rounds(g, w, s, comm, confirm, predecessors=False)
    times = []
    for _ in range(2):
        comm.Barrier()
        t0 = time.perf_counter()
        _, _, st, _ = run_rounds(g, w, s, comm, confirm, predecessors=False)
        comm.Barrier()
        times.append(time.perf_counter() - t0)
    if comm.Get_rank() == 0:
        print("RESULT-JSON " + json.dumps({"time_s": min(times), "times_s": times, "ranks": comm.Get_size(),
                                            "rounds": st["rounds"]}))


def worker_pes(spec, weights, trials):
    """Under mpirun: the NVSHMEM kernel, every variant, on all PEs (rank 0 prints JSON)."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP
    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    get_context(comm, "gpu")
    pg = get_pgas(comm, "gpu")
    g, s, _, _ = case(spec, weights)
    w = _arc_weights(g, None)
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    ref = run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=False)[0]
    res = {"graph": spec, "weights": weights, "pes": comm.Get_size(), "vertices": g.n, "arcs": g.m,
           "limited_mpg": bool(pg.limited_mpg)}
    for queue in ("bq", "bwd"):
        for remote in ("atomic", "enqueue"):
            name = f"{queue}_{remote}"
            try:
                q = QueueSSSP(g, w, comm, queue=queue, remote=remote, use_nvshmem=True)
                q.run(s, confirm)
                times = []
                for _ in range(trials):
                    comm.Barrier()
                    t0 = time.perf_counter()
                    d, _, st, _ = q.run(s, confirm)
                    comm.Barrier()
                    times.append(time.perf_counter() - t0)
                q.close()
                same = all(comm.allgather(bool(np.array_equal(d, ref))))
                res[name] = {"time_s": min(times), "times_s": times, "same_as_cpu": same,
                             "relaxations": st["relaxations"], "items": st["items"], "launches": st["launches"]}
            except Exception as e:
                res[name] = {"error": repr(e)[:1500]}
    if comm.Get_rank() == 0:
        print("RESULT-JSON " + json.dumps(res, default=float))
    pg.finalize()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--graphs", default=os.environ.get("BENCH_GPU_SSSP_GRAPHS", "kron:20,road-FLA,kron:22"))
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--trials", type=int, default=int(os.environ.get("BENCH_GPU_SSSP_TRIALS", 3)))
    ap.add_argument("--cpu-ranks", type=int, default=int(os.environ.get("BENCH_GPU_SSSP_CPU_RANKS", 16)))
    ap.add_argument("--cpu-ranks-graphs", default="kron:20", help="graphs of the --cpu-ranks runs")
    ap.add_argument("--cpu-ranks-weights", default="uniform,shifted", help="weights of the --cpu-ranks runs")
    ap.add_argument("--pes", default=os.environ.get("BENCH_GPU_SSSP_PES", "1,2,4"))
    ap.add_argument("--pes-weights", default="shifted,uniform")
    ap.add_argument("--pes-trials", type=int, default=2)
    ap.add_argument("--pes-graph", default=os.environ.get("BENCH_GPU_SSSP_PES_GRAPH", "kron:16"))
    ap.add_argument("--merge", metavar="FILE", default=None,
                    help="start from this earlier gpu_sssp.json: its rows for other graphs/weights/PE counts are kept")
    ap.add_argument("--worker-cpu", nargs=2, metavar=("GRAPH", "WEIGHTS"))
    ap.add_argument("--worker-pes", nargs=2, metavar=("GRAPH", "WEIGHTS"))
    a = ap.parse_args(argv)
    if a.worker_cpu:
        return worker_cpu(*a.worker_cpu) or 0
    if a.worker_pes:
        return worker_pes(*a.worker_pes, a.trials) or 0
    import cupy as cp

    outdir = Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / "gpu_sssp.json"
    results = {"benchmark": "gpu_sssp",
               "commit": commit(),
               "device": _sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
               "host_cpus": os.cpu_count(), "loadavg": list(os.getloadavg()),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "cupy": cp.__version__, "trials": a.trials, "runs": [], "pes": {}}
    if a.merge:
        old = json.loads(Path(a.merge).read_text())
        ours = {(g, w) for g in a.graphs.split(",") for w in a.weights.split(",")}
        results["merged_from"] = {k: old.get(k) for k in ("commit", "date", "device")}
        results["runs"] = [r for r in old.get("runs", []) if (r["graph"], r["weights"]) not in ours]
        results["pes"] = dict(old.get("pes", {}))
    for spec in [x for x in a.graphs.split(",") if x]:
        for wk in [x for x in a.weights.split(",") if x]:
            row = {"graph": spec, "weights": wk}
            print(spec, wk, flush=True)
            try:
                bench_case(spec, wk, a.trials, a.cpu_ranks if spec in a.cpu_ranks_graphs.split(",") else 0, row,
                           a.cpu_ranks_weights.split(","))
            except Exception as e:
                row["error"] = repr(e)[:2000]
                print("  error", row["error"], flush=True)
            results["runs"].append(row)
            path.write_text(json.dumps(results, indent=1, default=float))
    for p in [int(x) for x in a.pes.split(",") if x]:
        for wk in [x for x in a.pes_weights.split(",") if x]:
            r = mpirun_json(p, ["--worker-pes", a.pes_graph, wk, "--trials", str(a.pes_trials)], 240)
            results["pes"][f"{p}_{wk}"] = r
            print("pes", p, wk, json.dumps(r, default=float)[:600], flush=True)
            path.write_text(json.dumps(results, indent=1, default=float))
    results["loadavg_end"] = list(os.getloadavg())
    path.write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
