"""CPU queue benchmarks: the MPI-RMA Broker Queue / BWD on 1, 2 and 4 ranks (EnqDeq, Mixed).

    python benchmarks/queue_bench.py [--ops 20000] [--out benchmarks/results/queue_cpu.json]

Runs ``mpiexec -n P distgraph queue-bench --backend cpu --json`` for P in 1, 2, 4, batch sizes
1 / 16 / 64 items per reservation and both layouts (one segment per rank, or one on rank 0),
and writes every run plus the speedup of each P over one rank. Every run is checked (the values
dequeued over all ranks are exactly 0..ops-1). There is no off-the-shelf peer for a one-sided
distributed FIFO in Python, so the comparisons are internal: ranks, batch, layout, BQ vs BWD.
The GPU numbers come from ``benchmarks/gpu_queue_bench.py``.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import commit, sh


def _mpi_version():
    from mpi4py import MPI

    return MPI.Get_library_version().splitlines()[0].strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--pes", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "queue_cpu.json"))
    args = ap.parse_args()
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    runs = []
    for p in args.pes:
        for layout in ("distributed", "centralized"):
            for b in args.batches:
                ops = args.ops if b > 1 else max(args.ops // 10, 100)
                cmd = [mpiexec, "-n", str(p), sys.executable, "-m", "distgraph", "queue-bench", "--backend", "cpu",
                       "--ops", str(ops), "--batch", str(b), "--layout", layout, "--trials", str(args.trials), "--json"]
                r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
                for line in r.stdout.splitlines():
                    if line.startswith("{"):
                        runs.append(json.loads(line))
                        d = runs[-1]
                        print(f"P={p} {layout:11s} batch={b:3d} {d['workload']:6s} {d['kind']:3s} "
                              f"{d['mops_per_s'] * 1e3:9.1f} kops/s verified={d['verified']}", flush=True)
                if r.returncode != 0:
                    print(r.stderr[-2000:], file=sys.stderr)
    one = {(d["layout"], d["batch"], d["workload"], d["kind"]): d["mops_per_s"] for d in runs if d["pes"] == 1}
    for d in runs:
        k = (d["layout"], d["batch"], d["workload"], d["kind"])
        if k in one:
            d["speedup_vs_1_rank"] = round(d["mops_per_s"] / one[k], 3)

    doc = {"benchmark": "queue-cpu", "commit": commit(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": f"CPU: {sh('nproc')} cores, {sh('uname -m')}; MPI: {_mpi_version()}",
           "ops": args.ops, "note": "ops/s = (enqueues + dequeues) / wall time; batch 1 runs use ops/10 items",
           "runs": runs}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", args.out)
    return 0 if all(d["verified"] for d in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
