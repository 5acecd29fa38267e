"""Share of a graph's arcs whose two ends are owned by different ranks under the vertex blocks
of :func:`distgraph.graph.partition.partition_by_edges` (the blocks the NVSHMEM Bellman-Ford
and the MPI-RMA queue give each PE): every such arc relaxed is a remote update. Host only.

    python benchmarks/partition_cut.py [--graphs road-FLA.gr.xz,road-NY.gr.xz,kron:18,kron:20]
        [--parts 2,4] [--out benchmarks/results/partition_cut.json]
"""
import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import commit, dirty  # noqa: E402


def cut_share(indptr, indices, parts: int) -> float:
    """Arcs (u, v) with owner(u) != owner(v) over all arcs."""
    from distgraph.graph.partition import partition_by_edges

    ip = np.asarray(indptr, np.int64)
    if ip[-1] == 0:
        return 0.0
    part = partition_by_edges(ip, parts)
    tails = np.repeat(np.arange(ip.size - 1), np.diff(ip))
    return float((part.owner(tails) != part.owner(np.asarray(indices))).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="road-FLA.gr.xz,road-NY.gr.xz,kron:18,kron:20")
    ap.add_argument("--parts", default="2,4")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "partition_cut.json"))
    a = ap.parse_args(argv)
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    data = os.environ.get("DISTGRAPH_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    res = {"benchmark": "partition_cut", "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "note": __doc__.split("\n\n")[0], "rows": []}
    for name in a.graphs.split(","):
        g = from_spec(name) if is_spec(name) else read_graph(os.path.join(data, name))
        row = {"graph": name, "n": int(g.n), "arcs": int(g.indptr[-1]),
               "cut_share": {p: round(cut_share(g.indptr, g.indices, int(p)), 4) for p in a.parts.split(",")}}
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
