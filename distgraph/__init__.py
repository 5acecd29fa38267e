"""distgraph: graph analytics on many GPUs (and CPUs), SPMD over MPI.

How a graph is represented
--------------------------
A :class:`~distgraph.graph.Graph` is a CSR of out-arcs (``indptr`` int64,
``indices`` int32 when ids fit, else int64) with optional weights and, built on
demand, the CSC of in-arcs. Undirected graphs store each edge as two arcs.

How it is distributed
---------------------
Every MPI rank runs the same program (SPMD). Each rank owns a contiguous block of
vertices balanced by arc count (:mod:`distgraph.graph.partition`) and, on GPUs, one
device and one segment of the PGAS queue. Algorithms take the whole graph (every rank
may hold it, memory-mapped from the binary format) and return results in the
caller's vertex ids on every rank, identical for 1, 2 or 4 ranks and either backend.
"""

__version__ = "0.1.0"

from .errors import (DistgraphError, GraphFormatError, GraphValueError, InvalidArgumentError,
                     NegativeCycleError, DeviceMemoryError, BackendUnavailableError, CheckpointError,
                     VerificationError)
from .graph import Graph, read_graph

__all__ = ["__version__", "Graph", "read_graph", "DistgraphError", "GraphFormatError",
           "GraphValueError", "InvalidArgumentError", "NegativeCycleError", "DeviceMemoryError",
           "BackendUnavailableError", "CheckpointError", "VerificationError"]


def __getattr__(name):
    # Algorithms are imported lazily so that `import distgraph` stays cheap and the
    # CPU path never touches CuPy.
    import importlib

    lazy = {"bfs": "algorithms.bfs", "msbfs": "algorithms.msbfs", "closeness": "algorithms.closeness",
            "bellman_ford": "algorithms.bellman_ford", "spmv": "algorithms.spmv",
            "pagerank": "algorithms.pagerank", "semiring": "semiring", "generators": "generators"}
    if name in lazy:
        mod = importlib.import_module(f".{lazy[name]}", __name__)
        return getattr(mod, name, mod)
    raise AttributeError(f"module 'distgraph' has no attribute {name!r}")
