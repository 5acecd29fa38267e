"""Helpers for tests of distgraph and of code built on it.

``run_cli`` runs ``python -m distgraph ...`` (optionally under ``mpiexec -n N``) in a
clean environment: the variables by which a running MPI job passes its identity to
children (PMI_*, PMIX_*, OMPI_*, HYDRA_*, ...) are removed, so a test that itself runs
under ``mpiexec`` can start a fresh job instead of confusing the process manager.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

__all__ = ["clean_mpi_env", "mpiexec_path", "run_cli"]

# What a launched rank inherits about *its* job (identity, process-manager contact).
# Settings (OMPI_MCA_btl_*, OMPI_MCA_plm_*, OMPI_ALLOW_RUN_AS_ROOT, ...) are kept: Open MPI's
# singleton start needs them on some machines.
_MPI_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "HYDI_", "MPI_LOCAL", "MPIR_", "PRTE_", "PALS_", "SLURM_",
                 "OMPI_COMM_WORLD_", "OMPI_UNIVERSE_SIZE", "OMPI_FIRST_RANKS", "OMPI_APP_CTX",
                 "OMPI_NUM_APP_CTX", "OMPI_FILE_LOCATION", "OMPI_MCA_ess", "OMPI_MCA_orte_",
                 "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_ompi_", "OMPI_MCA_shmem_RUNTIME")


def clean_mpi_env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_PREFIXES)}
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and test machines run as root
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.update(extra or {})
    return env


def mpiexec_path() -> str:
    """The mpiexec beside the running Python (the MPICH wheel's), else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return os.environ.get("MPIEXEC") or (here if os.path.exists(here) else shutil.which("mpiexec") or "mpiexec")


def run_cli(*args, n: int | None = None, env: dict | None = None, timeout: float = 300, cwd=None):
    """Run ``distgraph ARGS`` (under ``mpiexec -n n`` when ``n``); returns CompletedProcess."""
    cmd = [sys.executable, "-m", "distgraph", *map(str, args)]
    if n:
        cmd = [mpiexec_path(), "-n", str(n)] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_mpi_env(env), cwd=cwd)


def weight_variants(base, dtypes=("int32", "int64", "float32", "float64"), unweighted=True):
    """``(dtype, graph)`` for each of ``dtypes`` and, with ``unweighted``, ``(None, graph)``:
    ``base``'s arcs with its integer weights cast to each integer dtype, a quarter of them in
    each float dtype, or none (the tests' sweep over the weight dtypes of the same graph)."""
    import numpy as np

    from .graph import Graph

    for dt in list(dtypes) + ([None] if unweighted else []):
        if dt is None:
            w = None
        elif np.dtype(dt).kind == "i":
            w = base.weights.astype(dt)
        else:
            w = (base.weights / 4).astype(dt)
        yield dt, Graph(base.indptr, base.indices, w, directed=base.directed)
