"""closeness(backend="gpu") end to end, with and without the distance-profile wave
(``DISTGRAPH_GPU_CLOSENESS_WAVE``: "auto", the default, against "off"), on the same graphs in the
same run: seconds of each call (reordering, ball grouping, upload and kernels included), the rate
n·m / time against BLEST's per-GPU rate, the runner "auto" chose, and whether every array
(farness, reach, harmonic, closeness) is equal bit for bit between the two. Each setting runs
twice; the first call also compiles kernels (NVRTC, cached after it), so the second is the one
quoted.

    python benchmarks/closeness_wave_e2e.py --outdir DIR [--graphs road-NY,cond-mat-2005,email-Enron]
      -> DIR/closeness_wave_e2e.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, commit, dirty, sh  # noqa: E402

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outdir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--graphs", default="road-NY,cond-mat-2005,email-Enron")
    ap.add_argument("--settings", default="auto,off")
    ap.add_argument("--profile", action="store_true", help="a third call under cProfile: the 30 functions of "
                    "most cumulative time (host phases) in the row")
    args = ap.parse_args(argv)
    from gpu_closeness import BLEST_RATE, load

    from distgraph.algorithms import closeness as cl
    from distgraph.runtime.config import config

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = {"benchmark": "closeness_wave_e2e", "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1"), "blest_rate": None,
           "note": __doc__, "graphs": {}}
    res["blest_rate"] = BLEST_RATE
    path = out / "closeness_wave_e2e.json"
    for spec in args.graphs.split(","):
        g = load(spec)
        row = {"n": g.n, "m": g.m, "runs": {}}
        res["graphs"][spec] = row
        ref = None
        for setting in args.settings.split(","):
            config.gpu_closeness_wave = setting
            chosen = []
            from distgraph.backends.gpu import msbfs_wave

            real = msbfs_wave.WaveRunner.__init__

            def spy(self, *a, **k):
                chosen.append("wave")
                return real(self, *a, **k)

            msbfs_wave.WaveRunner.__init__ = spy
            times = []
            try:
                for _ in range(2):
                    chosen.clear()
                    t0 = time.perf_counter()
                    r = cl.closeness(g, backend="gpu", progress=False, comm=_self())
                    times.append(time.perf_counter() - t0)
            except Exception as e:
                row["runs"][setting] = {"error": repr(e)[:2000]}
                continue
            finally:
                msbfs_wave.WaveRunner.__init__ = real
            prof = None
            if args.profile:
                import cProfile
                import pstats

                pr = cProfile.Profile()
                pr.runcall(cl.closeness, g, backend="gpu", progress=False, comm=_self())
                st = pstats.Stats(pr)
                top = sorted(st.stats.items(), key=lambda kv: -kv[1][3])[:30]
                prof = [{"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "calls": v[1], "cumtime_s": round(v[3], 4),
                         "tottime_s": round(v[2], 4)} for k, v in top]
            arrays = (r.farness, r.reach, r.harmonic, r.closeness)
            same = None
            if ref is None:
                ref = (setting, arrays)
            else:
                same = all(np.array_equal(a, b) for a, b in zip(arrays, ref[1]))
            row["runs"][setting] = {"runner": chosen[0] if chosen else "bit-parallel MS-BFS", "seconds": times,
                                    "rate": g.n * g.m / times[-1], "vs_blest": g.n * g.m / times[-1] / BLEST_RATE,
                                    "same_as": ref[0] if same is not None else None, "equal_bit_for_bit": same,
                                    "profile": prof}
            print(spec, setting, json.dumps(row["runs"][setting]), flush=True)
            path.write_text(json.dumps(res, indent=1, default=float))
    path.write_text(json.dumps(res, indent=1, default=float))
    return 0


def _self():
    from mpi4py import MPI

    return MPI.COMM_SELF


if __name__ == "__main__":
    sys.exit(main())
