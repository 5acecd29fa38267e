"""A memory-lean CSR builder for generated graphs.

Generated graphs arrive as chunks of ``(src, dst)`` arrays with ids already in
``[0, n)`` and no weights.  :func:`build_csr` copies the chunks into one preallocated
``src``/``dst`` pair (int32 when ``n < 2**31``; no concatenation of chunk lists) and hands
it to the counting-sort builder of :meth:`Graph.from_edges`
(:func:`distgraph.graph._build.build_csr_counting`: count, scatter by source, sort rows
in parallel, drop repeats).  Peak memory: 8 bytes per drawn edge (``src``/``dst``) plus
4 bytes per stored arc (``indices``), plus int64 arrays of ``n + 1``.  The result is
exactly what ``Graph.from_edges(src, dst, n=n, directed=directed,
drop_self_loops=drop_self_loops)`` returns (tests check this).
"""

from __future__ import annotations

import numpy as np

from ..errors import expect
from ..graph._build import build_csr_counting
from ..graph.core import Graph, index_dtype

__all__ = ["build_csr"]


def build_csr(chunks, n: int, capacity: int, *, directed: bool, drop_self_loops: bool,
              meta: dict | None = None, device: str | None = None) -> Graph:
    """Build a :class:`Graph` from an iterable of ``(src, dst)`` integer arrays.

    Parameters
    ----------
    chunks : iterable of (ndarray, ndarray)
        Arcs, ids in ``[0, n)`` (not checked: generators produce them in range).
    n : int
        Number of vertices.
    capacity : int
        Upper bound on the number of arcs yielded by ``chunks``.
    directed : bool
        ``False`` stores each edge in both directions (a self-loop once).
    drop_self_loops : bool
        Remove arcs ``v -> v``.
    meta : dict, optional
        The graph's ``meta``.
    device : {"cpu", "gpu"}, optional
        Where the CSR is built (default ``config.gen_device``, ``DISTGRAPH_GEN_DEVICE``):
        the host's counting sort, or a key sort on the current CUDA device.

    Returns
    -------
    Graph
        Rows sorted, no repeated arcs, no weights.

    Raises
    ------
    InvalidArgumentError
        ``device`` is not "cpu" or "gpu".
    BackendUnavailableError, DeviceMemoryError
        ``device="gpu"`` without CuPy or a GPU, or without the memory the build needs.
    """
    if device is None:
        from ..runtime.config import config

        device = config.gen_device
    expect(device in ("cpu", "gpu"), "device", '"cpu" or "gpu"', device)
    if device == "gpu":
        from ._csr_device import build_csr_keysort

        return build_csr_keysort(chunks, n, capacity, directed=directed, drop_self_loops=drop_self_loops,
                                 meta=meta)
    n = int(n)
    idt = index_dtype(n)
    src = np.empty(int(capacity), dtype=idt)
    dst = np.empty(int(capacity), dtype=idt)
    m = 0
    for s, d in chunks:
        k = len(s)
        src[m:m + k] = s
        dst[m:m + k] = d
        m += k
    indptr, indices, _ = build_csr_counting(src[:m], dst[:m], None, n, undirected=not directed,
                                            drop_self_loops=drop_self_loops, dedup=True,
                                            index_dtype=idt)
    return Graph(indptr, indices, None, directed=directed, meta=dict(meta or {}))
