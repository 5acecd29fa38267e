"""Durable checkpoints of batched runs (closeness, multi-source BFS): resume a killed
job to bit-identical results, with no batch lost or counted twice.

Layout of a checkpoint directory::

    manifest.json                 what run this is (graph checksum, sources, options)
    part-<session>-r<rank>.npz    one file per rank and session: the ids of the batches
                                  this rank finished in this session, and the sums of
                                  their partial results (exact integers)

A rank rewrites its own part file when it saves: written to ``*.tmp``, flushed,
fsync'ed, then renamed over the old one (``os.replace`` is atomic), so a kill at any
moment leaves either the old or the new file, never a torn one. The batch driver
(:func:`distgraph.algorithms.msbfs.run_batches`) saves after a finished batch once
``interval`` seconds have passed since this rank's last save (``0``: after every
batch; default ``DISTGRAPH_CHECKPOINT_INTERVAL``, 60 s), at the end of the run, when
a batch or anything else fails (what was finished before is saved, then the error is
raised), and at the first batch boundary after a ``SIGTERM`` or ``SIGUSR1``
(:class:`StopSignals`; then :class:`CheckpointInterrupted` is raised on every rank).
The decisions are each rank's own: a save writes only that rank's part file and has
no collective step, so ranks that save at different moments never wait for each
other (and first-come dealing keeps ranks out of step on purpose). A kill loses at
most the batches a rank finished in the last ``interval`` seconds.

A part file holds only batches done in its session; files of earlier sessions
are never touched again, so the batch sets of all part files are disjoint. On resume
the sums of all part files are added (integers: the order does not matter) and the
batches they list are skipped; :class:`~distgraph.errors.CheckpointError` is raised
when the manifest does not match the run (another graph, other sources, another
convention or batch size) or when two part files claim the same batch.

This module knows nothing of algorithms: the caller supplies the identity dict and
the named integer arrays.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import signal
import threading
import time
import uuid

import numpy as np

from ..errors import CheckpointError

__all__ = ["CheckpointStore", "CheckpointInterrupted", "StopSignals", "graph_checksum", "array_checksum"]

FORMAT = 1

#: the clock of the save interval (tests replace it)
_clock = time.monotonic


def _make_directory(path, what: str) -> None:
    """``os.makedirs(path, exist_ok=True)``, failing with a :class:`CheckpointError` that names
    ``what`` and ``path`` (not a bare ``[Errno 20] Not a directory``)."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise CheckpointError(f"{what} {os.fspath(path)!r} cannot be created: {e.strerror or e}") from None


class CheckpointInterrupted(CheckpointError):
    """A checkpointed run stopped by ``SIGTERM`` or ``SIGUSR1`` (:class:`StopSignals`)
    after every rank saved what it had finished: run again with ``resume=True``
    (``--resume``) to continue. ``signum`` is the signal."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"stopped by {signal.Signals(self.signum).name} after saving the checkpoint; "
                         "run again with resume=True (--resume) to continue")

    def __reduce__(self):  # raised on every rank: pickled by collective_raise
        return type(self), (self.signum,)


class StopSignals:
    """While active (a ``with`` block, main thread only), ``SIGTERM`` and ``SIGUSR1`` only
    set :attr:`signum` instead of ending the process; the batch driver then saves the
    checkpoint at the next batch boundary and raises :class:`CheckpointInterrupted`.
    Slurm sends ``SIGTERM`` to every task on preemption, requeue, cancel and at the
    time limit (``SIGKILL`` follows ``KillWait`` seconds later), and ``SIGUSR1`` where
    the job asks for it (``deploy/slurm/closeness.sbatch``). The previous handlers are
    restored on exit. Outside the main thread nothing is installed."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

    def __init__(self):
        self.signum = None
        self._old = {}

    def _handler(self, signum, frame):
        if self.signum is None:
            self.signum = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self._old[s] = signal.signal(s, self._handler)
            if self.signum is None and _EARLY["signum"] is not None:  # came while the command started
                self.signum, _EARLY["signum"] = _EARLY["signum"], None
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old.clear()
        return False


_EARLY = {"signum": None, "old": {}}  # the first stop signal recorded by defer_stop_signals' handler


def _early_handler(signum, frame):
    if _EARLY["signum"] is None:
        _EARLY["signum"] = signum


def defer_stop_signals() -> None:
    """From now on (main thread only), ``SIGTERM`` and ``SIGUSR1`` are recorded instead of
    ending the process, and the next :class:`StopSignals` block takes the first one: it then
    saves at its first batch boundary and raises :class:`CheckpointInterrupted`. A
    checkpointed command calls this first thing, and the handler stays in place outside the
    run's block too: otherwise a signal that reaches a rank outside it -- still reading the
    graph, or done with its batches and waiting for the others in the final collectives --
    kills that rank, and the launcher ends the others (srun: rank 1 killed by SIGUSR1, rank
    0 by SIGTERM, exit 143 instead of 138 in a CI run of tests/test_slurm.py). A rank that
    records one there ends as the others do: stopped with them if one of them was still
    running (the error is raised on every rank), normally if all had finished.
    :func:`restore_stop_signals` ends it (the CLI: once the run has returned)."""
    if threading.current_thread() is threading.main_thread():
        for s in StopSignals.SIGNALS:
            old = signal.signal(s, _early_handler)
            if old is not _early_handler:
                _EARLY["old"].setdefault(s, old)


def restore_stop_signals() -> None:
    """Undo :func:`defer_stop_signals`: the handlers from before it, and a recorded signal
    forgotten (no later run takes it). A signal recorded after the last run's block ended
    is not acted on: that run has finished."""
    if threading.current_thread() is threading.main_thread():
        for s, h in _EARLY["old"].items():
            signal.signal(s, h)
    _EARLY["old"] = {}
    _EARLY["signum"] = None


def array_checksum(*arrays) -> str:
    """blake2b (128-bit) of the arrays' dtypes, shapes and bytes."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def graph_checksum(graph) -> str:
    """Checksum of a graph's structure (CSR arrays and directedness)."""
    return array_checksum(np.asarray(graph.indptr, dtype=np.int64), np.asarray(graph.indices, dtype=np.int64),
                          np.array([1 if graph.directed else 0]))


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_atomic(path: str, write) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


class CheckpointStore:
    """A checkpoint directory shared by all ranks of one run.

    Parameters
    ----------
    directory : str or os.PathLike
        Created if missing (all ranks must see the same directory).
    identity : dict
        JSON-serializable description of the run; stored in ``manifest.json`` and
        compared on resume.
    comm : mpi4py communicator or None
        Collective: every rank constructs the store, errors are raised on all ranks.
    resume : bool
        ``False`` refuses a directory that already holds a run; ``True`` continues it
        (or starts a new one when the directory is empty).
    hints : dict or None
        ``{identity key: advice}``: appended to the refusal when that key differs (what
        to change so that the run matches the checkpoint).
    interval : float or None
        Seconds between this rank's saves during a run (:meth:`due`); ``0`` saves after
        every batch. Default ``config.checkpoint_interval`` (``DISTGRAPH_CHECKPOINT_INTERVAL``,
        60). Not part of the run's identity: a run may resume with another interval.

    Raises
    ------
    CheckpointError
        The directory holds another run, or a run while ``resume`` is false.
    """

    def __init__(self, directory, identity: dict, comm=None, resume: bool = False, hints: dict | None = None,
                 interval: float | None = None):
        from .abort import collective_raise
        from .config import config

        given = config.checkpoint_interval if interval is None else interval
        try:
            interval = float(given)
        except (TypeError, ValueError):
            interval = float("nan")
        if not interval >= 0:  # also NaN
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(f"checkpoint interval must be a number of seconds >= 0; got {given!r}")
        self.interval = interval
        #: durable writes of this rank's part file so far
        self.saves = 0
        self._last = _clock()
        self.directory = os.fspath(directory)
        self.identity = dict(identity, format=FORMAT)
        self.hints = dict(hints or {})
        self.comm = comm
        self.rank = 0 if comm is None else comm.Get_rank()
        err = None
        session = None
        if self.rank == 0:
            try:
                session = self._open_root(resume)
            except Exception as e:  # reported collectively below
                err = e
        collective_raise(comm, err)
        self.session = session if comm is None else comm.bcast(session, root=0)
        self.path = os.path.join(self.directory, f"part-{self.session}-r{self.rank}.npz")

    # ----------------------------------------------------------------- rank 0
    def _open_root(self, resume: bool) -> str:
        _make_directory(self.directory, "checkpoint directory")
        man = os.path.join(self.directory, "manifest.json")
        ident = json.loads(json.dumps(self.identity))  # normalized as it would read back
        if os.path.exists(man):
            try:
                with open(man) as f:
                    stored = json.load(f)
            except (OSError, ValueError) as e:
                raise CheckpointError(f"checkpoint manifest {man} is unreadable: {e}") from None
            if not resume:
                raise CheckpointError(
                    f"checkpoint directory {self.directory} already holds a run; pass resume=True "
                    "(--resume) to continue it, or use an empty directory")
            diff = sorted(k for k in set(stored) | set(ident) if stored.get(k) != ident.get(k))
            if diff:
                detail = "; ".join(f"{k}: checkpoint has {stored.get(k)!r}, this run has {ident.get(k)!r}"
                                   + (f" ({self.hints[k]})" if k in self.hints else "") for k in diff)
                raise CheckpointError(
                    f"checkpoint in {self.directory} belongs to another run ({detail}); "
                    "resume with the same graph and options, or use another directory")
        else:
            if glob.glob(os.path.join(self.directory, "part-*.npz")):
                raise CheckpointError(f"checkpoint directory {self.directory} has part files but no manifest.json")
            _write_atomic(man, lambda f: f.write(json.dumps(ident, indent=1, sort_keys=True).encode()))
        return uuid.uuid4().hex[:16]

    # ------------------------------------------------------------- all ranks
    def load(self):
        """``(done, sums)``: sorted int64 ids of the batches finished by earlier sessions,
        and a dict of the summed arrays of their part files (``{}`` when none)."""
        done_parts = []
        sums: dict[str, np.ndarray] = {}
        mine = f"part-{self.session}-"
        for p in sorted(glob.glob(os.path.join(self.directory, "part-*.npz"))):
            if os.path.basename(p).startswith(mine):
                continue  # written by this very run, after it loaded
            try:
                with np.load(p) as z:
                    done_parts.append(np.asarray(z["batches"], dtype=np.int64))
                    for k in z.files:
                        if k == "batches":
                            continue
                        a = z[k]
                        sums[k] = a.copy() if k not in sums else sums[k] + a
            except (OSError, ValueError, KeyError) as e:
                raise CheckpointError(f"checkpoint file {p} is unreadable: {e}") from None
        done = np.concatenate(done_parts) if done_parts else np.zeros(0, np.int64)
        done.sort()
        if done.size > 1 and np.any(done[1:] == done[:-1]):
            dup = int(done[1:][done[1:] == done[:-1]][0])
            raise CheckpointError(f"checkpoint in {self.directory} counts batch {dup} twice; it is corrupt")
        return done, sums

    def due(self) -> bool:
        """Whether ``interval`` seconds have passed since this rank's last save (or since
        the store was opened); always true for interval 0. Rank-local, no communication."""
        return self.interval <= 0 or _clock() - self._last >= self.interval

    def save(self, batches, arrays: dict) -> None:
        """Durably replace this rank's part file of this session (rank-local: no
        collective, any rank may save at any moment)."""
        payload = dict(arrays, batches=np.asarray(batches, dtype=np.int64))
        _write_atomic(self.path, lambda f: np.savez(f, **payload))
        self.saves += 1
        self._last = _clock()
