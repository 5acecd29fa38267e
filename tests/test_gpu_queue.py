"""The single-GPU Broker Queue / BWD device code without NVSHMEM (kernels/queue_bench.cu)."""

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def bench():
    from distgraph.pgas.bench import GpuQueueBench

    b = GpuQueueBench(64, nvshmem=False)
    yield b
    b.close()


@pytest.mark.parametrize("warp", [False, True], ids=["thread", "warp"])
@pytest.mark.parametrize("kind", ["bq", "bwd"])
def test_mixed_contention_wraps_ring(bench, kind, warp):
    r = bench.run("mixed", kind, threads=128, blocks=16, ops=100000, warp=warp)
    assert r["verified"], r
    s = bench.inspect()[0]
    assert s["count"] == 0 and s["size"] == 0 and s["tail"] == 100000


@pytest.mark.parametrize("kind", ["bq", "bwd"])
def test_full_then_empty_in_fifo_order(bench, kind):
    bench.reset()
    ev = bench.history(kind, 0, 1, 1, 65, mode=1, base=0)
    assert [e[5] for e in ev] == [0] * 64 + [1]
    assert bench.inspect()[0]["count"] == 64
    ev = bench.history(kind, 0, 1, 1, 65, mode=2)
    assert [e[3] for e in ev] == list(range(64)) + [None] and ev[-1][5] == 2


def test_bq_history_linearizable(bench):
    from distgraph.pgas.queue import check_history, check_linearizable

    bench.reset()
    ev = bench.history("bq", 0, 64, 4, 8, mode=0)
    assert check_history([e[:5] for e in ev]) == []
    bench.reset()
    small = bench.history("bq", 0, 6, 1, 3, mode=0)
    assert check_linearizable([e[:5] for e in small], capacity=64)
