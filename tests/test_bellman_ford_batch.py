"""remote="batch" (the GPU Bellman-Ford's batched remote relaxations) at the boundaries that
run without a GPU: the public API refuses it for the CPU backend's async mode on every rank
(the CPU rounds mode batches already, and ignores ``remote``), and the GPU runner checks its
arguments before touching the device. The batch mode itself runs in
tests/test_nvshmem_bellman_ford.py (GPU, 1/2/4 PEs).

    python -m pytest -q tests/test_bellman_ford_batch.py
    mpirun -n 2 python tests/mpi_pytest.py --with-mpi -q tests/test_bellman_ford_batch.py
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.algorithms.bellman_ford import REMOTES, bellman_ford
from distgraph.errors import InvalidArgumentError
from distgraph.generators import kronecker, potential_shift, uniform_weights


def _graph():
    return potential_shift(uniform_weights(kronecker(7, seed=3), seed=3), seed=4)


def test_batch_is_a_remote_choice():
    assert REMOTES == ("atomic", "enqueue", "batch")


@pytest.mark.mpi
def test_cpu_async_refuses_batch_on_every_rank():
    comm = MPI.COMM_WORLD
    with pytest.raises(InvalidArgumentError, match="GPU-only"):
        bellman_ford(_graph(), 0, mode="async", remote="batch", backend="cpu", comm=comm)


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["rounds", "auto"])
def test_cpu_rounds_ignore_remote(mode):
    comm = MPI.COMM_WORLD
    g = _graph()
    a = bellman_ford(g, 0, mode=mode, remote="batch", backend="cpu", comm=comm, predecessors=True)
    b = bellman_ford(g, 0, mode=mode, backend="cpu", comm=comm, predecessors=True)
    assert np.array_equal(a.distance, b.distance) and np.array_equal(a.predecessor, b.predecessor)


@pytest.mark.parametrize("kw", [{"remote": "bulk"}, {"remote": "batch", "flush": 0},
                                {"remote": "batch", "flush": 1025}, {"remote": "batch", "flush": True},
                                {"remote": "batch", "flush": 2.0}],
                         ids=["remote", "flush0", "flush1025", "flush_bool", "flush_float"])
def test_gpu_runner_checks_batch_arguments_before_the_device(kw):
    from distgraph.backends.gpu.bellman_ford import BATCH, QueueSSSP

    assert BATCH == 1024  # DG_BF_BATCH's default in kernels/bellman_ford.cuh, passed as a define
    g = _graph()
    with pytest.raises(InvalidArgumentError, match="remote|flush"):
        QueueSSSP(g, g.weights, MPI.COMM_SELF, **kw)
