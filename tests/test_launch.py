"""The launchers of launch/: per-rank plans (binding, threads, NVSHMEM, precedence), the command
lines they build for MPICH, Open MPI and srun, and real runs on 1 and 2 ranks (CPU backend)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from distgraph.testing import clean_mpi_env, mpiexec_path

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ROOT / "launch"
sys.path.insert(0, str(LAUNCH))
import dglaunch  # noqa: E402
from dglaunch import LaunchError, plan_rank_env  # noqa: E402

GPUS4 = ["0", "1", "2", "3"]

# Not MPI tests: they start their own jobs, so they run once, in the 1-rank stage of tests/run.sh.
pytestmark = pytest.mark.skipif(int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1) > 1,
                                reason="not an MPI test (it starts its own jobs): runs in the 1-rank stage")


def plan(env=None, local=(0, 1), gpu_list=(), **kw):
    return plan_rank_env(dict(env or {}), local=local, gpu_list=None if gpu_list is None else list(gpu_list), **kw)


# ---------------------------------------------------------------------------------------------
# Sizes and memory plans


def test_parse_and_format_size():
    assert dglaunch.parse_size("4G") == 4 << 30
    assert dglaunch.parse_size("512m") == 512 << 20
    assert dglaunch.parse_size("1.5G") == 3 << 29
    assert dglaunch.parse_size("2GiB") == 2 << 30
    assert dglaunch.parse_size("4096") == 4096
    assert dglaunch.format_size(4 << 30) == "4096M"
    assert dglaunch.format_size(1) == "1M"
    for bad in ("", "four", "4X", "-1G", "0"):
        with pytest.raises(LaunchError, match="must be"):
            dglaunch.parse_size(bad, "symmetric heap size")


def test_memory_plan(tmp_path):
    p = tmp_path / "plan.json"
    p.write_text(json.dumps({"nvshmem_symmetric_bytes": 1 << 30}))
    # 1 GiB * 1.1 + 256 MiB = 1382.4 MiB -> 1383M
    assert dglaunch.symmetric_size_from_plan(str(p)) == "1383M"
    p.write_text(json.dumps({"plan": {"symmetric_bytes": 100 << 20}}))
    assert dglaunch.symmetric_size_from_plan(str(p)) == "366M"
    p.write_text(json.dumps({"device_bytes": 5}))
    with pytest.raises(LaunchError, match="none of the keys"):
        dglaunch.symmetric_size_from_plan(str(p))
    p.write_text("{not json")
    with pytest.raises(LaunchError, match="must be a JSON file"):
        dglaunch.symmetric_size_from_plan(str(p))
    with pytest.raises(LaunchError, match="readable JSON file"):
        dglaunch.symmetric_size_from_plan(str(tmp_path / "missing.json"))


# ---------------------------------------------------------------------------------------------
# Per-rank plans


def test_gpu_binding_device_mode():
    for lr in range(6):
        r = plan(local=(lr, 6), gpu_list=GPUS4)
        assert r["set"]["DISTGRAPH_DEVICE"] == str(lr % 4)
        assert r["gpu"] == str(lr % 4)
        assert "CUDA_VISIBLE_DEVICES" not in r["set"]  # every GPU stays visible


def test_gpu_binding_visible_mode_and_job_devices():
    r = plan({"CUDA_VISIBLE_DEVICES": "4,5"}, local=(3, 4), bind="visible", gpu_list=None)
    assert r["set"]["CUDA_VISIBLE_DEVICES"] == "5" and "DISTGRAPH_DEVICE" in r["unset"]
    r = plan({"CUDA_VISIBLE_DEVICES": "4,5"}, local=(3, 4), gpu_list=None)
    assert r["set"]["DISTGRAPH_DEVICE"] == "1" and r["gpu"] == "5"
    # Slurm's --gpu-bind=single:1: one GPU per task, kept whatever the local rank.
    r = plan({"CUDA_VISIBLE_DEVICES": "2"}, local=(2, 4), bind="visible", gpu_list=None)
    assert r["set"]["CUDA_VISIBLE_DEVICES"] == "2"
    # an explicit list or count
    assert plan(local=(1, 2), gpus="6,7", bind="visible")["set"]["CUDA_VISIBLE_DEVICES"] == "7"
    r = plan(local=(1, 2), gpus="2")
    assert r["set"]["DISTGRAPH_DEVICE"] == "1" and r["set"]["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_no_gpus_and_bind_none():
    r = plan(local=(1, 2), gpus="none")
    assert r["gpu"] is None and r["set"]["DISTGRAPH_BACKEND"] == "cpu"
    assert "DISTGRAPH_DEVICE" not in r["set"]
    r = plan({"DISTGRAPH_BACKEND": "auto"}, local=(1, 2), gpus="none")
    assert r["set"]["DISTGRAPH_BACKEND"] == "auto"  # the user's choice is kept
    r = plan(local=(1, 2), gpu_list=GPUS4, bind="none")
    assert r["gpu"] is None and "DISTGRAPH_DEVICE" not in r["set"]
    r = plan(local=(0, 1), gpu_list=[])  # a CPU machine
    assert r["gpu"] is None and "DISTGRAPH_DEVICE" not in r["set"]
    with pytest.raises(LaunchError, match="gpus must be"):
        plan(gpus="0;1")
    with pytest.raises(LaunchError, match="bind must be"):
        plan(bind="socket")


def test_local_rank_comes_from_the_runtime():
    # No explicit local: the launcher variables are read by distgraph.runtime.context.
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    r = plan_rank_env(env, gpu_list=["0", "1"])
    assert (r["local_rank"], r["local_size"], r["set"]["DISTGRAPH_DEVICE"]) == (3, 4, "1")
    r = plan_rank_env({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "4"}, gpu_list=GPUS4)
    assert r["set"]["DISTGRAPH_DEVICE"] == "2"
    r = plan_rank_env({}, gpu_list=GPUS4)  # not under a launcher: rank 0 of 1
    assert (r["local_rank"], r["local_size"]) == (0, 1)


def test_threads_precedence():
    env = {"DISTGRAPH_LAUNCH_THREADS": "3", "OMP_NUM_THREADS": "5", "SLURM_CPUS_PER_TASK": "7"}
    assert plan(env, threads="2")["set"]["OMP_NUM_THREADS"] == "2"  # flag
    assert plan(env)["set"]["OMP_NUM_THREADS"] == "3"  # DISTGRAPH_LAUNCH_THREADS
    env.pop("DISTGRAPH_LAUNCH_THREADS")
    assert plan(env)["set"]["OMP_NUM_THREADS"] == "5"  # the user's OMP_NUM_THREADS
    env.pop("OMP_NUM_THREADS")
    assert plan(env)["set"]["NUMBA_NUM_THREADS"] == "7"  # Slurm's cpus per task
    n = int(plan({}, local=(0, 1))["set"]["OMP_NUM_THREADS"])
    assert 1 <= n <= (os.cpu_count() or 1)
    many = plan({}, local=(0, 10 * (os.cpu_count() or 1)))
    assert many["set"]["OMP_NUM_THREADS"] == "1"  # never 0
    for v in dglaunch.THREAD_VARS:
        assert plan({}, threads="4")["set"][v] == "4"
    with pytest.raises(LaunchError, match="threads per rank must be a positive integer"):
        plan(threads="0")


def test_nvshmem_variables_and_precedence(tmp_path):
    r = plan({"SLURM_JOB_NUM_NODES": "1"})
    assert r["set"]["NVSHMEM_DISABLE_NVLS"] == "1"
    assert r["set"]["NVSHMEM_REMOTE_TRANSPORT"] == "none"
    assert "NVSHMEM_SYMMETRIC_SIZE" not in r["set"]
    r = plan({"SLURM_JOB_NUM_NODES": "2"})
    assert "NVSHMEM_REMOTE_TRANSPORT" not in r["set"]  # several nodes: NVSHMEM's default (IB)
    # the user's variables are kept ...
    r = plan({"NVSHMEM_DISABLE_NVLS": "0", "NVSHMEM_SYMMETRIC_SIZE": "8G"})
    assert "NVSHMEM_DISABLE_NVLS" not in r["set"] and "NVSHMEM_SYMMETRIC_SIZE" not in r["set"]
    # ... unless a flag or a DISTGRAPH_LAUNCH_* variable says otherwise
    assert plan({"NVSHMEM_DISABLE_NVLS": "0"}, nvls="0")["set"]["NVSHMEM_DISABLE_NVLS"] == "1"
    assert plan({}, nvls="1")["set"]["NVSHMEM_DISABLE_NVLS"] == "0"
    assert plan({"DISTGRAPH_LAUNCH_NVLS": "1"})["set"]["NVSHMEM_DISABLE_NVLS"] == "0"
    assert plan({"NVSHMEM_SYMMETRIC_SIZE": "8G"}, symmetric_size="2G")["set"]["NVSHMEM_SYMMETRIC_SIZE"] == "2048M"
    pf = tmp_path / "plan.json"
    pf.write_text(json.dumps({"nvshmem_symmetric_bytes": 3 << 30}))
    assert plan({}, memory_plan=str(pf))["set"]["NVSHMEM_SYMMETRIC_SIZE"] == "3636M"
    assert plan({"DISTGRAPH_LAUNCH_MEMORY_PLAN": str(pf)})["set"]["NVSHMEM_SYMMETRIC_SIZE"] == "3636M"
    # --symmetric-size beats --memory-plan
    assert plan({}, memory_plan=str(pf), symmetric_size="1G")["set"]["NVSHMEM_SYMMETRIC_SIZE"] == "1024M"
    assert plan({"DISTGRAPH_LAUNCH_SYMMETRIC_SIZE": "512M"})["set"]["NVSHMEM_SYMMETRIC_SIZE"] == "512M"
    with pytest.raises(LaunchError, match="nvls must be 0 or 1"):
        plan(nvls="yes")


def test_nvshmem_bootstrap_by_launcher():
    assert plan({"OMPI_COMM_WORLD_RANK": "0"})["set"]["NVSHMEM_BOOTSTRAP"] == "MPI"
    assert plan({"MPI_LOCALRANKID": "0"})["set"]["NVSHMEM_BOOTSTRAP"] == "PMI"
    r = plan({"SLURM_STEP_ID": "0", "PMIX_RANK": "0"})
    assert (r["set"]["NVSHMEM_BOOTSTRAP"], r["set"]["NVSHMEM_BOOTSTRAP_PMI"]) == ("PMI", "PMIX")
    r = plan({"SLURM_STEP_ID": "0", "PMI_FD": "5"})
    assert (r["set"]["NVSHMEM_BOOTSTRAP"], r["set"]["NVSHMEM_BOOTSTRAP_PMI"]) == ("PMI", "PMI-2")
    assert "NVSHMEM_BOOTSTRAP" not in plan({"NVSHMEM_BOOTSTRAP": "UID", "MPI_LOCALRANKID": "0"})["set"]


def test_launch_variables_are_checked_and_removed():
    with pytest.raises(LaunchError, match="unknown launcher variable DISTGRAPH_LAUNCH_THRADS"):
        plan({"DISTGRAPH_LAUNCH_THRADS": "2"})
    r = plan({"DISTGRAPH_LAUNCH_THREADS": "2", "DISTGRAPH_LAUNCH_BIND": "visible"}, gpu_list=GPUS4)
    assert r["unset"] == ["DISTGRAPH_DEVICE", "DISTGRAPH_LAUNCH_BIND", "DISTGRAPH_LAUNCH_THREADS"]
    # the runtime config accepts every launcher variable (it would reject a typo)
    from distgraph.runtime.config import reload_config

    reload_config({k: "1" for k in dglaunch.LAUNCH_VARS})


# ---------------------------------------------------------------------------------------------
# Command lines


def test_mpirun_command_line_mpich():
    mpx = mpiexec_path()
    line, dry = dglaunch.mpirun_argv(["-n", "4", "--mpiexec", mpx, "--flavor", "mpich", "--threads", "2",
                                      "--dry-run", "distgraph", "bfs", "kron:10", "-n", "3"], environ={})
    assert dry
    i = line.index("--")
    assert line[0].endswith("mpiexec") and line[1:3] == ["-n", "4"]
    assert line[3:5] == [sys.executable, dglaunch.BIND]
    assert line[5:i] == ["--threads", "2"]
    # 'distgraph' is this Python's; the command keeps its own -n
    assert line[i + 1:] == [sys.executable, "-m", "distgraph", "bfs", "kron:10", "-n", "3"]
    assert "--bind-to" not in line and "-x" not in line


def test_mpirun_command_line_openmpi_and_env_options(tmp_path):
    env = {"PATH": "/usr/bin", "DISTGRAPH_BACKEND": "cpu", "NVSHMEM_DEBUG": "WARN",
           "DISTGRAPH_LAUNCH_GPUS": "2", "DISTGRAPH_LAUNCH_MEMORY_PLAN": "plan.json"}
    line, _ = dglaunch.mpirun_argv(["-n", "2", "--mpiexec", mpiexec_path(), "--flavor", "openmpi",
                                    "--", "distgraph", "info"], environ=env)
    s = " ".join(line)
    assert "--bind-to none" in s
    assert "-x PATH" in s and "-x DISTGRAPH_BACKEND" in s and "-x NVSHMEM_DEBUG" in s
    assert "DISTGRAPH_LAUNCH" not in s  # resolved into arguments, not forwarded
    assert "--gpus 2" in s and f"--memory-plan {os.path.abspath('plan.json')}" in s
    assert ("--allow-run-as-root" in s) == (os.geteuid() == 0)
    line, _ = dglaunch.mpirun_argv(["--mpiexec", mpiexec_path(), "--flavor", "openmpi",
                                    "--mpi-arg=--bind-to", "--mpi-arg=core", "true"], environ={})
    assert line.count("--bind-to") == 1 and line[1:3] == ["-n", "1"] and "--oversubscribe" not in line
    many = str(2 * (os.cpu_count() or 1))
    line, _ = dglaunch.mpirun_argv(["--mpiexec", mpiexec_path(), "--flavor", "openmpi", "-n", many, "true"], environ={})
    assert "--oversubscribe" in line  # more ranks than cores on one machine
    line, _ = dglaunch.mpirun_argv(["--mpiexec", mpiexec_path(), "--flavor", "openmpi", "-n", many, "true"],
                                   environ={"SLURM_JOB_ID": "7"})
    assert "--oversubscribe" not in line  # inside an allocation the slots are real


def test_srun_command_line():
    line, dry = dglaunch.srun_argv(["--mpi", "pmi2", "-n", "4", "--gpus", "none", "--dry-run",
                                    "distgraph", "closeness", "kron:8"], environ={})
    assert dry and line[1:4] == ["-n", "4", "--mpi=pmi2"] and "--kill-on-bad-exit=1" in line
    assert line[line.index("--") + 1:][:3] == [sys.executable, "-m", "distgraph"]
    line, _ = dglaunch.srun_argv(["--dry-run", "hostname"], environ={"DISTGRAPH_LAUNCH_SRUN_MPI": "pmix"})
    assert "--mpi=pmix" in line and "-n" not in line


def test_launcher_errors_exit_2():
    env = clean_mpi_env()
    for argv, msg in ((["-n", "2"], "COMMAND is missing"), (["-n", "0", "true"], "-n must be a positive"),
                      (["--mpiexec", "/no/such/mpiexec", "true"], "was not found")):
        r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-mpirun"), *argv],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 2 and msg in r.stderr and r.stderr.startswith("distgraph-mpirun: error:"), r.stderr
    r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-bind"), "--", "/no/such/program"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "cannot run" in r.stderr


# ---------------------------------------------------------------------------------------------
# Real runs (CPU backend, MPICH's mpiexec of the environment)

# Each rank writes what it sees to DIR/rank-R.json (ranks' stdout lines may interleave).
PROBE = ("import json, os, sys; from mpi4py import MPI; c = MPI.COMM_WORLD; "
         "json.dump({'rank': c.rank, 'size': c.size, 'env': {k: v for k, v in os.environ.items() "
         "if k.startswith(('DISTGRAPH', 'OMP_', 'NUMBA_', 'NVSHMEM_', 'CUDA_VISIBLE'))}}, "
         "open(os.path.join(sys.argv[1], f'rank-{c.rank}.json'), 'w'))")


@pytest.mark.parametrize("np_", [1, 2])
def test_mpirun_binds_each_rank(np_, tmp_path):
    env = clean_mpi_env({"DISTGRAPH_LAUNCH_THREADS": "1", "DISTGRAPH_BACKEND": "cpu"})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-mpirun"), "-n", str(np_), "--gpus", "3",
                        "python", "-c", PROBE, str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [json.loads((tmp_path / f"rank-{i}.json").read_text()) for i in range(np_)]
    assert [d["rank"] for d in rows] == list(range(np_)) and all(d["size"] == np_ for d in rows)
    for d in rows:
        e = d["env"]
        assert e["DISTGRAPH_DEVICE"] == str(d["rank"] % 3)  # one node: local rank == rank
        assert e["CUDA_VISIBLE_DEVICES"] == "0,1,2"
        assert e["OMP_NUM_THREADS"] == e["NUMBA_NUM_THREADS"] == "1"
        assert e["NVSHMEM_DISABLE_NVLS"] == "1" and e["NVSHMEM_BOOTSTRAP"] == "PMI"
        assert not any(k.startswith("DISTGRAPH_LAUNCH_") for k in e)


def test_bind_print_under_mpiexec():
    env = clean_mpi_env()
    r = subprocess.run([mpiexec_path(), "-n", "2", sys.executable, str(LAUNCH / "distgraph-bind"), "--print",
                        "--gpus", "0,1", "--bind", "visible", "--threads", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    plans = sorted((json.loads(l) for l in r.stdout.splitlines() if l.startswith("{") and l.endswith("}")),
                   key=lambda d: d["local_rank"])
    assert [p["set"]["CUDA_VISIBLE_DEVICES"] for p in plans] == ["0", "1"]
    assert [p["local_size"] for p in plans] == [2, 2]


def test_distgraph_runs_through_the_launcher():
    env = clean_mpi_env()
    r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-mpirun"), "-n", "2", "--gpus", "none",
                        "--threads", "1", "distgraph", "info", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["ranks"] == 2 and info["backend"] == "cpu"
    # a distgraph error still reaches the user with distgraph's exit status
    r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-mpirun"), "-n", "1", "--gpus", "none",
                        "distgraph", "info", "--backend", "gpu"], capture_output=True, text=True, env=env, timeout=120)
    from distgraph.runtime.context import gpu_count

    if gpu_count() == 0:
        assert r.returncode != 0 and "backend 'gpu'" in r.stderr


def _open_mpi():
    for name in ("mpirun.openmpi", "orterun", "prterun"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_open_mpi() is None, reason="Open MPI's mpirun is not installed (Debian: openmpi-bin)")
def test_mpirun_with_open_mpi(tmp_path):
    # Open MPI's own local-rank variables, and the flags the launcher adds for it, for real
    probe = ("import json, os, sys; r = os.environ['OMPI_COMM_WORLD_RANK']; "
             "json.dump(dict(os.environ), open(os.path.join(sys.argv[1], f'rank-{r}.json'), 'w'))")
    env = clean_mpi_env({"DISTGRAPH_LAUNCH_THREADS": "1"})
    r = subprocess.run([sys.executable, str(LAUNCH / "distgraph-mpirun"), "--mpiexec", _open_mpi(), "-n", "2", "--gpus", "2", "--", "python", "-c", probe, str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        e = json.loads((tmp_path / f"rank-{rank}.json").read_text())
        assert e["OMPI_COMM_WORLD_LOCAL_RANK"] == str(rank) and e["DISTGRAPH_DEVICE"] == str(rank)
        assert e["NVSHMEM_BOOTSTRAP"] == "MPI" and e["OMP_NUM_THREADS"] == "1"
        assert "DISTGRAPH_LAUNCH_THREADS" not in e
