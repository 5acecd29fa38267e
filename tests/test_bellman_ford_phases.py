"""Near-far phases driven by the host (QueueSSSP(multi_pe_phases=True), issue 7) without a GPU:
the host half (``QueueSSSP.run``, ``_next_phase``, ``_next_thr``) runs for real on host arrays,
the kernel is a sequential Python model of what ``kernels/bellman_ford.cuh`` does with
``ph[P_HOST] = 1``: scan tasks over the previous pile queued by warp 0 at its first idle look
(here: at the launch's start), near/far by the
one global threshold, atomic mode's remote rule on the sender side for odd heads (below thr:
swap the flag to near, queue unless near; at or above: queue only if the flag was 0, without
touching the owner's pile minimum) and the owner's diversion of rescans at or above thr to its
pile, the launch ending at quiescence with the piles kept. Checked: scipy's distances and the CPU
backend's predecessors, more than one phase, a negative cycle found and confirmed, and on
several ranks (``mpirun -n 2``) that every rank gets the same next threshold and phase from
different piles. The kernel itself runs in tests/test_nvshmem_bellman_ford.py (GPU).

    python -m pytest -q tests/test_bellman_ford_phases.py
    mpirun -n 2 python tests/mpi_pytest.py --with-mpi -q tests/test_bellman_ford_phases.py
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
from distgraph.generators import kronecker, plant_negative_cycle, potential_shift, uniform_weights
from distgraph.graph import Graph
from _bf_host import FakeCuPy as _FakeCuPy, HostArray as _HostArray, host_views as _host_views

I_NEAR, I_FAR = 1, 2




def _model_launch(q, scan_limit):
    """One launch of the kernel with host-driven phases, sequentially (items in random order)."""
    from distgraph.backends.gpu import bellman_ford as gbf

    ph, far, cap, inq, dist, pred, ctl = q.ph, q.far, q.far_cap, q.inq, q.dist, q.pred, q.ctl
    assert ph[gbf._P_HOST] == 1, "the host did not ask for host-driven phases"
    if q.meta[0] == 1:  # a run's start: QueueSSSP._reset queued the source in slot 0
        q.meta[0] = 0
        q.fq = [int(q.ring[0, 0])]
    thr, cur = int(ph[gbf._P_THR]), int(ph[gbf._P_PHASE]) & 1
    old = cur ^ 1

    def relax(k, w):
        if not q.isf:
            return int(k) + int(w)
        return int(gbf.to_keys(np.array([gbf.from_keys(np.array([k]), np.float64)[0] + w]))[0])

    def pile(x, k):  # mark()'s far branch: the minimum always, the append from flag 0 only
        ph[gbf._P_FMIN + cur] = min(int(ph[gbf._P_FMIN + cur]), int(k))
        if inq[x] == 0:
            assert ph[gbf._P_CNT + cur] < cap, "far pile full (the kernel aborts): a vertex piled twice"
            inq[x] = I_FAR + cur
            far[cur * cap + ph[gbf._P_CNT + cur]] = x
            ph[gbf._P_CNT + cur] += 1

    nt = int(ph[gbf._P_TASKS])
    if nt:  # the scan tasks over the previous pile (counted in SENT by the host)
        q.tasks_seen.append((nt, int(ph[gbf._P_TCNT])))
        for j in range(int(ph[gbf._P_TCNT])):
            x = int(far[old * cap + j])
            if inq[x] == I_FAR + old:
                if dist[x] < thr:
                    inq[x] = I_NEAR
                    q.fq.append(x)
                else:
                    inq[x] = 0
                    pile(x, dist[x])
        ph[gbf._P_TASKS] = 0
    if ctl[gbf._C_FINISHED] or ctl[gbf._C_STOP]:  # the warps end at once (the tasks stay queued)
        return
    while q.fq:
        v = q.fq.pop(int(q.rng.integers(len(q.fq))))
        inq[v] = 0
        dv = int(dist[v])
        if dv >= thr:  # a remote head queued at or above thr: the owner piles it
            q.diverted += 1
            pile(v, dv)
            continue
        ctl[gbf._C_SCANS] += 1
        below = False
        for e in range(q.indptr[v], q.indptr[v + 1]):
            t = int(q.indices[e])
            ck = relax(dv, q.ww[e])
            if ck < dist[t]:
                dist[t] = ck
                pred[t] = v
                below |= ck < q.bound_key
                if t % 2:  # atomic mode's remote rule, on the sender's side (no pile minimum)
                    if ck < thr:
                        if inq[t] != I_NEAR:
                            inq[t] = I_NEAR
                            q.fq.append(t)
                    elif inq[t] == 0:
                        inq[t] = I_NEAR
                        q.fq.append(t)
                elif ck < thr:
                    if inq[t] != I_NEAR:
                        inq[t] = I_NEAR
                        q.fq.append(t)
                else:
                    pile(t, ck)
        if below:
            ctl[gbf._C_BELOW] = 1
            ctl[gbf._C_STOP] = 1
            return
        if scan_limit and ctl[gbf._C_SCANS] == scan_limit:
            ctl[gbf._C_STOP] = 1
            return
    ctl[gbf._C_FINISHED] = 1  # no near work: the launch ends, the piles are kept


def _fake(g, w, delta, comm=MPI.COMM_SELF, seed=0, launch=_model_launch):
    """A QueueSSSP with host-driven phases whose kernel is ``launch`` on host arrays (one PE)."""
    from distgraph.backends.cpu.bellman_ford import _neg_bound, _setup
    from distgraph.backends.gpu import bellman_ford as gbf

    class Fake(gbf.QueueSSSP):
        def __init__(self):
            self.cp, self.comm, self.graph, self.w = _FakeCuPy(), comm, g, w
            self.queue, self.remote, self.nvs, self.pg, self.host_phases = "bwd", "atomic", True, None, True
            self.part, self.lo, self.hi, self.indptr, self.indices, self.ww, self.wdt = _setup(g, w, 0, comm)
            self.bound, self.has_neg = _neg_bound(self.ww, self.wdt, comm)
            self.isf, self.nl, self.capacity, self.grid = self.wdt.kind == "f", self.hi - self.lo, 64, 1
            h = lambda k, dt: np.zeros(k, dt).view(_HostArray)  # noqa: E731
            n = max(self.nl, 1)
            self.dist, self.pred, self.inq = h(n, np.int64), h(n, np.int64), h(n, np.int32)
            self.ctr, self.d_ghost, self.ghost = h(24, np.int64), h(max(g.n, 1), np.int64), True
            self.ring, self.tickets = np.zeros((64, 3), np.int64).view(_HostArray), h(64, np.int64)
            self.meta, self.ctl, self.ph = h(24, np.int64), h(gbf._CTL, np.int64), h(gbf._PH, np.int64)
            self.far_cap = n
            self.far = h(2 * n, np.int32)
            _host_views(self)
            self.delta = self._global_delta(delta)
            self.keep, self.idle_ns, self.split = True, 2048, 4096
            self.timeout, self.timed_out, self.setup_s, self.launches = 1.0, False, 0.0, 0
            self.rng, self.fq, self.diverted, self.tasks_seen = np.random.default_rng(seed), [], 0, []

        def _launch(self, scan_limit):
            self.launches += 1
            if self.launches > 500:
                raise AssertionError("500 launches: the phases do not end")
            launch(self, scan_limit)

    return Fake()


def _scipy(g, s):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import bellman_ford as sp_bf

    src = np.repeat(np.arange(g.n), np.diff(g.indptr))
    w = np.asarray(g.weights, np.float64)
    order = np.lexsort((w, g.indices, src))
    a, b, ww = src[order], np.asarray(g.indices)[order], w[order]
    first = np.ones(a.shape[0], bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return sp_bf(sp.csr_matrix((ww[first], (a[first], b[first])), shape=(g.n, g.n)), indices=s)


def _cases():
    base = uniform_weights(kronecker(8, seed=2), seed=2)
    shifted = potential_shift(base, seed=3)
    fl = Graph(shifted.indptr, shifted.indices, shifted.weights.astype(np.float64) / 4, directed=shifted.directed)
    return {"uniform": base, "shifted": shifted, "shifted_float": fl}


@pytest.mark.parametrize("name", ["uniform", "shifted", "shifted_float"])
@pytest.mark.parametrize("seed", [0, 1])
def test_host_phases_model_equals_scipy(name, seed):
    from distgraph.backends.cpu.bellman_ford import run_rounds

    g = _cases()[name]
    w = _arc_weights(g, None)
    s = int(np.argmax(np.diff(g.indptr)))
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    ref_d, ref_p, _, _ = run_rounds(g, w, s, MPI.COMM_SELF, confirm, predecessors=True)
    sp_d = _scipy(g, s)
    finite = sp_d[np.isfinite(sp_d)]
    delta = float(finite.max() - finite.min()) / 10  # about 10 phases
    q = _fake(g, w, delta if name == "shifted_float" else int(delta), seed=seed)
    d, p, st, cyc = q.run(s, confirm, predecessors=True)
    assert cyc is None
    assert np.array_equal(d, ref_d) and np.array_equal(p, ref_p)
    reached = np.isfinite(sp_d)
    assert np.array_equal(d[reached].astype(np.float64), sp_d[reached])
    assert st["multi_pe_phases"] is True and st["delta"] == q.delta and st["phases"] >= 5
    # one launch per phase (no negative cycle: no check stops), tasks handed out at each change
    assert st["launches"] == st["phases"] and st["checks"] == 0
    assert len(q.tasks_seen) <= st["phases"] - 1 and all(1 <= t <= 1024 for t, _ in q.tasks_seen)
    # the scan tasks were counted in SENT by the host (one run: the source's 1 plus the tasks)
    assert q.ctr[0] == 1 + sum(t for t, _ in q.tasks_seen)
    assert q.diverted > 0  # the owner's diversion of remote heads at or above thr happened


def test_host_phases_model_negative_cycle():
    g, cyc = plant_negative_cycle(uniform_weights(kronecker(8, seed=2), seed=2), length=5, seed=4)
    w = _arc_weights(g, None)
    q = _fake(g, w, 40)
    _, _, st, found = q.run(int(cyc[0]), lambda cy: cycle_weight(g, cy, w) < 0)
    assert found is not None and cycle_weight(g, found, w) < 0 and st["checks"] >= 1


def test_host_phases_off_with_delta_zero():
    """delta 0 (or inf) with multi_pe_phases: no priority, one launch, no phases reported."""
    g = _cases()["shifted"]
    w = _arc_weights(g, None)
    s = int(np.argmax(np.diff(g.indptr)))

    def fifo(q, scan_limit):
        assert q.ph[8] == 0 and q.ph[0] == np.iinfo(np.int64).max
        q.ph[8] = 1  # the model wants the flag; nothing goes far at thr = INT64_MAX
        _model_launch(q, scan_limit)
        q.ph[8] = 0

    q = _fake(g, w, 0, launch=fifo)
    d, _, st, cyc = q.run(s, lambda cy: cycle_weight(g, cy, w) < 0)
    assert cyc is None and st["phases"] is None and st["launches"] == 1
    assert np.array_equal(d[np.isfinite(_scipy(g, s))].astype(np.float64), _scipy(g, s)[np.isfinite(_scipy(g, s))])


def test_next_threshold_rule():
    """_next_thr mirrors the kernel's: max(thr, fmin) + delta, saturating at +inf for integers,
    float keys added as doubles, at least the next key up."""
    from distgraph.backends.gpu import bellman_ford as gbf

    class Q(gbf.QueueSSSP):
        def __init__(self, delta, isf):
            self.delta, self.isf = delta, isf

    imax = np.iinfo(np.int64).max
    assert Q(10, False)._next_thr(5, 30, imax) == 40 and Q(10, False)._next_thr(50, 30, imax) == 60
    assert Q(10, False)._next_thr(5, imax - 3, imax) == imax
    assert Q(10, False)._next_thr(-100, -70, imax) == -60
    finf = int(np.float64(np.inf).view(np.int64))
    k = lambda x: int(gbf.to_keys(np.array([x], np.float64))[0])  # noqa: E731
    assert Q(0.5, True)._next_thr(k(-2.0), k(-3.0), finf) == k(-1.5)
    assert Q(0.5, True)._next_thr(k(1.0), k(2.25), finf) == k(2.75)
    assert Q(1e-300, True)._next_thr(k(1e10), k(1e10), finf) == k(1e10) + 1  # rounding: next key
    assert Q(0.5, True)._next_thr(k(1.0), finf, finf) == finf


@pytest.mark.mpi
def test_next_phase_agrees_over_ranks():
    """_next_phase on every rank (collective) from different piles: the same next threshold
    (max(thr, smallest pile key over the ranks) + delta) and phase everywhere, each rank's own
    scan tasks counted in its SENT and queued over its own pile's entries, the stop state
    cleared; when every pile is empty, False on every rank."""
    from distgraph.backends.gpu import bellman_ford as gbf

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    g = _cases()["uniform"]
    w = _arc_weights(g, None)
    q = _fake(g, w, 7, comm=comm)
    imax = np.iinfo(np.int64).max
    q._reset(0)
    sent0 = int(q.ctr[0])
    q.ph[gbf._P_PHASE] = 3  # pile 1 current
    cnt = 100 * rank  # rank 0: empty pile
    q.ph[gbf._P_CNT + 1], q.ph[gbf._P_FMIN + 1] = cnt, (50 + rank if cnt else imax)
    q.ph[gbf._P_CNT + 0], q.ph[gbf._P_FMIN + 0] = 9, 3  # the other pile: reset by the change
    q.ctl[gbf._C_FINISHED], q.ctl[gbf._C_STOP] = 1, 1
    more = q._next_phase()
    ph = q.ph.get()
    want_thr = max(7, 51) + 7  # the initial thr is 0 + delta; rank 1's pile holds the smallest key
    got = comm.allgather((bool(more), int(ph[gbf._P_THR]), int(ph[gbf._P_PHASE])))
    assert all(x == got[0] for x in got), got
    if size > 1:
        assert more and ph[gbf._P_THR] == want_thr and ph[gbf._P_PHASE] == 4
        assert ph[gbf._P_CNT] == 0 and ph[gbf._P_FMIN] == imax
        assert ph[gbf._P_TASKS] == -(-cnt // 64) and ph[gbf._P_TCNT] == cnt
        assert int(q.ctr[0]) == sent0 + -(-cnt // 64)
        assert q.ctl[gbf._C_FINISHED] == 0 and q.ctl[gbf._C_STOP] == 0
    else:
        assert not more
    # every pile empty: the run is over on every rank
    q.ph[gbf._P_CNT:gbf._P_CNT + 2] = 0
    assert not any(comm.allgather(q._next_phase()))


@pytest.mark.mpi
def test_default_delta_is_one_value_over_ranks():
    """The default delta with multi_pe_phases is the same on every rank (the largest pick over
    the blocks), a given one is kept, 0 stays off."""
    comm = MPI.COMM_WORLD
    g = _cases()["shifted"]
    w = _arc_weights(g, None)
    q = _fake(g, w, None, comm=comm)
    assert len(set(comm.allgather(q.delta))) == 1 and q.delta > 0
    q.set_delta(5)
    assert q.delta == 5
    q.set_delta(0)
    assert q.delta == 0


def test_multi_pe_phases_argument_checked():
    from distgraph.backends.gpu.bellman_ford import QueueSSSP
    from distgraph.errors import InvalidArgumentError

    g = Graph.from_edges([0, 1], [1, 2], [1, -1])
    with pytest.raises(InvalidArgumentError, match="multi_pe_phases must be True or False"):
        QueueSSSP(g, g.weights, MPI.COMM_SELF, multi_pe_phases=1)
