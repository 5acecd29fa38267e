"""CPU closeness: sources batched in decreasing-degree order against compact "ball" batches
(``DISTGRAPH_MSBFS_BATCH_ORDER``, :func:`distgraph.algorithms.msbfs.cpu_batch_order`).

Small graphs run exact closeness in full with each order (results compared bit for bit);
on road-NY, a few batches spread over the run are timed with each order (every batch
costs seconds on this machine) and the totals extrapolated. One process, numba warm,
``threads`` numba threads. Writes OUTDIR/cpu_batch_order.json.

    python benchmarks/cpu_batch_order.py [--outdir DIR] [--sample 6] [--full grid:200x200,rgg:15]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import commit  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--full", default="grid:200x200,rgg:15,kron:14")
    ap.add_argument("--sampled", default="road-NY")
    ap.add_argument("--sample", type=int, default=6)
    ap.add_argument("--name", default="cpu_batch_order")
    a = ap.parse_args(argv)
    import numba

    from distgraph.algorithms.closeness import closeness
    from distgraph.algorithms.msbfs import _run_batches, cpu_batch_order
    from distgraph.backends.cpu.msbfs import ball_order, permute_csr
    from distgraph.generators import from_spec
    from distgraph.runtime.config import config
    from gpu_closeness import _ctx, load

    res = {"benchmark": "cpu_batch_order", "commit": commit(), "host": platform.node(), "cpus": os.cpu_count(),
           "threads": numba.get_num_threads(), "load_avg_start": list(os.getloadavg()),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "note": __doc__.split("\n\n")[1].replace("\n", " "), "full": {}, "sampled": {}}
    out = Path(a.outdir) / f"{a.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for spec in [s for s in a.full.split(",") if s]:
        g = from_spec(spec) if ":" in spec else load(spec)
        row = {"n": g.n, "arcs": g.m, "auto": cpu_batch_order(g.indptr, g.indptr, np.arange(g.n), per_source=False,
                                                                    hidx=g.indices)}
        got = {}
        for how in ("degree", "ball"):
            config.msbfs_batch_order = how
            closeness(g, backend="cpu", progress=False)  # numba warm, caches
            t0 = time.perf_counter()
            got[how] = closeness(g, backend="cpu", progress=False)
            row[f"{how}_s"] = time.perf_counter() - t0
        config.msbfs_batch_order = "auto"
        row["identical"] = all(np.array_equal(getattr(got["degree"], k), getattr(got["ball"], k))
                               for k in ("farness", "reach", "harmonic", "closeness"))
        row["speedup_ball"] = row["degree_s"] / row["ball_s"]
        res["full"][spec] = row
        print(spec, json.dumps(row), flush=True)
        out.write_text(json.dumps(res, indent=1))
    ctx = _ctx("cpu")
    for spec in [s for s in a.sampled.split(",") if s]:
        g = load(spec)
        n, bs = g.n, 512
        hptr, hidx = np.asarray(g.indptr, np.int64), np.asarray(g.indices)
        perm = np.argsort(-np.diff(hptr), kind="stable").astype(np.int64)
        rank_of = np.empty(n, np.int64)
        rank_of[perm] = np.arange(n)
        Hp, Hi = permute_csr(hptr, hidx, perm, rank_of)
        src = rank_of[np.flatnonzero(np.diff(hptr) > 0)]
        is_src = np.zeros(n, np.bool_)
        is_src[src] = True
        t0 = time.perf_counter()
        orders = {"degree": np.sort(src), "ball": ball_order(Hp, Hi, Hp, Hi, is_src, bs, 16 * bs)}
        order_s = time.perf_counter() - t0
        nb = -(-src.size // bs)
        picks = np.linspace(0, nb - 1, a.sample).astype(int)
        row = {"n": n, "arcs": g.m, "batches": nb, "batch_size": bs, "sampled_batches": picks.tolist(),
               "ball_order_s": order_s}

        def run(s):
            t = time.perf_counter()
            _run_batches(Hp, Hi, Hp, Hi, np.asarray(s, np.int64), per_source=False, batch_size=bs, ctx=ctx,
                         want_levels=False, store=None, progress=False, desc="x", runner=None)
            return time.perf_counter() - t

        run(orders["degree"][:64])  # numba warm
        for how, o in orders.items():
            ts = [run(o[i * bs:(i + 1) * bs]) for i in picks]
            row[how] = {"batch_s": ts, "mean_batch_s": float(np.mean(ts)), "total_s_extrapolated": float(np.mean(ts)) * nb}
        row["speedup_ball"] = row["degree"]["mean_batch_s"] / row["ball"]["mean_batch_s"]
        res["sampled"][spec] = row
        print(spec, json.dumps(row), flush=True)
        out.write_text(json.dumps(res, indent=1))
    res["load_avg_end"] = list(os.getloadavg())
    out.write_text(json.dumps(res, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
