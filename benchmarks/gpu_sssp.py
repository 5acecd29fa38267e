"""Benchmark: one-source SSSP with negative weights on the GPU (issue 7): the queue-driven
Bellman-Ford kernel (near-far priority on, and off = plain FIFO) and the plain round-based
CuPy Bellman-Ford, side by side with distgraph's CPU backend (1 and N ranks) and scipy, on
the same graph in the same run.

    python benchmarks/gpu_sssp.py --outdir DIR [--graphs road-FLA,kron:20,kron:21,kron:22]
        [--queues bwd] [--delta-factors 0,0.25,4] [--cpu-ranks 16] [--trials 3]
        [--wait-for FILE] [--deadline S] [--pes 1,2,4] [--merge OLD.json]

Graphs (``benchmarks/sssp_bench.py``'s cases): ``kron:S`` (undirected Kronecker) and
``road-FLA`` (``$DISTGRAPH_DATA`` or ../shared/data), integer weights uniform in [1, 255]
(``uniform``) and the same weights potential-shifted (``shifted``: ``w + p(u) - p(v)``,
about 29% of the arcs negative, no negative cycle). One source: the vertex of largest
out-degree (Kronecker) or vertex 0 (roads).

Order: every graph's CPU rows first (so GPU tests may share the machine meanwhile:
``--wait-for`` a file they touch when done), then the GPU rows, then the N-rank CPU rows.
Per graph and weights (best of ``--trials`` after a warm-up run; device arrays uploaded
once, not timed; GTEPS = stored arcs / seconds; relaxations_per_arc = arcs scanned / arcs):

* ``gpu_queue_bwd`` (``gpu_queue_bq``): :class:`QueueSSSP` on one PE with its defaults;
  ``..._sweep`` the same object with delta = factor x the default delta
  (``--delta-factors``), keep on/off (``--keeps``), idle sleep caps (``--idles``) and hub
  chunk sizes (``--splits``) on ``--sweep-graphs``; ``..._fifo`` the run with delta 0, keep
  off, 2048 ns, no chunks (none of the schedule changes: every improved vertex through the
  FIFO queue, one warp per vertex), ``speedup_vs_fifo`` the defaults' gain over it;
* ``gpu_rounds_cupy``: :func:`rounds_cupy`, the round-based baseline in plain CuPy
  (``--rounds-trials`` timed runs);
* ``cpu_1rank``: distgraph's CPU backend (``rounds`` driver: on one rank a worklist) in
  this process, after numba's compile on a tiny graph: best of 3 runs below 10**7 arcs,
  one run above;
* ``cpu_Nranks`` (``--cpu-ranks N`` on ``--cpu-ranks-cases``): the same under
  ``mpirun -n N`` on this host's cores (each rank builds the graph; run time only, best of
  2 after a warm-up); skipped past ``--deadline``;
* ``scipy_dijkstra`` (``--scipy-graphs``): on the uniform weights (on the shifted ones,
  Dijkstra on the unshifted weights plus potentials is the reference, timed the same);
  scipy ``bellman_ford``/``johnson`` are not run: both are O(n m) here (98 s and 116 s
  from one source on Kronecker scale 14 on the 2-core VM, benchmarks/results/sssp_cpu.json,
  quoted under ``scipy_bellman_ford_reference``).

Every distance vector is compared with the CPU backend's. ``--pes 1,2,4``: ``mpirun -n P``
workers run the NVSHMEM kernel (all four remote relaxation / queue variants) on
``--pes-graph`` with several PEs sharing the one GPU (limited MPG: the ratios show the
protocol's cost and check correctness; they are not multi-GPU scaling).
Writes DIR/gpu_sssp.json with commit, device and date (``--merge FILE`` keeps the rows of
an earlier file that this run does not redo, each marked with its ``measured_at_commit``, as
are the ``pes`` rows; a row whose rerun failed keeps its old numbers, the failure under
``failed_later``).
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
    """(graph, source, unshifted graph, potential or None); every graph is built once and kept
    (the CPU rows of all graphs come first, then the GPU rows)."""
    from sssp_bench import build

    from distgraph.generators import potential_shift

    if spec not in _BUILT:
        _BUILT[spec] = build(spec)
    base, s = _BUILT[spec]
    if weights == "uniform":
        return base, s, base, None
    key = (spec, "shifted")
    if key not in _BUILT:
        _BUILT[key] = potential_shift(base, seed=1, return_potential=True)
    g, p = _BUILT[key]
    return g, s, base, p


def best(fn, trials):
    out, times = None, []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, out


_REF: dict = {}


def cpu_part(spec, weights, row, scipy_graphs):
    """Graph, the CPU backend on one rank (this process) and scipy's Dijkstra reference."""
    import scipy.sparse.csgraph as csg
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.graph import Graph

    t0 = time.perf_counter()
    g, s, base, pot = case(spec, weights)
    row.update(vertices=g.n, arcs=g.m, source=s, negative_arcs=int((g.weights < 0).sum()),
               build_s=time.perf_counter() - t0)
    w = _arc_weights(g, None)
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    tiny = Graph.from_edges([0], [1], np.array([1], w.dtype))
    run_rounds(tiny, tiny.weights, 0, MPI.COMM_SELF, confirm)  # numba compiles or loads its cache
    trials = 3 if g.m < 10 ** 7 else 1
    t_cpu, times, out = best(lambda: run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=False), trials)
    _REF[(spec, weights)] = out[0]
    row["cpu_1rank"] = {"time_s": t_cpu, "times_s": times, "gteps": g.m / t_cpu / 1e9,
                        "relaxations": out[2]["relaxations"], "relaxations_per_arc": out[2]["relaxations"] / g.m,
                        "rounds": out[2]["rounds"]}
    print(f"  cpu 1 rank {t_cpu:.3f} s", flush=True)
    if spec in scipy_graphs:
        # scipy reference (Dijkstra on the unshifted weights: + potentials on the shifted ones)
        t_sp, _, dd = best(lambda: csg.dijkstra(base.to_scipy(dtype=np.float64), indices=s), 1)
        fin = np.isfinite(dd)
        expect = np.full(g.n, np.iinfo(np.int64).max, np.int64)
        expect[fin] = dd[fin].astype(np.int64) + (0 if pot is None else pot[s] - pot[fin])
        row["scipy_dijkstra"] = {"time_s": t_sp, "on": "uniform weights" if pot is None else
                                 "the unshifted weights (+ potentials = the reference)",
                                 "matches_cpu": bool(np.array_equal(expect, out[0]))}
    else:
        row["scipy_dijkstra"] = {"skipped": "not in --scipy-graphs (device time)"}
    row["scipy_bellman_ford"] = {"skipped": "O(n m): 98 s from one source on kron:14 (sssp_cpu.json); see "
                                            "scipy_bellman_ford_reference"}


def gpu_part(spec, weights, trials, row, queues, factors, rounds_trials, keeps=(True, False), idles=(2048,),
             splits=(4096,)):
    """The queue kernel (defaults, and the schedule sweep: delta = factor x the default delta,
    0 = FIFO; keep on/off; idle sleep cap) and the CuPy rounds, each compared with the CPU
    row's distances."""
    import cupy as cp
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.gpu.bellman_ford import QueueSSSP, RoundsSSSP

    g, s, _, _ = case(spec, weights)
    w = _arc_weights(g, None)
    ref = _REF[(spec, weights)]
    t_cpu = row["cpu_1rank"]["time_s"]
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731

    def record(t, times, out):
        st = out[2]
        rel = st.get("relaxations")
        return {"time_s": t, "times_s": times, "gteps": g.m / t / 1e9, "same_as_cpu": bool(np.array_equal(out[0], ref)),
                "relaxations": rel, "relaxations_per_arc": None if rel is None else rel / g.m,
                "setup_s": st.get("time_setup_s"), "kernel_or_loop_s": st.get("time_run_s"),
                **{k: st[k] for k in ("launches", "checks", "items", "grid", "rounds", "delta", "phases", "keep",
                                      "idle_ns", "split") if k in st},
                "speedup_vs_cpu_1rank": t_cpu / t}

    for queue in queues:
        name = f"gpu_queue_{queue}"
        r = None
        try:
            r = QueueSSSP(g, w, MPI.COMM_SELF, queue=queue)
            auto = r.delta
            r.run(s, confirm)  # warm-up (kernel compile / load)
            row[name] = record(*best(lambda: r.run(s, confirm), trials))
        except Exception as e:  # one runner failing must not lose the others' numbers
            row[name] = {"error": repr(e)[:2000]}
        if factors and "time_s" in row[name]:
            # a failing sweep run keeps the defaults' row and the sweep's runs so far
            sweep = row[name + "_sweep"] = []
            try:
                maxdeg = int(np.diff(g.indptr).max()) if g.n else 0
                on = [x for x in splits if x > 0]
                if on and min(on) < r.split:  # the queue holds 2 * arcs / split chunks: size it anew
                    r.close()
                    r = None
                    r = QueueSSSP(g, w, MPI.COMM_SELF, queue=queue, split=min(on))
                    r.run(s, confirm)
                for split in splits:
                    if on and split not in on[:1] and maxdeg <= min(on):
                        continue  # no vertex is split at any of these sizes: same runs again
                    for keep in keeps:
                        for idle in idles:
                            for f in factors:
                                r.set_delta(f * auto)
                                r.keep, r.idle_ns, r.split = keep, idle, split
                                rec = record(*best(lambda: r.run(s, confirm), trials))
                                rec["factor"] = f
                                sweep.append(rec)
                                if f == 0 and not keep and idle == 2048 and (split == 0 or maxdeg <= split):
                                    row[name + "_fifo"] = rec
            except Exception as e:
                row[name + "_sweep_error"] = repr(e)[:2000]
        if r is not None:
            r.close()
        del r
        print(f"  {name} {json.dumps(row[name], default=float)[:300]}", flush=True)
    try:
        r = RoundsSSSP(g, w, MPI.COMM_SELF, engine="cupy")  # the plain CuPy baseline
        r.run(s, confirm)
        row["gpu_rounds_cupy"] = record(*best(lambda: r.run(s, confirm), rounds_trials))
        cp.cuda.Device().synchronize()
        del r
    except Exception as e:
        row["gpu_rounds_cupy"] = {"error": repr(e)[:2000]}
    print(f"  gpu_rounds_cupy {json.dumps(row['gpu_rounds_cupy'], default=float)[:300]}", flush=True)
    try:
        # the API's default (mode="auto"): the rounds for at most 64 rounds, then the queue
        # kernel from scratch; end to end, setup of both included (what a user's call costs)
        from distgraph.algorithms.bellman_ford import bellman_ford, unreachable

        reached = ref != unreachable(ref.dtype)

        bellman_ford(g, s, backend="gpu", comm=MPI.COMM_SELF)  # warm-up
        t, times, res = best(lambda: bellman_ford(g, s, backend="gpu", comm=MPI.COMM_SELF), trials)
        row["gpu_auto_api"] = {"time_s": t, "times_s": times, "gteps": g.m / t / 1e9,
                               # the API gives unreached vertices unreachable(dtype) of the weights'
                               # dtype, the backend's CPU row its own sentinel: compare reached sets
                               "same_as_cpu": bool(np.array_equal(res.distance == unreachable(res.distance.dtype),
                                                                  ~reached)
                                                   and np.array_equal(res.distance[reached], ref[reached])),
                               "ran": res.stats.get("mode"), "auto": res.stats.get("auto"),
                               "speedup_vs_cpu_1rank": t_cpu / t}
    except Exception as e:
        row["gpu_auto_api"] = {"error": repr(e)[:2000]}
    print(f"  gpu_auto_api {json.dumps(row['gpu_auto_api'], default=float)[:300]}", flush=True)
    if "time_s" in row.get("gpu_rounds_cupy", {}):
        for k, v in row.items():
            if k.startswith("gpu_queue") and isinstance(v, dict) and "time_s" in v:
                v["speedup_vs_rounds_cupy"] = row["gpu_rounds_cupy"]["time_s"] / v["time_s"]
    for queue in queues:
        q, f = row.get(f"gpu_queue_{queue}", {}), row.get(f"gpu_queue_{queue}_fifo", {})
        if "time_s" in q and "time_s" in f:
            q["speedup_vs_fifo"] = f["time_s"] / q["time_s"]


def ratios_vs_ranks(row, key):
    """Speed-ups of the GPU rows over the CPU row ``key`` (e.g. cpu_16ranks)."""
    c = row.get(key, {})
    if "time_s" not in c:
        return
    for k, v in row.items():
        if k.startswith("gpu_") and isinstance(v, dict) and "time_s" in v:
            v[f"speedup_vs_{key}"] = c["time_s"] / v["time_s"]


def scipy_reference():
    """scipy's bellman_ford/johnson from one source where they finished (committed CPU runs)."""
    try:
        d = json.loads((ROOT / "benchmarks" / "results" / "sssp_cpu.json").read_text())
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}
    out = {"note": "scipy.sparse.csgraph bellman_ford and johnson are O(n m) from one source: not run here "
                   "(kron:20 and up, road-FLA would take hours); their times on the 2-core VM of "
                   "benchmarks/results/sssp_cpu.json are quoted, with this run's GPU time on the same graph "
                   "where it ran (different machines: the ratio is indicative)",
           "runs": {}}
    for r in d.get("runs", []):
        if r.get("ranks") == 1 and r["graph"] in ("kron:12", "kron:14"):
            p = r.get("peers", {})
            out["runs"][f"{r['graph']}_{r['weights']}"] = {
                k: p[k]["time_s"] for k in ("scipy_bellman_ford", "scipy_johnson") if p.get(k, {}).get("time_s")}
    out["kron:16_shifted"] = d.get("scipy_bellman_ford_bounded", {}).get("kron:16")
    return out


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
    except subprocess.TimeoutExpired as e:  # keep what the ranks printed (their progress lines)
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stderr, e.stdout))
        return {"error": f"timed out after {timeout} s", "output_tail": out[-3000:]}
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
                                            "rounds": st["rounds"], "relaxations": st["relaxations"],
                                            "relaxations_per_arc": st["relaxations"] / g.m}))


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
            row = name
            q = None
            try:
                t0 = time.perf_counter()
                q = QueueSSSP(g, w, comm, queue=queue, remote=remote, use_nvshmem=True)
                t1 = time.perf_counter()
                q.run(s, confirm)
                if comm.Get_rank() == 0:  # progress, kept by mpirun_json if the run times out
                    print(f"{name}: setup {t1 - t0:.2f} s, warm-up run {time.perf_counter() - t1:.3f} s",
                          file=sys.stderr, flush=True)
                def timed_runs():
                    times = []
                    for _ in range(trials):
                        comm.Barrier()
                        t0 = time.perf_counter()
                        d, _, st, _ = q.run(s, confirm)
                        comm.Barrier()
                        times.append(time.perf_counter() - t0)
                    return times, all(comm.allgather(bool(np.array_equal(d, ref)))), st

                times, same, st = timed_runs()
                # delta/phases: one PE runs the near-far priority, several PEs a FIFO queue
                res[name] = {"time_s": min(times), "times_s": times, "same_as_cpu": same,
                             "relaxations": st["relaxations"], "items": st["items"], "launches": st["launches"],
                             **{k: st.get(k) for k in ("delta", "phases", "keep", "split", "ghost")}}
                if comm.Get_size() > 1:
                    # the same without the ghost keys of remote heads (every remote candidate sent)
                    row = name + "_noghost"
                    q.ghost = False
                    times, same, st = timed_runs()
                    res[row] = {"time_s": min(times), "times_s": times, "same_as_cpu": same,
                                "items": st["items"], "launches": st["launches"]}
            except Exception as e:
                # the row that failed (a failure without ghost keys keeps the row with them)
                res[row] = {"error": repr(e)[:1500]}
            finally:
                if q is not None:
                    q.close()  # collective: the symmetric arrays of a failed variant too
    if comm.Get_rank() == 0:
        print("RESULT-JSON " + json.dumps(res, default=float))
    pg.finalize()


def main(argv=None):
    t_start = time.monotonic()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--graphs", default=os.environ.get("BENCH_GPU_SSSP_GRAPHS", "road-FLA,kron:20,kron:21,kron:22"))
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--trials", type=int, default=int(os.environ.get("BENCH_GPU_SSSP_TRIALS", 3)))
    ap.add_argument("--rounds-trials", type=int, default=None,
                    help="timed runs of the CuPy rounds (default --trials; 1 saves time on road graphs)")
    ap.add_argument("--queues", default="bwd", help="queue kernels timed: bq, bwd or both")
    ap.add_argument("--delta-factors", default="0,1,4",
                    help="schedule sweep: delta = factor x the default (0: FIFO, no near-far)")
    ap.add_argument("--keeps", default="1,0", help="schedule sweep: keep on (1) / off (0)")
    ap.add_argument("--idles", default="2048,256", help="schedule sweep: idle sleep caps (ns)")
    ap.add_argument("--splits", default="4096,0", help="schedule sweep: arcs per chunk of a large vertex (0: off)")
    ap.add_argument("--sweep-graphs", default="road-FLA,kron:20", help="graphs of the delta sweep")
    ap.add_argument("--scipy-graphs", default="road-FLA,kron:20", help="graphs with a scipy Dijkstra row")
    ap.add_argument("--cpu-ranks", type=int, default=int(os.environ.get("BENCH_GPU_SSSP_CPU_RANKS", 16)))
    ap.add_argument("--cpu-ranks-cases", default="kron:20/uniform,road-FLA/uniform,kron:20/shifted",
                    help="GRAPH/WEIGHTS runs of the --cpu-ranks rows, in this order (after the GPU rows)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds from the start after which the --cpu-ranks rows still to come are skipped "
                         "(one started before it gets at most 30 s more)")
    ap.add_argument("--wait-for", metavar="FILE", default=None,
                    help="before the GPU rows, wait (at most --wait-max s) until FILE exists (tests sharing the GPU)")
    ap.add_argument("--wait-max", type=float, default=300.0)
    ap.add_argument("--pes", default=os.environ.get("BENCH_GPU_SSSP_PES", ""))
    ap.add_argument("--pes-weights", default="shifted,uniform")
    ap.add_argument("--pes-trials", type=int, default=2)
    ap.add_argument("--pes-timeout", type=float, default=240.0, help="seconds of one --pes run (all variants)")
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
    queues = [q for q in a.queues.split(",") if q]
    factors = [float(x) for x in a.delta_factors.split(",") if x]
    results = {"benchmark": "gpu_sssp",
               "commit": commit(),
               "device": _sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
               "host_cpus": os.cpu_count(), "loadavg": list(os.getloadavg()),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "cupy": cp.__version__, "trials": a.trials, "command": " ".join(sys.argv),
               "scipy_bellman_ford_reference": scipy_reference(), "runs": [], "pes": {}}
    redone = {}  # (graph, weights): the merged file's row that this run measures again
    if a.merge:
        old = json.loads(Path(a.merge).read_text())
        ours = {(g, w) for g in a.graphs.split(",") for w in a.weights.split(",")}
        results["merged_from"] = {k: old.get(k) for k in ("commit", "date", "device")}
        for r in old.get("runs", []):
            r.setdefault("measured_at_commit", old.get("commit"))
        results["runs"] = [r for r in old.get("runs", []) if (r["graph"], r["weights"]) not in ours]
        redone = {(r["graph"], r["weights"]): r for r in old.get("runs", []) if (r["graph"], r["weights"]) in ours}
        results["pes"] = dict(old.get("pes", {}))
        for r in results["pes"].values():  # one pes_commit cannot date rows of two runs
            if isinstance(r, dict):
                r.setdefault("measured_at_commit", old.get("pes_commit", old.get("commit")))
        if old.get("pes"):
            results["pes_commit"] = old.get("pes_commit", old.get("commit"))
    save = lambda: path.write_text(json.dumps(results, indent=1, default=float))  # noqa: E731
    rows = []
    # CPU rows first (they may overlap GPU tests: --wait-for), then the GPU rows
    for spec in [x for x in a.graphs.split(",") if x]:
        for wk in [x for x in a.weights.split(",") if x]:
            row = {"graph": spec, "weights": wk}
            print(spec, wk, "(cpu)", flush=True)
            try:
                cpu_part(spec, wk, row, a.scipy_graphs.split(","))
            except Exception as e:
                row["error"] = repr(e)[:2000]
                print("  error", row["error"], flush=True)
            rows.append(row)
            prev = redone.get((spec, wk))
            if "error" in row and prev is not None:  # a failed rerun does not erase the old numbers
                prev["failed_later"] = {"commit": results["commit"], "error": row["error"]}
                results["runs"].append(prev)
            else:
                results["runs"].append(row)
            save()
    if a.wait_for:
        t0 = time.monotonic()
        while not Path(a.wait_for).exists() and time.monotonic() - t0 < a.wait_max:
            time.sleep(0.5)
        results["waited_for_tests_s"] = time.monotonic() - t0
    results["loadavg_gpu_rows"] = list(os.getloadavg())
    for row in rows:
        if "error" in row:
            continue
        print(row["graph"], row["weights"], "(gpu)", flush=True)
        try:
            gpu_part(row["graph"], row["weights"], a.trials, row, queues,
                     factors if row["graph"] in a.sweep_graphs.split(",") else [],
                     a.rounds_trials or a.trials, [bool(int(x)) for x in a.keeps.split(",") if x],
                     [int(x) for x in a.idles.split(",") if x], [int(x) for x in a.splits.split(",") if x])
        except Exception as e:
            row["error_gpu"] = repr(e)[:2000]
            print("  error", row["error_gpu"], flush=True)
        save()
    ref = results["scipy_bellman_ford_reference"].get("runs", {})
    for row in rows:  # scipy's committed times (2-core VM) over this run's, where the graph is the same
        sp = ref.get(f"{row['graph']}_{row['weights']}")
        if sp:
            row["scipy_bellman_ford"] = {"time_s_on_2core_vm": sp, "ratio_over_this_run": {
                f"{peer}/{k}": t / v["time_s"] for peer, t in sp.items() for k, v in row.items()
                if (k.startswith("gpu_") or k == "cpu_1rank") and isinstance(v, dict) and "time_s" in v}}
    results["loadavg_cpu_ranks_rows"] = list(os.getloadavg())
    if a.cpu_ranks:
        key = f"cpu_{a.cpu_ranks}ranks"
        for c in [x for x in a.cpu_ranks_cases.split(",") if x]:
            spec, wk = c.split("/")
            row = next((r for r in rows if r["graph"] == spec and r["weights"] == wk), None)
            if row is None:
                continue
            if a.deadline is not None and time.monotonic() - t_start > a.deadline:
                row[key] = {"skipped": "the device call's time budget"}
                continue
            left = 90 if a.deadline is None else a.deadline + 30 - (time.monotonic() - t_start)
            row[key] = mpirun_json(a.cpu_ranks, ["--worker-cpu", spec, wk], max(min(90, left), 5))
            if "time_s" in row[key]:
                row[key]["gteps"] = row["arcs"] / row[key]["time_s"] / 1e9
                ratios_vs_ranks(row, key)
            print(f"  {spec} {wk} cpu {a.cpu_ranks} ranks {row[key]}", flush=True)
            save()
    for p in [int(x) for x in a.pes.split(",") if x]:
        for wk in [x for x in a.pes_weights.split(",") if x]:
            r = mpirun_json(p, ["--worker-pes", a.pes_graph, wk, "--trials", str(a.pes_trials)], a.pes_timeout)
            r["measured_at_commit"] = results["commit"]
            results["pes"][f"{p}_{wk}"] = r
            results["pes_commit"] = results["commit"]
            print("pes", p, wk, json.dumps(r, default=float)[:600], flush=True)
            save()
    results["loadavg_end"] = list(os.getloadavg())
    results["wall_s"] = time.monotonic() - t_start
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
