"""Ranks sharing one GPU: ``get_context`` counts the ranks of the host bound to each GPU
(``Context.device_share``) and hands the count to ``backends.gpu.memory``, whose
``free_bytes`` then gives each rank at most its part of the device (and ``MemoryPlan.check``
says so). No GPU: CuPy stand-ins with made-up memory numbers."""

import sys
import types

import pytest

from distgraph.backends.gpu import memory
from distgraph.backends.gpu.memory import MemoryPlan, free_bytes
from distgraph.errors import DeviceMemoryError

GiB = 1 << 30


def _cupy(free, total, pool_free, pool_used=None, pci=None):
    """A CuPy stand-in: the device's (free, total), the default pool's cached and used bytes
    (``pool_used=None``: a pool without ``used_bytes``), GPU ``i``'s PCI bus id ``pci(i)``."""
    pool = types.SimpleNamespace(free_bytes=lambda: pool_free)
    if pool_used is not None:
        pool.used_bytes = lambda: pool_used
        pool.total_bytes = lambda: pool_used + pool_free
    cur = {"dev": 0}

    class Device:
        def __init__(self, i=None):
            self.id = cur["dev"] if i is None else i
            if pci is not None:
                self.pci_bus_id = pci(self.id)

        def use(self):
            cur["dev"] = self.id

    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=lambda: (free, total),
                                                                 getDevice=lambda: cur["dev"],
                                                                 deviceSynchronize=lambda: None),
                                   Device=Device),
        get_default_memory_pool=lambda: pool)


def test_free_bytes_one_rank_is_the_free_memory_and_the_pool():
    """One rank on its GPU: the device's free memory plus the pool's cached blocks (held bytes
    added), whatever the pool uses; the pool's used bytes are not asked for."""
    cp = _cupy(free=70 * GiB, total=80 * GiB, pool_free=2 * GiB)   # no used_bytes
    assert free_bytes(cp=cp, share=1) == 72 * GiB
    assert free_bytes(3 * GiB, cp=cp, share=1) == 75 * GiB


def test_free_bytes_shared_gpu_is_a_fair_part_less_the_pool_in_use():
    """Four ranks on one GPU: at most 1/4 of it less what this process's pool already uses
    (the bytes the caller holds for the plan given back), never more than is free, not below 0."""
    cp = _cupy(free=70 * GiB, total=80 * GiB, pool_free=2 * GiB, pool_used=6 * GiB)
    assert free_bytes(cp=cp, share=1) == 72 * GiB
    assert free_bytes(cp=cp, share=4) == 20 * GiB - 6 * GiB
    assert free_bytes(4 * GiB, cp=cp, share=4) == 18 * GiB
    busy = _cupy(free=1 * GiB, total=80 * GiB, pool_free=0, pool_used=6 * GiB)   # others took the rest
    assert free_bytes(cp=busy, share=4) == 1 * GiB
    over = _cupy(free=30 * GiB, total=80 * GiB, pool_free=0, pool_used=30 * GiB)  # more than its 20 in use
    assert free_bytes(cp=over, share=4) == 0
    assert free_bytes(25 * GiB, cp=over, share=4) == 15 * GiB


def test_free_bytes_defaults_to_the_published_share_and_cupy(monkeypatch):
    cp = _cupy(free=70 * GiB, total=80 * GiB, pool_free=2 * GiB, pool_used=6 * GiB)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(memory, "_device_share", 1)
    assert memory.device_share() == 1 and free_bytes() == 72 * GiB
    memory.set_device_share(4)
    assert memory.device_share() == 4 and free_bytes() == 14 * GiB
    memory.set_device_share(0)   # at least one rank: this one
    assert memory.device_share() == 1


def test_free_bytes_shared_gpu_leaves_out_the_rank_use_outside_its_pool(monkeypatch):
    """Ranks sharing a GPU: the fair part also leaves out this rank's measured use outside its
    pool (context, NVSHMEM heap) and its live symmetric arrays; alone on its GPU, neither."""
    monkeypatch.setattr(memory, "_overhead", {"context": GiB // 2, "nvshmem": GiB // 2})
    monkeypatch.setattr(memory, "_symmetric", 0)
    memory.add_symmetric(2 * GiB)
    memory.add_symmetric(-GiB)
    assert memory.device_overhead() == 2 * GiB
    cp = _cupy(free=70 * GiB, total=80 * GiB, pool_free=2 * GiB, pool_used=6 * GiB)
    assert free_bytes(cp=cp, share=4) == 20 * GiB - 6 * GiB - 2 * GiB
    assert free_bytes(cp=cp, share=1) == 72 * GiB
    memory.forget_overhead("nvshmem")   # NVSHMEM finalized: its heap and arrays gone
    assert memory.device_overhead() == GiB // 2
    assert free_bytes(cp=cp, share=4) == 20 * GiB - 6 * GiB - GiB // 2


def test_plan_check_names_the_ranks_sharing_the_gpu(monkeypatch):
    """MemoryPlan.check() measures with free_bytes: a plan of 20 GiB fits one rank's 72 GiB but
    not a quarter of the GPU (14 GiB for this rank), and the message says why and what to try."""
    monkeypatch.setitem(sys.modules, "cupy", _cupy(free=70 * GiB, total=80 * GiB, pool_free=2 * GiB,
                                                    pool_used=6 * GiB))
    monkeypatch.setattr(memory, "_device_share", 1)
    plan = MemoryPlan("GPU thing", {"state": 20 * GiB}, ("a GPU with more memory",))
    plan.check()
    memory.set_device_share(4)
    with pytest.raises(DeviceMemoryError) as e:
        plan.check()
    msg = str(e.value)
    assert ("GPU thing needs 20.0 GiB of device memory (state 20.0 GiB) but only 14.0 GiB is free on device 0 "
            "for this rank (4 ranks share the GPU on this host: each plans with at most 1/4 of its memory); "
            "try fewer ranks per GPU") in msg, msg
    assert msg.endswith("; or a GPU with more memory"), msg
    # given free bytes and one rank: the message as before
    with pytest.raises(DeviceMemoryError) as e:
        plan.check(free=GiB, device=2, share=1)
    assert str(e.value).endswith("but only 1.0 GiB is free on device 2; try a GPU with more memory"), str(e.value)


def test_device_key_is_the_pci_bus_id():
    from distgraph.runtime.context import device_key

    assert device_key(_cupy(1, 1, 0, pci=lambda i: f"0000:{i:02x}:00.0"), 3) == "0000:03:00.0"
    assert device_key(_cupy(1, 1, 0), 3) == "device 3"   # CuPy cannot tell: the index


@pytest.fixture
def gpu_context(monkeypatch):
    """get_context with a CuPy stand-in of two GPUs (PCI bus ids "bus-<i>"); the process's
    context and the published share restored after."""
    from distgraph.runtime import context

    monkeypatch.setitem(sys.modules, "cupy", _cupy(1, 1, 0, pci=lambda i: f"bus-{i}"))
    monkeypatch.setattr(context, "gpu_count", lambda: 2)
    monkeypatch.setattr(context, "_ctx", None)
    monkeypatch.setattr(context, "_shares", {})
    monkeypatch.setattr(memory, "_device_share", 7)
    monkeypatch.setattr(memory, "_overhead", {})
    monkeypatch.setattr(memory, "_symmetric", 0)
    return context


def test_get_context_alone_on_its_gpu(gpu_context):
    """One rank: device_share 1, published to memory (it was 7)."""
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_size() > 1:
        pytest.skip("one rank")
    ctx = gpu_context.get_context(MPI.COMM_WORLD, "gpu")
    assert ctx.device_share == 1 and memory.device_share() == 1


def test_sub_communicator_keeps_the_job_share(gpu_context):
    """A context on COMM_SELF (split="sources") counts one rank, but its GPU is shared by the
    ranks the COMM_WORLD context counted: it keeps their count and publishes it; a cpu context
    neither counts nor publishes."""
    from mpi4py import MPI

    gpu_context._ctx = gpu_context.Context(MPI.COMM_WORLD, 1, 3, 1, 3, "gpu", 1, 3)
    ctx = gpu_context.get_context(MPI.COMM_SELF, "gpu")
    assert (ctx.device, ctx.device_share) == (1, 3) and memory.device_share() == 3
    memory.set_device_share(5)
    ctx = gpu_context.get_context(MPI.COMM_SELF, "cpu")
    assert ctx.device_share == 1 and memory.device_share() == 5


def test_sub_communicator_keeps_a_count_made_on_another_communicator(gpu_context, monkeypatch):
    """A count made on a communicator other than COMM_WORLD (a user's duplicate of it; no
    COMM_WORLD context made) is kept for the GPU: a later COMM_SELF context (split="sources")
    counts one rank but keeps 3 and publishes it, instead of lowering the share to 1; the
    COMM_SELF context of another GPU does not take it."""
    from mpi4py import MPI

    dup = MPI.COMM_WORLD.Dup()
    try:
        monkeypatch.setattr(gpu_context, "ranks_sharing_device", lambda comm, key: 3 if comm is dup else 1)
        ctx = gpu_context.get_context(dup, "gpu")
        assert ctx.device_share == 3 and memory.device_share() == 3 and gpu_context._ctx is None
        mine = gpu_context.get_context(MPI.COMM_SELF, "gpu")
        assert (mine.device, mine.device_share) == (ctx.device, 3) and memory.device_share() == 3
        monkeypatch.setattr(gpu_context.config, "device", 1 - ctx.device)
        other = gpu_context.get_context(MPI.COMM_SELF, "gpu")
        assert other.device == 1 - ctx.device and other.device_share == 1 and memory.device_share() == 1
    finally:
        dup.Free()


@pytest.mark.mpi
def test_ranks_sharing_a_device_counted_over_the_host(comm):
    """ranks_sharing_device: the ranks of the host with the same key (the MPI tests run on one
    host): two keys by parity of the rank."""
    from distgraph.runtime.context import ranks_sharing_device

    p, r = comm.Get_size(), comm.Get_rank()
    same = sum(1 for q in range(p) if q % 2 == r % 2)
    assert ranks_sharing_device(comm, f"key {r % 2}") == same
    assert ranks_sharing_device(comm, "one GPU") == p


@pytest.mark.mpi
def test_get_context_counts_the_ranks_bound_to_each_gpu(gpu_context, comm):
    """get_context(COMM_WORLD, "gpu") with two GPUs: rank r binds GPU local_rank % 2, and each
    rank's device_share is the number of ranks bound to its GPU (1 alone, 2 each on 4 ranks),
    published to memory."""
    ctx = gpu_context.get_context(comm, "gpu")
    devices = comm.allgather(ctx.device)
    assert sorted(set(devices)) == sorted({r % 2 for r in range(comm.Get_size())})
    assert ctx.device_share == devices.count(ctx.device) == memory.device_share()
    assert ctx.device_share == (comm.Get_size() + 1 - ctx.device) // 2


@pytest.mark.mpi
@pytest.mark.parametrize("by", ["one GPU", "parity"])
def test_measure_overhead_splits_the_memory_outside_the_pools(comm, monkeypatch, by):
    """measure_overhead: the device's used memory less the pools and symmetric arrays of the
    ranks sharing the GPU (one key, or two by parity of the rank), split evenly over them,
    less what was measured under another name; a rank whose CuPy cannot say makes every rank
    of its GPU measure (and keep) 0; a communicator with fewer of the GPU's ranks than its share
    keeps the last measure; every rank still returns (no hang). The results are gathered and
    checked on every rank after the last collective."""
    p, r = comm.Get_size(), comm.Get_rank()
    key = "one GPU" if by == "one GPU" else f"key {r % 2}"
    k = p if by == "one GPU" else sum(1 for q in range(p) if q % 2 == r % 2)
    monkeypatch.setattr(memory, "_overhead", {})
    monkeypatch.setattr(memory, "_symmetric", GiB)
    got = {}
    # used 20 GiB: each rank's pool 2 GiB (1 used, 1 cached) and 1 GiB of symmetric arrays
    cp = _cupy(free=60 * GiB, total=80 * GiB, pool_free=GiB, pool_used=GiB)
    got["context"] = memory.measure_overhead(comm, key, "context", share=k, cp=cp)
    got["kept"] = dict(memory._overhead)
    cp2 = _cupy(free=50 * GiB, total=80 * GiB, pool_free=GiB, pool_used=GiB)  # NVSHMEM took 10 GiB more
    got["nvshmem"] = memory.measure_overhead(comm, key, "nvshmem", cp=cp2)
    got["overhead"] = memory.device_overhead()
    # a share of one more rank than the communicator holds: not measured, the last kept
    got["short"] = memory.measure_overhead(comm, key, "nvshmem", share=k + 1, cp=cp)
    # the rank of the highest number cannot say: its GPU's ranks measure 0, the others do not
    blind = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace()),
                                  get_default_memory_pool=lambda: None)
    last = p - 1
    memory._overhead["other"] = 5 * GiB  # an earlier measure: replaced (by 0 where blind)
    cp3 = _cupy(free=40 * GiB, total=80 * GiB, pool_free=GiB, pool_used=GiB)  # 10 GiB more again
    got["other"] = memory.measure_overhead(comm, key, "other", cp=blind if r == last else cp3)
    got["other_kept"] = memory._overhead["other"]
    ok = comm.allgather(True)  # every rank got here
    c = (20 * GiB - 3 * GiB * k) // k
    n = (30 * GiB - 3 * GiB * k) // k - c
    assert all(ok) and got["context"] == c and got["kept"] == {"context": c}
    assert got["nvshmem"] == n and got["overhead"] == c + n + GiB and got["short"] == n
    same_gpu_as_last = by == "one GPU" or r % 2 == last % 2
    want = 0 if same_gpu_as_last else (40 * GiB - 3 * GiB * k) // k - c - n
    assert got["other"] == got["other_kept"] == want and (want == 0 or want >= 10 * GiB // k - 1)


@pytest.mark.gpu
@pytest.mark.mpi
def test_real_gpu_ranks_bound_to_it_share_it(comm):
    """On a real GPU (the test machine's one H200 carries every rank): each rank's
    device_share is the count of ranks whose GPU has its PCI bus id, and it plans with at most
    1/share of the device, never more than is free."""
    import cupy
    from distgraph.runtime import context

    saved = context._ctx
    try:
        context._ctx = None
        ctx = context.get_context(comm, "gpu")
        bus = comm.allgather(str(cupy.cuda.Device(ctx.device).pci_bus_id))
        assert ctx.device_share == bus.count(bus[comm.Get_rank()]) == memory.device_share()
        free, total = cupy.cuda.runtime.memGetInfo()
        pool = cupy.get_default_memory_pool()
        mine = memory.free_bytes()
        assert 0 < mine <= free + pool.free_bytes()
        assert mine <= total // ctx.device_share - pool.used_bytes() or ctx.device_share == 1
    finally:
        context._ctx = saved
        memory.set_device_share(1 if saved is None else saved.device_share)
