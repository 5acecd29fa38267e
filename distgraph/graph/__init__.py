"""Graphs: the CSR/CSC :class:`Graph`, readers for the files users hold, partitioning."""

from .core import Graph, index_dtype, WEIGHT_DTYPES
from .partition import Partition, partition_by_edges, partition_even, LocalGraph, local_graph

__all__ = ["Graph", "index_dtype", "WEIGHT_DTYPES", "Partition", "partition_by_edges",
           "partition_even", "LocalGraph", "local_graph", "read_graph"]


def read_graph(path, **options):
    """Read a graph file of any supported format (see :mod:`distgraph.graph.readers`)."""
    from .readers import read_graph as _read

    return _read(path, **options)
