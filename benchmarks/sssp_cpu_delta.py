"""The width of the CPU rounds' near-far order, swept: one source, each
factor of ``DISTGRAPH_CPU_SSSP_DELTA`` (times the mean arc weight; 0: off, every round works
its block to a fixpoint) side by side in one run.

    mpiexec -n 2 python benchmarks/sssp_cpu_delta.py --out FILE [--cases road-NY,road-FLA,kron:16]
        [--factors 0,4,16,64,256,1024] [--weights uniform,shifted] [--trials 3]

Graphs and sources as in ``sssp_bench.py`` (uniform weights in [1, 255], and the same weights
potential-shifted). Per case and factor: the best wall time of ``--trials`` (the largest over the
ranks; the factors' trials interleaved), relaxations, rounds and phases, and whether the
distances equal those of the first factor.
The JSON records commit, machine, ranks and date; runs with other rank counts are merged.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import commit, dirty  # noqa: E402
from sssp_bench import best_of, build  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="road-NY,road-FLA,kron:16")
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--factors", default="0,4,16,64,256,1024")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import bellman_ford
    from distgraph.backends.cpu.bellman_ford import rounds_delta, work_dtype
    from distgraph.generators import potential_shift

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rows = []
    for case in a.cases.split(","):
        base, s = build(case)
        for wk in a.weights.split(","):
            g = base if wk == "uniform" else potential_shift(base, seed=1)
            bellman_ford(g, s, comm=comm, backend="cpu", mode="rounds")  # warm-up: numba, page faults
            wdt = work_dtype(g.weights.dtype)
            factors = [float(x) for x in a.factors.split(",")]
            deltas = {f: rounds_delta(g.weights, wdt, MPI.COMM_SELF, factor=f) for f in factors}  # the whole graph's
            best, last = {f: np.inf for f in factors}, {}
            for _ in range(a.trials):  # the factors' trials interleaved: a slow spell of the machine hits all alike
                for f in factors:
                    comm.Barrier()
                    sec, _, last[f] = best_of(lambda: bellman_ford(g, s, comm=comm, backend="cpu", mode="rounds",
                                                                   delta=deltas[f]), 1)
                    best[f] = min(best[f], comm.allreduce(sec, op=MPI.MAX))
            ref = None
            for f in factors:
                sec, r = best[f], last[f]
                d = np.where(r.reached, r.distance.astype(np.float64), np.inf)
                ref = d if ref is None else ref
                row = {"graph": case, "weights": wk, "ranks": size, "factor": f, "delta": r.stats.get("delta"),
                       "time_s": sec, "relaxations": r.stats.get("relaxations"), "rounds": r.stats.get("rounds"),
                       "phases": r.stats.get("phases"), "same_as_first": bool(np.array_equal(d, ref))}
                rows.append(row)
                if rank == 0:
                    print(json.dumps(row), flush=True)
    if rank == 0:
        out = Path(a.out)
        doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "sssp_cpu_delta", "runs": []}
        doc["runs"] = [r for r in doc["runs"] if r["ranks"] != size] + rows
        doc.setdefault("machines", {})[f"ranks={size}"] = {
            "commit": commit(), "dirty": dirty(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cores": os.cpu_count(), "mpi": MPI.Get_library_version().splitlines()[0],
            "loadavg": os.getloadavg(), "command": " ".join(sys.argv)}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
