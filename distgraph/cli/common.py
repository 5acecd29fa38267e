"""Flags and plumbing shared by every subcommand (as gapbs shares command_line.h).

Graph flags: ``GRAPH`` (a file, a ``.dgraph`` binary, or a generator spec such as
``kron:20`` / ``urand:18:seed=3``), ``--symmetrize``, ``--directed/--undirected``,
``--weighted``, ``--drop-self-loops``, ``--base``.
Run flags: ``--source S``, ``--trials N``, ``--verify``, ``--backend``, ``--seed``,
``--output PATH``, ``--json``.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["add_graph_arguments", "add_run_arguments", "load_graph", "write_output",
           "print_json", "context_from_args", "pick_sources", "resolve_source", "read_vertex_ids",
           "resolve_vertex_ids", "check_outputs", "VALUE_EXTS", "GRAPH_EXTS"]

#: Suffixes :func:`write_output` writes (one value per vertex).
VALUE_EXTS = (".npy", ".csv", ".parquet")
#: Stands for the graph formats :func:`distgraph.graph.writers.write_graph` writes.
GRAPH_EXTS = "graph"


def add_graph_arguments(p, weighted_default: bool = False) -> None:
    p.add_argument("graph", metavar="GRAPH",
                   help="graph file (.mtx, .txt/.el SNAP list, .csv, .gr DIMACS; .gz/.xz/.bz2 too; .dgraph binary) "
                        "or generator spec: kron:SCALE, urand:SCALE, grid:ROWSxCOLS, rgg:SCALE, delaunay:SCALE "
                        "with :key=value options (seed=, ef=, weights=)")
    g = p.add_argument_group("graph input")
    g.add_argument("--symmetrize", "-s", action="store_true", help="treat every arc as an undirected edge")
    d = g.add_mutually_exclusive_group()
    d.add_argument("--directed", dest="directed", action="store_const", const=True, default=None,
                   help="read an edge list as directed (the default for SNAP/CSV/.gr 'p sp')")
    d.add_argument("--undirected", dest="directed", action="store_const", const=False,
                   help="read an edge list as undirected")
    g.add_argument("--drop-self-loops", action="store_true", help="remove arcs v -> v")
    g.add_argument("--keep-duplicates", action="store_true", help="keep parallel arcs (default: keep one, of minimum weight)")
    g.add_argument("--base", type=int, choices=(0, 1), default=None,
                   help="first vertex id of an edge list (default: 1 for .mtx/.gr, ids as given for SNAP/CSV)")
    g.add_argument("--no-weights", action="store_true", help="ignore a weight column")
    g.add_argument("--format", default=None, choices=("mtx", "snap", "csv", "dimacs", "dgraph"),
                   help="file format (default: from the extension)")


def add_run_arguments(p, source: bool = False, output: bool = True) -> None:
    r = p.add_argument_group("run")
    if source:
        r.add_argument("--source", "-r", type=int, default=None,
                       help="source vertex (input id); default: picked at random with --seed among vertices with arcs")
    r.add_argument("--trials", "-n", type=int, default=1, help="number of timed trials")
    r.add_argument("--verify", "-v", action="store_true", help="check the result with the built-in verifier")
    r.add_argument("--backend", choices=("auto", "cpu", "gpu"), default=None,
                   help="compute backend (default: DISTGRAPH_BACKEND, else gpu when CuPy sees one)")
    r.add_argument("--seed", type=int, default=27491095, help="seed for picking sources")
    if output:
        r.add_argument("--output", "-o", default=None, help="write one value per vertex (.npy, .csv, .parquet)")
    r.add_argument("--json", action="store_true", help="rank 0 prints a one-line JSON summary")
    r.add_argument("--verbose-log", action="store_true", help="debug logging on every rank")


def add_progress_arguments(group, what: str = "") -> None:
    """``--progress`` / ``--no-progress`` (``args.progress``: True, False or None, the default:
    ``DISTGRAPH_PROGRESS``, else when stderr is a terminal)."""
    pr = group.add_mutually_exclusive_group()
    pr.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                    help=f"progress bar with ETA on rank 0{what} (default: when stderr is a terminal)")
    pr.add_argument("--no-progress", dest="progress", action="store_const", const=False)


def context_from_args(args):
    from ..runtime.context import get_context

    return get_context(backend=getattr(args, "backend", None))


def load_graph(args, comm=None):
    """Resolve GRAPH (file, binary or generator spec) into a :class:`Graph` on every rank."""
    spec = args.graph
    from ..generators import is_spec, from_spec

    sym = bool(getattr(args, "symmetrize", False))
    if is_spec(spec):
        g = from_spec(spec)
        if sym and g.directed:
            src, dst, w = g.edges()
            from ..graph import Graph

            g = Graph.from_edges(src, dst, w, n=g.n, directed=False, meta=g.meta)
        return g
    if not os.path.exists(spec):
        raise InvalidArgumentError(f"GRAPH must be an existing file or a generator spec (kron:20, urand:18, ...); got {spec!r}")
    from ..graph.readers import read_graph

    return read_graph(spec, format=getattr(args, "format", None), directed=getattr(args, "directed", None),
                      symmetrize=sym, drop_self_loops=getattr(args, "drop_self_loops", False),
                      dedup=not getattr(args, "keep_duplicates", False), base=getattr(args, "base", None),
                      weighted=not getattr(args, "no_weights", False))


def resolve_source(graph, source):
    """Map an input vertex id to the internal one (labels of relabelled edge lists)."""
    if source is None:
        return None
    if graph.labels is not None:
        pos = np.searchsorted(graph.labels, source)
        if pos >= graph.n or graph.labels[pos] != source:
            raise InvalidArgumentError(f"--source {source} is not a vertex of the graph (input ids {graph.labels[0]}..{graph.labels[-1]})")
        return int(pos)
    if not 0 <= source < graph.n:
        raise InvalidArgumentError(f"--source must be in [0, {graph.n}); got {source}")
    return int(source)


def read_vertex_ids(path, graph, flag: str):
    """The input vertex ids in the file ``path`` (.npy, or text: whitespace separated) as
    ``(internal ids, input ids)``, int64; errors name ``flag`` (the option), the file and the
    bad value."""
    try:
        if str(path).endswith(".npy"):
            ids = np.load(path)
        else:
            with open(path) as f:
                ids = np.array(f.read().split(), dtype=np.int64)
    except OSError as e:
        raise InvalidArgumentError(f"{flag} must name a readable file of vertex ids; got {path!r} "
                                   f"({e.strerror or e})") from None
    except ValueError as e:
        raise InvalidArgumentError(f"{flag} must hold integer vertex ids; {path} has: {e}") from None
    ids = np.asarray(ids)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise InvalidArgumentError(f"{flag} must hold integer vertex ids; {path} has dtype {ids.dtype}")
    ids = ids.astype(np.int64).ravel()
    return resolve_vertex_ids(graph, ids, flag, f"in {path}"), ids


def resolve_vertex_ids(graph, ids, flag: str, where: str = ""):
    """The internal ids of the input vertex ids ``ids`` (vectorized :func:`resolve_source`);
    a bad one raises an error naming ``flag`` and ``where`` they came from."""
    ids = np.asarray(ids, dtype=np.int64)
    if graph.labels is None:
        bad = ids[(ids < 0) | (ids >= graph.n)]
        if bad.size:
            raise InvalidArgumentError(f"{flag} must hold ids in [0, {graph.n}); got {int(bad[0])}"
                                       + (f" {where}" if where else ""))
        return ids
    pos = np.searchsorted(graph.labels, ids)
    ok = (pos < graph.n) & (graph.labels[np.minimum(pos, graph.n - 1)] == ids)
    if not ok.all():
        raise InvalidArgumentError(f"{flag} lists {int(ids[~ok][0])}, which is not a vertex of the graph"
                                   + (f" ({where})" if where else ""))
    return pos.astype(np.int64)


def pick_sources(graph, k: int, seed: int) -> np.ndarray:
    """``k`` sources drawn with ``seed`` among vertices with at least one out-arc (gapbs SourcePicker)."""
    rng = np.random.default_rng(seed)
    cand = np.flatnonzero(np.diff(graph.indptr) > 0)
    if cand.size == 0:
        cand = np.arange(graph.n)
    if cand.size == 0:
        raise InvalidArgumentError("graph has no vertices to pick a source from")
    return rng.choice(cand, size=k, replace=True)


def _output_problem(flag: str, path, exts, why: str = "") -> str | None:
    """What would keep ``path`` (given as ``flag``) from being written, or None; ``why``
    follows the suffixes expected in the message."""
    path = os.fspath(path)
    if exts == GRAPH_EXTS:
        from ..graph.readers import _COMPRESSION_EXT, _EXT_FORMAT

        root, ext = os.path.splitext(os.path.basename(path).lower())
        comp = ext in _COMPRESSION_EXT
        if comp:
            ext = os.path.splitext(root)[1]
        if ext not in _EXT_FORMAT:
            names = ", ".join(sorted(_EXT_FORMAT))
            return f"{flag} must end in one of {names} (text ones optionally .gz/.xz/.bz2); got {path!r}"
        if comp and ext == ".dgraph":
            return f"{flag}: a .dgraph file is memory-mapped and cannot be compressed; got {path!r}"
    elif exts:
        ext = os.path.splitext(path)[1].lower()
        if ext not in exts:
            names = ", ".join(exts[:-1]) + " or " + exts[-1] if len(exts) > 1 else exts[0]
            return f"{flag} must end in {names}{why}; got {path!r}"
        if ext == ".parquet":
            import importlib.util

            if importlib.util.find_spec("pyarrow") is None:
                return f"{flag} {path!r}: writing .parquet needs pyarrow (pip install pyarrow), or use .npy or .csv"
    if os.path.isdir(path):
        return f"{flag} must name a file; {path!r} is a directory"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"{flag} {path!r}: its directory {parent!r} does not exist (create it first)"
    if not os.access(parent, os.W_OK | os.X_OK):  # the writers replace PATH by a file made beside it
        return f"{flag} {path!r}: its directory {parent!r} is not writable"
    return None


def check_outputs(comm, outputs) -> None:
    """Check, before any work, that every output can be written, so that a long run does not
    end in an error that loses its results. ``outputs``: ``(flag, path, exts[, why])``, where
    ``path`` None is skipped, ``exts`` is a tuple of suffixes (:data:`VALUE_EXTS`), None (any)
    or :data:`GRAPH_EXTS`, and ``why`` says in the message why only those suffixes.

    Checked: the suffix (and pyarrow for .parquet), that the path is no directory, that its
    directory exists and is writable, and that no two flags name the same file. Rank 0, which
    writes the outputs, looks; every rank of ``comm`` then raises the same
    :class:`InvalidArgumentError` (a collective call)."""
    from ..runtime.abort import collective_raise

    err = None
    if comm is None or comm.Get_rank() == 0:
        seen = {}
        for flag, path, exts, *why in outputs:
            if path is None:
                continue
            msg = _output_problem(flag, path, exts, *why)
            key = os.path.abspath(os.fspath(path))
            if msg is None and key in seen:
                msg = f"{seen[key]} and {flag} name the same file {os.fspath(path)!r}"
            seen.setdefault(key, flag)
            if msg is not None:
                err = InvalidArgumentError(msg)
                break
    collective_raise(comm, err)


def write_output(path, values, graph, name: str = "value") -> None:
    """Write one value per vertex in input order: .npy, .csv (vertex,value) or .parquet."""
    values = np.asarray(values)
    ext = os.path.splitext(path)[1].lower()
    tmp = path + ".tmp"
    if ext == ".npy":
        with open(tmp, "wb") as f:
            np.save(f, values)
    elif ext == ".csv":
        ids = graph.input_ids()
        with open(tmp, "w") as f:
            f.write(f"vertex,{name}\n")
            if values.size:
                fmt = "%d,%d" if values.dtype.kind in "iub" else "%d,%.17g"
                np.savetxt(f, np.column_stack([ids, values]) if values.dtype.kind in "iub" else
                           np.rec.fromarrays([ids, values]), fmt=fmt)
    elif ext == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("writing .parquet needs pyarrow: pip install pyarrow") from None
        pq.write_table(pa.table({"vertex": graph.input_ids(), name: values}), tmp)
    else:
        raise InvalidArgumentError(f"--output must end in .npy, .csv or .parquet; got {path!r}")
    os.replace(tmp, path)


def print_json(ctx, summary: dict) -> None:
    if ctx.rank == 0:
        sys.stdout.write(json.dumps(summary, default=_jsonable) + "\n")
        sys.stdout.flush()


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
