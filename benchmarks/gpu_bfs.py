"""Benchmark: single-source BFS on the GPU with BLEST (tensor cores over BVSS) against a
CuPy SpMV BFS (what a user would write) and the CPU, as in BLEST Table 2 / Table 4.

    python benchmarks/gpu_bfs.py --outdir DIR [--graphs kron:21,urand:21,road-FLA] [--sources 64]
        [--workdir W]          # share generated graphs and preprocessing with --prep
    python benchmarks/gpu_bfs.py --prep kron:22,urand:22 --workdir W   # in the background

``--prep`` generates each graph in its own process (the generators are single-threaded;
the device host has 16 cores) and runs the preprocessing of both engines (reorder none
and auto) into ``W/cache``, so the timed run finds graph and BVSS ready; preprocessing
times are those measured by the prep process (reported under ``prep``).

For every graph: 64 sources picked as GAP does (seeded, zero-degree vertices skipped);
mean milliseconds per source of one cooperative kernel launch (CUDA events, launch to
completion, state init included), GTEPS = arcs of the reached component (each undirected
edge counted in both directions, as BLEST counts) / time, for each variant (plain = Alg. 2,
lazy = Alg. 3, switch = Alg. 3 + 4; plain-s1 = plain with session 1's update code, plain-v
= plain with the visited bitmap, lazy/switch+filter) with and without reordering (Table 4's
ablation), the auto choice, the parents pass, and on road graphs sweeps of ``tiny`` and of
the grid size.  Baselines in the same run: a frontier BFS by cuSPARSE SpMV through
cupyx.scipy.sparse, scipy.sparse.csgraph.breadth_first_order, and the CPU backend
(distgraph.bfs backend="cpu") when it is importable.  Every BLEST result is checked
against the SpMV BFS levels.  Preprocessing (reorder, BVSS, U_div, transpose) is reported
separately.  Writes DIR/gpu_bfs.json with commit, device and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
from _common import commit, sh as _sh
sys.path.insert(0, str(ROOT))

# plain = Alg. 2, lazy = Alg. 3, switch = Alg. 3 + 4; "+filter": lazy marking skips rows
# already visited (not in the paper; measured to see whether the extra read pays).
# "plain-s1": the direct scheme with session 1's update code and no single-block levels.
# "plain-v": the direct scheme with the visited bitmap and slice-set claims (mode bit 16).
VARIANTS = ("plain", "plain-v", "plain-s1", "lazy", "switch", "lazy+filter", "switch+filter")
# high-diameter graphs (roads): the measurement extras (filters) are left out to keep the
# device run short (session 1 measured them: benchmarks/results/gpu_bfs_scale22.json)
VARIANTS_ROAD = ("plain", "plain-v", "plain-s1", "lazy", "switch")
TINY_SWEEP = (0, 8, 16)
BLEST_REF = {"kron:21": 0.30, "urand:21": 0.26, "road-FLA": 7.8}  # ms/source, BLEST on an H200



def _wait_prepped(spec, workdir, deadline):
    """The graph prepared by a --prep process in workdir, or None when none was started."""
    if workdir is None:
        return None
    base = Path(workdir) / spec.replace(":", "_")
    if not base.with_suffix(".started").exists():
        return None
    while not (base.with_suffix(".done").exists() or base.with_suffix(".failed").exists()):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{spec}: preparation not finished in time")
        time.sleep(0.5)
    if base.with_suffix(".failed").exists():
        raise RuntimeError(f"{spec}: preparation failed: {base.with_suffix('.failed').read_text()[:300]}")
    from distgraph.graph import Graph

    d = np.load(base.with_suffix(".npz"))
    g = Graph(d["indptr"], d["indices"], None, directed=bool(d["directed"]))
    return g, json.loads(base.with_suffix(".done").read_text())


def prep_one(spec, workdir, window):
    """Generate one graph and preprocess it (reorder none and auto) into workdir/cache."""
    from distgraph.backends.gpu.bfs import _cached_preprocess
    from distgraph.runtime.config import config

    base = Path(workdir) / spec.replace(":", "_")
    try:
        t0 = time.perf_counter()
        g = load(spec)
        info = {"gen_s": time.perf_counter() - t0}
        np.savez(base.with_suffix(".tmp.npz"), indptr=g.indptr, indices=g.indices, directed=g.directed)
        os.replace(base.with_suffix(".tmp.npz"), base.with_suffix(".npz"))
        w = config.gpu_bfs_window if window is None else window

        def one(reorder):
            t0 = time.perf_counter()
            _, _, _, _, pinfo = _cached_preprocess(g, reorder, w, Path(workdir) / "cache")
            pinfo["total_s"] = time.perf_counter() - t0
            return pinfo

        # "none" (numpy only) in a forked child while this process reorders (numba threads)
        side = base.with_suffix(".none.json")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                side.write_text(json.dumps(one("none"), default=float))
                code = 0
            finally:
                os._exit(code)
        info["auto"] = one("auto")
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError("preprocessing with reorder=none failed in the forked child")
        info["none"] = json.loads(side.read_text())
        base.with_suffix(".done").write_text(json.dumps(info, default=float))
    except Exception as e:  # reported by the timed run
        base.with_suffix(".failed").write_text(f"{type(e).__name__}: {e}")
        raise


def load(spec):
    import distgraph
    from distgraph import generators as gen

    if spec.startswith("kron:"):
        return gen.kronecker(int(spec.split(":")[1]))
    if spec.startswith("urand:"):
        return gen.urand(int(spec.split(":")[1]))
    names = {"road-FLA": "road-FLA.gr.xz", "road-NY": "road-NY.gr.xz", "email-Enron": "email-Enron.mtx.gz",
             "cond-mat-2005": "cond-mat-2005.mtx.gz", "wiki-Vote": "wiki-Vote.txt.gz"}
    fname = names.get(spec, spec)
    for d in (ROOT / ".devdata", ROOT.parent / "shared" / "data", Path(os.environ.get("DISTGRAPH_DATA", "/nonexistent"))):
        if (d / fname).is_file():
            return distgraph.read_graph(d / fname)
    raise FileNotFoundError(f"graph {spec}: {fname} not found in .devdata/ or ../shared/data")


def gap_sources(g, k, seed=27491095):
    """k sources as GAP picks them: seeded uniform draws, skipping zero-degree vertices."""
    rng = np.random.default_rng(seed)
    deg = np.diff(g.indptr)
    out = []
    while len(out) < k and np.any(deg > 0):
        v = int(rng.integers(0, g.n))
        if deg[v] > 0:
            out.append(v)
    return out


class SpmvBFS:
    """A user's GPU BFS: frontier vector times A^T with cuSPARSE, one level per SpMV."""

    def __init__(self, g):
        import cupy as cp
        import cupyx.scipy.sparse as cps

        ip, ix, _ = g.csc()  # in-arcs: y = A^T x marks vertices with a frontier in-neighbour
        self.cp = cp
        self.A = cps.csr_matrix((cp.ones(ix.shape[0], cp.float32), cp.asarray(ix), cp.asarray(ip)),
                                shape=(g.n, g.n))
        self.n = g.n

    def levels(self, s):
        cp = self.cp
        level = cp.full(self.n, -1, cp.int32)
        level[s] = 0
        f = cp.zeros(self.n, cp.float32)
        f[s] = 1
        lvl = 0
        while True:
            lvl += 1
            y = self.A @ f
            new = (y > 0) & (level < 0)
            if not bool(new.any()):
                break
            level[new] = lvl
            f = new.astype(cp.float32)
        return level


def timed(fn, sync):
    t = time.perf_counter()
    r = fn()
    sync()
    return r, (time.perf_counter() - t) * 1e3


def bench_graph(spec, args, cache_dir):
    import cupy as cp
    import scipy.sparse.csgraph as csg

    from distgraph.algorithms.bfs import verify_bfs
    from distgraph.backends.gpu.bfs import TINY_DEFAULT, GpuBFS

    tiny_default = TINY_DEFAULT
    sync = cp.cuda.runtime.deviceSynchronize
    out = {"graph": spec}
    t0 = time.perf_counter()
    got = _wait_prepped(spec, args.workdir, args.deadline)
    if got is not None:
        g, out["prep"] = got
    else:
        g = load(spec)
    out.update({"load_s": time.perf_counter() - t0, "n": g.n, "arcs": g.m, "directed": g.directed})
    print(f"== {spec}: n={g.n} arcs={g.m} (load {out['load_s']:.1f} s)", flush=True)
    srcs = gap_sources(g, args.sources)
    deg = np.diff(g.indptr)
    road = "road" in spec
    big = g.m > 100_000_000
    # ---- baselines
    base = SpmvBFS(g)
    nb = min(len(srcs), 4 if road else len(srcs))
    variants = VARIANTS_ROAD if road else VARIANTS
    base.levels(srcs[0])
    sync()
    ref, ms = {}, []
    for s in srcs[:nb]:
        lev, t = timed(lambda: base.levels(s), sync)
        ref[s] = lev.get()
        ms.append(t)
    arcs_reached = {s: int(deg[ref[s] >= 0].sum()) for s in ref}
    mean_arcs = float(np.mean(list(arcs_reached.values())))
    out["cupy_spmv"] = {"ms": float(np.mean(ms)), "sources": nb, "gteps": mean_arcs / np.mean(ms) / 1e6}
    ms = []
    ncpu = 4
    # scipy's BFS takes ~8 s per source at kron:22 (session 1, gpu_bfs_scale22.json): none
    # on graphs over 100M arcs, to keep the device run short
    nscipy = 0 if big else ncpu
    A = g.to_scipy() if nscipy else None
    for s in srcs[:nscipy]:
        t = time.perf_counter()
        csg.breadth_first_order(A, s, directed=g.directed, return_predecessors=False)
        ms.append((time.perf_counter() - t) * 1e3)
    out["scipy_cpu"] = {"ms": float(np.mean(ms)) if ms else None, "sources": len(ms)}
    del A
    try:
        import distgraph

        distgraph.bfs(g, srcs[0], backend="cpu")
        ms = []
        for s in srcs[:ncpu]:
            t = time.perf_counter()
            distgraph.bfs(g, s, backend="cpu")
            ms.append((time.perf_counter() - t) * 1e3)
        out["distgraph_cpu"] = {"ms": float(np.mean(ms)), "sources": len(ms), "threads": os.cpu_count()}
    except Exception as e:  # the CPU backend may not be in this checkout
        out["distgraph_cpu"] = {"error": f"{type(e).__name__}: {e}"[:200]}
    print(f"   cupy SpMV {out['cupy_spmv']['ms']:.2f} ms, scipy {out['scipy_cpu']['ms']} ms, "
          f"cpu backend {out['distgraph_cpu'].get('ms', 'n/a')}", flush=True)
    del base
    # ---- BLEST, each variant, without and with reordering
    out["blest"] = {}
    nchk = 8  # sources whose levels every variant must reproduce (the SpMV BFS's)
    for reorder in ("none", "auto"):
        t0 = time.perf_counter()
        eng = GpuBFS(g, variant="switch", reorder=reorder, window=args.window, cache_dir=cache_dir)
        build_s = time.perf_counter() - t0
        info = {k: v for k, v in eng.info.items() if k not in ("auto_check_ms",)}
        res = {"setup_s": build_s, "info": info, "mismatches": []}
        arcs_all = []
        for i, s in enumerate(srcs):
            lev = eng.levels(s, variant="plain")
            arcs_all.append(int(deg[lev >= 0].sum()))
            if i >= nchk or s not in ref:
                continue
            for v in variants:
                if v == "plain":
                    got = lev
                else:
                    d, _ = eng.run_device(s, v)
                    got = d.get() if eng.new_id is None else d.get()[eng.new_id]
                if not np.array_equal(got, ref[s]):
                    res["mismatches"].append([v, int(s), int(np.count_nonzero(got != ref[s]))])
        mean_arcs = float(np.mean(arcs_all))
        for v in variants:
            eng.tiny = 0 if v == "plain-s1" else tiny_default
            for s in srcs[:2]:
                eng.run_device(s, v)
            ms = np.array([eng.run_device(s, v)[1] for s in srcs])
            st = eng.stats()
            res[v] = {"ms": float(ms.mean()), "ms_min": float(ms.min()), "ms_max": float(ms.max()),
                      "gteps": mean_arcs / float(ms.mean()) / 1e6, "levels_last": st["levels"],
                      "bottom_up_levels_last": st["bottom_up_levels"]}
        eng.tiny = tiny_default
        if road or g.m < 5_000_000:
            # plain scheme: levels with at most `tiny` queued VSSs on one block, swept
            for v in ("plain",):
                sweep = {}
                for tiny in TINY_SWEEP:
                    eng.tiny = tiny
                    eng.run_device(srcs[0], v)
                    sweep[str(tiny)] = float(np.mean([eng.run_device(s, v)[1] for s in srcs]))
                res[f"{v}_tiny_sweep_ms"] = sweep
            eng.tiny = tiny_default
        res["arcs_reached_mean"] = mean_arcs
        out["blest"][reorder] = res
        print(f"   BLEST reorder={reorder} ({info.get('method')}, U_div {info['udiv']:.0f}, "
              f"{info['bvss']['bytes_per_edge']:.2f} B/arc, setup {build_s:.1f} s): "
              + ", ".join(f"{v} {res[v]['ms']:.3f} ms ({res[v]['gteps']:.1f} GTEPS)" for v in variants)
              + (f" tiny sweep {res.get('plain_tiny_sweep_ms')}"
                 if "plain_tiny_sweep_ms" in res else "")
              + (f" MISMATCHES {res['mismatches'][:6]}" if res["mismatches"] else ""),
              flush=True)
        del eng
        cp.get_default_memory_pool().free_all_blocks()
    # ---- the auto choice (reorder auto, U_div rule, first-sources switching check)
    eng = GpuBFS(g, variant="auto", reorder="auto", window=args.window, cache_dir=cache_dir)
    for s in srcs[:2]:
        eng.run_device(s)
    ms = np.array([eng.run_device(s)[1] for s in srcs])
    out["blest_auto"] = {"variant": eng.variant, "udiv_choice": eng.info["udiv_choice"],
                         "auto_check_ms": eng.info.get("auto_check_ms"), "ms": float(ms.mean()),
                         "gteps": out["blest"]["auto"]["arcs_reached_mean"] / float(ms.mean()) / 1e6}
    if spec in BLEST_REF:
        out["blest_paper_code_ms"] = BLEST_REF[spec]
        out["ratio_vs_blest_code"] = float(ms.mean()) / BLEST_REF[spec]
    out["speedup_auto_vs_cupy_spmv"] = out["cupy_spmv"]["ms"] / float(ms.mean())
    if out["scipy_cpu"]["ms"]:
        out["speedup_auto_vs_scipy_cpu"] = out["scipy_cpu"]["ms"] / float(ms.mean())
    if out["distgraph_cpu"].get("ms"):
        out["speedup_auto_vs_distgraph_cpu"] = out["distgraph_cpu"]["ms"] / float(ms.mean())
    print(f"   auto -> {eng.variant}: {ms.mean():.3f} ms  x{out['speedup_auto_vs_cupy_spmv']:.1f} vs SpMV", flush=True)
    # parents: the second pass (levels in caller ids + smallest in-neighbour one level up)
    pms, gms = [], []
    nver = 3 if g.m < 20_000_000 else 0  # the CPU verifier takes seconds on 100M+ arcs (tests cover those)
    eng.levels(srcs[0])  # builds the id map on the device once
    for i, s in enumerate(srcs[:16]):
        st, sp = cp.cuda.Event(), cp.cuda.Event()
        lev_dev, _ = eng.run_device(s)
        st.record()
        lev_c = lev_dev if eng.new_id is None else lev_dev[eng._new_id_dev]
        sp.record()
        sp.synchronize()
        par, t = eng.parents_device(lev_c, int(s))
        if i > 0:
            pms.append(t)
            gms.append(float(cp.cuda.get_elapsed_time(st, sp)))
        if i < nver:
            verify_bfs(g, int(s), lev_c.get(), par.get())
    out["parents"] = {"kernel_ms": float(np.mean(pms)), "relabel_ms": float(np.mean(gms)), "sources": len(pms),
                      "verified_sources": nver,
                      "note": "levels mapped to caller ids (gather) + parents kernel over the caller's G^T, "
                              "on top of the BFS time"}
    print(f"   parents pass {out['parents']['kernel_ms']:.3f} ms (+ relabel {out['parents']['relabel_ms']:.3f} ms)",
          flush=True)
    # grid size sweep (per-level latency on high-diameter graphs depends on the grid sync)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sweep = {}
    grids = (16, sms // 4, sms // 2, sms, 2 * sms) if (road or g.m < 5_000_000) else ()
    for v in ((eng.variant,) if grids else ()):
        for grid in grids:
            if grid > eng.grid_full:
                continue
            eng.grid = grid
            eng.run_device(srcs[0], v)
            sweep[f"{v}@{grid}"] = float(np.mean([eng.run_device(s, v)[1] for s in srcs[:32]]))
    eng.grid = None  # back to the per-variant default
    out["grid_sweep_ms"] = sweep
    print(f"   grid sweep ({eng.variant}, {len(srcs[:32])} sources): {sweep}", flush=True)
    del eng
    cp.get_default_memory_pool().free_all_blocks()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--graphs", default=os.environ.get("BENCH_GPU_BFS_GRAPHS", "kron:21,urand:21,road-FLA,email-Enron"),
                   help="comma-separated; env BENCH_GPU_BFS_GRAPHS overrides the default")
    p.add_argument("--sources", type=int, default=64)
    p.add_argument("--window", type=int, default=int(os.environ.get("BENCH_GPU_BFS_WINDOW", 0)) or None,
                   help="Jaccard window W (default config, 2**16; env BENCH_GPU_BFS_WINDOW)")
    p.add_argument("--max-seconds", type=float, default=float(os.environ.get("BENCH_GPU_BFS_MAX_SECONDS", 480)),
                   help="skip the remaining graphs after this (env BENCH_GPU_BFS_MAX_SECONDS)")
    p.add_argument("--name", default="gpu_bfs")
    p.add_argument("--workdir", default=None, help="shared with --prep (generated graphs, preprocessing cache)")
    p.add_argument("--prep", default=None, help="comma-separated graphs to generate and preprocess into --workdir, "
                                                "one process each, then exit")
    p.add_argument("--prep-one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.prep_one:
        prep_one(args.prep_one, args.workdir, args.window)
        return 0
    if args.prep:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        procs = []
        for spec in [s for s in args.prep.split(",") if s]:
            (Path(args.workdir) / spec.replace(":", "_")).with_suffix(".started").write_text("")
            cmd = [sys.executable, __file__, "--prep-one", spec, "--workdir", args.workdir]
            if args.window:
                cmd += ["--window", str(args.window)]
            procs.append(subprocess.Popen(cmd))
        return max([pr.wait() for pr in procs] or [0])
    import cupy as cp

    env = {"commit": commit(), "dirty": bool(_sh("git status --porcelain -- distgraph kernels")),
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "cupy": cp.__version__, "sources": args.sources,
           "timing": "CUDA events around one cooperative kernel launch per source (state init included)",
           "gteps": "mean arcs of the reached component (undirected edges counted twice) / mean time"}
    results = {"env": env, "graphs": [], "skipped": []}
    t_start = time.perf_counter()
    args.deadline = t_start + args.max_seconds
    env["tiny_default"] = __import__("distgraph.backends.gpu.bfs", fromlist=["TINY_DEFAULT"]).TINY_DEFAULT
    env["jaccard_window"] = args.window or __import__("distgraph.runtime.config", fromlist=["config"]).config.gpu_bfs_window
    env["load_avg"] = os.getloadavg()
    path = Path(args.outdir) / f"{args.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_cache:
        cache_dir = str(Path(args.workdir) / "cache") if args.workdir else tmp_cache
        for spec in [s for s in args.graphs.split(",") if s]:
            if time.perf_counter() - t_start > args.max_seconds:
                results["skipped"].append(spec)
                continue
            try:
                results["graphs"].append(bench_graph(spec, args, cache_dir))
            except Exception as e:
                import traceback

                traceback.print_exc()
                results["graphs"].append({"graph": spec, "error": f"{type(e).__name__}: {e}"[:500]})
            path.write_text(json.dumps(results, indent=1, default=float))
    path.write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {path}")
    return 1 if any("error" in r for r in results["graphs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
