"""GPU k2-tree SpMV against cuSPARSE (through CuPy) on one GPU: bytes, time, working set.

    python benchmarks/gpu_k2tree_bench.py --outdir benchmarks/results [--graphs ...] [--budget 150]
    python benchmarks/gpu_k2tree_bench.py --prepare DIR [--graphs ...] [--jobs 6]   # host only
    python benchmarks/gpu_k2tree_bench.py --prepared DIR --outdir ...               # then time

For each graph (real graphs of ../shared/data and Kronecker graphs): the bytes of the
k2-tree (bare tree; tree-only engine "k2" = tree + directory + cached top; "k2+F" = k2 +
the codes of the last internal level) against a cuSPARSE-style CSR with FP32 values
and a Boolean CSR; the per-vector time (median of --reps products timed with CUDA
events) of right products y = A x, left products y^T = x^T A and batched right
products (B = 128) for

* ``k2``: tree-only, directory offsets, the block kernels (default), bounded tiles of
  2**20 nodes, one CUDA graph per product, single-vector leaves with 4 chunks of 256
  nodes per block (``prefetch=False``: the K-chunk leaves, the library's default until
  ``prefetch="auto"``; every configuration below that names no ``prefetch`` passes False
  where "auto" would change its leaves, so each keeps the leaves it timed before); also
  ``k2_k1`` (one chunk per block: the leaves kernel up to commit f20ed2c), ``k2_2lev`` (two
  levels per launch), ``k2_greedy`` (tiles cut on children only, as first written),
  ``k2_tile21``/``k2_tile22`` (tiles of 2**21/2**22 nodes), ``k2_thread`` (the first
  version: one thread per node, greedy tiles) and ``batch_scan`` (offsets from a scan per
  tile);
* ``k2F``: the cached frontier (k2+F), block kernels, stored compact (4 bytes per node
  + 8 per block of 256: ``bytes.k2F_compact``), 4 chunks per block for single
  vectors; ``k2F_k1``/``k2F_k2``/``k2F_k8``: 1/2/8 chunks; ``k2F_full``: 8-byte codes
  (the paper's layout, ``bytes.k2F``); ``k2F_thread``: the first version;
  ``k2F_agg`` (K = 4), ``k2F_k2_agg``, ``k2F_k8_agg``: ``aggregate=True``, the updates of
  a block combined in a shared-memory table of 256 slots per chunk (``k2F_agg_s64``: 64)
  before one atomic per distinct row of ``y``; ``k2F_pre`` (K = 4), ``k2F_k2_pre`` and
  ``k2_pre`` (tree-only): ``prefetch=True, lane_combine=False``, each 4 x 4 block's 4 inputs
  loaded with its code before the block scan (``distgraph_k2tree_leaves_k<K>_pre``);
  ``k2F_pre_lanes``, ``k2_pre_lanes``: and ``lane_combine=True`` (adjacent lanes updating the
  same entry of ``y`` combined first); ``k2F_auto``: the library's defaults
  (``prefetch="auto"``: at K = 4 the leaves of ``k2F_pre_lanes``). Each product records the
  leaves kernel it ran (``time_ms.<config>.<product>_leaves``, ``DeviceMatrix.info``). Rows
  ``k2_warp``/``k2F_warp`` (commit 4de3042), ``k2_hash``/``k2F_hash`` (84cd318) and
  ``k2F_band*`` (f20ed2c, edcde2a: updates combined per band of rows in shared memory;
  ``band`` gives its h, W and items) are kernels since removed;
* ``csr_ours``: distgraph's CSR kernels (single vectors: CSR-vector, a power of two of
  lanes per row from the mean degree; batches: one thread per row and vector; left
  products on the CSC);
* ``cusparse``: SpMV, transposed SpMV (``A.T @ x``) and SpMM;

and the device working set of each (matrix + dense vectors + scratch). FP32 vectors,
plus_times, as in Tosoni & Mencagli (Tables 2, 3). Ratios are time / cuSPARSE time
(below 1: faster than cuSPARSE) and CSR bytes / tree bytes. Every product's result is
compared with cuSPARSE's (max relative error in the JSON).

Host work (reading or generating a graph, building its tree) can run ahead in
parallel processes (``--prepare DIR``, CPU only) while the GPU does something else;
``--prepared DIR`` then waits for each graph's file. Build times are those of the
host build (numba passes after a numpy sort), and for graphs up to
``--gpu-build-max-arcs`` also of :func:`tree_from_csr` (Morton codes sorted on the GPU).
Results go to OUTDIR/k2tree_gpu.json with commit, device, date.

``--reorder degree|rcm|headF`` renumbers every graph first (:mod:`distgraph.formats.reorder`,
as ``K2Tree.from_graph(g, reorder=...)`` does): the trees, distgraph's CSR and
cuSPARSE then all run on the renumbered matrix (compare cuSPARSE with the
unreordered k2tree_gpu.json); ``reorder_s`` is the ordering plus the relabelling, and
``perm_gather_ms`` the time of the two gathers a product in the caller's ids adds
(``x[inv]`` before, ``y[perm]`` after, int32 indices; single vector and per vector of a
batch). Results then go to OUTDIR/k2tree_gpu_reorder_<method>.json. ``headF`` (e.g. ``head0.01``)
is ``degree_order(g, head=F)``: only the fraction F of the vertices of largest degree move to
the front, the others keep their order (a smaller corner of hubs than the full degree order).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import commit, sh
sys.path.insert(0, ROOT)
DATA = os.environ.get("DISTGRAPH_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))

DEFAULT_GRAPHS = ["wiki-Vote.txt.gz", "email-Enron.mtx.gz", "cond-mat-2005.mtx.gz", "bitcoin-otc.csv.gz",
                  "road-NY.gr.xz", "road-FLA.gr.xz", "kron:20", "kron:21", "kron:22", "kron:23"]
TREE_FIELDS = ("sig", "level_start", "directory", "top_codes", "frontier")



def load(spec):
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    return from_spec(spec) if is_spec(spec) else read_graph(os.path.join(DATA, spec))


def _fname(spec):
    return "".join(ch if ch.isalnum() else "_" for ch in spec) + ".npz"


# ------------------------------------------------------------ host side
def read_and_build(spec, reorder="none"):
    """``(graph, tree with the cached frontier, meta)`` of ``spec``, with the read,
    build and frontier times in ``meta``; ``reorder``: the graph renumbered first."""
    from distgraph.formats.k2tree import K2Tree

    t0 = time.perf_counter()
    g = load(spec)
    t_read = time.perf_counter() - t0
    t_reorder = None
    if reorder != "none":
        from distgraph.formats.reorder import degree_order, permute_graph, rcm

        t0 = time.perf_counter()
        if reorder.startswith("head"):  # headF: degree_order(g, head=F), the hubs only
            new_id = degree_order(g, head=float(reorder[4:]))
        else:
            new_id = degree_order(g) if reorder == "degree" else rcm(g)
        g = permute_graph(g, new_id)
        t_reorder = time.perf_counter() - t0
    t0 = time.perf_counter()
    tree = K2Tree.from_graph(g)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    tree.with_frontier()
    t_frontier = time.perf_counter() - t0
    meta = {"graph": spec if reorder == "none" else f"{spec}+reorder={reorder}", "n": g.n, "m": g.m,
            "directed": bool(g.directed), "read_s": t_read, "build_s": t_build, "frontier_s": t_frontier}
    if reorder != "none":
        meta.update({"reorder": reorder, "reorder_s": t_reorder})
    return g, tree, meta


def prepare_one(spec, outdir, reorder="none"):
    """Read/generate ``spec``, build its tree with the cached frontier, save both."""
    g, tree, meta = read_and_build(spec, reorder)
    # the CSC (for the left products of the CSR kernel) is the CSR when undirected
    cip, cix = (g.csc()[0], g.csc()[1]) if g.directed else (np.zeros(0, np.int64), np.zeros(0, np.int32))
    meta.update({"shape": list(tree.shape), "levels": tree.levels, "nnz": tree.nnz, "sample": tree.sample,
                 "top_level": tree.top_level})
    path = os.path.join(outdir, _fname(spec))
    tmp = path + ".tmp.npz"
    np.savez(tmp, meta=np.array(json.dumps(meta)), indptr=g.indptr, indices=g.indices, csc_indptr=cip,
             csc_indices=cix, **{f: getattr(tree, f) for f in TREE_FIELDS})
    os.replace(tmp, path)
    return spec, time.perf_counter()


def prepare(graphs, outdir, jobs, reorder="none"):
    from concurrent.futures import ProcessPoolExecutor, as_completed

    os.makedirs(outdir, exist_ok=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(prepare_one, s, outdir, reorder): s for s in graphs}
        for f in as_completed(futs):
            s = futs[f]
            try:
                f.result()
                print(f"prepared {s} at {time.perf_counter() - start:.1f} s", flush=True)
            except Exception as e:
                with open(os.path.join(outdir, _fname(s) + ".error"), "w") as fh:
                    fh.write(f"{type(e).__name__}: {e}")
                print(f"failed {s}: {e}", flush=True)


def load_prepared(spec, outdir, deadline, reorder="none"):
    """(graph-like record, tree, meta) of a prepared graph; waits until ``deadline``.
    ``reorder``: the ordering the caller times, which the prepared graph must have."""
    from distgraph.formats.k2tree import K2Tree

    path = os.path.join(outdir, _fname(spec))
    while not os.path.exists(path):
        if os.path.exists(path + ".error"):
            raise RuntimeError(open(path + ".error").read())
        if time.perf_counter() > deadline:
            return None
        time.sleep(0.5)
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    if meta.get("reorder", "none") != reorder:  # the result file is named after --reorder
        raise RuntimeError(f"{path} was prepared with reorder={meta.get('reorder', 'none')!r}, "
                           f"not the --reorder {reorder!r} asked for")
    tree = K2Tree(shape=tuple(meta["shape"]), levels=meta["levels"], nnz=meta["nnz"], sig=z["sig"],
                  level_start=z["level_start"], directory=z["directory"], sample=meta["sample"],
                  top_level=meta["top_level"], top_codes=z["top_codes"], frontier=z["frontier"])
    return z, tree, meta


def prepare_inline(spec, reorder="none"):
    """What :func:`load_prepared` returns, computed here."""
    g, tree, meta = read_and_build(spec, reorder)
    cip, cix = (g.csc()[0], g.csc()[1]) if g.directed else (g.indptr, g.indices)
    z = {"indptr": g.indptr, "indices": g.indices, "csc_indptr": cip, "csc_indices": cix}
    return z, tree, meta


# ------------------------------------------------------------- GPU side
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


class _Skip(Exception):
    pass


# name: (DeviceMatrix keywords, products timed). Single vectors: k2 and k2F run the
# leaves with K = 4 chunks of 256 nodes per block (the default K; prefetch=False: the K-chunk
# leaves, the default before prefetch="auto", as every configuration that names no prefetch
# where "auto" would pick the prefetching leaves, so old and new rows stay comparable); *_k1
# the block kernel of one chunk per block (the default up to commit 84cd318), *_k2 / *_k8 other K.
OLD = dict(prefetch=False)
CONFIGS = {
    "k2": (dict(tile=1 << 20, **OLD), ("right", "left", "batch")),
    "k2_k1": (dict(tile=1 << 20, chunks_per_block=1), ("right",)),
    "k2_2lev": (dict(tile=1 << 20, levels_per_step=2, **OLD), ("right", "left", "batch")),
    "k2_greedy": (dict(tile=1 << 20, bounded_tiles=False, **OLD), ("right",)),
    "k2_tile21": (dict(tile=1 << 21, **OLD), ("right",)),
    "k2_tile22": (dict(tile=1 << 22, **OLD), ("right",)),
    "k2_thread": (dict(tile=1 << 20, kernels="thread", bounded_tiles=False), ("right",)),
    "k2F": (dict(cached_frontier=True, **OLD), ("right", "left", "batch")),
    "k2F_k1": (dict(cached_frontier=True, chunks_per_block=1), ("right", "left")),
    "k2F_k2": (dict(cached_frontier=True, chunks_per_block=2, **OLD), ("right",)),
    "k2F_k8": (dict(cached_frontier=True, chunks_per_block=8), ("right",)),
    "k2F_full": (dict(cached_frontier=True, compact_frontier=False, **OLD), ("right", "left")),
    "k2F_thread": (dict(cached_frontier=True, kernels="thread"), ("right",)),
    # aggregate=True: the single-vector leaves combine the updates of a block in a
    # shared-memory table, one atomic per distinct row (column) of the block
    "k2F_agg": (dict(cached_frontier=True, aggregate=True), ("right", "left")),
    "k2F_k2_agg": (dict(cached_frontier=True, chunks_per_block=2, aggregate=True), ("right",)),
    "k2F_k8_agg": (dict(cached_frontier=True, chunks_per_block=8, aggregate=True), ("right",)),
    "k2F_agg_s64": (dict(cached_frontier=True, aggregate=True, aggregate_slots=64), ("right",)),
    # prefetch=True: each 4 x 4 block's inputs loaded with its code, before the scan
    # (lane_combine=False: its "auto" would combine lanes at K = 4)
    "k2F_pre": (dict(cached_frontier=True, prefetch=True, lane_combine=False), ("right", "left")),
    "k2F_k2_pre": (dict(cached_frontier=True, chunks_per_block=2, prefetch=True), ("right", "left")),
    "k2_pre": (dict(tile=1 << 20, prefetch=True, lane_combine=False), ("right", "left")),
    "k2F_pre_lanes": (dict(cached_frontier=True, prefetch=True, lane_combine=True), ("right", "left")),
    "k2_pre_lanes": (dict(tile=1 << 20, prefetch=True, lane_combine=True), ("right", "left")),
    # the library's defaults (prefetch="auto", lane_combine="auto"): k2F_pre_lanes at K = 4
    "k2F_auto": (dict(cached_frontier=True), ("right", "left")),
    # hub_outputs: the first fraction of y's entries (the hubs of a degree-ordered tree) in
    # padded lines of their own (hub_frac, made hub_outputs = round(hub_frac * rows) per graph)
    "k2F_hub03": (dict(cached_frontier=True, hub_frac=0.003), ("right", "left")),
    "k2F_hub1": (dict(cached_frontier=True, hub_frac=0.01), ("right", "left")),
    "k2F_hub5": (dict(cached_frontier=True, hub_frac=0.05), ("right", "left")),
}
DEFAULT_CONFIGS = list(CONFIGS) + ["csr_ours"]
BIG_CONFIGS = ["k2F", "k2F_k1"]


def matrix_kwargs(kw, tree, reorder="none"):
    """A configuration's DeviceMatrix arguments for ``tree``: ``hub_frac`` becomes
    ``hub_outputs``, that fraction of the shorter side, rounded (at least 1); a tree built
    from a renumbered graph carries no permutation, so ``hubs_first`` tells "auto" what the
    library's reordered trees get (hubs first for the degree orders, not for rcm)."""
    kw = dict(kw)
    if "hub_frac" in kw:
        kw["hub_outputs"] = max(1, int(round(kw.pop("hub_frac") * min(tree.shape))))
    if reorder != "none":
        kw.setdefault("hubs_first", reorder == "degree" or reorder.startswith("head"))
    return kw


PRODUCTS = ("right", "left", "batch")


def bench_graph(z, tree, meta, reps, batch, cp, cpsp, gpu_build_max, configs=DEFAULT_CONFIGS, products=PRODUCTS):
    from distgraph import semiring
    from distgraph.backends.gpu.k2tree_spmv import DeviceMatrix, tree_from_csr
    from distgraph.formats.k2tree import csr_nbytes

    n, m = int(meta["n"]), int(meta["m"])
    indptr, indices = np.asarray(z["indptr"]), np.asarray(z["indices"])
    nb = tree.nbytes()
    res = {"graph": meta["graph"], "vertices": n, "arcs": m, "directed": meta["directed"],
           "k2_nodes": tree.num_nodes, "k2_levels": tree.levels, "bits_per_edge": tree.bits_per_edge(),
           "nodes_per_arc": tree.num_nodes / max(m, 1),
           "arcs_per_4x4_block": m / max(int(tree.level_sizes()[tree.levels - 2]), 1),
           "read_s": meta["read_s"], "build_s": meta["build_s"], "frontier_s": meta["frontier_s"],
           "reorder": meta.get("reorder", "none"), "reorder_s": meta.get("reorder_s"),
           "bytes": {"tree": nb["tree"], "k2": nb["engine"], "k2F": nb["engine_f"],
                     "csr_fp32": csr_nbytes(n, m), "csr_bool": csr_nbytes(n, m, values=0)}}
    from distgraph.backends.gpu.k2tree_spmv import memory_plan

    compact = memory_plan(tree, cached_frontier=True, compact_frontier=True).items.get("k2tree.cached frontier", 0)
    res["bytes"]["k2F_compact"] = nb["engine"] + int(compact)
    res["ratio_csr_fp32_over_k2F_compact"] = res["bytes"]["csr_fp32"] / max(res["bytes"]["k2F_compact"], 1)
    res["ratio_csr_fp32_over_tree"] = res["bytes"]["csr_fp32"] / max(nb["tree"], 1)
    res["ratio_csr_bool_over_tree"] = res["bytes"]["csr_bool"] / max(nb["tree"], 1)
    res["ratio_csr_fp32_over_k2"] = res["bytes"]["csr_fp32"] / max(nb["engine"], 1)
    res["ratio_csr_fp32_over_k2F"] = res["bytes"]["csr_fp32"] / max(nb["engine_f"], 1)
    if m <= gpu_build_max:
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        t2 = tree_from_csr(indptr, indices, (n, n))
        res["build_gpu_sort_s"] = time.perf_counter() - t0
        res["build_gpu_sort_same_tree"] = bool(np.array_equal(t2.sig, tree.sig))
        del t2

    sr = semiring.plus_times
    f32 = cp.float32
    rng = np.random.default_rng(1)
    x = cp.asarray(rng.random((n, 1), dtype=np.float32))
    # --products without batch: no n x B arrays (4.3 GB each on kron:23), no SpMM
    X = cp.asarray(rng.random((n, batch), dtype=np.float32)) if "batch" in products else None
    y = cp.empty((n, 1), f32)
    Y = cp.empty((n, batch), f32) if "batch" in products else None
    # cuSPARSE: CSR with FP32 values (int32 indices and row pointers)
    A = cpsp.csr_matrix((cp.ones(m, f32), cp.asarray(indices.astype(np.int32)),
                         cp.asarray(indptr.astype(np.int32))), shape=(n, n))
    At = A.T
    x1 = x[:, 0]
    ref = {"right": A @ x1, "left": At @ x1}
    t = {"cusparse": {"right": timed(cp, lambda: A @ x1, reps), "left": timed(cp, lambda: At @ x1, reps)}}
    if "batch" in products:
        ref["batch"] = A @ X
        t["cusparse"]["batch"] = timed(cp, lambda: A @ X, max(3, reps // 2)) / batch
    dev_bytes = {"cusparse": int(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes)}
    errs = {}
    if res["reorder"] != "none":  # the gathers of a product in the caller's ids (int32 indices)
        pi = cp.asarray(np.random.default_rng(2).permutation(n).astype(np.int32))
        res["perm_gather_ms"] = {"right": timed(cp, lambda: x[pi][pi], reps)}
        if "batch" in products:
            res["perm_gather_ms"]["batch"] = timed(cp, lambda: X[pi][pi], max(3, reps // 2)) / batch
        res["bytes"]["perm_int32_x2"] = 8 * n
        del pi

    def relerr(got, key):
        r = ref[key]
        g = got[:, 0] if key != "batch" else got
        return float(cp.abs(g - r).max() / max(float(cp.abs(r).max()), 1e-30))

    def run_cfg(name, dm, keys):
        tt = {}
        for key in [k for k in keys if k in products]:
            xin, yout, left = {"right": (x, y, False), "left": (x, y, True), "batch": (X, Y, False)}[key]
            r = reps if key != "batch" else max(3, reps // 2)
            gph = dm.graph(xin, yout, sr, left)
            if gph is not None:
                ms = timed(cp, gph.launch, r)
                tt[key + "_mode"] = "cuda_graph"
            else:
                def go():
                    yout.fill(0)
                    dm.run(xin, yout, sr, left)
                ms = timed(cp, go, r)
                tt[key + "_mode"] = "launches"
            tt[key] = ms / (batch if key == "batch" else 1)
            tt[key + "_leaves"] = dm.info.get("leaves")  # the leaves kernel this product ran
            errs[f"{name}_{key}"] = relerr(yout, key)
        if dm.tree is not None:
            tt["launches_per_product"] = len(dm.steps)
        d = dm.nbytes()
        dev_bytes[name] = d["matrix"] + d["scratch"]
        t[name] = tt
        return tt

    for name in configs:
        if name not in CONFIGS:
            continue
        kw, keys = CONFIGS[name]
        try:
            dm = DeviceMatrix(tree, **matrix_kwargs(kw, tree, meta.get("reorder", "none")))
            if dm.hub_outputs:
                res.setdefault("hub_outputs", {})[name] = dm.hub_outputs
            run_cfg(name, dm, keys)
            if name == "k2" and "batch" in products:
                dms = DeviceMatrix(tree, tile=1 << 20, offsets="scan")

                def go_scan():
                    Y.fill(0)
                    dms.run(X, Y, sr, False)
                t[name]["batch_scan"] = timed(cp, go_scan, max(3, reps // 4)) / batch
                errs["k2_batch_scan"] = relerr(Y, "batch")
                del dms
            del dm
        except Exception as e:  # keep the other configurations' numbers
            t[name] = {"error": f"{type(e).__name__}: {e}"}
        cp.get_default_memory_pool().free_all_blocks()
    # distgraph's CSR kernel: right on the CSR, left on the CSC
    try:
        if "csr_ours" not in configs:
            raise _Skip
        dr = DeviceMatrix(csr=(indptr, indices))
        dl = (DeviceMatrix(csr=(np.asarray(z["csc_indptr"]), np.asarray(z["csc_indices"])))
              if meta["directed"] else dr)
        tt = {}
        for key, dm, xin, yout in (("right", dr, x, y), ("left", dl, x, y), ("batch", dr, X, Y)):
            if key not in products:
                continue
            def go():
                yout.fill(0)
                dm.run(xin, yout, sr, False)
            tt[key] = timed(cp, go, reps if key != "batch" else max(3, reps // 2)) / (batch if key == "batch" else 1)
            errs[f"csr_ours_{key}"] = relerr(yout, key)
        t["csr_ours"] = tt
        dev_bytes["csr_ours"] = dr.nbytes()["matrix"]
        del dr, dl
        cp.get_default_memory_pool().free_all_blocks()
    except _Skip:
        pass
    except Exception as e:
        t["csr_ours"] = {"error": f"{type(e).__name__}: {e}"}
    res["time_ms"] = t
    res["ratio_time_vs_cusparse"] = {f"{k}_{d}": t[k][d] / t["cusparse"][d]
                                     for k in t if k != "cusparse" for d in ("right", "left", "batch")
                                     if isinstance(t[k].get(d), float)}
    if "batch_scan" in t.get("k2", {}):
        res["ratio_time_vs_cusparse"]["k2_batch_scan"] = t["k2"]["batch_scan"] / t["cusparse"]["batch"]
    vec1, vecB = 2 * n * 4, 2 * n * batch * 4
    res["device_bytes_matrix_plus_scratch"] = dev_bytes
    res["working_set_bytes"] = {k: v + vec1 for k, v in dev_bytes.items()}
    res["working_set_batch_bytes"] = {k: v + vecB for k, v in dev_bytes.items()}
    res["ratio_working_set_vs_cusparse"] = {k: res["working_set_bytes"][k] / res["working_set_bytes"]["cusparse"]
                                            for k in dev_bytes if k != "cusparse"}
    res["max_rel_error_vs_cusparse"] = errs
    del A, At, x, X, y, Y, ref
    cp.get_default_memory_pool().free_all_blocks()
    return res


def _product(key):
    """The product a key of ``time_ms.<config>`` belongs to: ``right``, ``right_mode`` and
    ``right_leaves`` are all ``right``'s."""
    for suffix in ("_mode", "_leaves"):
        if key.endswith(suffix):
            return key[:-len(suffix)]
    return key


def merge(new_path, into_path):
    """Merge the results of ``new_path`` into ``into_path``: a graph measured again gets
    the new entry, with the configurations only the old entry had (their times, the
    cuSPARSE times of that run and their ratios) prepended to its list ``earlier``
    (commit and date of the old run), and so are the products of a configuration that
    the new run timed without them (``--products right left``: its earlier batch time);
    other graphs are kept as they were (with their run's commit and date); the top-level
    fields are the new run's. A graph whose new run failed (no times) keeps its old entry,
    with the failure under ``failed_later``."""
    new = json.load(open(new_path))
    old = json.load(open(into_path)) if os.path.exists(into_path) else {"graphs": []}
    stamp = {"commit": old.get("commit"), "date": old.get("date")}
    by_name = {g["graph"]: g for g in old.get("graphs", [])}
    for i, g in enumerate(new["graphs"]):
        prev = by_name.pop(g["graph"], None)
        g.setdefault("commit", new.get("commit"))
        g.setdefault("date", new.get("date"))
        if prev and "time_ms" in prev and "time_ms" not in g:
            prev.setdefault("commit", stamp["commit"])
            prev.setdefault("date", stamp["date"])
            prev["failed_later"] = {k: g.get(k) for k in ("commit", "date", "error")}
            new["graphs"][i] = prev
            continue
        if prev and "time_ms" in prev and "time_ms" in g:
            keep = {k: v for k, v in prev["time_ms"].items() if k not in g["time_ms"]}
            for k, v in prev["time_ms"].items():  # measured again without some products (--products)
                nv = g["time_ms"].get(k)
                if k != "cusparse" and k not in keep and isinstance(v, dict) and isinstance(nv, dict):
                    part = {d: w for d, w in v.items() if _product(d) in PRODUCTS + ("batch_scan",)
                            and _product(d) not in nv}
                    if part:
                        keep[k] = part
            earlier = list(prev.get("earlier", []))
            if keep:
                # ratio keys are CONFIG_PRODUCT (and k2_batch_scan): a prefix test took
                # k2F_k1_right for a ratio of k2F
                ratios = {}
                for k, v in prev.get("ratio_time_vs_cusparse", {}).items():
                    cfg, d = ("k2", "batch_scan") if k == "k2_batch_scan" else k.rsplit("_", 1)
                    if cfg in keep and (cfg not in g["time_ms"] or d in keep[cfg]):
                        ratios[k] = v
                earlier.insert(0, {"commit": prev.get("commit", stamp["commit"]),
                                   "date": prev.get("date", stamp["date"]), "time_ms": keep,
                                   "cusparse_ms": prev["time_ms"].get("cusparse"),
                                   "ratio_time_vs_cusparse": ratios})
            if earlier:
                g["earlier"] = earlier
    for g in by_name.values():
        g.setdefault("commit", stamp["commit"])
        g.setdefault("date", stamp["date"])
    out = dict(new)
    out["graphs"] = list(by_name.values()) + new["graphs"]
    with open(into_path, "w") as f:
        json.dump(out, f, indent=1)
    print("merged", new_path, "into", into_path)


def _reorder_arg(v):
    if v in ("none", "degree", "rcm"):
        return v
    try:
        f = float(v[4:]) if v.startswith("head") else None
    except ValueError:
        f = None
    if f is None or not 0 < f <= 1:
        raise argparse.ArgumentTypeError(f"none, degree, rcm or headF with F in (0, 1] expected; got {v!r}")
    return f"head{f:g}"  # one spelling per fraction: the result file's name


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outdir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--graphs", nargs="*", default=DEFAULT_GRAPHS)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--budget", type=float, default=150.0,
                   help="seconds; a graph not started (or not prepared) by then is skipped")
    p.add_argument("--prepare", metavar="DIR", help="host only: read/generate and build every graph into DIR")
    p.add_argument("--prepared", metavar="DIR", help="take the graphs from a --prepare DIR (waiting for them)")
    p.add_argument("--jobs", type=int, default=4, help="parallel processes of --prepare")
    p.add_argument("--gpu-build-max-arcs", type=float, default=4e7,
                   help="also time tree_from_csr (GPU sort) on graphs up to this many arcs")
    p.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS,
                   help=f"configurations to time (default all: {' '.join(DEFAULT_CONFIGS)})")
    p.add_argument("--big-arcs", type=float, default=2e8,
                   help="graphs with more arcs run only --big-configs")
    p.add_argument("--big-configs", nargs="*", default=BIG_CONFIGS)
    p.add_argument("--products", nargs="*", default=list(PRODUCTS), choices=PRODUCTS,
                   help="products to time (default all; without batch no n x B vectors are allocated)")
    p.add_argument("--reorder", type=_reorder_arg, default="none",
                   help="none, degree, rcm or headF (degree order of the fraction F of the vertices of largest "
                        "degree only, e.g. head0.01): renumber every graph first (results to "
                        "k2tree_gpu_reorder_<method>.json)")
    p.add_argument("--merge", nargs=2, metavar=("NEW", "INTO"),
                   help="merge the results file NEW into INTO (by graph; configurations of INTO that NEW "
                        "did not run are kept under 'earlier' with their commit) and exit")
    a = p.parse_args(argv)
    unknown = sorted((set(a.configs) | set(a.big_configs)) - set(DEFAULT_CONFIGS))
    if unknown:  # a misspelt configuration used to be skipped without a word
        p.error(f"unknown configuration(s) {', '.join(unknown)}; known: {' '.join(DEFAULT_CONFIGS)}")
    if a.merge:
        merge(*a.merge)
        return 0
    if a.prepare:
        prepare(a.graphs, a.prepare, a.jobs, a.reorder)
        return 0
    import cupy as cp
    import cupyx.scipy.sparse as cpsp

    os.makedirs(a.outdir, exist_ok=True)
    rev = commit()  # (a local named commit would shadow the function)
    out = {"benchmark": "k2tree_gpu", "commit": rev,
           "dirty": bool(sh(f"git -C {ROOT} status --porcelain 2>/dev/null")),
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "cupy": cp.__version__, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_loadavg": list(os.getloadavg()), "semiring": "plus_times", "vectors": "float32",
           "batch": a.batch, "products": a.products, "reps": a.reps, "tile": 1 << 20, "sample": 256,
           "reorder": a.reorder,
           "graphs": [], "skipped": []}
    start = time.perf_counter()
    deadline = start + a.budget
    path = os.path.join(a.outdir, "k2tree_gpu.json" if a.reorder == "none" else f"k2tree_gpu_reorder_{a.reorder}.json")
    for spec in a.graphs:
        if time.perf_counter() > deadline:
            out["skipped"].append(spec)
            continue
        try:
            got = (load_prepared(spec, a.prepared, deadline, a.reorder) if a.prepared
                   else prepare_inline(spec, a.reorder))
            if got is None:
                out["skipped"].append(spec)
                continue
            big = int(got[2]["m"]) > a.big_arcs
            r = bench_graph(*got, a.reps, a.batch, cp, cpsp, a.gpu_build_max_arcs,
                            a.big_configs if big else a.configs, tuple(a.products))
        except Exception as e:  # keep the other graphs' numbers
            r = {"graph": spec, "error": f"{type(e).__name__}: {e}"}
        r["elapsed_s"] = time.perf_counter() - start
        out["graphs"].append(r)
        print(json.dumps({k: r.get(k) for k in ("graph", "arcs", "bits_per_edge", "ratio_csr_fp32_over_tree",
                                                "ratio_time_vs_cusparse", "error", "elapsed_s")}), flush=True)
        out["host_loadavg_end"] = list(os.getloadavg())
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
