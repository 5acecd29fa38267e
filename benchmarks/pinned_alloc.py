"""What pinning host memory costs on this machine (issue 7: the row sink's buffers), best of
TRIALS: ``cupyx.empty_pinned`` of each size from a fresh pool (``cudaHostAlloc``), the same size
taken again from CuPy's pinned pool, and a device-to-host copy into it (GB/s).

    python benchmarks/pinned_alloc.py OUT.json [TRIALS]
"""
import json
import sys
import time

import cupy as cp
import cupyx
import numpy as np


def main():
    path = sys.argv[1]
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rows = []
    for mb in (16, 64, 256, 1024):
        nb = mb << 20
        fresh, again, copy = [], [], []
        dev = cp.ones(nb // 8, cp.int64)
        for _ in range(trials):
            cp.get_default_pinned_memory_pool().free_all_blocks()
            t0 = time.perf_counter()
            buf = cupyx.empty_pinned(nb, np.uint8)
            fresh.append(time.perf_counter() - t0)
            del buf
            t0 = time.perf_counter()
            buf = cupyx.empty_pinned(nb, np.uint8)
            again.append(time.perf_counter() - t0)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            dev.get(out=buf.view(np.int64))
            copy.append(time.perf_counter() - t0)
            del buf
        rows.append({"mb": mb, "alloc_s": min(fresh), "alloc_gb_s": nb / min(fresh) / 1e9,
                     "pool_s": min(again), "d2h_gb_s": nb / min(copy) / 1e9})
        print(json.dumps(rows[-1]), flush=True)
    json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "trials": trials, "rows": rows},
              open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
