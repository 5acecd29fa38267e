"""Benchmark: Bellman-Ford from many sources of one graph (issue 7), what a user's call costs
per source: ``bellman_ford(graph, sources)`` (one set-up of the graph for all sources; on the
GPU the rounds renamed by degree once 512 or more sources are left, rows copied straight into
the result), side by side, on the same graph and sources in the same run, with

* ``norename``: the same call with ``BellmanFord(relabel="none")`` (the renaming's share);
* ``nobatch``: the same call one source at a time (``DISTGRAPH_GPU_SSSP_BATCH=0`` and
  ``DISTGRAPH_CPU_SSSP_BATCH=0``: session 19's path; the default runs up to 32 sources' rounds
  together, ``RoundsSSSP.run_batch`` or the CPU backend's ``run_batch``); ``bK`` (``b8``,
  ``b16``): batches of K sources; ``skip``: the batched rounds skipping
  sources already relaxed from their key (``BATCH_SKIP = True``); ``k64``: 8-byte keys for
  integer weights too (``BATCH_KEYS32 = False``); ``thinK``: the batched rounds' thin
  vertices up to K (arcs times sources; ``BATCH_THIN``, 0: every vertex by a warp);
  ``nfoff`` / ``nfdeep`` / ``nfalways``: the batched rounds' near-far order (``BATCH_NEAR_FAR``);
  ``dK``: its delta K times the mean weight (``BATCH_DELTA_FACTOR``); ``nographs``: the
  queued rounds launched one by one, not as CUDA graphs (``BATCH_GRAPHS = False``); ``pK``:
  a deep graph's rounds as one cooperative launch on K blocks an SM (``BATCH_PERSIST``; ``p0``:
  off, the CUDA graphs); ``gK``: K groups of sources in step once a batch proved the graph
  deep (``BATCH_GROUPS``);
* ``loop``: ``bellman_ford(graph, s)`` called once per source (the first ``--loop`` sources;
  what a user of the single-source API pays: the upload every time);
* ``scipy``: ``scipy.sparse.csgraph.dijkstra(A, indices=...)`` (uniform weights) or
  ``johnson`` (shifted; only up to ``--johnson-max-arcs`` arcs: its Bellman-Ford from a
  virtual source takes seconds on Kronecker 14 already), the first ``--peers`` sources;
* ``cpu``: the CPU backend on one rank, ``bellman_ford(graph, sources, backend="cpu")``, the
  first ``--peers`` sources.

    python benchmarks/sssp_many.py --outdir DIR [--graphs kron:20=512,kron:22=300,road-FLA=64]
        [--weights uniform,shifted] [--loop 16] [--peers 4] [--rows many,nobatch,norename,loop,scipy,cpu]
        [--backend gpu] [--tree TREE --label NAME]

Graphs and weights as benchmarks/sssp_e2e.py builds them (uniform weights in [1, 255], int32;
``shifted``: potential-shifted, about 29% negative). ``spec=K``: K sources drawn with a fixed
seed among the vertices with arcs (repeats possible). Each row: wall seconds of the call, per
source, and whether its rows equal the ``many`` row's (every compared row, exactly; scipy's as
float64 with inf). ``--tree``: import distgraph from another checkout (an older commit, for an
A/B in the same machine session; ``--label`` names the rows). Writes DIR/sssp_many[_LABEL].json
(commit, device, date) after every graph.
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
ROOT = HERE.parent


def _equal(a, b):
    return bool(a.shape == b.shape and np.array_equal(a, b))


def _as_float(d):
    from distgraph.algorithms.bellman_ford import unreachable

    out = d.astype(np.float64)
    out[d == unreachable(d.dtype)] = np.inf
    return out


def _stats(r):
    per = r.stats["per_source"]
    modes = {}
    for st in per:
        key = st.get("mode", "?") + ("+degree" if st.get("relabel") == "degree" else "")
        modes[key] = modes.get(key, 0) + 1
    setups = [st.get("time_setup_s") for st in per if st.get("time_setup_s") is not None]
    relabels = [st.get("time_relabel_s") for st in per if st.get("time_relabel_s") is not None]
    batched = [st for st in per if st.get("batch")]
    return {"modes": modes, "relaxations": r.stats["relaxations"],
            "batched_sources": len(batched),
            "batch_rounds": sorted(set(st["rounds"] for st in batched)),
            "batch_keys": sorted(set(st.get("keys", 8) for st in batched)),
            "batch_phases": sorted(set(st.get("phases", 0) for st in batched)),
            "batch_persistent_rounds": sorted(set(st.get("persistent_rounds", 0) for st in batched)),
            "batch_groups": sorted(set(st.get("groups", 1) for st in batched)),
            # the persistent rounds' time: first passes, second passes, advances (each to its sync)
            "persistent_split_s": [float(sum(st.get("persistent_split_s", [0.0] * 3)[i] for st in batched))
                                   for i in range(3)],
            "run_s_sum": float(sum(st.get("time_run_s", 0.0) for st in per)),
            "d2h_s_sum": float(sum(st.get("time_d2h_s", 0.0) for st in per)),
            # the row sink's pinned buffers and how long its puts waited for one (the call's)
            "sink_pinned_bytes": max([st.get("sink_pinned_bytes", 0) for st in per] or [0]),
            "sink_wait_s": float(max([st.get("sink_wait_s", 0.0) for st in per] or [0.0])),
            "finish_s_sum": float(sum(st.get("time_finish_s", 0.0) for st in per)),
            "setups_s": sorted(set(round(x, 4) for x in setups)),  # each engine's set-up (renaming included)
            "relabels_s": sorted(set(round(x, 4) for x in relabels)),  # of which the renaming
            "relabel_steps_s": next((st["time_relabel_steps_s"] for st in per if st.get("time_relabel_steps_s")), None)}


def case(spec, weights):
    from sssp_bench import build

    from distgraph.generators import potential_shift

    g, _ = build(spec)
    return potential_shift(g, seed=1) if weights == "shifted" else g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--graphs", default="kron:20=512,kron:22=300,road-FLA=64")
    ap.add_argument("--weights", default="uniform,shifted")
    ap.add_argument("--loop", type=int, default=16, help="sources of the one-call-per-source row")
    ap.add_argument("--peers", type=int, default=4, help="sources of the scipy and CPU-backend rows")
    ap.add_argument("--rows", default="many,nobatch,norename,loop,scipy,cpu")
    ap.add_argument("--backend", default="gpu", help="the timed rows' backend (cpu: a smoke test of this script)")
    ap.add_argument("--johnson-max-arcs", type=int, default=2_000_000)
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose distgraph is timed")
    ap.add_argument("--label", default="", help="suffix of the output file and name of the rows' code")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(Path(args.tree).resolve()))
    import scipy.sparse.csgraph as csg

    import distgraph
    from _common import commit, sh
    from distgraph.algorithms.bellman_ford import BellmanFord, bellman_ford
    from distgraph.generators import kronecker, uniform_weights

    rows = set(args.rows.split(","))
    variants = [x for x in args.rows.split(",")
                if x in ("nobatch", "skip", "k64") or (x[:1] == "b" and x[1:].isdigit())
                or (x[:4] == "thin" and x[4:].isdigit()) or x in ("nfoff", "nfdeep", "nfalways", "nographs")
                or (x[:1] in ("p", "g") and x[1:].isdigit())
                or (x[:1] == "d" and x[1:].replace(".", "", 1).isdigit())]
    out_dir = Path(args.outdir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path_out = out_dir / (f"sssp_many_{args.label}.json" if args.label else "sssp_many.json")
    res = {"benchmark": "sssp_many", "commit": commit(), "label": args.label, "tree": str(Path(args.tree).resolve()),
           "distgraph_file": distgraph.__file__,
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "host_cpus": os.cpu_count(), "loadavg": list(os.getloadavg()),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "backend": args.backend, "runs": []}
    # warm-up: the kernels compiled or loaded, numba's renaming kernel compiled or loaded
    small = uniform_weights(kronecker(10, seed=1), seed=1)
    with BellmanFord(small, backend=args.backend, mode="rounds", relabel="degree") as bf:
        bf.run(0)
    bellman_ford(small, [0, 1], backend=args.backend)
    for item in args.graphs.split(","):
        spec, _, k = item.partition("=")
        k = int(k or 64)
        for weights in args.weights.split(","):
            t0 = time.perf_counter()
            g = case(spec, weights)
            build_s = time.perf_counter() - t0
            cand = np.flatnonzero(np.diff(g.indptr) > 0)
            srcs = np.random.default_rng(20261201).choice(cand, size=k, replace=True).astype(np.int64)
            row = {"graph": spec, "weights": weights, "vertices": g.n, "arcs": g.m, "sources": k,
                   "weight_dtype": str(g.weights.dtype), "build_s": build_s}
            print(f"{spec} {weights}: n={g.n} m={g.m} k={k}", flush=True)
            bellman_ford(g, srcs[:1], backend=args.backend)  # this graph's first call (kernels for its dtype)
            ref = None
            if "many" in rows:
                t0 = time.perf_counter()
                r = bellman_ford(g, srcs, backend=args.backend)
                t = time.perf_counter() - t0
                ref = r.distance
                row["many"] = {"time_s": t, "per_source_ms": 1e3 * t / k, **_stats(r)}
                print(f"  many: {t:.3f} s, {1e3 * t / k:.3f} ms per source {row['many']['modes']}", flush=True)
                del r
            for name in variants:  # the same call with one setting changed
                from distgraph.backends.gpu import bellman_ford as gbf
                from distgraph.runtime.config import config

                batch, skip, k32, thin = config.gpu_sssp_batch, getattr(gbf, "BATCH_SKIP", None), \
                    getattr(gbf, "BATCH_KEYS32", None), getattr(gbf, "BATCH_THIN", None)
                nfar, dfac = getattr(gbf, "BATCH_NEAR_FAR", None), getattr(gbf, "BATCH_DELTA_FACTOR", None)
                cgraphs, cbatch = getattr(gbf, "BATCH_GRAPHS", None), config.cpu_sssp_batch
                cpersist, cgroups = getattr(gbf, "BATCH_PERSIST", None), getattr(gbf, "BATCH_GROUPS", None)
                if name == "nographs":
                    gbf.BATCH_GRAPHS = False
                elif name[:1] == "p":
                    gbf.BATCH_PERSIST = int(name[1:])
                elif name[:1] == "g":
                    gbf.BATCH_GROUPS = int(name[1:])
                elif name.startswith("nf"):
                    gbf.BATCH_NEAR_FAR = name[2:]
                elif name[:1] == "d" and name != "d":
                    gbf.BATCH_DELTA_FACTOR = float(name[1:])
                elif name.startswith("thin"):
                    gbf.BATCH_THIN = int(name[4:])
                elif name == "nobatch":
                    config.gpu_sssp_batch = config.cpu_sssp_batch = 0
                elif name == "skip":
                    gbf.BATCH_SKIP = True
                elif name == "k64":
                    gbf.BATCH_KEYS32 = False
                else:  # bK
                    config.gpu_sssp_batch = config.cpu_sssp_batch = int(name[1:])
                try:
                    t0 = time.perf_counter()
                    r = bellman_ford(g, srcs, backend=args.backend)
                    t = time.perf_counter() - t0
                finally:
                    config.gpu_sssp_batch, gbf.BATCH_SKIP, gbf.BATCH_KEYS32, gbf.BATCH_THIN = batch, skip, k32, thin
                    gbf.BATCH_NEAR_FAR, gbf.BATCH_DELTA_FACTOR, gbf.BATCH_GRAPHS = nfar, dfac, cgraphs
                    config.cpu_sssp_batch, gbf.BATCH_PERSIST, gbf.BATCH_GROUPS = cbatch, cpersist, cgroups
                row[name] = {"time_s": t, "per_source_ms": 1e3 * t / k, **_stats(r),
                             "same_as_many": None if ref is None else _equal(r.distance, ref)}
                print(f"  {name}: {t:.3f} s, {1e3 * t / k:.3f} ms per source", flush=True)
                del r
            if "norename" in rows:
                t0 = time.perf_counter()
                with BellmanFord(g, backend=args.backend, relabel="none") as bf:
                    r = bf.run_many(srcs)
                t = time.perf_counter() - t0
                row["norename"] = {"time_s": t, "per_source_ms": 1e3 * t / k, **_stats(r),
                                   "same_as_many": None if ref is None else _equal(r.distance, ref)}
                print(f"  norename: {t:.3f} s, {1e3 * t / k:.3f} ms per source", flush=True)
                del r
            if "loop" in rows and args.loop:
                sub = srcs[:args.loop]
                t0 = time.perf_counter()
                got = [bellman_ford(g, int(s), backend=args.backend).distance for s in sub]
                t = time.perf_counter() - t0
                row["loop"] = {"time_s": t, "sources": len(sub), "per_source_ms": 1e3 * t / len(sub),
                               "same_as_many": None if ref is None else _equal(np.stack(got), ref[:len(sub)])}
                print(f"  loop: {1e3 * t / len(sub):.3f} ms per source", flush=True)
            sub = srcs[:args.peers]
            if "scipy" in rows and args.peers:
                A = g.to_scipy(dtype=np.float64)
                neg = bool((g.weights < 0).any())
                if neg and g.m > args.johnson_max_arcs:
                    row["scipy"] = {"skipped": f"johnson on {g.m} arcs (over --johnson-max-arcs)"}
                else:
                    name = "johnson" if neg else "dijkstra"
                    t0 = time.perf_counter()
                    d = getattr(csg, name)(A, directed=True, indices=sub)
                    t = time.perf_counter() - t0
                    row["scipy"] = {"function": name, "time_s": t, "sources": len(sub),
                                    "per_source_ms": 1e3 * t / len(sub),
                                    "same_as_many": None if ref is None else _equal(_as_float(ref[:len(sub)]), d)}
                    print(f"  scipy {name}: {1e3 * t / len(sub):.3f} ms per source", flush=True)
                del A
            if "cpu" in rows and args.peers:
                bellman_ford(g, sub[:1], backend="cpu")
                t0 = time.perf_counter()
                r = bellman_ford(g, sub, backend="cpu")
                t = time.perf_counter() - t0
                row["cpu"] = {"time_s": t, "sources": len(sub), "per_source_ms": 1e3 * t / len(sub),
                              "same_as_many": None if ref is None else _equal(r.distance, ref[:len(sub)])}
                print(f"  cpu backend: {1e3 * t / len(sub):.3f} ms per source", flush=True)
            m = row.get("many", {}).get("per_source_ms")
            if m:
                row["speedup_many_over"] = {key: row[key]["per_source_ms"] / m for key in
                                            tuple(variants) + ("norename", "loop", "scipy", "cpu")
                                            if isinstance(row.get(key), dict) and "per_source_ms" in row[key]}
                print(f"  many is faster by {row['speedup_many_over']}", flush=True)
            res["runs"].append(row)
            del ref, g
            path_out.write_text(json.dumps(res, indent=1, default=float))
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
