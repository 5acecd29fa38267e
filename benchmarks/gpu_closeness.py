"""Benchmark: exact closeness centrality on the GPU (BLEST Alg. 5, tensor-core MS-BFS)
against the CPU backend and networkit, as in BLEST Table 3 / Table 6.

    python benchmarks/gpu_closeness.py --outdir DIR [--graphs kron:18,kron:19,kron:20,road-NY,
        email-Enron,cond-mat-2005] [--time-limit 120] [--pes 2,4]

For every graph (undirected; closeness of all vertices = BFS from every vertex):

* ``gpu``: the GPU runner (replicated mode, kappa = 256, batches of 512 sources) over all
  sources while ``--time-limit`` seconds allow; if the limit stops it, the total is
  extrapolated from the batches done (``extrapolated: true``).  Rate = edge visits per
  second per GPU, ``sources * m / seconds`` (``n * m / time`` for a full run, m = arcs,
  each undirected edge twice), against BLEST's 4.7e11 (com-LiveJournal, 4.0M vertices,
  69.4M edges, 118 s on 5 H100s; 4.0e6 * 69.4e6 / 118 / 5, the issue's figure).  The sums of the first
  batch are checked exactly against the CPU backend, and 16 vertices of a full run with
  ``verify_closeness`` (single BFSs).
* ``gpu_end_to_end``: ``closeness(g, backend="gpu")`` when the estimate fits the limit
  (driver, host merges and reorder/BVSS preprocessing included).
* ``cpu``: the CPU backend (``distgraph.algorithms.msbfs.run_batches``, all cores of this
  machine) on as many sources as fit a quarter of the limit; rate and extrapolated total.
* ``networkit``: ``networkit.centrality.Closeness`` (GENERALIZED, all threads) on graphs
  with n * m < 2e9, else ``networkit.distance.BFS`` from a sample of sources; rate and
  extrapolated total.
* ``naive``: kappa = 256 single-source BLEST BFSs (``GpuBFS``, Alg. 3/4) against one
  launch of Alg. 5 from the same 256 sources (BLEST Table 6: 2.7x on average).
* ``--pes 2,4``: ``mpirun -n P`` workers time replicated against partitioned mode on
  ``--modes-graph`` (kron:16; several PEs on one GPU run in limited MPG: the ratio shows
  the protocol's sharing cost, not multi-GPU speed).
* ``--reorder``: the vertex ordering of the Kronecker graphs (default ``auto``, Jaccard;
  ``rcm`` costs seconds instead of minutes of preprocessing at scale 20); the real graphs
  always use ``auto``.  ``gpu_end_to_end`` runs only where the ordering is ``auto`` (what
  ``closeness()`` uses).
* ``--profile GRAPH@REORDER,...``: instead of the benchmark, a phase breakdown (stepwise
  kernels timed with CUDA events) and the persistent kernel under parameter variants
  (``PROFILE_VARIANTS``), written to gpu_closeness_profile.json.
* ``--batch-order input|ball``: how the ``gpu`` rows (and ``--variants``) group the sources
  before cutting batches: vertex ids (default) or compact BFS balls of kappa sources
  (``msbfs.ball_sources``, what ``closeness()`` does with DISTGRAPH_MSBFS_BATCH_ORDER=ball);
  the first-batch check runs the CPU backend on the same sources.
* ``--block-sweep GRAPH,...``: instead of the benchmark, the ``gpu`` row of every source for
  each ``--sweep-variants`` label (default b256,b512,b1024: threads per block of the block
  schedule, ``GpuMSBFS(block_threads=...)``) and each ``--sweep-orders`` order (default
  input,ball), written to gpu_closeness_block_sweep.json (``benchmarks/msbfs_block_sweep.sh``).

Writes DIR/gpu_closeness.json with commit, device and date.
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

# The bar of issue 5: BLEST Table 3, com-LiveJournal (4.0M vertices, 69.4M edges), 118 s on 5 H100s,
# n * m / time / GPUs = 4.0e6 * 69.4e6 / 118 / 5 = 4.7e11 edge visits per second per GPU.  (Session 1
# wrote 2 * 69.4e6 here, counting LiveJournal's edges twice, and reported a bar of 9.4e11; the
# issue's number is 4.7e11.  Our own rates use m = arcs of the searched graph, both directions of
# an undirected edge, which is what a BFS from every vertex visits.)
BLEST_RATE = 4.0e6 * 69.4e6 / 118 / 5
DEFAULT_GRAPHS = "email-Enron,cond-mat-2005,road-NY,kron:18,kron:19,kron:20"



def load(spec):
    import distgraph
    from distgraph import generators as gen
    from distgraph.graph import Graph

    if spec.startswith("kron:"):
        g = gen.kronecker(int(spec.split(":")[1]))
    else:
        names = {"road-NY": "road-NY.gr.xz", "road-FLA": "road-FLA.gr.xz", "email-Enron": "email-Enron.mtx.gz",
                 "cond-mat-2005": "cond-mat-2005.mtx.gz", "wiki-Vote": "wiki-Vote.txt.gz"}
        fname = names.get(spec, spec)
        for d in (ROOT / ".devdata", ROOT.parent / "shared" / "data", Path(os.environ.get("DISTGRAPH_DATA", "/nonexistent"))):
            if (d / fname).is_file():
                g = distgraph.read_graph(d / fname)
                break
        else:
            raise FileNotFoundError(f"graph {spec}: {fname} not found in .devdata/ or ../shared/data")
    return Graph(g.indptr, g.indices, None, directed=g.directed)


def _ctx(backend):
    from mpi4py import MPI

    from distgraph.runtime.context import get_context

    return get_context(MPI.COMM_SELF, backend)


def _out(size):
    return (np.zeros(size, np.uint64), np.zeros(size, np.int64), np.zeros(size, np.uint64), np.zeros(size, np.uint64),
            np.zeros(size, np.uint64))


BATCH_ORDERS = ("input", "ball")


def batch_sources(g, order, kappa, csc=None, skip=None):
    """The sources of a closeness run (every vertex with out-arcs, but those of ``skip``: the
    folded leaves) in the order the runner cuts them into batches: ``"input"`` (vertex ids) or
    ``"ball"`` (compact BFS balls of ``kappa`` sources,
    :func:`distgraph.algorithms.msbfs.ball_sources`, what ``closeness()`` hands the GPU runner
    with DISTGRAPH_MSBFS_BATCH_ORDER=ball).  Returns (sources, seconds the ordering took)."""
    expect_order(order)
    has = np.diff(g.indptr) > 0
    if skip is not None:
        has[skip] = False
    sources = np.flatnonzero(has).astype(np.int64)
    if order == "input":
        return sources, 0.0
    from distgraph.algorithms.msbfs import ball_sources

    tptr, tidx = (g.csc()[:2] if csc is None else csc)
    t0 = time.perf_counter()
    out = ball_sources(g.indptr, g.indices, tptr, tidx, sources, int(kappa))
    return np.asarray(out, np.int64), time.perf_counter() - t0


def expect_order(order):
    if order not in BATCH_ORDERS:
        raise ValueError(f"batch order must be one of {', '.join(BATCH_ORDERS)}; got {order!r}")


def bench_gpu(g, limit, reorder="auto", check=True, same_as=None, batch_order="input", sources=None, warmup=True,
              first_batch=True, fold=False, **kw):
    """The GPU runner as ``closeness()`` makes it (``make_runner(..., all_sources=True)``:
    symmetric sums on undirected graphs), kappa 256 unless ``kw`` says otherwise.  ``check``:
    the first batch's sums against the CPU backend; ``same_as``: against these arrays (the
    first batch of another GPU row with the same sums and sources); the first batch's sums
    are returned under the key ``_first`` (not written to the JSON).  ``batch_order``: how
    the sources are grouped before they are cut into batches (:func:`batch_sources`;
    ``sources``, if given, is that order already computed); the check runs the CPU backend
    on the same first batch.  ``warmup``: one untimed run of 256 sources before the
    first batch (the kernel is compiled and loaded when the runner is made);
    ``first_batch=False``: no untimed run at all, hence no check (on road-NY the first
    batch alone takes seconds).  A run of every source also returns its sums under ``_total``
    (per vertex, or per source at the sources when symmetric: the same totals whatever the
    order and the runner).  ``fold``: leaves folded into their neighbour's BFS as ``closeness()``
    does (``config.gpu_closeness_fold_leaves``, symmetric sums only): they are not sources
    (``sources`` must skip them), the timed loop folds, and the totals are unfolded
    (``_unfold_leaves``), so they equal an unfolded row's; the rate counts the leaves' closeness
    too (n·m / time).  The warm-up and the first batch's check run unfolded."""
    import cupy as cp

    from distgraph.backends.cpu.bits import normalize_limbs
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    expect_order(batch_order)
    tptr, tidx, _ = g.csc()
    t0 = time.perf_counter()
    kw.setdefault("kappa", 256)
    kw.setdefault("symmetric", not g.directed)   # what make_runner(all_sources=True) picks
    r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=_ctx("gpu"), announce=False, reorder=reorder, **kw)
    prep = time.perf_counter() - t0
    order_s = 0.0
    folds = None
    if fold:
        if not r.symmetric:   # the sweep skipped the leaves as sources: they must be folded
            raise ValueError("fold: the runner has no symmetric sums (directed graph, nosym, gridN or a fallback "
                             "from the block schedule): leaves cannot be folded")
        from distgraph.algorithms.closeness import leaf_folds

        folds = leaf_folds(g.indptr, g.indices)
    if sources is None:
        sources, order_s = batch_sources(g, batch_order, r.kappa, (tptr, tidx), None if folds is None else folds[0])
    elif folds is not None and np.isin(sources, folds[0]).any():
        raise ValueError("fold: the sources given hold folded leaves (batch_sources(..., skip=leaves))")
    batches = [sources[i:i + 512] for i in range(0, sources.size, 512)]
    # warm up (kernel compile) on the first batch, and check its sums against the CPU backend;
    # deferred and drained as the timed loop runs them (not deferred, a run of few batches on
    # the block schedule goes to the grid-schedule companion, and neither the warm-up nor the
    # check would touch the block kernel that is timed)
    if not first_batch:
        check, same_as, warmup = False, None, False
    if warmup:
        out = _out(g.n)
        r.run(batches[0][:256], False, out, defer=True)
        r.drain(*out)
    out = None
    if first_batch:
        out = _out(g.n)
        r.run(batches[0], False, out, defer=True)
        r.drain(*out)
        normalize_limbs(out[2], out[3], out[4])
    from distgraph.algorithms.msbfs import run_batches

    exact = None
    if check:
        ref = run_batches(g.indptr, g.indices, tptr, tidx, batches[0], per_source=r.symmetric, batch_size=512,
                          ctx=_ctx("cpu"), progress=False)[:5]
        if r.symmetric:  # a batch's sums are its sources' own sums, at the sources
            full = _out(g.n)
            for a, b in zip(full, ref):
                np.add.at(a, batches[0], np.asarray(b).astype(a.dtype))
            ref = full
        exact = all(np.array_equal(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
                    for a, b in zip(out, ref))
    same = None
    if same_as is not None:
        same = all(np.array_equal(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
                   for a, b in zip(out, same_as))
    cp.cuda.Device().synchronize()
    r.info["launches"] = r.info["levels"] = r.info["bottom_up_levels"] = r.info["block_launches"] = 0
    acc = _out(g.n)
    done = 0
    if folds is not None:
        r.fold_leaves(folds[2])
    t0 = time.perf_counter()
    for b in batches:  # as the driver runs them without a checkpoint: sums kept on the device
        r.run(b, False, acc, defer=True)
        done += b.size
        cp.cuda.Device().synchronize()  # launches are asynchronous: keep the clock honest
        if time.perf_counter() - t0 > limit:
            break
    r.drain(*acc)
    cp.cuda.Device().synchronize()
    el = time.perf_counter() - t0
    normalize_limbs(acc[2], acc[3], acc[4])
    nfold = 0
    if folds is not None:
        from distgraph.algorithms.closeness import _unfold_leaves

        r.fold_leaves(None)
        _unfold_leaves(*acc, *folds)
        nfold = int(folds[0].size)
    total = el * sources.size / done
    rate = (sources.size + nfold) * g.m / total   # n·m / time: every vertex's closeness (sources with arcs)
    return {"fold": folds is not None, "folded_leaves": nfold, "preprocess_s": prep, "mode": r.mode, "kappa": r.kappa, "grid": r.info["grid"], "groups": r.groups,
            "schedule": r.schedule, "slots": r.slots, "symmetric": r.symmetric,
            "shared_dbits": bool(getattr(r, "shared_dbits", False)), "prefetch": bool(getattr(r, "prefetch", False)),
            "flush4": bool(getattr(r, "flush4", False)), "block_threads": r.info["grid"][1], "min_blocks": r.info.get("min_blocks"),
            "registers": r.info.get("registers"), "local_bytes": r.info.get("local_bytes"),
            "block_launches": r.info["block_launches"], "batch_order": batch_order, "batch_order_s": order_s,
            "reorder": r.info["reorder"], "bvss": r.info["bvss"], "sources_run": int(done),
            "sources_total": int(sources.size), "seconds": el, "total_s": total, "extrapolated": bool(done < sources.size),
            "edge_visits_per_s_per_gpu": rate, "vs_blest_per_gpu": rate / BLEST_RATE,
            "levels_per_launch": r.info["levels"] / max(r.info["launches"] * r.groups, 1),  # per kappa sources
            "bottom_up_levels": r.info["bottom_up_levels"], "first_batch_exact_vs_cpu": exact,
            "first_batch_same_as_default": same, "_first": out, "_total": acc if done == sources.size else None,
            "device_bytes": r.plan.total, "pull": bool(getattr(r, "pull", False)),
            "pull_candidates": getattr(r, "pull_candidates", None)}


def bench_wave(g, limit, sources, fold=False, aside=None, **wave_kw):
    """The distance-profile wave (``GpuWave``; undirected graphs) on ``sources`` in the order
    given, launches of 4 batches per slot, after an untimed batch (compile); the same keys as
    :func:`bench_gpu` where they apply, ``_total`` the per-source sums at the sources (the
    symmetric sums of the block schedule: the same totals). ``fold``: leaves folded as
    ``closeness()`` does (``sources`` must skip them; totals unfolded), as in :func:`bench_gpu`.
    ``timeline``: per batch of the last launch (the whole run when it is one launch) its
    milliseconds, levels and fixes. ``aside``: a bool per source, run on the bit-parallel kernel
    beside the wave (``GpuWave.run``; what closeness() gives: the ball order's spread groups)."""
    import cupy as cp

    from distgraph.backends.gpu.msbfs_wave import GpuWave

    if g.directed:
        raise ValueError("wave: undirected graphs only")
    cp.get_default_memory_pool().free_all_blocks()   # what a failed row before may have left
    t0 = time.perf_counter()
    r = GpuWave(g.indptr, g.indices, **wave_kw)
    try:
        r._bits()   # the bit-parallel runner of overflowed batches, made before the clock starts
        prep = time.perf_counter() - t0
        r.run(sources[:256], _out(g.n))
        cp.cuda.Device().synchronize()
        scratch = _out(g.n)   # the bit-parallel runner of given-up batches, warmed up too (untimed)
        r._bits().run(sources[:256], False, scratch, defer=True)
        r._bits().drain(*scratch)
        r.info.update(levels=0, batches=0, overflow_batches=0, wave_cycles=0, sums_cycles=0, fix_rounds=0, fixes=0,
                      wide_batches=0, wave_s=0.0, fallback_s=0.0, aside_batches=0)
        return _bench_wave_rows(r, g, limit, sources, fold, aside, prep)
    finally:   # the slots' state back to the device before the next row (slots are sized to the free memory)
        del r
        import gc

        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()


def _bench_wave_rows(r, g, limit, sources, fold, aside, prep):
    """:func:`bench_wave`'s timed run on the runner ``r`` (made and warmed up)."""
    import cupy as cp

    from distgraph.backends.cpu.bits import normalize_limbs

    folds = None
    if fold:
        from distgraph.algorithms.closeness import leaf_folds

        folds = leaf_folds(g.indptr, g.indices)
        if np.isin(sources, folds[0]).any():
            raise ValueError("fold: the sources given hold folded leaves (batch_sources(..., skip=leaves))")
        r.fold_leaves(folds[2])
    acc = _out(g.n)
    done, step = 0, 256 * r.slots * 4
    t0 = time.perf_counter()
    for lo in range(0, sources.size, step):
        b = sources[lo:lo + step]
        r.run(b, acc, None if aside is None else aside[lo:lo + step])
        done += b.size
        cp.cuda.Device().synchronize()
        if time.perf_counter() - t0 > limit:
            break
    el = time.perf_counter() - t0
    normalize_limbs(acc[2], acc[3], acc[4])
    nfold = 0
    if folds is not None:
        from distgraph.algorithms.closeness import _unfold_leaves

        _unfold_leaves(*acc, *folds)
        nfold = int(folds[0].size)
    total = el * sources.size / done
    rate = (sources.size + nfold) * g.m / total
    tl = getattr(r, "timeline", None)   # the last run's batches: start, end, end of the 2-byte halves, SM
    timeline = None
    if tl is not None and tl.size:
        t0n = int(tl[:, 0].min())
        end = np.maximum(tl[:, 1], tl[:, 2]) - t0n
        dur = (tl[:, 1] - tl[:, 0]) / 1e6
        wide = np.flatnonzero(tl[:, 2])
        timeline = {"batches": int(tl.shape[0]), "span_ms": float(end.max() / 1e6),
                    "batch_ms_p50_p90_max": [float(np.percentile(dur, 50)), float(np.percentile(dur, 90)),
                                             float(dur.max())],
                    "last_ends_ms": sorted((end / 1e6).tolist())[-5:],
                    "wide": [{"batch": int(b), "start_ms": float((tl[b, 0] - t0n) / 1e6),
                              "gave_up_ms": float((tl[b, 1] - t0n) / 1e6),
                              "halves_end_ms": float((tl[b, 2] - t0n) / 1e6)} for b in wide],
                    "per_batch": {"start_ms": np.round((tl[:, 0] - t0n) / 1e6, 3).tolist(),
                                  "ms": np.round(dur, 3).tolist(), "levels": tl[:, 4].tolist(),
                                  "fixes": tl[:, 5].tolist(), "sm": tl[:, 3].tolist()}}
    res = {"schedule": "wave", "fold": folds is not None, "folded_leaves": nfold, "kappa": 256, "slots": r.slots,
            "block_threads": r.block_threads,
            "min_blocks": r.min_blocks, "sources_per_thread": r.spt, "neighbours": r.nb, "unroll": r.unroll,
            "recip_shared": r.recip_shared, "fast_sums": r.fast_sums, "group_sync": r.group_sync, "ell": r.ell,
            "preprocess_s": prep, "sources_run": int(done), "sources_total": int(sources.size), "seconds": el,
            "total_s": total, "extrapolated": bool(done < sources.size), "edge_visits_per_s_per_gpu": rate,
            "vs_blest_per_gpu": rate / BLEST_RATE, "levels_per_launch": r.info["levels"] / max(r.info["batches"], 1),
            "overflow_batches": r.info["overflow_batches"], "wave_info": dict(r.info), "timeline": timeline,
            "first_batch_exact_vs_cpu": None,
            "_first": None, "_total": acc if done == sources.size else None, "device_bytes": None}
    return res


PROFILE_VARIANTS = [  # (label, GpuMSBFS keyword overrides); "base" = the defaults
    ("base", {}), ("tc_always", {"tc_ratio": 2**20}), ("tc_never", {"tc_ratio": 0}), ("tc_16", {"tc_ratio": 16}),
    ("bu_never", {"bu_ratio": 0}), ("bu_1", {"bu_ratio": 1}), ("bu_16", {"bu_ratio": 16}),
    ("bu_64", {"bu_ratio": 64}), ("heavy_none", {"bu_heavy": 2**40}), ("heavy_8", {"bu_heavy": 8}),
    ("heavy_128", {"bu_heavy": 128}), ("minb_3", {"min_blocks": 3}), ("minb_4", {"min_blocks": 4}),
    ("bu_4", {"bu_ratio": 4}), ("groups_1", {"groups": 1}), ("groups_2", {"groups": 2}), ("groups_4", {"groups": 4}),
]


def bench_profile(g, reorder, launches, only=()):
    """Where the time goes: the stepwise kernels timed with CUDA events (a breakdown by
    phase), then the persistent kernel under each variant of PROFILE_VARIANTS, on the same
    ``launches * 256`` random sources."""
    import cupy as cp

    from distgraph.backends.gpu.msbfs import BU_RATIO, TC_RATIO, GpuMSBFS

    tptr, tidx, _ = g.csc()
    nz = np.flatnonzero(np.diff(g.indptr) > 0)
    rng = np.random.default_rng(7)
    srcs = np.sort(rng.choice(nz, size=min(nz.size, 256 * launches), replace=False)).astype(np.int64)
    res = {"sources": int(srcs.size), "reorder": reorder}

    def mk(**kw):
        return GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=_ctx("gpu"), kappa=256, announce=False,
                        reorder=reorder, **kw)

    for label, kw in (("stepwise", {}), ("stepwise_tc_always", {"tc_ratio": 2**20})):
        r = mk(mode="stepwise", **kw)
        r.run(srcs[:256], False, _out(g.n))
        r.info["levels"] = r.info["bottom_up_levels"] = 0
        prof = r.profile()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        r.run(srcs, False, _out(g.n))
        el = time.perf_counter() - t0
        res[label] = {"wall_s": el, "kernel_ms": {k: [round(v[0], 3), v[1]] for k, v in prof.items()},
                      "levels": r.info["levels"], "bottom_up_levels": r.info["bottom_up_levels"]}
        print("profile", label, json.dumps(res[label]), flush=True)
    ref = None
    base = None
    for label, kw in PROFILE_VARIANTS:
        if only and label not in only and label != "base":
            continue
        try:
            if base is not None and set(kw) <= {"tc_ratio", "bu_ratio"}:
                r = base  # run-time parameters: no new runner (preprocessing) needed
                r.tc_ratio = kw.get("tc_ratio", TC_RATIO)
                r.bu_ratio = kw.get("bu_ratio", BU_RATIO)
                r.use_bu = r.bu_ratio > 0
            else:
                r = mk(mode="replicated", **kw)
            if base is None:
                base = r
            out = _out(g.n)
            r.run(srcs[:256], False, out)
            r.info["levels"] = r.info["bottom_up_levels"] = 0
            acc = _out(g.n)
            best = np.inf
            for _ in range(2):
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                r.run(srcs, False, acc, defer=True)
                r.drain(*acc)
                cp.cuda.Device().synchronize()
                best = min(best, time.perf_counter() - t0)
            if ref is None:
                ref = acc
            same = all(np.array_equal(a, b) for a, b in zip(acc, ref))
            res[label] = {"s": best, "edge_visits_per_s": srcs.size * g.m / best, "grid": r.info["grid"],
                          "groups": r.groups,
                          "levels": r.info["levels"] / 2, "bottom_up_levels": r.info["bottom_up_levels"] / 2,
                          "same_sums_as_base": bool(same)}
        except Exception as e:
            res[label] = {"error": repr(e)}
        print("profile", label, json.dumps(res[label]), flush=True)
    return res


def batch_events(A, sources):
    """(events, levels, reached pairs) of one batch of ``sources`` on the pattern ``A``
    (scipy CSR): events are the distinct (vertex, level) pairs at which a BFS of the batch
    reaches the vertex (see :func:`count_events`)."""
    from scipy.sparse import csgraph

    D = csgraph.shortest_path(A, unweighted=True, indices=sources)
    D[np.isinf(D)] = -1
    ev = 0
    for v0 in range(0, A.shape[0], 20000):
        blk = np.sort(D[:, v0:v0 + 20000].astype(np.int64), axis=0)
        ev += int(((np.diff(blk, axis=0) != 0).sum(axis=0) + 1 - (blk[0] < 0)).sum())
    return ev, int(D.max()), int((D >= 0).sum())


def count_events(g, kappas=(32, 64, 256), seed=0):
    """CPU only (scipy): for one batch of kappa random sources, the levels, the reached
    (source, vertex) pairs and the *events* -- distinct (vertex, level) pairs with at least
    one BFS reaching the vertex at that level.  An event is a kappa-bit element that stage 2
    reads (Vn, Vc) and writes (F, Vc) and stage 1 reads again as a frontier element, so
    events * 5 * kappa / 8 bytes per batch is a floor on the state traffic of Alg. 5;
    pairs / events is the sharing between the BFSs of a batch."""
    import scipy.sparse as sp

    A = sp.csr_matrix((np.ones(g.indices.size, np.int8), g.indices, g.indptr), shape=(g.n, g.n))
    rng = np.random.default_rng(seed)
    out = {}
    for k in kappas:
        ev, levels, pairs = batch_events(A, rng.choice(g.n, size=min(k, g.n), replace=False))
        batches = -(-g.n // k)
        floor = batches * ev * 5 * k / 8
        out[str(k)] = {"levels": levels, "events_per_batch": ev, "pairs_per_batch": pairs,
                       "sharing": pairs / ev, "batches": batches, "state_bytes_floor": floor,
                       "seconds_floor_at_4.8TBps": floor / 4.8e12}
    return out


PROFILE_LEVELS = 4096       # levels of block 0's first batch timed (DG_MS_PROFILE)
PROFILE_BATCHES = 1 << 16   # batches whose start/end are stamped (DG_MS_PROFILE_BATCHES)


def block_profile_summary(batch_ns, batch_levels, batch_block, t2, t1, na, nd, nq, nbatches):
    """The profiling build's stamps (see kernels/msbfs.cu, block mode) -> a summary: per
    batch seconds and levels (mean, median, max), how many batches ran at once (mean over
    the launch), and for block 0's first batch per-level stage times (stage 2 of level l:
    t1[l + 1] - t2[l]; stage 1 of level l: t2[l] - t1[l]) with the slice sets and VSSs each
    visited. Times in microseconds; unstamped entries are 0."""
    nb = min(int(nbatches), len(batch_levels))
    ns = np.asarray(batch_ns, np.uint64)[:2 * nb].reshape(nb, 2).astype(np.float64)
    ok = (ns[:, 0] > 0) & (ns[:, 1] >= ns[:, 0])
    dur = (ns[ok, 1] - ns[ok, 0]) / 1e3
    out = {"batches": int(ok.sum()), "blocks": int(np.unique(np.asarray(batch_block)[:nb][ok]).size)}
    if dur.size:
        span = (ns[ok, 1].max() - ns[ok, 0].min()) / 1e3
        lv = np.asarray(batch_levels)[:nb][ok].astype(np.float64)
        out.update({"batch_us": {"mean": float(dur.mean()), "median": float(np.median(dur)), "max": float(dur.max())},
                    "levels": {"mean": float(lv.mean()), "max": int(lv.max())},
                    "us_per_level_mean": float((dur / np.maximum(lv, 1)).mean()),
                    "span_us": float(span), "concurrent_mean": float(dur.sum() / span) if span > 0 else None})
    t2 = np.asarray(t2, np.uint64).astype(np.float64)
    t1 = np.asarray(t1, np.uint64).astype(np.float64)
    rows = []
    for lvl in np.flatnonzero(t2):
        st2 = (t1[lvl + 1] - t2[lvl]) / 1e3 if lvl + 1 < t1.size and t1[lvl + 1] > 0 else None
        st1 = (t2[lvl] - t1[lvl]) / 1e3 if t1[lvl] > 0 else None
        rows.append({"level": int(lvl), "stage1_us": st1, "stage2_us": st2, "active_sets": int(na[lvl]),
                     "dirty_sets": int(nd[lvl]), "queue_vss": int(nq[lvl])})
    s1 = [r["stage1_us"] for r in rows if r["stage1_us"] is not None]
    s2 = [r["stage2_us"] for r in rows if r["stage2_us"] is not None]
    out["first_batch_block0"] = {"levels": len(rows), "stage1_us_total": float(sum(s1)),
                                 "stage2_us_total": float(sum(s2)),
                                 "queue_vss_total": int(sum(r["queue_vss"] for r in rows)),
                                 "dirty_sets_total": int(sum(r["dirty_sets"] for r in rows)), "per_level": rows}
    return out


def block_profile(g, reorder="auto", **kw):
    """Exact closeness of every source on the block schedule with the profiling build of
    its kernel (kernels/msbfs.cu, DG_MS_PROFILE): where a batch's time goes, level by
    level (e.g. road-NY's 7.4 s). One untimed warm-up batch first (compilation)."""
    import cupy as cp

    from distgraph.backends.gpu.loader import get_module
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    tptr, tidx, _ = g.csc()
    kw.setdefault("kappa", 256)
    kw.setdefault("symmetric", not g.directed)
    kw.setdefault("pull", "off")   # the profiling stamps are stage 1 + stage 2's (the pull kernel has none)
    r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=_ctx("gpu"), announce=False, reorder=reorder, **kw)
    if r.schedule != "blocks":
        return {"error": f"schedule {r.schedule!r}: the profile covers the block schedule only"}
    # the runner's build (words, block size, blocks per SM, prefetch) plus the profiling stamps
    defs = {**r._block_defs, "DG_MS_PROFILE": PROFILE_LEVELS, "DG_MS_PROFILE_BATCHES": PROFILE_BATCHES}
    mod = get_module("msbfs", defines=defs)
    r._blocks = mod.get_function("distgraph_msbfs_blocks")
    names = {"batch_ns": cp.uint64, "batch_levels": cp.int32, "batch_block": cp.int32, "t2": cp.uint64,
             "t1": cp.uint64, "na": cp.int64, "nd": cp.int64, "nq": cp.int64}
    glob = {k: cp.ndarray(((2 if k == "batch_ns" else 1) * PROFILE_BATCHES if k.startswith("batch")
                           else PROFILE_LEVELS + 1,), dt, mod.get_global(f"dg_ms_prof_{k}"))
            for k, dt in names.items()}
    sources = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    out = _out(g.n)
    r.run(sources[:256], False, out, defer=True)  # warm-up
    r.drain(*out)
    for a in glob.values():
        a.fill(0)
    cp.cuda.Device().synchronize()
    out = _out(g.n)
    t0 = time.perf_counter()
    r.run(sources, False, out, defer=True)
    r.drain(*out)
    cp.cuda.Device().synchronize()
    el = time.perf_counter() - t0
    h = {k: a.get() for k, a in glob.items()}
    nb = -(-sources.size // r.kappa)
    res = {"seconds": el, "sources": int(sources.size), "kappa": r.kappa, "slots": r.slots,
           "launches": int(r.info["launches"]), "note": "one launch expected (all sources held until drain)"}
    res.update(block_profile_summary(h["batch_ns"], h["batch_levels"], h["batch_block"], h["t2"], h["t1"], h["na"],
                                     h["nd"], h["nq"], nb))
    return res


def variant_kwargs(v):
    """GpuMSBFS keywords of a --variants label, tokens joined by '+' (None: an unknown token)."""
    if "+" in v:
        kw = {}
        for t in v.split("+"):
            one = variant_kwargs(t)
            if one is None:
                return None
            kw.update(one)
        return kw
    if v == "pf":
        return {"prefetch": True}
    if v == "fold":
        return {"fold": True}
    if v == "wave":
        return {"wave": True}
    if v.startswith("wave") and v[4:].isdigit():   # waveU: unroll U; wave+bT: blocks of T threads
        return {"wave": True, "unroll": int(v[4:])}
    if v == "halves":   # the wave's given-up batches as two halves with 2-byte offsets
        return {"wide": "halves"}
    if v.startswith("rsh") and v[3:].isdigit():   # the wave's reciprocals in shared memory
        return {"rsh": int(v[3:])}
    if v == "noaside":   # the wave without the ball order's spread groups on the bit kernel
        return {"noaside": True}
    if v.startswith("r") and v[1:].isdigit():   # a repeat of the row (a label of its own; no option)
        return {}
    if v in ("fs0", "gs0", "el0"):   # the wave without its sums fast path, group sync (benchmarks only), ELL
        return {{"fs0": "fast_sums", "gs0": "group_sync", "el0": "ell"}[v]: False}
    if v.startswith("spt") and v[3:].isdigit():   # the wave's sources per thread in its sums pass
        return {"spt": int(v[3:])}
    if v.startswith("nb") and v[2:].isdigit():   # the wave's neighbour profiles loaded at once
        return {"nb": int(v[2:])}
    if v.startswith("b") and v[1:].isdigit():
        return {"block_threads": int(v[1:])}
    if v == "f4":
        return {"flush4": True}
    if v.startswith("k") and v[1:].isdigit():
        return {"kappa": int(v[1:])}
    if v.startswith("grid") and v[4:].isdigit():
        return {"groups": int(v[4:]), "symmetric": False}
    if v == "nosym":
        return {"symmetric": False}
    if v.startswith("mb") and v[2:].isdigit():
        return {"min_blocks": int(v[2:])}
    if v.startswith("sl") and v[2:].isdigit():
        return {"slots": int(v[2:])}
    if v == "pull":
        return {"pull": "on"}
    if v == "nopull":
        return {"pull": "off"}
    if v == "pv":
        return {"pull_candidates": "vertices"}
    if v == "sdb":
        return {"shared_dbits": True}
    if v.startswith("sdbmb") and v[5:].isdigit():
        return {"shared_dbits": True, "min_blocks": int(v[5:])}
    return None


SWEEP_KEYS = ("kappa", "schedule", "slots", "block_threads", "min_blocks", "shared_dbits", "prefetch", "flush4", "pull",
              "pull_candidates", "fold", "folded_leaves", "overflow_batches", "wave_info", "sources_per_thread",
              "neighbours", "unroll", "timeline", "recip_shared", "fast_sums", "group_sync", "ell",
              "registers", "local_bytes", "block_launches", "batch_order", "batch_order_s", "preprocess_s",
              "sources_run", "sources_total", "seconds", "total_s", "extrapolated", "edge_visits_per_s_per_gpu",
              "vs_blest_per_gpu", "levels_per_launch", "first_batch_exact_vs_cpu", "device_bytes")


def block_sweep(g, reorder, labels, orders, limit, check, rows, save, spec=""):
    """The GPU row of ``g`` (every source, :func:`bench_gpu`) for each ``--variants`` label
    (e.g. b256, b512, b1024: threads per block of the block schedule) and each batch order,
    into ``rows["<label>/<order>"]``; ``save()`` after each row.  Labels outer, orders
    inner, so a run cut short still has both orders of the first labels.  Each order's
    sources are computed once, and its first row checks its first batch against the CPU
    backend (``check``; the other rows skip the untimed first batch, seconds on road-NY).
    Every row that runs all sources is compared with the first such row: the totals
    (farness, reach, harmonic limbs) must be equal bit for bit whatever the block size and
    the order (``total_same_as_first_row``)."""
    tptr, tidx, _ = g.csc()
    srcs, checked = {}, set()
    ref = None
    for label in labels:
        kw = variant_kwargs(label)
        for order in orders:
            key = f"{label}/{order}"
            t0 = time.perf_counter()
            try:
                if kw is None:
                    raise ValueError(f"unknown variant label {label!r}")
                skey = order + ("/fold" if kw.get("fold") and not g.directed else "")
                if skey not in srcs:
                    skip = None
                    if skey.endswith("/fold"):
                        from distgraph.algorithms.closeness import leaf_folds

                        skip = leaf_folds(g.indptr, g.indices)[0]
                    srcs[skey] = batch_sources(g, order, kw.get("kappa", 256), (tptr, tidx), skip)
                sources, order_s = srcs[skey]
                first = order not in checked
                if kw.get("wave"):   # the profile-wave prototype (GpuWave), not a GpuMSBFS variant
                    names = {"unroll": "unroll", "block_threads": "block_threads", "min_blocks": "min_blocks",
                             "spt": "sources_per_thread", "nb": "neighbours", "wide": "wide",
                             "rsh": "recip_shared", "fast_sums": "fast_sums", "group_sync": "group_sync", "ell": "ell"}   # unset: GpuWave's defaults
                    aside = None
                    if order == "ball" and not kw.get("noaside"):   # as closeness() does
                        from distgraph.algorithms.msbfs import ball_sources

                        again, aside = ball_sources(g.indptr, g.indices, tptr, tidx, np.sort(sources), 256, spread=True)
                        if not np.array_equal(again, sources):
                            raise RuntimeError("the ball order's spread groups: a different order than the row's")
                    res = bench_wave(g, limit, sources, fold=bool(kw.get("fold")) and not g.directed, aside=aside,
                                     **{names[k]: v for k, v in kw.items() if k in names})
                else:
                    res = bench_gpu(g, limit, reorder, check=check and first, batch_order=order, sources=sources,
                                    warmup=False, first_batch=first, **kw)
                res.pop("_first")
                total = res.pop("_total")
                if res["first_batch_exact_vs_cpu"] is not False:
                    checked.add(order)
                rows[key] = {k: res.get(k) for k in SWEEP_KEYS}
                rows[key]["batch_order_s"] = order_s
                same = None
                if total is not None:
                    if ref is None:
                        ref = (key, total)
                    else:
                        same = all(np.array_equal(a, b) for a, b in zip(total, ref[1]))
                rows[key]["total_same_as_first_row"] = same
                rows[key]["first_row"] = ref[0] if ref is not None else None
                if res.get("schedule") not in ("blocks", "wave"):
                    rows[key]["note"] = "not the block schedule: block_threads does not apply"
            except Exception as e:
                rows[key] = {"error": repr(e)[:2000]}
            rows[key]["row_wall_s"] = time.perf_counter() - t0
            print(spec, key, json.dumps(rows[key], default=float), flush=True)
            save()


def bench_end_to_end(g):
    from distgraph.algorithms.closeness import closeness, verify_closeness

    t0 = time.perf_counter()
    res = closeness(g, backend="gpu", progress=False, comm=_comm_self())
    el = time.perf_counter() - t0
    verified = True
    try:
        verify_closeness(g, res, sample=16)
    except Exception as e:  # recorded, not raised: the JSON says what failed
        verified = repr(e)
    return {"seconds": el, "edge_visits_per_s": g.n * g.m / el, "verified_16_vertices": verified}


def _comm_self():
    from mpi4py import MPI

    return MPI.COMM_SELF


def bench_cpu(g, limit):
    """The CPU backend on random sources: rounds of 512 sources per thread (the driver gives
    each thread a batch of 512, so smaller rounds leave threads idle) while ``limit``
    seconds allow, after an untimed warm-up that compiles the kernels; extrapolated to all
    sources.  One round may take longer than ``limit`` on large or high-diameter graphs."""
    from distgraph.algorithms.msbfs import run_batches, thread_count

    tptr, tidx, _ = g.csc()
    ctx = _ctx("cpu")
    sources = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
    rng = np.random.default_rng(1)
    run_batches(g.indptr, g.indices, tptr, tidx, sources[:64], per_source=False, batch_size=512, ctx=ctx,
                progress=False)
    k = 512 * max(1, thread_count(ctx))
    done, el = 0, 0.0
    while el < limit and done < sources.size:
        s = np.sort(rng.choice(sources, size=min(k, sources.size), replace=False))
        t0 = time.perf_counter()
        run_batches(g.indptr, g.indices, tptr, tidx, s, per_source=False, batch_size=512, ctx=ctx, progress=False)
        el += time.perf_counter() - t0
        done += s.size
    rate = done * g.m / el
    return {"sources_run": int(done), "seconds": el, "edge_visits_per_s": rate, "total_s": sources.size * g.m / rate,
            "threads": thread_count(ctx)}


def bench_networkit(g, limit):
    try:
        import networkit as nk
    except ImportError:
        return {"skipped": "networkit not installed"}
    G = nk.Graph(g.n, directed=g.directed)
    src = np.repeat(np.arange(g.n), np.diff(g.indptr))
    keep = (src <= g.indices) if not g.directed else np.ones(src.size, bool)
    G.addEdges((src[keep].astype(np.uint64), g.indices[keep].astype(np.uint64)), checkMultiEdge=False)
    threads = nk.getMaxNumberOfThreads()
    if g.n * g.m < 2e11:  # about 10 s with 16 threads (cond-mat, Enron, road-NY in full)
        t0 = time.perf_counter()
        nk.centrality.Closeness(G, True, nk.centrality.ClosenessVariant.GENERALIZED).run()
        el = time.perf_counter() - t0
        return {"mode": "full Closeness", "seconds": el, "total_s": el, "edge_visits_per_s": g.n * g.m / el,
                "threads": threads}
    rng = np.random.default_rng(2)
    done, el = 0, 0.0
    while el < limit:
        s = int(rng.integers(0, g.n))
        t0 = time.perf_counter()
        nk.distance.BFS(G, s, False).run()
        el += time.perf_counter() - t0
        done += 1
    rate = done * g.m / el
    # one thread timed; the full run would use every thread: its best case, perfect scaling
    return {"mode": f"{done} single BFSs (one thread each)", "seconds": el, "edge_visits_per_s": rate,
            "total_s_one_thread": g.n * g.m / rate, "total_s": g.n * g.m / rate / threads,
            "total_s_is": f"one thread's rate times {threads} threads (perfect scaling: networkit's best case)",
            "threads": threads}


def bench_naive(g, reorder="auto"):
    """kappa single-source BLEST BFSs against one multi-source launch from the same sources."""
    import cupy as cp

    from distgraph.backends.gpu.bfs import GpuBFS
    from distgraph.backends.gpu.msbfs import GpuMSBFS

    tptr, tidx, _ = g.csc()
    sources = np.flatnonzero(np.diff(g.indptr) > 0)[:256].astype(np.int64)
    eng = GpuBFS(g, reorder=reorder)
    eng.levels(int(sources[0]))
    t0 = time.perf_counter()
    for s in sources:
        eng.run_device(int(s))
    cp.cuda.Device().synchronize()
    single = time.perf_counter() - t0
    r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=_ctx("gpu"), kappa=256, announce=False, reorder=reorder,
                 groups=1)  # one launch of 256 sources on the whole GPU
    out = _out(g.n)
    r.run(sources, False, out)
    best = np.inf
    for _ in range(3):
        out = _out(g.n)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        r.run(sources, False, out)
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
    return {"single_source_variant": eng.variant, "single_source_s": single, "alg5_s": best,
            "speedup": single / best, "blest_table6_mean_speedup": 2.7}


def worker_modes(spec, batches, reorder="auto"):
    """Run under mpirun: replicated vs partitioned mode on the same batches (rank 0 prints JSON)."""
    from mpi4py import MPI

    from distgraph.algorithms.msbfs import run_batches
    from distgraph.backends.gpu.msbfs import GpuMSBFS
    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    ctx = get_context(comm, "gpu")
    pg = get_pgas(comm, "gpu")
    g = load(spec)
    tptr, tidx, _ = g.csc()
    srcs = np.flatnonzero(np.diff(g.indptr) > 0)[:512 * batches].astype(np.int64)
    res = {"graph": spec, "pes": comm.Get_size(), "sources": int(srcs.size), "limited_mpg": bool(pg.limited_mpg),
           "reorder": reorder, "note": "several PEs time-share the one GPU: the sharing cost of the protocol, "
                                       "not multi-GPU scaling"}
    sums = {}
    for mode in ("replicated", "partitioned"):
        r = GpuMSBFS(g.indptr, g.indices, tptr, tidx, ctx=ctx, kappa=256, mode=mode, announce=False,
                     reorder=reorder)
        run_batches(g.indptr, g.indices, tptr, tidx, srcs[:256], per_source=False, batch_size=512, ctx=ctx,
                    progress=False, runner=r)
        comm.Barrier()
        t0 = time.perf_counter()
        sums[mode] = run_batches(g.indptr, g.indices, tptr, tidx, srcs, per_source=False, batch_size=512, ctx=ctx,
                                 progress=False, runner=r)[:5]
        comm.Barrier()
        res[mode + "_s"] = time.perf_counter() - t0
        r.close()
    res["partitioned_over_replicated"] = res["partitioned_s"] / res["replicated_s"]
    res["same_sums"] = all(np.array_equal(a, b) for a, b in zip(sums["replicated"], sums["partitioned"]))
    if comm.Get_rank() == 0:
        print("MODES-JSON " + json.dumps(res))
    pg.finalize()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--graphs", default=os.environ.get("BENCH_GPU_CLOSENESS_GRAPHS", DEFAULT_GRAPHS))
    ap.add_argument("--time-limit", type=float, default=float(os.environ.get("BENCH_GPU_CLOSENESS_LIMIT", 60)),
                    help="seconds per measurement (GPU run; CPU/networkit get a quarter)")
    ap.add_argument("--pes", default=os.environ.get("BENCH_GPU_CLOSENESS_PES", "2,4"),
                    help="PE counts for the replicated/partitioned comparison ('' = skip)")
    ap.add_argument("--reorder", default=os.environ.get("BENCH_GPU_CLOSENESS_REORDER", "auto"),
                    help="vertex reordering before BVSS (auto = the library default; rcm is far cheaper to "
                         "compute than jaccard on the Kronecker graphs)")
    ap.add_argument("--profile", default=os.environ.get("BENCH_GPU_CLOSENESS_PROFILE", ""),
                    help="graph@reorder,... to profile (phase breakdown + parameter variants) instead of the "
                         "benchmark; writes gpu_closeness_profile.json")
    ap.add_argument("--profile-launches", type=int, default=8)
    ap.add_argument("--profile-variants", default=os.environ.get("BENCH_GPU_CLOSENESS_VARIANTS", ""),
                    help="comma-separated labels of PROFILE_VARIANTS to run ('' = all)")
    ap.add_argument("--modes-graph", default=os.environ.get("BENCH_GPU_CLOSENESS_MODES_GRAPH", "kron:16"),
                    help="graph of the replicated/partitioned comparison")
    ap.add_argument("--cpu-graphs", default=os.environ.get("BENCH_GPU_CLOSENESS_CPU_GRAPHS", "all"),
                    help="graphs that get the CPU backend row ('all', or a comma-separated list)")
    ap.add_argument("--cpu-limit", type=float, default=None, help="seconds of the CPU row (default: a quarter of "
                                                                   "--time-limit)")
    ap.add_argument("--networkit-graphs", default="all", help="graphs with a networkit row ('' for none)")
    ap.add_argument("--naive-graphs", default=os.environ.get("BENCH_GPU_CLOSENESS_NAIVE_GRAPHS", "all"),
                    help="graphs that get the Alg. 5 vs single-source row ('all' or a list)")
    ap.add_argument("--variants", default=os.environ.get("BENCH_GPU_CLOSENESS_VARIANTS_GPU", ""),
                    help="extra GPU rows on graphs of the block schedule, e.g. 'k32,k64,k128,grid4,nosym,mb4,sdb,sdbmb4' "
                         "(kN: kappa N; gridN: groups=N, the grid-wide schedule; nosym: per-vertex sums; mbN: "
                         "min_blocks N; slN: N resident blocks (slots); sdb: shared_dbits; sdbmbN: both; "
                         "pf: prefetch; fold: leaves folded as closeness() does; wave: the profile-wave "
                         "prototype (GpuWave; with it mbN, sptN, nbN, rshN: its min_blocks, sources_per_thread, neighbours, "
                         "recip_shared; fs0, gs0, el0: fast_sums, group_sync, ell off; rN: a repeat of the row under a label "
                         "of its own); bN: block_threads N; "
                         "f4: flush4; pull / nopull: the pull kernel on / off; pv: its per-vertex candidates; "
                         "tokens join with '+', e.g. sdb+pf+mb3, b512+mb2)")
    ap.add_argument("--batch-order", default=os.environ.get("BENCH_GPU_CLOSENESS_BATCH_ORDER", "input"),
                    choices=BATCH_ORDERS, help="how the GPU rows group the sources before cutting batches: input "
                    "(vertex ids) or ball (compact BFS balls, as closeness() with DISTGRAPH_MSBFS_BATCH_ORDER=ball)")
    ap.add_argument("--block-sweep", default=None,
                    help="graph,...: instead of the benchmark, the GPU row of each graph for every --sweep-variants "
                         "label and every --sweep-orders order (block size x batch order), written to "
                         "gpu_closeness_block_sweep.json")
    ap.add_argument("--sweep-variants", default="b256,b512,b1024",
                    help="--variants labels of the sweep (b256 = the default runner)")
    ap.add_argument("--sweep-orders", default="input,ball", help="batch orders of the sweep")
    ap.add_argument("--sweep-limit", type=float, default=30.0,
                    help="seconds after which a sweep row stops starting launches (extrapolated; the block "
                         "schedule runs up to 4 * slots * kappa sources per launch)")
    ap.add_argument("--variant-limit", type=float, default=10.0, help="seconds of each variant (extrapolated)")
    ap.add_argument("--no-check", action="store_true", help="skip the CPU check of the first batch (variants are "
                                                             "still compared with the default GPU row)")
    ap.add_argument("--merge", default=None, help="an earlier gpu_closeness.json: graphs and modes not run now "
                                                  "are kept from it (marked 'from_earlier_run')")
    ap.add_argument("--events", default=None, help="graph,...: count events per batch on the CPU (count_events) "
                                                   "and write gpu_closeness_events.json instead of the benchmark")
    ap.add_argument("--block-profile", default=None, help="graph,...: run every source once on the block schedule "
                                                          "with the profiling build of its kernel and write "
                                                          "gpu_closeness_block_profile.json instead of the benchmark")
    ap.add_argument("--worker-modes", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-batches", type=int, default=4, help=argparse.SUPPRESS)
    ap.add_argument("--modes-batches", type=int, default=int(os.environ.get("BENCH_GPU_CLOSENESS_MODES_BATCHES", 4)),
                    help="batches of 512 sources timed in each mode")
    a = ap.parse_args(argv)
    if a.worker_modes:
        worker_modes(a.worker_modes, a.worker_batches, a.reorder)
        return 0
    env = {"commit": commit(),
           "device": _sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "loadavg": os.getloadavg(), "blest_rate_per_gpu": BLEST_RATE,
           "blest_rate_note": "4.0e6 * 69.4e6 / 118 / 5 (issue 5); session 1 used 2 * 69.4e6 by mistake"}
    results = {"env": env, "graphs": {}}
    if a.merge and Path(a.merge).is_file():
        old = json.loads(Path(a.merge).read_text())
        results["earlier"] = {"env": old.get("env"), "run": old.get("run"), "cpu_caveat": old.get("cpu_caveat")}
        for spec, row in old.get("graphs", {}).items():
            results["graphs"][spec] = {**row, "from_earlier_run": True}
        if "modes" in old:
            results["modes"] = {k: {**v, "from_earlier_run": True} for k, v in old["modes"].items()}
    if a.block_profile:
        path = Path(a.outdir) / "gpu_closeness_block_profile.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        for spec in a.block_profile.split(","):
            try:
                g = load(spec)
                reorder = a.reorder if spec.startswith("kron:") else "auto"
                results["graphs"][spec] = {"n": g.n, "m": g.m, **block_profile(g, reorder)}
            except Exception as e:
                results["graphs"][spec] = {"error": repr(e)[:2000]}
            row = {k: v for k, v in results["graphs"][spec].items() if k != "first_batch_block0"}
            print(spec, json.dumps(row, default=float)[:1500], flush=True)
            path.write_text(json.dumps(results, indent=1, default=float))
        return 0
    if a.block_sweep:
        path = Path(a.outdir) / "gpu_closeness_block_sweep.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        results["sweep"] = {"variants": a.sweep_variants, "orders": a.sweep_orders, "check": not a.no_check}
        for spec in a.block_sweep.split(","):
            try:
                g = load(spec)
                reorder = a.reorder if spec.startswith("kron:") else "auto"
                results["graphs"][spec] = {"n": g.n, "m": g.m, "rows": {}}
                block_sweep(g, reorder, [v for v in a.sweep_variants.split(",") if v],
                            [o for o in a.sweep_orders.split(",") if o], a.sweep_limit, not a.no_check,
                            results["graphs"][spec]["rows"], lambda: path.write_text(
                                json.dumps(results, indent=1, default=float)), spec)
            except Exception as e:
                results["graphs"].setdefault(spec, {})["error"] = repr(e)[:2000]
            path.write_text(json.dumps(results, indent=1, default=float))
        return 0
    if a.events:
        path = Path(a.outdir) / "gpu_closeness_events.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        for spec in a.events.split(","):
            g = load(spec)
            results["graphs"][spec] = {"n": g.n, "m": g.m, "kappa": count_events(g)}
            print(spec, json.dumps(results["graphs"][spec]), flush=True)
            path.write_text(json.dumps(results, indent=1, default=float))
        return 0
    if a.profile:
        path = Path(a.outdir) / "gpu_closeness_profile.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        for item in a.profile.split(","):
            spec, _, reorder = item.partition("@")
            try:
                g = load(spec)
                results["graphs"][spec] = {"n": g.n, "m": g.m, **bench_profile(
                    g, reorder or "auto", a.profile_launches, [v for v in a.profile_variants.split(",") if v])}
            except Exception as e:
                results["graphs"][spec] = {"error": repr(e)}
            path.write_text(json.dumps(results, indent=1, default=float))
        return 0
    path = Path(a.outdir) / "gpu_closeness.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    mpirun = os.environ.get("MPIRUN", "/usr/bin/mpirun")
    for p in [int(x) for x in a.pes.split(",") if x]:
        cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(p), "-x", "PYTHONPATH",
               "-x", "NVSHMEM_DISABLE_NVLS", "-x", "NVSHMEM_REMOTE_TRANSPORT", "-x", "NVSHMEM_SYMMETRIC_SIZE",
               *[x for k in sorted(os.environ) if k.startswith("DISTGRAPH_") for x in ("-x", k)],
               sys.executable, __file__, "--worker-modes", a.modes_graph, "--reorder", a.reorder,
               "--worker-batches", str(a.modes_batches)]
        try:
            limit = float(os.environ.get("BENCH_GPU_CLOSENESS_MODES_TIMEOUT", 300))
            pr = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
            line = [x for x in pr.stdout.splitlines() if x.startswith("MODES-JSON ")]
            results.setdefault("modes", {})[str(p)] = json.loads(line[-1][11:]) if line else \
                {"error": (pr.stderr or pr.stdout)[-2000:]}
        except Exception as e:
            results.setdefault("modes", {})[str(p)] = {"error": repr(e)}
        print("modes", p, json.dumps(results["modes"][str(p)]), flush=True)
        path.write_text(json.dumps(results, indent=1, default=float))
    for spec in [s for s in a.graphs.split(",") if s]:
        row = {}
        try:
            t0 = time.perf_counter()
            g = load(spec)
            row.update({"n": g.n, "m": g.m, "read_s": time.perf_counter() - t0})
            reorder = a.reorder if spec.startswith("kron:") else "auto"
            row["gpu"] = bench_gpu(g, a.time_limit, reorder, check=not a.no_check, batch_order=a.batch_order)
            first = row["gpu"].pop("_first")
            row["gpu"].pop("_total")
            print(spec, "gpu", json.dumps(row["gpu"], default=float), flush=True)
            results["graphs"][spec] = row
            path.write_text(json.dumps(results, indent=1, default=float))
            if row["gpu"]["total_s"] < a.time_limit and reorder == "auto":  # closeness() reorders by "auto"
                row["gpu_end_to_end"] = bench_end_to_end(g)
            cpu_limit = a.time_limit / 4 if a.cpu_limit is None else a.cpu_limit
            if a.cpu_graphs == "all" or spec in a.cpu_graphs.split(","):
                row["cpu"] = bench_cpu(g, cpu_limit)
                row["gpu_over_cpu"] = row["cpu"]["total_s"] / row["gpu"]["total_s"]
                print(spec, "cpu", json.dumps(row["cpu"], default=float), flush=True)
            if a.networkit_graphs == "all" or spec in a.networkit_graphs.split(","):
                row["networkit"] = bench_networkit(g, cpu_limit)
                if "total_s" in row["networkit"]:
                    row["gpu_over_networkit"] = row["networkit"]["total_s"] / row["gpu"]["total_s"]
            if a.naive_graphs == "all" or spec in a.naive_graphs.split(","):
                row["naive"] = bench_naive(g, reorder)
            path.write_text(json.dumps(results, indent=1, default=float))
            if row["gpu"].get("schedule") == "blocks":
                for v in [v for v in a.variants.split(",") if v]:
                    kw = variant_kwargs(v)
                    if kw is None:
                        continue
                    try:
                        sym = kw.get("symmetric", row["gpu"]["symmetric"]) == row["gpu"]["symmetric"] and \
                            not isinstance(kw.get("groups"), int)
                        vr = bench_gpu(g, a.variant_limit, reorder, check=False, same_as=first if sym else None,
                                       batch_order=a.batch_order, **kw)
                        vr.pop("_first")
                        vr.pop("_total")
                        row.setdefault("variants", {})[v] = {k: vr[k] for k in (
                            "kappa", "schedule", "groups", "slots", "symmetric", "shared_dbits", "prefetch",
                            "flush4", "block_threads", "min_blocks", "registers", "local_bytes", "batch_order",
                            "sources_run", "seconds",
                            "total_s",
                            "extrapolated", "edge_visits_per_s_per_gpu", "vs_blest_per_gpu", "levels_per_launch",
                            "first_batch_same_as_default")}
                    except Exception as e:
                        row.setdefault("variants", {})[v] = {"error": repr(e)}
                    print(spec, "variant", v, json.dumps(row["variants"][v], default=float), flush=True)
                    path.write_text(json.dumps(results, indent=1, default=float))
        except Exception as e:  # one graph failing must not lose the others' numbers
            row["error"] = repr(e)
        results["graphs"][spec] = row
        print(spec, json.dumps({k: v for k, v in row.items() if k != "gpu"}, default=float), flush=True)
        path.write_text(json.dumps(results, indent=1, default=float))
    path.write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
