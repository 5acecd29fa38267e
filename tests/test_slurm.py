"""The sbatch templates of deploy/slurm/ on a real single-node Slurm (Debian's slurmctld + slurmd
on localhost, brought up by deploy/slurm/local-slurm.sh), with the CPU backend on 2 tasks:
a closeness job interrupted twice (time-limit trap, then preemption-style requeue) that must
resume to results bit-identical to an uninterrupted run; SSSP checked against scipy; a scaling
study; and the preflight that stops a job whose ranks are not one MPI job.

Skips, saying why, where Slurm cannot run: not root, Slurm not installed and no apt-get (or not
in CI, where it installs the packages itself: CI=true), or daemons that do not start.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from distgraph.testing import clean_mpi_env

ROOT = Path(__file__).resolve().parent.parent
SLURM_SH = ROOT / "deploy" / "slurm" / "local-slurm.sh"
TEMPLATES = ROOT / "deploy" / "slurm"
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "munged")

pytestmark = [
    pytest.mark.skipif(int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1) > 1,
                       reason="not an MPI test (it starts a Slurm cluster): runs in the 1-rank stage"),
    pytest.mark.slow,
]

# The closeness job: long enough (hundreds of batches) to be interrupted twice mid-run; saving
# after every batch (--checkpoint-interval 0) so that the test sees each run's part file appear.
CLOSENESS_GRAPH = "kron:11"
CLOSENESS_ARGS = ["--batch-size", "4", "--backend", "cpu", "--no-progress", "--checkpoint-interval", "0"]


def _sh(*args, env=None, timeout=120):
    return subprocess.run(["bash", str(SLURM_SH), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _no_hydra(env):
    """``env`` without MPICH hydra's HYDI_* variables, which clean_mpi_env keeps: under
    tests/run.sh this process is a rank of mpiexec, and a job that inherits HYDI_CONTROL_FD
    starts a hydra proxy that fails and leaves mpiexec waiting forever (the templates drop it
    too: dg_forget_outer_mpi in deploy/slurm/dg-job.sh)."""
    return {k: v for k, v in env.items() if not k.startswith("HYDI_")}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running single-node Slurm; yields the environment to submit jobs with."""
    if os.geteuid() != 0:
        pytest.skip("a local Slurm needs root (munged, slurmd); not root here")
    missing = [b for b in BINARIES if not shutil.which(b) and not os.path.exists(f"/usr/sbin/{b}")]
    if missing:
        if os.environ.get("CI", "").lower() not in ("true", "1") or not shutil.which("apt-get"):
            pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): run "
                        "'bash deploy/slurm/local-slurm.sh install' (root, Debian), or run in CI (CI=true)")
        t0 = time.time()
        r = _sh("install", timeout=900)
        if r.returncode != 0:
            pytest.skip(f"could not install Slurm with apt-get: {r.stderr.strip()[-500:]}")
        sys.stderr.write(f"test_slurm: installed Slurm in {time.time() - t0:.0f} s\n")
    d = tmp_path_factory.mktemp("slurm")
    # a port of our own, so a cluster already running on this machine is left alone; and a
    # watcher that stops the cluster if this process is killed before the teardown runs
    env = _no_hydra(clean_mpi_env({"DG_SLURM_PORT": str(17000 + os.getpid() % 2000 * 2),
                                   "DG_SLURM_WATCH_PID": str(os.getpid())}))
    t0 = time.time()
    r = _sh("start", d, env=env, timeout=120)
    if r.returncode != 0:
        _sh("stop", d, env=env)
        pytest.skip(f"local Slurm did not start (exit {r.returncode}): {r.stderr.strip()[-800:]}")
    sys.stderr.write(f"test_slurm: Slurm up in {time.time() - t0:.1f} s\n")
    conf = r.stdout.strip().splitlines()[-1].split("=", 1)[1]
    job_env = _no_hydra(clean_mpi_env({"SLURM_CONF": conf, "DG_HOME": str(ROOT), "DG_SRUN_MPI": "pmi2"}))
    if sys.prefix != sys.base_prefix:
        job_env["DG_VENV"] = sys.prefix  # the environment running the tests
    job_env.pop("DG_LAUNCH", None)
    job_env.pop("DG_OUT", None)
    try:
        yield {"env": job_env, "dir": d}
    finally:
        subprocess.run(["scancel", "--user", "root"], env=job_env, capture_output=True, timeout=30)
        _sh("stop", d, env=env)


def need_command(name):
    """Skip unless this distgraph has the subcommand ``name``."""
    r = subprocess.run([sys.executable, "-m", "distgraph", name, "--help"], capture_output=True,
                       env=clean_mpi_env(), timeout=120)
    if r.returncode != 0:
        pytest.skip(f"'distgraph {name}' is not available in this build")


def submit(slurm, template, *args, out, ntasks=2, extra_env=None):
    env = dict(slurm["env"], DG_OUT=str(out), **(extra_env or {}))
    r = subprocess.run(["sbatch", "--parsable", "-n", str(ntasks), "-t", "10", str(TEMPLATES / template), *args],
                       capture_output=True, text=True, env=env, cwd=slurm["dir"], timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().split(";")[0]


def job(slurm, jobid) -> dict:
    r = subprocess.run(["scontrol", "-o", "show", "job", jobid], capture_output=True, text=True,
                       env=slurm["env"], timeout=30)
    return dict(re.findall(r"(\w+)=(\S*)", r.stdout))


def log_of(slurm, jobid, name):
    p = slurm["dir"] / f"dg-{name}-{jobid}.log"
    return p.read_text() if p.exists() else "(no log)"


#: Reasons for which a pending job will never start here: fail at once instead of waiting.
HOPELESS = ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
            "InvalidAccount", "InvalidQOS", "launch_failed_requeued_held")
#: States a job never leaves.
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def wait_for(cond, what, timeout=300, every=0.05, slurm=None, jobid=None, name=None):
    """Poll ``cond`` until it is true; with a job given, fail early (with the job's log) if that
    job can never start or has ended."""
    t0 = last = time.time()
    while time.time() - t0 < timeout:
        v = cond()
        if v:
            return v
        if jobid is not None and time.time() - last >= 1:
            last = time.time()
            j = job(slurm, jobid)
            if j.get("JobState") == "PENDING" and j.get("Reason") in HOPELESS:
                raise AssertionError(f"job {jobid} cannot start: {j.get('Reason')} (waiting for {what})\n"
                                     + log_of(slurm, jobid, name or "closeness"))
            if j.get("JobState") in ENDED and not cond():
                raise AssertionError(f"job {jobid} ended {j.get('JobState')} {j.get('ExitCode')} "
                                     f"(Reason={j.get('Reason')}) while waiting for {what}\n"
                                     + log_of(slurm, jobid, name or "closeness"))
        time.sleep(every)
    if jobid is None:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")
    j = job(slurm, jobid)
    steps = subprocess.run(["squeue", "-h", "-s", "-j", jobid], capture_output=True, text=True, env=slurm["env"],
                           timeout=30).stdout
    raise AssertionError(f"timed out after {timeout} s waiting for {what}: job {jobid} is {j.get('JobState')} "
                         f"(Reason={j.get('Reason')}), steps:\n{steps}" + log_of(slurm, jobid, name or "closeness"))


def release_requeued(slurm, jobid):
    """Start a requeued job now instead of after Slurm's requeue delay (~2 minutes).

    Not in the second in which the previous run was killed: slurmd revokes a killed job's
    credential with a time in whole seconds and refuses to launch a batch job whose credential
    is not newer ("Job N already killed, do not launch batch job"), and slurmctld then ends the
    job FAILED ("Killing non-startable batch JobId=N: Job credential revoked"). The requeued job
    shows PENDING only after slurmd has finished killing the run (revocation included), so once
    the clock is past the second in which the test saw it PENDING, the new credential is newer.
    Slurm's own requeue delay exists for this; releasing at once is a shortcut for the test.
    """
    now = time.time()
    time.sleep(int(now) + 1.05 - now)
    subprocess.run(["scontrol", "update", f"jobid={jobid}", "StartTime=now"], env=slurm["env"], check=True,
                   capture_output=True, timeout=30)


def wait_done(slurm, jobid, name, timeout=300) -> dict:
    st = wait_for(lambda: (lambda j: j if j.get("JobState") in ENDED else None)(job(slurm, jobid)),
                  f"job {jobid} ({name}) to end", timeout, every=0.5, slurm=slurm, jobid=jobid, name=name)
    assert st["JobState"] == "COMPLETED", f"job {jobid} ended {st['JobState']} {st.get('ExitCode')}:\n" \
                                          + log_of(slurm, jobid, name)
    return st


def sessions(ckpt: Path) -> set:
    return {m.group(1) for p in ckpt.glob("part-*.npz") if (m := re.match(r"part-(\w+)-r\d+\.npz", p.name))}


@pytest.fixture(scope="module")
def reference():
    """Closeness of CLOSENESS_GRAPH computed here, on one rank, without interruption
    (tests/test_closeness.py checks this function against networkx; its sums are integers, so
    the result is bit-identical on any number of ranks)."""
    need_command("closeness")
    from distgraph.algorithms.closeness import closeness
    from distgraph.generators import from_spec

    return closeness(from_spec(CLOSENESS_GRAPH), backend="cpu", progress=False).closeness


def test_closeness_template_requeued_twice_resumes_bit_identical(slurm, reference):
    out = slurm["dir"] / "closeness-requeued"
    ckpt = out / "checkpoint"
    # through srun --mpi=pmi2 (distgraph-srun): a requeued srun step has the same JOBID.STEPID
    # as the killed one, so this also checks that the template clears the segments the killed
    # ranks left in /dev/shm (dg_clean_shm)
    jobid = submit(slurm, "closeness.sbatch", CLOSENESS_GRAPH, *CLOSENESS_ARGS, out=out)
    env = slurm["env"]

    def interrupt(how, n_sessions):
        wait_for(lambda: len(sessions(ckpt)) >= n_sessions, f"checkpoint session {n_sessions} of job {jobid}", 240,
                 slurm=slurm, jobid=jobid)
        assert job(slurm, jobid)["JobState"] == "RUNNING", "the job ended before it could be interrupted"
        subprocess.run(how, env=env, check=True, capture_output=True, timeout=30)
        # requeued: pending again (the killed run is gone), held by Slurm's requeue delay;
        # release it as soon as slurmd will launch it again
        wait_for(lambda: (lambda j: j.get("JobState") == "PENDING" and int(j.get("Restarts", 0)) == n_sessions)(
            job(slurm, jobid)), f"job {jobid} to be requeued ({how[0]})", 120, every=0.2, slurm=slurm, jobid=jobid)
        release_requeued(slurm, jobid)

    # 1. the time-limit path: SIGUSR1 to the batch shell, whose trap requeues the job
    interrupt(["scancel", "--signal=USR1", "--batch", jobid], 1)
    # 2. the preemption path: Slurm requeues the job (SIGTERM to everything in it)
    interrupt(["scontrol", "requeue", jobid], 2)
    st = wait_done(slurm, jobid, "closeness")
    log = log_of(slurm, jobid, "closeness")
    assert int(st["Restarts"]) == 2
    assert "time limit near: requeueing" in log and log.count("resuming from") == 2, log
    # the time-limit path passed SIGUSR1 to the ranks, which saved and stopped before the requeue
    assert "asking the ranks to save the checkpoint and stop" in log, log
    assert "stopped by SIGUSR1 after saving the checkpoint" in log and "closeness exited 138" in log, log
    parts = sorted(p.name for p in ckpt.glob("part-*.npz"))
    assert len(sessions(ckpt)) == 3, f"{parts}\n{log}"  # the work was split over three runs of the job ...
    got = np.load(out / "closeness.npy")
    # ... and the result is bit-identical to an uninterrupted run
    assert got.dtype == reference.dtype and got.tobytes() == reference.tobytes(), \
        f"max difference {np.max(np.abs(got - reference))}; {int(np.sum(got != reference))} values differ"
    summary = json.loads((out / "closeness.json").read_text())
    assert summary["resumed"] is True and summary["ranks"] == 2 and summary["command"] == "closeness"
    assert "launcher srun" in log and "done:" in log


def test_sssp_template(slurm):
    need_command("sssp")
    import scipy.sparse.csgraph as csg

    from distgraph.generators import from_spec

    spec = "urand:9:weights=potential"  # negative arcs, no negative cycle
    out = slurm["dir"] / "sssp"
    jobid = submit(slurm, "sssp.sbatch", spec, "--source", "3", "--backend", "cpu", out=out)
    wait_done(slurm, jobid, "sssp")
    summary = json.loads((out / "sssp.json").read_text())
    assert summary["ranks"] == 2 and summary["source"] == 3
    got = np.load(out / "sssp.npy").astype(np.float64)
    g = from_spec(spec)
    want = csg.bellman_ford(g.to_scipy(), indices=3)
    reached = np.isfinite(want)
    assert summary["reached"] == int(reached.sum())
    np.testing.assert_array_equal(got[reached], want[reached])


def test_scaling_template(slurm):
    need_command("closeness")
    out = slurm["dir"] / "scaling"
    jobid = submit(slurm, "scaling.sbatch", "closeness", "kron:8", "--backend", "cpu", "--no-progress", out=out,
                   extra_env={"DG_LAUNCH": "mpirun"})
    wait_done(slurm, jobid, "scaling")
    st = json.loads((out / "scaling.json").read_text())
    assert [r["ranks"] for r in st["rows"]] == [1, 2]  # powers of two up to the 2 tasks
    assert st["algorithm"] == "closeness" and st["rows"][0]["speedup"] == 1.0
    for n in (1, 2):
        rec = json.loads((out / "runs" / f"closeness-r{n}.json").read_text())
        assert rec["summary"]["ranks"] == n and rec["time_source"] == "time_s"
    assert (out / "summary.md").read_text().startswith("# Scaling: closeness on kron:8")


def test_preflight_refuses_a_wrong_pmi(slurm):
    # srun without a PMI plugin (this cluster's MpiDefault=none) starts 2 one-rank MPI jobs; the
    # template must stop before they both write the same checkpoint
    out = slurm["dir"] / "wrong-pmi"
    jobid = submit(slurm, "closeness.sbatch", "kron:6", "--backend", "cpu", out=out, extra_env={"DG_SRUN_MPI": ""})
    st = wait_for(lambda: (lambda j: j if j.get("JobState") in ("COMPLETED", "FAILED") else None)(job(slurm, jobid)),
                  f"job {jobid} to end", 180, every=0.5)
    log = log_of(slurm, jobid, "closeness")
    assert st["JobState"] == "FAILED" and st["ExitCode"].startswith("2:"), log
    assert "preflight: MPI sees '1' ranks, the allocation has 2 tasks" in log
    assert not (out / "checkpoint").exists() and not (out / "closeness.npy").exists()
