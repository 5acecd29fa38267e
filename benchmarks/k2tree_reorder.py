"""k2-tree size under vertex reorderings, on the CPU (the tree's size needs no GPU).

    python benchmarks/k2tree_reorder.py [--graphs kron:18 kron:20 ...] [--methods none degree rcm bfs jaccard]
                                        [--jaccard-max-arcs 4e7] [--outdir benchmarks/results]

For each graph and ordering: bits per edge of the bare tree (4 bits per node), its
bytes, and the ratio of a cuSPARSE-style CSR with FP32 values (int32 row pointers and
column indices) to the tree (Tosoni & Mencagli report 2.3-27x); also the ratio when the
permutation (int32, ``4 n`` bytes: what a reordered tree must keep beside it) is
counted with the tree. Orderings (``new_id`` of :mod:`distgraph.formats.reorder`):

* ``none``     -- the ids as read or generated (Kronecker ids are scrambled by the
  generator, as Graph500/GAP do);
* ``degree``   -- descending degree (:func:`~distgraph.formats.reorder.degree_order`);
* ``rcm``      -- Reverse Cuthill-McKee of the symmetrized pattern (``reorder.rcm``);
* ``bfs``      -- breadth-first order from the highest-degree vertex, then from the
  highest-degree unvisited one (here, not in the library);
* ``jaccard``  -- BLEST's Jaccard with windows (``reorder.jaccard_windows``, windows of
  2**16; graphs up to ``--jaccard-max-arcs`` arcs, it is the slowest);

and, for Kronecker specs, ``generator_order``: the graph generated without the id
permutation (``kron:S:noperm``), a reference (not an ordering one can apply).
``order_s``: seconds to compute the ordering (wall; the first numba call of bfs/jaccard
includes compilation); ``build_s``: the tree's build from the graph with that ordering
(``K2Tree.from_graph(g, reorder=new_id)``: relabelled edge list, Morton sort, passes).
Writes OUTDIR/k2tree_reorder_cpu.json with commit, host and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import commit, sh
sys.path.insert(0, ROOT)
DATA = os.environ.get("DISTGRAPH_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
DEFAULT_GRAPHS = ["email-Enron.mtx.gz", "road-NY.gr.xz", "kron:18", "kron:20", "kron:21"]
METHODS = ("none", "degree", "rcm", "bfs", "jaccard")


def load(spec):
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    return from_spec(spec) if is_spec(spec) else read_graph(os.path.join(DATA, spec))


def _bfs_kernel():
    import numba as nb

    @nb.njit(cache=True)
    def bfs_all(ip, ix, seeds):
        n = ip.shape[0] - 1
        out = np.empty(n, np.int64)
        seen = np.zeros(n, np.bool_)
        k = 0
        h = 0
        for s in seeds:
            if seen[s]:
                continue
            seen[s] = True
            out[k] = s
            k += 1
            while h < k:
                v = out[h]
                h += 1
                for p in range(ip[v], ip[v + 1]):
                    u = ix[p]
                    if not seen[u]:
                        seen[u] = True
                        out[k] = u
                        k += 1
        return out

    return bfs_all


def bfs_order(g):
    """``new_id``: BFS of the symmetrized graph from the highest-degree unvisited vertex."""
    from distgraph.formats.reorder import _symmetric_pattern

    A = _symmetric_pattern(g)
    deg = np.diff(A.indptr)
    order = _bfs_kernel()(A.indptr.astype(np.int64), A.indices.astype(np.int64), np.argsort(-deg, kind="stable"))
    new_id = np.empty(g.n, np.int64)
    new_id[order] = np.arange(g.n, dtype=np.int64)
    return new_id


def ordering(g, method):
    from distgraph.formats import reorder as R

    if method == "none":
        return None
    if method == "degree":
        return R.degree_order(g)
    if method == "rcm":
        return R.rcm(g)
    if method == "bfs":
        return bfs_order(g)
    if method == "jaccard":
        return R.jaccard_windows(g)
    raise ValueError(method)


def measure(g, method, new_id, order_s):
    from distgraph.formats.k2tree import K2Tree, csr_nbytes

    t0 = time.perf_counter()
    tree = K2Tree.from_graph(g) if new_id is None else K2Tree.from_graph(g, reorder=new_id)
    build = time.perf_counter() - t0
    csr = csr_nbytes(g.n, g.m)
    tb = int(tree.sig.nbytes)
    perm_b = 4 * g.n if new_id is not None else 0
    return {"method": method, "bits_per_edge": tree.bits_per_edge(), "k2_nodes": tree.num_nodes,
            "tree_bytes": tb, "perm_bytes_int32": perm_b, "csr_fp32_bytes": csr,
            "ratio_csr_fp32_over_tree": csr / max(tb, 1),
            "ratio_csr_fp32_over_tree_plus_perm": csr / max(tb + perm_b, 1),
            "order_s": order_s, "build_s": build}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", nargs="*", default=DEFAULT_GRAPHS)
    p.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    p.add_argument("--jaccard-max-arcs", type=float, default=4e7)
    p.add_argument("--outdir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--out", default="k2tree_reorder_cpu.json")
    a = p.parse_args(argv)
    import numba

    out = {"benchmark": "k2tree_reorder_cpu", "commit": commit(),
           "dirty": bool(sh(f"git -C {ROOT} status --porcelain 2>/dev/null")),
           "host": platform.node(), "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "numba_threads": numba.get_num_threads(), "load_avg_at_start": list(os.getloadavg()),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "csr": "cuSPARSE-style CSR, FP32 values, int32 indices and row pointers", "graphs": []}
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, a.out)
    for spec in a.graphs:
        t0 = time.perf_counter()
        g = load(spec)
        rec = {"graph": spec, "vertices": g.n, "arcs": g.m, "directed": bool(g.directed),
               "load_s": time.perf_counter() - t0, "orderings": []}
        for method in a.methods:
            if method == "jaccard" and g.m > a.jaccard_max_arcs:
                rec["orderings"].append({"method": method, "skipped": f"more than {a.jaccard_max_arcs:g} arcs"})
                continue
            t0 = time.perf_counter()
            new_id = ordering(g, method)
            r = measure(g, method, new_id, time.perf_counter() - t0)
            rec["orderings"].append(r)
            print(f"{spec:20s} {method:16s} {r['bits_per_edge']:6.2f} bits/edge  csr/tree {r['ratio_csr_fp32_over_tree']:5.2f}"
                  f"  (+perm {r['ratio_csr_fp32_over_tree_plus_perm']:5.2f})  order {r['order_s']:.2f} s"
                  f"  build {r['build_s']:.2f} s", flush=True)
            del new_id
        if spec.startswith("kron:") and "noperm" not in spec:
            del g
            g = load(spec + ":noperm")
            r = measure(g, "generator_order", None, 0.0)
            rec["orderings"].append(r)
            print(f"{spec:20s} {'generator_order':16s} {r['bits_per_edge']:6.2f} bits/edge  "
                  f"csr/tree {r['ratio_csr_fp32_over_tree']:5.2f}", flush=True)
        del g
        out["graphs"].append(rec)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
