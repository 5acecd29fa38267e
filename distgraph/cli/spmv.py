"""``distgraph spmv GRAPH``: one semiring product on a k2-tree (or CSR).

    distgraph spmv road-NY.gr.xz --semiring min_plus --x d.npy --left --output y.npy
    mpiexec -n 4 distgraph spmv kron:18 --batch 16 --trials 5 --json

``--format`` here picks the storage of the product (``k2tree`` or ``csr``); the file
format of GRAPH is detected from its extension, or given with ``--input-format``.
X is a ``.npy`` holding one vector (length n) or an ``n x B`` batch, default all ones
(``--batch B`` columns); its rows and those of Y follow the graph's vertex order
(sorted input ids for a relabelled edge list). For a ``.dgraph`` binary graph on one
rank the k2-tree is stored beside it (``GRAPH.k2t.npz``) and reused; ``--reorder
degree|rcm`` builds it with the vertices renumbered (smaller trees for graphs with
scrambled ids, e.g. Kronecker; X and Y stay in the graph's vertex order, the
permutation is stored in the sidecar). Y is written with ``numpy.save``
(or as CSV ``vertex,value`` for one vector). ``--json`` reports the time per
product, the bytes of the matrix, its bits per edge and the working set.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import InvalidArgumentError, VerificationError
from .common import (VALUE_EXTS, add_graph_arguments, add_run_arguments, check_outputs, context_from_args, load_graph,
                     print_json)

NAME = "spmv"
HELP = "semiring sparse matrix-vector product (plus_times, lor_land, min_plus) on a k2-tree or CSR"


def add_storage_arguments(p, default_format: str) -> None:
    """``--format k2tree|csr`` and the k2-tree options (shared with ``pagerank``)."""
    p.conflict_handler = "resolve"  # our --format replaces the graph file's --format
    p.add_argument("--input-format", dest="format", default=None,
                   choices=("mtx", "snap", "csv", "dimacs", "dgraph"),
                   help="file format of GRAPH (default: from the extension)")
    s = p.add_argument_group("storage")
    s.add_argument("--format", dest="storage", choices=("k2tree", "csr"), default=default_format,
                   help="storage the products run on")
    s.add_argument("--tile", type=int, default=1 << 20, help="k2-tree: at most this many nodes per level of a tile")
    s.add_argument("--offsets", choices=("directory", "scan"), default="directory",
                   help="k2-tree: child offsets from the sampled directory or a scan")
    s.add_argument("--cached-frontier", action="store_true",
                   help="k2-tree: keep the codes of the last internal level (k2+F; faster, 8 bytes per node)")


def add_arguments(p) -> None:
    add_graph_arguments(p)
    add_run_arguments(p, output=False)
    add_storage_arguments(p, "k2tree")
    g = p.add_argument_group("product")
    g.add_argument("--semiring", choices=("plus_times", "lor_land", "min_plus"), default="plus_times",
                   help="semiring of the product")
    g.add_argument("--x", dest="x", default=None, metavar="X.npy",
                   help="input vector (n) or batch (n x B) as .npy; default all ones")
    g.add_argument("--left", action="store_true", help="left product y^T = x^T A (along the arcs) instead of A x")
    g.add_argument("--batch", type=int, default=None, help="number of vectors B when X is not given (default 1)")
    g.add_argument("--output", "-o", default=None, help="write Y (.npy, or .csv for one vector)")
    g.add_argument("--reorder", choices=("none", "degree", "rcm"), default="none",
                   help="renumber the vertices before building the matrix (k2-tree: smaller for scrambled ids, "
                        "e.g. Kronecker graphs; X and Y keep the graph's order)")


def _matrix(args, g, ctx):
    """The graph, or on one rank for a ``.dgraph`` file its k2-tree stored beside it
    (``GRAPH.k2t.npz``, built and written on first use)."""
    if args.storage == "k2tree" and ctx.size == 1 and str(args.graph).endswith(".dgraph") and os.path.isfile(args.graph):
        from ..formats.k2tree import tree_for_file

        return tree_for_file(g, args.graph, reorder=getattr(args, "reorder", None))
    return g


def _load_x(args, n):
    if args.x is None:
        B = 1 if args.batch is None else args.batch
        if B < 1:
            raise InvalidArgumentError(f"--batch must be >= 1; got {B}")
        return np.ones(n) if args.batch is None else np.ones((n, B))
    if not os.path.exists(args.x):
        raise InvalidArgumentError(f"--x must be an existing .npy file; got {args.x!r}")
    x = np.load(args.x, allow_pickle=False)
    if args.batch is not None and (x.ndim != 2 or x.shape[1] != args.batch):
        raise InvalidArgumentError(f"--batch {args.batch} disagrees with X of shape {x.shape}")
    return x


def _write_y(path, y, graph):
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.save(f, y)
        os.replace(tmp, path)
    elif y.ndim == 1:
        from .common import write_output

        write_output(path, y, graph, name="y")
    else:
        raise InvalidArgumentError(f"--output of a batch must end in .npy; got {path!r}")


def run(args) -> int:
    from ..algorithms.spmv import SpMVPlan
    from ..formats.k2tree import csr_nbytes

    ctx = context_from_args(args)
    check_outputs(ctx.comm, [("--output", args.output, VALUE_EXTS)])
    t0 = time.perf_counter()
    g = load_graph(args, ctx.comm)
    t_read = time.perf_counter() - t0
    x = _load_x(args, g.n)
    if x.ndim == 2:  # a batch's Y is written as .npy only
        check_outputs(ctx.comm, [("--output of a batch", args.output, (".npy",))])
    t0 = time.perf_counter()
    from ..formats.k2tree import K2Tree

    A = _matrix(args, g, ctx)
    plan = SpMVPlan(A, format=args.storage, tile=args.tile, offsets=args.offsets,
                    cached_frontier=args.cached_frontier, comm=ctx.comm, backend=args.backend,
                    reorder=None if isinstance(A, K2Tree) else args.reorder)  # a tree brings its own
    y = plan.multiply(x, args.semiring, args.left)  # builds this rank's block (and compiles)
    t_build = time.perf_counter() - t0
    times = []
    for _ in range(max(1, int(args.trials))):
        ctx.comm.Barrier()
        t = time.perf_counter()
        y = plan.multiply(x, args.semiring, args.left)
        times.append(time.perf_counter() - t)
    verified = None
    if args.verify:
        other = SpMVPlan(g, format="csr" if args.storage == "k2tree" else "k2tree", comm=ctx.comm, backend="cpu")
        ref = other.multiply(x, args.semiring, args.left)
        same = np.array_equal(y, ref) if args.semiring != "plus_times" else np.allclose(y, ref, rtol=1e-6, atol=1e-9)
        if not same:
            raise VerificationError(f"the {args.storage} product differs from the "
                                    f"{'csr' if args.storage == 'k2tree' else 'k2tree'} product")
        verified = True
    if ctx.rank == 0 and args.output:
        _write_y(args.output, y, g)
    B = 1 if x.ndim == 1 else x.shape[1]
    nb = plan.nbytes(batch=B, left=args.left, itemsize=y.dtype.itemsize)
    summary = {"command": "spmv", "graph": args.graph, "vertices": g.n, "arcs": g.m, "format": args.storage,
               "semiring": args.semiring, "left": bool(args.left), "batch": B, "time_s": min(times),
               "time_per_vector_s": min(times) / B, "times_s": times, "build_s": t_build, "read_s": t_read,
               "rank_bytes": nb, "csr_fp32_bytes": csr_nbytes(g.n, g.m), "csr_bool_bytes": csr_nbytes(g.n, g.m, 0),
               "ranks": ctx.size, "backend": ctx.backend, "verified": verified, "reorder": args.reorder}
    if args.storage == "k2tree":
        t = plan._block(args.left).tree
        summary.update({"k2_nodes_rank": t.num_nodes, "k2_bits_per_edge_rank": t.bits_per_edge()})
    if args.json:
        print_json(ctx, summary)
    elif ctx.rank == 0:
        extra = f", {summary['k2_bits_per_edge_rank']:.2f} bits/edge" if args.storage == "k2tree" else ""
        print(f"spmv {args.semiring} {'left' if args.left else 'right'} on {args.storage} ({g.n} vertices, "
              f"{g.m} arcs{extra}), batch {B}: best of {len(times)} {min(times):.6f} s"
              + (", verified" if verified else ""))
    return 0
