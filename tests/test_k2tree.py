"""k2-tree construction, layout, directory, sizes and files (distgraph.formats.k2tree)."""

import numpy as np
import pytest
import scipy.sparse as sp

from distgraph.errors import GraphFormatError, InvalidArgumentError
from distgraph.formats.k2tree import K2Tree, csr_nbytes, morton_decode, morton_encode

# Figure 1 of Tosoni & Mencagli: an 8 x 8 matrix, its signatures written there bit 0
# first ("1010" = bits 0 and 2), here as integers.
FIG1_CELLS = [(1, 1), (0, 4), (1, 5), (3, 5), (5, 1), (5, 2), (6, 1), (6, 2), (6, 6), (6, 7), (7, 6), (7, 7)]
FIG1_SIGS = [0b1111,                       # root "1111"
             0b0001, 0b0101, 0b1111, 0b1000,  # level 1: "1000" "1010" "1111" "0001"
             0b1000, 0b1001, 0b1000, 0b1000, 0b0100, 0b0010, 0b0001, 0b1111]  # leaves


def _fig1():
    r, c = np.array(FIG1_CELLS).T
    return K2Tree.from_coo(r, c, (8, 8), sample=2, top_nodes=1)


def test_paper_figure_1_signatures_and_levels():
    t = _fig1()
    assert t.levels == 3
    assert t.signatures().tolist() == FIG1_SIGS
    assert t.level_start.tolist() == [0, 1, 5, 13]
    assert t.nnz == 12
    # codes of level 1 are 00 01 10 11; the leaves' codes are those of the figure
    assert t.level_codes(1).tolist() == [0, 1, 2, 3]
    leaf_codes = [0b0000, 0b0100, 0b0110, 0b1000, 0b1001, 0b1010, 0b1011, 0b1111]
    assert t.level_codes(2).tolist() == leaf_codes
    # directory with S = 2 stores the first child of nodes 0, 2, 4, ...: the child
    # offsets 0 and 3 of the figure's level 1 are nodes 5 + 0 and 5 + 3.
    first = 1 + np.concatenate([[0], np.cumsum([bin(s).count("1") for s in FIG1_SIGS])])
    assert t.directory.tolist() == first[0:13:2].tolist()
    assert first[1] == 5 and first[2] == 5 + 1 and first[3] == 5 + 3 and first[4] == 5 + 7


def test_paper_figure_1_cell_3_5_path():
    # the path of cell (3, 5) is 01 10 11
    assert int(morton_encode(np.array([3]), np.array([5]))[0]) == 0b011011
    r, c = morton_decode(np.array([0b011011], dtype=np.uint64))
    assert (int(r[0]), int(c[0])) == (3, 5)


def test_tiny_hand_example():
    t = K2Tree.from_coo([0, 0, 3], [0, 1, 3], (4, 4))
    assert t.levels == 2
    assert t.signatures().tolist() == [0b1001, 0b0011, 0b1000]
    assert t.sig.tolist() == [0b1001 | (0b0011 << 4), 0b1000]  # two nibbles per byte, low first
    assert t.bits_per_edge() == pytest.approx(4 * 3 / 3)


def test_morton_roundtrip_random():
    rng = np.random.default_rng(5)
    r = rng.integers(0, 2**32, 1000, dtype=np.uint64)
    c = rng.integers(0, 2**32, 1000, dtype=np.uint64)
    rr, cc = morton_decode(morton_encode(r, c))
    assert (rr == r.astype(np.int64)).all() and (cc == c.astype(np.int64)).all()
    # Morton order within a fixed row is column order (what makes products exact)
    codes = morton_encode(np.full(50, 12345), np.arange(50))
    assert (np.diff(codes.astype(np.float64)) > 0).all()


@pytest.mark.parametrize("shape,density,seed", [((37, 50), 0.1, 1), ((200, 13), 0.2, 2), ((1, 1), 1.0, 3),
                                                ((513, 700), 0.01, 4), ((64, 64), 0.5, 5)])
def test_roundtrip_random(shape, density, seed):
    A = sp.random(*shape, density=density, random_state=seed, format="coo")
    t = K2Tree.from_coo(A.row, A.col, shape, sample=4, top_nodes=8)
    B = t.to_scipy()
    assert B.shape == shape
    assert (B != (A != 0)).nnz == 0
    assert t.nnz == A.nnz
    r, c = t.to_coo()  # Morton order
    codes = morton_encode(r, c).astype(np.float64)
    assert (np.diff(codes) > 0).all()


def test_duplicates_merged_and_empty():
    t = K2Tree.from_coo([2, 2, 2], [1, 1, 1], (5, 5))
    assert t.nnz == 1 and t.to_coo()[0].tolist() == [2]
    e = K2Tree.from_coo([], [], (7, 3))
    assert e.num_nodes == 0 and e.nnz == 0 and e.bits_per_edge() == 0.0
    assert e.to_scipy().nnz == 0


def test_levels_never_shrink_and_top_level():
    A = sp.random(1000, 1000, density=0.01, random_state=9, format="coo")
    t = K2Tree.from_coo(A.row, A.col, A.shape, top_nodes=100)
    sizes = t.level_sizes()
    assert (np.diff(sizes) >= 0).all()
    assert sizes[t.top_level] <= 100 and (t.top_level == t.levels - 2 or sizes[t.top_level + 1] > 100)
    assert t.top_codes.tolist() == t.level_codes(t.top_level).tolist()
    assert t.level_codes(t.levels - 2).tolist() == t.with_frontier().frontier.tolist()


def test_directory_matches_rank():
    A = sp.random(300, 300, density=0.05, random_state=3, format="coo")
    for S in (2, 16, 256):
        t = K2Tree.from_coo(A.row, A.col, A.shape, sample=S)
        pops = np.array([bin(s).count("1") for s in range(16)])[t.signatures()]
        first = 1 + np.concatenate([[0], np.cumsum(pops)])
        assert t.directory.tolist() == first[0:t.num_nodes:S].tolist()
        assert t.directory.dtype == np.uint32
        # every node but the root is the child of one set bit of an internal node,
        # in level order; the set bits of the leaves are the non-zeros
        internal = int(t.level_start[t.levels - 1])
        assert first[internal] == t.num_nodes
        assert first[t.num_nodes] - first[internal] == t.nnz


def test_sizes():
    A = sp.random(1000, 1000, density=0.005, random_state=7, format="coo")
    t = K2Tree.from_coo(A.row, A.col, A.shape)
    nb = t.nbytes()
    assert nb["tree"] == (t.num_nodes + 1) // 2
    assert nb["directory"] == 4 * ((t.num_nodes + 255) // 256)
    assert nb["engine"] == nb["tree"] + nb["directory"] + nb["top"]
    assert nb["engine_f"] == nb["engine"] + 8 * int(t.level_sizes()[t.levels - 2])
    assert t.bits_per_edge() == pytest.approx(4 * t.num_nodes / t.nnz)
    assert csr_nbytes(1000, t.nnz) == 4 * 1001 + 8 * t.nnz
    assert csr_nbytes(1000, t.nnz, values=0) == 4 * 1001 + 4 * t.nnz


def test_save_load(tmp_path):
    A = sp.random(90, 120, density=0.05, random_state=1, format="coo")
    t = K2Tree.from_coo(A.row, A.col, A.shape, sample=8)
    t.save(tmp_path / "a.k2t.npz")
    u = K2Tree.load(tmp_path / "a.k2t.npz", cached_frontier=True)
    assert u.shape == t.shape and u.nnz == t.nnz and u.sample == 8
    assert (u.sig == t.sig).all() and (u.level_start == t.level_start).all()
    assert (u.directory == t.directory).all() and (u.top_codes == t.top_codes).all()
    assert (u.frontier == t.level_codes(t.levels - 2)).all()
    np.save(tmp_path / "bad.npy", np.zeros(3))
    np.savez(tmp_path / "bad.npz", x=np.zeros(3))
    with pytest.raises(GraphFormatError, match="not a distgraph k2-tree"):
        K2Tree.load(tmp_path / "bad.npz")


def test_errors():
    with pytest.raises(InvalidArgumentError, match="coordinates must lie"):
        K2Tree.from_coo([0, 5], [0, 1], (5, 5))
    with pytest.raises(InvalidArgumentError, match="sample must be"):
        K2Tree.from_coo([0], [0], (2, 2), sample=3)
    with pytest.raises(InvalidArgumentError, match="shape must be at most"):
        K2Tree.from_coo([0], [0], (2**33, 2))
    with pytest.raises(TypeError, match="scipy.sparse"):
        K2Tree.from_scipy(np.zeros((2, 2)))


def test_from_graph_generated_and_real(data_dir):
    from distgraph.generators import from_spec
    from distgraph.graph.readers import read_graph

    graphs = [from_spec("kron:10"), from_spec("grid:10"), read_graph(data_dir / "power.mtx.gz"),
              read_graph(data_dir / "wiki-Vote.txt.gz"), read_graph(data_dir / "minnesota.mtx.gz")]
    for g in graphs:
        t = K2Tree.from_graph(g)
        assert t.nnz == g.m
        assert (t.to_scipy() != g.to_scipy()).nnz == 0
        assert 0 < t.bits_per_edge() < 64


def test_tree_stored_with_binary_graph(tmp_path):
    import os

    from distgraph.formats import binary
    from distgraph.formats.k2tree import sidecar_path, tree_for_file
    from distgraph.generators import from_spec

    g = from_spec("kron:8")
    path = tmp_path / "k8.dgraph"
    binary.save(g, path)
    g2 = binary.load(path)
    t = tree_for_file(g2, path)
    side = sidecar_path(path)
    assert os.path.exists(side) and side.endswith("k8.dgraph.k2t.npz")
    before = os.stat(side).st_mtime_ns
    u = tree_for_file(g2, path)  # read back, not rebuilt
    assert os.stat(side).st_mtime_ns == before and (u.sig == t.sig).all() and u.meta == t.meta
    assert (u.to_scipy() != g.to_scipy()).nnz == 0
    binary.save(from_spec("kron:7"), path)  # a different graph under the same name: rebuilt
    g3 = binary.load(path)
    v = tree_for_file(g3, path)
    assert v.shape == (128, 128) and (v.to_scipy() != g3.to_scipy()).nnz == 0


def _reference_levels(rows, cols, L):
    """Signatures per level by the per-level sort/reduce of the first version (an
    independent reference for the numba passes)."""
    codes = np.unique(morton_encode(np.asarray(rows), np.asarray(cols)))
    sigs = [None] * L
    child = codes
    for d in range(L - 1, -1, -1):
        parent = child >> np.uint64(2)
        start = np.flatnonzero(np.concatenate(([True], parent[1:] != parent[:-1])))
        bits = (np.uint8(1) << (child & np.uint64(3)).astype(np.uint8)).astype(np.uint8)
        sigs[d] = np.bitwise_or.reduceat(bits, start)
        child = parent[start]
    return sigs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_build_matches_reference(seed):
    rng = np.random.default_rng(seed)
    nr, nc = [(300, 200), (1000, 1000), (17, 900)][seed]
    m = [500, 20000, 300][seed]
    r = rng.integers(0, nr, m)
    c = rng.integers(0, nc, m)
    r[: m // 10] = r[0]  # a dense row and repeated cells
    t = K2Tree.from_coo(np.r_[r, r[:50]], np.r_[c, c[:50]], (nr, nc), sample=8)
    ref = _reference_levels(r, c, t.levels)
    assert t.signatures().tolist() == np.concatenate(ref).tolist()
    assert np.diff(t.level_start).tolist() == [len(s) for s in ref]
    A = sp.csr_array((np.ones(m), (r, c)), shape=(nr, nc))
    A.sum_duplicates()
    u = K2Tree.from_csr(A.indptr, A.indices, (nr, nc), sample=8)  # the numba encoding of a CSR
    assert np.array_equal(u.sig, t.sig) and np.array_equal(u.directory, t.directory)
    v = K2Tree.from_codes(np.sort(morton_encode(r, c)), (nr, nc), presorted=True, sample=8, cached_frontier=True)
    assert np.array_equal(v.sig, t.sig) and np.array_equal(v.frontier, t.level_codes(t.levels - 2))


def test_from_codes_and_from_csr_validate():
    codes = morton_encode(np.array([0, 3, 1]), np.array([1, 2, 0]))
    with pytest.raises(InvalidArgumentError, match="sorted"):
        K2Tree.from_codes(codes, (4, 4), presorted=True)
    assert K2Tree.from_codes(codes, (4, 4)).nnz == 3
    with pytest.raises(InvalidArgumentError, match="codes must lie in"):
        K2Tree.from_codes(codes, (3, 4))
    with pytest.raises(InvalidArgumentError, match="coordinates must lie"):
        K2Tree.from_csr(np.array([0, 1, 2]), np.array([0, 5]), (2, 2))  # column out of range: from_coo says so
    with pytest.raises(TypeError, match="unexpected keyword"):
        K2Tree.from_csr(np.array([0, 1]), np.array([0]), levels=3)


def _reference_tree(rows, cols, shape, sample, top_nodes):
    """(signatures, level sizes, directory, top level, top codes, codes of level L-2) of
    the first version: per-level unique prefixes, directory from a cumulative popcount."""
    nr, nc = shape
    L = max(2, (max(nr, nc, 1) - 1).bit_length())
    codes = np.unique(morton_encode(np.asarray(rows, np.int64), np.asarray(cols, np.int64)))
    if codes.size == 0:
        return [], [0] * L, [], L - 2, [], []
    sigs = _reference_levels(rows, cols, L)
    sizes = [len(s) for s in sigs]
    flat = np.concatenate(sigs).astype(np.int64)
    pops = np.array([bin(int(s)).count("1") for s in flat], np.int64)
    before = np.concatenate([[0], np.cumsum(pops)])
    directory = (1 + before[np.arange(0, flat.size, sample)]).tolist()
    top = max([0] + [d for d in range(L - 1) if sizes[d] <= top_nodes])
    prefix = [np.unique(codes >> np.uint64(2 * (L - d))).tolist() for d in range(L)]
    return flat.tolist(), sizes, directory, top, prefix[top], prefix[L - 2]


@pytest.mark.parametrize("shape, m", [((0, 0), 0), ((1, 1), 1), ((1, 1), 0), ((2, 2), 4), ((3, 3), 2),
                                      ((5, 7), 12), ((1, 100), 30), ((100, 1), 30), ((9, 9), 3),
                                      ((129, 33), 300), ((256, 256), 1), ((4, 4), 16)])
@pytest.mark.parametrize("top_nodes", [1, 4, 1 << 16])
def test_numba_build_edge_cases_match_reference(shape, m, top_nodes):
    """Empty, one vertex, full blocks, sides not a power of two, skinny rectangles: every
    array of the numba build (from_coo, from_csr, from_codes) equals the first version's."""
    rng = np.random.default_rng(m + 7 * shape[0] + shape[1])
    nr, nc = shape
    r = rng.integers(0, max(nr, 1), m) if nr and nc else np.zeros(0, np.int64)
    c = rng.integers(0, max(nc, 1), m) if nr and nc else np.zeros(0, np.int64)
    if shape == (4, 4) and m == 16:
        r, c = np.divmod(np.arange(16), 4)  # every cell: full signatures
    sigs, sizes, directory, top, top_codes, front = _reference_tree(r, c, shape, 2, top_nodes)
    A = sp.csr_array((np.ones(r.size), (r, c)), shape=shape)
    A.sum_duplicates()
    A.data[:] = 1
    builds = [K2Tree.from_coo(r, c, shape, sample=2, top_nodes=top_nodes, cached_frontier=True),
              K2Tree.from_csr(A.indptr, A.indices, shape, sample=2, top_nodes=top_nodes, cached_frontier=True),
              K2Tree.from_codes(morton_encode(r, c), shape, sample=2, top_nodes=top_nodes, cached_frontier=True)]
    for t in builds:
        assert t.signatures().tolist() == sigs
        assert np.diff(t.level_start).tolist() == sizes
        assert t.directory.tolist() == directory
        assert t.top_level == top and t.top_codes.tolist() == top_codes
        assert t.frontier.tolist() == front
        assert t.nnz == A.nnz
        assert (t.to_scipy() != A).nnz == 0


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated", b"plain text", "npy", "levels"])
def test_unreadable_tree_file_is_a_format_error_and_sidecar_rebuilt(tmp_path, content):
    """An empty, truncated or foreign file says what it is not (GraphFormatError naming
    the path), never EOFError/BadZipFile/TypeError; tree_for_file then rebuilds the
    sidecar instead of failing."""
    from distgraph.formats import binary
    from distgraph.formats.k2tree import sidecar_path, tree_for_file
    from distgraph.generators import from_spec

    bad = tmp_path / "bad.k2t.npz"
    if content == "npy":
        np.save(tmp_path / "bad.npy", np.zeros(3))
        bad = tmp_path / "bad.npy"
    elif content == "levels":  # level_start shorter than levels + 1
        t = K2Tree.from_coo([0, 1], [1, 0], (4, 4))
        np.savez(bad, version=np.int64(1), shape=np.array([4, 4]), levels=np.int64(t.levels), nnz=np.int64(2),
                 sig=t.sig, level_start=np.zeros(0, np.int64), sample=np.int64(256))
    else:
        bad.write_bytes(content)
    with pytest.raises(GraphFormatError, match="bad") as e:
        K2Tree.load(bad)
    assert "k2-tree" in str(e.value)
    g = from_spec("kron:6")
    path = tmp_path / "k6.dgraph"
    binary.save(g, path)
    import shutil

    shutil.copy(bad, sidecar_path(path))
    t = tree_for_file(binary.load(path), path)
    assert (t.to_scipy() != g.to_scipy()).nnz == 0
    assert K2Tree.load(sidecar_path(path)).nnz == g.m  # the sidecar was rewritten


def test_save_never_touches_another_writers_temp_file_and_cleans_up(tmp_path, monkeypatch):
    """Two processes saving the same sidecar at once must not write into one temp file
    (the name was fixed, ``PATH.tmp.npz``); a failed save leaves no temp file behind."""
    import os

    t = K2Tree.from_coo([0, 1, 2], [1, 2, 0], (3, 3))
    path = tmp_path / "g.k2t.npz"
    other = tmp_path / "g.k2t.npz.tmp.npz"  # another writer's file under the old name
    other.write_bytes(b"being written by someone else")
    t.save(path)
    assert other.read_bytes() == b"being written by someone else"
    assert K2Tree.load(path).nnz == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.k2t.npz", "g.k2t.npz.tmp.npz"]

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        t.save(tmp_path / "h.k2t.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.k2t.npz", "g.k2t.npz.tmp.npz"]
