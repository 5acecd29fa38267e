"""Where the round-based Bellman-Ford's finish goes (issue 7): a device array of N int64 (the
distances of Kronecker scale 22: 4M) to the host, ways side by side, best of TRIALS each, and the
host's transparent-huge-page settings (a fresh NumPy array is faulted in page by page).

    python benchmarks/d2h_probe.py OUT.json [N] [TRIALS]

Rows (seconds): ``get`` (``ndarray.get()``: pageable, into a fresh array), ``empty_touch``
(a fresh array of N int64 written once: the page faults alone), ``pinned`` (a copy into a pinned
buffer allocated once), ``pinned_copy`` (that, then copied into a fresh array), ``get_into``
(``get(out=)`` into an array faulted in before), ``to_host`` (what RoundsSSSP did until
session 17: the pinned buffer kept, copied out by threads into a fresh array). Since session
17 RoundsSSSP faults the array in while the GPU works (``_Prefault``): ``prefault_K`` (a fresh
array's pages touched by K threads, all joined), ``to_host_into`` (``_to_host`` into an array
faulted in before: what is left after the run), ``prefault_then_to_host`` (both, one after the
other: no GPU work to hide behind), and pinning the faulted array instead of copying through
the stage: ``register`` (cudaHostRegister), ``get_registered`` (the copy into it),
``unregister``."""
import json
import sys
import time

import types

import cupy as cp
import cupyx
import numpy as np

from distgraph.backends.gpu.bellman_ford import _Prefault, _to_host


def best(fn, trials):
    out = []
    for _ in range(trials):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 22
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    a = cp.arange(n, dtype=cp.int64)
    pin = cupyx.empty_pinned(n, np.int64)
    warm = np.empty(n, np.int64)
    warm[...] = 1
    holder = types.SimpleNamespace()

    def pinned():
        a.get(out=pin)

    rows = {"n": n, "bytes": 8 * n,
            "get": best(lambda: a.get(), trials),
            "empty_touch": best(lambda: np.empty(n, np.int64).fill(1), trials),
            "pinned": best(pinned, trials),
            "pinned_copy": best(lambda: (pinned(), np.array(pin)), trials),
            "get_into": best(lambda: a.get(out=warm), trials),
            "to_host": best(lambda: _to_host(a, holder), trials)}
    assert np.array_equal(_to_host(a, holder), np.arange(n))
    for k in (1, 2, 4, 8):
        rows[f"prefault_{k}"] = best(lambda k=k: _Prefault((n,), np.int64, threads=k).take(), trials)
    into = _Prefault((n,), np.int64).take()
    rows["to_host_into"] = best(lambda: _to_host(a, holder, out=into), trials)
    assert np.array_equal(into, np.arange(n))
    rows["prefault_then_to_host"] = best(lambda: _to_host(a, holder, out=_Prefault((n,), np.int64).take()), trials)
    rt = cp.cuda.runtime
    reg, get_reg, unreg = [], [], []
    for _ in range(trials):
        h = _Prefault((n,), np.int64).take()
        t0 = time.perf_counter()
        rt.hostRegister(h.ctypes.data, h.nbytes, 0)
        t1 = time.perf_counter()
        a.get(out=h)
        t2 = time.perf_counter()
        rt.hostUnregister(h.ctypes.data)
        t3 = time.perf_counter()
        reg.append(t1 - t0), get_reg.append(t2 - t1), unreg.append(t3 - t2)
        assert h[-1] == n - 1
    rows.update(register=min(reg), get_registered=min(get_reg), unregister=min(unreg))
    for f in ("enabled", "defrag"):
        try:
            rows["thp_" + f] = open(f"/sys/kernel/mm/transparent_hugepage/{f}").read().strip()
        except OSError as e:
            rows["thp_" + f] = repr(e)
    assert np.array_equal(np.array(pin[:5]), np.arange(5))
    json.dump(rows, open(path, "w"), indent=1)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
