"""Benchmark: the NVSHMEM Bellman-Ford (issue 7) on 1 and several PEs, remote relaxations old
(``atomic``, ``enqueue``, both with ghost keys; ``atomic_fetch``) against new (``batch``: coalesced per vertex,
shipped by one put per batch), on Kronecker graphs with uniform [1, 255] and potential-shifted
weights (``w + p(u) - p(v)``, about 29% negative, no negative cycle).

    python benchmarks/gpu_sssp_pes.py --prep DIR [--graphs kron:18,kron:20,kron:22] [--weights uniform,shifted]
    python benchmarks/gpu_sssp_pes.py --outdir OUT --prepared DIR [--pes 1,2] [--remotes atomic,enqueue,batch]
        [--queues bwd] [--flushes 256,32] [--trials 2] [--budget S]

A graph spec may end in ``@deg`` or ``@dealP`` (``kron:23@deal2``): the same graph, its
vertices renamed by degree (``_order``), to measure what the order of the ids does to the
rounds' cache hits. ``--weights`` (prep and runs alike) picks the weightings.

``--prep``: builds each graph once (``benchmarks/sssp_bench.py``'s cases: one source, the
vertex of largest out-degree), both weightings, and the reference distances of the CPU backend
(one rank; it equals scipy, tests/test_bellman_ford.py) into DIR/<graph>_<weights>.npz, so the
``mpirun`` workers only load them. ``--outdir``: for each PE count one ``mpirun -n P`` job (one
PE per GPU when there are enough GPUs, else PEs share them: limited MPG, correctness only) runs
every prepared case in file order with each queue x remote variant (``QueueSSSP``, built once
per case and variant: setup not timed), a warm-up run and ``--trials`` timed runs; on one PE the
remote variant does not matter (no remote arcs): one run per queue; batch rows, one per
``--flushes`` value (``QueueSSSP.flush``, same runner). Per row: ``time_s`` (best
wall time of ``run()`` on rank 0 between barriers: kernel, resets, the host's gather of the
distances), ``run_s`` (best of the slowest rank's ``time_run_s``: resets and launches, no
gather), the remote counters (ghost drops, claims, coalesced, shipped, applied, puts) and
exchange times of the trial whose ``run_s`` is reported (until session 14's call 7: of the last
trial),
``same_as_cpu``; and per case ``speedup_vs_1pe`` for each row of several PEs (best 1-PE
``time_s`` over the row's). A remote ``X+phases`` (e.g. ``atomic+phases``) is remote ``X`` with
near-far phases driven by the host (``QueueSSSP(multi_pe_phases=True)``), one row per
``--phase-deltas`` value (``default``: the largest of the PEs' picks of the default rule; set by
``set_delta``, same runner); on one PE it runs too (the NVSHMEM kernel with the host's phase
changes, beside the kernel's own phases of the plain row): its cost per phase. Remote
``atomic_fetch`` is the atomic path before session 7 (a fetch before the CAS, a flag swap
always, one queue reservation per lane) beside ``atomic`` (CAS from the ghost key, the flag of a
first improvement set unfetched, one reservation per warp and destination); rows carry the
counters ``cas_failed``, ``remote_wins``, ``remote_first``, ``remote_pushes``. Remote
``rounds`` (``rounds_dense``, ``rounds_cupy``) is not a queue variant: the round-based
Bellman-Ford (``RoundsSSSP`` with its fused round kernels, or with plain CuPy rounds),
distributed on several PEs, each its block's arcs: ``rounds`` has each owner pull the candidates
that other PEs lowered for its vertices (``exchange="pull"``) in the asynchronous order (the
default since session 17; ``rounds_jacobi``: the Jacobi rounds, the same otherwise; rows keep
each trial's relaxations and rounds, which vary; ``rounds_deg``: renamed by degree,
``relabel="degree"``), ``rounds_dense`` and ``rounds_cupy`` combine
replicated distances after every round through peer views (``exchange="dense"``); they run
on one PE too, and the 1-PE reference of
``speedup_vs_1pe`` is the best 1-PE row of the case, queue or rounds. Writes OUT/gpu_sssp_pes.json (commit, device, date), rewritten
after every job; a job that fails or runs out of ``--budget`` keeps the rows it printed.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import commit, sh as _sh  # noqa: E402

WEIGHTS = ("uniform", "shifted")
ROUNDS = {"rounds": {"engine": "kernel"}, "rounds_jacobi": {"engine": "kernel", "order": "jacobi"},
          "rounds_dense": {"engine": "kernel", "exchange": "dense"},
          "rounds_deg": {"engine": "kernel", "relabel": "degree"},
          "rounds_cupy": {"engine": "cupy"}}  # the round-based remotes: RoundsSSSP's arguments
#                                             (rounds: the default, asynchronous rounds since session 17)


def prep(dirpath, graphs):
    """Build every case and its CPU reference into DIR (atomic renames: a reader never sees half a file)."""
    from mpi4py import MPI
    from sssp_bench import build

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.generators import potential_shift

    d = Path(dirpath)
    d.mkdir(parents=True, exist_ok=True)
    for spec in graphs:
        t0 = time.perf_counter()
        gspec, _, order = spec.partition("@")
        base, s = build(gspec)
        new_id = _order(base, order)
        for wk in WEIGHTS:
            g = base if wk == "uniform" else potential_shift(base, seed=1)
            w = _arc_weights(g, None)
            t1 = time.perf_counter()
            ref = run_rounds(g, w, s, MPI.COMM_SELF, lambda cy, g=g, w=w: cycle_weight(g, cy, w) < 0)[0]
            if new_id is not None:  # the same graph renamed: the reference moves with its vertices
                from distgraph.formats.reorder import permute_rows
                from distgraph.graph import Graph

                old_of_new = np.empty_like(new_id)
                old_of_new[new_id] = np.arange(g.n, dtype=np.int64)
                ip, ix, ww = permute_rows(g.indptr, g.indices, g.weights, new_id, old_of_new,
                                          sort=not order.endswith("u"))
                g, s_new, r2 = Graph(ip, ix, ww, directed=g.directed), int(new_id[s]), np.empty_like(ref)
                r2[new_id] = ref
                ref = r2
            else:
                s_new = s
            name = f"{spec.replace(':', '')}_{wk}"
            tmp = d / f"{name}.tmp.npz"
            np.savez(tmp, indptr=g.indptr, indices=g.indices, weights=g.weights, directed=g.directed, source=s_new,
                     ref=ref, spec=spec, weighting=wk)
            os.replace(tmp, d / f"{name}.npz")
            print(f"prep {name}: n={g.n} m={g.m} build+shift {t1 - t0:.1f} s, cpu reference "
                  f"{time.perf_counter() - t1:.1f} s", flush=True)
            t0 = time.perf_counter()
        (d / f"{spec.replace(':', '')}.done").touch()


def _order(g, order):
    """``new_id`` of a graph spec's ``@ORDER`` (none: None). ``deg``: by descending degree
    (distgraph.formats.reorder.degree_order); ``dealP``: the degree order dealt to P runs (the
    vertex of degree rank r goes to run r mod P), each run in degree order, so that P blocks
    of about equal arcs each get their share of hubs packed at their start. A trailing ``u``
    (``deal2u``): each row's heads left in their order (else sorted, as RoundsSSSP's
    ``relabel="degree"`` sorts them)."""
    if not order:
        return None
    from distgraph.formats.reorder import degree_order

    o = order[:-1] if order.endswith("u") else order
    if o == "deg":
        return degree_order(g)
    if o.startswith("deal") and o[4:].isdigit() and int(o[4:]) >= 1:
        return degree_order(g, runs=int(o[4:]))
    raise SystemExit(f"gpu_sssp_pes.py: unknown vertex order @{order} (deg or dealP, u: rows unsorted)")


def _cases(dirpath, graphs, wait_s):
    """(name, path) of the prepared cases in --graphs order, each when its graph is ready
    (waiting up to wait_s for it; the earlier graphs run meanwhile)."""
    for spec in graphs:
        done = Path(dirpath) / f"{spec.replace(':', '')}.done"
        t0 = time.monotonic()
        while not done.exists() and time.monotonic() - t0 < wait_s:
            time.sleep(0.5)
        for wk in WEIGHTS:
            p = Path(dirpath) / f"{spec.replace(':', '')}_{wk}.npz"
            if p.exists():
                yield f"{spec}_{wk}", p


def _variant(label):
    """``(remote, host_phases)`` of a --remotes entry (``atomic``, ``atomic+phases``, ...)."""
    remote, _, extra = label.partition("+")
    if extra not in ("", "phases"):
        raise SystemExit(f"gpu_sssp_pes.py: unknown remote variant {label!r} (X or X+phases)")
    return remote, extra == "phases"


def _delta_arg(x):
    return None if x == "default" else (int(x) if x.lstrip("-").isdigit() else float(x))


def worker(dirpath, graphs, queues, remotes, trials, wait_s, flushes, phase_deltas=(None,)):
    """Under mpirun: every case x variant on all PEs; rank 0 prints one RESULT-JSON line per row."""
    from mpi4py import MPI

    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    size, rank = comm.Get_size(), comm.Get_rank()
    ctx = get_context(comm, "gpu")
    pg = get_pgas(comm, "gpu")
    if rank == 0:
        print("RESULT-JSON " + json.dumps({"kind": "job", "pes": size, "limited_mpg": bool(pg.limited_mpg),
                                           "cpus_allowed": len(os.sched_getaffinity(0)),
                                           "devices": comm.gather(getattr(ctx, "device", None), root=0)}),
              flush=True)
    else:
        comm.gather(getattr(ctx, "device", None), root=0)
    failed = set()  # variants that failed (a hang costs DISTGRAPH_HANG_TIMEOUT): not run again
    for spec in graphs:
        # rank 0 waits for the graph and says which cases there are (the same list on every rank)
        ready = comm.bcast(list(_cases(dirpath, [spec], wait_s)) if rank == 0 else None, root=0)
        for name, path in ready:
            _run_case(comm, name, path, queues, remotes, trials, failed, flushes, phase_deltas)
    pg.finalize()


def _run_case(comm, name, path, queues, remotes, trials, failed, flushes, phase_deltas=(None,)):
    """Every queue x remote variant on one prepared case (collective; the errors of QueueSSSP
    are raised on every rank), but those in ``failed``; rank 0 prints the rows. On one PE the
    first plain remote and every ``+phases`` one run."""
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import cycle_weight
    from distgraph.backends.gpu.bellman_ford import QueueSSSP, RoundsSSSP
    from distgraph.graph import Graph

    size, rank = comm.Get_size(), comm.Get_rank()
    z = np.load(path)
    g = Graph(z["indptr"], z["indices"], z["weights"], directed=bool(z["directed"]))
    s, ref = int(z["source"]), z["ref"]
    w = g.weights
    confirm = lambda cy, g=g, w=w: cycle_weight(g, cy, w) < 0  # noqa: E731
    plain = [x for x in remotes if not _variant(x)[1] and not x.startswith("rounds")]
    # one PE: the first plain queue remote, every +phases one, and the rounds
    # (rounds_dense is rounds on one PE)
    labels = remotes if size > 1 else plain[:1] + [x for x in remotes if _variant(x)[1] or x in ROUNDS and
                                                   x != "rounds_dense"]
    for queue in queues:
        for remote in labels:
            rmode, phased = _variant(remote)
            row = {"kind": "row", "case": name, "pes": size, "queue": queue,
                   "remote": remote if size > 1 or phased or rmode.startswith("rounds") else None, "vertices": g.n,
                   "arcs": g.m}
            if (queue, remote) in failed:
                row["skipped"] = "failed on an earlier case"
                if rank == 0:
                    print("RESULT-JSON " + json.dumps(row), flush=True)
                continue
            q = None
            try:
                t0 = time.perf_counter()
                if rmode in ROUNDS:  # the round-based Bellman-Ford, distributed over the PEs
                    q = RoundsSSSP(g, w, comm, **ROUNDS[rmode])
                else:
                    q = QueueSSSP(g, w, comm, queue=queue, remote=rmode, use_nvshmem=True, multi_pe_phases=phased)
                row["setup_s"] = time.perf_counter() - t0
                q.run(s, confirm)  # warm-up (kernel load)
                # batch: one row per flush setting (an attribute: same runner); phases: one per delta
                settings = [(f, dl) for f in (flushes if getattr(q, "batch", False) else (None,))
                            for dl in (phase_deltas if phased else (None,))]
                for flush, pdelta in settings:
                    if flush is not None:
                        q.flush = flush
                    if phased:
                        q.set_delta(pdelta)  # collective
                        if pdelta is not None:
                            q.run(s, confirm)  # warm-up at this delta
                    r = dict(row)
                    if phased:
                        r["phase_delta_arg"] = "default" if pdelta is None else pdelta
                    times, runs, sts, same = [], [], [], True
                    for _ in range(trials):
                        comm.Barrier()
                        t0 = time.perf_counter()
                        d, _, st, cyc = q.run(s, confirm)
                        comm.Barrier()
                        times.append(time.perf_counter() - t0)
                        runs.append(comm.allreduce(st["time_run_s"], op=MPI.MAX))
                        sts.append(st)
                        same &= cyc is None and bool(np.array_equal(d, ref))
                    # the counters and timings of the trial whose run_s is reported (the best)
                    st = sts[int(np.argmin(runs))]
                    r.update(time_s=min(times), times_s=times, run_s=min(runs), runs_s=runs,
                             # per trial (the asynchronous rounds' vary from run to run)
                             relaxations_trials=[x.get("relaxations") for x in sts],
                             rounds_trials=[x.get("rounds") for x in sts],
                             same_as_cpu=all(comm.allgather(same)),
                             **{k: st.get(k) for k in ("relaxations", "items", "launches", "delta", "phases",
                                                       "multi_pe_phases", "checks", "ghost",
                                                       "flush", "ghost_dropped", "remote_claims", "coalesced",
                                                       "shipped", "applied", "flushes", "cas_failed",
                                                       "remote_wins", "remote_first", "remote_pushes", "grid",
                                                       "capacity", "rounds", "engine", "order", "distributed",
                                                       "exchange", "relabel", "time_relabel_s", "time_rename_s",
                                                       "time_profile_s", "time_exchange_max_s", "time_finish_s", "time_d2h_s",
                                                       "time_prefault_wait_s",
                                                       "time_exchange_min_s", "relaxations_max_pe")})
                    if rank == 0:
                        print("RESULT-JSON " + json.dumps(r, default=float), flush=True)
                row = None
            except Exception as e:  # one variant failing must not lose the others
                row["error"] = repr(e)[:1500]
                failed.add((queue, remote))
            finally:
                if q is not None:
                    q.close()  # collective
            if rank == 0 and row is not None:
                print("RESULT-JSON " + json.dumps(row, default=float), flush=True)


def mpirun_extra():
    """More mpirun arguments, recorded in the results: SSSP_MPIRUN_ARGS, by default
    ``--bind-to none``, as launch/distgraph-mpirun runs. Open MPI's own default binds each of one
    or two ranks to one core, which the rank's helper threads (NVSHMEM's proxy, the CUDA driver's)
    then share: rounds stalled by about 4 ms at random and the result's copy to the host ran on
    one core (session 16, calls 1-2: benchmarks/results/session16/). Before session 16 every
    timing of this benchmark ran so bound."""
    return os.environ.get("SSSP_MPIRUN_ARGS", "--bind-to none").split()


def run_job(n, args, timeout):
    """``mpirun -n n`` of this script's worker: its RESULT-JSON lines (those printed before a
    timeout too) and an error entry when it did not end cleanly."""
    from distgraph.testing import clean_mpi_env

    mpirun = os.environ.get("MPIRUN", "/usr/bin/mpirun")
    env = [x for v in ("PYTHONPATH", "NVSHMEM_DISABLE_NVLS", "NVSHMEM_REMOTE_TRANSPORT", "NVSHMEM_SYMMETRIC_SIZE",
                       "DISTGRAPH_HANG_TIMEOUT", "DISTGRAPH_CACHE_DIR", "DISTGRAPH_GPU_SSSP_PREFAULT_THREADS", "PYTHONUNBUFFERED") if v in os.environ
           for x in ("-x", v)]
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(n)] + env + mpirun_extra() \
        + [sys.executable, __file__] + args
    err, out = None, ""
    try:
        pr = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_mpi_env())
        out = pr.stdout + pr.stderr
        if pr.returncode:
            err = f"exit status {pr.returncode}"
    except subprocess.TimeoutExpired as e:
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
        err = f"timed out after {timeout:.0f} s"
    lines = [json.loads(x[12:]) for x in out.splitlines() if x.startswith("RESULT-JSON ")]
    return lines, err, out


def summarize(rows):
    """speedup_vs_1pe of every row of several PEs (best 1-PE time_s of the case over the row's:
    the queue kernel with its own phases, or the rounds, whichever is faster on one GPU; 1-PE
    rows with host-driven phases are not the 1-PE reference). A row whose distances differ from
    the CPU backend's (``same_as_cpu`` false) is neither a reference nor given a speedup: a fast
    wrong answer must not set or pass the bar."""
    best1 = {}
    ok = lambda r: "time_s" in r and r.get("same_as_cpu") is not False  # noqa: E731
    for r in rows:
        if r.get("pes") == 1 and ok(r) and (r.get("remote") is None or r["remote"] in ROUNDS):
            best1[r["case"]] = min(best1.get(r["case"], np.inf), r["time_s"])
            best1[r["case"] + "/run"] = min(best1.get(r["case"] + "/run", np.inf), r["run_s"])
    for r in rows:
        if r.get("pes", 1) > 1 and ok(r) and r["case"] in best1:
            r["speedup_vs_1pe"] = best1[r["case"]] / r["time_s"]
            r["run_speedup_vs_1pe"] = best1[r["case"] + "/run"] / r["run_s"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prep", metavar="DIR")
    ap.add_argument("--prepared", metavar="DIR")
    ap.add_argument("--outdir")
    ap.add_argument("--graphs", default="kron:18,kron:20,kron:22")
    ap.add_argument("--pes", default="1,2")
    ap.add_argument("--weights", default="uniform,shifted", help="the weightings: uniform, shifted or both")
    ap.add_argument("--queues", default="bwd")
    ap.add_argument("--remotes", default="atomic,enqueue,batch")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--flushes", default="256,32", help="batch rows: QueueSSSP.flush values (same runner)")
    ap.add_argument("--phase-deltas", default="default",
                    help="X+phases rows: near-far deltas ('default' or a number; set_delta, same runner)")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds for all jobs together")
    ap.add_argument("--wait-prep", type=float, default=120.0, help="seconds a job waits for a graph's prep")
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args(argv)
    global WEIGHTS
    WEIGHTS = tuple(x for x in a.weights.split(",") if x)
    if not WEIGHTS or set(WEIGHTS) - {"uniform", "shifted"}:
        raise SystemExit(f"gpu_sssp_pes.py: --weights wants uniform, shifted or both; got {a.weights!r}")
    graphs = [x for x in a.graphs.split(",") if x]
    queues, remotes = [x for x in a.queues.split(",") if x], [x for x in a.remotes.split(",") if x]
    flushes = [int(x) for x in a.flushes.split(",") if x]
    phase_deltas = [_delta_arg(x) for x in a.phase_deltas.split(",") if x]
    for x in remotes:
        _variant(x)
    if a.prep:
        return prep(a.prep, graphs) or 0
    if a.worker:
        return worker(a.prepared, graphs, queues, remotes, a.trials, a.wait_prep, flushes, phase_deltas) or 0
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = {"benchmark": "gpu_sssp_pes", "commit": commit(),
           "device": _sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "gpus": _sh("nvidia-smi -L").count("GPU "), "host_cpus": os.cpu_count(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "graphs": graphs, "weights": list(WEIGHTS), "queues": queues, "remotes": remotes,
           "trials": a.trials, "mpirun_extra": mpirun_extra(), "flushes": flushes, "phase_deltas": a.phase_deltas, "jobs": [], "rows": []}
    save = lambda: (out / "gpu_sssp_pes.json").write_text(json.dumps(res, indent=1, default=float))  # noqa: E731
    t_start = time.monotonic()
    pes = [int(x) for x in a.pes.split(",") if x]
    for i, p in enumerate(pes):
        left = a.budget - (time.monotonic() - t_start)
        if left < 10:
            res["jobs"].append({"pes": p, "skipped": "budget"})
            continue
        # later jobs keep a share of what is left (the first, one PE, is the shortest)
        limit = left if i == len(pes) - 1 else max(left / (len(pes) - i) * (0.8 if i == 0 else 1.0), 10)
        args = ["--worker", "--prepared", a.prepared, "--graphs", a.graphs, "--queues", a.queues,
                "--remotes", a.remotes, "--trials", str(a.trials), "--wait-prep", str(a.wait_prep),
                "--flushes", a.flushes, "--phase-deltas", a.phase_deltas, "--weights", a.weights]
        t0 = time.monotonic()
        lines, err, text = run_job(p, args, limit)
        job = {"pes": p, "wall_s": time.monotonic() - t0, "limit_s": limit}
        job.update(next((x for x in lines if x.get("kind") == "job"), {}))
        if err:
            job["error"] = err
            job["output_tail"] = text[-3000:]
        res["jobs"].append(job)
        res["rows"] += [x for x in lines if x.get("kind") == "row"]
        summarize(res["rows"])
        for r in (x for x in lines if x.get("kind") == "row"):
            print(f"{r['case']:16s} pes={r['pes']} {r['queue']} {str(r['remote']):8s} "
                  + (f"{r['time_s'] * 1e3:8.2f} ms run {r['run_s'] * 1e3:8.2f} ms same={r['same_as_cpu']} "
                     f"x1pe={r.get('speedup_vs_1pe', float('nan')):.2f} coalesced={r.get('coalesced')} "
                     f"shipped={r.get('shipped')} puts={r.get('flushes')} flush={r.get('flush')} "
                     f"delta={r.get('delta')} phases={r.get('phases')} relax={r.get('relaxations')} "
                     f"claims={r.get('remote_claims')} casfail={r.get('cas_failed')} wins={r.get('remote_wins')} "
                     f"first={r.get('remote_first')} pushes={r.get('remote_pushes')}" if "time_s" in r
                     else str(r.get("error", r.get("skipped")))[:300]),
                  flush=True)
        save()
    res["wall_s"] = time.monotonic() - t_start
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
