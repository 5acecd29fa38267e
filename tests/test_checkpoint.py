"""Checkpoints of closeness runs: a job killed after some batches resumes to a
bit-identical result, no batch lost or counted twice; a checkpoint of another run is
refused; the store survives torn writes. On 1, 2 and 4 ranks."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from distgraph.algorithms import msbfs as msbfs_mod
from distgraph.algorithms.closeness import closeness
from distgraph.errors import CheckpointError
from distgraph.runtime.checkpoint import CheckpointStore


class Killed(Exception):
    pass


def kill_after(k):
    seen = []

    def hook(b):
        seen.append(b)
        if len(seen) >= k:
            raise Killed(f"killed after {k} batches")

    return hook


@pytest.fixture
def graph():
    from distgraph.generators import from_spec

    return from_spec("kron:10:directed")


def same(a, b):
    return (np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
            and np.array_equal(a.harmonic, b.harmonic) and np.array_equal(a.closeness, b.closeness, equal_nan=True))


def run_interrupted(g, ckpt, kills, comm=None, **kw):
    """Run, killing after kills[0] batches, resume and kill after kills[1], ... then finish."""
    for k in kills:
        msbfs_mod._BATCH_HOOK = kill_after(k)
        try:
            with pytest.raises(Killed):
                closeness(g, checkpoint=ckpt, resume=True, comm=comm, **kw)
        finally:
            msbfs_mod._BATCH_HOOK = None
    return closeness(g, checkpoint=ckpt, resume=True, comm=comm, **kw)


def was_killed(k, g, **kw):
    """Run closeness with a kill after ``k`` batches; True when the kill happened (no
    assertion here, so MPI tests can gather the outcome of every rank first)."""
    msbfs_mod._BATCH_HOOK = kill_after(k)
    try:
        closeness(g, **kw)
        return False
    except Killed:
        return True
    finally:
        msbfs_mod._BATCH_HOOK = None


@pytest.mark.parametrize("conv,vertices", [("networkx", None), ("harmonic", None), ("igraph", "some")])
def test_resume_is_bit_identical(tmp_path, graph, conv, vertices):
    from mpi4py import MPI

    vs = np.arange(3, graph.n, 5) if vertices else None
    full = closeness(graph, convention=conv, vertices=vs, batch_size=16, comm=MPI.COMM_SELF)
    res = run_interrupted(graph, str(tmp_path / "ck"), [2, 1, 3], comm=MPI.COMM_SELF, convention=conv,
                          vertices=vs, batch_size=16)
    assert same(res, full)
    # a second resume of a finished run recomputes nothing and still agrees
    msbfs_mod._BATCH_HOOK = kill_after(1)
    try:
        again = closeness(graph, convention=conv, vertices=vs, batch_size=16, checkpoint=str(tmp_path / "ck"),
                          resume=True, comm=MPI.COMM_SELF)
    finally:
        msbfs_mod._BATCH_HOOK = None
    assert same(again, full)


def test_no_batch_lost_or_counted_twice(tmp_path, graph):
    from mpi4py import MPI

    ck = str(tmp_path / "ck")
    run_interrupted(graph, ck, [3, 2], comm=MPI.COMM_SELF, batch_size=32)
    import glob

    batches = []
    for p in glob.glob(os.path.join(ck, "part-*.npz")):
        with np.load(p) as z:
            batches.extend(z["batches"].tolist())
    nsrc = int(np.count_nonzero(np.diff(graph.indptr) > 0))
    assert sorted(batches) == list(range((nsrc + 31) // 32))


def test_mismatch_raises(tmp_path, graph):
    from mpi4py import MPI

    from distgraph.generators import from_spec

    ck = str(tmp_path / "ck")
    closeness(graph, checkpoint=ck, batch_size=64, comm=MPI.COMM_SELF)
    with pytest.raises(CheckpointError, match="already holds a run"):
        closeness(graph, checkpoint=ck, batch_size=64, comm=MPI.COMM_SELF)
    with pytest.raises(CheckpointError, match="batch_size"):
        closeness(graph, checkpoint=ck, batch_size=128, resume=True, comm=MPI.COMM_SELF)
    with pytest.raises(CheckpointError, match="convention"):
        closeness(graph, checkpoint=ck, batch_size=64, convention="harmonic", resume=True, comm=MPI.COMM_SELF)
    with pytest.raises(CheckpointError, match="graph"):
        closeness(from_spec("kron:10:directed:seed=5"), checkpoint=ck, batch_size=64, resume=True,
                  comm=MPI.COMM_SELF)
    with pytest.raises(CheckpointError, match="sources"):
        closeness(graph, checkpoint=ck, batch_size=64, vertices=[1, 2], resume=True, comm=MPI.COMM_SELF)


def test_torn_write_and_duplicates(tmp_path):
    ck = str(tmp_path / "ck")
    s = CheckpointStore(ck, {"x": 1}, resume=False)
    s.save([0, 2], {"far": np.array([1, 2], np.uint64)})
    # a kill during a write leaves only a .tmp behind: ignored
    with open(os.path.join(ck, "part-dead-r0.npz.tmp"), "wb") as f:
        f.write(b"PK\x03\x04garbage")
    s2 = CheckpointStore(ck, {"x": 1}, resume=True)
    done, sums = s2.load()
    assert done.tolist() == [0, 2] and sums["far"].tolist() == [1, 2]
    s2.save([1], {"far": np.array([10, 20], np.uint64)})
    s3 = CheckpointStore(ck, {"x": 1}, resume=True)
    done, sums = s3.load()
    assert done.tolist() == [0, 1, 2] and sums["far"].tolist() == [11, 22]
    s3.save([2], {"far": np.array([5, 5], np.uint64)})  # batch 2 twice: corrupt
    with pytest.raises(CheckpointError, match="counts batch 2 twice"):
        CheckpointStore(ck, {"x": 1}, resume=True).load()
    with pytest.raises(CheckpointError, match="another run"):
        CheckpointStore(ck, {"x": 2}, resume=True)


def test_cli_killed_process_resumes(tmp_path):
    """A real process killed with SIGKILL in the middle, resumed with --resume."""
    ck = tmp_path / "ck"
    out1 = tmp_path / "a.npy"
    base = [sys.executable, "-m", "distgraph", "closeness", "kron:12", "--batch-size", "32", "--no-progress"]
    # a fresh singleton MPI process, even when the test itself runs under mpiexec
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPI_", "OMPI_"))}
    env["NUMBA_NUM_THREADS"] = "1"
    # saves after every batch (--checkpoint-interval 0), so the kill below finds part files
    p = subprocess.Popen(base + ["--checkpoint", str(ck), "--checkpoint-interval", "0", "--output", str(out1)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    import glob

    while time.time() < deadline and p.poll() is None and not glob.glob(str(ck / "part-*.npz")):
        time.sleep(0.05)
    time.sleep(0.3)
    killed = p.poll() is None
    if killed:
        p.send_signal(signal.SIGKILL)
    p.wait()
    r = subprocess.run(base + ["--checkpoint", str(ck), "--resume", "--output", str(out1)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from mpi4py import MPI

    from distgraph.generators import from_spec

    want = closeness(from_spec("kron:12"), batch_size=32, comm=MPI.COMM_SELF).closeness
    assert np.array_equal(np.load(out1), want)


# -------------------------------------------------------------------------- MPI
@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_resume_across_rank_counts(comm, graph, dynamic, monkeypatch):
    """Killed on p ranks, resumed on p ranks, then on 1 rank: always bit-identical,
    with either dealing of the batches (first come, first served may give a rank fewer
    batches than it takes to kill it: it learns of the others' error and raises too)."""
    import tempfile

    from mpi4py import MPI

    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    d = comm.bcast(tempfile.mkdtemp(prefix="dg-ck-") if comm.rank == 0 else None, root=0)
    full = closeness(graph, batch_size=16, comm=MPI.COMM_SELF)
    ck = os.path.join(d, "ck")
    ok = [was_killed(2, graph, batch_size=16, checkpoint=ck, resume=True, comm=comm)]
    comm.Barrier()
    res = closeness(graph, batch_size=16, checkpoint=ck, resume=True, comm=comm)
    ok.append(same(res, full))
    comm.Barrier()
    if comm.rank == 0:  # the checkpoint of the p-rank run, read by one rank
        one = closeness(graph, batch_size=16, checkpoint=ck, resume=True, comm=MPI.COMM_SELF)
        ok.append(same(one, full))
    assert all(comm.allgather(all(ok)))


@pytest.mark.mpi
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_error_on_one_rank_raised_on_all(comm, graph, dynamic, threads, monkeypatch):
    """A batch failing on rank 0 only: every rank raises that error (none waits in the
    final reduction or in freeing the dealer's window), the checkpoint keeps what was
    finished, and a resume on all ranks completes it bit-identically. With one and with
    two threads per rank (the thread pool's path)."""
    import tempfile

    from mpi4py import MPI

    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    monkeypatch.setattr(msbfs_mod, "thread_count", lambda ctx: threads)
    d = comm.bcast(tempfile.mkdtemp(prefix="dg-ck-") if comm.rank == 0 else None, root=0)
    ck = os.path.join(d, "ck")
    full = closeness(graph, batch_size=16, comm=MPI.COMM_SELF)
    if comm.rank == 0:
        msbfs_mod._BATCH_HOOK = kill_after(1)
    got = None
    try:
        closeness(graph, batch_size=16, checkpoint=ck, comm=comm)
    except Killed as e:
        got = str(e)
    finally:
        msbfs_mod._BATCH_HOOK = None
    ok = [got == "killed after 1 batches"]
    res = closeness(graph, batch_size=16, checkpoint=ck, resume=True, comm=comm)
    ok.append(same(res, full))
    assert all(comm.allgather(all(ok)))


@pytest.mark.mpi
def test_mpi_checkpoint_error_on_one_rank_raised_on_all(comm):
    """A checkpoint that one rank cannot read, or whose arrays do not fit the run, is
    reported on every rank before any batch runs."""
    from distgraph.algorithms.msbfs import run_batches
    from distgraph.generators import from_spec
    from distgraph.runtime.context import get_context

    g = from_spec("kron:8")
    ctx = get_context(comm, "cpu")

    class Store:
        def __init__(self, fail_rank, shape):
            self.fail_rank, self.shape = fail_rank, shape

        def load(self):
            if comm.rank == self.fail_rank:
                raise CheckpointError("part file unreadable here")
            return np.zeros(0, np.int64), {"far": np.zeros(self.shape, np.uint64)}

        def save(self, batches, arrays):
            pass

    ok = []
    for store, match in ((Store(comm.size - 1, g.n), "unreadable here"), (Store(-1, g.n + 1), "has shape")):
        try:
            run_batches(g.indptr, g.indices, g.indptr, g.indices, np.arange(g.n), per_source=False,
                        batch_size=64, ctx=ctx, store=store)
            ok.append(False)
        except CheckpointError as e:
            ok.append(match in str(e))
    assert all(comm.allgather(all(ok)))


@pytest.mark.mpi
def test_mpi_out_of_memory_on_one_rank_raised_on_all(comm, graph, monkeypatch):
    """A rank that cannot allocate its kernel scratch raises on every rank (the others
    would wait in creating the dealer's window, or in the reduction)."""
    real = msbfs_mod._scratch

    def scratch(n, W):
        if comm.rank == comm.size - 1:
            raise MemoryError("no scratch here")
        return real(n, W)

    monkeypatch.setattr(msbfs_mod, "_scratch", scratch)
    try:
        closeness(graph, batch_size=64, comm=comm)
        ok = False
    except MemoryError as e:
        ok = "no scratch here" in str(e)
    assert all(comm.allgather(ok))


@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_killed_on_one_rank_resumed_on_p(comm, graph, dynamic, monkeypatch):
    """A one-rank job killed twice, resumed on p ranks (each dealing): the p-rank
    sessions add their part files to the one-rank ones; bit-identical, every batch
    stored exactly once."""
    import glob
    import tempfile

    from mpi4py import MPI

    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    d = comm.bcast(tempfile.mkdtemp(prefix="dg-ck-") if comm.rank == 0 else None, root=0)
    ck = os.path.join(d, "ck")
    full = closeness(graph, batch_size=16, comm=MPI.COMM_SELF)
    ok = []
    if comm.rank == 0:
        ok += [was_killed(k, graph, batch_size=16, checkpoint=ck, resume=True, comm=MPI.COMM_SELF) for k in (5, 3)]
    comm.Barrier()
    res = closeness(graph, batch_size=16, checkpoint=ck, resume=True, comm=comm)
    ok.append(same(res, full))
    comm.Barrier()
    if comm.rank == 0:
        batches = []
        for p in glob.glob(os.path.join(ck, "part-*.npz")):
            with np.load(p) as z:
                batches.extend(z["batches"].tolist())
        nsrc = int(np.count_nonzero(np.diff(graph.indptr) > 0))
        ok.append(sorted(batches) == list(range((nsrc + 15) // 16)))
    assert all(comm.allgather(all(ok)))


def test_stop_signal_while_starting_up_is_kept_for_the_run():
    """defer_stop_signals (the CLI calls it first thing when --checkpoint is given): a SIGUSR1
    before the checkpointed run starts does not kill the process; the run's StopSignals
    block takes it (once), so the run saves at its first boundary and stops with it."""
    import os
    import signal

    from distgraph.runtime import checkpoint as ck

    old = {s: signal.getsignal(s) for s in ck.StopSignals.SIGNALS}
    try:
        ck.defer_stop_signals()
        os.kill(os.getpid(), signal.SIGUSR1)  # would end the process with the default action
        os.kill(os.getpid(), signal.SIGTERM)  # the first one is kept
        with ck.StopSignals() as st:
            assert st.signum == signal.SIGUSR1
        with ck.StopSignals() as st:  # taken once
            assert st.signum is None
        assert signal.getsignal(signal.SIGUSR1) is ck._early_handler  # restored after the block
        os.kill(os.getpid(), signal.SIGUSR1)  # recorded after the run: forgotten by restore
        ck.restore_stop_signals()
        assert ck._EARLY["signum"] is None
        assert all(signal.getsignal(s) == h for s, h in old.items())  # the handlers from before
    finally:
        ck._EARLY["signum"] = None
        for s, h in old.items():
            signal.signal(s, h)


def test_cli_defers_stop_signals_only_around_a_checkpointed_run(tmp_path):
    """`distgraph closeness --checkpoint DIR` records stop signals while it runs and gives the
    handlers back when it returns; without --checkpoint nothing is installed."""
    import signal

    from distgraph.cli import main
    from distgraph.runtime import checkpoint as ck

    seen = []
    real = ck.defer_stop_signals

    def spy():
        seen.append(signal.getsignal(signal.SIGUSR1))
        real()

    before = signal.getsignal(signal.SIGUSR1)
    ck.defer_stop_signals = spy
    try:
        assert main(["closeness", "kron:6", "--backend", "cpu", "--checkpoint", str(tmp_path / "ck")]) == 0
        assert len(seen) == 1 and signal.getsignal(signal.SIGUSR1) == before and ck._EARLY["signum"] is None
        assert main(["closeness", "kron:6", "--backend", "cpu"]) == 0
        assert len(seen) == 1
    finally:
        ck.defer_stop_signals = real
