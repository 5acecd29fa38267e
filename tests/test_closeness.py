"""Exact closeness: every convention against its library (networkx, networkit,
igraph) on literal, generated and real graphs, directed or not, connected or not;
identical on 1, 2 and 4 ranks."""

import numpy as np
import pytest

from distgraph import Graph
from distgraph.algorithms.closeness import closeness, verify_closeness
from distgraph.errors import InvalidArgumentError, VerificationError

CONVS = ("networkx", "networkit", "igraph", "harmonic")


def nx_graph(g):
    return g.to_networkx()


def ref_networkx(g, convention):
    import networkx as nx

    G = nx_graph(g)
    d = nx.closeness_centrality(G) if convention == "networkx" else nx.harmonic_centrality(G)
    return np.array([d[i] for i in range(g.n)], dtype=np.float64)


def ref_networkit(g):
    import networkit as nk

    G = nk.Graph(g.n, directed=g.directed)
    src, dst, _ = g.edges()
    keep = (src != dst) if g.directed else (src < dst)
    for u, v in zip(src[keep].tolist(), dst[keep].tolist()):
        G.addEdge(u, v)
    c = nk.centrality.Closeness(G, True, nk.centrality.ClosenessVariant.GENERALIZED)
    c.run()
    return np.array(c.scores())


def ref_igraph(g):
    import igraph as ig

    src, dst, _ = g.edges()
    keep = (src != dst) if g.directed else (src < dst)
    G = ig.Graph(n=g.n, edges=list(zip(src[keep].tolist(), dst[keep].tolist())), directed=g.directed)
    return np.array(G.closeness(mode="out", normalized=True), dtype=np.float64)


def ref_sums_scipy(g, vertices, incoming):
    """farness, reach, harmonic of ``vertices`` from scipy's BFS distances."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import shortest_path

    A = sp.csr_array((np.ones(g.m), g.indices, g.indptr), shape=(g.n, g.n))
    if incoming:
        A = A.T.tocsr()
    D = shortest_path(A, unweighted=True, directed=g.directed, indices=vertices)
    fin = np.isfinite(D)
    far = np.where(fin, D, 0).sum(1).astype(np.uint64)
    with np.errstate(divide="ignore"):
        harm = np.where(fin & (D > 0), 1.0 / D, 0.0).sum(1)
    return far, fin.sum(1), harm


def close(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all((np.abs(a - b) <= 1e-12 * np.maximum(1.0, np.abs(b)))
                                              | (np.isnan(a) & np.isnan(b))))


def check_all_conventions(g):
    for conv in CONVS:
        got = closeness(g, convention=conv).closeness
        if conv in ("networkx", "harmonic"):
            ref = ref_networkx(g, conv)
        elif conv == "networkit":
            ref = ref_networkit(g)
        else:
            ref = ref_igraph(g)
        assert close(got, ref), (conv, np.nanmax(np.abs(got - ref)))


# ------------------------------------------------------------------ literal graphs
def test_path_by_hand():
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    r = closeness(g)
    assert r.farness.tolist() == [6, 4, 4, 6] and r.reach.tolist() == [4, 4, 4, 4]
    assert r.closeness.tolist() == [0.5, 0.75, 0.75, 0.5]
    assert r.harmonic.tolist() == [1 + 1 / 2 + 1 / 3, 2.5, 2.5, 1 + 1 / 2 + 1 / 3]
    assert r.farness.dtype == np.uint64 and r.reach.dtype == np.int64
    assert r.vertices.tolist() == [0, 1, 2, 3]


def test_directed_by_hand():
    # 0 -> 1 -> 2, and 3 isolated: incoming distances for networkx, outgoing for networkit
    g = Graph.from_edges([0, 1], [1, 2], n=4)
    nx_ = closeness(g).closeness
    # vertex 2: reached from 1 (d 1) and 0 (d 2): (2/3) * (2/3)
    assert nx_.tolist() == [0.0, (1 / 1) * (1 / 3), (2 / 3) * (2 / 3), 0.0]
    nk_ = closeness(g, convention="networkit").closeness
    assert nk_.tolist() == [(2 / 3) * (2 / 3), (1 / 1) * (1 / 3), 0.0, 0.0]
    ig_ = closeness(g, convention="igraph").closeness
    assert ig_[:2].tolist() == [2 / 3, 1.0] and np.isnan(ig_[2:]).all()
    assert closeness(g, convention="harmonic").closeness.tolist() == [0.0, 1.0, 1.5, 0.0]
    check_all_conventions(g)


def test_self_loops_duplicates_isolated():
    g = Graph.from_edges([0, 0, 1, 1, 2, 5], [0, 1, 1, 2, 1, 5], n=7, dedup=False)
    check_all_conventions(g)
    u = Graph.from_edges([0, 0, 1, 1, 2, 5], [0, 1, 1, 2, 1, 5], n=7, directed=False)
    check_all_conventions(u)


def test_tiny_graphs():
    check_all_conventions(Graph.from_edges([], [], n=1))
    check_all_conventions(Graph.from_edges([], [], n=3))
    check_all_conventions(Graph.from_edges([0], [1], n=2, directed=False))


# ------------------------------------------------------------- generated graphs
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("p", [0.004, 0.02])
def test_random_graphs_all_conventions(directed, p):
    import networkx as nx

    G = nx.gnp_random_graph(180, p, seed=11, directed=directed)
    G.add_edge(3, 3)
    check_all_conventions(Graph.from_networkx(G))


@pytest.mark.parametrize("spec", ["kron:8", "kron:8:directed", "urand:8:ef=2", "grid:12x15:drop=0.3",
                                  "rgg:8", "delaunay:8"])
def test_generators_all_conventions(spec):
    from distgraph.generators import from_spec

    check_all_conventions(from_spec(spec))


@pytest.mark.parametrize("batch_size", [3, 63, 64, 100, 200])
def test_batch_sizes_agree_bitwise(batch_size):
    from distgraph.generators import from_spec

    g = from_spec("kron:9:directed")
    a = closeness(g, convention="harmonic", batch_size=512)
    b = closeness(g, convention="harmonic", batch_size=batch_size)
    assert np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
    assert np.array_equal(a.harmonic, b.harmonic)  # exact fixed point: bit-identical


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("directed", [False, True])
def test_vertex_subset_equals_full(conv, directed):
    from distgraph.generators import from_spec

    g = from_spec("kron:9" + (":directed" if directed else ""))
    full = closeness(g, convention=conv)
    vs = np.array([5, 0, 511, 5, 77, 300])
    sub = closeness(g, vertices=vs, convention=conv, batch_size=4)
    assert sub.vertices.tolist() == vs.tolist()
    assert np.array_equal(sub.farness, full.farness[vs]) and np.array_equal(sub.reach, full.reach[vs])
    assert close(sub.harmonic, full.harmonic[vs]) and close(sub.closeness, full.closeness[vs])
    assert sub.closeness.size == 6 and closeness(g, vertices=[], convention=conv).closeness.size == 0


def test_threads_do_not_change_result():
    import numba

    from distgraph.generators import from_spec

    g = from_spec("urand:10:ef=4")
    old = numba.get_num_threads()
    a = closeness(g, batch_size=64)
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b = closeness(g, batch_size=64)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(a.farness, b.farness) and np.array_equal(a.harmonic, b.harmonic)


# ------------------------------------------------------------------ real graphs
@pytest.mark.parametrize("name", ["power.mtx.gz", "minnesota.mtx.gz", "wiki-Vote.txt.gz"])
def test_real_graphs_vs_networkit(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    assert close(closeness(g, convention="networkit").closeness, ref_networkit(g))
    if g.directed:  # networkx convention = networkit's formula on the reversed graph
        assert close(closeness(g).closeness, ref_networkit(g.transpose()))
    r = closeness(g, convention="harmonic")
    verify_closeness(g, r, sample=8)


@pytest.mark.parametrize("name", ["email-Enron.mtx.gz", "road-NY.gr.xz", "bitcoin-otc.csv.gz",
                                  "cond-mat-2005.mtx.gz"])
def test_real_graphs_subset_vs_scipy(data_dir, name):
    from distgraph.graph.readers import read_graph

    g = read_graph(str(data_dir / name))
    rng = np.random.default_rng(5)
    vs = rng.choice(g.n, size=8 if name.startswith("road") else 24, replace=False)
    for conv in ("networkx", "networkit") if g.directed else ("networkx",):
        incoming = conv == "networkx"
        r = closeness(g, vertices=vs, convention=conv)
        far, reach, harm = ref_sums_scipy(g, vs, incoming)
        assert np.array_equal(r.farness, far) and np.array_equal(r.reach, reach)
        assert close(r.harmonic, harm)


# ------------------------------------------------------------------ errors, CLI
def test_errors():
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidArgumentError, match="convention must be one of"):
        closeness(g, convention="nx")
    with pytest.raises(InvalidArgumentError, match=r"batch_size must be in \[1, 512\]; got 513"):
        closeness(g, batch_size=513)
    with pytest.raises(InvalidArgumentError, match=r"vertices must be vertex ids in \[0, 2\); got 7"):
        closeness(g, vertices=[0, 7])
    with pytest.raises(TypeError):
        closeness(g.to_scipy())
    r = closeness(g)
    r.farness[0] += 1
    with pytest.raises(VerificationError):
        verify_closeness(g, r)


def test_cli_closeness(tmp_path, data_dir):
    from distgraph.cli import main
    from distgraph.graph.readers import read_graph

    path = str(data_dir / "wiki-Vote.txt.gz")
    g = read_graph(path)
    out = tmp_path / "c.npy"
    assert main(["closeness", path, "--convention", "networkit", "--output", str(out), "--verify", "--json",
                 "--batch-size", "256"]) == 0
    assert close(np.load(out), ref_networkit(g))
    vf = tmp_path / "v.txt"
    vf.write_text("30 3\n8297\n")
    csv = tmp_path / "c.csv"
    assert main(["closeness", path, "--vertices", str(vf), "--output", str(csv)]) == 0
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    idx = np.searchsorted(g.labels, [30, 3, 8297])
    assert rows[:, 0].tolist() == [30, 3, 8297]
    assert close(rows[:, 1], closeness(g).closeness[idx])


def test_cli_vertices_file_errors(tmp_path):
    """--vertices: a missing file, text that is not integers, or a .npy of floats is an
    InvalidArgumentError naming the flag (was a bare OSError / ValueError, or floats
    silently truncated to ids)."""
    from distgraph.cli.common import read_vertex_ids

    def _read_vertices(path, g):  # closeness' --vertices reader (shared with sssp --sources)
        return read_vertex_ids(path, g, "--vertices")

    from distgraph.generators import from_spec

    g = from_spec("kron:6")
    with pytest.raises(InvalidArgumentError, match="--vertices must name a readable file"):
        _read_vertices(str(tmp_path / "missing.txt"), g)
    (tmp_path / "bad.txt").write_text("1 2 x\n")
    with pytest.raises(InvalidArgumentError, match="--vertices must hold integer vertex ids"):
        _read_vertices(str(tmp_path / "bad.txt"), g)
    np.save(tmp_path / "f.npy", np.array([1.5, 2.0]))
    with pytest.raises(InvalidArgumentError, match="dtype float64"):
        _read_vertices(str(tmp_path / "f.npy"), g)
    np.save(tmp_path / "ok.npy", np.array([[3], [1]], np.int32))
    assert [a.tolist() for a in _read_vertices(str(tmp_path / "ok.npy"), g)] == [[3, 1], [3, 1]]


def test_cli_headline_spec(tmp_path):
    from distgraph.cli import main

    out = tmp_path / "c.npy"
    assert main(["closeness", "kron:10", "--output", str(out)]) == 0
    from distgraph.generators import from_spec

    assert close(np.load(out), ref_networkit(from_spec("kron:10")))


def test_gpu_runner_closed_on_errors(monkeypatch, tmp_path):
    """closeness / msbfs on backend 'gpu' free the runner (its device and symmetric
    memory) also when the checkpoint is refused or a batch fails (host code, fake runner)."""
    from mpi4py import MPI

    import distgraph.backends.gpu.closeness as gpu_closeness
    import distgraph.runtime.context as context
    from distgraph.algorithms.msbfs import msbfs
    from distgraph.errors import CheckpointError

    closed = []

    class Runner:
        collective = False

        def __init__(self, fail):
            self.fail = fail

        def run(self, sources, per_source, out, defer=False):
            if self.fail:
                raise RuntimeError("batch failed")

        def close(self):
            closed.append(True)

    fail = [False]
    monkeypatch.setattr(context, "get_context",
                        lambda comm=None, backend=None: context.Context(MPI.COMM_SELF, 0, 1, 0, 1, "gpu", 0))
    monkeypatch.setattr(gpu_closeness, "make_runner", lambda *a, **k: Runner(fail[0]))
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], directed=False)
    ck = str(tmp_path / "ck")
    closeness(g, checkpoint=ck)
    assert len(closed) == 1
    with pytest.raises(CheckpointError, match="already holds a run"):
        closeness(g, checkpoint=ck)
    assert len(closed) == 2
    fail[0] = True
    with pytest.raises(RuntimeError, match="batch failed"):
        closeness(g)
    assert len(closed) == 3
    with pytest.raises(RuntimeError, match="batch failed"):
        msbfs(g, [0, 1])
    assert len(closed) == 4


# -------------------------------------------------------------------------- MPI
@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
@pytest.mark.parametrize("spec", ["kron:10:directed", "urand:9:ef=2", "grid:20x20:drop=0.5"])
def test_mpi_identical_to_one_rank(comm, spec, dynamic, monkeypatch):
    from mpi4py import MPI

    import distgraph.algorithms.msbfs as msbfs_mod
    from distgraph.generators import from_spec

    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)

    g = from_spec(spec)
    ok = []
    for conv, vs, bs in (("networkx", None, 64), ("networkit", None, 100), ("harmonic", None, 512),
                         ("igraph", np.arange(0, g.n, 3), 32)):
        r = closeness(g, convention=conv, vertices=vs, batch_size=bs, comm=comm)
        one = closeness(g, convention=conv, vertices=vs, batch_size=bs, comm=MPI.COMM_SELF)
        ok.append(np.array_equal(r.farness, one.farness) and np.array_equal(r.reach, one.reach)
                  and np.array_equal(r.harmonic, one.harmonic)
                  and np.array_equal(r.closeness, one.closeness, equal_nan=True))
    ok = comm.allgather(all(ok))
    assert all(ok)


@pytest.mark.mpi
def test_mpi_dealer_hands_out_each_batch_once(comm):
    """The first-come-first-served dealer: every batch id to exactly one rank, even when
    one rank is slow to ask."""
    import time

    from distgraph.algorithms.msbfs import _Dealer

    todo = np.arange(3, 40, dtype=np.int64)
    dealer = _Dealer(comm, todo)
    got = []
    for b in dealer:
        got.append(b)
        if comm.rank == 0:
            time.sleep(0.002)
    dealer.close()
    everything = sorted(sum(comm.allgather(got), []))
    assert everything == todo.tolist()


@pytest.mark.mpi
def test_mpi_progress_bar_counts_all_ranks(comm, capsys):
    from distgraph.generators import from_spec

    closeness(from_spec("kron:9"), batch_size=32, progress=True, comm=comm)
    err = capsys.readouterr().err
    ok = ("(all ranks)" in err and "100.0%" in err) if comm.rank == 0 and comm.size > 1 else True
    assert all(comm.allgather(ok))


def test_progress_bar_on_rank0(capsys):
    from mpi4py import MPI

    from distgraph.generators import from_spec

    closeness(from_spec("kron:9"), batch_size=32, progress=True, comm=MPI.COMM_SELF)
    err = capsys.readouterr().err
    assert "closeness batches" in err and "eta" in err and "100.0%" in err


def test_top_level_names():
    import distgraph

    g = Graph.from_edges([0, 1], [1, 2], directed=False)
    assert distgraph.closeness(g).closeness.tolist() == closeness(g).closeness.tolist()
    assert distgraph.bfs(g, 0).levels.tolist() == [0, 1, 2]
    assert distgraph.msbfs(g, [0]).distance_sum.tolist() == [0, 1, 2]
