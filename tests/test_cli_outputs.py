"""Every command checks its output paths before any work (``cli.common.check_outputs``):
a closeness run of hours must not end in "No such file or directory" and lose its values.

The graph loaders are replaced by stand-ins that record a call and fail, so a test sees both
the message and that no graph was read or generated before it."""

import os

import numpy as np
import pytest

import distgraph.cli.common as common
from distgraph.cli import main
from distgraph.errors import InvalidArgumentError

# (command and its arguments before the output flag, the output flag or None for a positional)
VALUE_COMMANDS = [
    (["bfs", "kron:8", "--source", "0"], "--output"),
    (["bfs", "kron:8", "--source", "0"], "--parents"),
    (["closeness", "kron:8"], "--output"),
    (["sssp", "kron:8", "--source", "0"], "--output"),
    (["sssp", "kron:8", "--source", "0"], "--predecessors"),
    (["pagerank", "kron:8"], "--output"),
    (["spmv", "kron:8"], "--output"),
]
GRAPH_COMMANDS = [(["generate", "kron:8"], "--output"), (["convert", "kron:8"], None)]


@pytest.fixture
def loads(monkeypatch):
    """The calls that would have read or generated a graph (each then fails)."""
    import distgraph.generators
    import distgraph.graph.readers

    calls = []

    def stand_in(name):
        def load(*a, **kw):
            calls.append(name)
            raise ValueError(f"{name} was called before the outputs were checked")
        return load

    for mod in ("bfs", "closeness", "sssp", "pagerank", "spmv"):
        monkeypatch.setattr(f"distgraph.cli.{mod}.load_graph", stand_in(f"{mod}.load_graph"))
    monkeypatch.setattr(common, "load_graph", stand_in("common.load_graph"))
    monkeypatch.setattr(distgraph.generators, "from_spec", stand_in("from_spec"))
    monkeypatch.setattr(distgraph.graph.readers, "read_graph", stand_in("read_graph"))
    return calls


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def _argv(cmd, flag, path):
    return cmd + ([flag, path] if flag else [path])


@pytest.mark.parametrize("cmd,flag", VALUE_COMMANDS + GRAPH_COMMANDS)
def test_missing_directory_refused_before_work(cmd, flag, tmp_path, capsys, loads):
    out = tmp_path / "no" / "such" / ("g.mtx" if cmd[0] in ("generate", "convert") else "x.npy")
    rc, err = _run(capsys, _argv(cmd, flag, out))
    assert rc == 2 and f"its directory '{out.parent}' does not exist" in err, err
    assert loads == []


@pytest.mark.parametrize("cmd,flag", VALUE_COMMANDS)
def test_bad_value_suffix_refused_before_work(cmd, flag, tmp_path, capsys, loads):
    rc, err = _run(capsys, _argv(cmd, flag, tmp_path / "x.txt"))
    assert rc == 2 and f"{flag} must end in .npy, .csv or .parquet; got" in err, err
    assert loads == []


@pytest.mark.parametrize("cmd,flag,name,msg", [
    (GRAPH_COMMANDS[0][0], "--output", "g.foo", "--output must end in one of .col, .csv, .dgraph, .dimacs"),
    (GRAPH_COMMANDS[0][0], "--output", "g.dgraph.gz", "cannot be compressed"),
    (GRAPH_COMMANDS[1][0], None, "g.dgraph.gz", "OUTPUT: a .dgraph file is memory-mapped and cannot be compressed"),
])  # convert adds .dgraph to a name without a graph suffix (g.foo -> g.foo.dgraph)
def test_bad_graph_suffix_refused_before_work(cmd, flag, name, msg, tmp_path, capsys, loads):
    rc, err = _run(capsys, _argv(cmd, flag, tmp_path / name))
    assert rc == 2 and msg in err, err
    assert loads == []


@pytest.mark.parametrize("cmd,flag", VALUE_COMMANDS)
def test_directory_as_output_refused(cmd, flag, tmp_path, capsys, loads):
    d = tmp_path / "d.npy"
    d.mkdir()
    rc, err = _run(capsys, _argv(cmd, flag, d))
    assert rc == 2 and f"{flag} must name a file; '{d}' is a directory" in err, err
    assert loads == []


@pytest.mark.parametrize("cmd,other", [(["bfs", "kron:8", "--source", "0"], "--parents"),
                                       (["sssp", "kron:8", "--source", "0"], "--predecessors")])
def test_two_outputs_to_one_file_refused(cmd, other, tmp_path, capsys, loads, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, err = _run(capsys, cmd + ["--output", "v.npy", other, "./v.npy"])
    assert rc == 2 and f"--output and {other} name the same file './v.npy'" in err, err
    assert loads == []


def test_sources_need_npy_before_work(tmp_path, capsys, loads):
    rc, err = _run(capsys, ["sssp", "kron:8", "--sources", "1,2", "--predecessors", tmp_path / "p.csv"])
    assert rc == 2 and "--predecessors must end in .npy with --sources (a row per source)" in err, err
    assert loads == []


def test_parquet_without_pyarrow_refused(tmp_path, capsys, loads, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    rc, err = _run(capsys, ["closeness", "kron:8", "--output", tmp_path / "c.parquet"])
    assert rc == 2 and "writing .parquet needs pyarrow" in err, err
    assert loads == []


def test_unwritable_directory_refused(tmp_path, monkeypatch):
    """os.access stands in for permissions (the tests may run as root, who may write anywhere).
    A read-only file in a writable directory is fine: the writers replace it by a new file."""
    locked = tmp_path / "locked"
    locked.mkdir()
    ro = tmp_path / "ro.npy"
    ro.write_bytes(b"")
    ro.chmod(0o444)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) in (str(locked), str(ro)) else real(p, mode))
    with pytest.raises(InvalidArgumentError, match=f"its directory '{locked}' is not writable"):
        common.check_outputs(None, [("--output", locked / "c.npy", common.VALUE_EXTS)])
    common.check_outputs(None, [("--output", ro, common.VALUE_EXTS)])
    common.write_output(str(ro), np.arange(3), None)
    assert np.load(ro).tolist() == [0, 1, 2]


def test_spmv_batch_needs_npy(tmp_path, capsys):
    """A batch's Y is known to be 2-D once X is read: refused before the product is built."""
    x = tmp_path / "x.npy"
    np.save(x, np.ones((256, 2)))
    rc, err = _run(capsys, ["spmv", "kron:8", "--x", x, "--batch", "2", "--output", tmp_path / "y.csv"])
    assert rc == 2 and "--output of a batch must end in .npy; got" in err, err


def test_good_outputs_still_written(tmp_path, capsys):
    """The check lets good paths through: a new file, an existing one (replaced), several flags."""
    out, par = tmp_path / "lv.csv", tmp_path / "par.npy"
    par.write_bytes(b"old")
    assert main(["bfs", "kron:8", "--source", "0", "--output", str(out), "--parents", str(par)]) == 0
    assert out.read_text().startswith("vertex,level\n") and np.load(par).shape == (256,)
    assert main(["bfs", "kron:8", "--source", "0", "--parents"]) == 0  # --parents without a path: nothing written
    g = tmp_path / "k.mtx.gz"
    assert main(["generate", "kron:8", "--output", str(g)]) == 0 and g.stat().st_size > 0
    assert main(["convert", str(g), str(tmp_path / "k")]) == 0 and (tmp_path / "k.dgraph").exists()
    capsys.readouterr()


@pytest.mark.mpi
def test_mpi_rank0_decides_and_every_rank_raises(comm, tmp_path):
    """Rank 0 writes the outputs, so its view of the file system decides; every rank then
    raises the same error together (no MPI_Abort, no rank left waiting)."""
    from distgraph.runtime.abort import raised_on_all_ranks

    base = comm.bcast(str(tmp_path) if comm.rank == 0 else None)
    good, bad = os.path.join(base, "c.npy"), os.path.join(base, "missing", "c.npy")
    # each rank names another path (as a node-local path would differ): rank 0's good one decides
    common.check_outputs(comm, [("--output", good if comm.rank == 0 else bad, common.VALUE_EXTS)])
    errs = []
    try:
        common.check_outputs(comm, [("--output", bad, common.VALUE_EXTS)])
    except InvalidArgumentError as e:
        errs.append((str(e), raised_on_all_ranks(e, comm)))
    got = comm.allgather(errs)
    assert all(g == got[0] and len(g) == 1 and (g[0][1] or comm.size == 1) for g in got), got
    assert "does not exist" in got[0][0][0]


@pytest.mark.parametrize("cmd,msg", [
    (["closeness", "kron:8", "--output", "c.npy"], "checkpoint directory '{}' cannot be created: Not a directory"),
    (["sssp", "kron:8", "--sources", "1,2", "--output", "d.npy"],
     "--checkpoint '{}' cannot be created: Not a directory"),
])
def test_checkpoint_directory_that_cannot_be_made(cmd, msg, tmp_path, capsys, monkeypatch):
    """A --checkpoint under a plain file: the error names the flag (or the checkpoint) and the path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    ck = str(tmp_path / "afile" / "ck")
    rc, err = _run(capsys, cmd + ["--checkpoint", ck])
    assert rc == 2 and msg.format(ck) in err, err
    assert not os.path.exists("c.npy") and not os.path.exists("d.npy")
