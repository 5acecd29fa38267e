"""PageRank by power iteration (distgraph.algorithms.pagerank) against networkx.pagerank."""

import networkx as nx
import numpy as np
import pytest

from distgraph import Graph
from distgraph.algorithms.pagerank import pagerank
from distgraph.errors import ConvergenceError, InvalidArgumentError

# In-process CLI runs abort the job on an error when there are several ranks.
ONE_RANK = pytest.mark.skipif(__import__("mpi4py.MPI").MPI.COMM_WORLD.Get_size() > 1,
                              reason="runs the CLI in-process, or starts its own job")


def nx_ranks(g, **kw):
    G = g.to_networkx()
    pr = nx.pagerank(G, weight=None, **kw)
    return np.array([pr[v] for v in range(g.n)])


def test_hand_examples():
    cycle = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0])
    assert np.allclose(pagerank(cycle, backend="cpu"), 0.25, atol=1e-15)
    # 0 -> 1, 1 dangling: x1 = a*x0 + (a*x1 + 1-a)/2 and x0 = (a*x1 + 1-a)/2, x0 + x1 = 1
    two = Graph.from_edges([0], [1])
    a = 0.85
    x0 = 1 / (2 + a)
    pr = pagerank(two, tol=1e-14, max_iter=1000, backend="cpu")
    assert pr == pytest.approx([x0, 1 - x0], abs=1e-12)
    assert pagerank(Graph.from_edges([], [], n=3), backend="cpu").tolist() == pytest.approx([1 / 3] * 3)
    assert pagerank(Graph.from_edges([], [], n=0), backend="cpu").shape == (0,)


@pytest.mark.parametrize("fmt", ["csr", "k2tree"])
def test_matches_networkx_generated(fmt):
    graphs = [nx.gnp_random_graph(300, 0.01, directed=True, seed=1),     # dangling vertices
              nx.karate_club_graph(),                                    # undirected
              nx.scale_free_graph(500, seed=3),                          # multigraph with loops
              nx.DiGraph([(0, 1), (1, 2), (3, 4)])]                      # disconnected
    for G in graphs:
        if G.is_multigraph():
            G = nx.DiGraph(G)
        g = Graph.from_networkx(G)
        pr = pagerank(g, format=fmt, backend="cpu")
        ref = nx_ranks(g)
        assert np.abs(pr - ref).max() < 1e-8
        assert pr.sum() == pytest.approx(1.0, abs=1e-12)
    g = Graph.from_networkx(graphs[0])
    for alpha in (0.5, 0.99):
        assert np.abs(pagerank(g, alpha=alpha, max_iter=500, format=fmt, backend="cpu")
                      - nx_ranks(g, alpha=alpha, max_iter=500)).max() < 1e-8


def test_matches_networkx_real_and_kron(data_dir):
    from distgraph.generators import from_spec
    from distgraph.graph.readers import read_graph

    for g in [read_graph(data_dir / "wiki-Vote.txt.gz"), read_graph(data_dir / "bitcoin-otc.csv.gz"),
              read_graph(data_dir / "power.mtx.gz"), read_graph(data_dir / "minnesota.mtx.gz"),
              from_spec("kron:10")]:
        ref = nx_ranks(g)
        a = pagerank(g, format="csr", backend="cpu")
        b = pagerank(g, format="k2tree", tile=64, backend="cpu")
        assert np.abs(a - ref).max() < 1e-8
        assert np.array_equal(a, b)  # both formats sum in the same order


def test_tight_tolerance_and_iterations():
    G = nx.gnp_random_graph(200, 0.03, directed=True, seed=8)
    g = Graph.from_networkx(G)
    pr, it = pagerank(g, tol=1e-12, max_iter=1000, return_iterations=True, backend="cpu")
    ref = nx_ranks(g, tol=1e-12, max_iter=1000)
    assert np.abs(pr - ref).max() < 1e-12
    assert it > 10


def test_errors():
    g = Graph.from_edges([0, 1], [1, 0])
    with pytest.raises(InvalidArgumentError, match=r"alpha must be in \[0, 1\]"):
        pagerank(g, alpha=1.5, backend="cpu")
    with pytest.raises(InvalidArgumentError, match="tol must be > 0"):
        pagerank(g, tol=0, backend="cpu")
    with pytest.raises(InvalidArgumentError, match="max_iter must be >= 1"):
        pagerank(g, max_iter=0, backend="cpu")
    G = nx.gnp_random_graph(100, 0.05, directed=True, seed=2)
    with pytest.raises(ConvergenceError, match="did not converge in 2 iterations") as e:
        pagerank(Graph.from_networkx(G), max_iter=2, backend="cpu")
    assert e.value.iterations == 2 and e.value.error > 0


@pytest.mark.mpi
@pytest.mark.parametrize("fmt", ["csr", "k2tree"])
def test_mpi_identical_to_one_rank(comm, fmt, data_dir):
    from mpi4py import MPI

    from distgraph.graph.readers import read_graph

    ok = True
    for g in [read_graph(data_dir / "wiki-Vote.txt.gz"), read_graph(data_dir / "power.mtx.gz")]:
        solo = pagerank(g, format="csr", comm=MPI.COMM_SELF, backend="cpu")
        dist = pagerank(g, format=fmt, comm=comm, backend="cpu")
        ok &= np.array_equal(solo, dist)
    assert all(comm.allgather(bool(ok)))


@ONE_RANK
def test_cli_pagerank(tmp_path, data_dir, capsys):
    import json

    from distgraph.cli import main
    from distgraph.graph.readers import read_graph

    path = data_dir / "wiki-Vote.txt.gz"
    g = read_graph(path)
    out = tmp_path / "pr.npy"
    assert main(["pagerank", str(path), "--format", "k2tree", "--output", str(out), "--verify", "--json",
                 "--backend", "cpu"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["verified"] is True and s["iterations"] >= 1
    ref = nx_ranks(g)
    assert np.abs(np.load(out) - ref).max() < 1e-8
    assert s["top"][0][0] == int(g.input_ids()[np.argmax(ref)])  # input ids, not internal
    assert main(["pagerank", str(path), "--max-iter", "1", "--backend", "cpu"]) == 2
    assert "did not converge" in capsys.readouterr().err


@ONE_RANK
def test_cli_pagerank_two_ranks(data_dir):
    import json

    from distgraph.testing import run_cli

    res = run_cli("pagerank", data_dir / "power.mtx.gz", "--json", "--verify", "--backend", "cpu", n=2, timeout=240)
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout.strip().splitlines()[-1])
    assert s["ranks"] == 2 and s["verified"] is True
