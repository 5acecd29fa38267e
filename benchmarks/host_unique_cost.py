"""What numpy's ``np.unique`` costs on closeness()'s host set-up of road-NY, against the sort and
the count that replaced it (host only, no GPU): the pull kernel's slice-set graph keys
(``msbfs.set_graph``: one int64 per arc) and the duplicate-source check of every vertex
(``msbfs.repeats``). Best of 3 each, on this machine's numpy.

    DISTGRAPH_DATA=../shared/data python benchmarks/host_unique_cost.py road-NY.gr.xz \\
        --out benchmarks/results/host_unique_cost.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, commit, dirty  # noqa: E402


def _best(f, reps=3):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    from distgraph.algorithms.msbfs import repeats
    from distgraph.backends.gpu.msbfs import SIGMA
    from distgraph.graph.readers import read_graph

    g = read_graph(os.path.join(os.environ.get("DISTGRAPH_DATA") or str(ROOT.parent / "shared" / "data"), a.graph))
    n = g.n
    rho = (n + SIGMA - 1) // SIGMA
    heads = np.repeat(np.arange(n, dtype=np.int64) // SIGMA, np.diff(g.indptr))
    key = (np.asarray(g.indices, np.int64) // SIGMA) * rho + heads

    def sort_unique():
        k = np.sort(key)
        return k[np.r_[True, k[1:] != k[:-1]]]

    assert np.array_equal(sort_unique(), np.unique(key))
    src = np.arange(n, dtype=np.int64)
    rows = {"set_graph_keys": {"entries": int(key.size), "np_unique_s": _best(lambda: np.unique(key)),
                               "sort_s": _best(sort_unique)},
            "duplicate_sources": {"entries": n, "np_unique_s": _best(lambda: np.unique(src)),
                                  "count_s": _best(lambda: repeats(src, n))}}
    res = {"benchmark": "host_unique_cost", "graph": a.graph, "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "numpy": np.__version__, "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "note": __doc__.split("\n\n")[0], "rows": rows}
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
