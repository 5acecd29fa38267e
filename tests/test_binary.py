"""The .dgraph binary format: round trips, memory maps, checksums, damaged files,
per-rank loading (also under MPI), and the ``distgraph convert`` command."""

import json
import os
import struct

import numpy as np
import pytest

from distgraph.errors import GraphFormatError, InvalidArgumentError
from distgraph.formats import binary
from distgraph.graph import Graph, partition_by_edges, partition_even
from distgraph.graph.readers import read_graph
from distgraph.graph.writers import write_graph


def same(g, h):
    assert (g.n, g.m, g.directed) == (h.n, h.m, h.directed)
    assert np.array_equal(g.indptr, h.indptr) and np.array_equal(g.indices, h.indices)
    assert (g.weights is None) == (h.weights is None)
    if g.weights is not None:
        assert g.weights.dtype == h.weights.dtype and np.array_equal(g.weights, h.weights)
    assert (g.labels is None) == (h.labels is None)
    if g.labels is not None:
        assert np.array_equal(g.labels, h.labels)


@pytest.fixture(scope="module")
def wiki(data_dir):
    return read_graph(data_dir / "wiki-Vote.txt.gz")


@pytest.fixture(scope="module")
def condmat(data_dir):
    return read_graph(data_dir / "cond-mat-2005.mtx.gz")


def small():
    return Graph.from_edges([0, 0, 1, 2, 3], [1, 2, 2, 3, 0], np.array([1.5, -2.0, np.inf, 0.0, 7.0]))


def test_round_trip_memmap_read_only(tmp_path, wiki, condmat):
    for g in (wiki, condmat, small(), Graph.from_edges([], [], n=3)):
        p = tmp_path / "g.dgraph"
        binary.save(g, p)
        h = binary.load(p, verify=True)
        same(g, h)
        if h.m:
            assert isinstance(h.indices, np.memmap) and not h.indices.flags.writeable
        same(g, binary.load(p, mmap=False))
        assert read_graph(p).n == g.n  # through the common reader too


def test_alignment_and_header(tmp_path, condmat):
    p = tmp_path / "c.dgraph"
    h = binary.save(condmat, p)
    assert all(a["offset"] % 64 == 0 for a in h["arrays"].values())
    head = binary.read_header(p)
    assert head["n"] == 40421 and head["num_edges"] == 175693 and not head["directed"]
    prov = head["provenance"]
    assert prov["source"].endswith("cond-mat-2005.mtx.gz") and prov["format"] == "mtx"
    assert prov["options"]["dedup"] is True and "mtime" in prov and prov["size"] > 0
    assert head["created_by"].startswith("distgraph") and head["checksum"]["algorithm"] == "blake2b-128"
    assert os.path.getsize(p) == head["file_size"]


def test_stored_csc(tmp_path, wiki):
    p = tmp_path / "w.dgraph"
    binary.save(wiki, p, csc=True)
    h = binary.load(p)
    assert h._csc is not None
    for a, b in zip(h.csc()[:2], Graph(wiki.indptr, wiki.indices).csc()[:2]):
        assert np.array_equal(a, b)


def test_damaged_files(tmp_path):
    p = tmp_path / "g.dgraph"
    binary.save(small(), p)
    raw = p.read_bytes()
    cases = {
        "bad magic": b"NOTGRAPH" + raw[8:],
        "truncated": raw[: len(raw) - 10],
        "truncated preamble": raw[:20],
        "extra bytes": raw + b"\0" * 64,
        "newer version": raw[:8] + struct.pack("<I", 99) + raw[12:],
        "header corrupted": raw[:70] + bytes([raw[70] ^ 1]) + raw[71:],
        "empty": b"",
    }
    for name, data in cases.items():
        q = tmp_path / f"{name}.dgraph"
        q.write_bytes(data)
        with pytest.raises(GraphFormatError) as ei:
            binary.load(q)
        assert str(q) in str(ei.value), name
    # a flipped bit in the data: found with verify=True only
    head = binary.read_header(p)
    off = head["arrays"]["indices"]["offset"]
    bad = bytearray(raw)
    bad[off] ^= 1
    q = tmp_path / "flip.dgraph"
    q.write_bytes(bytes(bad))
    binary.load(q)
    with pytest.raises(GraphFormatError, match="'indices' is corrupted"):
        binary.load(q, verify=True)
    with pytest.raises(GraphFormatError):
        binary.verify(q)


def test_load_local_parts_concatenate(tmp_path, wiki):
    p = tmp_path / "w.dgraph"
    binary.save(wiki, p, csc=True)
    for nparts in (1, 3, 4):
        for transpose in (False, True):
            ip, ix = (wiki.csc()[0], wiki.csc()[1]) if transpose else (wiki.indptr, wiki.indices)
            parts = [binary.load_local(p, nparts, r, transpose=transpose, verify=True) for r in range(nparts)]
            assert parts[0].lo == 0 and parts[-1].hi == wiki.n
            assert np.array_equal(np.concatenate([q.indices for q in parts]), ix)
            deg = np.concatenate([np.diff(q.indptr) for q in parts])
            assert np.array_equal(deg, np.diff(ip))
    part = partition_even(wiki.n, 2)
    assert binary.load_local(p, part, 1).lo == part.range(1)[0]
    with pytest.raises(InvalidArgumentError, match="rank must be"):
        binary.load_local(p, 2, 2)
    with pytest.raises(InvalidArgumentError, match="part must partition"):
        binary.load_local(p, partition_even(10, 2), 0)


def test_load_local_verifies_only_its_blocks(tmp_path, wiki, monkeypatch):
    monkeypatch.setattr(binary, "_BLOCK", 4096)  # small blocks so ranks have blocks of their own
    p = tmp_path / "w.dgraph"
    binary.save(wiki, p)
    head = binary.read_header(p)
    assert head["checksum"]["block_bytes"] == 4096
    part = partition_by_edges(wiki.indptr, 4)
    lo, hi = part.range(3)
    a = int(wiki.indptr[lo])
    raw = bytearray(p.read_bytes())
    raw[head["arrays"]["indices"]["offset"] + 4 * a + 4 * 1024 * 4 + 1] ^= 0x10  # inside rank 3's arcs
    p.write_bytes(bytes(raw))
    binary.load_local(p, part, 0, verify=True)  # rank 0 does not read the damaged block
    with pytest.raises(GraphFormatError, match="corrupted"):
        binary.load_local(p, part, 3, verify=True)


def test_read_graph_options_on_dgraph(tmp_path):
    p = tmp_path / "g.dgraph"
    binary.save(small(), p)
    g = read_graph(p, symmetrize=True)
    assert not g.directed and g.num_edges == 5
    assert read_graph(p, weighted=False).weights is None
    assert read_graph(p, drop_self_loops=True).m == 5


def test_write_graph_dgraph_suffix(tmp_path, condmat):
    write_graph(condmat, tmp_path / "c.dgraph")
    same(condmat, binary.load(tmp_path / "c.dgraph"))
    with pytest.raises(InvalidArgumentError, match="cannot be compressed"):
        write_graph(condmat, tmp_path / "c.dgraph.gz")


# ------------------------------------------------------------------ MPI
@pytest.mark.mpi
def test_each_rank_loads_only_its_part(tmp_path, comm, data_dir):
    rank, size = comm.Get_rank(), comm.Get_size()
    path = None
    if rank == 0:
        g = read_graph(data_dir / "bitcoin-otc.csv.gz")
        path = str(tmp_path / "b.dgraph")
        binary.save(g, path)
    path = comm.bcast(path, root=0)
    local = binary.load_local(path, size, rank, verify=True)
    parts = comm.allgather((local.lo, local.hi, local.indptr, local.indices, local.weights))
    whole = binary.load(path)
    ok = (parts[0][0] == 0 and parts[-1][1] == whole.n
          and all(parts[r][1] == parts[r + 1][0] for r in range(size - 1))
          and np.array_equal(np.concatenate([q[3] for q in parts]), whole.indices)
          and np.array_equal(np.concatenate([q[4] for q in parts]), whole.weights)
          and np.array_equal(np.concatenate([np.diff(q[2]) for q in parts]), np.diff(whole.indptr)))
    oks = comm.allgather(ok)
    comm.barrier()
    assert all(oks), oks


# ------------------------------------------------------------------ CLI
def test_cli_convert(tmp_path, data_dir):
    from distgraph.testing import run_cli

    out = tmp_path / "mn"
    r = run_cli("convert", data_dir / "minnesota.mtx.gz", out, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["vertices"] == 2642 and s["edges"] == 3303 and s["output"] == f"{out}.dgraph"
    head = binary.read_header(f"{out}.dgraph")
    assert head["provenance"]["blake2b"] and head["provenance"]["source"].endswith("minnesota.mtx.gz")
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n")
    r = run_cli("convert", bad, tmp_path / "bad.dgraph")
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert lines == [f"distgraph: error: {bad}:3: file ended after 1 of the 2 entries the size line promises (truncated file?)"]
    assert not (tmp_path / "bad.dgraph").exists()


def test_cli_convert_two_ranks_bad_file_does_not_hang(tmp_path):
    from distgraph.testing import run_cli

    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 2\na 1 2 1\na 1 7 1\n")
    r = run_cli("convert", bad, tmp_path / "bad.dgraph", n=2, timeout=120)
    assert r.returncode != 0
    assert f"{bad}:3: vertex id 7 is out of range [1, 3]" in r.stderr
    # rank 0 finds it and every rank raises it together (collective_raise): the job ends
    # without MPI_Abort, whose teardown once lost the message in CI, and says it once
    assert r.returncode == 2 and "MPI_Abort" not in r.stderr, r.stderr
    assert r.stderr.count("vertex id 7 is out of range") == 1, r.stderr
