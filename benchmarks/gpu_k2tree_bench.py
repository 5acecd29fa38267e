"""GPU k2-tree SpMV against cuSPARSE (through CuPy) on one GPU: bytes, time, working set.

    python benchmarks/gpu_k2tree_bench.py --outdir benchmarks/results [--graphs ...] [--budget 150]

For each graph (real graphs of ../shared/data and Kronecker graphs): the bytes of the
k2-tree (bare tree; tree-only engine "k2" = tree + directory + cached top; "k2+F" = k2 +
the codes of the last internal level) against a cuSPARSE-style CSR with FP32 values
and a Boolean CSR; the per-vector time (median of --reps products timed with CUDA
events) of right products y = A x, left products y^T = x^T A and batched right
products (B = 128) for k2 (directory offsets, replayed as one CUDA graph), k2+F and
cuSPARSE (SpMV, transposed SpMV via A.T, SpMM); and the device working set of each
(matrix + dense vectors + scratch). FP32 vectors, plus_times, as in Tosoni &
Mencagli (Tables 2, 3). Ratios are k2 time / cuSPARSE time (below 1: k2 faster) and
CSR bytes / k2 bytes. Results go to OUTDIR/k2tree_gpu.json with commit, device, date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.environ.get("DISTGRAPH_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))

DEFAULT_GRAPHS = ["wiki-Vote.txt.gz", "email-Enron.mtx.gz", "cond-mat-2005.mtx.gz", "road-FLA.gr.xz",
                  "kron:20", "road-NY.gr.xz", "kron:21", "kron:22"]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # pragma: no cover
        return str(e)


def load(spec):
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    return from_spec(spec) if is_spec(spec) else read_graph(os.path.join(DATA, spec))


def timed(cp, fn, reps):
    """Median milliseconds of ``fn()`` over ``reps`` runs (CUDA events), after a warm-up."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(times))


def bench_graph(spec, reps, batch, cp, cpsp):
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix
    from distgraph.formats.k2tree import K2Tree, csr_nbytes

    t0 = time.perf_counter()
    g = load(spec)
    t_read = time.perf_counter() - t0
    n, m = g.n, g.m
    t0 = time.perf_counter()
    tree = K2Tree.from_graph(g)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    tree.with_frontier()
    t_frontier = time.perf_counter() - t0
    nb = tree.nbytes()
    res = {"graph": spec, "vertices": n, "arcs": m, "directed": g.directed, "k2_nodes": tree.num_nodes,
           "k2_levels": tree.levels, "bits_per_edge": tree.bits_per_edge(), "read_s": t_read,
           "build_s": t_build, "frontier_s": t_frontier,
           "bytes": {"tree": nb["tree"], "k2": nb["engine"], "k2F": nb["engine_f"],
                     "csr_fp32": csr_nbytes(n, m), "csr_bool": csr_nbytes(n, m, values=0)}}
    res["ratio_csr_fp32_over_tree"] = res["bytes"]["csr_fp32"] / max(nb["tree"], 1)
    res["ratio_csr_bool_over_tree"] = res["bytes"]["csr_bool"] / max(nb["tree"], 1)

    sr = semiring.plus_times
    f32 = cp.float32
    rng = np.random.default_rng(1)
    x = cp.asarray(rng.random((n, 1), dtype=np.float32))
    X = cp.asarray(rng.random((n, batch), dtype=np.float32))
    y = cp.empty((n, 1), f32)
    Y = cp.empty((n, batch), f32)
    # cuSPARSE: CSR with FP32 values (int32 indices and row pointers)
    A = cpsp.csr_matrix((cp.ones(m, f32), cp.asarray(g.indices.astype(np.int32)),
                         cp.asarray(g.indptr.astype(np.int32))), shape=(n, n))
    At = A.T
    x1, X1 = x[:, 0], X
    ref_r = A @ x1
    ref_l = At @ x1
    ref_b = A @ X1
    t = {"cusparse": {"right": timed(cp, lambda: A @ x1, reps), "left": timed(cp, lambda: At @ x1, reps),
                      "batch": timed(cp, lambda: A @ X1, reps) / batch}}
    dev_bytes = {"cusparse": int(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes)}
    vec1 = 2 * n * 4
    vecB = 2 * n * batch * 4
    errs = {}
    for name, cached in (("k2", False), ("k2F", True)):
        dm = DeviceMatrix(tree, tile=1 << 20, offsets="directory", cached_frontier=cached)
        d = dm.nbytes()
        dev_bytes[name] = d["matrix"] + d["scratch"]
        tt = {}
        for key, xin, yout, left, ref in (("right", x, y, False, ref_r), ("left", x, y, True, ref_l),
                                          ("batch", X, Y, False, ref_b)):
            gph = dm.graph(xin, yout, sr, left)
            if gph is not None:
                ms = timed(cp, gph.launch, reps)
                tt[key + "_mode"] = "cuda_graph"
            else:
                def go():
                    yout.fill(0)
                    dm.run(xin, yout, sr, left)
                ms = timed(cp, go, reps)
                tt[key + "_mode"] = "launches"
            tt[key] = ms / (batch if key == "batch" else 1)
            got = yout[:, 0] if key != "batch" else yout
            errs[f"{name}_{key}"] = float(cp.abs(got - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
        # tree-only with offsets from a scan per tile (batch-friendly variant of the paper)
        if not cached:
            dms = DeviceMatrix(tree, tile=1 << 20, offsets="scan")

            def go_scan():
                Y.fill(0)
                dms.run(X, Y, sr, False)
            tt["batch_scan"] = timed(cp, go_scan, max(3, reps // 4)) / batch
            tt["launches_per_product"] = len(dm.steps)
        t[name] = tt
    res["time_ms"] = t
    res["ratio_time_vs_cusparse"] = {f"{k}_{d}": t[k][d] / t["cusparse"][d]
                                     for k in ("k2", "k2F") for d in ("right", "left", "batch")}
    res["device_bytes_matrix_plus_scratch"] = dev_bytes
    res["working_set_bytes"] = {k: v + vec1 for k, v in dev_bytes.items()}
    res["working_set_batch_bytes"] = {k: v + vecB for k, v in dev_bytes.items()}
    res["ratio_working_set_vs_cusparse"] = {k: res["working_set_bytes"][k] / res["working_set_bytes"]["cusparse"]
                                            for k in ("k2", "k2F")}
    res["max_rel_error_vs_cusparse"] = errs
    del A, At, x, X, y, Y
    cp.get_default_memory_pool().free_all_blocks()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outdir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--graphs", nargs="*", default=DEFAULT_GRAPHS)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--budget", type=float, default=100.0, help="seconds; later graphs are skipped once spent")
    a = p.parse_args(argv)
    import cupy as cp
    import cupyx.scipy.sparse as cpsp

    os.makedirs(a.outdir, exist_ok=True)
    out = {"benchmark": "k2tree_gpu", "commit": sh(f"git -C {ROOT} rev-parse HEAD"),
           "dirty": bool(sh(f"git -C {ROOT} status --porcelain")),
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "cupy": cp.__version__, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "semiring": "plus_times", "vectors": "float32", "batch": a.batch, "reps": a.reps,
           "tile": 1 << 20, "sample": 256, "graphs": [], "skipped": []}
    start = time.perf_counter()
    path = os.path.join(a.outdir, "k2tree_gpu.json")
    for spec in a.graphs:
        if time.perf_counter() - start > a.budget:
            out["skipped"].append(spec)
            continue
        try:
            r = bench_graph(spec, a.reps, a.batch, cp, cpsp)
        except Exception as e:  # keep the other graphs' numbers
            r = {"graph": spec, "error": f"{type(e).__name__}: {e}"}
        r["elapsed_s"] = time.perf_counter() - start
        out["graphs"].append(r)
        print(json.dumps({k: r.get(k) for k in ("graph", "arcs", "bits_per_edge", "ratio_csr_fp32_over_tree",
                                                "ratio_time_vs_cusparse", "ratio_working_set_vs_cusparse",
                                                "error", "elapsed_s")}), flush=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
