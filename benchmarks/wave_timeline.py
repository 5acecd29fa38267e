"""Where the wave's kernel time goes, from a sweep's per-batch timeline (host only).

``benchmarks/gpu_closeness.py`` stores, for each wave row, the last launch's batches: start and
duration (the GPU's globaltimer), levels, fixes and the SM that ran each
(``timeline.per_batch``). This reads a sweep JSON and reports, per wave row:

- the span and the busy fraction of the slots (sum of batch durations / (slots x span));
- how many batches ran at once over time;
- how many SMs held no wave block 10 ms in (the bit-parallel runner of the aside sources holds
  whole SMs then);
- when the batches of the first and later rounds started and ended;
- how batch duration correlates with levels and with fixes.

    python benchmarks/wave_timeline.py SWEEP_JSON [--graph road-NY] [--out OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def summarize(row: dict, sms: int = 132) -> dict | None:
    """The summary of one sweep row (None when it has no wave timeline)."""
    tl = row.get("timeline")
    if not tl or not tl.get("per_batch"):
        return None
    pb = tl["per_batch"]
    st = np.asarray(pb["start_ms"], np.float64)
    ms = np.asarray(pb["ms"], np.float64)
    lv = np.asarray(pb["levels"], np.float64)
    fx = np.asarray(pb["fixes"], np.float64)
    sm = np.asarray(pb["sm"], np.int64)
    end = st + ms
    span = float(end.max())
    slots = int(row.get("slots") or 0)
    at = [0.0, 10.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0]
    running = {f"{t:g}": int(((st <= t) & (end > t)).sum()) for t in at if t < span}
    first = st < 1.0
    per_sm = np.bincount(sm[(st <= 10.0) & (end > 10.0)], minlength=sms)

    def corr(a, b):
        return float(np.corrcoef(a, b)[0, 1]) if a.size > 2 and a.std() > 0 and b.std() > 0 else None

    return {
        "batches": int(ms.size), "slots": slots, "span_ms": span,
        "busy_fraction": float(ms.sum() / (slots * span)) if slots and span else None,
        "batch_ms_p10_p50_p90": [float(x) for x in np.percentile(ms, [10, 50, 90])],
        "running_at_ms": running,
        "sms_without_a_wave_block_at_10ms": int((per_sm == 0).sum()),
        "started_within_1ms": int(first.sum()),
        "later_starts_ms_p10_p50_p90": [float(x) for x in np.percentile(st[~first], [10, 50, 90])]
        if (~first).any() else None,
        "first_round_end_ms_p50_max": [float(np.median(end[first])), float(end[first].max())] if first.any() else None,
        "corr_ms_levels": corr(ms, lv), "corr_ms_fixes": corr(ms, fx),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", help="gpu_closeness_block_sweep.json of benchmarks/msbfs_block_sweep.sh")
    ap.add_argument("--graph", default="road-NY")
    ap.add_argument("--out", default=None, help="write the summaries here (JSON)")
    args = ap.parse_args(argv)
    d = json.loads(Path(args.sweep).read_text())
    rows = d["graphs"][args.graph]["rows"]
    out = {"source": args.sweep, "graph": args.graph, "rows": {}}
    for label, row in rows.items():
        s = summarize(row)
        if s is not None:
            out["rows"][label] = s
            print(label, json.dumps(s))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
