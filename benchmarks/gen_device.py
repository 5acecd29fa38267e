"""Benchmark: Kronecker and urand generation with the CSR built on the host or on the GPU.

    python benchmarks/gen_device.py OUTDIR [--scales 24,26] [--families kron,urand]
                                           [--cpu-max-scale 24] [--check-max-scale 24] [--budget 140]
                                           [--builders gpu,cpu] [--cases kron:24:gpu,kron:24:cpu,...]

For every family and scale: ``gpu`` (``build_csr(..., device="gpu")``: the chunks go to
the device, one sort of 64-bit keys there, distgraph/generators/_csr_device.py) and, up to
``--cpu-max-scale``, ``cpu`` (the host's counting sort, what ``kronecker()`` and ``urand()``
do by default); every case of a builder before those of the next.  Each case runs in a
fresh process (its peak RSS is its own) after a scale-12 warm-up of the same builder (numba's cache, CuPy's kernel compilation), with
numba's default thread count (all cores).  Reported: wall seconds of the generator call
(edge generation, which overlaps the GPU path's copies, plus the build), CPU seconds, peak
RSS, the graph's size, for ``gpu`` the builder's phases (``fill_s``: waiting for the
generator and copying its chunks; ``count_s``, ``keys_s``, ``sort_s``, ``dedup_s``: the
device work and the copy of ``indices`` to the host), its groups and planned device bytes;
up to ``--check-max-scale`` a SHA-256 of ``indptr``/``indices`` (timed apart), and
``equal`` when both builders ran (``numpy``, the key sort run on the host with numpy, checks
the script without a GPU).  A case gets at most what is left of ``--budget`` seconds;
one that does not finish is recorded with its error.  ``--cases`` lists
``family:scale:builder`` in the order to run them instead (the other case options are
then ignored, but for ``--check-max-scale``).  Results: OUTDIR/gen_device.json
(commit, device, date, host), rewritten after each case.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import commit, sh  # noqa: E402


def one(family: str, scale: int, builder: str, check: bool) -> dict:
    """Run one case in this process (after a warm-up) and return its measurements."""
    import numba
    import numpy as np

    from distgraph.generators import kronecker_edges, urand_edges
    from distgraph.generators._csr import build_csr
    from distgraph.generators._csr_device import build_csr_keysort

    edges = {"kron": kronecker_edges, "urand": urand_edges}[family]

    def gen(s, info=None):
        n = 1 << s
        # the arguments kronecker() and urand() pass (undirected, self-loops dropped)
        if builder in ("gpu", "numpy"):
            return build_csr_keysort(edges(s), n, 16 * n, directed=False, drop_self_loops=True, info=info,
                                     xp=np if builder == "numpy" else None)
        return build_csr(edges(s), n, 16 * n, directed=False, drop_self_loops=True, device="cpu")

    gen(12)  # warm-up
    info = {}
    t0, c0 = time.perf_counter(), time.process_time()
    g = gen(scale, info)
    out = {"family": family, "scale": scale, "builder": builder, "wall_s": round(time.perf_counter() - t0, 3),
           "cpu_s": round(time.process_time() - c0, 3), "n": int(g.n), "arcs": int(g.m),
           "numba_threads": numba.get_num_threads()}
    if info:
        out["phases"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in info.items()}
    if check:
        t = time.perf_counter()
        h = hashlib.sha256()
        for a in (g.indptr, g.indices):
            h.update(str(a.dtype).encode())
            h.update(np.ascontiguousarray(a).data)
        out["sha256"] = h.hexdigest()
        out["hash_s"] = round(time.perf_counter() - t, 3)
    return out


def run_case(family, scale, builder, check, timeout):
    code = ("import json, resource, sys; sys.path.insert(0, %r); from gen_device import one; "
            "r = one(%r, %d, %r, %r); "
            "r['peak_rss_mib'] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1); "
            "print('RESULT ' + json.dumps(r))") % (str(ROOT / "benchmarks"), family, scale, builder, check)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    base = {"family": family, "scale": scale, "builder": builder}
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=ROOT)
    except subprocess.TimeoutExpired:
        return dict(base, error=f"not finished in {timeout:.0f} s (what was left of the budget)")
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return dict(base, error=(p.stderr or p.stdout).strip()[-800:], process_s=round(time.perf_counter() - t0, 1))
    r = json.loads(line[len("RESULT "):])
    r["process_s"] = round(time.perf_counter() - t0, 1)  # with imports and the warm-up
    return r


def _device():
    return sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--scales", default="24,26")
    ap.add_argument("--families", default="kron,urand")
    ap.add_argument("--cpu-max-scale", type=int, default=24, help="the host builder only up to this scale")
    ap.add_argument("--check-max-scale", type=int, default=24, help="hash the CSR up to this scale")
    ap.add_argument("--builders", default="gpu,cpu", help="gpu, cpu, numpy (the key sort on the host)")
    ap.add_argument("--cases", default=None, help="family:scale:builder,... in this order (default: from the above)")
    ap.add_argument("--budget", type=float, default=140.0, help="seconds for all cases")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import cupy

        cupy_version = cupy.__version__
    except ImportError:
        cupy_version = None
    env = {"commit": commit(), "device": _device(), "cupy": cupy_version,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "budget_s": args.budget, "results": [], "equal": {}}
    path = out / "gen_device.json"
    scales = [int(s) for s in args.scales.split(",") if s]
    families = [f for f in args.families.split(",") if f]
    builders = [b for b in args.builders.split(",") if b]
    # every case of the first builder before the next (the host builder last: its numbers at
    # scale 24 are known, the budget may cut it)
    cases = [(f, s, b) for b in builders for s in scales for f in families if b != "cpu" or s <= args.cpu_max_scale]
    if args.cases:
        cases = [(f, int(s), b) for f, s, b in (c.split(":") for c in args.cases.split(",") if c)]
    hashes = {}
    for family, scale, builder in cases:
        left = args.budget - (time.perf_counter() - t_start)
        if left < 5:
            r = {"family": family, "scale": scale, "builder": builder, "error": "budget spent"}
        else:
            r = run_case(family, scale, builder, scale <= args.check_max_scale, left)
        env["results"].append(r)
        print(json.dumps(r), flush=True)
        if r.get("sha256"):
            hashes.setdefault(f"{family}:{scale}", set()).add(r["sha256"])
            got = [x for x in env["results"] if (x["family"], x["scale"]) == (family, scale) and x.get("sha256")]
            if len(got) >= 2:
                env["equal"][f"{family}:{scale}"] = len(hashes[f"{family}:{scale}"]) == 1
        env["total_s"] = round(time.perf_counter() - t_start, 1)
        path.write_text(json.dumps(env, indent=1))
    print(f"wrote {path}")
    return 0 if all(env["equal"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
