"""Launchers for distgraph: mpirun/mpiexec (Open MPI, MPICH) and srun, with per-rank binding.

Three commands share this module (each a thin script beside it):

``distgraph-mpirun [OPTIONS] [--] COMMAND ...``
    runs ``mpiexec -n N <python> distgraph-bind <binding> -- COMMAND ...`` with the flags the
    MPI flavour needs (Open MPI: ``--bind-to none``, ``-x`` for the variables ranks need,
    ``--allow-run-as-root``/``--oversubscribe`` where asked).
``distgraph-srun [OPTIONS] [--] COMMAND ...``
    the same through ``srun`` inside a Slurm allocation (``--mpi=pmix|pmi2`` when given).
``distgraph-bind [BINDING] -- COMMAND ...``
    what every rank runs first: it finds the rank's local rank with
    :func:`distgraph.runtime.context.local_rank_from_env` (the one place that knows the
    launchers' variables), binds one GPU, sets the NVSHMEM and thread variables, and
    ``exec``\\ s COMMAND, so the rank's process *is* the command (signals, exit codes and the
    MPI process-manager connection pass through unchanged).

The outer launchers decide nothing that depends on a node (GPU count, cores): they pass the
user's choices to ``distgraph-bind`` as arguments, and each rank resolves them on its own
node. The variables read and their precedence are documented in ``launch/README.md``;
:func:`plan_rank_env` is the single function that applies them, and the tests call it.

``COMMAND`` may start with ``distgraph``: it is replaced by ``<python> -m distgraph`` with the
launcher's own interpreter, so no ``PATH`` lookup can pick another installation.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BIND = os.path.join(HERE, "distgraph-bind")

#: Launcher variables (all optional). The distgraph runtime config ignores exactly these.
LAUNCH_VARS = {
    "DISTGRAPH_LAUNCH_THREADS": "threads per rank (OMP_NUM_THREADS, NUMBA_NUM_THREADS, ...)",
    "DISTGRAPH_LAUNCH_GPUS": "GPUs a rank may bind to: 'auto', 'none', a count, or a list '0,1,2,3'",
    "DISTGRAPH_LAUNCH_BIND": "how a rank is bound to its GPU: 'device' (default), 'visible' or 'none'",
    "DISTGRAPH_LAUNCH_SYMMETRIC_SIZE": "NVSHMEM symmetric heap per PE (bytes, or 512M / 4G)",
    "DISTGRAPH_LAUNCH_MEMORY_PLAN": "JSON memory plan; its symmetric heap bytes size NVSHMEM's heap",
    "DISTGRAPH_LAUNCH_NVLS": "'1' lets NVSHMEM use NVLink SHARP (default 0: NVSHMEM_DISABLE_NVLS=1)",
    "DISTGRAPH_LAUNCH_MPIEXEC": "the mpiexec/mpirun program of distgraph-mpirun",
    "DISTGRAPH_LAUNCH_SRUN_MPI": "srun --mpi plugin of distgraph-srun (pmix, pmi2, none)",
}

#: Thread-count variables set for every rank (numpy's BLAS, numba, OpenMP).
THREAD_VARS = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: Keys of a memory-plan JSON that hold the symmetric heap a PE needs, in bytes (first found wins).
PLAN_KEYS = ("nvshmem_symmetric_bytes", "symmetric_heap_bytes", "symmetric_bytes")

#: Headroom added to a memory plan's symmetric bytes: NVSHMEM keeps its own state in the heap.
PLAN_SLACK_BYTES = 256 << 20
PLAN_SLACK_FACTOR = 1.10

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(I?B?)\s*$", re.IGNORECASE)


class LaunchError(Exception):
    """A bad option or environment value; the launchers print it on one line and exit 2."""


# --------------------------------------------------------------------------------------------
# Values


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from ``'4G'``, ``'512M'``, ``'1.5G'`` or ``'1073741824'`` (powers of 1024).

    >>> parse_size("4G"), parse_size("512M"), parse_size("1024")
    (4294967296, 536870912, 1024)
    """
    m = _SIZE_RE.match(str(text))
    if not m:
        raise LaunchError(f"{what} must be a number of bytes or end in K, M, G or T; got {text!r}")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    value = int(float(m.group(1)) * mult)
    if value <= 0:
        raise LaunchError(f"{what} must be positive; got {text!r}")
    return value


def format_size(nbytes: int) -> str:
    """NVSHMEM's size syntax, rounded up to whole MiB: ``4096M``."""
    return f"{max(1, math.ceil(nbytes / (1 << 20)))}M"


def symmetric_size_from_plan(path: str) -> str:
    """NVSHMEM_SYMMETRIC_SIZE for a memory-plan JSON file: its bytes plus headroom.

    The plan is a JSON object with one of the keys in :data:`PLAN_KEYS` (bytes per PE), at top
    level or under ``"plan"``; the size returned is ``bytes * 1.10 + 256 MiB``, in MiB.
    """
    try:
        with open(path) as f:
            plan = json.load(f)
    except OSError as e:
        raise LaunchError(f"--memory-plan must be a readable JSON file; got {path!r} ({e.strerror})") from None
    except ValueError as e:
        raise LaunchError(f"--memory-plan must be a JSON file; {path!r} is not ({e})") from None
    for obj in (plan, plan.get("plan") if isinstance(plan, dict) else None):
        if isinstance(obj, dict):
            for key in PLAN_KEYS:
                if key in obj:
                    try:
                        need = int(obj[key])
                    except (TypeError, ValueError):
                        raise LaunchError(f"memory plan {path!r}: {key} must be an integer number of bytes; "
                                          f"got {obj[key]!r}") from None
                    return format_size(int(need * PLAN_SLACK_FACTOR) + PLAN_SLACK_BYTES)
    raise LaunchError(f"memory plan {path!r} has none of the keys {', '.join(PLAN_KEYS)}")


def _positive_int(text, what):
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise LaunchError(f"{what} must be a positive integer; got {text!r}") from None
    if v < 1:
        raise LaunchError(f"{what} must be a positive integer; got {text!r}")
    return v


def check_launch_vars(environ) -> None:
    """Reject unknown ``DISTGRAPH_LAUNCH_*`` variables (a typo must not go unnoticed)."""
    for key in environ:
        if key.startswith("DISTGRAPH_LAUNCH_") and key not in LAUNCH_VARS:
            raise LaunchError(f"unknown launcher variable {key}; known: {', '.join(sorted(LAUNCH_VARS))}")


# --------------------------------------------------------------------------------------------
# Per-rank plan


def node_gpus(environ) -> list[str]:
    """GPU ids this process may use on its node, as strings for CUDA_VISIBLE_DEVICES.

    ``CUDA_VISIBLE_DEVICES`` as set by the job (Slurm sets it from ``--gpus*``) wins; otherwise
    the GPUs the NVIDIA driver lists (``/proc/driver/nvidia/gpus``, else ``nvidia-smi -L``).
    """
    cvd = environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        return [d.strip() for d in cvd.split(",") if d.strip() and d.strip() != "NoDevFiles"]
    try:
        n = len(os.listdir("/proc/driver/nvidia/gpus"))
        if n:
            return [str(i) for i in range(n)]
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
            return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
        except (OSError, subprocess.SubprocessError):
            pass
    return []


def _cores(environ) -> int:
    try:
        aff = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        aff = os.cpu_count() or 1
    return max(1, min(aff, os.cpu_count() or aff))


def plan_rank_env(environ, *, threads=None, gpus=None, bind=None, symmetric_size=None,
                  memory_plan=None, nvls=None, num_nodes=None, local=None, gpu_list=None) -> dict:
    """The variables to set for one rank, and why.

    Parameters
    ----------
    environ : mapping
        The rank's environment (launcher variables, ``SLURM_*``, ``CUDA_VISIBLE_DEVICES``, ...).
    threads, gpus, bind, symmetric_size, memory_plan, nvls : optional
        Explicit choices (command-line flags); ``None`` falls back to ``DISTGRAPH_LAUNCH_*``,
        then to what the job says, then to the defaults (README: "Precedence").
    num_nodes : int, optional
        Nodes of the job (``NVSHMEM_REMOTE_TRANSPORT=none`` on one node); from ``SLURM_JOB_NUM_NODES``.
    local : tuple, optional
        ``(local_rank, local_size)``; default from :func:`distgraph.runtime.context.local_rank_from_env`.
    gpu_list : list of str, optional
        GPUs on the node (default: :func:`node_gpus`); for tests.

    Returns
    -------
    dict
        ``{"set": {VAR: value}, "unset": [VAR, ...], "local_rank": int, "local_size": int,
        "gpu": str or None}``.
    """
    check_launch_vars(environ)
    env = environ
    out: dict[str, str] = {}
    unset: list[str] = []

    if local is None:
        from distgraph.runtime.context import local_rank_from_env

        local = local_rank_from_env(env)
    lr, ls = local
    lr = 0 if lr is None else lr
    ls = 1 if ls is None else max(ls, lr + 1)

    # Threads: flag > DISTGRAPH_LAUNCH_THREADS > OMP_NUM_THREADS of the user > SLURM_CPUS_PER_TASK > cores/ranks.
    if threads is None:
        threads = env.get("DISTGRAPH_LAUNCH_THREADS") or None
    if threads is not None:
        nthreads = _positive_int(threads, "threads per rank")
    elif env.get("OMP_NUM_THREADS", "").isdigit() and int(env["OMP_NUM_THREADS"]) > 0:
        nthreads = int(env["OMP_NUM_THREADS"])
    elif env.get("SLURM_CPUS_PER_TASK", "").isdigit():
        nthreads = max(1, int(env["SLURM_CPUS_PER_TASK"]))
    else:
        nthreads = max(1, min(_cores(env), (os.cpu_count() or 1) // ls))
    for v in THREAD_VARS:
        out[v] = str(nthreads)

    # GPU binding: flag > DISTGRAPH_LAUNCH_BIND/_GPUS > CUDA_VISIBLE_DEVICES of the job > driver.
    bind = bind or env.get("DISTGRAPH_LAUNCH_BIND") or "device"
    if bind not in ("device", "visible", "none"):
        raise LaunchError(f"bind must be 'device', 'visible' or 'none'; got {bind!r}")
    gpus = gpus or env.get("DISTGRAPH_LAUNCH_GPUS") or "auto"
    if gpus == "none":
        ids = []
    elif gpus == "auto":
        ids = node_gpus(env) if gpu_list is None else list(gpu_list)
    elif re.fullmatch(r"\d+", gpus):
        ids = [str(i) for i in range(int(gpus))]
    elif re.fullmatch(r"\d+(,\d+)*", gpus):
        ids = gpus.split(",")
    else:
        raise LaunchError(f"gpus must be 'auto', 'none', a count or a list such as 0,1,2,3; got {gpus!r}")
    gpu = None
    if ids and bind != "none":
        index = lr % len(ids)
        gpu = ids[index]
        if bind == "visible":
            out["CUDA_VISIBLE_DEVICES"] = gpu
            unset.append("DISTGRAPH_DEVICE")
        else:  # device: keep every GPU visible (NVSHMEM's peer-to-peer needs them), pick one
            if "CUDA_VISIBLE_DEVICES" not in env and gpus != "auto":
                out["CUDA_VISIBLE_DEVICES"] = ",".join(ids)
            out["DISTGRAPH_DEVICE"] = str(index)
    if gpus == "none":
        out["DISTGRAPH_BACKEND"] = env.get("DISTGRAPH_BACKEND", "cpu") or "cpu"

    # NVSHMEM: flag > DISTGRAPH_LAUNCH_* > the user's NVSHMEM_* > defaults.
    size = symmetric_size or env.get("DISTGRAPH_LAUNCH_SYMMETRIC_SIZE") or None
    plan = memory_plan or env.get("DISTGRAPH_LAUNCH_MEMORY_PLAN") or None
    if size is not None:
        out["NVSHMEM_SYMMETRIC_SIZE"] = format_size(parse_size(size, "symmetric heap size"))
    elif plan is not None:
        out["NVSHMEM_SYMMETRIC_SIZE"] = symmetric_size_from_plan(plan)
    nvls = nvls if nvls is not None else env.get("DISTGRAPH_LAUNCH_NVLS")
    if nvls is not None:
        if str(nvls) not in ("0", "1"):
            raise LaunchError(f"nvls must be 0 or 1; got {nvls!r}")
        out["NVSHMEM_DISABLE_NVLS"] = "0" if str(nvls) == "1" else "1"
    elif "NVSHMEM_DISABLE_NVLS" not in env:
        out["NVSHMEM_DISABLE_NVLS"] = "1"
    if num_nodes is None and env.get("SLURM_JOB_NUM_NODES", "").isdigit():
        num_nodes = int(env["SLURM_JOB_NUM_NODES"])
    if "NVSHMEM_REMOTE_TRANSPORT" not in env and num_nodes == 1:
        out["NVSHMEM_REMOTE_TRANSPORT"] = "none"
    # NVSHMEM_BOOTSTRAP matters only to C programs calling nvshmem_init() (nvshmem4py passes its
    # own flags): MPI under Open MPI, PMI under Hydra (MPICH) and srun, with srun's PMI flavour.
    if "NVSHMEM_BOOTSTRAP" not in env:
        if "OMPI_COMM_WORLD_RANK" in env:
            out["NVSHMEM_BOOTSTRAP"] = "MPI"
        elif "PMIX_RANK" in env:
            out["NVSHMEM_BOOTSTRAP"], out["NVSHMEM_BOOTSTRAP_PMI"] = "PMI", "PMIX"
        elif "MPI_LOCALRANKID" in env:
            out["NVSHMEM_BOOTSTRAP"] = "PMI"
        elif "SLURM_STEP_ID" in env and "PMI_FD" in env:
            out["NVSHMEM_BOOTSTRAP"], out["NVSHMEM_BOOTSTRAP_PMI"] = "PMI", "PMI-2"
    # The launcher's own variables stop here: the command sees only their effect.
    unset += [k for k in env if k.startswith("DISTGRAPH_LAUNCH_")]
    return {"set": out, "unset": sorted(set(unset)), "local_rank": lr, "local_size": ls, "gpu": gpu}


# --------------------------------------------------------------------------------------------
# Command lines


def _add_binding_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("binding (resolved on each rank's node)")
    g.add_argument("--threads", "-t", default=None,
                   help="threads per rank (default: DISTGRAPH_LAUNCH_THREADS, OMP_NUM_THREADS, "
                        "SLURM_CPUS_PER_TASK, else cores / ranks on the node)")
    g.add_argument("--gpus", default=None,
                   help="GPUs to bind: auto (CUDA_VISIBLE_DEVICES or the driver's list), none, "
                        "a count, or ids 0,1,2,3 (default: DISTGRAPH_LAUNCH_GPUS, else auto)")
    g.add_argument("--bind", choices=("device", "visible", "none"), default=None,
                   help="device: DISTGRAPH_DEVICE=local rank %% GPUs, all GPUs stay visible; "
                        "visible: CUDA_VISIBLE_DEVICES=that one GPU; none: leave it (default: device)")
    g.add_argument("--symmetric-size", default=None,
                   help="NVSHMEM_SYMMETRIC_SIZE per PE, e.g. 4G (default: from --memory-plan, else NVSHMEM's)")
    g.add_argument("--memory-plan", default=None,
                   help="memory-plan JSON (key nvshmem_symmetric_bytes); heap = bytes*1.1 + 256 MiB")
    g.add_argument("--nvls", choices=("0", "1"), default=None,
                   help="1 allows NVLink SHARP multicast (default 0: NVSHMEM_DISABLE_NVLS=1)")


def _binding_argv(a, environ) -> list[str]:
    """The user's binding choices (flags, else DISTGRAPH_LAUNCH_*) as distgraph-bind arguments.

    They are resolved here, not forwarded as variables, so that every rank on every node gets
    them whatever the MPI forwards.
    """
    argv = []
    for opt in ("threads", "gpus", "bind", "symmetric_size", "memory_plan", "nvls"):
        v = getattr(a, opt)
        if v is None:
            v = environ.get("DISTGRAPH_LAUNCH_" + opt.upper()) or None
        if v is not None:
            if opt == "memory_plan":
                v = os.path.abspath(v)
            argv += ["--" + opt.replace("_", "-"), str(v)]
    return argv


def _command(cmd: list[str]) -> list[str]:
    if not cmd:
        raise LaunchError("COMMAND is missing: e.g. distgraph-mpirun -n 2 distgraph bfs kron:12")
    if cmd[0] == "distgraph":
        return [sys.executable, "-m", "distgraph"] + cmd[1:]
    return cmd


def _add_command(p: argparse.ArgumentParser) -> None:
    # Options end at the first word that is not one of ours (or at "--"): everything after it
    # is COMMAND, so `distgraph-mpirun -n 2 distgraph bfs -n 5` gives bfs its own -n.
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND ...",
                   help="the program each rank runs ('distgraph ...' runs this Python's distgraph)")


def _command_of(a) -> list[str]:
    cmd = list(a.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return cmd


def find_mpiexec(explicit=None, environ=None) -> str:
    """``--mpiexec`` > ``DISTGRAPH_LAUNCH_MPIEXEC`` > ``MPIEXEC`` > the one beside python > PATH."""
    env = os.environ if environ is None else environ
    for cand in (explicit, env.get("DISTGRAPH_LAUNCH_MPIEXEC"), env.get("MPIEXEC")):
        if cand:
            path = shutil.which(cand)
            if not path:
                raise LaunchError(f"mpiexec {cand!r} was not found")
            return path
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    for name in ("mpiexec", "mpirun"):
        path = shutil.which(name)
        if path:
            return path
    raise LaunchError("no mpiexec found: install an MPI (pip install 'distgraph[mpich]') or pass --mpiexec")


def mpi_flavor(mpiexec: str) -> str:
    """``'openmpi'``, ``'mpich'`` (Hydra, also Intel MPI) or ``'unknown'``, from ``--version``."""
    try:
        r = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
        text = r.stdout + r.stderr
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text or "prterun" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel" in text:
        return "mpich"
    return "unknown"


#: Variables Open MPI must be told to forward (-x) so remote ranks find this Python and config.
_FORWARD = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")


def mpirun_argv(argv, environ=None) -> tuple[list[str], bool]:
    """``(command line, dry_run)`` of ``distgraph-mpirun argv`` (see :func:`main_mpirun`)."""
    env = os.environ if environ is None else environ
    check_launch_vars(env)
    p = argparse.ArgumentParser(prog="distgraph-mpirun", description=main_mpirun.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "-np", "--np", dest="np", type=int, default=None, help="number of ranks (default 1)")
    p.add_argument("--mpiexec", default=None, help="mpiexec or mpirun to use (default: DISTGRAPH_LAUNCH_MPIEXEC, "
                                                   "MPIEXEC, the one beside python, PATH)")
    p.add_argument("--flavor", choices=("auto", "openmpi", "mpich"), default="auto",
                   help="MPI flavour of --mpiexec (default: from its --version)")
    p.add_argument("--mpi-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for mpiexec (repeat; e.g. --mpi-arg=--hostfile --mpi-arg=hosts)")
    p.add_argument("--dry-run", action="store_true", help="print the command line and exit")
    _add_binding_options(p)
    _add_command(p)
    a = p.parse_args(argv)
    cmd = _command_of(a)
    if a.np is not None and a.np < 1:
        raise LaunchError(f"-n must be a positive integer; got {a.np}")
    mpiexec = find_mpiexec(a.mpiexec, env)
    flavor = mpi_flavor(mpiexec) if a.flavor == "auto" else a.flavor
    line = [mpiexec, "-n", str(a.np or 1)]
    if flavor == "openmpi":
        extra = " ".join(a.mpi_arg)
        if "--bind-to" not in extra:
            line += ["--bind-to", "none"]  # numba/OpenMP threads of a rank need more than one core
        if os.geteuid() == 0 and "--allow-run-as-root" not in extra:
            line += ["--allow-run-as-root"]
        # More ranks than cores on this one machine (a workstation, CI): Open MPI refuses
        # without --oversubscribe. Not with a host list or inside Slurm, where slots are real.
        hosts = any(h in a.mpi_arg for h in ("--hostfile", "--host", "-H", "--machinefile", "-hostfile"))
        if (a.np or 1) > (os.cpu_count() or 1) and not hosts and "SLURM_JOB_ID" not in env \
                and "--oversubscribe" not in extra:
            line += ["--oversubscribe"]
        for v in _FORWARD + tuple(k for k in env if k.startswith("DISTGRAPH_") or k.startswith("NVSHMEM_")):
            if v in env and not v.startswith("DISTGRAPH_LAUNCH_"):
                line += ["-x", v]
    line += a.mpi_arg
    line += [sys.executable, BIND] + _binding_argv(a, env) + ["--"] + _command(cmd)
    return line, a.dry_run


def srun_argv(argv, environ=None) -> tuple[list[str], bool]:
    """``(command line, dry_run)`` of ``distgraph-srun argv`` (see :func:`main_srun`)."""
    env = os.environ if environ is None else environ
    check_launch_vars(env)
    p = argparse.ArgumentParser(prog="distgraph-srun", description=main_srun.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--ntasks", dest="np", type=int, default=None,
                   help="number of ranks (default: the allocation's SLURM_NTASKS)")
    p.add_argument("--mpi", default=None,
                   help="srun --mpi plugin: pmix, pmi2, none (default: DISTGRAPH_LAUNCH_SRUN_MPI, else the site's)")
    p.add_argument("--srun", default="srun", help="the srun program")
    p.add_argument("--srun-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for srun (repeat; e.g. --srun-arg=--cpu-bind=cores)")
    p.add_argument("--dry-run", action="store_true", help="print the command line and exit")
    _add_binding_options(p)
    _add_command(p)
    a = p.parse_args(argv)
    cmd = _command_of(a)
    srun = shutil.which(a.srun)
    if srun is None and not a.dry_run:
        raise LaunchError(f"{a.srun!r} was not found: distgraph-srun runs inside a Slurm allocation")
    line = [srun or a.srun]
    if a.np is not None:
        if a.np < 1:
            raise LaunchError(f"-n must be a positive integer; got {a.np}")
        line += ["-n", str(a.np)]
    mpi = a.mpi or env.get("DISTGRAPH_LAUNCH_SRUN_MPI")
    if mpi:
        line += [f"--mpi={mpi}"]
    line += ["--kill-on-bad-exit=1"] + a.srun_arg
    line += [sys.executable, BIND] + _binding_argv(a, env) + ["--"] + _command(cmd)
    return line, a.dry_run


def _run(line, dry_run) -> int:
    if dry_run:
        sys.stdout.write(" ".join(shlex.quote(x) for x in line) + "\n")
        return 0
    os.execv(line[0], line)
    return 127  # pragma: no cover


def _fail(prog, e) -> int:
    sys.stderr.write(f"{prog}: error: {e}\n")
    return 2


def main_mpirun(argv=None) -> int:
    """distgraph-mpirun [-n N] [binding options] [--mpiexec PATH] [--] COMMAND ...

    Runs COMMAND on N ranks with mpiexec (Open MPI or MPICH), each rank bound to one GPU
    (local rank modulo the node's GPUs), with NVSHMEM and thread variables set.
    'distgraph' as COMMAND means this Python's 'python -m distgraph'.

    example: distgraph-mpirun -n 4 --threads 2 distgraph closeness kron:16 --json
    """
    try:
        line, dry = mpirun_argv(sys.argv[1:] if argv is None else argv)
        return _run(line, dry)
    except LaunchError as e:
        return _fail("distgraph-mpirun", e)


def main_srun(argv=None) -> int:
    """distgraph-srun [-n N] [--mpi pmix|pmi2] [binding options] [--] COMMAND ...

    Runs COMMAND with srun inside a Slurm allocation (sbatch or salloc), each task bound to one
    of its node's GPUs (SLURM_LOCALID modulo the GPUs Slurm gave it), with NVSHMEM and thread
    variables set (threads default to SLURM_CPUS_PER_TASK).

    example: distgraph-srun --mpi=pmix distgraph sssp graph.dgraph --json
    """
    try:
        line, dry = srun_argv(sys.argv[1:] if argv is None else argv)
        return _run(line, dry)
    except LaunchError as e:
        return _fail("distgraph-srun", e)


def main_bind(argv=None) -> int:
    """distgraph-bind [binding options] [--print] -- COMMAND ...

    Run by each rank: binds a GPU, sets NVSHMEM and thread variables, then execs COMMAND.
    With --print it writes the plan as JSON instead (what 'distgraph-mpirun --dry-run' cannot
    show, since it depends on each rank's node).
    """
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="distgraph-bind", description=main_bind.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--print", action="store_true", help="print the plan as JSON and exit")
    _add_binding_options(p)
    _add_command(p)
    try:
        a = p.parse_args(argv)
        cmd = _command_of(a)
        plan = plan_rank_env(os.environ, threads=a.threads, gpus=a.gpus, bind=a.bind,
                             symmetric_size=a.symmetric_size, memory_plan=a.memory_plan, nvls=a.nvls)
        if a.print:
            sys.stdout.write(json.dumps(plan, sort_keys=True) + "\n")
            return 0
        cmd = _command(cmd)
    except LaunchError as e:
        return _fail("distgraph-bind", e)
    env = dict(os.environ)
    for k in plan["unset"]:
        env.pop(k, None)
    env.update(plan["set"])
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        return _fail("distgraph-bind", f"cannot run {cmd[0]!r}: {e.strerror}")
    return 127  # pragma: no cover
