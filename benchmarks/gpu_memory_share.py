"""What a rank's plan may use when several ranks share one GPU, measured: run under
``mpirun -n K`` on an otherwise idle GPU (each rank's CUDA context, its NVSHMEM symmetric heap,
then every rank allocating its planned part, :data:`~distgraph.backends.gpu.memory.HEADROOM`
of :func:`~distgraph.backends.gpu.memory.free_bytes`, at the same moment).

    mpirun -n 4 python benchmarks/gpu_memory_share.py OUT.json [--nvshmem]
    python benchmarks/gpu_memory_share.py --outdir DIR    # gpu_check.sh: DIR/gpu_memory_share.json

Rank 0 writes OUT.json: the device's used bytes after the contexts (``used_ctx``), after
NVSHMEM's init (``used_heap_init``) and after a 1 GiB symmetric array per rank
(``used_heap_array``), each rank's ``free_bytes`` and whether its allocation of that part
succeeded (``allocated``): all must, or the plans of ranks sharing a GPU overcommit it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="the JSON file (default: OUTDIR/gpu_memory_share.json)")
    ap.add_argument("--outdir", help="the folder of benchmarks/gpu_check.sh")
    ap.add_argument("--nvshmem", action="store_true", help="initialise NVSHMEM (its symmetric heap) first")
    a = ap.parse_args(argv)
    if a.out is None:
        if a.outdir is None:
            ap.error("give OUT.json or --outdir DIR")
        Path(a.outdir).mkdir(parents=True, exist_ok=True)
        a.out = str(Path(a.outdir) / "gpu_memory_share.json")
    import cupy as cp
    from mpi4py import MPI

    from _common import commit, sh
    from distgraph.backends.gpu import memory
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD

    def used():
        comm.Barrier()
        cp.cuda.runtime.deviceSynchronize()
        comm.Barrier()
        f, t = cp.cuda.runtime.memGetInfo()
        return int(t - f)

    ctx = get_context(comm, "gpu")
    cp.cuda.Device(ctx.device).use()
    cp.zeros(1)  # the context and CuPy's first block
    rec = {"benchmark": "gpu_memory_share", "commit": commit(), "ranks": comm.Get_size(),
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "device_share": memory.device_share(), "total": int(cp.cuda.runtime.memGetInfo()[1]),
           "nvshmem_symmetric_size": os.environ.get("NVSHMEM_SYMMETRIC_SIZE"), "used_ctx": used()}
    pg = None
    if a.nvshmem:
        from distgraph.pgas.nvshmem import NVSHMEM

        pg = NVSHMEM(comm)
        rec["used_heap_init"] = used()
        arr = pg.array(1 << 27, "int64")  # 1 GiB a rank
        rec["used_heap_array"] = used()
    fb = memory.free_bytes()
    want = int(memory.HEADROOM * fb)
    comm.Barrier()
    err = None
    try:
        x = cp.empty(want, cp.uint8)
        x[::1 << 20] = 1  # touch it
        cp.cuda.runtime.deviceSynchronize()
        ok = True
    except Exception as e:  # noqa: BLE001 - recorded; the other ranks must not wait alone
        x, ok, err = None, False, f"{type(e).__name__}: {e}"[:300]
    rec["used_planned"] = used()
    rows = comm.gather({"rank": comm.Get_rank(), "free_bytes": fb, "planned": want, "allocated": ok, "error": err,
                        "pool_used": int(cp.get_default_memory_pool().used_bytes())}, root=0)
    del x
    cp.get_default_memory_pool().free_all_blocks()
    if pg is not None:
        pg.free(arr)
        pg.finalize()
    if comm.Get_rank() == 0:
        rec["rows"] = rows
        rec["all_allocated"] = all(r["allocated"] for r in rows)
        Path(a.out).write_text(json.dumps(rec, indent=1))
        print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
