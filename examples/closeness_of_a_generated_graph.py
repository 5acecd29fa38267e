"""Exact closeness centrality of a generated Kronecker graph, on any number of ranks.

Run:  mpiexec -n 2 python examples/closeness_of_a_generated_graph.py [SCALE]

Every rank generates the same graph (deterministic for the seed), the sources are
split over the ranks in batches, and the partial sums are reduced with MPI; rank 0
prints the five most central vertices. The values equal networkx.closeness_centrality.
"""

import sys

import numpy as np
from mpi4py import MPI

import distgraph
from distgraph.generators import from_spec

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 10
g = from_spec(f"kron:{scale}:seed=1")
res = distgraph.closeness(g)  # convention="networkx" by default
if MPI.COMM_WORLD.Get_rank() == 0:
    top = np.argsort(-res.closeness, kind="stable")[:5]
    print(f"{g!r} on {MPI.COMM_WORLD.Get_size()} rank(s)")
    for v in top:
        print(f"vertex {v:6d}  closeness {res.closeness[v]:.6f}  reach {res.reach[v]}")
