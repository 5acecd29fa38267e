"""Readers and writers: the real files of shared/data against MANIFEST.md and independent
readers, tiny literal files with hand answers, every option, every malformed case we
could think of, and round trips through every writer."""

import bz2
import csv
import gzip
import io
import lzma
import math
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distgraph.errors import DistgraphError, GraphFormatError, InvalidArgumentError
from distgraph.graph import Graph
from distgraph.graph.readers import detect_format, read_graph
from distgraph.graph.writers import write_graph


def write(tmp_path, name, text, compress=None):
    data = text.encode() if isinstance(text, str) else text
    p = tmp_path / name
    if compress == "gz" or name.endswith(".gz"):
        data = gzip.compress(data)
    elif compress == "xz" or name.endswith(".xz"):
        data = lzma.compress(data)
    elif compress == "bz2" or name.endswith(".bz2"):
        data = bz2.compress(data)
    p.write_bytes(data)
    return p


def arcs(g):
    """Sorted (u, v[, w]) rows in input ids."""
    s, d, w = g.edges()
    ids = g.input_ids()
    cols = [ids[np.asarray(s)], ids[np.asarray(d)]]
    if w is not None:
        cols.append(np.asarray(w, dtype=np.float64))
    a = np.column_stack(cols) if cols[0].size else np.zeros((0, len(cols)))
    return a[np.lexsort(a.T[::-1])] if a.size else a


def same_csr(g, h):
    assert (g.n, g.m, g.directed) == (h.n, h.m, h.directed)
    assert np.array_equal(g.indptr, h.indptr)
    assert np.array_equal(g.indices, h.indices)
    if g.weights is None:
        assert h.weights is None
    else:
        assert np.array_equal(np.asarray(g.weights), np.asarray(h.weights))


# ---------------------------------------------------------------- shared/data vs MANIFEST.md
# file: (vertices, edges as stored, undirected pairs, directed, weight (min, max finite, #negative, #inf), loops)
MANIFEST = {
    "road-NY.gr.xz": (264346, 365050, 365050, False, None, 0),
    "road-FLA.gr.xz": (1070376, 1343951, 1343951, False, None, 0),
    "email-Enron.mtx.gz": (36692, 183831, 183831, False, None, 0),
    "cond-mat-2005.mtx.gz": (40421, 175693, 175693, False, (0.0344828, 46.0, 0, 2), 0),
    "wiki-Vote.txt.gz": (7115, 103689, 100762, True, None, 0),
    "bitcoin-otc.csv.gz": (5881, 35592, 21492, True, (-10, 10, 3563, 0), 0),
    "power.mtx.gz": (4941, 6594, 6594, False, None, 0),
    "minnesota.mtx.gz": (2642, 3303, 3303, False, None, 0),
}


@pytest.fixture(scope="module")
def data_graphs(data_dir):
    return {name: read_graph(data_dir / name) for name in MANIFEST}


def test_every_data_file_is_covered(data_dir):
    files = {p.name for p in data_dir.iterdir() if p.name != "MANIFEST.md"}
    assert files <= set(MANIFEST), f"files without expected counts: {files - set(MANIFEST)}"


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_data_file_matches_manifest(name, data_graphs, data_dir):
    n, stored, pairs, directed, wr, loops = MANIFEST[name]
    g = data_graphs[name]
    assert g.n == n
    assert g.directed == directed
    assert g.num_edges == stored
    assert g.num_self_loops() == loops
    assert g.meta["records"] == stored
    assert g.meta["source"] == str(data_dir / name)
    if wr is None:
        assert g.weights is None
    else:
        w = np.asarray(g.weights, dtype=np.float64)
        fin = w[np.isfinite(w)]
        assert fin.min() == pytest.approx(wr[0]) and fin.max() == pytest.approx(wr[1])
        assert np.count_nonzero(w < 0) == wr[2]  # arcs; directed files here
        assert np.count_nonzero(np.isinf(w)) == wr[3] * (1 if directed else 2)
    if directed:
        assert read_graph(data_dir / name, directed=False).num_edges == pairs


def test_cond_mat_isolated_and_inf(data_graphs):
    g = data_graphs["cond-mat-2005.mtx.gz"]
    assert np.count_nonzero(g.out_degree() == 0) == 844
    w = np.asarray(g.weights)
    s, d, _ = g.edges()
    inf = sorted({tuple(sorted((int(a) + 1, int(b) + 1))) for a, b in zip(s[np.isinf(w)], d[np.isinf(w)])})
    assert inf == [(18, 37694), (1772, 1773)]


@pytest.mark.parametrize("name", ["email-Enron.mtx.gz", "cond-mat-2005.mtx.gz", "power.mtx.gz", "minnesota.mtx.gz"])
def test_mtx_matches_scipy_mmread(name, data_graphs, data_dir):
    A = sp.csr_array(scipy.io.mmread(data_dir / name))
    A.sort_indices()
    g = data_graphs[name]
    assert np.array_equal(g.indptr, A.indptr) and np.array_equal(g.indices, A.indices)
    if g.weights is not None:
        assert np.array_equal(np.asarray(g.weights), A.data)  # bit-identical doubles, inf included


def test_wiki_vote_matches_networkx(data_graphs, data_dir):
    nx = pytest.importorskip("networkx")
    with gzip.open(data_dir / "wiki-Vote.txt.gz", "rt") as f:
        G = nx.read_edgelist(f, create_using=nx.DiGraph, nodetype=int)
    g = data_graphs["wiki-Vote.txt.gz"]
    assert g.n == G.number_of_nodes() == 7115
    assert g.labels.tolist() == sorted(G.nodes)
    ref = np.array(sorted(G.edges), dtype=np.int64)
    assert np.array_equal(arcs(g).astype(np.int64), ref)


def test_bitcoin_matches_csv_module(data_graphs, data_dir):
    with gzip.open(data_dir / "bitcoin-otc.csv.gz", "rt") as f:
        rows = np.array([[int(r[0]), int(r[1]), int(r[2])] for r in csv.reader(f)])
    g = data_graphs["bitcoin-otc.csv.gz"]
    assert g.weights.dtype.kind == "i"
    assert arcs(g).astype(int).tolist() == rows[np.lexsort(rows.T[::-1])].tolist()
    assert g.labels.tolist() == np.unique(rows[:, :2]).tolist()


def test_road_ny_matches_hand_parse(data_graphs, data_dir):
    text = lzma.decompress((data_dir / "road-NY.gr.xz").read_bytes()).decode()
    head, body = text.split("\n", 1)
    assert head.split() == ["p", "tw", "264346", "365050"] and "c" not in body
    uv = np.array(body.split(), dtype=np.int64).reshape(-1, 2) - 1
    g = data_graphs["road-NY.gr.xz"]
    ref = Graph.from_edges(uv[:, 0], uv[:, 1], n=264346, directed=False)
    same_csr(g, ref)


# ---------------------------------------------------------------- tiny literal files
def test_mtx_general_integer(tmp_path):
    p = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate integer general\n% c\n\n4 4 4\n1 2 5\n2 3 -1\n3 1 7\n4 4 2\n")
    g = read_graph(p)
    assert g.directed and g.n == 4 and g.weights.dtype == np.int64
    assert arcs(g).tolist() == [[0, 1, 5], [1, 2, -1], [2, 0, 7], [3, 3, 2]]
    assert read_graph(p, weighted=False).weights is None
    assert read_graph(p, drop_self_loops=True).m == 3


def test_mtx_symmetric_real_and_directed_override(tmp_path):
    p = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 0.5\n3 2 1e-3\n3 3 -2.5\n")
    g = read_graph(p)
    assert not g.directed and g.num_edges == 3 and g.m == 5
    assert arcs(g).tolist() == [[0, 1, 0.5], [1, 0, 0.5], [1, 2, 0.001], [2, 1, 0.001], [2, 2, -2.5]]
    h = read_graph(p, directed=True)  # both arcs of every edge, as a directed graph
    assert h.directed and arcs(h).tolist() == arcs(g).tolist()


def test_mtx_skew_symmetric_is_directed_with_negated_mirror(tmp_path):
    p = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 4\n3 1 -1\n")
    g = read_graph(p)
    assert g.directed and arcs(g).tolist() == [[0, 1, -4], [0, 2, 1], [1, 0, 4], [2, 0, -1]]
    with pytest.raises(InvalidArgumentError):
        read_graph(p, symmetrize=True)


def test_mtx_zero_based_and_isolated(tmp_path):
    p = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 2\n0 1\n1 4\n")
    g = read_graph(p, base=0)
    assert g.n == 5 and arcs(g).tolist() == [[0, 1], [1, 4]]


def test_dimacs_sp_tw_edge(tmp_path):
    p = write(tmp_path, "g.gr", "c comment\nc\np sp 4 4\na 1 2 3\nc mid\na 2 3 4\na 1 2 1\na 4 1 10\n")
    g = read_graph(p)
    assert g.directed and g.n == 4 and g.weights.dtype == np.int64
    assert arcs(g).tolist() == [[0, 1, 1], [1, 2, 4], [3, 0, 10]]  # duplicate: minimum kept
    assert read_graph(p, dedup=False).m == 4
    q = write(tmp_path, "t.gr", "p tw 4 3\n1 2\n2 3\n3 4\n")
    h = read_graph(q)
    assert not h.directed and h.num_edges == 3 and h.weights is None
    r = write(tmp_path, "e.col", "c clique format\np edge 3 2\ne 1 2\ne 2 3\n")
    assert read_graph(r).num_edges == 2


def test_dimacs_float_weights(tmp_path):
    p = write(tmp_path, "g.gr", "p sp 2 2\na 1 2 0.25\na 2 1 inf\n")
    g = read_graph(p)
    assert g.weights.dtype == np.float64 and arcs(g).tolist() == [[0, 1, 0.25], [1, 0, math.inf]]


def test_snap_comments_crlf_tabs_commas_blank(tmp_path):
    text = "# Directed graph\r\n# Nodes: 4\r\n10\t20\r\n\r\n20 ,  30\r\n  30\t10  \r\n# late comment\r\n40 10"
    p = write(tmp_path, "g.txt", text)
    g = read_graph(p)
    assert g.directed and g.n == 4 and g.labels.tolist() == [10, 20, 30, 40]
    assert arcs(g).tolist() == [[10, 20], [20, 30], [30, 10], [40, 10]]
    h = read_graph(p, relabel=False)
    assert h.n == 41 and h.labels is None
    k = read_graph(p, base=1)  # ids are positions 1..40
    assert k.n == 40 and k.labels is None and arcs(k)[0].tolist() == [9, 19]


def test_byte_order_mark_is_skipped(tmp_path):
    g = read_graph(write(tmp_path, "g.txt", b"\xef\xbb\xbf1 2\n2 3\n"))
    assert g.labels.tolist() == [1, 2, 3]
    h = read_graph(write(tmp_path, "g.mtx", b"\xef\xbb\xbf%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"))
    assert h.m == 1


def test_snap_undirected_header_and_contiguous_ids(tmp_path):
    p = write(tmp_path, "g.el", "# Undirected graph (each unordered pair of nodes is saved once)\n0 1\n1 2\n")
    g = read_graph(p)
    assert not g.directed and g.m == 4 and g.labels is None
    assert read_graph(p, directed=True).m == 2


def test_snap_weights_float_and_int(tmp_path):
    p = write(tmp_path, "g.txt", "1 2 0.5\n2 3 -7\n3 1 1e300\n")
    g = read_graph(p)
    assert g.weights.dtype == np.float64 and arcs(g)[:, 2].tolist() == [0.5, -7.0, 1e300]
    q = write(tmp_path, "h.txt", "1 2 3\n2 3 -7\n")
    assert read_graph(q).weights.dtype == np.int64


def test_csv_with_header_and_extra_columns(tmp_path):
    p = write(tmp_path, "g.csv", "src,dst,rating,time\n6,2,4,1289241911.72836\n6,5,-2,1289241941.5\n")
    g = read_graph(p)
    assert arcs(g).tolist() == [[6, 2, 4], [6, 5, -2]]
    assert g.meta["header_row"] == "src,dst,rating,time"


def test_symmetrize_dedup_keeps_minimum_weight(tmp_path):
    p = write(tmp_path, "g.txt", "0 1 5\n1 0 2\n0 1 9\n1 1 1\n")
    g = read_graph(p, symmetrize=True)
    assert not g.directed and arcs(g).tolist() == [[0, 1, 2], [1, 0, 2], [1, 1, 1]]
    h = read_graph(p, symmetrize=True, drop_self_loops=True)
    assert h.num_edges == 1


def test_float_parsing_is_exact(tmp_path):
    rng = np.random.default_rng(5)
    vals = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500),
                           rng.integers(-10**6, 10**6, 100) / 1000.0, [0.1, 0.2, 1 / 3, 5e-324, 1.7976931348623157e308]])
    toks = [repr(float(v)) for v in vals] + ["1e5", ".5", "5.", "-0.0", "1E-3", "+2", "inf", "-Infinity",
                                             "123456789012345678901234567890", "0.000000000000000000000000001"]
    text = "".join(f"{i} {i + 1} {t}\n" for i, t in enumerate(toks))
    g = read_graph(write(tmp_path, "g.txt", text), relabel=False)
    w = np.asarray(g.weights)[np.argsort(np.asarray(g.edges()[0]), kind="stable")]
    assert w.tolist() == [float(t) for t in toks]


@pytest.mark.parametrize("comp", ["gz", "xz", "bz2"])
def test_compressed_and_sniffed(tmp_path, comp):
    text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n"
    g = read_graph(write(tmp_path, f"g.mtx.{comp}", text))
    assert g.num_edges == 2 and g.meta["compression"] == {"gz": "gzip"}.get(comp, comp)
    h = read_graph(write(tmp_path, "noext.data", text, compress=comp))  # sniffed twice: compression, format
    assert h.meta["format"] == "mtx" and h.num_edges == 2


@pytest.mark.parametrize("head,fmt", [(b"%%MatrixMarket matrix", "mtx"), (b"c x\np sp 1 0\n", "dimacs"),
                                      (b"p tw 2 1\n1 2\n", "dimacs"), (b"# c\n1,2\n", "csv"), (b"1 2\n", "snap")])
def test_detect_format_sniff(head, fmt):
    assert detect_format("file.unknown", head) == fmt
    assert detect_format("x.gr.xz") == "dimacs" and detect_format("x.TXT.GZ") == "snap"


def test_bad_arguments(tmp_path):
    p = write(tmp_path, "g.txt", "1 2\n")
    with pytest.raises(InvalidArgumentError, match="format must be"):
        read_graph(p, format="xml")
    with pytest.raises(InvalidArgumentError, match="base must be"):
        read_graph(p, base=2)
    with pytest.raises(FileNotFoundError):
        read_graph(tmp_path / "missing.mtx")
    q = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    with pytest.raises(InvalidArgumentError, match="relabel"):
        read_graph(q, relabel=True)


# ---------------------------------------------------------------- malformed input
MTX = "%%MatrixMarket matrix coordinate {f} {s}\n"
BAD = [
    # name, file name, content, expected line, message fragment
    ("empty mtx", "g.mtx", "", 1, "file is empty"),
    ("empty el", "g.el", "", 1, "file is empty"),
    ("comments only", "g.el", "# nothing\n# here\n", 2, "no edges found"),
    ("bad banner", "g.mtx", "%%MatrixMarket matrix\n2 2 1\n1 2\n", 1, "5 words"),
    ("not mtx", "g.mtx", "2 2 1\n1 2\n", 1, "banner"),
    ("complex", "g.mtx", MTX.format(f="complex", s="general") + "2 2 1\n1 2 1 0\n", 1, "complex"),
    ("hermitian", "g.mtx", MTX.format(f="real", s="hermitian") + "2 2 1\n1 2 1\n", 1, "hermitian"),
    ("array", "g.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "dense"),
    ("no size line", "g.mtx", MTX.format(f="pattern", s="general") + "% only\n", 2, "size line"),
    ("bad size line", "g.mtx", MTX.format(f="pattern", s="general") + "2 x 1\n1 2\n", 2, "rows cols nnz"),
    ("non-square", "g.mtx", MTX.format(f="pattern", s="general") + "2 3 1\n1 2\n", 2, "square"),
    ("zero vertices", "g.mtx", MTX.format(f="pattern", s="general") + "0 0 0\n", 2, "empty"),
    ("truncated mtx", "g.mtx", MTX.format(f="pattern", s="general") + "3 3 3\n1 2\n2 3\n", 4, "2 of the 3 entries"),
    ("too many entries", "g.mtx", MTX.format(f="pattern", s="general") + "3 3 1\n1 2\n2 3\n", 4, "more entries"),
    ("non-integer id", "g.mtx", MTX.format(f="pattern", s="general") + "3 3 2\n1 2\n1.5 3\n", 4, "'1.5'"),
    ("id 0 in 1-based", "g.mtx", MTX.format(f="pattern", s="general") + "3 3 2\n1 2\n0 3\n", 4, "row index 0"),
    ("id > n", "g.mtx", MTX.format(f="pattern", s="symmetric") + "3 3 2\n2 1\n3 4\n", 4, "column index 4"),
    ("NaN weight", "g.mtx", MTX.format(f="real", s="general") + "3 3 2\n1 2 1.0\n2 3 nan\n", 4, "NaN"),
    ("missing value", "g.mtx", MTX.format(f="real", s="general") + "3 3 2\n1 2 1.0\n2 3\n", 4, "3 columns"),
    ("extra column", "g.mtx", MTX.format(f="pattern", s="general") + "3 3 1\n1 2 7\n", 3, "2 columns"),
    ("real in integer", "g.mtx", MTX.format(f="integer", s="general") + "3 3 1\n1 2 2.5\n", 3, "an integer"),
    ("bad weight", "g.mtx", MTX.format(f="real", s="general") + "3 3 1\n1 2 1.2.3\n", 3, "'1.2.3'"),
    ("bad exponent", "g.mtx", MTX.format(f="real", s="general") + "3 3 1\n1 2 1e\n", 3, "'1e'"),
    ("no p line", "g.gr", "c x\na 1 2 3\n", 2, "'p sp n m'"),
    ("empty graph p sp 0 0", "g.gr", "p sp 0 0\n", 1, "empty"),
    ("bad p line", "g.gr", "p max 3 3\n", 1, "'p sp n m'"),
    ("truncated gr", "g.gr", "p sp 3 3\na 1 2 1\na 2 3 1\n", 3, "2 of the 3 edges"),
    ("wrong line kind", "g.gr", "p sp 3 2\na 1 2 1\ne 2 3 1\n", 3, "'a u v w'"),
    ("second p line", "g.gr", "p sp 3 2\na 1 2 1\np sp 3 2\n", 3, "expected a line"),
    ("gr id 0", "g.gr", "p tw 3 2\n1 2\n0 3\n", 3, "vertex id 0"),
    ("gr id > n", "g.gr", "p sp 3 2\na 1 2 1\na 2 9 1\n", 3, "vertex id 9"),
    ("gr non-integer", "g.gr", "p tw 3 1\n1 x\n", 2, "'x'"),
    ("snap non-integer", "g.txt", "# c\n1 2\nfoo bar\n", 3, "'foo'"),
    ("snap ragged", "g.txt", "1 2 3\n2 3\n", 2, "3 columns"),
    ("snap one column", "g.txt", "1\n", 1, "at least 2"),
    ("snap negative", "g.txt", "1 2\n-3 4\n", 2, "vertex id -3"),
    ("snap huge id", "g.txt", "1 2\n1234567890123456789012 4\n", 2, "too large"),
    ("snap NaN", "g.txt", "1 2 1\n2 3 NaN\n", 2, "NaN"),
    ("snap base 1 id 0", "g.txt", "1 2\n0 1\n", 2, "1-based"),
    ("csv bad row", "g.csv", "a,b\n1,2\n3;4\n", 3, "'3;4'"),
]


@pytest.mark.parametrize("name,fname,text,line,frag", BAD, ids=[b[0] for b in BAD])
def test_malformed_raises_with_file_and_line(tmp_path, name, fname, text, line, frag):
    p = write(tmp_path, fname, text)
    kw = {"base": 1} if "base 1" in name else {}
    with pytest.raises(GraphFormatError) as ei:
        read_graph(p, **kw)
    e = ei.value
    assert isinstance(e, DistgraphError) and isinstance(e, ValueError)
    assert e.path == str(p) and e.line == line, str(e)
    assert str(e).startswith(f"{p}:{line}: ")
    assert frag in str(e)
    assert "\n" not in str(e)


@pytest.mark.parametrize("comp", ["gz", "xz", "bz2"])
def test_corrupted_compressed_file(tmp_path, comp):
    good = write(tmp_path, f"g.txt.{comp}", "1 2\n" * 1000).read_bytes()
    p = tmp_path / f"bad.txt.{comp}"
    p.write_bytes(good[: len(good) // 2])
    with pytest.raises(GraphFormatError, match="truncated or corrupted") as ei:
        read_graph(p)
    assert ei.value.path == str(p)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    p.write_bytes(bytes(bad))
    with pytest.raises(GraphFormatError):
        read_graph(p)


# ---------------------------------------------------------------- writers: round trips
@st.composite
def graphs(draw, min_arcs=0):
    n = draw(st.integers(1, 12))
    m = draw(st.integers(min_arcs, 30))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    kind = draw(st.sampled_from(["none", "int", "float"]))
    w = None
    if kind == "int":
        w = draw(st.lists(st.integers(-1000, 1000), min_size=m, max_size=m))
    elif kind == "float":
        w = draw(st.lists(st.floats(allow_nan=False, width=64), min_size=m, max_size=m))
    directed = draw(st.booleans())
    return Graph.from_edges(np.array(src, np.int64), np.array(dst, np.int64),
                            None if w is None else np.array(w), n=n, directed=directed)


@pytest.mark.parametrize("suffix", [".mtx", ".gr", ".mtx.gz", ".gr.bz2"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(g=graphs())
def test_round_trip_headered_formats(tmp_path, suffix, g):
    p = tmp_path / f"g{suffix}"
    write_graph(g, p)
    h = read_graph(p, directed=g.directed, weighted=g.weights is not None)
    same_csr(g, h)


@pytest.mark.parametrize("suffix", [".txt", ".el.gz", ".csv", ".tsv.xz"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(g=graphs(min_arcs=1))
def test_round_trip_edge_lists(tmp_path, suffix, g):
    p = tmp_path / f"g{suffix}"
    write_graph(g, p)
    h = read_graph(p, directed=g.directed)
    assert h.directed == g.directed
    assert arcs(h).tolist() == arcs(g).tolist()  # in input ids; vertices without arcs are not listed


def test_round_trip_labels_and_data_file(tmp_path, data_graphs):
    g = data_graphs["bitcoin-otc.csv.gz"]
    for name in ("b.csv", "b.txt.gz"):
        write_graph(g, tmp_path / name)
        h = read_graph(tmp_path / name)
        same_csr(g, h)
        assert np.array_equal(h.labels, g.labels)
    c = data_graphs["cond-mat-2005.mtx.gz"]
    write_graph(c, tmp_path / "c.mtx")
    same_csr(c, read_graph(tmp_path / "c.mtx"))


def test_write_graph_bad_suffix(tmp_path):
    g = Graph.from_edges([0], [1])
    with pytest.raises(InvalidArgumentError, match="path must end in"):
        write_graph(g, tmp_path / "g.xml")
    with pytest.raises(TypeError):
        write_graph("not a graph", tmp_path / "g.mtx")


# ---------------------------------------------------------------- fuzz: damaged bytes never crash
_FUZZ_SEEDS = {
    "g.mtx": b"%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 3\n2 1 0.5\n3 2 1e-3\n4 4 -2\n",
    "g.gr": b"c x\np sp 4 3\na 1 2 3\na 2 3 0.25\na 4 1 10\n",
    "g.txt": b"# c\n10\t20\t1.5\n20 30 2\n30,10,inf\n",
}


@pytest.mark.parametrize("name", sorted(_FUZZ_SEEDS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_bytes_raise_format_error_or_parse(tmp_path, name, data):
    raw = bytearray(_FUZZ_SEEDS[name])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        i = data.draw(st.integers(0, len(raw) - 1)) if raw else 0
        if op == "flip" and raw:
            raw[i] = data.draw(st.sampled_from(b" \t\r\n,.-+#%eEaAcp019x\x00\xff"))
        elif op == "cut":
            del raw[i:]
        else:
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=4))
    p = tmp_path / name
    p.write_bytes(bytes(raw))
    try:
        g = read_graph(p)
    except GraphFormatError as e:
        assert e.path == str(p) and "\n" not in str(e)
    except InvalidArgumentError:
        pass
    else:
        assert g.n >= 1 and g.indptr[-1] == g.m
