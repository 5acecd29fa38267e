"""Queue-driven GPU Bellman-Ford over NVSHMEM on 1, 2 and 4 PEs (several PEs share the one
test GPU in limited MPG: correctness only). Every remote relaxation (remote atomic minimum
+ enqueue, or remote enqueue of the candidate) with either queue (BQ, BWD) must give the
CPU backend's distances and predecessors exactly, and a reachable negative cycle must be
raised on every rank with a confirmed negative weight.

    mpirun -n 4 python tests/mpi_pytest.py --with-mpi tests/test_nvshmem_bellman_ford.py

Assertions are made on gathered results, on every rank, so no rank waits alone.
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.algorithms.bellman_ford import _arc_weights, bellman_ford, cycle_weight
from distgraph.errors import NegativeCycleError
from distgraph.generators import kronecker, plant_negative_cycle, potential_shift, uniform_weights
from distgraph.graph import Graph

pytestmark = [pytest.mark.nvshmem, pytest.mark.mpi]

VARIANTS = [("bq", "atomic"), ("bq", "enqueue"), ("bwd", "atomic"), ("bwd", "enqueue")]


@pytest.fixture(scope="module")
def pg():
    pytest.importorskip("nvshmem.core")
    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    get_context(MPI.COMM_WORLD, "gpu")
    p = get_pgas(MPI.COMM_WORLD, "gpu")
    yield p
    p.finalize()


def _graphs():
    rng = np.random.default_rng(4)
    n = 700
    s, d = rng.integers(0, n, 2500), rng.integers(0, n, 2500)
    keep = s < 600
    rnd = Graph.from_edges(s[keep], d[keep], rng.integers(1, 20, int(keep.sum())), n=n, directed=True)
    return {"kron10_shifted": potential_shift(uniform_weights(kronecker(10, seed=2), seed=2), seed=3),
            "kron9_dir_float": _as_float(potential_shift(uniform_weights(kronecker(9, seed=5, directed=True), seed=5),
                                                         seed=6)),
            "random_dir_disconnected": potential_shift(rnd, seed=7)}


def _as_float(g):
    return Graph(g.indptr, g.indices, g.weights.astype(np.float64) / 4, directed=g.directed)


def _all(comm, ok):
    return all(comm.allgather(bool(ok)))


@pytest.mark.parametrize("name", sorted(_graphs()))
def test_nvshmem_equals_cpu(pg, name):
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    g = _graphs()[name]
    w = _arc_weights(g, None)
    s = int(np.argmax(np.diff(g.indptr)))
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    ref_d, ref_p, _, _ = run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=True)
    ok = True
    info = []
    for queue, remote in VARIANTS:
        # BQ: vertices above 32 arcs scanned in chunks (remote arcs in chunks too); BWD: default
        q = QueueSSSP(g, w, comm, queue=queue, remote=remote, use_nvshmem=True, split=32 if queue == "bq" else 4096)
        try:
            # with the ghost keys of remote heads (default) and, on BQ, without them
            for ghost in (True, False) if queue == "bq" else (True,):
                q.ghost = ghost
                d, p, st, cyc = q.run(s, confirm, predecessors=True)
                good = cyc is None and np.array_equal(d, ref_d) and np.array_equal(p, ref_p)
                info.append((queue, remote, ghost, good, st.get("launches"), st.get("items")))
                ok &= good
        finally:
            q.close()
    assert _all(comm, ok), info


def test_public_api_on_comm_world(pg):
    comm = MPI.COMM_WORLD
    g = _graphs()["kron10_shifted"]
    c = bellman_ford(g, 5, predecessors=True, comm=MPI.COMM_SELF, backend="cpu")
    ok = True
    for remote in ("atomic", "enqueue"):
        r = bellman_ford(g, 5, backend="gpu", mode="async", remote=remote, predecessors=True, comm=comm, verify=True)
        ok &= np.array_equal(r.distance, c.distance) and np.array_equal(r.predecessor, c.predecessor)
        ok &= r.stats["nvshmem"] == (comm.Get_size() > 1)
    assert _all(comm, ok)


@pytest.mark.parametrize("remote", ["atomic", "enqueue"])
def test_negative_cycle_on_every_rank(pg, remote):
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    g, cyc = plant_negative_cycle(uniform_weights(kronecker(9, seed=2), seed=2), length=5, seed=4)
    w = _arc_weights(g, None)
    q = QueueSSSP(g, w, comm, queue="bq", remote=remote, use_nvshmem=True)
    try:
        _, _, st, found = q.run(int(cyc[0]), lambda cy: cycle_weight(g, cy, w) < 0)
    finally:
        q.close()
    ok = found is not None and cycle_weight(g, found, w) < 0
    assert _all(comm, ok)
    with pytest.raises(NegativeCycleError):
        bellman_ford(g, int(cyc[0]), backend="gpu", mode="async", remote=remote, comm=comm)


def test_delta_ignored_on_several_pes(pg):
    """The near-far priority runs on one PE only: on several PEs a delta (given, or set
    between runs) is ignored, stats say delta 0 and no phases, and the distances are the
    CPU's. On one PE the delta is used as given (integer weights: as is)."""
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    several = comm.Get_size() > 1
    g = _graphs()["kron10_shifted"]
    w = _arc_weights(g, None)
    c = bellman_ford(g, 5, comm=MPI.COMM_SELF, backend="cpu")
    r = bellman_ford(g, 5, backend="gpu", mode="async", delta=3, comm=comm)
    bad = []  # each check named, so a failure says which one (and with what values)
    if not np.array_equal(r.distance, c.distance):
        bad.append(f"api distances differ at {int((r.distance != c.distance).sum())} vertices")
    if several and (r.stats["delta"] != 0 or r.stats["phases"] is not None):
        bad.append(f"api delta/phases {r.stats['delta']!r}/{r.stats['phases']!r} on several PEs")
    if not several and r.stats["delta"] != 3:
        bad.append(f"api delta {r.stats['delta']!r}, given 3")
    q = QueueSSSP(g, w, comm, use_nvshmem=True, delta=3)
    try:
        q.set_delta(2)
        d, _, st, _ = q.run(5, lambda cy: cycle_weight(g, cy, w) < 0)
    finally:
        q.close()
    # QueueSSSP gives the backend's distances (int64 work dtype, its own unreached value), not
    # the API's (the weights' dtype): compared with the CPU backend's rounds (comparing with
    # the API's int32 result flagged the 126 vertices unreachable from 5 on the H200)
    ref = run_rounds(g, w, 5, MPI.COMM_SELF, lambda cy: cycle_weight(g, cy, w) < 0)[0]
    if not np.array_equal(d, ref):
        bad.append(f"QueueSSSP distances differ at {int((d != ref).sum())} vertices")
    if several and (st["delta"] != 0 or st["phases"] is not None):
        bad.append(f"QueueSSSP delta/phases {st['delta']!r}/{st['phases']!r} on several PEs")
    if not several and st["delta"] != 2:
        bad.append(f"QueueSSSP delta {st['delta']!r} after set_delta(2)")
    every = comm.allgather(bad)
    assert not any(every), every
