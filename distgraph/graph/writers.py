"""Writers: a :class:`~distgraph.graph.Graph` to Matrix Market, SNAP, CSV, DIMACS or binary.

What
    :func:`write_graph` writes the formats :func:`~distgraph.graph.readers.read_graph`
    reads, chosen by the suffix (``.mtx``, ``.txt``/``.el``/``.edges``/``.tsv``, ``.csv``,
    ``.gr``, ``.dgraph``), compressed when the name ends in ``.gz``, ``.xz`` or ``.bz2``.
    Reading the file back gives the same graph: the same ``n`` for mtx, gr and dgraph;
    for edge lists, which only list edges, vertices without arcs are lost and the
    reader numbers the others by their ids (the labels written).

How an undirected graph is written
    mtx: ``symmetric``, each edge once in the lower triangle (``row >= col``);
    SNAP: ``# Undirected graph`` header (the reader honours it), each edge once ``u <= v``;
    CSV: each edge once, read it back with ``directed=False``;
    DIMACS: ``p tw n m`` lines ``u v`` when unweighted, else ``p sp`` with both arcs
    (read it back with ``directed=False``). Unweighted directed DIMACS is ``p sp`` with
    weight 1. Edge lists write ``labels`` (the input ids) when the graph has them.

How (no per-line Python loop for integers)
    The numba kernel :func:`_format_lines` prints the integer columns digit by digit into
    one byte buffer per block of 1M lines; float weights are printed with ``repr``
    (shortest round-trip decimal), so reading back gives the same doubles.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import numba as nb
import numpy as np

from ..errors import InvalidArgumentError
from .core import Graph

__all__ = ["write_graph"]

_BLOCK = 1 << 20
_OPEN = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


@nb.njit(cache=True, nogil=True)
def _put_int(out, o, v):
    if v < 0:
        out[o] = 45
        o += 1
        v = -v
    if v == 0:
        out[o] = 48
        return o + 1
    t = v
    nd = 0
    while t > 0:
        t //= 10
        nd += 1
    for j in range(nd - 1, -1, -1):
        out[o + j] = 48 + v % 10
        v //= 10
    return o + nd


@nb.njit(cache=True, nogil=True)
def _format_lines(prefix, u, v, wi, wtext, woff, sep):
    """Lines ``[prefix ]u<sep>v[<sep>w]\\n``. ``wi``: integer weights (or empty), ``wtext``
    + ``woff``: concatenated weight texts (or empty offsets)."""
    k = u.size
    size = k * (prefix.size + 2 * 21 + 2) + (k * 22 if wi.size else 0) + wtext.size + k + 1
    out = np.empty(size, np.uint8)
    o = 0
    for r in range(k):
        for c in prefix:
            out[o] = c
            o += 1
        o = _put_int(out, o, u[r])
        out[o] = sep
        o = _put_int(out, o + 1, v[r])
        if wi.size:
            out[o] = sep
            o = _put_int(out, o + 1, wi[r])
        elif woff.size:
            out[o] = sep
            o += 1
            for j in range(woff[r], woff[r + 1]):
                out[o] = wtext[j]
                o += 1
        out[o] = 10
        o += 1
    return out[:o]


def _lines(u, v, w, prefix=b"", sep=b" "):
    """Yield byte blocks of text lines for the arcs ``u -> v`` (weights ``w`` or None)."""
    pre = np.frombuffer(prefix, np.uint8)
    empty_i = np.zeros(0, np.int64)
    empty_b = np.zeros(0, np.uint8)
    for a in range(0, u.size, _BLOCK):
        uu = np.ascontiguousarray(u[a:a + _BLOCK], dtype=np.int64)
        vv = np.ascontiguousarray(v[a:a + _BLOCK], dtype=np.int64)
        wi, wt, wo = empty_i, empty_b, empty_i
        if w is not None:
            ww = w[a:a + _BLOCK]
            if ww.dtype.kind in "iub":
                wi = np.ascontiguousarray(ww, dtype=np.int64)
            else:
                texts = [repr(x) for x in ww.tolist()]
                wt = np.frombuffer("".join(texts).encode(), np.uint8)
                wo = np.zeros(len(texts) + 1, np.int64)
                np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)), out=wo[1:])
            if wi.size == 0 and wo.size == 0:  # zero-length block with weights: nothing to write
                continue
        yield _format_lines(pre, uu, vv, wi, wt, wo, sep[0]).tobytes()


def _suffixes(path):
    name = os.path.basename(os.fspath(path)).lower()
    root, ext = os.path.splitext(name)
    comp = None
    if ext in _OPEN:
        comp = ext
        root, ext = os.path.splitext(root)
    return ext, comp


def write_graph(graph: Graph, path, format=None, *, provenance: dict | None = None) -> None:
    """Write ``graph`` to ``path`` in the format its suffix names.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
        ``.mtx``, ``.txt``/``.el``/``.edges``/``.tsv`` (SNAP), ``.csv``, ``.gr`` (DIMACS)
        or ``.dgraph``; text formats may end in ``.gz``, ``.xz`` or ``.bz2``.
    format : {'mtx', 'snap', 'csv', 'dimacs', 'dgraph'}, optional
        Overrides the suffix.
    provenance : dict, optional
        For ``.dgraph``: how the graph was made (see :func:`distgraph.formats.binary.save`).

    Raises
    ------
    InvalidArgumentError
        Unknown suffix or format.

    Examples
    --------
    >>> import tempfile, os
    >>> from distgraph.graph.readers import read_graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    >>> p = os.path.join(tempfile.mkdtemp(), "g.mtx")
    >>> write_graph(g, p)
    >>> read_graph(p).m
    6
    """
    from .readers import _EXT_FORMAT, FORMATS

    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
    path = os.fspath(path)
    ext, comp = _suffixes(path)
    fmt = format or _EXT_FORMAT.get(ext)
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"path must end in .mtx, .txt, .el, .edges, .tsv, .csv, .gr or .dgraph "
                                   f"(optionally .gz/.xz/.bz2), or give format=; got {path!r}")
    if fmt == "dgraph":
        if comp:
            raise InvalidArgumentError(f"a .dgraph file is memory-mapped and cannot be compressed; got {path!r}")
        from ..formats import binary

        binary.save(graph, path, provenance=provenance)
        return
    tmp = path + ".tmp"
    opener = _OPEN.get(comp, open)
    with opener(tmp, "wb") as f:
        for block in _WRITERS[fmt](graph):
            f.write(block)
    os.replace(tmp, path)


def _arcs(graph: Graph, once: bool, lower: bool = False):
    """Arcs to write: every arc, or for an undirected graph each edge once."""
    s, d, w = graph.edges()
    s = np.asarray(s)
    d = np.asarray(d)
    w = None if w is None else np.asarray(w)
    if once and not graph.directed:
        keep = (s >= d) if lower else (s <= d)
        s, d = s[keep], d[keep]
        w = None if w is None else w[keep]
    return s, d, w


def _mtx(graph: Graph):
    field = "pattern" if graph.weights is None else ("integer" if graph.weights.dtype.kind in "iu" else "real")
    sym = "general" if graph.directed else "symmetric"
    s, d, w = _arcs(graph, once=True, lower=True)
    head = f"%%MatrixMarket matrix coordinate {field} {sym}\n"
    head += f"% written by distgraph from {graph.meta.get('source', 'memory')}\n"
    head += f"{graph.n} {graph.n} {s.size}\n"
    yield head.encode()
    yield from _lines(s + 1, d + 1, w)


def _edgelist(graph: Graph, sep: bytes, snap: bool):
    s, d, w = _arcs(graph, once=True)
    if graph.labels is not None:
        lab = np.asarray(graph.labels)
        s, d = lab[s], lab[d]
    if snap:
        kind = "Directed graph" if graph.directed else "Undirected graph (each unordered pair of nodes is saved once)"
        head = f"# {kind}\n# written by distgraph from {graph.meta.get('source', 'memory')}\n"
        head += f"# Nodes: {graph.n} Edges: {s.size}\n# FromNodeId\tToNodeId" + ("\tWeight" if w is not None else "") + "\n"
    else:
        head = "source,target" + (",weight" if w is not None else "") + "\n"
    yield head.encode()
    yield from _lines(s, d, w, sep=sep)


def _dimacs(graph: Graph):
    src = graph.meta.get("source", "memory")
    if not graph.directed and graph.weights is None:
        s, d, _ = _arcs(graph, once=True)
        yield f"c written by distgraph from {src}\np tw {graph.n} {s.size}\n".encode()
        yield from _lines(s + 1, d + 1, None)
        return
    s, d, w = _arcs(graph, once=False)
    note = "" if graph.directed else "c undirected graph: both arcs of every edge (read with directed=False)\n"
    if w is None:
        note += "c unweighted graph: every arc has weight 1\n"
        w = np.ones(s.size, np.int64)
    yield f"c written by distgraph from {src}\n{note}p sp {graph.n} {s.size}\n".encode()
    yield from _lines(s + 1, d + 1, w, prefix=b"a ")


_WRITERS = {"mtx": _mtx, "snap": lambda g: _edgelist(g, b"\t", True), "csv": lambda g: _edgelist(g, b",", False),
            "dimacs": _dimacs}
