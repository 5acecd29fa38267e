"""The distributed Broker Queue / BWD on the CPU (MPI-RMA PGAS) and the history verifiers.

Identical on 1, 2 and 4 ranks:
    mpiexec -n 4 python tests/mpi_pytest.py --with-mpi --only-mpi tests/test_queue.py
Every rank gathers the results and asserts the same thing, so no rank waits alone.
"""

import time

import numpy as np
import pytest

from distgraph.errors import InvalidArgumentError
from distgraph.pgas.queue import BrokerQueue, check_history, check_linearizable

KINDS = ["bq", "bwd"]


@pytest.fixture(scope="module")
def pg():
    from distgraph.pgas import get_pgas

    return get_pgas(backend="cpu")


def _all(comm, ok):
    return all(comm.allgather(bool(ok)))


# -- verifiers on hand-made histories --------------------------------------------------------

def test_check_history_accepts_concurrent_fifo():
    ev = [(0, 10, "enq", 1, True), (5, 15, "enq", 2, True),   # overlapping enqueues: any order
          (20, 30, "deq", 2), (25, 35, "deq", 1), (40, 50, "deq", None)]
    assert check_history(ev) == []
    assert check_linearizable(ev)


@pytest.mark.parametrize("ev,pattern", [
    ([(0, 1, "enq", 1, True), (2, 3, "enq", 2, True), (4, 5, "deq", 2), (6, 7, "deq", 1)], "VOrd"),
    ([(0, 1, "enq", 1, True), (2, 3, "deq", 1), (4, 5, "deq", 1)], "VRepet"),
    ([(0, 1, "deq", 9)], "VFresh"),
    ([(0, 1, "enq", 1, True), (2, 3, "deq", None), (4, 5, "deq", 1)], "VWit"),
])
def test_check_history_finds_each_violation(ev, pattern):
    errs = check_history(ev)
    assert any(e.startswith(pattern) for e in errs), errs
    assert not check_linearizable(ev)


def test_check_history_clock_domains():
    # PE 1's clock runs 100 ns behind PE 0's: its dequeue seems to end before the enqueue began
    ev = [(150, 160, "enq", 1, True), (200, 210, "enq", 2, True), (60, 70, "deq", 1), (120, 130, "deq", 2)]
    assert any(e.startswith("VFresh") and "before its enqueue began" in e for e in check_history(ev))
    assert check_history(ev, domains=[0, 0, 1, 1]) == []
    # what no clock can excuse is still found across clocks
    bad = ev + [(140, 145, "deq", 9), (170, 180, "deq", 2)]
    errs = check_history(bad, domains=[0, 0, 1, 1, 1, 0])
    assert any(e == "VFresh: value 9 dequeued but never enqueued" for e in errs), errs
    assert any(e.startswith("VRepet: value 2") for e in errs), errs
    # within one clock the real-time patterns still count
    ordv = [(0, 1, "enq", 1, True), (2, 3, "enq", 2, True), (4, 5, "deq", 2), (6, 7, "deq", 1)]
    assert any(e.startswith("VOrd") for e in check_history(ordv, domains=[0, 0, 1, 1]))
    assert check_history(ordv, domains=[0, 1, 1, 1]) == []
    with pytest.raises(ValueError, match="one key per event"):
        check_history(ev, domains=[0])


def test_check_linearizable_bounded_full():
    ev = [(0, 1, "enq", 1, True), (2, 3, "enq", 2, False), (4, 5, "deq", 1), (6, 7, "enq", 3, True)]
    assert check_linearizable(ev, capacity=1)
    assert not check_linearizable(ev, capacity=2)  # with room for 2, that FULL was a lie


# -- sequential behaviour, on each rank's own segment -----------------------------------------

@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_full_empty_fifo_reset(pg, comm, kind):
    me = pg.my_pe
    with BrokerQueue(8, kind=kind, pgas=pg) as q:
        ok = all(q.enqueue(100 * me + i, pe=me) for i in range(8))
        ok &= q.enqueue(-1, pe=me) is False                   # FULL
        ok &= q.inspect(me) == {"segment": me, "count": 8, "head": 0, "tail": 8, "size": 8}
        ok &= [q.dequeue(pe=me) for _ in range(9)] == [100 * me + i for i in range(8)] + [None]
        ok &= q.enqueue_many([1, 2, 3], pe=me) and q.inspect(me)["count"] == 3
        q.reset()
        ok &= all(s["count"] == s["head"] == s["tail"] == 0 for s in q.inspect())
        comm.Barrier()  # nobody touches a segment before everybody has looked
        ok &= q.dequeue(pe=me) is None and q.enqueue(5, pe=me) and q.dequeue(pe=me) == 5
    assert _all(comm, ok)


@pytest.mark.mpi
def test_ring_wraps_many_times_with_batches(pg, comm):
    me = pg.my_pe
    rng = np.random.default_rng(me)
    with BrokerQueue(4, width=2, pgas=pg) as q:
        pushed, popped, nxt = [], [], 0
        for _ in range(150):
            k = int(rng.integers(1, 4))
            items = np.array([[nxt + i, -(nxt + i)] for i in range(k)])
            if q.enqueue_many(items, pe=me):
                pushed += list(range(nxt, nxt + k))
                nxt += k
            got = q.dequeue_many(int(rng.integers(1, 4)), pe=me)
            popped += got[:, 0].tolist()
            ok = (got[:, 1] == -got[:, 0]).all()
        popped += q.dequeue_many(4, pe=me)[:, 0].tolist()
        ok &= popped == pushed and len(pushed) > 40 and q.inspect(me)["tail"] == len(pushed)
    assert _all(comm, ok)


def test_validation(pg):
    with pytest.raises(InvalidArgumentError, match="capacity must be a power of two"):
        BrokerQueue(12, pgas=pg)
    from distgraph.pgas.bench import GpuQueueBench

    for cap in (100, 1.0 * 64, True):  # the kernels index slot pos & (N - 1); checked before CuPy
        with pytest.raises(InvalidArgumentError, match="capacity must be a power of two >= 2; got"):
            GpuQueueBench(cap, nvshmem=False)
    with pytest.raises(InvalidArgumentError, match="kind must be"):
        BrokerQueue(8, kind="lifo", pgas=pg)


def test_arguments_must_agree_stand_in_pes():
    """The segments are symmetric, so the arguments are compared over the PEs before any
    allocation. No MPI: a stand-in PGAS of 2 PEs whose other PE asked for another capacity,
    kind or an invalid capacity."""
    from types import SimpleNamespace

    def stand_in(other):  # this process is PE 0; PE 1 passed ``other`` to the check
        def allgather(x):
            return [x, other]
        return SimpleNamespace(n_pes=2, my_pe=0, comm=SimpleNamespace(allgather=allgather, Get_size=lambda: 2))

    good = (None, (8, "<i8", 1, "bq", "distributed"))
    with pytest.raises(InvalidArgumentError, match=r"^capacity must be the same on every PE .*; "
                                                   r"got 8 on PE 0, 16 on PE 1$"):
        BrokerQueue(8, pgas=stand_in((None, (16, "<i8", 1, "bq", "distributed"))))
    with pytest.raises(InvalidArgumentError, match=r"^kind must be the same on every PE .*; "
                                                   r"got 'bq' on PE 0, 'bwd' on PE 1$"):
        BrokerQueue(8, pgas=stand_in((None, (8, "<i8", 1, "bwd", "distributed"))))
    with pytest.raises(InvalidArgumentError, match=r"^capacity must be a power of two >= 2; got 12 \(on PE 1\)$"):
        BrokerQueue(8, pgas=stand_in(("capacity must be a power of two >= 2; got 12", None)))
    with pytest.raises(InvalidArgumentError, match=r"^capacity must be a power of two >= 2; got 12 \(on PE 0\)$"):
        BrokerQueue(12, pgas=stand_in(good))


@pytest.mark.mpi
@pytest.mark.parametrize("case", ["capacity", "kind", "invalid on the last PE"])
def test_arguments_must_agree_on_every_pe(pg, comm, case):
    """Another capacity or kind on one PE: the same error on every PE, before any allocation
    (MPI-RMA allocated windows of different sizes, a remote enqueue used the wrong capacity;
    an invalid capacity on one PE raised there while the others waited in the allocation)."""
    size, me = comm.Get_size(), comm.Get_rank()
    if size == 1:
        pytest.skip("needs several ranks")
    args = {"capacity": 8, "kind": "bq"}
    if case == "capacity":
        args["capacity"] = 8 if me == 0 else 16
        want = "capacity must be the same on every PE (the queue's segments are symmetric); got 8 on PE 0, 16 on PE 1"
    elif case == "kind":
        args["kind"] = "bwd" if me == size - 1 else "bq"
        want = f"kind must be the same on every PE (the queue's segments are symmetric); got 'bq' on PE 0, 'bwd' on PE {size - 1}"
    else:
        args["capacity"] = 12 if me == size - 1 else 8
        want = f"capacity must be a power of two >= 2; got 12 (on PE {size - 1})"
    try:
        with BrokerQueue(pgas=pg, **args):
            msg = None
    except InvalidArgumentError as e:
        msg = str(e)
    msgs = comm.allgather(msg)
    assert msgs == [want] * size, msgs
    with BrokerQueue(8, pgas=pg) as q:  # nothing left half-allocated: the PGAS works on
        ok = q.enqueue(me, pe=me) and q.dequeue(pe=me) == me
    assert _all(comm, ok)


@pytest.mark.mpi
def test_validation_on_a_queue(pg, comm):
    n = 0
    with BrokerQueue(4, pgas=pg) as q:
        for call in (lambda: q.enqueue_many(np.arange(5)), lambda: q.dequeue_many(0),
                     lambda: q.enqueue(1, pe=pg.n_pes), lambda: q.enqueue_many(np.zeros((2, 3)))):
            try:
                call()
            except InvalidArgumentError:
                n += 1
    assert _all(comm, n == 4)


# -- contention across ranks -------------------------------------------------------------------

@pytest.mark.mpi
@pytest.mark.parametrize("layout", ["distributed", "centralized"])
@pytest.mark.parametrize("kind", KINDS)
def test_no_item_lost_or_duplicated(pg, comm, kind, layout):
    """sorted(all popped) == list(range(all pushed)), with a small ring (FULL and wrap-around)."""
    me, n = pg.my_pe, pg.n_pes
    per = 120
    rng = np.random.default_rng(7 + me)
    popped = []
    with BrokerQueue(8, kind=kind, layout=layout, pgas=pg) as q:
        nxt = me * per
        while nxt < (me + 1) * per:
            k = min(int(rng.integers(1, 4)), (me + 1) * per - nxt)
            if q.enqueue_many(np.arange(nxt, nxt + k)):
                nxt += k
            popped += q.dequeue_many(int(rng.integers(1, 3)))[:, 0].tolist()
        pg.barrier()
        # Drain: EMPTY from a BWD may be spurious only while others still operate; after the
        # barrier nobody does, but drain until every rank agrees there is nothing left.
        while True:
            got = q.dequeue_many(8)
            popped += got[:, 0].tolist()
            if comm.allreduce(got.shape[0]) == 0:
                break
    allp = sorted(sum(comm.allgather(popped), []))
    assert allp == list(range(per * n))


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_recorded_history_is_fifo(pg, comm, kind):
    """All ranks on one segment (centralized); the BQ history must be linearizable."""
    me, n = pg.my_pe, pg.n_pes
    ev = []
    with BrokerQueue(4, kind=kind, layout="centralized", pgas=pg) as q:
        comm.Barrier()
        for i in range(40):
            t0 = time.perf_counter_ns()
            if (i + me) % 2 == 0:
                v = 1000 * me + i
                r = q.enqueue(v)
                ev.append((t0, time.perf_counter_ns(), "enq", v, r))
            else:
                x = q.dequeue()
                ev.append((t0, time.perf_counter_ns(), "deq", x))
        pg.barrier()
        while True:                               # drain, so that every value's fate is known
            t0 = time.perf_counter_ns()
            x = q.dequeue()
            if x is None:
                break
            ev.append((t0, time.perf_counter_ns(), "deq", x))
    allev = [e for part in comm.allgather(ev) for e in part]
    errs = check_history(allev)
    if kind == "bwd":
        errs = [e for e in errs if not e.startswith("VWit")]  # BWD's EMPTY may be spurious
    assert errs == []


@pytest.mark.mpi
def test_small_history_exactly_linearizable(pg, comm):
    """Wing & Gong search over a few operations per rank (exact, bounded capacity)."""
    me = pg.my_pe
    ev = []
    with BrokerQueue(2, kind="bq", layout="centralized", pgas=pg) as q:
        comm.Barrier()
        for i in range(4):
            t0 = time.perf_counter_ns()
            if (i + me) % 2 == 0:
                r = q.enqueue(10 * me + i)
                ev.append((t0, time.perf_counter_ns(), "enq", 10 * me + i, r))
            else:
                x = q.dequeue()
                ev.append((t0, time.perf_counter_ns(), "deq", x))
    allev = [e for part in comm.allgather(ev) for e in part]
    assert check_linearizable(allev, capacity=2)


@pytest.mark.mpi
@pytest.mark.parametrize("workload", ["enqdeq", "mixed"])
@pytest.mark.parametrize("kind", KINDS)
def test_workloads_verified(pg, comm, kind, workload):
    """The benchmark workloads; BWD consumers treat EMPTY as 'look again' until done."""
    from distgraph.pgas.bench import cpu_queue_run

    with BrokerQueue(512 if workload == "enqdeq" else 16, kind=kind, pgas=pg) as q:
        r = cpu_queue_run(q, workload, ops=300, batch=4)
    assert _all(comm, r["verified"]), r


@pytest.mark.mpi
def test_cli_queue_bench_cpu(comm, capsys):
    import json

    from distgraph.cli import main

    code = main(["queue-bench", "--backend", "cpu", "--ops", "200", "--batch", "4", "--capacity", "256",
                 "--kind", "bwd", "--json"])
    out = capsys.readouterr().out
    ok = code == 0
    if comm.rank == 0:
        runs = [json.loads(line) for line in out.splitlines()]
        ok &= [r["workload"] for r in runs] == ["enqdeq", "mixed"] and all(r["verified"] for r in runs)
    assert _all(comm, ok)


def test_gpu_history_clock_is_per_host_and_bus():
    """GpuQueueBench.history tags each event with its GPU's clock; two PEs on two nodes whose
    GPUs have the same PCI bus id (0000:1B:00.0 on every node of a cluster) have two clocks.
    Keyed by the bus id alone they shared one, and check_history compared their unrelated
    %globaltimer stamps (the false VFresh of 58a0cb2). No GPU: a stand-in CuPy and a
    2-rank stand-in communicator (this process as rank 0, then as rank 1, of two hosts)."""
    from types import SimpleNamespace

    from distgraph.pgas.bench import GpuQueueBench

    bus = "0000:1B:00.0"

    class Arr(np.ndarray):
        def get(self):
            return np.asarray(self)

    class Comm:
        def Get_rank(self):
            return 0

        def allgather(self, x):
            if isinstance(x, list):  # the events: rank 1's are its own, none here
                return [x, []]
            if isinstance(x, tuple):  # (host, bus id): rank 1 on another node, same bus id
                return [x, (x[0] + "~", x[1])]  # another host name, sorted after this one
            return [x, x]  # a bus id alone: both ranks report the same

    def kernel(grid, block, args):
        rec = args[-1]
        rec[:5] = (10, 20, 0, 7, 0)  # one enqueue of 7 by rank 0's only thread

    cp = SimpleNamespace(zeros=lambda n, dt: np.zeros(n, dt).view(Arr), int64=np.int64,
                         cuda=SimpleNamespace(Device=lambda: SimpleNamespace(pci_bus_id=bus)))
    b = SimpleNamespace(cp=cp, comm=Comm(), _sync=lambda: None, fn=lambda name: kernel, _head=())
    ev = GpuQueueBench.history(b, "bq", 0, 1, 1, 1)
    assert ev == [(10, 20, "enq", 7, True, 0, 0)]  # rank 0's clock: 0 of two
    # the clock numbering must tell rank 1 apart: call again as if this process were rank 1
    b.comm.Get_rank = lambda: 1
    b.comm.allgather = lambda x: ([[], x] if isinstance(x, list) else
                                  [("", x[1]), x] if isinstance(x, tuple) else [x, x])
    ev1 = GpuQueueBench.history(b, "bq", 0, 1, 1, 1, base=0)
    assert ev1[0][6] == 1, ev1  # two clocks: rank 1's events are not timed by rank 0's clock
