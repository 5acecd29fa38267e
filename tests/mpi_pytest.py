"""Run pytest under mpiexec with one readable report.

Rank 0 reports to the terminal; other ranks write theirs to
``$DISTGRAPH_TEST_LOGDIR/rank-R.log`` (default: the temp dir) and print it only when
they fail. The exit status is non-zero when any rank failed.

    mpiexec -n 4 python tests/mpi_pytest.py --with-mpi --only-mpi tests
"""

import os
import sys
import tempfile

from mpi4py import MPI

import pytest

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
logdir = os.environ.get("DISTGRAPH_TEST_LOGDIR", tempfile.gettempdir())
log = None
if rank != 0:
    log = os.path.join(logdir, f"distgraph-pytest-rank-{rank}-of-{comm.Get_size()}.log")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    os.dup2(fd, 1)
    os.close(fd)

args = sys.argv[1:]
if "--only-mpi" in args and "--with-mpi" in args:
    # pytest-mpi lets --with-mpi win over --only-mpi and would run every test on every rank
    args = [a for a in args if a != "--with-mpi"]
code = int(pytest.main(args + ([] if rank == 0 else ["-q", "-p", "no:cacheprovider"])))
if code == 5 and comm.Get_size() > 1:  # no tests collected on this rank: not a failure here
    code = 0
codes = comm.allgather(code)
if rank != 0 and code != 0:
    sys.stderr.write(open(log).read())
if rank == 0 and any(codes):
    sys.stderr.write(f"pytest exit codes per rank: {codes}\n")
sys.exit(max(codes))
