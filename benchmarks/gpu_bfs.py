"""Benchmark: single-source BFS on the GPU with BLEST (tensor cores over BVSS) against a
CuPy SpMV BFS (what a user would write) and the CPU, as in BLEST Table 2 / Table 4.

    python benchmarks/gpu_bfs.py --outdir DIR [--graphs kron:21,urand:21,road-FLA] [--sources 64]
        [--workdir W]          # share generated graphs and preprocessing with --prep
    python benchmarks/gpu_bfs.py --prep kron:22,urand:22 --workdir W   # in the background

``--prep`` generates each graph in its own process (the generators are single-threaded;
the device host has 16 cores) and runs the preprocessing of both engines (reorder none
and auto) into ``W/cache``, so the timed run finds graph and BVSS ready; preprocessing
times are those measured by the prep process (reported under ``prep``).  With
``DISTGRAPH_GEN_DEVICE=gpu`` in its environment the Kronecker/urand CSR is built on the GPU
(distgraph/generators/_csr_device.py; ``prep.gen_device`` records it): the host builder did
not prepare scale 26 within one device call.

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

A graph spec may name Jaccard windows: ``kron:22+w16384+w65536`` prepares and times
reorder=auto at each window W beside reorder=none (rows ``auto@w16384``, ...);
``kron:24+none``: reorder=none alone; ``kron:27+auto``: the auto ordering alone.

Graphs of 2**31 arcs or more (GAP kron:27 / urand:27, 4.2e9 / 4.3e9 arcs;
benchmarks/device_gap27.sh): the SpMV BFS is skipped with its reason (cupyx's csr_matrix
holds int32 indices), and the CPU backend's levels of ``--cpu-sources`` sources are the
reference the variants must match.  ``--variants`` trims the variants, ``--skip-baselines``
the baselines, ``--no-cache`` keeps each ordering in memory (no npz of ~25 GB, no checksum
of the CSR).  The JSON is rewritten after each phase (``in_progress``, with the peak RSS),
so a run stopped by a time limit keeps what it measured.

Session 3 additions, all in one device call:

    setsid python benchmarks/gpu_bfs.py --prep kron:23,... --workdir W &   # writes W/prep.pgid
    python benchmarks/gpu_bfs.py --ab kron:22+w16384+w65536,urand:22 --s1-kernel F \
        --graphs kron:23,... --workdir W --quiet-prep

``--quiet-prep`` stops the background preparation (SIGSTOP to its process group) while
a graph is timed and resumes it after, so no timing shares the host with it.  ``--ab``
is the A/B of the kron:22/urand:22 regression: every ordering (none, auto at each W) x
{current kernel: switch, lazy, plain at one block per SM, plain at the full grid;
session-1 kernel F (``git show af7bcda:kernels/bvss_bfs.cu``): switch, lazy, plain},
sources interleaved (each source runs every configuration in turn), once with the
background preparation stopped ("idle") and once loaded ("loaded": the preparation
running, niced, plus one synthetic numpy sorting process per core at normal priority).
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
# "switch-eq6": switching by the paper's Eq. 6 alone (the edge test off, alpha = 0); "switch"
# is Eq. 6 plus the edge test at config.gpu_bfs_alpha; "switch~aX" at alpha = X.
VARIANTS = ("plain", "plain@full", "plain-v", "plain-s1", "lazy", "switch", "switch-eq6", "lazy+filter",
            "switch+filter")
# "@full": the direct scheme on the full co-resident grid instead of one block per SM
# high-diameter graphs (roads): the measurement extras (filters) are left out to keep the
# device run short (session 1 measured them: benchmarks/results/gpu_bfs_scale22.json)
VARIANTS_ROAD = ("plain", "plain@full", "plain-v", "plain-s1", "lazy", "switch", "switch-eq6")
# over 200M arcs (scale 24): the extras measured at 22-23 are left out (device time)
VARIANTS_BIG = ("plain", "plain@full", "plain-s1", "lazy", "switch", "switch-eq6")
TINY_SWEEP = (0, 8, 16)
#: Arcs a cupyx.scipy.sparse csr_matrix can hold: its indptr and indices are int32 (cuSPARSE's
#: 32-bit index type), so 2**31 arcs or more would wrap, not fail: the SpMV BFS is skipped there
#: (GAP kron:27 / urand:27 have 4.2e9 / 4.3e9 arcs).
SPMV_MAX_ARCS = 2**31 - 1
#: Baselines --skip-baselines can leave out: the CuPy SpMV BFS, scipy's BFS, the CPU backend.
BASELINES = ("spmv", "scipy", "cpu")
BLEST_REF = {"kron:21": 0.30, "urand:21": 0.26, "road-FLA": 7.8}  # ms/source, BLEST on an H200



def split_spec(spec, default_window):
    """``kron:22+w16384+w65536`` -> ``("kron:22", [16384, 65536])``; no ``+w``: the default;
    ``kron:24+none`` -> ``("kron:24", [])``: reorder=none only (no auto ordering)."""
    parts = spec.split("+")
    if "none" in parts[1:]:
        return parts[0], []
    wins = [int(x[1:]) for x in parts[1:] if x.startswith("w")]
    return parts[0], (wins or [default_window])


def with_none(spec):
    """Whether ``spec`` times (and --prep prepares) reorder=none beside the auto ordering:
    ``kron:27+auto`` (with or without ``+wW``) -> False, the auto ordering alone (at 2**27
    vertices the BVSS of each ordering takes ~25 GB of host memory and a minute to build)."""
    return "auto" not in spec.split("+")[1:]


def spmv_skip_reason(arcs):
    """Why the CuPy SpMV BFS cannot run on a graph of ``arcs`` arcs, or None when it can."""
    if arcs > SPMV_MAX_ARCS:
        return (f"cupyx.scipy.sparse.csr_matrix holds int32 indptr/indices (cuSPARSE 32-bit): "
                f"{arcs} arcs > 2**31 - 1 would wrap")
    return None


def parse_variants(text):
    """``--variants``: comma-separated names of :data:`VARIANTS` (or ``switch~aX``), in order,
    without repeats; '' -> None (the default lists)."""
    names = [v for v in text.split(",") if v]
    if not names:
        return None
    for name in names:
        v, k_ok = name, True
        if "~c" in v:  # any variant with the bottom-up scan's chunk K (GpuBFS bu_chunk), "l": work lists
            v, k = v.rsplit("~c", 1)
            k_ok = k.rstrip("l") in ("1", "2", "4", "8", "16")
        ok = k_ok and v in VARIANTS
        if v.startswith("switch~a"):
            try:
                ok = k_ok and float(v[len("switch~a"):]) >= 0
            except ValueError:
                ok = False
        if not ok:
            raise argparse.ArgumentTypeError(f"variant must be one of {', '.join(VARIANTS)} or switch~aX, "
                                             f"optionally followed by ~cK or ~cKl (K in 1, 2, 4, 8, 16; l: bu_list); got {name!r}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"variants must not repeat; got {text!r}")
    return tuple(names)


def parse_skip(text):
    """``--skip-baselines``: comma-separated names of :data:`BASELINES` -> a frozenset."""
    names = frozenset(x for x in text.split(",") if x)
    bad = sorted(names - set(BASELINES))
    if bad:
        raise argparse.ArgumentTypeError(f"baselines to skip must be among {', '.join(BASELINES)}; got {bad}")
    return names


def _nonneg_int(text):
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {text}")
    return v


def _base(workdir, spec):
    return Path(workdir) / spec.replace(":", "_")


def _wait_prepped(spec, workdir, deadline):
    """The graph prepared by a --prep process in workdir, or None when none was started."""
    if workdir is None:
        return None
    base = _base(workdir, spec)
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
    """Generate one graph and preprocess it (reorder none, and auto at each window of the
    spec) into workdir/cache; times in workdir/<graph>.done."""
    from distgraph.backends.gpu.bfs import _cached_preprocess
    from distgraph.runtime.config import config

    w0 = config.gpu_bfs_window if window is None else window
    name, windows = split_spec(spec, w0)
    base = _base(workdir, name)
    try:
        t0 = time.perf_counter()
        g = load(name)
        # gen_device: where the CSR was built (DISTGRAPH_GEN_DEVICE=gpu: on the GPU, the only way
        # scales 26-27 fit in one device call)
        info = {"gen_s": time.perf_counter() - t0, "start_unix": time.time() - (time.perf_counter() - t0),
                "gen_device": config.gen_device}
        np.savez(base.with_suffix(".tmp.npz"), indptr=g.indptr, indices=g.indices, directed=g.directed)
        os.replace(base.with_suffix(".tmp.npz"), base.with_suffix(".npz"))

        def one(reorder, w):
            t0 = time.perf_counter()
            _, _, _, _, pinfo = _cached_preprocess(g, reorder, w, Path(workdir) / "cache")
            pinfo["total_s"] = time.perf_counter() - t0
            return pinfo

        # one after the other: the BVSS build, U_div and Jaccard are numba-parallel (a fork
        # after numba's threads started is not safe with the OpenMP layer)
        if with_none(spec) or not windows:
            info["none"] = one("none", (windows or [w0])[0])
        for w in windows:
            info[f"auto@w{w}"] = one("auto", w)
            if info[f"auto@w{w}"]["method"] != "jaccard":
                break  # RCM does not depend on the window
        info["end_unix"] = time.time()
        base.with_suffix(".done").write_text(json.dumps(info, default=float))
    except Exception as e:  # reported by the timed run
        base.with_suffix(".failed").write_text(f"{type(e).__name__}: {e}")
        raise


class PrepGroup:
    """The background --prep processes (their process group, from W/prep.pgid): stopped
    while something is timed, so timings never share the host with the preparation."""

    def __init__(self, workdir, enabled):
        self.pgid = None
        f = Path(workdir) / "prep.pgid" if workdir else None
        if enabled and f is not None and f.is_file():
            self.pgid = int(f.read_text())
        self.stopped_s = 0.0

    def alive(self):
        """Whether a process of the group still runs (zombies do not count)."""
        if self.pgid is None:
            return False
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, ...
            if int(fields[2]) == self.pgid and fields[0] not in "ZX":
                return True
        return False

    def _signal(self, sig):
        if self.alive():
            try:
                os.killpg(self.pgid, sig)
            except OSError:
                pass

    def __enter__(self):
        import signal

        self._t = time.perf_counter()
        self._signal(signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        import signal

        self._signal(signal.SIGCONT)
        self.stopped_s += time.perf_counter() - self._t
        return False


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
    has_arcs = bool(np.any(deg > 0))  # once, not per draw: it reads every degree
    while len(out) < k and has_arcs:
        v = int(rng.integers(0, g.n))
        if deg[v] > 0:
            out.append(v)
    return out


class SpmvBFS:
    """A user's GPU BFS: frontier vector times A^T with cuSPARSE, one level per SpMV."""

    def __init__(self, g):
        why = spmv_skip_reason(g.m)
        if why is not None:  # cupyx would wrap the int32 indptr silently
            raise ValueError(f"SpmvBFS: {why}")
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


def chunk_module(eng, k, **extra):
    """The bvss_bfs module of ``eng`` compiled with bottom-up chunk ``k`` ("4", or "4l" with the
    work lists of bu_list) plus ``extra`` defines."""
    from distgraph.backends.gpu.loader import get_module

    keep = eng._bu_chunk, eng._bu_list
    eng._bu_chunk, eng._bu_list = int(str(k).rstrip("l")), str(k).endswith("l")  # not the setters
    try:
        return get_module("bvss_bfs", defines=eng.kernel_defines(**extra), cooperative=True)
    finally:
        eng._bu_chunk, eng._bu_list = keep


def run_variant(eng, s, v):
    """One BFS of variant ``v``; ``"X@full"`` runs X on the full co-resident grid;
    ``"switch-eq6"`` switches by Eq. 6 alone (alpha 0), ``"switch~aX"`` with alpha = X;
    ``"X~cK"`` runs X with the kernels compiled for bottom-up chunk K (``eng._extra_defines``,
    e.g. the level-timing build, kept)."""
    if "~c" in v:
        base, k = v.rsplit("~c", 1)
        mod = chunk_module(eng, k, **getattr(eng, "_extra_defines", {}))
        keep = (eng._kernel, eng._k_direct, eng._k_lazy)
        eng._kernel = mod.get_function("distgraph_bfs_persistent")
        eng._k_direct = mod.get_function("distgraph_bfs_direct")
        eng._k_lazy = mod.get_function("distgraph_bfs_lazy")
        try:
            return run_variant(eng, s, base)
        finally:
            eng._kernel, eng._k_direct, eng._k_lazy = keep
    if v == "switch-eq6" or v.startswith("switch~a"):
        keep = eng.alpha
        eng.alpha = 0.0 if v == "switch-eq6" else float(v[len("switch~a"):])
        try:
            return eng.run_device(s, "switch")
        finally:
            eng.alpha = keep
    if v.endswith("@full"):
        eng.grid = eng.grid_full
        try:
            return eng.run_device(s, v[:-5])
        finally:
            eng.grid = None
    return eng.run_device(s, v)


def _orderings(g, windows, cache_dir, args, none=True):
    """(label, engine factory) per ordering: none (unless ``none`` is False), then auto at
    each window (one auto for graphs that get RCM)."""
    from distgraph.formats.reorder import is_scale_free

    if not windows:  # reorder=none only
        return [("none", "none", args.window or __import__("distgraph.runtime.config", fromlist=["config"]).config.gpu_bfs_window)]
    sf = is_scale_free(g)[0]
    wins = windows if sf else windows[:1]
    out = [("none", "none", wins[0])] if none else []
    for w in wins:
        out.append(("auto" if len(wins) == 1 else f"auto@w{w}", "auto", w))
    return out


def bench_graph(spec, args, cache_dir, got, progress=None):
    """Every row of one graph (see the module docstring); ``progress(out)`` is called with
    the partial result after each phase (main writes it, so a run cut by a time limit
    still leaves what it measured)."""
    import cupy as cp
    import scipy.sparse.csgraph as csg

    from distgraph.algorithms.bfs import verify_bfs
    from distgraph.backends.gpu.bfs import TINY_DEFAULT, GpuBFS
    from distgraph.runtime.config import config

    tiny_default = TINY_DEFAULT
    sync = cp.cuda.runtime.deviceSynchronize
    progress = progress or (lambda _out: None)
    skip = getattr(args, "skip_baselines", frozenset())
    name, windows = split_spec(spec, args.window or config.gpu_bfs_window)
    out = {"graph": name, "windows": windows, "none_ordering": with_none(spec) or not windows}
    t0 = time.perf_counter()
    if got is not None:
        g, out["prep"] = got
    else:
        g = load(name)
        out["gen_device"] = config.gen_device  # where the CSR of a generated graph was built
    out.update({"load_s": time.perf_counter() - t0, "n": g.n, "arcs": g.m, "directed": g.directed,
                "load_avg_start": os.getloadavg()})
    print(f"== {name}: n={g.n} arcs={g.m} (load {out['load_s']:.1f} s)", flush=True)
    progress(out)
    srcs = gap_sources(g, args.sources)
    deg = np.diff(g.indptr)
    road = "road" in name
    big = g.m > 100_000_000
    variants = args.variants or (VARIANTS_ROAD if road else (VARIANTS_BIG if g.m > 200_000_000 else VARIANTS))
    out["variants"] = list(variants)
    # ---- baselines; the reference levels every BLEST variant must reproduce: the SpMV BFS's,
    # else (2**31 arcs or more, or skipped) the CPU backend's
    ref, ms = {}, []
    nb = min(len(srcs), 4 if road else len(srcs))
    spmv_why = "--skip-baselines spmv" if "spmv" in skip else spmv_skip_reason(g.m)
    if spmv_why is None:
        base = SpmvBFS(g)
        base.levels(srcs[0])
        sync()
        for s in srcs[:nb]:
            lev, t = timed(lambda: base.levels(s), sync)
            ref[s] = lev.get()
            ms.append(t)
        arcs_reached = {s: int(deg[ref[s] >= 0].sum()) for s in ref}
        mean_arcs = float(np.mean(list(arcs_reached.values())))
        out["cupy_spmv"] = {"ms": float(np.mean(ms)), "sources": nb, "gteps": mean_arcs / np.mean(ms) / 1e6}
        out["reference"] = "cupy_spmv"
        del base
        cp.get_default_memory_pool().free_all_blocks()
    else:
        out["cupy_spmv"] = {"skipped": spmv_why}
        out["reference"] = None
    ms = []
    ncpu = args.cpu_sources
    # scipy's BFS takes ~8 s per source at kron:22 (session 1, gpu_bfs_scale22.json): none
    # on graphs over 100M arcs, to keep the device run short
    nscipy = 0 if (big or "scipy" in skip) else ncpu
    A = g.to_scipy() if nscipy else None
    for s in srcs[:nscipy]:
        t = time.perf_counter()
        csg.breadth_first_order(A, s, directed=g.directed, return_predecessors=False)
        ms.append((time.perf_counter() - t) * 1e3)
    out["scipy_cpu"] = {"ms": float(np.mean(ms)) if ms else None, "sources": len(ms)}
    if not nscipy:
        out["scipy_cpu"]["skipped"] = ("--skip-baselines scipy" if "scipy" in skip else
                                       "--cpu-sources 0" if not ncpu else "over 100M arcs")
    del A
    if "cpu" in skip or ncpu == 0:
        out["distgraph_cpu"] = {"skipped": "--skip-baselines cpu" if "cpu" in skip else "--cpu-sources 0"}
    else:
        try:
            import numba

            import distgraph

            # the serial CPU backend took 0.9-1.3 s per source at scale 24 (gpu_bfs_scale24.json):
            # on graphs over 2**31 arcs no warm-up (its first run loads the compiled kernels)
            warm = g.m <= SPMV_MAX_ARCS
            if warm:
                distgraph.bfs(g, srcs[0], backend="cpu")
            ms = []
            for s in srcs[:ncpu]:
                t = time.perf_counter()
                r = distgraph.bfs(g, s, backend="cpu")
                ms.append((time.perf_counter() - t) * 1e3)
                if out["reference"] in (None, "distgraph_cpu"):
                    ref[s] = r.levels
                    out["reference"] = "distgraph_cpu"
            arcs_cpu = float(np.mean([int(deg[ref[s] >= 0].sum()) for s in srcs[:ncpu] if s in ref]
                                     or [np.nan]))
            out["distgraph_cpu"] = {"ms": float(np.mean(ms)), "sources": len(ms), "threads": numba.get_num_threads(),
                                    "host_cpus": os.cpu_count(), "warmup": warm,
                                    "gteps": arcs_cpu / float(np.mean(ms)) / 1e6}
        except Exception as e:  # the CPU backend may not be in this checkout
            out["distgraph_cpu"] = {"error": f"{type(e).__name__}: {e}"[:200]}
    print(f"   cupy SpMV {out['cupy_spmv'].get('ms', 'skipped')} ms, scipy {out['scipy_cpu']['ms']} ms, "
          f"cpu backend {out['distgraph_cpu'].get('ms', 'n/a')} ms; reference {out['reference']}", flush=True)
    progress(out)
    # ---- BLEST, each variant, without and with reordering (each window)
    out["blest"] = {}
    nchk = 8  # sources whose levels every variant must reproduce (the reference's)
    keep = None  # the engine of the first auto ordering, kept for the auto choice and parents
    # arcs of the reached component summed on the device (a host mask over the levels of each
    # source costs ~0.3 s at 2**27 vertices)
    deg_d = cp.asarray(deg)
    for label, reorder, w in _orderings(g, windows, cache_dir, args, none=out["none_ordering"]):
        t0 = time.perf_counter()
        eng = GpuBFS(g, variant="switch", reorder=reorder, window=w, cache_dir=cache_dir)
        build_s = time.perf_counter() - t0
        info = {k: v for k, v in eng.info.items() if k not in ("auto_check_ms",)}
        res = {"setup_s": build_s, "info": info, "mismatches": [], "checked_sources": 0}
        arcs_all = []
        base_v = "plain" if "plain" in variants else "switch"  # the levels the arcs are counted on
        for i, s in enumerate(srcs):
            lev_d = eng._levels_caller_device(s, base_v)
            arcs_all.append(int(cp.where(lev_d >= 0, deg_d, 0).sum()))
            if i >= nchk or s not in ref:
                continue
            lev = lev_d.get()
            res["checked_sources"] += 1
            for v in dict.fromkeys((base_v,) + tuple(variants)):
                if v == base_v:
                    got_l = lev
                else:
                    d, _ = run_variant(eng, s, v)
                    got_l = d.get() if eng.new_id is None else d.get()[eng.new_id]
                if not np.array_equal(got_l, ref[s]):
                    res["mismatches"].append([v, int(s), int(np.count_nonzero(got_l != ref[s]))])
        mean_arcs = float(np.mean(arcs_all))
        for v in variants:
            eng.tiny = 0 if v == "plain-s1" else tiny_default
            for s in srcs[:2]:
                run_variant(eng, s, v)
            ms = np.array([run_variant(eng, s, v)[1] for s in srcs])
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
        out["blest"][label] = res
        print(f"   BLEST {label} ({info.get('method')}, W {w}, U_div {info['udiv']:.0f}, "
              f"{info['bvss']['bytes_per_edge']:.2f} B/arc, setup {build_s:.1f} s): "
              + ", ".join(f"{v} {res[v]['ms']:.3f} ms ({res[v]['gteps']:.1f} GTEPS)" for v in variants)
              + (f" tiny sweep {res.get('plain_tiny_sweep_ms')}"
                 if "plain_tiny_sweep_ms" in res else "")
              + (f" MISMATCHES {res['mismatches'][:6]}" if res["mismatches"] else ""),
              flush=True)
        progress(out)
        if keep is None and (reorder == "auto" or not windows):
            keep = (label, eng)
        else:
            del eng
        cp.get_default_memory_pool().free_all_blocks()
    # ---- the auto choice (reorder auto, U_div rule, first-sources switching check), on the
    # kept engine: what GpuBFS(variant="auto") does after the same preprocessing
    label, eng = keep
    eng.variant = eng._first_sources_check(eng.info["udiv_choice"])
    for s in srcs[:2]:
        eng.run_device(s)
    ms = np.array([eng.run_device(s)[1] for s in srcs])
    out["blest_auto"] = {"ordering": label, "variant": eng.variant, "alpha": eng.alpha,
                         "udiv_choice": eng.info["udiv_choice"],
                         "auto_check_ms": eng.info.get("auto_check_ms"), "ms": float(ms.mean()),
                         "gteps": out["blest"][label]["arcs_reached_mean"] / float(ms.mean()) / 1e6}
    if name in BLEST_REF:
        out["blest_paper_code_ms"] = BLEST_REF[name]
        out["ratio_vs_blest_code"] = float(ms.mean()) / BLEST_REF[name]
    if out["cupy_spmv"].get("ms"):
        out["speedup_auto_vs_cupy_spmv"] = out["cupy_spmv"]["ms"] / float(ms.mean())
    if out["scipy_cpu"]["ms"]:
        out["speedup_auto_vs_scipy_cpu"] = out["scipy_cpu"]["ms"] / float(ms.mean())
    if out["distgraph_cpu"].get("ms"):
        out["speedup_auto_vs_distgraph_cpu"] = out["distgraph_cpu"]["ms"] / float(ms.mean())
    print(f"   auto -> {eng.variant}: {ms.mean():.3f} ms  x{out.get('speedup_auto_vs_cupy_spmv', float('nan')):.1f} "
          "vs SpMV", flush=True)
    progress(out)
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
    del eng, keep
    cp.get_default_memory_pool().free_all_blocks()
    out["load_avg_end"] = os.getloadavg()
    progress(out)
    return out


AB_CONFIGS = (("cur", "switch"), ("cur", "lazy"), ("cur", "plain"), ("cur", "plain@full"),
              ("s1", "switch"), ("s1", "lazy"), ("s1", "plain"))


def _synthetic_load(k):
    """k processes sorting 128 MiB arrays (memory-bound host work, as the preparation is)."""
    code = "import numpy as np\na = np.random.rand(1 << 24)\nwhile True:\n    np.sort(a)\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(k)]


def ab_graph(spec, args, cache_dir, prep):
    """The A/B of the scale-22 regression (see the module docstring)."""
    import cupy as cp

    from distgraph.backends.gpu.bfs import BLOCK, GpuBFS
    from distgraph.backends.gpu.loader import KERNEL_DIR
    from distgraph.runtime.config import config

    name, windows = split_spec(spec, args.window or config.gpu_bfs_window)
    got = _wait_prepped(name, args.workdir, args.deadline)
    g = got[0] if got is not None else load(name)
    out = {"graph": name, "n": g.n, "arcs": g.m, "windows": windows, "prep": got[1] if got else None,
           "configs": [f"{k}:{v}" for k, v in AB_CONFIGS], "orderings": {}}
    srcs = gap_sources(g, args.sources)
    deg = np.diff(g.indptr)
    src_code = Path(args.s1_kernel).read_text()
    s1 = cp.RawModule(code=f"#define DG_BFS_BLOCK {BLOCK}\n" + src_code, options=("-std=c++17", f"-I{KERNEL_DIR}"),
                      backend="nvrtc", enable_cooperative_groups=True).get_function("distgraph_bfs_persistent")
    engines = []
    for label, reorder, w in _orderings(g, windows, cache_dir, args):
        t0 = time.perf_counter()
        eng = GpuBFS(g, variant="switch", reorder=reorder, window=w, cache_dir=cache_dir)
        engines.append((label, eng, time.perf_counter() - t0))

    def run(eng, kern, v, s):
        if kern == "cur":
            return run_variant(eng, s, v)
        mode = {"plain": 0, "lazy": 1, "switch": 2}[v]
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        s1((int(eng.grid_full),), (BLOCK,),
           (eng._row_ids, eng._masks, eng._real_ptrs, eng._v2r, eng._t_ip, eng._t_ix, np.int32(eng.n),
            np.int32(mode), np.int32(eng.eta), np.int32(eng._internal(s)), eng._level, eng._F, eng._V, eng._Q,
            np.int32(eng._qcap), eng._ctr))
        stop.record()
        stop.synchronize()
        return eng._level, float(cp.cuda.get_elapsed_time(start, stop))

    for label, eng, build_s in engines:  # every configuration gives the same levels
        bad = []
        for s in srcs[:4]:
            ref = run(eng, "cur", "switch", s)[0].copy()
            for kern, v in AB_CONFIGS[1:]:
                if not bool(cp.array_equal(run(eng, kern, v, s)[0], ref)):
                    bad.append([f"{kern}:{v}", int(s)])
        lev = ref.get()
        arcs = float(np.mean([int(deg[(eng.levels(s) >= 0)].sum()) for s in srcs[:8]]))
        out["orderings"][label] = {"setup_s": build_s, "mismatches": bad, "arcs_reached_mean_8": arcs,
                                   "info": {k: eng.info[k] for k in ("method", "udiv", "bvss", "window", "grid")},
                                   "levels_last": int(lev.max()) + 1}

    def one_pass(tag):
        la = os.getloadavg()
        t0 = time.perf_counter()
        for label, eng, _ in engines:
            for kern, v in AB_CONFIGS:
                run(eng, kern, v, srcs[0])
            ms = {c: [] for c in AB_CONFIGS}
            for s in srcs:  # interleaved: each source runs every configuration in turn
                for c in AB_CONFIGS:
                    ms[c].append(run(eng, c[0], c[1], s)[1])
            arcs = out["orderings"][label]["arcs_reached_mean_8"]
            out["orderings"][label][tag] = {
                f"{k}:{v}": {"ms": float(np.mean(x)), "ms_median": float(np.median(x)), "ms_min": float(np.min(x)),
                             "ms_max": float(np.max(x)), "gteps_8src_arcs": arcs / float(np.mean(x)) / 1e6}
                for (k, v), x in ms.items()}
            print(f"   A/B {name} {label} [{tag}]: " + ", ".join(
                f"{c} {d['ms']:.3f}" for c, d in out["orderings"][label][tag].items()), flush=True)
        out.setdefault("passes", {})[tag] = {"load_avg_before": la, "load_avg_after": os.getloadavg(),
                                             "wall_s": time.perf_counter() - t0}

    with prep:
        one_pass("idle")
    # loaded: the (niced) preparation keeps running and one synthetic numpy process per
    # core competes with this process at normal priority, as session 2's un-niced
    # background preparation did
    out["loaded_with_prep_running"] = prep.alive()
    procs = _synthetic_load(os.cpu_count() or 16)
    try:
        time.sleep(2.0)
        one_pass("loaded")
    finally:
        for pr in procs:
            pr.kill()
        for pr in procs:
            pr.wait()
    del engines
    cp.get_default_memory_pool().free_all_blocks()
    return out


LEVEL_NS = 4096  # levels a --level-profile run can time (DG_BFS_LEVEL_NS)
LEVEL_KINDS = {0: "direct", 1: "lazy_top_down", 2: "bottom_up", 3: "tiny_block0"}


def levels_from_stamps(ns, nq, kind, kinds=LEVEL_KINDS):
    """The timing build's stamps (``ns[l]`` = start of level l, 0 where not stamped; the
    stamp after the last level is the end) -> per-level rows (level, microseconds to the
    next stamp, queue length, kind) and totals per kind. Levels that block 0 ran alone
    (``tiny``) are not stamped one by one: their time goes to the stamped level before."""
    ns = np.asarray(ns, np.uint64)
    stamped = np.flatnonzero(ns)
    levels, by_kind = [], {}
    for a, b in zip(stamped[:-1], stamped[1:]):
        us = float(ns[b] - ns[a]) / 1e3
        k = kinds.get(int(kind[a]), str(int(kind[a])))
        levels.append({"level": int(a), "us": us, "queue_vss": int(nq[a]), "kind": k})
        agg = by_kind.setdefault(k, {"levels": 0, "us": 0.0, "queue_vss": 0})
        agg["levels"] += 1
        agg["us"] += us
        agg["queue_vss"] += int(nq[a])
    span = float(ns[stamped[-1]] - ns[stamped[0]]) / 1e3 if stamped.size > 1 else None
    return {"stamped_us": span, "by_kind": by_kind, "levels": levels}


def level_profile(spec, args, cache_dir):
    """Per-level times of each variant (plain, lazy, switch) for a few GAP sources: the
    kernel compiled with DG_BFS_LEVEL_NS (kernels/bvss_bfs.cu), whose thread 0 stamps
    %globaltimer at each level's start with the level's queue length and kind. Says where
    a BFS spends its time (top-down vs bottom-up levels, queue sizes), e.g. why urand's
    GTEPS fall with scale. Levels are in the run's internal ids; times in microseconds."""
    import cupy as cp

    from distgraph.backends.gpu.bfs import BLOCK, GpuBFS
    from distgraph.backends.gpu.loader import get_module
    from distgraph.runtime.config import config

    kinds = LEVEL_KINDS
    name, windows = split_spec(spec, args.window or config.gpu_bfs_window)
    got = _wait_prepped(name, args.workdir, args.deadline) if args.workdir else None
    g = got[0] if got is not None else load(name)
    mod = get_module("bvss_bfs", defines={"DG_BFS_BLOCK": BLOCK, "DG_BFS_LEVEL_NS": LEVEL_NS}, cooperative=True)

    def globs(m):
        return {k: cp.ndarray((LEVEL_NS + 1,), dt, m.get_global(f"dg_level_{k}"))
                for k, dt in (("ns", cp.uint64), ("nq", cp.int32), ("kind", cp.int32))}
    reorder = "auto" if windows else "none"
    t0 = time.perf_counter()
    eng = GpuBFS(g, variant="switch", reorder=reorder, window=windows[0] if windows else None, cache_dir=cache_dir,
                 bu_chunk=1)
    eng._extra_defines = {"DG_BFS_LEVEL_NS": LEVEL_NS}
    out = {"graph": name, "n": g.n, "arcs": g.m, "reorder": reorder, "setup_s": time.perf_counter() - t0,
           "info": {k: eng.info.get(k) for k in ("method", "udiv", "bvss", "window", "grid")},
           "kinds": kinds, "variants": {}}
    # the timing build in place of the engine's kernels; its grid sized for it
    eng._kernel = mod.get_function("distgraph_bfs_persistent")
    eng._k_direct = mod.get_function("distgraph_bfs_direct")
    eng._k_lazy = mod.get_function("distgraph_bfs_lazy")
    eng.grid_full = min(eng.grid_full, eng._grid_size())
    eng.grid_plain = min(eng.grid_plain, eng.grid_full)
    out["grid_timing_build"] = [eng.grid_plain, eng.grid_full]
    srcs = gap_sources(g, min(args.sources, 4))
    for v in (("plain", "lazy", "switch", "switch-eq6") + tuple(f"switch~a{a:g}" for a in args.alphas)
              + tuple(f"switch~c{k}" for k in args.chunks) + tuple(f"switch-eq6~c{k}" for k in args.chunks)):
        runs = []
        glob = globs(chunk_module(eng, v.rsplit("~c", 1)[1], **eng._extra_defines) if "~c" in v else mod)
        run_variant(eng, int(srcs[0]), v)  # warm-up
        for src in srcs:
            glob["ns"].fill(0)
            glob["nq"].fill(0)
            glob["kind"].fill(-1)
            _, ms = run_variant(eng, int(src), v)
            runs.append({"source": int(src), "ms": ms,
                         **levels_from_stamps(*(glob[k].get() for k in ("ns", "nq", "kind")), kinds)})
        out["variants"][v] = runs
        print(f"  {name} {v}: " + ", ".join(f"{r['ms']:.3f} ms " + json.dumps(r["by_kind"]) for r in runs[:1]),
              flush=True)
    return out


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--graphs", default=os.environ.get("BENCH_GPU_BFS_GRAPHS", "kron:21,urand:21,road-FLA,email-Enron"),
                   help="comma-separated; env BENCH_GPU_BFS_GRAPHS overrides the default")
    p.add_argument("--sources", type=int, default=64)
    p.add_argument("--window", type=int, default=int(os.environ.get("BENCH_GPU_BFS_WINDOW", 0)) or None,
                   help="Jaccard window W (default config.gpu_bfs_window; env BENCH_GPU_BFS_WINDOW)")
    p.add_argument("--max-seconds", type=float, default=float(os.environ.get("BENCH_GPU_BFS_MAX_SECONDS", 480)),
                   help="skip the remaining graphs after this (env BENCH_GPU_BFS_MAX_SECONDS)")
    p.add_argument("--name", default="gpu_bfs")
    p.add_argument("--workdir", default=None, help="shared with --prep (generated graphs, preprocessing cache)")
    p.add_argument("--prep", default=None, help="comma-separated graphs to generate and preprocess into --workdir, "
                                                "one process each, then exit")
    p.add_argument("--prep-one", default=None, help=argparse.SUPPRESS)
    p.add_argument("--ab", default="", help="comma-separated graphs for the kernel/window/background A/B")
    p.add_argument("--s1-kernel", default=str(ROOT / ".cache" / "h4" / "bvss_bfs_s1.cu"),
                   help="the session-1 kernel for --ab (git show af7bcda:kernels/bvss_bfs.cu)")
    p.add_argument("--level-profile", default="",
                   help="comma-separated graphs: per-level times of each variant (a timing build of the kernel) "
                        "into NAME.json's 'level_profile', before the --graphs rows (--graphs '' for the profile "
                        "alone)")
    p.add_argument("--chunks", type=lambda t: [x for x in t.split(",") if x], default=[],
                   help="--level-profile: also switch and switch-eq6 with the bottom-up scan's chunk at each "
                        "of these values (GpuBFS bu_chunk; K or Kl, l: bu_list; the other rows run chunk 1)")
    p.add_argument("--alphas", type=lambda t: [float(x) for x in t.split(",") if x], default=[],
                   help="--level-profile: also the switch variant at each of these edge-test alphas "
                        "(comma-separated; config.gpu_bfs_alpha is 'switch', 0 is 'switch-eq6')")
    p.add_argument("--quiet-prep", action="store_true",
                   help="stop the --prep processes (W/prep.pgid) while a graph is timed")
    p.add_argument("--variants", type=parse_variants, default=None,
                   help="comma-separated BLEST variants to time for every ordering (default: by graph size; "
                        "the auto choice and the parents pass are always measured), e.g. lazy,switch,switch-eq6")
    p.add_argument("--skip-baselines", type=parse_skip, default=frozenset(),
                   help="comma-separated baselines to leave out: " + ", ".join(BASELINES)
                        + " (the SpMV BFS is skipped by itself on graphs of 2**31 arcs or more)")
    p.add_argument("--cpu-sources", type=_nonneg_int, default=4,
                   help="sources of the CPU rows (scipy, the CPU backend; 0: none); without the SpMV BFS the "
                        "CPU backend's levels of these sources are the reference the BLEST variants must match")
    p.add_argument("--no-cache", action="store_true",
                   help="no preprocessing cache (no workdir cache nor temporary one): each ordering is "
                        "built in this process and not written to disk (a graph of 2**27 vertices: ~25 GB "
                        "per ordering, and its checksum costs tens of seconds)")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.prep_one:
        prep_one(args.prep_one, args.workdir, args.window)
        return 0
    if args.prep:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        try:  # own process group, so that the timed run can stop the preparation
            os.setsid()
        except OSError:
            pass
        if os.getpgid(0) == os.getpid():
            (Path(args.workdir) / "prep.pgid").write_text(str(os.getpid()))
        procs = []
        for spec in [s for s in args.prep.split(",") if s]:
            _base(args.workdir, spec.split("+")[0]).with_suffix(".started").write_text("")
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
    prep = PrepGroup(args.workdir, args.quiet_prep)
    env["quiet_prep"] = prep.pgid is not None
    path = Path(args.outdir) / f"{args.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    env["options"] = {"variants": args.variants, "skip_baselines": sorted(args.skip_baselines),
                      "cpu_sources": args.cpu_sources, "no_cache": args.no_cache}

    def progress(partial):  # the graph being timed, written as it goes, with the host's peak so far
        import resource

        partial["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        partial["elapsed_s"] = time.perf_counter() - t_start
        results["in_progress"] = partial
        path.write_text(json.dumps(results, indent=1, default=float))

    with tempfile.TemporaryDirectory() as tmp_cache:
        cache_dir = False if args.no_cache else (str(Path(args.workdir) / "cache") if args.workdir else tmp_cache)
        if args.level_profile:
            results["level_profile"] = []
        for spec in [s for s in args.level_profile.split(",") if s]:
            try:
                with prep:
                    results["level_profile"].append(level_profile(spec, args, cache_dir))
            except Exception as e:
                import traceback

                traceback.print_exc()
                results["level_profile"].append({"graph": spec, "error": f"{type(e).__name__}: {e}"[:500]})
            path.write_text(json.dumps(results, indent=1, default=float))
        if args.ab:
            results["ab"] = []
        for spec in [s for s in args.ab.split(",") if s]:
            try:
                results["ab"].append(ab_graph(spec, args, cache_dir, prep))
            except Exception as e:
                import traceback

                traceback.print_exc()
                results["ab"].append({"graph": spec, "error": f"{type(e).__name__}: {e}"[:500]})
            path.write_text(json.dumps(results, indent=1, default=float))
        for spec in [s for s in args.graphs.split(",") if s]:
            if time.perf_counter() - t_start > args.max_seconds:
                results["skipped"].append(spec)
                continue
            try:
                got = _wait_prepped(spec.split("+")[0], args.workdir, args.deadline)
                with prep:
                    results["graphs"].append(bench_graph(spec, args, cache_dir, got, progress))
            except Exception as e:
                import traceback

                traceback.print_exc()
                results["graphs"].append({"graph": spec, "error": f"{type(e).__name__}: {e}"[:500],
                                          "partial": results.get("in_progress")})
            results.pop("in_progress", None)
            results["elapsed_s"] = time.perf_counter() - t_start
            results["prep_stopped_s"] = prep.stopped_s
            path.write_text(json.dumps(results, indent=1, default=float))
    path.write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {path}")
    bad = any("error" in r for r in results["graphs"] + results.get("ab", []) + results.get("level_profile", []))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
