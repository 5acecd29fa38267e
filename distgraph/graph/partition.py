"""1-D vertex partitioning shared by every distributed algorithm.

Rank ``r`` of ``p`` owns the contiguous block of vertices ``offsets[r] .. offsets[r+1]-1``
and their out-arcs. Blocks are balanced by *arc* count (plus one per vertex, so that a
graph with no arcs is split evenly), the way Graph500 codes split a CSR: the split
point for rank ``r`` is the first vertex whose prefix of ``indptr[v] + v`` reaches
``r/p`` of the total. Every rank computes the same offsets from the same graph, so no
communication is needed to agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["Partition", "partition_by_edges", "partition_even", "LocalGraph", "local_graph"]


@dataclass(frozen=True)
class Partition:
    """Contiguous vertex blocks: rank ``r`` owns ``[offsets[r], offsets[r+1])``."""

    offsets: np.ndarray  # int64, shape (nparts + 1,)

    @property
    def nparts(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    def range(self, rank: int) -> tuple[int, int]:
        return int(self.offsets[rank]), int(self.offsets[rank + 1])

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def owner(self, v):
        """Rank owning vertex (or array of vertices) ``v``."""
        return np.searchsorted(self.offsets, v, side="right") - 1


def partition_even(n: int, nparts: int) -> Partition:
    """Blocks of ``n // nparts`` or one more vertices."""
    if nparts < 1:
        raise InvalidArgumentError(f"nparts must be >= 1; got {nparts}")
    q, r = divmod(int(n), nparts)
    sizes = np.full(nparts, q, dtype=np.int64)
    sizes[:r] += 1
    return Partition(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))


def partition_by_edges(indptr: np.ndarray, nparts: int) -> Partition:
    """Contiguous blocks with about equal ``arcs + vertices`` each."""
    if nparts < 1:
        raise InvalidArgumentError(f"nparts must be >= 1; got {nparts}")
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    work = indptr + np.arange(n + 1, dtype=np.int64)  # prefix of (arcs + vertices)
    total = int(work[-1])
    targets = (np.arange(1, nparts, dtype=np.int64) * total) // nparts
    cuts = np.searchsorted(work, targets, side="left")
    offsets = np.concatenate([[0], np.minimum(cuts, n), [n]]).astype(np.int64)
    return Partition(np.maximum.accumulate(offsets))


@dataclass
class LocalGraph:
    """The part of a graph one rank owns: out-arcs of ``[lo, hi)`` with global heads."""

    lo: int
    hi: int
    n: int  # global vertex count
    indptr: np.ndarray  # int64 (hi - lo + 1,), starts at 0
    indices: np.ndarray  # global ids
    weights: np.ndarray | None
    partition: Partition

    @property
    def nlocal(self) -> int:
        return self.hi - self.lo


def local_graph(graph, part: Partition, rank: int, transpose: bool = False) -> LocalGraph:
    """Slice rank ``rank``'s rows out of ``graph`` (of its CSC when ``transpose``).

    Works on memory-mapped arrays: only this rank's slice is read."""
    lo, hi = part.range(rank)
    indptr, indices, weights = graph.csc() if transpose else (graph.indptr, graph.indices, graph.weights)
    a, b = int(indptr[lo]), int(indptr[hi])
    ip = np.asarray(indptr[lo:hi + 1], dtype=np.int64) - a
    ix = np.asarray(indices[a:b])
    w = None if weights is None else np.asarray(weights[a:b])
    return LocalGraph(lo, hi, graph.n, ip, ix, w, part)
