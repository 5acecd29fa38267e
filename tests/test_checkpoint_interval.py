"""When a checkpointed closeness run saves (distgraph/runtime/checkpoint.py): after every
batch with interval 0, once at the end with a long interval, by the clock in between; what
a failing batch finished is saved before the error is raised; SIGTERM/SIGUSR1 save at the
next batch boundary and stop with CheckpointInterrupted (the CLI exits 128 + signal). Every
stopped run resumes to a bit-identical result. On 1, 2 and 4 ranks; saves are counted by
wrapping CheckpointStore.save and read back from the part files."""

import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from distgraph.algorithms import msbfs as msbfs_mod
from distgraph.algorithms.closeness import closeness
from distgraph.runtime import checkpoint as ck_mod
from distgraph.runtime.checkpoint import CheckpointInterrupted, CheckpointStore

BS = 16
LONG = 3600.0


class Boom(Exception):
    pass


@pytest.fixture(scope="module")
def graph():
    from distgraph.generators import from_spec

    return from_spec("kron:10:directed")


@pytest.fixture(scope="module")
def full(graph):
    from mpi4py import MPI

    return closeness(graph, batch_size=BS, comm=MPI.COMM_SELF)


@pytest.fixture
def saves(monkeypatch):
    """The batch lists of this rank's saves, in order."""
    log = []
    real = CheckpointStore.save

    def save(self, batches, arrays):
        log.append(sorted(int(b) for b in batches))
        real(self, batches, arrays)

    monkeypatch.setattr(CheckpointStore, "save", save)
    monkeypatch.setattr(msbfs_mod, "thread_count", lambda ctx: 1)
    return log


@pytest.fixture
def fallback_signals():
    """Handlers that record SIGTERM/SIGUSR1 should one escape the run (instead of ending
    pytest); restored afterwards."""
    got = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in (signal.SIGTERM, signal.SIGUSR1)}
    yield got
    for s, h in old.items():
        signal.signal(s, h)


def nbatches(graph):
    return (int(np.count_nonzero(np.diff(graph.indptr) > 0)) + BS - 1) // BS


def same(a, b):
    return (np.array_equal(a.farness, b.farness) and np.array_equal(a.reach, b.reach)
            and np.array_equal(a.harmonic, b.harmonic) and np.array_equal(a.closeness, b.closeness, equal_nan=True))


def part_batches(ck, rank=None):
    """Batches in the part files of ``ck`` (of one rank, or all)."""
    out = []
    for p in glob.glob(os.path.join(ck, "part-*.npz" if rank is None else f"part-*-r{rank}.npz")):
        with np.load(p) as z:
            out.extend(int(b) for b in z["batches"])
    return sorted(out)


def fail_kernel_at(monkeypatch, call, action):
    """Run ``action()`` in this rank's ``call``-th kernel run (1-based), then the kernel."""
    real = msbfs_mod._run_kernel
    calls = [0]

    def kernel(*args):
        calls[0] += 1
        if calls[0] == call:
            action()
        return real(*args)

    monkeypatch.setattr(msbfs_mod, "_run_kernel", kernel)


def record_finished(monkeypatch):
    seen = []
    monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", seen.append)
    return seen


def _raise():
    raise Boom("batch failed")


# ------------------------------------------------------------------- one rank
def test_interval_zero_saves_after_every_batch(tmp_path, graph, full, saves):
    from mpi4py import MPI

    ck = str(tmp_path / "ck")
    res = closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=0, comm=MPI.COMM_SELF)
    nb = nbatches(graph)
    assert saves == [list(range(i + 1)) for i in range(nb)]
    assert part_batches(ck) == list(range(nb)) and same(res, full)


def test_long_interval_saves_once_at_the_end(tmp_path, graph, full, saves):
    from mpi4py import MPI

    ck = str(tmp_path / "ck")
    res = closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=MPI.COMM_SELF)
    assert saves == [list(range(nbatches(graph)))]
    assert part_batches(ck) == saves[0] and same(res, full)


def test_default_interval_from_config(tmp_path, graph, saves, monkeypatch):
    from mpi4py import MPI

    from distgraph.runtime.config import config, reload_config

    assert reload_config({}).checkpoint_interval == 60.0
    assert reload_config({"DISTGRAPH_CHECKPOINT_INTERVAL": "0.5"}).checkpoint_interval == 0.5
    monkeypatch.setattr(config, "checkpoint_interval", 0.0)
    closeness(graph, batch_size=BS, checkpoint=str(tmp_path / "a"), comm=MPI.COMM_SELF)
    assert len(saves) == nbatches(graph)
    from distgraph.errors import InvalidArgumentError

    for bad in (-1, float("nan"), "soon"):
        with pytest.raises(InvalidArgumentError, match="checkpoint interval"):
            closeness(graph, batch_size=BS, checkpoint=str(tmp_path / "b"), checkpoint_interval=bad,
                      comm=MPI.COMM_SELF)


def test_saves_by_the_clock(tmp_path, graph, full, saves, monkeypatch):
    """A clock that advances 1 s per batch and a 2.5 s interval: saves after batches 4, 7,
    10, ... (1-based: the first check after 3 s have passed) and at the end."""
    from mpi4py import MPI

    now = [0.0]
    monkeypatch.setattr(ck_mod, "_clock", lambda: now[0])
    monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", lambda b: now.__setitem__(0, now[0] + 1.0))
    ck = str(tmp_path / "ck")
    res = closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=2.5, comm=MPI.COMM_SELF)
    nb = nbatches(graph)
    want = [c for c in range(4, nb + 1, 3)]
    if want[-1] != nb:
        want.append(nb)
    assert [len(s) for s in saves] == want and same(res, full)


def test_failing_batch_saves_what_was_finished(tmp_path, graph, full, saves, monkeypatch):
    """The 5th batch raises: the 4 finished before it are saved (one save, long interval),
    then the error is raised; a resume completes bit-identically."""
    from mpi4py import MPI

    ck = str(tmp_path / "ck")
    fail_kernel_at(monkeypatch, 5, _raise)
    with pytest.raises(Boom):
        closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=MPI.COMM_SELF)
    assert saves == [[0, 1, 2, 3]] and part_batches(ck) == [0, 1, 2, 3]
    monkeypatch.undo()
    res = closeness(graph, batch_size=BS, checkpoint=ck, resume=True, checkpoint_interval=LONG, comm=MPI.COMM_SELF)
    assert same(res, full) and part_batches(ck) == list(range(nbatches(graph)))


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGTERM], ids=["USR1", "TERM"])
def test_signal_saves_at_the_next_boundary_and_stops(tmp_path, graph, full, saves, monkeypatch, sig,
                                                     fallback_signals):
    """A signal during the 3rd batch: that batch finishes, batches 0-2 are saved (one save),
    CheckpointInterrupted is raised, the handlers are restored; the resume is bit-identical."""
    from mpi4py import MPI

    ck = str(tmp_path / "ck")
    before = signal.getsignal(sig)
    fail_kernel_at(monkeypatch, 3, lambda: os.kill(os.getpid(), sig))
    with pytest.raises(CheckpointInterrupted) as ei:
        closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=MPI.COMM_SELF)
    assert ei.value.signum == sig and signal.Signals(sig).name in str(ei.value)
    assert fallback_signals == [] and signal.getsignal(sig) is before
    assert saves == [[0, 1, 2]] and part_batches(ck) == [0, 1, 2]
    monkeypatch.undo()
    res = closeness(graph, batch_size=BS, checkpoint=ck, resume=True, comm=MPI.COMM_SELF)
    assert same(res, full)
    # outside a checkpointed run the handlers are the caller's
    os.kill(os.getpid(), sig)
    assert fallback_signals == [sig]


def test_interrupted_pickles_with_its_signal():
    import pickle

    e = pickle.loads(pickle.dumps(CheckpointInterrupted(signal.SIGUSR1)))
    assert isinstance(e, CheckpointInterrupted) and e.signum == signal.SIGUSR1


def test_cli_signal_exits_after_saving(tmp_path):
    """A real process, long interval: SIGUSR1 mid-run -> it saves, exits 138; --resume
    finishes with the values of an uninterrupted run."""
    from mpi4py import MPI

    from distgraph.generators import from_spec

    spec, bs = "kron:14", "8"
    ck = tmp_path / "ck"
    out = tmp_path / "c.npy"
    base = [sys.executable, "-m", "distgraph", "closeness", spec, "--batch-size", bs, "--no-progress",
            "--checkpoint", str(ck), "--output", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPI_", "OMPI_"))}
    env["NUMBA_NUM_THREADS"] = "1"
    p = subprocess.Popen(base + ["--checkpoint-interval", "3600"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and not (ck / "manifest.json").exists():
        time.sleep(0.02)
    time.sleep(0.5)  # some batches done (the store opens right before the first)
    assert p.poll() is None, "the run ended before it could be signalled"
    assert not list(ck.glob("part-*.npz"))  # a long interval: nothing saved yet
    p.send_signal(signal.SIGUSR1)
    err = p.communicate(timeout=120)[1]
    assert p.returncode == 128 + signal.SIGUSR1, err
    assert "stopped by SIGUSR1 after saving the checkpoint" in err
    done = part_batches(str(ck))
    g = from_spec(spec)
    nb = (int(np.count_nonzero(np.diff(g.indptr) > 0)) + 7) // 8
    assert 0 < len(done) < nb and not out.exists()
    r = subprocess.run(base + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert part_batches(str(ck)) == list(range(nb))
    want = closeness(g, batch_size=8, comm=MPI.COMM_SELF).closeness
    assert np.array_equal(np.load(out), want)


def test_cli_interval_needs_checkpoint(capsys):
    from distgraph.cli import main

    assert main(["closeness", "kron:4", "--checkpoint-interval", "5"]) == 2
    assert "--checkpoint-interval needs --checkpoint" in capsys.readouterr().err


# -------------------------------------------------------------------------- MPI
def _tmpdir(comm):
    import tempfile

    return comm.bcast(tempfile.mkdtemp(prefix="dg-cki-") if comm.rank == 0 else None, root=0)


@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_long_interval_one_save_per_rank(comm, graph, full, saves, dynamic, monkeypatch):
    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    finished = record_finished(monkeypatch)
    ck = os.path.join(_tmpdir(comm), "ck")
    res = closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=comm)
    ok = [same(res, full), saves == ([sorted(finished)] if finished else [])]
    comm.Barrier()
    ok.append(part_batches(ck, comm.rank) == sorted(finished))
    ok.append(part_batches(ck) == list(range(nbatches(graph))))
    assert all(comm.allgather(all(ok))), (saves, finished)


@pytest.mark.mpi
def test_mpi_ranks_save_independently(comm, graph, full, saves, monkeypatch):
    """Rank 0 saves after every batch, the others once: no save waits for another rank
    (a save writes only its rank's part file), and the result is the same."""
    finished = record_finished(monkeypatch)
    ck = os.path.join(_tmpdir(comm), "ck")
    res = closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=0 if comm.rank == 0 else LONG,
                    comm=comm)
    want = len(finished) if comm.rank == 0 else min(1, len(finished))
    ok = [same(res, full), len(saves) == want]
    assert all(comm.allgather(all(ok)))


@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_failing_batch_every_rank_saves(comm, graph, full, saves, dynamic, monkeypatch):
    """Rank 0's 2nd batch raises: every rank raises it, each rank's part file holds exactly
    the batches it finished (long interval: saved on the error), and the resume on all
    ranks is bit-identical."""
    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    finished = record_finished(monkeypatch)
    ck = os.path.join(_tmpdir(comm), "ck")
    if comm.rank == 0:
        fail_kernel_at(monkeypatch, 2, _raise)
    got = None
    try:
        closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=comm)
    except Boom as e:
        got = e
    comm.Barrier()
    ok = [got is not None, part_batches(ck, comm.rank) == sorted(finished), len(saves) <= 1]
    if comm.rank == 0:
        ok.append(len(finished) == 1)
    monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", None)
    monkeypatch.setattr(msbfs_mod, "_run_kernel", _real_kernel)
    res = closeness(graph, batch_size=BS, checkpoint=ck, resume=True, comm=comm)
    ok.append(same(res, full))
    assert all(comm.allgather(all(ok))), (got, finished, saves)


@pytest.mark.mpi
@pytest.mark.parametrize("dynamic", [True, False], ids=["first-come", "round-robin"])
def test_mpi_signal_on_one_rank_stops_all(comm, graph, full, saves, dynamic, monkeypatch, fallback_signals):
    """SIGUSR1 reaches rank 0 only, during its 2nd batch: it saves and stops; every rank
    saves what it finished and raises CheckpointInterrupted; resume bit-identical."""
    monkeypatch.setattr(msbfs_mod, "DYNAMIC_DEALING", dynamic)
    finished = record_finished(monkeypatch)
    ck = os.path.join(_tmpdir(comm), "ck")
    if comm.rank == 0:
        fail_kernel_at(monkeypatch, 2, lambda: os.kill(os.getpid(), signal.SIGUSR1))
    got = None
    try:
        closeness(graph, batch_size=BS, checkpoint=ck, checkpoint_interval=LONG, comm=comm)
    except CheckpointInterrupted as e:
        got = e.signum
    comm.Barrier()
    ok = [got == signal.SIGUSR1, fallback_signals == []]
    if comm.rank == 0:  # stopped in its 2nd batch's boundary, before the hook: that batch is saved too
        ok += [len(finished) == 1, len(saves) == 1, len(saves[0]) == 2, set(finished) < set(saves[0]),
               part_batches(ck, 0) == saves[0]]
    else:
        ok.append(part_batches(ck, comm.rank) == sorted(finished))
    monkeypatch.setattr(msbfs_mod, "_BATCH_HOOK", None)
    monkeypatch.setattr(msbfs_mod, "_run_kernel", _real_kernel)
    res = closeness(graph, batch_size=BS, checkpoint=ck, resume=True, comm=comm)
    ok.append(same(res, full))
    assert all(comm.allgather(all(ok))), (got, finished, saves)


@pytest.mark.mpi
def test_mpi_signal_with_a_collective_runner(comm, tmp_path, fallback_signals):
    """A runner every rank runs for every batch (the GPU partitioned mode's shape; a stand-in
    that adds nothing): a signal on the last rank during batch 1 (on 4 ranks a batch dealt to
    another rank) stops every rank after that batch, each saving its own finished batches."""
    from distgraph.generators import from_spec
    from distgraph.runtime.context import get_context

    g = from_spec("kron:8")
    ctx = get_context(comm, "cpu")
    last = comm.size - 1
    calls = [0]

    class Runner:
        collective = True

        def run(self, sources, per_source, out, defer=False):
            calls[0] += 1
            if calls[0] == 2 and comm.rank == last:  # batch 1: dealt to rank 1 % size
                os.kill(os.getpid(), signal.SIGUSR1)

    d = _tmpdir(comm)
    store = CheckpointStore(os.path.join(d, "ck"), {"x": 1}, comm=comm, interval=LONG)
    got = None
    try:
        msbfs_mod.run_batches(g.indptr, g.indices, g.indptr, g.indices, np.arange(g.n), per_source=False,
                              batch_size=16, ctx=ctx, store=store, runner=Runner())
    except CheckpointInterrupted as e:
        got = e.signum
    comm.Barrier()
    mine = [b for b in (0, 1) if b % comm.size == comm.rank]
    ok = [got == signal.SIGUSR1, calls[0] == 2, store.saves == min(1, len(mine)),
          part_batches(os.path.join(d, "ck"), comm.rank) == mine, fallback_signals == []]
    assert all(comm.allgather(all(ok))), (got, calls, store.saves)


_real_kernel = msbfs_mod._run_kernel
