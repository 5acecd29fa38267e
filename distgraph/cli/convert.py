"""``distgraph convert INPUT OUTPUT``: any graph file (or generator spec) to any format.

Reads INPUT with the usual graph flags, writes OUTPUT in the format its suffix names
(``.dgraph`` binary by default when OUTPUT has no known suffix: ``OUTPUT.dgraph``) and
prints a one-line summary (``--json``: one JSON object). Only rank 0 reads and writes;
the other ranks wait for its outcome and raise the same error if it failed.

The ``.dgraph`` file records how it was made: the source path, size, mtime and blake2b
checksum, the format and the reader options.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time

from .common import add_graph_arguments

NAME = "convert"
HELP = "convert a graph file (mtx, SNAP, CSV, DIMACS, generator spec) to .dgraph binary or another format"


def add_arguments(p) -> None:
    add_graph_arguments(p)
    p.add_argument("output", metavar="OUTPUT",
                   help="output file: .dgraph (binary, default), .mtx, .txt/.el, .csv or .gr, text ones optionally .gz/.xz/.bz2")
    p.add_argument("--csc", action="store_true", help="also store the in-arcs (CSC) of a directed graph in the .dgraph")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a line of text")


def _file_digest(path, chunk=1 << 24) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                return h.hexdigest()
            h.update(b)


def _output_path(out: str) -> str:
    from ..graph.readers import _COMPRESSION_EXT, _EXT_FORMAT

    root, ext = os.path.splitext(out.lower())
    if ext in _COMPRESSION_EXT:
        ext = os.path.splitext(root)[1]
    return out if ext in _EXT_FORMAT else out + ".dgraph"


def convert(args) -> dict:
    """Read ``args.graph``, write ``args.output``; returns the summary (rank 0 only)."""
    from ..graph.readers import read_graph
    from ..graph.writers import write_graph
    from .common import GRAPH_EXTS, check_outputs

    out = _output_path(args.output)
    check_outputs(None, [("OUTPUT", out, GRAPH_EXTS)])  # before the (maybe long) read; run() raises it on every rank
    t0 = time.perf_counter()
    spec = args.graph
    options = {"format": args.format, "directed": args.directed, "symmetrize": bool(args.symmetrize),
               "drop_self_loops": bool(args.drop_self_loops), "dedup": not args.keep_duplicates,
               "base": args.base, "weighted": not args.no_weights}
    if os.path.exists(spec):
        g = read_graph(spec, **options)
        st = os.stat(spec)
        provenance = {"source": os.path.abspath(spec), "size": st.st_size,
                      "mtime": datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).isoformat(),
                      "blake2b": _file_digest(spec), "format": g.meta.get("format"),
                      "compression": g.meta.get("compression"), "header": g.meta.get("header"), "options": options}
    else:
        from .common import load_graph

        g = load_graph(args)
        provenance = {"source": spec, "generator": True, "options": options}
    t_read = time.perf_counter() - t0
    t1 = time.perf_counter()
    if out.lower().endswith(".dgraph"):
        from ..formats import binary

        binary.save(g, out, provenance=provenance, csc=True if args.csc else None)
    else:
        write_graph(g, out)
    t_write = time.perf_counter() - t1
    return {"input": spec, "output": out, "vertices": g.n, "arcs": g.m, "edges": g.num_edges,
            "directed": g.directed, "weighted": g.weighted, "labels": g.labels is not None,
            "bytes": os.path.getsize(out), "read_s": round(t_read, 3), "write_s": round(t_write, 3)}


def run(args) -> int:
    from mpi4py import MPI

    from ..runtime.abort import collective_raise

    comm = MPI.COMM_WORLD
    summary, err = None, None
    if comm.Get_rank() == 0:
        try:
            summary = convert(args)
        except Exception as e:  # every rank raises it below
            err = e
    collective_raise(comm, err)
    if comm.Get_rank() == 0:
        if args.json:
            sys.stdout.write(json.dumps(summary) + "\n")
        else:
            kind = "directed" if summary["directed"] else "undirected"
            sys.stdout.write(f"{summary['input']} -> {summary['output']}: {kind}, {summary['vertices']} vertices, "
                             f"{summary['edges']} edges ({summary['arcs']} arcs){', weighted' if summary['weighted'] else ''}, "
                             f"{summary['bytes']} bytes; read {summary['read_s']:.2f} s, write {summary['write_s']:.2f} s\n")
        sys.stdout.flush()
    return 0
