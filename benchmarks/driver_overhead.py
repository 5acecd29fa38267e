"""Host time per batch of the closeness/MS-BFS batch driver (`run_batches`) with a runner
that does nothing: what the driver itself adds to a GPU run, per batch of 512 sources.

    python benchmarks/driver_overhead.py [--outdir benchmarks/results] [--scale 20] [--batches 256]

Two runners: one that writes its sums into the driver's per-batch arrays (``defers``
False: five arrays of n allocated, added and normalized per batch, as every runner got
before e917443) and one that keeps them until ``drain`` (``defers`` True: GpuMSBFS). Each
is warmed up once (imports, numba loading) before it is timed. Writes driver_overhead.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import ROOT, commit


class _NoOp:
    collective = False

    def __init__(self, defers):
        self.defers = defers

    def run(self, src, per_source, out, defer=False):
        pass

    def drain(self, *arrays):
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--scale", type=int, default=20, help="n = 2**scale vertices (kron:20 has 2**20)")
    ap.add_argument("--batches", type=int, default=256)
    a = ap.parse_args(argv)
    from mpi4py import MPI

    from distgraph.algorithms.msbfs import run_batches
    from distgraph.runtime.context import get_context

    n = 1 << a.scale
    ptr, idx = np.zeros(n + 1, np.int64), np.zeros(0, np.int32)
    ctx = get_context(MPI.COMM_SELF, "cpu")
    srcs = np.arange(512 * a.batches, dtype=np.int64) % n
    res = {"benchmark": "driver_overhead", "commit": commit(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "loadavg": list(os.getloadavg()), "n": n, "batch_size": 512,
           "batches": a.batches, "runs": {}}
    for defers in (False, True):
        r = _NoOp(defers)
        run_batches(ptr, idx, ptr, idx, srcs[:1024], per_source=False, batch_size=512, ctx=ctx, progress=False,
                    runner=r)  # warm-up
        t = time.perf_counter()
        run_batches(ptr, idx, ptr, idx, srcs, per_source=False, batch_size=512, ctx=ctx, progress=False, runner=r)
        dt = time.perf_counter() - t
        res["runs"]["defers" if defers else "writes_out"] = {
            "seconds": dt, "ms_per_batch": dt / a.batches * 1e3,
            "seconds_for_all_n_sources": dt / a.batches * (n / 512)}
        print(("defers" if defers else "writes_out"), f"{dt / a.batches * 1e3:.2f} ms per batch", flush=True)
    out = Path(a.outdir) / "driver_overhead.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
