"""Benchmark: reading graph files, distgraph against the readers a user would pick instead,
on one core, in the same run.

    python benchmarks/read_bench.py [--out benchmarks/results/read_bench.json] [--lines 10000000]
                                    [--tmp /tmp/distgraph-read-bench] [--trials 3] [--no-peers] [--big 10]

Inputs (made in ``--tmp``, never committed):
* ``road-FLA.gr.xz`` of shared/data (DIMACS ``p tw``, 1.34 M edges) as it is, and
  decompressed to ``road-FLA.gr``;
* ``snap.txt``: a synthetic SNAP edge list of ``--lines`` lines ``u<TAB>v`` (uniform ids
  in ``[0, 2**22)``, seed 1; no ``#`` header, which igraph cannot skip);
* ``snap.mtx``: the same arcs as Matrix Market ``coordinate pattern general``;
* ``road-FLA.dgraph``: road-FLA in the binary format, loaded with ``verify=True`` (every
  byte read and hashed; without it a load only maps the file).

Every case runs in a fresh subprocess with one thread (OMP/NUMBA/MKL threads = 1,
``networkit.setNumberOfThreads(1)``) and reports wall seconds (best of ``--trials`` reads
in that process, after one warm-up read of a tiny file so that numba's cache is loaded),
CPU seconds of that trial (the trial of least CPU time is kept: on a shared machine wall
time includes waiting for a core, CPU time does not), peak RSS, and for distgraph the phases: ``decompress`` (file to bytes),
``parse`` (bytes to id/weight arrays: the numba kernel, with header and checks) and
``build`` (CSR: sort, dedup). Throughput is given for the parse phase and end to end,
in MB and lines of decompressed text per CPU second.

Peers, same files, same run: networkit ``EdgeListReader`` (SNAP, and the ``.gr`` body with
``p`` as comment prefix), igraph ``Graph.Read_Edgelist`` (SNAP, 0-based), scipy
``io.mmread`` (``.mtx``; fast_matrix_market), as COO (``scipy:mtx``) and converted to a
canonical CSR (``scipy:mtx_csr``, sorted and deduplicated, as distgraph's). Ratios are peer time / distgraph time
(> 1: distgraph faster) for reading into each library's own graph type.

``--big K`` adds the parse phase alone on the SNAP file repeated K times (``--big 10``:
100 M lines, 1.5 GB of text, about 5 GB of memory), the issue's "100-million-line file".
"""

from __future__ import annotations

import argparse
import datetime
import json
import lzma
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from _common import commit, sh as _sh
DATA = Path(os.environ.get("DISTGRAPH_DATA", ROOT.parent / "shared" / "data"))



def make_inputs(tmp: Path, lines: int) -> dict:
    """Write the benchmark inputs (once; reused when present with the right size)."""
    import numpy as np

    from distgraph.graph.writers import _lines

    tmp.mkdir(parents=True, exist_ok=True)
    fla_xz = DATA / "road-FLA.gr.xz"
    fla = tmp / "road-FLA.gr"
    if not fla.exists():
        fla.write_bytes(lzma.decompress(fla_xz.read_bytes()))
    dg = tmp / "road-FLA.dgraph"
    if not dg.exists():
        from distgraph.formats import binary
        from distgraph.graph.readers import read_graph

        binary.save(read_graph(fla_xz), dg)
    snap = tmp / f"snap-{lines}.txt"
    mtx = tmp / f"snap-{lines}.mtx"
    if not snap.exists() or not mtx.exists():
        rng = np.random.default_rng(1)
        u = rng.integers(0, 1 << 22, lines)
        v = rng.integers(0, 1 << 22, lines)
        with open(snap, "wb") as f:  # no '#' header: igraph's reader takes none
            for block in _lines(u, v, None, sep=b"\t"):
                f.write(block)
        with open(mtx, "wb") as f:
            f.write(f"%%MatrixMarket matrix coordinate pattern general\n{1 << 22} {1 << 22} {lines}\n".encode())
            for block in _lines(u + 1, v + 1, None, sep=b" "):
                f.write(block)
    return {"fla_xz": str(fla_xz), "fla": str(fla), "fla_dgraph": str(dg), "snap": str(snap), "mtx": str(mtx)}


def _distgraph_read(path, fmt, **opts):
    """read_graph, phase by phase (the same calls read_graph makes)."""
    from distgraph.graph import readers as R

    t0 = _now()
    src = R._Source(path)
    nbytes = int(src.b.size)
    if not isinstance(src.data, (bytes, bytearray)):
        src.b = src.b.copy()  # read an uncompressed file from disk now, not during parse
        src.b.flags.writeable = False  # the kernel's (cached) signature takes read-only bytes
    t1 = _now()
    if fmt == "mtx":
        e = R._parse_mtx(src, None, True)
    elif fmt == "dimacs":
        e = R._parse_dimacs(src, None, True)
    else:
        e = R._parse_edgelist(src, fmt, None, True, opts.get("relabel"))
    t2 = _now()
    full = dict(directed=opts.get("directed"), symmetrize=False, drop_self_loops=False, dedup=True, base=None,
                weighted=True, relabel=opts.get("relabel"))
    g = R._build(src, fmt, e, full)
    t3 = _now()
    ph = {}
    for k, (a, b) in {"decompress": (t0, t1), "parse": (t1, t2), "build": (t2, t3)}.items():
        ph[k] = b[0] - a[0]
        ph[k + "_cpu"] = b[1] - a[1]
    return g, {**ph, "bytes": nbytes, "records": int(e.src.size)}


def _now():
    return time.perf_counter(), time.process_time()


def parse_only(path: str) -> dict:
    """Parse phase alone (file to id arrays, no CSR) of a big SNAP file, in this process."""
    from distgraph.graph import readers as R

    R.read_graph(DATA / "minnesota.mtx.gz")  # numba's cache
    t0, c0 = _now()
    src = R._Source(path)
    b = src.b.copy()  # from disk now
    b.flags.writeable = False
    src.b = b
    t1, c1 = _now()
    s = R._scan(src, 0, 1, comments=b"#%", wcol=2)[0]
    t2, c2 = _now()
    return {"case": "distgraph:parse_only", "file": path, "text_bytes": int(b.size), "lines": int(s.size),
            "read_file_s": t1 - t0, "parse_s": t2 - t1, "parse_cpu_s": c2 - c1,
            "parse_MB_per_cpu_s": b.size / (c2 - c1) / 1e6, "parse_lines_per_cpu_s": s.size / (c2 - c1),
            "parse_lines_per_wall_s": s.size / (t2 - t1),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def one(case: str, path: str, trials: int) -> dict:
    """Run one case in this process."""
    tool, _, what = case.partition(":")
    res = {"case": case, "file": path, "file_bytes": os.path.getsize(path)}
    if tool == "distgraph":
        import tempfile

        from distgraph.graph.readers import read_graph

        with tempfile.NamedTemporaryFile("w", suffix=".gr", delete=False) as f:  # warm numba's cache
            f.write("p sp 2 1\na 1 2 0.5\n")
        read_graph(f.name)
        os.unlink(f.name)
    best = None
    c0 = time.process_time()
    for _ in range(trials):
        t0, tc0 = _now()
        phases = None
        if case == "distgraph:fla_dgraph":
            from distgraph.formats import binary

            g = binary.load(path, verify=True)  # reads and hashes every byte
            n, m = g.n, g.m
        elif tool == "distgraph":
            fmt = {"fla": "dimacs", "fla_xz": "dimacs", "snap": "snap", "mtx": "mtx"}[what]
            g, phases = _distgraph_read(path, fmt, relabel=False if what == "snap" else None)
            n, m = g.n, g.m
        elif tool == "networkit":
            import networkit as nk

            nk.setNumberOfThreads(1)
            if what.startswith("fla"):
                g = nk.graphio.EdgeListReader(" ", 1, "p", True, False).read(path)
            else:
                g = nk.graphio.EdgeListReader("\t", 0, "#", True, True).read(path)
            n, m = g.numberOfNodes(), g.numberOfEdges()
        elif tool == "igraph":
            import igraph

            g = igraph.Graph.Read_Edgelist(path, directed=True)
            n, m = g.vcount(), g.ecount()
        elif tool == "scipy":
            import scipy.io

            g = scipy.io.mmread(path)  # COO, as in the file
            if what == "mtx_csr":
                g = g.tocsr()  # sorted, duplicates summed: what distgraph's build gives
            n, m = g.shape[0], g.nnz
        else:
            raise SystemExit(f"unknown case {case}")
        dt, dc = time.perf_counter() - t0, time.process_time() - tc0
        if best is None or dc < best["cpu_s"]:
            best = {"wall_s": dt, "cpu_s": dc, "vertices": int(n), "arcs_or_edges": int(m)}
            if phases:
                best["phases_s"] = {k: v for k, v in phases.items() if k not in ("bytes", "records")}
                best["text_bytes"], best["lines"] = phases["bytes"], phases["records"]
        del g
    res.update(best)
    res["cpu_s_all_trials"] = time.process_time() - c0
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if "phases_s" in res:
        p = res["phases_s"]
        res["parse_MB_per_cpu_s"] = res["text_bytes"] / p["parse_cpu"] / 1e6
        res["parse_lines_per_cpu_s"] = res["lines"] / p["parse_cpu"]
        res["end_to_end_MB_per_cpu_s"] = res["text_bytes"] / res["cpu_s"] / 1e6
        res["end_to_end_lines_per_cpu_s"] = res["lines"] / res["cpu_s"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "read_bench.json"))
    ap.add_argument("--tmp", default="/tmp/distgraph-read-bench")
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--one", nargs=3, metavar=("CASE", "PATH", "TRIALS"), help=argparse.SUPPRESS)
    ap.add_argument("--make", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--big", type=int, default=0, metavar="K",
                    help="also time the parse phase alone on the SNAP file repeated K times (K * --lines lines)")
    ap.add_argument("--parse-only", metavar="PATH", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], a.one[1], int(a.one[2]))))
        return
    if a.parse_only:
        print(json.dumps(parse_only(a.parse_only)))
        return
    if a.make:
        print(json.dumps(make_inputs(Path(a.tmp), a.lines)))
        return
    load0 = os.getloadavg()
    # in a child, so that this process stays small: Linux children inherit the peak RSS of their parent
    files = json.loads(subprocess.run([sys.executable, __file__, "--make", "--tmp", a.tmp, "--lines", str(a.lines)],
                                      capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    cases = [("distgraph:fla_xz", "fla_xz"), ("distgraph:fla", "fla"), ("distgraph:fla_dgraph", "fla_dgraph"),
             ("distgraph:snap", "snap"),
             ("distgraph:mtx", "mtx")]
    if not a.no_peers:
        cases += [("networkit:fla", "fla"), ("networkit:snap", "snap"), ("igraph:snap", "snap"), ("scipy:mtx", "mtx"),
                  ("scipy:mtx_csr", "mtx")]
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    results = []
    for case, key in cases:
        r = subprocess.run([sys.executable, __file__, "--one", case, files[key], str(a.trials)], capture_output=True,
                           text=True, env=env)
        if r.returncode != 0:
            results.append({"case": case, "error": r.stderr.strip().splitlines()[-1:]})
        else:
            results.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if a.big:
        big = Path(a.tmp) / f"snap-{a.big}x{a.lines}.txt"
        with open(big, "wb") as f:
            for _ in range(a.big):
                with open(files["snap"], "rb") as g:
                    while chunk := g.read(1 << 26):
                        f.write(chunk)
        r = subprocess.run([sys.executable, __file__, "--parse-only", str(big)], capture_output=True, text=True, env=env)
        big.unlink()
        results.append(json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else
                       {"case": "distgraph:parse_only", "error": r.stderr.strip().splitlines()[-1:]})
        print(json.dumps(results[-1]), flush=True)
    by = {r["case"]: r for r in results if "wall_s" in r}
    ratios = {}
    for peer, ours in (("networkit:fla", "distgraph:fla"), ("networkit:snap", "distgraph:snap"),
                       ("igraph:snap", "distgraph:snap"), ("scipy:mtx", "distgraph:mtx"),
                       ("scipy:mtx_csr", "distgraph:mtx")):
        if peer in by and ours in by:
            ratios[f"{peer} / {ours}"] = {"cpu": by[peer]["cpu_s"] / by[ours]["cpu_s"],
                                           "wall": by[peer]["wall_s"] / by[ours]["wall_s"]}
    out = {"benchmark": "read_bench", "commit": commit(),
           "dirty": bool(_sh("git status --porcelain -- distgraph/graph distgraph/formats/binary.py benchmarks/read_bench.py")),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": {"cpu": _sh("lscpu | grep 'Model name' | sed 's/.*: *//'"), "cores": os.cpu_count(),
                       "platform": platform.platform(), "python": platform.python_version(),
                       "loadavg_before": load0, "loadavg_after": os.getloadavg()},
           "threads": 1, "trials": a.trials, "lines": a.lines, "results": results, "ratios_peer_over_distgraph": ratios}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(ratios, indent=1))


if __name__ == "__main__":
    main()
