"""Where the distributed rounds' time goes (issue 7), under ``mpirun -n P``: the round-based
Bellman-Ford (``RoundsSSSP``, fused kernels) on one source of a Kronecker graph with [1, 255]
weights, its steps per PE (``time_profile_s``, see ``_pull_loop``: the relaxation, barrier and
settle steps' GPU seconds, the host's waits and sums, its seconds before, in and after the loop,
the rounds launched, and the first rounds' frontier sizes and relaxation and settle seconds),
with Python's garbage collector on
and then off during the runs. On one PE it also runs the same loop over a one-PE ``_PeerPull``
in the NVSHMEM symmetric heap (RoundsSSSP's one-PE loop keeps its arrays in CuPy's memory), so
that the heap's cost shows. Prints one RESULT-JSON line per run on rank 0.

    mpirun -n 2 python benchmarks/rounds_probe.py --scale 20 --trials 3
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--trials", type=int, default=3)
    a = ap.parse_args(argv)
    from mpi4py import MPI

    from distgraph.algorithms.bellman_ford import _arc_weights, cycle_weight
    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.generators import kronecker, uniform_weights
    from distgraph.pgas import get_pgas
    from distgraph.runtime.context import get_context

    comm = MPI.COMM_WORLD
    ctx = get_context(comm, "gpu")
    pg = get_pgas(comm, "gpu")
    g = uniform_weights(kronecker(a.scale, seed=1), seed=1)
    w = _arc_weights(g, None)
    s = int(np.argmax(np.diff(g.indptr)))
    confirm = lambda cy: cycle_weight(g, cy, w) < 0  # noqa: E731
    devices = comm.allgather(ctx.device)

    def emit(row):
        if comm.Get_rank() == 0:
            print("RESULT-JSON " + json.dumps(row, default=float), flush=True)

    r = gbf.RoundsSSSP(g, w, comm)
    import gc

    import cupy as cp

    try:
        r.run(s, confirm)
        for gc_on in (True, False):  # Python's garbage collector on, then off during the runs
            (gc.enable if gc_on else gc.disable)()
            for t in range(a.trials):
                comm.Barrier()
                d, _, st, _ = r.run(s, confirm)
                emit({"what": "RoundsSSSP", "pes": comm.Get_size(), "devices": devices, "trial": t, "gc": gc_on,
                      "run_s": comm.allreduce(st["time_run_s"], op=MPI.MAX), "rounds": st["rounds"],
                      "exchange": st.get("exchange"), "profile_s": st.get("time_profile_s")})
        gc.enable()
        if comm.Get_size() == 1:  # the pull loop on one PE: symmetric arrays, mark kernel
            ex = gbf._PeerPull(pg, g.n, [0, g.n], False)
            try:
                for t in range(a.trials + 1):
                    cp.cuda.Device().synchronize()
                    t0 = time.perf_counter()
                    _, _, info = gbf.rounds_kernel(r.block, s, n=g.n, exchange=ex)
                    cp.cuda.Device().synchronize()
                    if t:
                        emit({"what": "pull_loop_1pe", "trial": t, "run_s": time.perf_counter() - t0,
                              "rounds": info["rounds"], "profile_s": [info["profile_s"]]})
            finally:
                ex.close()
    finally:
        r.close()
    pg.finalize()


if __name__ == "__main__":
    main()
