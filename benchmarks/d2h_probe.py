"""Where the round-based Bellman-Ford's finish goes (issue 7): a device array of N int64 (the
distances of Kronecker scale 22: 4M) to the host, ways side by side, best of TRIALS each, and the
host's transparent-huge-page settings (a fresh NumPy array is faulted in page by page).

    python benchmarks/d2h_probe.py OUT.json [N] [TRIALS]

Rows (seconds): ``get`` (``ndarray.get()``: pageable, into a fresh array), ``empty_touch``
(a fresh array of N int64 written once: the page faults alone), ``pinned`` (a copy into a pinned
buffer allocated once), ``pinned_copy`` (that, then copied into a fresh array), ``get_into``
(``get(out=)`` into an array faulted in before), ``to_host`` (what RoundsSSSP does: the pinned
buffer kept, copied out by threads)."""
import json
import sys
import time

import types

import cupy as cp
import cupyx
import numpy as np

from distgraph.backends.gpu.bellman_ford import _to_host


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
