"""What every benchmark script records beside its numbers: shell output and the commit.

Imported by the scripts of this folder (``from _common import sh, commit``; a script's own
folder is first on ``sys.path``).  On the GPU machine the copy of the tree has no ``.git``,
so ``commit()`` takes ``DISTGRAPH_COMMIT`` first (benchmarks/gpu_env.sh passes it on).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ROOT", "sh", "commit", "dirty", "ball_batches", "ball_batch_parser", "run_ball_model"]


def sh(cmd: str) -> str:
    """Stripped stdout of a shell command run in the repository root ('' or the error text on failure)."""
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30, cwd=ROOT).stdout.strip()
    except Exception as e:  # pragma: no cover
        return str(e)


def commit() -> str:
    """The commit measured: ``DISTGRAPH_COMMIT``, else ``git rev-parse HEAD``, else 'unknown'."""
    return os.environ.get("DISTGRAPH_COMMIT") or sh("git rev-parse HEAD") or "unknown"


def dirty():
    """Whether tracked files differ from the commit measured (None on a copy without .git,
    where ``DISTGRAPH_COMMIT`` names the commit)."""
    if os.environ.get("DISTGRAPH_COMMIT"):
        return None
    return bool(sh("git status --porcelain --untracked-files=no"))


def ball_batches(graph: str, kappa: int):
    """The graph the GPU closeness searches and its sources as closeness() batches them there,
    for host models of a batch: ``graph`` (a file of the data folder, DISTGRAPH_DATA or
    ../shared/data, or a generator spec) reordered with reorder "auto", and every vertex in
    compact BFS balls of ``kappa``. Returns ``(A, sources, info)``: A the reordered CSR as a
    scipy int8 matrix, sources (batch b is sources[b * kappa:(b + 1) * kappa]), the reordering's
    info."""
    import numpy as np
    import scipy.sparse as sp

    from distgraph.algorithms.msbfs import ball_sources
    from distgraph.formats.reorder import reorder_graph
    from distgraph.generators import from_spec, is_spec
    from distgraph.graph.readers import read_graph

    data = os.environ.get("DISTGRAPH_DATA") or str(ROOT.parent / "shared" / "data")
    g = from_spec(graph) if is_spec(graph) else read_graph(os.path.join(data, graph))
    g2, _, info = reorder_graph(g, "auto")
    n = g2.n
    A = sp.csr_matrix((np.ones(g2.indices.size, np.int8), g2.indices, g2.indptr), shape=(n, n))
    T = A.T.tocsr()
    return A, ball_sources(A.indptr, A.indices, T.indptr, T.indices, np.arange(n), kappa), info


def ball_batch_parser(description: str):
    """The arguments of the host models of a batch (graph, --kappa, --batches, --out), for
    :func:`ball_batches`."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("graph", help="a file of the data folder (DISTGRAPH_DATA or ../shared/data) or a generator spec")
    ap.add_argument("--kappa", type=int, default=256)
    ap.add_argument("--batches", type=int, nargs="+", default=[0], help="batch numbers (of kappa sources)")
    ap.add_argument("--out", required=True)
    return ap


def run_ball_model(name: str, doc: str, per_batch, argv=None, note: bool = True) -> dict:
    """The main of a host model of a batch: the arguments (:func:`ball_batch_parser`), the
    batches (:func:`ball_batches`), ``per_batch(A, sources)`` -> dict for each asked batch
    (printed, and OUT rewritten after each with the commit, date and, with ``note``, the
    docstring's first paragraph). Returns what it wrote."""
    import datetime
    import json

    a = ball_batch_parser(doc.split("\n\n")[0]).parse_args(argv)
    A, src, info = ball_batches(a.graph, a.kappa)
    n = A.shape[0]
    res = {"benchmark": name, "graph": a.graph, "vertices": n, "arcs": int(A.nnz), "reorder": info.get("method"),
           "kappa": a.kappa, "batches_total": -(-n // a.kappa), "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if note:
        res["note"] = doc.split("\n\n")[0]
    res["rows"] = []
    for b in a.batches:
        c = per_batch(A, src[b * a.kappa:(b + 1) * a.kappa])
        c["batch"] = b
        res["rows"].append(c)
        print(json.dumps(c), flush=True)
        Path(a.out).write_text(json.dumps(res, indent=1))
    return res
