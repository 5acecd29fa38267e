"""Single-source shortest paths with negative weights, and a negative cycle caught.

Run:  mpiexec -n 2 python examples/shortest_paths_with_negative_weights.py

A road-like grid gets weights in [1, 255], shifted by a vertex potential so that many
arcs become negative while no negative cycle appears; Bellman-Ford over the
distributed queue finds the distances. Then a negative cycle is planted, and the
same call raises NegativeCycleError naming it.
"""

from mpi4py import MPI

import distgraph
from distgraph.generators import from_spec

rank = MPI.COMM_WORLD.Get_rank()
g = from_spec("grid:40x40:weights=potential:seed=7")
res = distgraph.bellman_ford(g, 0)
if rank == 0:
    neg = int((g.weights < 0).sum())
    print(f"{g!r}: {neg} negative arcs; farthest vertex at distance {res.distance.max()}")

bad = from_spec("grid:40x40:weights=negcycle:seed=7")
try:
    distgraph.bellman_ford(bad, 0)
except distgraph.NegativeCycleError as e:
    if rank == 0:
        print(f"negative cycle found: {len(e.cycle)} vertices, total weight {e.weight}")
