"""Runtime: config precedence, local rank detection, progress, collective errors, CLI."""

import io
import json
import pytest

from distgraph.errors import InvalidArgumentError, GraphValueError
from distgraph.runtime.config import reload_config
from distgraph.runtime.context import local_rank_from_env
from distgraph.runtime.progress import Progress, format_seconds


def test_config_defaults_env_and_unknown_keys():
    cfg = reload_config({})
    assert cfg.bfs_alpha == 15 and cfg.bfs_beta == 18 and cfg.backend == "auto"
    cfg = reload_config({"DISTGRAPH_BFS_ALPHA": "20", "DISTGRAPH_BACKEND": "cpu"})
    assert cfg.bfs_alpha == 20 and cfg.backend == "cpu"
    with pytest.raises(InvalidArgumentError, match="unknown configuration variable DISTGRAPH_BFS_ALHPA"):
        reload_config({"DISTGRAPH_BFS_ALHPA": "1"})
    with pytest.raises(InvalidArgumentError, match="must be a int; got 'x'"):
        reload_config({"DISTGRAPH_BFS_ALPHA": "x"})
    with pytest.raises(InvalidArgumentError, match="auto, cpu or gpu"):
        reload_config({"DISTGRAPH_BACKEND": "tpu"})


@pytest.mark.parametrize("env,expected", [
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (3, 4)),
    ({"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}, (1, 2)),
    ({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "8"}, (2, 8)),
    ({}, (None, None)),
])
def test_local_rank_from_launcher_variables(env, expected):
    assert local_rank_from_env(env) == expected


def test_progress_prints_eta_lines_when_not_a_tty():
    buf = io.StringIO()
    with Progress(total=4, desc="batches", enabled=True, interval=0.0, stream=buf) as p:
        for _ in range(4):
            p.update()
    lines = buf.getvalue().strip().splitlines()
    assert lines[-1].startswith("batches [") and "4/4" in lines[-1] and "100.0%" in lines[-1]
    assert "eta" in lines[1]
    assert format_seconds(3725) == "1:02:05"


def test_progress_is_silent_off_rank_zero():
    buf = io.StringIO()
    with Progress(total=2, enabled=True, rank=1, stream=buf) as p:
        p.update(2)
    assert buf.getvalue() == ""


@pytest.mark.mpi
def test_collective_raise_reaches_every_rank(comm):
    from distgraph.runtime.abort import collective_raise

    exc = GraphValueError("bad on the last rank") if comm.Get_rank() == comm.Get_size() - 1 else None
    with pytest.raises(GraphValueError, match="bad on the last rank"):
        collective_raise(comm, exc)
    collective_raise(comm, None)  # no error anywhere: returns on every rank


def _cli(*args, n=None, env=None):
    from distgraph.testing import run_cli

    return run_cli(*args, n=n, env=env)


def test_cli_info_json():
    r = _cli("info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["backend"] in ("cpu", "gpu") and info["mpi_vendor"]


def test_cli_gpu_backend_without_gpu_is_a_clear_error():
    from distgraph.runtime.context import gpu_count

    if gpu_count():
        pytest.skip("a GPU is visible")
    r = _cli("info", "--backend", "gpu")
    assert r.returncode != 0
    assert "pip install" in r.stderr and r.stderr.count("\n") == 1


def test_cli_bad_environment_is_one_line():
    r = _cli("info", env={"DISTGRAPH_NOPE": "1"})
    assert r.returncode != 0 and "unknown configuration variable DISTGRAPH_NOPE" in r.stderr


def test_cli_rank_failure_aborts_the_job_without_hanging(tmp_path):
    """A file that exists on no rank: every rank raises, the job exits non-zero, quickly."""
    r = _cli("stats", str(tmp_path / "missing.mtx"), n=2)
    assert r.returncode != 0
    assert "GRAPH must be an existing file" in r.stderr


_HOOK_SCRIPT = """
import sys
from mpi4py import MPI
from distgraph.errors import InvalidArgumentError
from distgraph.runtime.abort import collective_check, collective_raise, install_abort_hook
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
install_abort_hook(comm)
kind = sys.argv[1]
if kind == "all":  # found on rank 1, raised on every rank by collective_raise
    collective_raise(comm, ValueError("bad input on rank 1") if rank == 1 else None)
elif kind == "check":  # an argument check failing on rank 1, raised on every rank
    collective_check(comm, InvalidArgumentError("k must be positive; got -1") if rank == 1 else None, {"k": 1})
elif kind == "sub":  # raised together by ranks 1 and 2 only, while rank 0 waits in the world
    sub = comm.Split(1 if rank > 0 else 0, rank)
    if rank > 0:
        collective_raise(sub, ValueError("bad input on sub rank 0") if rank == 1 else None)
elif rank == 1:  # one rank fails while the other waits in a collective
    raise ValueError("rank 1 alone failed")
comm.Barrier()
"""


@pytest.mark.parametrize("kind, n", [("all", 2), ("check", 2), ("one", 2), ("sub", 3)])
def test_abort_hook_ends_the_job_with_the_message(tmp_path, kind, n):
    """install_abort_hook: an error every rank raised together (collective_raise,
    collective_check) ends the job normally, status 1, the message once with the rank that
    found it, no MPI_Abort; an error on one rank while the other waits in a barrier aborts
    the job with the message (after ABORT_GRACE_S), no hang; so does an error raised
    together on a sub-communicator that leaves rank 0 waiting in the world's barrier."""
    import subprocess
    import sys

    from distgraph.testing import clean_mpi_env, mpiexec_path

    script = tmp_path / "hook.py"
    script.write_text(_HOOK_SCRIPT)
    r = subprocess.run([mpiexec_path(), "-n", str(n), sys.executable, str(script), kind], capture_output=True,
                       text=True, timeout=120, env=clean_mpi_env())
    if kind in ("all", "check"):
        want = ("distgraph: rank 1: ValueError: bad input on rank 1" if kind == "all" else
                "distgraph: rank 1: InvalidArgumentError: k must be positive; got -1 (on rank 1)")
        assert r.returncode == 1, r.stderr
        assert r.stderr.count(want) == 1, r.stderr
        assert "MPI_Abort" not in r.stderr and r.stderr.count("distgraph:") == 1, r.stderr
    else:
        assert r.returncode != 0
        want = "rank 1 alone failed" if kind == "one" else "bad input on sub rank 0"
        assert "ValueError: " + want in r.stderr, r.stderr


def test_collective_errors_are_marked():
    """collective_raise / collective_check mark what they raise on more than one rank; a
    plain error is not marked; on one rank they raise the error as it is."""
    from distgraph.runtime.abort import _on_all_ranks, collective_check, collective_raise, raised_on_all_ranks

    from mpi4py import MPI

    e = ValueError("x")
    assert not raised_on_all_ranks(e)
    with pytest.raises(ValueError) as got:
        collective_raise(None, e)
    assert got.value is e and not raised_on_all_ranks(got.value)
    with pytest.raises(InvalidArgumentError) as got:
        collective_check(None, InvalidArgumentError("y"), {})
    assert not raised_on_all_ranks(got.value)
    z = _on_all_ranks(ValueError("z"), MPI.COMM_SELF, 0)
    assert raised_on_all_ranks(z) and raised_on_all_ranks(z, MPI.COMM_SELF)
    # marked for COMM_SELF, so not raised on every rank of a world of more than one rank
    assert raised_on_all_ranks(z, MPI.COMM_WORLD) == (MPI.COMM_WORLD.Get_size() == 1)


def test_a_sub_communicator_keeps_the_process_gpu(monkeypatch):
    """get_context(MPI.COMM_SELF, "gpu") inside an MPI job (a one-rank runner on rank 1) keeps
    the GPU the COMM_WORLD context bound, else the launcher's local rank, else the current
    device: it used to bind GPU local_rank(COMM_SELF) = 0, so rank 1's CuPy work left its GPU
    and its NVSHMEM heap (the multi-PE Bellman-Ford tests hung on two H200s). No GPU: a
    stand-in CuPy records the binding."""
    import sys
    import types

    from mpi4py import MPI

    from distgraph.runtime import context

    used = []
    cur = {"dev": 0}

    class Device:
        def __init__(self, i=None):
            self.i = cur["dev"] if i is None else i

        def use(self):
            used.append(self.i)
            cur["dev"] = self.i

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device, runtime=types.SimpleNamespace(
        getDevice=lambda: cur["dev"])))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(context, "gpu_count", lambda: 2)
    for v in context._LOCAL_RANK_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(context, "_ctx", context.Context(MPI.COMM_WORLD, 1, 2, 1, 2, "gpu", 1))
    assert context.get_context(MPI.COMM_SELF, "gpu").device == 1 and used == [1]
    # no world context: the launcher's local rank (3 % 2), else the current device
    monkeypatch.setattr(context, "_ctx", None)
    cur["dev"] = 0
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3")
    assert context.get_context(MPI.COMM_SELF, "gpu").device == 1 and used[-1] == 1
    monkeypatch.delenv("OMPI_COMM_WORLD_LOCAL_RANK")
    cur["dev"] = 1
    assert context.get_context(MPI.COMM_SELF, "gpu").device == 1 and used == [1, 1, 1]
