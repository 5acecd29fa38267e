"""How far apart the sources of each closeness batch are, as the profile wave sees them (host only,
no GPU): for every batch of ``kappa`` sources in the ball order closeness() gives the GPU, the
largest offset d(s, v) - min_s' d(s', v) over the reached vertices v (``spread_max``; the wave's
byte offsets hold up to 254) and the levels. Batches with a spread past 254 cannot run on the
wave's byte offsets at all (kernels/msbfs_wave.cu flags them; it may also flag a batch whose
final offsets fit, when a temporary upper bound passes 254 before a push lowers it).

    python benchmarks/msbfs_batch_spread.py road-NY.gr.xz --batches $( (seq 0 25 975; seq 990 1032) | sort -n | uniq) \\
        --out benchmarks/results/msbfs_batch_spread_roadNY.json
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import run_ball_model  # noqa: E402


def batch_spread(A, sources) -> dict:
    from scipy.sparse.csgraph import shortest_path

    D = shortest_path(A, unweighted=True, indices=sources)
    reach = ~np.isinf(D)
    seen = reach.any(0)
    base = np.where(reach, D, np.inf).min(0)
    spread = np.where(reach, D, -np.inf).max(0) - base
    return {"sources": int(len(sources)), "levels": int(base[seen].max()), "spread_max": int(spread[seen].max()),
            "spread_mean": float(spread[seen].mean()), "over_254": bool(spread[seen].max() > 254)}


def main(argv=None):
    res = run_ball_model("msbfs_batch_spread", __doc__, batch_spread, argv)
    rows = res["rows"]
    print({"batches": len(rows), "over_254": [r["batch"] for r in rows if r["over_254"]]})


if __name__ == "__main__":
    main()
