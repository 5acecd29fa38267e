"""distgraph's binary graph format (``*.dgraph``): loads in seconds, memory-maps, splits by rank.

What
    One file holds a :class:`~distgraph.graph.Graph` (CSR, optional weights, labels and
    the CSC of a directed graph) as raw little-endian arrays, plus a JSON header that
    says what they are and how the file was made. :func:`load` maps the arrays
    read-only without reading them; :func:`load_local` gives one rank its rows
    (:func:`~distgraph.graph.partition.local_graph`) and touches only the pages of
    ``indptr`` and of its own slice of ``indices``/``weights``.

Layout (version 1)
    ======  ======  =====================================================================
    offset  bytes   content
    ======  ======  =====================================================================
    0       8       magic ``\\x89DGRAPH\\n``
    8       4       uint32 format version (1)
    12      4       uint32 flags (0)
    16      8       uint64 ``H``, length of the JSON header
    24      16      blake2b-128 of the JSON header
    40      24      zero
    64      H       JSON header (UTF-8)
    A       ...     arrays, each at a 64-byte aligned offset given in the header
    ======  ======  =====================================================================

    The header holds ``n``, ``m``, ``directed``, ``num_edges``, ``file_size``, ``arrays``
    (name -> ``dtype``, ``shape``, ``offset``, ``nbytes``; names ``indptr``, ``indices``,
    ``weights``, ``labels``, ``csc_indptr``, ``csc_indices``, ``csc_weights``),
    ``checksum`` (``blake2b-128`` of every 16 MiB block of every array, so a rank can
    check just the blocks it reads), ``provenance`` (source file path, size, mtime,
    format and options, as given to :func:`save`), ``meta`` (the graph's ``meta``),
    ``created_by`` and ``created`` (UTC date).

    A file that is shorter or longer than ``file_size``, has a bad magic, a newer
    version or a header that fails its checksum raises GraphFormatError; array
    checksums are checked on request (``verify=True``).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import struct

import numpy as np

from ..errors import GraphFormatError, InvalidArgumentError
from ..graph.core import Graph
from ..graph.partition import LocalGraph, Partition, local_graph, partition_by_edges

__all__ = ["save", "load", "load_local", "read_header", "verify", "MAGIC", "VERSION"]

MAGIC = b"\x89DGRAPH\n"
VERSION = 1
_PREAMBLE = struct.Struct("<8sIIQ16s24x")  # 64 bytes
_ALIGN = 64
_BLOCK = 1 << 24
_DIGEST = 16


def _align(x: int) -> int:
    return (x + _ALIGN - 1) // _ALIGN * _ALIGN


def _digests(a: np.ndarray) -> list[str]:
    buf = memoryview(np.ascontiguousarray(a)).cast("B")
    if len(buf) == 0:
        return []
    return [hashlib.blake2b(buf[i:i + _BLOCK], digest_size=_DIGEST).hexdigest() for i in range(0, len(buf), _BLOCK)]


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist() if o.size <= 64 else f"<array {o.dtype} {o.shape}>"
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def save(graph: Graph, path, provenance: dict | None = None, *, csc: bool | None = None) -> dict:
    """Write ``graph`` to ``path`` (a ``.dgraph`` file); returns the header written.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
    provenance : dict, optional
        How the graph was made: source file, size, mtime, options, its checksum.
        Default: taken from ``graph.meta`` (what the readers record).
    csc : bool, optional
        Also store the CSC (in-arcs) of a directed graph, so that pull-direction
        algorithms need not build it. Default: when ``graph`` has it built already.

    Examples
    --------
    >>> import tempfile, os
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3])
    >>> p = os.path.join(tempfile.mkdtemp(), "g.dgraph")
    >>> h = save(g, p)
    >>> load(p).indices.tolist()
    [1, 2, 3]
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a distgraph Graph; got {type(graph).__name__}")
    path = os.fspath(path)
    arrays = {"indptr": graph.indptr, "indices": graph.indices}
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    if graph.labels is not None:
        arrays["labels"] = graph.labels
    if graph.directed and (csc or (csc is None and graph._csc is not None)):
        ip, ix, w = graph.csc()
        arrays.update(csc_indptr=ip, csc_indices=ix)
        if w is not None:
            arrays["csc_weights"] = w
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in arrays.items():  # little-endian on disk
        if v.dtype.byteorder == ">":
            arrays[k] = v.astype(v.dtype.newbyteorder("<"))
    from .. import __version__

    meta = {k: v for k, v in graph.meta.items() if k not in ("binary",)}
    if provenance is None:
        provenance = {k: meta[k] for k in ("source", "format", "compression", "size", "mtime", "options", "header")
                      if k in meta}
    layout = {}
    checksums = {}
    for k, v in arrays.items():
        layout[k] = {"dtype": v.dtype.str, "shape": list(v.shape), "nbytes": int(v.nbytes)}
        checksums[k] = _digests(v)
    header = {"format": "distgraph-binary", "version": VERSION, "n": graph.n, "m": graph.m,
              "directed": bool(graph.directed), "num_edges": graph.num_edges, "file_size": 0,
              "arrays": layout, "checksum": {"algorithm": f"blake2b-{8 * _DIGEST}", "block_bytes": _BLOCK,
                                              "blocks": checksums},
              "provenance": provenance, "meta": meta, "created_by": f"distgraph {__version__}",
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    # offsets depend on the header length, which depends on the offsets: fix the point
    text = b""
    for _ in range(4):
        off = _align(_PREAMBLE.size + len(text))
        for k, v in arrays.items():
            layout[k]["offset"] = off
            off = _align(off + v.nbytes)
        header["file_size"] = off
        new = json.dumps(header, default=_jsonable, sort_keys=True).encode()
        if new == text:
            break
        text = new
    pre = _PREAMBLE.pack(MAGIC, VERSION, 0, len(text), hashlib.blake2b(text, digest_size=_DIGEST).digest())
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(pre)
        f.write(text)
        for k, v in arrays.items():
            f.write(b"\0" * (layout[k]["offset"] - f.tell()))
            f.write(memoryview(np.ascontiguousarray(v)).cast("B"))
        f.write(b"\0" * (header["file_size"] - f.tell()))
    os.replace(tmp, path)
    return header


def read_header(path) -> dict:
    """The JSON header of a ``.dgraph`` file, after checking magic, version, header
    checksum and file size. Raises GraphFormatError otherwise."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pre = f.read(_PREAMBLE.size)
        if len(pre) < _PREAMBLE.size:
            if not pre.startswith(MAGIC[:len(pre)]) or len(pre) < len(MAGIC):
                raise GraphFormatError(f"not a distgraph binary file (expected magic {MAGIC!r})", path)
            raise GraphFormatError(f"truncated: the file has {size} bytes, fewer than the {_PREAMBLE.size}-byte preamble", path)
        magic, version, _flags, hlen, digest = _PREAMBLE.unpack(pre)
        if magic != MAGIC:
            raise GraphFormatError(f"not a distgraph binary file (expected magic {MAGIC!r}; got {magic!r})", path)
        if version > VERSION:
            raise GraphFormatError(f"written by a newer distgraph (format version {version}; this one reads "
                                   f"up to {VERSION}); upgrade distgraph or convert the source again", path)
        if _PREAMBLE.size + hlen > size:
            raise GraphFormatError(f"truncated: the header needs {_PREAMBLE.size + hlen} bytes; the file has {size}", path)
        text = f.read(hlen)
    if hashlib.blake2b(text, digest_size=_DIGEST).digest() != digest:
        raise GraphFormatError("the header is corrupted (checksum mismatch)", path)
    try:
        header = json.loads(text)
    except ValueError as e:  # pragma: no cover - a checksummed header parses
        raise GraphFormatError(f"the header is not valid JSON ({e})", path) from None
    if header.get("file_size") != size:
        what = "truncated" if size < header.get("file_size", 0) else "has extra bytes"
        raise GraphFormatError(f"{what}: expected {header.get('file_size')} bytes; the file has {size}", path)
    return header


def _map(path, header, mmap: bool) -> dict:
    out = {}
    mm = None
    for k, a in header["arrays"].items():
        dt = np.dtype(a["dtype"])
        if a["nbytes"] == 0:
            arr = np.zeros(a["shape"], dt)
        elif mmap:
            if mm is None:
                mm = np.memmap(path, dtype=np.uint8, mode="r")
            arr = mm[a["offset"]:a["offset"] + a["nbytes"]].view(dt).reshape(a["shape"])
        else:
            arr = np.fromfile(path, dtype=dt, count=int(np.prod(a["shape"])), offset=a["offset"]).reshape(a["shape"])
        arr.flags.writeable = False
        out[k] = arr
    return out


def _check_blocks(path, header, arrays, ranges=None):
    """Compare block checksums; ``ranges`` maps array name -> (first, last) element range."""
    blocks = header["checksum"]["blocks"]
    bb = header["checksum"]["block_bytes"]
    for k, arr in arrays.items():
        raw = memoryview(np.ascontiguousarray(arr)).cast("B")
        b0, b1 = 0, len(blocks.get(k, []))
        if ranges is not None:
            if k not in ranges:
                continue
            lo, hi = ranges[k]
            isz = arr.dtype.itemsize
            b0, b1 = (lo * isz) // bb, -(-(hi * isz) // bb)
        for i in range(b0, b1):
            if hashlib.blake2b(raw[i * bb:(i + 1) * bb], digest_size=_DIGEST).hexdigest() != blocks[k][i]:
                raise GraphFormatError(f"array '{k}' is corrupted (checksum mismatch in bytes "
                                       f"{i * bb}..{min((i + 1) * bb, len(raw))})", path)


def verify(path) -> None:
    """Check every checksum of a ``.dgraph`` file; raises GraphFormatError on a mismatch."""
    header = read_header(path)
    _check_blocks(os.fspath(path), header, _map(os.fspath(path), header, True))


def load(path, *, mmap: bool = True, verify: bool = False) -> Graph:
    """Open a ``.dgraph`` file as a :class:`Graph`.

    Parameters
    ----------
    path : str or os.PathLike
    mmap : bool
        Map the arrays read-only (nothing is read until used); ``False`` reads them.
    verify : bool
        Check the checksum of every array (reads the whole file).

    Returns
    -------
    Graph
        Arrays read-only; ``meta`` holds the saved meta plus ``binary`` (this path) and
        ``provenance``.

    Raises
    ------
    GraphFormatError
        Not a distgraph file, newer version, truncated, corrupted header or (with
        ``verify``) corrupted arrays.
    """
    path = os.fspath(path)
    header = read_header(path)
    arrays = _map(path, header, mmap)
    if verify:
        _check_blocks(path, header, arrays)
    return _graph(path, header, arrays)


def _graph(path, header, arrays) -> Graph:
    n, m = header["n"], header["m"]
    ip, ix = arrays.get("indptr"), arrays.get("indices")
    if ip is None or ix is None or ip.shape != (n + 1,) or ix.shape != (m,) or \
            (n >= 0 and (int(ip[0]) != 0 or int(ip[-1]) != m)):
        raise GraphFormatError("indptr/indices do not describe a CSR with the header's n and m", path)
    meta = dict(header.get("meta") or {})
    meta.update(binary=os.path.abspath(path), provenance=header.get("provenance"))
    csc = None
    if "csc_indptr" in arrays:
        csc = (arrays["csc_indptr"], arrays["csc_indices"], arrays.get("csc_weights"))
    return Graph(ip, ix, arrays.get("weights"), directed=header["directed"], labels=arrays.get("labels"),
                 meta=meta, _csc=csc)


def load_local(path, part, rank: int, *, transpose: bool = False, verify: bool = False) -> LocalGraph:
    """Rank ``rank``'s rows of a ``.dgraph`` file, reading only what it needs.

    Parameters
    ----------
    path : str or os.PathLike
    part : Partition or int
        The partition, or a number of parts for :func:`partition_by_edges` (which
        reads ``indptr``, ``8 (n + 1)`` bytes, the same on every rank).
    rank : int
        In ``[0, part.nparts)``.
    transpose : bool
        Rows of the CSC (in-arcs) instead. Uses the stored CSC (``save(csc=True)``);
        without one, the whole CSC is built in memory first.
    verify : bool
        Check the checksums of the blocks this rank reads (and of ``indptr``).

    Returns
    -------
    LocalGraph
        Out-arcs (in-arcs when ``transpose``) of vertices ``[lo, hi)`` with global ids.
        Concatenating the parts of all ranks gives the whole CSR.
    """
    path = os.fspath(path)
    header = read_header(path)
    arrays = _map(path, header, True)
    g = _graph(path, header, arrays)
    pre = "csc_" if transpose and g.directed else ""
    ip_name = pre + "indptr" if pre + "indptr" in arrays else "indptr"
    if isinstance(part, (int, np.integer)) and not isinstance(part, bool):
        part = partition_by_edges(g.csc()[0] if transpose else g.indptr, int(part))
    if not isinstance(part, Partition):
        raise TypeError(f"part must be a Partition or a number of parts; got {type(part).__name__}")
    if part.n != g.n:
        raise InvalidArgumentError(f"part must partition the graph's {g.n} vertices; got one of {part.n}")
    if not 0 <= rank < part.nparts:
        raise InvalidArgumentError(f"rank must be in [0, {part.nparts}); got {rank}")
    if verify:
        lo, hi = part.range(rank)
        ip = arrays[ip_name]
        a, b = int(ip[lo]), int(ip[hi])
        ranges = {ip_name: (0, ip.size)}
        for name in (pre + "indices", pre + "weights"):
            if name in arrays:
                ranges[name] = (a, b)
        if pre and "csc_indptr" not in arrays:
            ranges = None  # the CSC is built from all of indices: check everything
        _check_blocks(path, header, arrays, ranges)
    return local_graph(g, part, rank, transpose=transpose)
