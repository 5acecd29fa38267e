"""Graph generators: the families of the GAP and BLEST benchmark tables.

* :func:`kronecker` -- R-MAT with the Graph500/GAP parameters (A=0.57, B=0.19, C=0.19,
  edge factor 16, ids permuted), undirected by default;
* :func:`urand` -- uniform random (GAP ``urand``);
* :func:`grid` -- 2-D 4-neighbour grid, optionally road-like (a fraction of edges removed);
* :func:`rgg` -- random geometric graph (like DIMACS-10 ``rgg_n_2_k``);
* :func:`delaunay` -- Delaunay triangulation of random points (like ``delaunay_nk``);
* weights: :func:`uniform_weights` (integers in [1, 255], as GAP),
  :func:`potential_shift` (negative weights, no negative cycle),
  :func:`plant_negative_cycle`.

Determinism: the same arguments give bit-identical graphs in any process and on any
number of MPI ranks.  Randomness comes only from ``numpy.random.PCG64`` seeded with
``SeedSequence([seed, stream])`` (a fixed stream per chunk of edges or per purpose) and
from a splitmix64 hash (weights), never from global state or the rank.  Every rank that
calls a generator builds the whole graph; take a rank's part with
:func:`distgraph.graph.local_graph`.

Specs (``kron:20``, ``urand:18:seed=3``, ``grid:100x200``, ``rgg:16``,
``delaunay:16:weights=uniform``) stand for a generated graph wherever the CLI takes a
file: :func:`is_spec`, :func:`from_spec`, grammar in :mod:`distgraph.generators.spec`.
"""

from .delaunay import delaunay
from .grid import grid, grid_shape
from .kron import DEFAULT_SEED, kronecker, kronecker_edges
from .rgg import rgg, rgg_radius
from .spec import FAMILIES, describe_families, from_spec, is_spec, parse_spec
from .urand import urand, urand_edges
from .weights import plant_negative_cycle, potential_shift, uniform_weights

__all__ = ["kronecker", "kronecker_edges", "urand", "urand_edges", "grid", "grid_shape", "rgg", "rgg_radius",
           "delaunay", "uniform_weights", "potential_shift", "plant_negative_cycle", "is_spec", "from_spec",
           "parse_spec", "describe_families", "FAMILIES", "DEFAULT_SEED"]
