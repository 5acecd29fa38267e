"""Size of the k2-tree of each graph under several vertex orders, on the host (no GPU):
the input order, the full degree order and degree_order(g, head=F) for each F (only the
fraction F of the vertices of largest degree moved to the front), against the FP32 CSR of
cuSPARSE (int32 row pointers and column indices, float32 values) as gpu_k2tree_bench.py
counts it. The question it answers: how much of the degree order's compression does a
small corner of hubs keep (full degree order slows the GPU's right products down:
benchmarks/results/session8_x2/README.md).

    python benchmarks/k2tree_order_sizes.py --graphs kron:18 kron:20 --heads 0.001 0.01 0.1 \\
        --out benchmarks/results/k2tree_head_order_sizes.json
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import commit, dirty  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", nargs="+", default=["kron:18", "kron:20"])
    ap.add_argument("--heads", nargs="+", type=float, default=[0.001, 0.003, 0.01, 0.03, 0.1])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    from distgraph.formats.k2tree import K2Tree
    from distgraph.formats.reorder import degree_order, permute_graph
    from distgraph.generators import from_spec

    res = {"benchmark": "k2tree_order_sizes", "commit": commit(), "dirty": dirty(), "host": platform.node(),
           "cpus": os.cpu_count(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "csr_fp32": "4 (n + 1) + 8 m bytes", "rows": []}
    for spec in a.graphs:
        g = from_spec(spec)
        csr = 4 * (g.n + 1) + 8 * g.m
        orders = [("none", None), ("degree", degree_order(g))] + [(f"head{h:g}", degree_order(g, head=h))
                                                                  for h in a.heads]
        for name, new_id in orders:
            gg = g if new_id is None else permute_graph(g, new_id)
            t0 = time.perf_counter()
            t = K2Tree.from_graph(gg)
            row = {"graph": spec, "order": name, "vertices": g.n, "arcs": g.m, "bits_per_edge": t.bits_per_edge(),
                   "tree_bytes": int(t.nbytes()["tree"]), "csr_fp32_bytes": csr,
                   "ratio_csr_fp32_over_tree": csr / t.nbytes()["tree"], "build_s": time.perf_counter() - t0}
            res["rows"].append(row)
            print(json.dumps(row), flush=True)
            del gg, t
        Path(a.out).write_text(json.dumps(res, indent=1))  # after each graph: a cut run keeps them


if __name__ == "__main__":
    main()
