#!/usr/bin/env bash
# The k2-tree SpMV defaults prefetch="auto", lane_combine="auto" (DeviceMatrix: the prefetching
# leaves, lanes combined at K = 4, wherever they apply) on one H200:
# (1) the GPU tests of the leaves (tests/test_gpu_k2tree_prefetch.py: the prefetching leaves
#     against scipy and the K-chunk leaves, prefetch=False explicitly; tests/test_gpu_k2tree.py:
#     the K-chunk, one-chunk, aggregated and thread leaves with prefetch=False, the defaults
#     with info["leaves"] checked, SpMVPlan and PageRank on the defaults; not the 64-bit
#     directory tests, the aggregated leaves' or PageRank on the real graphs, whose NVRTC
#     compiles and reads would not fit: session 5 call 4 ran test_gpu_k2tree.py in 154 s)
#     -> OUTDIR/pytest-auto.log, OUTDIR/junit-auto.xml;
# (2) configurations of benchmarks/gpu_k2tree_bench.py, right and left products on kron:21-23:
#     k2F (the K-chunk leaves, prefetch=False), k2F_pre_lanes and k2F_auto (the defaults: must
#     time as k2F_pre_lanes and record its kernel), and tree-only k2 (prefetch=False), k2_pre,
#     k2_pre_lanes (tree-only products were never timed with the prefetching leaves; "auto"
#     now gives them k2_pre_lanes' leaves) -> OUTDIR/k2tree_gpu.json, OUTDIR/bench.log;
# (3) OUTDIR/h5_k2tree_auto_summary.json: per graph the times (ms), the ratios to cuSPARSE,
#     new / old, and the leaves kernel each product ran.
# The host prepares the graphs in the background (3 processes, niced) while the tests run, as
# benchmarks/device_h2_k2tree.sh (kron:21/22/23 ready after about 29/46/84 s).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_h5_k2tree_auto.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 150) bounds the whole call; T_TESTS (default 95) bounds (1).
set -uo pipefail
OUTDIR=${1:?usage: device_h5_k2tree_auto.sh OUTDIR [LIMIT]}; LIMIT=${2:-150}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
read -r -a GRAPHS <<< "${GRAPHS:-kron:21 kron:22 kron:23}"
CFG=(k2F k2F_pre_lanes k2F_auto k2 k2_pre k2_pre_lanes)
W=/tmp/h5k2_prep; rm -rf "$W"; mkdir -p "$W"
CUDA_VISIBLE_DEVICES='' NUMBA_NUM_THREADS=5 nice -n 15 "$PY" benchmarks/gpu_k2tree_bench.py --prepare "$W" \
  --graphs "${GRAPHS[@]}" --jobs 3 > "$OUTDIR/prepare.log" 2>&1 &
prep=$!
timeout "${T_TESTS:-95}" "$PY" -m pytest -q -m gpu tests/test_gpu_k2tree_prefetch.py tests/test_gpu_k2tree.py \
  -k "not 64bit and not aggregated and not real_graphs" --junitxml="$OUTDIR/junit-auto.xml" > "$OUTDIR/pytest-auto.log" 2>&1
echo "tests rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
left=$(( LIMIT - $(el) ))
timeout "$left" "$PY" benchmarks/gpu_k2tree_bench.py --prepared "$W" --graphs "${GRAPHS[@]}" \
  --configs "${CFG[@]}" --big-configs "${CFG[@]}" --products right left --budget $(( left - 15 )) --outdir "$OUTDIR" \
  > "$OUTDIR/bench.log" 2>&1
echo "bench rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
kill "$prep" 2>/dev/null
"$PY" - "$OUTDIR" <<'PYEOF' >> "$OUTDIR/timeline.txt" 2>&1
import json, os, sys
out = sys.argv[1]
env = json.load(open(os.path.join(out, "env.json")))
src = os.path.join(out, "k2tree_gpu.json")
rows = []
if os.path.exists(src):
    for g in json.load(open(src)).get("graphs", []):
        t = g.get("time_ms", {})
        cs = t.get("cusparse", {})
        row = {"graph": g.get("graph"), "time_ms": {}, "ratio_vs_cusparse": {}, "new_over_old": {}, "leaves": {}}
        for c in ("cusparse", "k2F", "k2F_pre_lanes", "k2F_auto", "k2", "k2_pre", "k2_pre_lanes"):
            for d in ("right", "left"):
                v = t.get(c, {}).get(d)
                if isinstance(v, float):
                    row["time_ms"][f"{c}_{d}"] = v
                    if c != "cusparse" and cs.get(d):
                        row["ratio_vs_cusparse"][f"{c}_{d}"] = v / cs[d]
                if t.get(c, {}).get(d + "_leaves"):
                    row["leaves"][f"{c}_{d}"] = t[c][d + "_leaves"]
        for new, old in (("k2F_auto", "k2F"), ("k2F_auto", "k2F_pre_lanes"), ("k2F_pre_lanes", "k2F"),
                         ("k2_pre", "k2"), ("k2_pre_lanes", "k2"), ("k2_pre_lanes", "k2_pre")):
            for d in ("right", "left"):
                a, b = row["time_ms"].get(f"{new}_{d}"), row["time_ms"].get(f"{old}_{d}")
                if a and b:
                    row["new_over_old"][f"{new}/{old}_{d}"] = a / b
        row["errors"] = {k: v for k, v in t.items() if isinstance(v, dict) and "error" in v}
        row["max_rel_error_vs_cusparse"] = g.get("max_rel_error_vs_cusparse", {})
        rows.append(row)
json.dump({"benchmark": "h5_k2tree_auto", "commit": env["commit"], "device": env["device"], "date": env["date"],
           "source": "k2tree_gpu.json", "graphs": rows},
          open(os.path.join(out, "h5_k2tree_auto_summary.json"), "w"), indent=1)
print("summary written")
PYEOF
exit 0
