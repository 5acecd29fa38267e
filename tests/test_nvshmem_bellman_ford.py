"""Queue-driven GPU Bellman-Ford over NVSHMEM on 1, 2 and 4 PEs (several PEs share the one
test GPU in limited MPG: correctness only). Every remote relaxation (remote atomic minimum
+ enqueue, remote enqueue of the candidate, or batches of coalesced candidates shipped by
one put each) with either queue (BQ, BWD) must give the CPU backend's distances and
predecessors exactly (and scipy's distances), and a reachable negative cycle must be
raised on every rank with a confirmed negative weight. The batch mode's counters must
add up: every claim shipped or coalesced, every shipped item applied by its owner. Near-far
phases driven by the host (``multi_pe_phases=True``, opt-in) on 1, 2 and 4 PEs, every remote
mode: the same answers, several phases, negative cycles still found. The remote atomic
relaxation (``atomic``: CAS loop from the ghost key, the flag of a first improvement set
without a fetch, one queue reservation per warp and destination) beside the path before
session 7 (``atomic_fetch``) in every test, with counters that must add up.

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

VARIANTS = [("bq", "atomic"), ("bq", "enqueue"), ("bwd", "atomic"), ("bwd", "enqueue"), ("bq", "batch"),
            ("bwd", "batch"), ("bq", "atomic_fetch"), ("bwd", "atomic_fetch")]
#: every remote relaxation QueueSSSP takes (atomic_fetch: the atomic path before session 7, A/B)
REMOTES = ["atomic", "enqueue", "batch", "atomic_fetch"]


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


def _graphs_and_uniform():
    """_graphs() and a Kronecker graph without negative weights (no tails to track)."""
    return {**_graphs(), "kron9_uniform": uniform_weights(kronecker(9, seed=8), seed=8)}


def _with_cpu_reference(graphs):
    """``(name, g, w, s, confirm, ref_d, ref_p)`` for each graph in name order: its arc weights,
    the largest-degree source, the negative-cycle check and the CPU backend's distances and
    canonical predecessors."""
    from distgraph.backends.cpu.bellman_ford import run_rounds

    for name, g in sorted(graphs.items()):
        w = _arc_weights(g, None)
        s = int(np.argmax(np.diff(g.indptr)))
        confirm = lambda cy, g=g, w=w: cycle_weight(g, cy, w) < 0  # noqa: E731
        ref_d, ref_p, _, _ = run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=True)
        yield name, g, w, s, confirm, ref_d, ref_p


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
            # with the ghost keys of remote heads (default) and, on BQ, without them (batch mode
            # keeps them whatever the attribute); batch: every warp ships at every entry, or only
            # warp 0 does (no outbox of these graphs fills 1024 entries)
            for ghost in (True, False) if queue == "bq" else (True,):
                for flush in (1, 1024) if remote == "batch" else (q.flush,):
                    q.ghost, q.flush = ghost, flush
                    d, p, st, cyc = q.run(s, confirm, predecessors=True)
                    good = cyc is None and np.array_equal(d, ref_d) and np.array_equal(p, ref_p)
                    info.append((queue, remote, ghost, flush, good, st.get("launches"), st.get("items")))
                    ok &= good
        finally:
            q.close()
    assert _all(comm, ok), info


def test_public_api_on_comm_world(pg):
    comm = MPI.COMM_WORLD
    g = _graphs()["kron10_shifted"]
    c = bellman_ford(g, 5, predecessors=True, comm=MPI.COMM_SELF, backend="cpu")
    ok = True
    for remote in ("atomic", "enqueue", "batch"):
        r = bellman_ford(g, 5, backend="gpu", mode="async", remote=remote, predecessors=True, comm=comm, verify=True)
        ok &= np.array_equal(r.distance, c.distance) and np.array_equal(r.predecessor, c.predecessor)
        ok &= r.stats["nvshmem"] == (comm.Get_size() > 1)
    assert _all(comm, ok)


@pytest.mark.parametrize("remote", REMOTES)
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
    if remote == "atomic_fetch":
        return  # QueueSSSP only (not a bellman_ford() option)
    with pytest.raises(NegativeCycleError):
        bellman_ford(g, int(cyc[0]), backend="gpu", mode="async", remote=remote, comm=comm)


def test_delta_ignored_on_several_pes(pg):
    """By default (``multi_pe_phases=False``) the near-far priority runs on one PE only: on
    several PEs a delta (given, or set between runs) is ignored, stats say delta 0 and no
    phases, and the distances are the CPU's. On one PE the delta is used as given (integer
    weights: as is), by the kernel's own phase changes (not the host's)."""
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
    if st["multi_pe_phases"] is not False:
        bad.append(f"QueueSSSP multi_pe_phases {st['multi_pe_phases']!r} by default")
    every = comm.allgather(bad)
    assert not any(every), every


def _scipy_distances(g, s):
    """scipy's Bellman-Ford from s (float64, inf unreached) on the graph's weights."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import bellman_ford as sp_bf

    src = np.repeat(np.arange(g.n), np.diff(g.indptr))
    # scipy keeps the lightest of parallel arcs when built from COO with duplicates summed: build
    # the matrix from the lightest arc of each pair, as the CPU backend counts them
    w = np.asarray(g.weights, np.float64)
    order = np.lexsort((w, g.indices, src))
    a, b, ww = src[order], np.asarray(g.indices)[order], w[order]
    first = np.ones(a.shape[0], bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    m = sp.csr_matrix((ww[first], (a[first], b[first])), shape=(g.n, g.n))
    # explicit zeros are arcs for csgraph only when stored: keep them
    return sp_bf(m, indices=s)


@pytest.mark.parametrize("queue", ["bq", "bwd"])
def test_batch_counters_add_up_and_scipy_agrees(pg, queue):
    """remote="batch" forced on every graph, both flush settings: scipy's distances, the CPU
    backend's predecessors, and counters that account for every remote candidate: claims =
    shipped + coalesced, shipped = applied (summed over PEs), nothing on one PE. Coalescing
    (several claims for one vertex merged before a put) must have happened on several PEs."""
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    several = comm.Get_size() > 1
    bad, coalesced, dropped = [], 0, 0
    for name, g, w, s, confirm, ref_d, ref_p in _with_cpu_reference(_graphs_and_uniform()):
        sp_d = _scipy_distances(g, s)
        q = QueueSSSP(g, w, comm, queue=queue, remote="batch", use_nvshmem=True)
        try:
            for flush in (1024, 1, 256):
                q.flush = flush
                d, p, st, cyc = q.run(s, confirm, predecessors=True)
                reached = np.isfinite(sp_d)
                got_inf = d == (np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).max)
                if cyc is not None or not np.array_equal(d, ref_d) or not np.array_equal(p, ref_p):
                    bad.append(f"{name} flush={flush}: differs from the CPU backend (cycle {cyc is not None})")
                if not (np.array_equal(got_inf, ~reached) and np.array_equal(d[reached].astype(np.float64),
                                                                               sp_d[reached])):
                    bad.append(f"{name} flush={flush}: distances differ from scipy's")
                c = {k: st[k] for k in ("remote_claims", "coalesced", "shipped", "applied", "ghost_dropped",
                                        "flushes")}
                if st["remote"] != "batch" or st["ghost"] is not True:
                    bad.append(f"{name}: stats say remote={st['remote']!r}, ghost={st['ghost']!r}")
                if c["remote_claims"] != c["shipped"] + c["coalesced"]:
                    bad.append(f"{name} flush={flush}: claims != shipped + coalesced: {c}")
                if c["shipped"] != c["applied"]:
                    bad.append(f"{name} flush={flush}: shipped != applied: {c}")
                if several and (c["shipped"] == 0 or c["flushes"] == 0 or c["flushes"] > c["shipped"]):
                    bad.append(f"{name} flush={flush}: nothing shipped, or more puts than items: {c}")
                if not several and any(c.values()):
                    bad.append(f"{name} flush={flush}: remote counters on one PE: {c}")
                coalesced += c["coalesced"]
                dropped += c["ghost_dropped"]
        finally:
            q.close()
    if several and coalesced == 0:
        bad.append("no claim was ever coalesced on several PEs")
    if several and dropped == 0:
        bad.append("the ghost keys never dropped a candidate on several PEs")
    every = comm.allgather(bad)
    assert not any(every), every



def test_batch_small_inbox_rings_wrap(pg, monkeypatch):
    """Inbox rings of 64 items per source (the default is up to 2**20): puts wrap around the
    ring and wait for the owner's credit, and the answer is still the CPU backend's, with the
    counters adding up; more than 64 items shipped on several PEs (the ring wrapped)."""
    from distgraph.backends.gpu import bellman_ford as gbf

    comm = MPI.COMM_WORLD
    several = comm.Get_size() > 1
    monkeypatch.setattr(gbf, "_RING_MAX", 64)
    bad, shipped = [], 0
    for name, g, w, s, confirm, ref_d, ref_p in _with_cpu_reference(_graphs_and_uniform()):
        q = gbf.QueueSSSP(g, w, comm, queue="bwd", remote="batch", use_nvshmem=True)
        try:
            if several and q.ring_in != 64:
                bad.append(f"{name}: inbox ring of {q.ring_in} items, not 64")
            for flush in (1, 1024):
                q.flush = flush
                d, p, st, cyc = q.run(s, confirm, predecessors=True)
                if cyc is not None or not np.array_equal(d, ref_d) or not np.array_equal(p, ref_p):
                    bad.append(f"{name} flush={flush}: differs from the CPU backend")
                if st["remote_claims"] != st["shipped"] + st["coalesced"] or st["shipped"] != st["applied"]:
                    bad.append(f"{name} flush={flush}: counters do not add up: {st}")
                shipped += st["shipped"]
        finally:
            q.close()
    if several and shipped <= 64:
        bad.append(f"only {shipped} items shipped: the rings never wrapped")
    every = comm.allgather(bad)
    assert not any(every), every


def _phase_graphs():
    g = _graphs()
    g["kron10_uniform"] = uniform_weights(kronecker(10, seed=2), seed=2)
    return g


@pytest.mark.parametrize("remote", REMOTES)
def test_multi_pe_phases_equal_cpu_and_scipy(pg, remote):
    """multi_pe_phases=True (host-driven near-far phases, one global threshold) forced with a
    delta of about a tenth of the distance range (several phases; on 1 PE through the NVSHMEM
    kernel too, so the host's phase changes run there as well): the CPU backend's distances and
    predecessors, scipy's distances, stats that say so (given delta, at least 3 phases, one
    launch per phase at least), on uniform, potential-shifted (negative), float and disconnected
    graphs, twice per runner (the second run starts from a clean phase state), then with the
    default delta (the largest of the PEs' picks: one value on every PE)."""
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    bad, phases = [], []
    for name, g, w, s, confirm, ref_d, ref_p in _with_cpu_reference(_phase_graphs()):
        sp_d = _scipy_distances(g, s)
        reached = np.isfinite(sp_d)
        span = float(sp_d[reached].max() - sp_d[reached].min())
        delta = span / 10 if g.weights.dtype.kind == "f" else max(int(span // 10), 1)
        q = QueueSSSP(g, w, comm, queue="bwd", remote=remote, use_nvshmem=True, delta=delta, multi_pe_phases=True)
        try:
            for trial in range(3):
                if trial == 2:
                    q.set_delta(None)  # collective
                d, p, st, cyc = q.run(s, confirm, predecessors=True)
                tag = f"{name} {remote} run {trial}"
                if cyc is not None or not np.array_equal(d, ref_d) or not np.array_equal(p, ref_p):
                    bad.append(f"{tag}: differs from the CPU backend (cycle {cyc is not None})")
                got_inf = d == (np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).max)
                if not (np.array_equal(got_inf, ~reached)
                        and np.array_equal(d[reached].astype(np.float64), sp_d[reached])):
                    bad.append(f"{tag}: distances differ from scipy's")
                if st["multi_pe_phases"] is not True:
                    bad.append(f"{tag}: stats multi_pe_phases {st['multi_pe_phases']!r}")
                if trial < 2 and (st["delta"] != delta or not st["phases"] or st["phases"] < 3):
                    bad.append(f"{tag}: delta {st['delta']!r} (given {delta!r}), phases {st['phases']!r}")
                if st["phases"] and st["launches"] < st["phases"]:
                    bad.append(f"{tag}: {st['launches']} launches for {st['phases']} phases")
                if trial == 2 and len(set(comm.allgather(st["delta"]))) != 1:
                    bad.append(f"{tag}: default delta differs over the PEs")
                phases.append(st["phases"])
        finally:
            q.close()
    if len(set(map(tuple, comm.allgather(phases)))) != 1:
        bad.append("the PEs counted different phases")
    every = comm.allgather(bad)
    assert not any(every), every


@pytest.mark.parametrize("remote", REMOTES)
def test_multi_pe_phases_negative_cycle(pg, remote):
    """A reachable negative cycle is still found (and confirmed) with host-driven phases and
    a small delta (the cycle's vertices sit in far piles between phases)."""
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    g, cyc = plant_negative_cycle(uniform_weights(kronecker(9, seed=2), seed=2), length=5, seed=4)
    w = _arc_weights(g, None)
    q = QueueSSSP(g, w, comm, queue="bwd", remote=remote, use_nvshmem=True, delta=40, multi_pe_phases=True)
    try:
        _, _, st, found = q.run(int(cyc[0]), lambda cy: cycle_weight(g, cy, w) < 0)
    finally:
        q.close()
    ok = found is not None and cycle_weight(g, found, w) < 0 and st["multi_pe_phases"] is True
    assert _all(comm, ok), (st, found)


def _atomic_graphs():
    g = _graphs()
    g["kron12_uniform"] = uniform_weights(kronecker(12, seed=8), seed=8)  # more remote traffic per run
    return g


@pytest.mark.parametrize("queue", ["bwd", "bq"])
def test_atomic_paths_equal_cpu_and_counters_add_up(pg, queue):
    """remote="atomic" (CAS from the ghost key or +inf, first improvements flagged without a
    fetch, warp-aggregated remote enqueues) and "atomic_fetch" (the path before session 7), with
    and without ghost keys (without: the first CAS expects +inf), three runs each on one runner:
    the CPU backend's distances and predecessors, scipy's distances, and counters that add up
    (summed over PEs): pushes <= wins <= claims, first <= wins, no batch counters; on several PEs
    remote wins and pushes happened, "atomic" set first-improvement flags unfetched and
    "atomic_fetch" never did; on one PE every remote counter is 0. A CAS whose failure were taken
    for a success, a flag stored after the enqueue it guards, or a push into the wrong PE's
    segment loses or corrupts distances here."""
    from distgraph.backends.gpu.bellman_ford import QueueSSSP

    comm = MPI.COMM_WORLD
    several = comm.Get_size() > 1
    bad, tot = [], {}
    keys = ("remote_claims", "remote_wins", "remote_first", "remote_pushes", "cas_failed", "ghost_dropped",
            "coalesced", "shipped", "applied", "flushes")
    for name, g, w, s, confirm, ref_d, ref_p in _with_cpu_reference(_atomic_graphs()):
        sp_d = _scipy_distances(g, s)
        reached = np.isfinite(sp_d)
        for remote in ("atomic", "atomic_fetch"):
            q = QueueSSSP(g, w, comm, queue=queue, remote=remote, use_nvshmem=True,
                          split=32 if queue == "bq" else 4096)
            try:
                for ghost in (True, False):
                    q.ghost = ghost
                    for trial in range(3):
                        d, p, st, cyc = q.run(s, confirm, predecessors=True)
                        tag = f"{name} {remote} ghost={ghost} run {trial}"
                        if cyc is not None or not np.array_equal(d, ref_d) or not np.array_equal(p, ref_p):
                            bad.append(f"{tag}: differs from the CPU backend (cycle {cyc is not None})")
                        got_inf = d == (np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).max)
                        if not (np.array_equal(got_inf, ~reached)
                                and np.array_equal(d[reached].astype(np.float64), sp_d[reached])):
                            bad.append(f"{tag}: distances differ from scipy's")
                        c = {k: st[k] for k in keys}
                        if st["remote"] != remote:
                            bad.append(f"{tag}: stats say remote={st['remote']!r}")
                        if not (c["remote_pushes"] <= c["remote_wins"] <= c["remote_claims"]
                                and c["remote_first"] <= c["remote_wins"]):
                            bad.append(f"{tag}: not pushes <= wins <= claims, first <= wins: {c}")
                        if any(c[k] for k in ("coalesced", "shipped", "applied", "flushes")):
                            bad.append(f"{tag}: batch counters in an atomic mode: {c}")
                        if not ghost and c["ghost_dropped"]:
                            bad.append(f"{tag}: ghost drops without ghost keys: {c}")
                        if not several and any(c.values()):
                            bad.append(f"{tag}: remote counters on one PE: {c}")
                        if remote == "atomic_fetch" and c["remote_first"]:
                            bad.append(f"{tag}: atomic_fetch set flags unfetched: {c}")
                        for k in keys:
                            tot[(remote, k)] = tot.get((remote, k), 0) + c[k]
            finally:
                q.close()
    if several:
        for remote in ("atomic", "atomic_fetch"):
            if not (tot[(remote, "remote_wins")] and tot[(remote, "remote_pushes")]):
                bad.append(f"{remote}: no remote win or push on several PEs: {tot}")
        if not tot[("atomic", "remote_first")]:
            bad.append(f"atomic never set a first-improvement flag unfetched: {tot}")
    every = comm.allgather(bad)
    assert not any(every), every


def test_atomic_fetch_is_queue_only(pg):
    """remote="atomic_fetch" is a QueueSSSP option for A/B timings, not a bellman_ford() one
    (refused there on every rank with the allowed values), and a bad remote name is refused by
    QueueSSSP naming atomic_fetch among the allowed ones."""
    from distgraph.backends.gpu.bellman_ford import QueueSSSP
    from distgraph.errors import InvalidArgumentError

    comm = MPI.COMM_WORLD
    g = _graphs()["kron10_shifted"]
    with pytest.raises(InvalidArgumentError):
        bellman_ford(g, 5, backend="gpu", mode="async", remote="atomic_fetch", comm=comm)
    with pytest.raises(InvalidArgumentError, match="atomic_fetch"):
        QueueSSSP(g, _arc_weights(g, None), comm, remote="atomic-fetch", use_nvshmem=True)


_PAIRS_TEST = r"""
#include "bellman_ford_pairs.cuh"
// Every thread claims keys on pair (i % npairs), tail = 7 key + 3, and reads pairs back; bad
// counts read pairs whose tail is not their key's, best[p] is the smallest key tried on pair p.
extern "C" __global__ void hammer(dgbf::KeyTail* pairs, int npairs, int rounds, unsigned long long seed,
                                  unsigned long long* bad, long long* best) {
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long x = seed ^ (i * 0x9E3779B97F4A7C15ull);
    const int p = (int)(i % npairs);
    for (int r = 0; r < rounds; ++r) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        const long long ck = (long long)(x % 1000003ull) + 1000000ll * (rounds - r);  // mostly falling
        atomicMin(best + p, ck);
        dgbf::claim_pair(pairs + p, ck, 7 * ck + 3);
        const dgbf::KeyTail kt = dgbf::read_pair(pairs + ((p + r) % npairs));
        if (kt.key != 0x7fffffffffffffffll && kt.tail != 7 * kt.key + 3) atomicAdd(bad, 1ull);
    }
}
"""


def test_batch_pairs_claim_key_and_tail_together():
    """bellman_ford_pairs.cuh on the GPU (sm_90: 16-byte CAS): 16 pairs hammered by 64 K
    threads, 64 claims each, tails a function of their key: every pair read during the run
    and at its end holds one claim's key with that claim's tail, and its key is the smallest
    claimed. With the key's minimum and the tail written apart (the fallback of GPUs without
    a 16-byte CAS) the last tail written is often not the smallest key's."""
    cp = pytest.importorskip("cupy")
    from distgraph._kernels import kernels_dir

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("16-byte atomicCAS needs sm_90")
    mod = cp.RawModule(code=_PAIRS_TEST, options=("-std=c++17", f"-I{kernels_dir()}"))
    k = mod.get_function("hammer")
    npairs, rounds, inf = 16, 64, np.iinfo(np.int64).max
    pairs = cp.full(2 * npairs, inf, cp.int64)  # (key, tail) pairs, 16-byte aligned
    best = cp.full(npairs, inf, cp.int64)
    bad = cp.zeros(1, cp.uint64)
    k((512,), (128,), (pairs, np.int32(npairs), np.int32(rounds), np.uint64(12345), bad, best))
    cp.cuda.Device().synchronize()
    got = pairs.get().reshape(npairs, 2)
    b = best.get()
    ok = int(bad.get()[0]) == 0 and np.array_equal(got[:, 0], b) and np.array_equal(got[:, 1], 7 * b + 3)
    assert _all(MPI.COMM_WORLD, ok), (int(bad.get()[0]), got[:4], b[:4])


@pytest.mark.parametrize("bigdeg", [2048, 16])
def test_distributed_rounds_equal_cpu(pg, bigdeg, monkeypatch):
    """RoundsSSSP on several PEs (each its block's arcs; owners pull the candidates their peers lowered, or
    whole arrays combined after every round through peer views): the CPU backend's distances
    and canonical predecessors, one
    GPU's round count (order="jacobi"; "async": no more rounds), negative cycles raised on every rank (found in the gathered tails, not
    by a search on the CPU); mode="auto" and "rounds" through
    the public API take this path and free its symmetric arrays. With the round kernels' hubs
    from 16 arcs (many) and from 2048 (the default). Renamed by degree (relabel="degree",
    dealt over the PEs): the same results in the caller's ids, a cycle among them."""
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.backends.gpu.bellman_ford import RoundsSSSP

    monkeypatch.setattr(gbf, "BIG_DEGREE", bigdeg)

    comm = MPI.COMM_WORLD
    ok, info = True, []
    live = len(pg._live)
    for name, g, w, s, confirm, ref_d, ref_p in _with_cpu_reference(_graphs_and_uniform()):
        for engine, exchange, order, relabel in (("kernel", None, "jacobi", None), ("kernel", "dense", "jacobi", None),
                                                 ("cupy", None, None, None), ("kernel", None, "async", None),
                                                 ("kernel", "dense", "async", None), ("kernel", None, "jacobi", "degree"),
                                                 ("kernel", None, "async", "degree")):
            r = RoundsSSSP(g, w, comm, engine=engine, exchange=exchange, order=order, relabel=relabel)
            try:
                d, p, st, cyc = r.run(s, confirm, predecessors=True)
                one = RoundsSSSP(g, w, MPI.COMM_SELF, engine="cupy")
                _, _, st1, _ = one.run(s, confirm)
            finally:
                r.close()
            # the pull exchange by default for the kernels (every heap is mapped: one host)
            kind = ("pull" if engine == "kernel" and exchange is None else "dense") if r.distributed else None
            good = (cyc is None and r.distributed == (comm.Get_size() > 1) and st["exchange"] == kind
                    and np.array_equal(d, ref_d)
                    and np.array_equal(p, ref_p)
                    and ((st["rounds"], st["relaxations"]) == (st1["rounds"], st1["relaxations"]) if order != "async"
                         # asynchronous: no more rounds (the relaxations vary from run to run)
                         else st["rounds"] <= st1["rounds"]))
            info.append((name, engine, exchange, order, relabel, good, st["rounds"], st1["rounds"], st["relaxations"],
                         st1["relaxations"]))
            ok &= good
        for mode in ("rounds", "auto"):
            res = bellman_ford(g, s, backend="gpu", mode=mode, predecessors=True, comm=comm)
            ok &= np.array_equal(res.distance, bellman_ford(g, s, backend="cpu", comm=MPI.COMM_SELF).distance)
    assert _all(comm, ok), info
    gc, cyc = plant_negative_cycle(uniform_weights(kronecker(9, seed=2), seed=2), length=5, seed=4)

    def no_cpu_search(*a):  # the cycle must come from the tails gathered from their owners
        raise AssertionError("the rounds' tails held no negative cycle: RoundsSSSP searched on the CPU")

    monkeypatch.setattr(gbf, "_cpu_cycle", no_cpu_search)
    with pytest.raises(NegativeCycleError) as ei:
        bellman_ford(gc, int(cyc[0]), backend="gpu", mode="rounds", comm=comm)
    assert _all(comm, cycle_weight(gc, ei.value.cycle) < 0)
    r = RoundsSSSP(gc, gc.weights, comm, relabel="degree")  # the tails renamed back to the caller's ids
    try:
        d, _, st, found = r.run(int(cyc[0]), lambda c: cycle_weight(gc, c) < 0)
    finally:
        r.close()
    assert _all(comm, d is None and found is not None and cycle_weight(gc, found) < 0 and st["tails_rerun"])
    assert _all(comm, len(pg._live) == live)  # every run freed its symmetric arrays


@pytest.mark.parametrize("split", ["graph", "sources"])
def test_many_sources_split_graph_or_sources(pg, split, monkeypatch):
    """bellman_ford(graph, sources) on every PE: each source on all PEs together (the
    distributed rounds, renamed by degree from the second source on with the threshold
    lowered) or the sources dealt to the PEs (each alone on its GPU): every row equal to the
    CPU backend's on one rank, on every rank; the sessions free their symmetric arrays."""
    from distgraph.runtime.config import config

    monkeypatch.setattr(config, "gpu_sssp_relabel_runs", 2)
    comm = MPI.COMM_WORLD
    live = len(pg._live)
    ok, info = True, []
    for name, g in sorted(_graphs_and_uniform().items()):
        srcs = [int(np.argmax(np.diff(g.indptr))), 3, 0, 3, 17]
        r = bellman_ford(g, srcs, backend="gpu", predecessors=True, comm=comm, split=split)
        ref = bellman_ford(g, srcs, backend="cpu", predecessors=True, comm=MPI.COMM_SELF)
        per = r.stats["per_source"]
        good = (np.array_equal(r.distance, ref.distance) and np.array_equal(r.predecessor, ref.predecessor)
                and r.stats["split"] == split and all(st["backend"] == "gpu" for st in per))
        if split == "graph":  # the rounds (Kronecker settles) on all PEs, renamed from the second source
            good &= [st.get("relabel") for st in per] == [None] + ["degree"] * 4
        # distances only, 5 sources per PE or more: split="sources" runs each PE's in one batch
        many = srcs * 4 * comm.Get_size()
        r2 = bellman_ford(g, many, backend="gpu", comm=comm, split=split)
        ref2 = np.tile(ref.distance, (4 * comm.Get_size(), 1))
        good &= np.array_equal(r2.distance, ref2)
        if split == "sources":
            good &= all(st.get("batch") == 20 for st in r2.stats["per_source"])
        info.append((name, good, [st.get("relabel") for st in per]))
        ok &= good
    assert _all(comm, ok), info
    assert _all(comm, len(pg._live) == live)
