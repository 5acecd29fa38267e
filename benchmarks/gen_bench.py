"""Benchmark: generator speed and peak memory, distgraph against the peers a user would
pick instead, on one core, in the same run.

    python benchmarks/gen_bench.py [--out benchmarks/results/gen_bench.json]
                                   [--cases kron:20,kron:22,kron:24,...] [--no-peers]

Every case runs in a fresh subprocess (one thread: OMP/NUMBA/MKL threads = 1 and
networkit.setNumberOfThreads(1)) so that its peak resident memory (``ru_maxrss`` of the
child) is its own.  Reported per case: wall seconds, CPU seconds of the process (user +
system: on a shared machine wall time includes waiting for the CPU, CPU time does not),
peak RSS in MiB, and the graph's vertices and stored arcs.  Times exclude imports and
numba compilation/loading: a warm-up case (kron:10) fills numba's on-disk cache first,
and each distgraph case generates a scale-4 graph of its family before the timed one.

Peers, same sizes, same run:
* Kronecker: ``networkit.generators.RmatGenerator(scale, 16, 0.57, 0.19, 0.19, 0.05)``;
* urand: ``igraph.Graph.Erdos_Renyi(n, m=16 n)`` (G(n, m), as GAP's urand);
* rgg: ``igraph.Graph.GRG(n, r)`` with the same radius ``0.55 sqrt(ln n / n)``.
Ratios are peer time / distgraph time (> 1: distgraph faster).  Results go to a JSON
file with commit, machine, load average and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from _common import commit, sh as _sh

DEFAULT_CASES = ["kron:20", "kron:22", "kron:24", "urand:20", "urand:22", "rgg:20", "grid:20", "delaunay:18",
                 "kron:20:weights=uniform"]
PEERS = {"kron:20": ["networkit-rmat:20"], "kron:22": ["networkit-rmat:22"], "urand:20": ["igraph-gnm:20"],
         "urand:22": ["igraph-gnm:22"], "rgg:20": ["igraph-grg:20"]}



def one(case: str) -> dict:
    """Run one case in this process and return its measurements."""
    import math

    name, _, arg = case.partition(":")
    if name == "networkit-rmat":
        import networkit as nk

        nk.setNumberOfThreads(1)
    elif name.startswith("igraph"):
        import igraph as ig
    else:
        from distgraph.generators import from_spec

        parts = case.split(":")
        from_spec(":".join([parts[0], "4x4" if parts[0] == "grid" else "4"] + parts[2:]))  # loads numba code
    t0, c0 = time.perf_counter(), time.process_time()  # imports above are not timed
    if name == "networkit-rmat":
        g = nk.generators.RmatGenerator(int(arg), 16, 0.57, 0.19, 0.19, 0.05).generate()
        n, arcs = g.numberOfNodes(), 2 * g.numberOfEdges()
    elif name == "igraph-gnm":
        n = 1 << int(arg)
        g = ig.Graph.Erdos_Renyi(n=n, m=16 * n)
        arcs = 2 * g.ecount()
    elif name == "igraph-grg":
        n = 1 << int(arg)
        g = ig.Graph.GRG(n, 0.55 * math.sqrt(math.log(n) / n))
        arcs = 2 * g.ecount()
    else:
        g = from_spec(case)
        n, arcs = g.n, g.m
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"case": case, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "n": int(n), "arcs": int(arcs)}


def run_case(case: str, timeout: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    code = ("import json, resource, sys; sys.path.insert(0, %r); from gen_bench import one; r = one(%r); "
            "r['peak_rss_mib'] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1); "
            "print('RESULT ' + json.dumps(r))") % (str(ROOT / "benchmarks"), case)
    load = os.getloadavg()[0]
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"case": case, "error": f"timed out after {timeout} s"}
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"case": case, "error": (p.stderr or p.stdout).strip()[-500:]}
    r = json.loads(line[len("RESULT "):])
    r["loadavg_1min_before"] = round(load, 2)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gen_bench.json"))
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    env = {"commit": commit(), "dirty": bool(_sh("git status --porcelain -- distgraph/generators")),
           "machine": {"cpu": _cpu_model(), "cores": os.cpu_count(), "mem_gib": _mem_gib(),
                       "python": platform.python_version(), "platform": platform.platform()},
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "versions": _versions(), "threads": 1, "results": [], "ratios": {}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    run_case("kron:10", args.timeout)  # fills the numba cache
    for case in cases:
        todo = [case] + ([] if args.no_peers else PEERS.get(case, []))
        for c in todo:
            r = run_case(c, args.timeout)
            env["results"].append(r)
            sys.stdout.write(json.dumps(r) + "\n")
            sys.stdout.flush()
            mine = next(x for x in env["results"] if x["case"] == case)
            if c != case and "cpu_s" in r and "cpu_s" in mine:
                env["ratios"][f"{c} / {case}"] = {"cpu": round(r["cpu_s"] / mine["cpu_s"], 2),
                                                  "wall": round(r["wall_s"] / mine["wall_s"], 2),
                                                  "peak_rss": round(r["peak_rss_mib"] / mine["peak_rss_mib"], 2)}
            out.write_text(json.dumps(env, indent=1) + "\n")
    env["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    out.write_text(json.dumps(env, indent=1) + "\n")
    return 0


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _mem_gib():
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        return None


def _versions():
    v = {}
    for mod in ("numpy", "scipy", "numba", "networkit", "igraph"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:
            v[mod] = None
    return v


if __name__ == "__main__":
    sys.exit(main())
