"""Direction-optimizing BFS from one source of a graph file, levels checked.

Run:  mpiexec -n 2 python examples/bfs_from_a_file.py [FILE] [SOURCE]
(default: ../shared/data/minnesota.mtx.gz, source 0)

Any reader format works (.mtx, SNAP .txt, .csv, DIMACS .gr, compressed or not, or
a .dgraph made by `distgraph convert`). The levels come back on every rank in the
file's vertex order; -1 marks vertices the source does not reach.
"""

import os
import sys

import numpy as np
from mpi4py import MPI

import distgraph

here = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "data", "minnesota.mtx.gz")
source = int(sys.argv[2]) if len(sys.argv) > 2 else 0
g = distgraph.read_graph(path)
res = distgraph.bfs(g, source, verify=True)
if MPI.COMM_WORLD.Get_rank() == 0:
    lv = res.levels
    print(f"{os.path.basename(path)}: {g!r}")
    print(f"reached {int((lv >= 0).sum())} of {g.n} vertices in {int(lv.max()) + 1} levels; "
          f"level sizes {np.bincount(lv[lv >= 0]).tolist()[:10]}...")
