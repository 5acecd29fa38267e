"""Benchmark: where the GPU Bellman-Ford's set-up time goes (issue 7): host-to-device copies
of a graph's arrays by the ways CuPy offers, and the device block's steps.

    python benchmarks/h2d_upload.py --outdir DIR [--graph kron:20] [--trials 3]

Rows (best of ``--trials``, seconds and GB/s):

* ``copy_pageable``: ``cupy.asarray`` of a NumPy array (the driver stages pageable memory);
* ``copy_pinned``: from a page-locked buffer (``cupyx.empty_pinned``), the copy alone, and
  ``fill_pinned`` the host copy into it that a pinned path would add;
* ``copy_registered``: ``cudaHostRegister`` on the NumPy array itself (no host copy), the
  registration, ``cupy.asarray`` of the registered pages and the unregistration (the driver's
  ``_to_device`` copies them by ``cudaMemcpy`` instead: ``block_init`` times that);
* ``block_*``: ``bellman_ford._Block`` on the graph: construction (upload and conversion),
  ``neg_magnitude``, ``w_bits`` and ``tight_pred`` (the finish's kernel).

Writes DIR/h2d_upload.json (commit, device, date).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def timed(fn, trials, sync):
    best, out = None, None
    for _ in range(trials):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    import cupy as cp
    import cupyx
    from _common import commit, sh
    from mpi4py import MPI
    from sssp_bench import build

    from distgraph.backends.cpu.bellman_ford import _setup
    from distgraph.backends.gpu.bellman_ford import _Block

    sync = cp.cuda.Device().synchronize
    g, s = build(args.graph)
    res = {"benchmark": "h2d_upload", "commit": commit(), "graph": args.graph, "vertices": g.n, "arcs": g.m,
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "trials": args.trials, "indices_dtype": str(g.indices.dtype),
           "weights_dtype": str(g.weights.dtype), "rows": {}}
    rows = res["rows"]
    a = np.ascontiguousarray(g.indices)
    nb = a.nbytes

    def row(name, t, nbytes=nb):
        rows[name] = {"time_s": t, "gb_per_s": nbytes / t / 1e9 if nbytes else None}
        print(name, rows[name], flush=True)

    row("copy_pageable", timed(lambda: cp.asarray(a), args.trials, sync)[0])
    pin = cupyx.empty_pinned(a.shape, a.dtype)
    row("fill_pinned", timed(lambda: np.copyto(pin, a), args.trials, sync)[0])
    row("copy_pinned", timed(lambda: cp.asarray(pin), args.trials, sync)[0])
    rt = cp.cuda.runtime

    def registered():
        rt.hostRegister(a.ctypes.data, nb, 0)
        try:
            return cp.asarray(a)
        finally:
            rt.hostUnregister(a.ctypes.data)

    try:
        row("copy_registered", timed(registered, args.trials, sync)[0])
        t_reg = timed(lambda: (rt.hostRegister(a.ctypes.data, nb, 0), rt.hostUnregister(a.ctypes.data)),
                      args.trials, sync)[0]
        row("register_unregister", t_reg)
    except Exception as e:  # noqa: BLE001 - a runtime without registration: the row says so
        rows["copy_registered"] = {"error": repr(e)[:500]}
    t, blk = timed(lambda: _Block(cp, g, g.weights, 0, g.n), args.trials, sync)
    row("block_init", t, nb + g.weights.nbytes + g.indptr.nbytes)
    row("block_neg_magnitude", timed(blk.neg_magnitude, args.trials, sync)[0], 0)
    row("block_w_bits", timed(blk.w_bits, args.trials, sync)[0], 0)
    _, _, _, _, _, ww, wdt = _setup(g, g.weights, 0, MPI.COMM_SELF)
    from distgraph.algorithms.bellman_ford import bellman_ford

    r = bellman_ford(g, s, backend="cpu")
    d = r.distance.astype(wdt)
    d[~r.reached] = np.inf if wdt.kind == "f" else np.iinfo(np.int64).max
    row("block_tight_pred", timed(lambda: blk.tight_pred(d), args.trials, sync)[0], 0)
    Path(args.outdir).mkdir(parents=True, exist_ok=True)
    (Path(args.outdir) / "h2d_upload.json").write_text(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()
