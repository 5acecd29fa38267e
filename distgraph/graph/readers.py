"""Readers for the graph files users hold: Matrix Market, SNAP/CSV edge lists, DIMACS.

What
    :func:`read_graph` turns a file into a :class:`~distgraph.graph.Graph`. Formats:

    ======== ============================================ ===================================
    format   what the file looks like                     default direction, first id
    ======== ============================================ ===================================
    mtx      ``%%MatrixMarket matrix coordinate F S``,    ``symmetric`` undirected, else
             ``%`` comments, ``rows cols nnz``, entries   directed; 1-based
    snap     ``#`` comments, ``u v [w ...]`` per line,    directed (``# Undirected graph``
             tabs, blanks or commas                       in the header: undirected); as given
    csv      ``u,v[,w,...]``, an optional header row      directed; as given
    dimacs   ``c`` comments, ``p sp n m`` + ``a u v w``   ``sp`` directed, ``tw``/``edge``
             (9th challenge), ``p tw n m`` + ``u v``       undirected; 1-based
             (PACE 2016), ``p edge n m`` + ``e u v``
    dgraph   distgraph's binary format                    as saved (see ``formats.binary``)
    ======== ============================================ ===================================

    Each text format may be compressed (``.gz``, ``.xz``, ``.bz2``; detected from the
    magic bytes, whatever the suffix).

How (no per-line Python loop)
    The file is decompressed into one byte array. The few header lines (banner, size
    line, ``p`` line) are read in Python; the body is parsed in a single pass by the
    numba kernel :func:`_scan_edges`, a byte-level state machine in the style of a
    hand-written C tokenizer: per line it skips comments and blanks, parses the two id
    columns as integers, the weight column as a number, and checks the column count.
    Floats take Clinger's fast path (at most 15 significant digits, ``|exp10| <= 22``:
    one exactly rounded multiplication or division); the few others (``inf``, 17-digit
    shortest round-trip decimals) are gathered and parsed by ``numpy.fromstring``,
    which rounds correctly. On the first bad line the kernel stops and returns its line
    number and byte offset, so errors say ``file:line: expected ...; got '...'``.

    Building the CSR (sort, dedup keeping the minimum weight, symmetrize, self-loops)
    is :meth:`Graph.from_edges`; this module only checks what the file promised (header
    counts, id ranges, NaN weights) so every error names its line.

State encoding of the kernel
    ``src[k], dst[k]`` -- ids of record ``k`` as written (int64); ``w[k]`` -- its weight
    (float64), NaN as a placeholder while ``slow`` holds the byte offset of a token
    left to the slow float path. The return tuple is ``(records, nslow, all_integer,
    ncols, error, line, line_offset, column)`` with ``error`` one of the ``_E_*`` codes.
"""

from __future__ import annotations

import bz2
import datetime
import gzip
import lzma
import os
import re
import zlib

import numba as nb
import numpy as np

from ..errors import GraphFormatError, InvalidArgumentError
from .core import Graph

__all__ = ["read_graph", "detect_format", "read_bytes", "FORMATS"]

FORMATS = ("mtx", "snap", "csv", "dimacs", "dgraph")
_EXT_FORMAT = {".mtx": "mtx", ".mm": "mtx", ".txt": "snap", ".el": "snap", ".edges": "snap", ".tsv": "snap",
               ".edgelist": "snap", ".snap": "snap", ".csv": "csv", ".gr": "dimacs", ".dimacs": "dimacs",
               ".col": "dimacs", ".dgraph": "dgraph"}
_COMPRESSION_EXT = {".gz": "gzip", ".xz": "xz", ".bz2": "bz2"}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bz2"))
_DGRAPH_MAGIC = b"\x89DGRAPH\n"

# error codes of the kernel
_E_OK, _E_FEW, _E_MANY, _E_ID, _E_WEIGHT, _E_PREFIX, _E_BIGID, _E_CAP, _E_EXTRA = range(9)

_POW10 = np.array([float(10 ** i) for i in range(23)])  # exact doubles


# --------------------------------------------------------------------------- kernels
@nb.njit(cache=True, nogil=True)
def _blank(c):
    return c == 32 or c == 9 or c == 13 or c == 44  # space, tab, CR, comma


@nb.njit(cache=True, nogil=True)
def _endtok(c):
    return c == 32 or c == 9 or c == 13 or c == 44 or c == 10


@nb.njit(cache=True, nogil=True)
def _count_newlines(b):
    k = 0
    for i in range(b.size):
        if b[i] == 10:
            k += 1
    return k


@nb.njit(cache=True, nogil=True)
def _match_word(b, i, word):
    """True when ``b[i:]`` starts with ``word`` (lower-case ASCII), case-insensitively."""
    if i + word.size > b.size:
        return False
    for j in range(word.size):
        c = b[i + j]
        if 65 <= c <= 90:
            c += 32
        if c != word[j]:
            return False
    return True


_INF = np.frombuffer(b"inf", np.uint8)
_INFINITY = np.frombuffer(b"infinity", np.uint8)
_NAN = np.frombuffer(b"nan", np.uint8)


@nb.njit(cache=True, nogil=True)
def _scan_edges(b, pos0, line0, comments, prefix, ncols, wcol, wkind, max_records, pow10, inf_w, infinity_w, nan_w,
                src, dst, w, slow):
    """Parse edge records from ``b[pos0:]`` (see the module docstring for the encoding).

    ``prefix``: 0, or the letter every data line starts with (DIMACS ``a``/``e``).
    ``ncols``: numeric columns per line, 0 = take it from the first data line (>= 2).
    ``wcol``: column holding the weight (-1: none). ``wkind``: 1 integer only, 2 any number.
    """
    n = b.size
    i = pos0
    line = line0
    k = 0
    nslow = 0
    allint = True
    cap = src.size
    while i < n:
        ls = i
        while i < n and _blank(b[i]):
            i += 1
        if i >= n:
            break
        c = b[i]
        if c == 10:
            i += 1
            line += 1
            continue
        skip = False
        for j in range(comments.size):
            if c == comments[j]:
                skip = True
        if skip:
            while i < n and b[i] != 10:
                i += 1
            i += 1
            line += 1
            continue
        if k >= max_records:
            return k, nslow, allint, ncols, _E_EXTRA, line, ls, 0
        if k >= cap:
            return k, nslow, allint, ncols, _E_CAP, line, ls, 0
        if prefix != 0:
            if c != prefix or (i + 1 < n and not _endtok(b[i + 1])):
                return k, nslow, allint, ncols, _E_PREFIX, line, ls, 0
            i += 1
        col = 0
        while True:
            while i < n and _blank(b[i]):
                i += 1
            if i >= n or b[i] == 10:
                break
            if col < 2:
                neg = False
                if b[i] == 45 or b[i] == 43:
                    neg = b[i] == 45
                    i += 1
                v = 0
                nd = 0
                while i < n:
                    d = np.int64(b[i]) - 48
                    if d < 0 or d > 9:
                        break
                    v = v * 10 + d
                    nd += 1
                    i += 1
                if nd == 0 or (i < n and not _endtok(b[i])):
                    return k, nslow, allint, ncols, _E_ID, line, ls, col
                if nd > 18:
                    return k, nslow, allint, ncols, _E_BIGID, line, ls, col
                if neg:
                    v = -v
                if col == 0:
                    src[k] = v
                else:
                    dst[k] = v
            elif col == wcol:
                ts = i
                neg = False
                if b[i] == 45 or b[i] == 43:
                    neg = b[i] == 45
                    i += 1
                mant = np.int64(0)
                sig = 0  # significant digits kept in mant
                nd = 0  # digits seen
                exp10 = 0
                integral = True
                hard = False
                if i < n and (b[i] == 105 or b[i] == 73 or b[i] == 110 or b[i] == 78):  # i I n N
                    if _match_word(b, i, infinity_w):
                        i += 8
                    elif _match_word(b, i, inf_w) or _match_word(b, i, nan_w):
                        i += 3
                    else:
                        return k, nslow, allint, ncols, _E_WEIGHT, line, ls, col
                    nd = 1
                    hard = True
                    integral = False
                else:
                    while i < n:
                        d = np.int64(b[i]) - 48
                        if d < 0 or d > 9:
                            break
                        nd += 1
                        if sig > 0 or d != 0:
                            if sig < 18:
                                mant = mant * 10 + d
                                sig += 1
                            else:
                                exp10 += 1
                                hard = True
                        i += 1
                    if i < n and b[i] == 46:  # '.'
                        integral = False
                        i += 1
                        while i < n:
                            d = np.int64(b[i]) - 48
                            if d < 0 or d > 9:
                                break
                            nd += 1
                            if sig > 0 or d != 0:
                                if sig < 18:
                                    mant = mant * 10 + d
                                    sig += 1
                                    exp10 -= 1
                                else:
                                    hard = True
                            else:
                                exp10 -= 1
                            i += 1
                    if nd > 0 and i < n and (b[i] == 101 or b[i] == 69):  # e E
                        integral = False
                        i += 1
                        eneg = False
                        if i < n and (b[i] == 45 or b[i] == 43):
                            eneg = b[i] == 45
                            i += 1
                        e = 0
                        ne = 0
                        while i < n:
                            d = np.int64(b[i]) - 48
                            if d < 0 or d > 9:
                                break
                            if e < 100000:
                                e = e * 10 + d
                            ne += 1
                            i += 1
                        if ne == 0:
                            return k, nslow, allint, ncols, _E_WEIGHT, line, ls, col
                        exp10 += -e if eneg else e
                if nd == 0 or (i < n and not _endtok(b[i])):
                    return k, nslow, allint, ncols, _E_WEIGHT, line, ls, col
                if wkind == 1 and not integral:
                    return k, nslow, allint, ncols, _E_WEIGHT, line, ls, col
                allint = allint and integral
                if sig > 15 or exp10 > 22 or exp10 < -22:
                    hard = True
                if hard:
                    w[k] = np.nan
                    slow[nslow] = ts
                    nslow += 1
                else:
                    x = np.float64(mant)
                    if exp10 >= 0:
                        x = x * pow10[exp10]
                    else:
                        x = x / pow10[-exp10]
                    w[k] = -x if neg else x
            else:
                while i < n and not _endtok(b[i]):
                    i += 1
            col += 1
        if ncols == 0:
            if col < 2:
                return k, nslow, allint, ncols, _E_FEW, line, ls, col
            ncols = col
        elif col != ncols:
            return k, nslow, allint, ncols, (_E_FEW if col < ncols else _E_MANY), line, ls, col
        if wcol >= 0 and ncols <= wcol:
            wcol = -1  # no weight column after all (decided on the first line)
        k += 1
        if i < n:
            i += 1
            line += 1
    return k, nslow, allint, ncols, _E_OK, line, i, 0


@nb.njit(cache=True, nogil=True)
def _gather_tokens(b, starts, count):
    """Copy the tokens starting at ``starts[:count]`` into one space-separated buffer."""
    total = 0
    for j in range(count):
        i = starts[j]
        while i < b.size and not _endtok(b[i]):
            i += 1
        total += i - starts[j] + 1
    out = np.empty(total, np.uint8)
    o = 0
    for j in range(count):
        i = starts[j]
        while i < b.size and not _endtok(b[i]):
            out[o] = b[i]
            o += 1
            i += 1
        out[o] = 32
        o += 1
    return out


@nb.njit(cache=True, nogil=True)
def _record_line(b, pos0, line0, comments, target):
    """``(line, offset)`` of data record number ``target`` (0-based) in ``b[pos0:]``."""
    n = b.size
    i = pos0
    line = line0
    k = 0
    while i < n:
        ls = i
        while i < n and _blank(b[i]):
            i += 1
        if i >= n:
            break
        c = b[i]
        data = c != 10
        for j in range(comments.size):
            if c == comments[j]:
                data = False
        if data:
            if k == target:
                return line, ls
            k += 1
        while i < n and b[i] != 10:
            i += 1
        i += 1
        line += 1
    return line, n


# --------------------------------------------------------------------------- input
class _Source:
    """The bytes of one file, decompressed, with helpers for header lines and messages."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.data, self.compression = read_bytes(self.path)
        b = np.asarray(self.data) if isinstance(self.data, np.ndarray) else np.frombuffer(self.data, np.uint8)
        if b.flags.writeable:  # one numba signature: read-only uint8
            b = b.view()
            b.flags.writeable = False
        self.b = b
        self.start = 3 if bytes(b[:3]) == b"\xef\xbb\xbf" else 0  # skip a UTF-8 byte order mark

    def line_at(self, pos: int, limit: int = 120) -> str:
        """The text of the line starting at byte ``pos`` (shortened), for messages."""
        end = min(self.b.size, pos + 4 * limit)
        raw = bytes(self.b[pos:end]).split(b"\n", 1)[0].rstrip(b"\r")
        text = raw.decode("utf-8", "replace")
        return text if len(text) <= limit else text[:limit] + "..."

    def lines(self, pos: int | None = None, line: int = 1):
        """Yield ``(line_number, start, next_start, text)`` from ``pos`` on (for headers only)."""
        pos = self.start if pos is None else pos
        b = self.b
        n = b.size
        while pos < n:
            end = pos
            while True:
                chunk = bytes(b[end:end + 65536])
                j = chunk.find(b"\n")
                if j >= 0:
                    end += j
                    break
                end += len(chunk)
                if end >= n:
                    break
            text = bytes(b[pos:min(end, pos + 65536)]).decode("utf-8", "replace").rstrip("\r")
            yield line, pos, end + 1, text
            pos = end + 1
            line += 1

    def error(self, message: str, line=None):
        return GraphFormatError(message, self.path, line)


def read_bytes(path):
    """The decompressed content of ``path`` and its compression (None, gzip, xz, bz2).

    Uncompressed files come back as a read-only memory map (no copy); compressed ones
    as ``bytes``. A truncated or corrupted compressed stream raises GraphFormatError."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
    comp = next((c for m, c in _MAGIC if head.startswith(m)), None)
    if comp is None:
        if size == 0:
            return np.zeros(0, np.uint8), None
        return np.memmap(path, dtype=np.uint8, mode="r"), None
    with open(path, "rb") as f:
        raw = f.read()
    try:
        if comp == "gzip":
            data = gzip.decompress(raw)
        elif comp == "xz":
            data = lzma.decompress(raw)
        else:
            data = bz2.decompress(raw)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as e:
        raise GraphFormatError(f"cannot decompress this {comp} file ({e}); it is truncated or corrupted", path) from None
    return data, comp


def detect_format(path, head: bytes | None = None) -> str:
    """The format of ``path``: from its extension (compression suffix stripped), else by
    sniffing ``head`` (the first bytes of the decompressed content)."""
    name = os.path.basename(os.fspath(path)).lower()
    root, ext = os.path.splitext(name)
    if ext in _COMPRESSION_EXT:
        root, ext = os.path.splitext(root)
    if ext in _EXT_FORMAT:
        return _EXT_FORMAT[ext]
    if head is None:
        src = read_bytes(path)[0]
        head = bytes(src[:65536])
    return _sniff(head)


def _sniff(head: bytes) -> str:
    head = head.removeprefix(b"\xef\xbb\xbf")
    if head.startswith(_DGRAPH_MAGIC):
        return "dgraph"
    if head.lstrip().lower().startswith(b"%%matrixmarket"):
        return "mtx"
    for raw in head.splitlines():
        s = raw.strip()
        if not s or s[:1] in (b"#", b"%"):
            continue
        if s[:1] in (b"c", b"p") and (len(s) == 1 or s[1:2] in (b" ", b"\t")):
            return "dimacs"
        return "csv" if b"," in s else "snap"
    return "snap"


# --------------------------------------------------------------------------- public
def read_graph(path, *, format=None, directed=None, symmetrize=False, drop_self_loops=False, dedup=True,
               base=None, weighted=True, relabel=None) -> Graph:
    """Read a graph file.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.mtx``, SNAP edge list (``.txt``, ``.el``, ``.edges``, ``.tsv``), ``.csv``,
        DIMACS ``.gr`` or ``.dgraph`` file, optionally ``.gz``/``.xz``/``.bz2``-compressed.
    format : {'mtx', 'snap', 'csv', 'dimacs', 'dgraph'}, optional
        Default: from the extension, else sniffed from the content.
    directed : bool, optional
        Default: from the file (Matrix Market ``symmetric``, DIMACS ``p tw``/``p edge``
        and SNAP files whose header says ``# Undirected graph`` are undirected; the rest
        directed). ``False`` makes every arc an undirected edge. ``True`` on a file of
        undirected edges gives the directed graph with both arcs of every edge.
    symmetrize : bool
        Same as ``directed=False``.
    drop_self_loops : bool
        Remove arcs ``v -> v``.
    dedup : bool
        Keep one arc per pair, the one of minimum weight (always so when undirected).
    base : {0, 1}, optional
        The first vertex id. Default 1 for ``mtx``/``dimacs``; for SNAP/CSV ids are kept
        as written (and, by default, compacted, see ``relabel``). Giving ``base`` for an
        edge list means ids are positions: vertex ``id - base``, no compaction.
    weighted : bool
        Read the weight column (``False``: ignore it, the graph is unweighted).
    relabel : bool, optional
        SNAP/CSV only. ``True`` (default unless ``base`` is given) numbers the distinct ids
        ``0..k-1`` in sorted order and keeps the ids of the file in ``Graph.labels``
        (``None`` when they are ``0..k-1`` already); ``False`` keeps ids, ``n = max + 1``.

    Returns
    -------
    Graph
        With ``graph.meta`` recording the source path, size, mtime, format, compression,
        header and options.

    Raises
    ------
    GraphFormatError
        The file is malformed, truncated, has ids out of range or NaN weights, or holds
        no graph; the message names the file and line.
    InvalidArgumentError
        An option has a bad value.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "g.el")
    >>> _ = open(p, "w").write("# four vertices\\n10 20\\n20 30\\n30 40\\n")
    >>> g = read_graph(p)
    >>> g.n, g.m, g.labels.tolist()
    (4, 3, [10, 20, 30, 40])
    """
    if format is not None and format not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    if base is not None and base not in (0, 1):
        raise InvalidArgumentError(f"base must be 0, 1 or None; got {base!r}")
    if directed not in (None, True, False):
        raise InvalidArgumentError(f"directed must be True, False or None; got {directed!r}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"graph file not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"graph file is a directory: {path}")
    fmt = format or detect_format(path, _head(path))
    if fmt == "dgraph":
        return _read_dgraph(path, directed, symmetrize, drop_self_loops, dedup, weighted)
    if relabel is not None and fmt not in ("snap", "csv") and relabel:
        raise InvalidArgumentError(f"relabel=True applies to edge lists (snap, csv); a {fmt} file has n in its header")
    src = _Source(path)
    opts = dict(directed=directed, symmetrize=bool(symmetrize), drop_self_loops=bool(drop_self_loops),
                dedup=bool(dedup), base=base, weighted=bool(weighted), relabel=relabel)
    if src.b.size == 0:
        raise src.error(f"file is empty; expected a {_EXPECT_HEAD[fmt]}", 1)
    if fmt == "mtx":
        e = _parse_mtx(src, base, weighted)
    elif fmt == "dimacs":
        e = _parse_dimacs(src, base, weighted)
    else:
        e = _parse_edgelist(src, fmt, base, weighted, relabel)
    return _build(src, fmt, e, opts)


_EXPECT_HEAD = {"mtx": "'%%MatrixMarket matrix coordinate <field> <symmetry>' banner",
                "dimacs": "'p sp n m' or 'p tw n m' line", "snap": "lines 'u v [w]'", "csv": "lines 'u,v[,w]'"}


def _head(path) -> bytes:
    with open(path, "rb") as f:
        head = f.read(8)
    if any(head.startswith(m) for m, _ in _MAGIC):
        try:
            opener = {"gzip": gzip.open, "xz": lzma.open, "bz2": bz2.open}[next(c for m, c in _MAGIC if head.startswith(m))]
            with opener(path, "rb") as f:
                return f.read(65536)
        except (OSError, EOFError, zlib.error, lzma.LZMAError):
            return b""  # read_bytes reports it properly
    with open(path, "rb") as f:
        return f.read(65536)


class _Edges:
    """What a format parser found: 0-based ids, weights, n and how to read direction."""

    def __init__(self, src, dst, w, n, file_directed, mirror, header, labels=None, negate_mirror=False,
                 extra=None):
        self.src, self.dst, self.w, self.n = src, dst, w, n
        self.file_directed = file_directed  # default direction
        self.mirror = mirror  # entries describe undirected edges stored once
        self.negate_mirror = negate_mirror  # skew-symmetric
        self.header = header
        self.labels = labels
        self.extra = extra or {}


def _scan(src: _Source, pos, line, *, comments, prefix=0, ncols=0, wcol=-1, wkind=2, max_records=None,
          expect="'u v [w]' with integer ids"):
    """Run the kernel over the body and turn its error code into a GraphFormatError."""
    b = src.b
    cap = _count_newlines(b[pos:]) + 1 if pos < b.size else 1
    if max_records is not None:
        cap = min(cap, max_records + 1)
    s = np.empty(cap, np.int64)
    d = np.empty(cap, np.int64)
    w = np.empty(cap if wcol >= 0 else 0, np.float64)
    slow = np.empty(cap if wcol >= 0 else 0, np.int64)
    cm = np.frombuffer(comments, np.uint8)
    k, nslow, allint, ncols_out, err, eline, epos, ecol = _scan_edges(
        b, pos, line, cm, prefix, ncols, wcol, wkind, cap if max_records is None else max_records,
        _POW10, _INF, _INFINITY, _NAN, s, d, w, slow)
    if err != _E_OK:
        text = src.line_at(epos)
        tokens = text.replace(",", " ").split()
        if prefix and tokens and err != _E_PREFIX:
            tokens = tokens[1:]
        tok = tokens[ecol] if ecol < len(tokens) else ""
        if err in (_E_FEW, _E_MANY):
            want = ncols_out if ncols_out else "at least 2"
            raise src.error(f"expected {expect} ({want} columns); got {ecol} columns: '{text}'", eline)
        if err == _E_ID:
            raise src.error(f"expected {expect}; got '{tok}' in column {ecol + 1}: '{text}'", eline)
        if err == _E_BIGID:
            raise src.error(f"vertex id {tok} is too large (more than 18 digits): '{text}'", eline)
        if err == _E_WEIGHT:
            kind = "an integer" if wkind == 1 else "a number"
            raise src.error(f"expected {kind} as the weight in column {ecol + 1}; got '{tok}': '{text}'", eline)
        if err == _E_PREFIX:
            raise src.error(f"expected a line {expect}; got '{text}'", eline)
        if err == _E_EXTRA:
            raise src.error(f"more entries than the header's {max_records}: '{text}'", eline)
        raise src.error(f"internal: record buffer too small at '{text}'", eline)  # pragma: no cover
    if b.size and b[-1] == 10 and eline > line:
        eline -= 1  # at the end of the file: its last line, not the empty one after the final newline
    has_w = wcol >= 0 and ncols_out > wcol
    w = w[:k] if has_w else None
    if has_w and nslow:
        buf = _gather_tokens(b, slow, nslow)
        vals = np.fromstring(bytes(buf), dtype=np.float64, sep=" ")
        if vals.size != nslow:  # pragma: no cover - the kernel checked the syntax
            raise src.error("could not parse some weights")
        w[np.isnan(w)] = vals  # the fast path never yields NaN: placeholders, in record order
    return s[:k], d[:k], w, bool(allint), int(ncols_out), int(eline)


def _where(src: _Source, pos, line, comments, k):
    """Line number and text of data record ``k``."""
    ln, off = _record_line(src.b, pos, line, np.frombuffer(comments, np.uint8), int(k))
    return int(ln), src.line_at(int(off))


def _check_range(src, pos, line, comments, a, lo, hi, what, hint=""):
    """Every value of ``a`` in ``[lo, hi]``, else an error naming the first bad line."""
    if a.size == 0:
        return
    bad = (a < lo) | (a > hi)
    if bad.any():
        k = int(np.argmax(bad))
        ln, text = _where(src, pos, line, comments, k)
        raise src.error(f"{what} {int(a[k])} is out of range [{lo}, {hi}]{hint}: '{text}'", ln)


def _check_nan(src, pos, line, comments, w):
    if w is not None and w.dtype.kind == "f":
        bad = np.isnan(w)
        if bad.any():
            k = int(np.argmax(bad))
            ln, text = _where(src, pos, line, comments, k)
            raise src.error(f"weight is NaN; weights must be numbers (inf is accepted): '{text}'", ln)


def _weights(w, allint):
    """float64 weights that are all integers (and exact) become int64."""
    if w is None:
        return None
    if allint and (w.size == 0 or np.abs(w).max() <= 2.0 ** 53):
        return w.astype(np.int64)
    return w


# --------------------------------------------------------------------------- formats
def _parse_mtx(src: _Source, base, weighted) -> _Edges:
    lines = src.lines()
    try:
        ln, _, nxt, banner = next(lines)
    except StopIteration:  # pragma: no cover - empty handled earlier
        raise src.error("file is empty", 1)
    tok = banner.split()
    if len(tok) < 1 or tok[0].lower() != "%%matrixmarket":
        raise src.error(f"expected a '%%MatrixMarket matrix coordinate <field> <symmetry>' banner; got '{banner[:120]}'", ln)
    if len(tok) != 5:
        raise src.error(f"expected 5 words in the banner '%%MatrixMarket matrix coordinate <field> <symmetry>'; got '{banner[:120]}'", ln)
    obj, layout, field, sym = (t.lower() for t in tok[1:])
    if obj != "matrix":
        raise src.error(f"expected object 'matrix' in the banner; got '{tok[1]}'", ln)
    if layout == "array":
        raise src.error("expected a sparse 'coordinate' matrix; got a dense 'array' one (store the adjacency matrix as coordinate)", ln)
    if layout != "coordinate":
        raise src.error(f"expected format 'coordinate' in the banner; got '{tok[2]}'", ln)
    if field not in ("pattern", "integer", "real", "double"):
        if field == "complex":
            raise src.error("complex matrices are not graphs; expected field pattern, integer or real", ln)
        raise src.error(f"expected field pattern, integer or real in the banner; got '{tok[3]}'", ln)
    if sym not in ("general", "symmetric", "skew-symmetric"):
        if sym == "hermitian":
            raise src.error("'hermitian' applies to complex matrices, which are not graphs; expected general or symmetric", ln)
        raise src.error(f"expected symmetry general, symmetric or skew-symmetric in the banner; got '{tok[4]}'", ln)
    if sym == "skew-symmetric" and field == "pattern":
        raise src.error("a pattern matrix cannot be skew-symmetric", ln)
    size_line = None
    for ln, _, nxt, text in lines:
        s = text.strip()
        if not s or s.startswith("%"):
            continue
        size_line = (ln, nxt, s)
        break
    if size_line is None:
        raise src.error("file ended before the size line; expected 'rows cols nnz'", ln)
    ln, body, s = size_line
    parts = s.split()
    if len(parts) != 3 or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise src.error(f"expected the size line 'rows cols nnz' (3 non-negative integers); got '{s[:120]}'", ln)
    rows, cols, nnz = map(int, parts)
    if rows != cols:
        raise src.error(f"expected a square matrix (a graph's adjacency matrix); got {rows} x {cols} "
                        "(a rectangular matrix is a bipartite graph: build it with Graph.from_edges, "
                        f"ids j + {rows} for the columns)", ln)
    if rows == 0:
        raise src.error("the graph is empty (0 vertices)", ln)
    b0 = 1 if base is None else base
    ncols = 2 if field == "pattern" else 3
    wcol = 2 if (weighted and field != "pattern") else -1
    expect = "'row col'" if field == "pattern" else f"'row col value' with a{'n integer' if field == 'integer' else ' real'} value"
    s_, d_, w, allint, _, eline = _scan(src, body, ln + 1, comments=b"%", ncols=ncols, wcol=wcol,
                                        wkind=1 if field == "integer" else 2, max_records=nnz, expect=expect)
    if s_.size < nnz:
        raise src.error(f"file ended after {s_.size} of the {nnz} entries the size line promises "
                        "(truncated file?)", eline)
    cm = b"%"
    hint = f" (Matrix Market indices are {b0}-based)"
    _check_range(src, body, ln + 1, cm, s_, b0, rows - 1 + b0, "row index", hint)
    _check_range(src, body, ln + 1, cm, d_, b0, cols - 1 + b0, "column index", hint)
    _check_nan(src, body, ln + 1, cm, w)
    if w is not None:
        w = w.astype(np.int64) if field == "integer" else w
    if b0:
        s_ -= b0
        d_ -= b0
    return _Edges(s_, d_, w, rows, file_directed=(sym == "general" or sym == "skew-symmetric"),
                  mirror=sym != "general", negate_mirror=sym == "skew-symmetric", header=banner.strip(),
                  extra={"field": field, "symmetry": sym, "nnz": nnz})


def _parse_dimacs(src: _Source, base, weighted) -> _Edges:
    p = None
    ln = 0
    for ln, _, nxt, text in src.lines():
        s = text.strip()
        if not s or s[0] == "c":
            continue
        if s[0] == "p":
            p = (ln, nxt, s)
        break
    if p is None:
        raise src.error(f"expected a 'p sp n m' or 'p tw n m' line before the first edge; got '{text[:120]}'"
                        if ln and text.strip() else "expected a 'p sp n m' or 'p tw n m' line; found none", ln or 1)
    ln, body, s = p
    parts = s.split()
    kinds = {"sp": ("a", True), "tw": (None, False), "edge": ("e", False), "col": ("e", False)}
    if len(parts) != 4 or parts[1] not in kinds or not all(re.fullmatch(r"\d+", q) for q in parts[2:]):
        raise src.error(f"expected 'p sp n m' (or 'p tw n m', 'p edge n m'); got '{s[:120]}'", ln)
    kind = parts[1]
    n, m = int(parts[2]), int(parts[3])
    if n == 0:
        raise src.error(f"the graph is empty (0 vertices): '{s}'", ln)
    prefix, dir_ = kinds[kind]
    if kind == "sp":
        s_, d_, w, allint, _, eline = _scan(src, body, ln + 1, comments=b"c", prefix=ord("a"), ncols=3,
                                            wcol=2 if weighted else -1, wkind=2, max_records=m,
                                            expect="'a u v w' with integer ids u, v and a number w")
    else:
        s_, d_, w, allint, _, eline = _scan(src, body, ln + 1, comments=b"c", prefix=ord(prefix) if prefix else 0,
                                            ncols=2, max_records=m, expect="'u v' with integer ids"
                                            if prefix is None else f"'{prefix} u v' with integer ids")
    if s_.size < m:
        raise src.error(f"file ended after {s_.size} of the {m} edges the 'p' line promises (truncated file?)", eline)
    b0 = 1 if base is None else base
    hint = f" (DIMACS ids are {b0}-based, n = {n})"
    _check_range(src, body, ln + 1, b"c", s_, b0, n - 1 + b0, "vertex id", hint)
    _check_range(src, body, ln + 1, b"c", d_, b0, n - 1 + b0, "vertex id", hint)
    _check_nan(src, body, ln + 1, b"c", w)
    if b0:
        s_ -= b0
        d_ -= b0
    return _Edges(s_, d_, _weights(w, allint), n, file_directed=dir_, mirror=not dir_, header=s,
                  extra={"problem": kind, "m": m})


def _parse_edgelist(src: _Source, fmt, base, weighted, relabel) -> _Edges:
    comments = b"#%"
    file_directed = True
    pos, line = src.start, 1
    header_row = None
    for ln, start, nxt, text in src.lines():
        s = text.strip()
        if not s:
            continue
        if s[0] in "#%":
            if re.match(r"#\s*undirected graph", s, re.I):
                file_directed = False
            continue
        toks = [t for t in re.split(r"[\s,]+", s) if t]
        if fmt == "csv" and toks and not all(_is_number(t) for t in toks):
            header_row = s
            pos, line = nxt, ln + 1  # skip a CSV header row
        else:
            pos, line = start, ln
        break
    s_, d_, w, allint, ncols, eline = _scan(src, pos, line, comments=comments, ncols=0,
                                            wcol=2 if weighted else -1, wkind=2,
                                            expect="'u,v[,w]' with integer ids" if fmt == "csv"
                                            else "'u v [w]' with integer ids")
    if s_.size == 0:
        raise src.error(f"no edges found; expected {_EXPECT_HEAD[fmt]}", eline)
    _check_nan(src, pos, line, comments, w)
    lo = 0 if base is None else base
    _check_range(src, pos, line, comments, s_, lo, np.iinfo(np.int64).max, "vertex id", " (ids must be >= 0)"
                 if base is None else f" (ids are {base}-based)")
    _check_range(src, pos, line, comments, d_, lo, np.iinfo(np.int64).max, "vertex id", " (ids must be >= 0)"
                 if base is None else f" (ids are {base}-based)")
    if relabel is None:
        relabel = base is None
    if lo:
        s_ -= lo
        d_ -= lo
    labels = None
    if relabel:
        s_, d_, ids = _compact(s_, d_)
        n = int(ids.size)
        if not (ids.size and ids[0] == 0 and ids[-1] == n - 1):
            labels = ids + lo
    else:
        n = int(max(s_.max(), d_.max())) + 1
    extra = {"columns": ncols, "relabelled": labels is not None}
    if header_row is not None:
        extra["header_row"] = header_row
    return _Edges(s_, d_, _weights(w, allint), n, file_directed=file_directed, mirror=False,
                  header=None, labels=labels, extra=extra)


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


def _compact(s, d):
    """Number the distinct ids of ``s`` and ``d`` 0..k-1 in sorted order."""
    hi = int(max(s.max(), d.max()))
    if hi < max(4 * (s.size + d.size), 1 << 20):
        present = np.zeros(hi + 1, dtype=bool)
        present[s] = True
        present[d] = True
        ids = np.flatnonzero(present).astype(np.int64)
        if ids.size == hi + 1:
            return s, d, ids
        newid = np.cumsum(present, dtype=np.int64) - 1
        return newid[s], newid[d], ids
    ids, inv = np.unique(np.concatenate([s, d]), return_inverse=True)
    return inv[:s.size].astype(np.int64), inv[s.size:].astype(np.int64), ids


def _build(src: _Source, fmt, e: _Edges, opts) -> Graph:
    directed = e.file_directed if opts["directed"] is None else opts["directed"]
    undirected = (not directed) or opts["symmetrize"]
    s, d, w = e.src, e.dst, e.w
    if e.negate_mirror and undirected:
        raise InvalidArgumentError("a skew-symmetric matrix (w(v,u) = -w(u,v)) cannot be read as an undirected graph")
    if e.mirror and not undirected:
        off = s != d
        s, d = np.concatenate([s, d[off]]), np.concatenate([d, s[off]])
        if w is not None:
            w = np.concatenate([w, -w[off] if e.negate_mirror else w[off]])
    st = os.stat(src.path)
    meta = {"source": os.path.abspath(src.path), "format": fmt, "compression": src.compression,
            "size": st.st_size, "mtime": datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).isoformat(),
            "header": e.header, "records": int(e.src.size), "file_directed": e.file_directed,
            "options": dict(opts), **e.extra}
    src.data = src.b = None  # free the text before the CSR is built
    return Graph.from_edges(s, d, w, n=e.n, directed=not undirected, drop_self_loops=opts["drop_self_loops"],
                            dedup=opts["dedup"], labels=e.labels, meta=meta)


def _read_dgraph(path, directed, symmetrize, drop_self_loops, dedup, weighted) -> Graph:
    from ..formats import binary

    g = binary.load(path)
    undirected = symmetrize or directed is False
    change = (undirected and g.directed) or drop_self_loops or (not weighted and g.weights is not None) \
        or (directed is True and not g.directed)
    if not change:
        return g
    s, d, w = g.edges()
    return Graph.from_edges(np.asarray(s), np.asarray(d), None if not weighted or w is None else np.asarray(w),
                            n=g.n, directed=not (undirected or (not g.directed and directed is not True)),
                            drop_self_loops=drop_self_loops, dedup=dedup, labels=g.labels,
                            meta={**g.meta, "options": {"directed": directed, "symmetrize": symmetrize,
                                                        "drop_self_loops": drop_self_loops, "weighted": weighted}})
