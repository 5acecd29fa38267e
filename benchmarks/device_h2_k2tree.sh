#!/usr/bin/env bash
# k2+F single-vector products with the prefetching leaves (DeviceMatrix(prefetch=True),
# distgraph_k2tree_leaves_k<K>_pre: each 4 x 4 block's 4 inputs loaded with its code, before
# the block scan) against the current leaves and cuSPARSE, on one H200:
# (1) the GPU tests of the new kernels against scipy (tests/test_gpu_k2tree_prefetch.py,
#     every semiring and element type, right and left, k2+F and tree-only, several tiles;
#     not its 64-bit directory test, whose 3 more NVRTC compiles would not fit)
#     -> OUTDIR/pytest-prefetch.log, OUTDIR/junit-prefetch.xml;
# (2) configurations k2F (K = 4, the default), k2F_pre (K = 4, prefetch), k2F_pre_lanes (and
#     lane_combine: adjacent lanes updating the same entry of y combined first), k2F_k2 and
#     k2F_k2_pre of benchmarks/gpu_k2tree_bench.py, right and left products, on kron:21-23
#     -> OUTDIR/k2tree_gpu.json (commit, device, date), OUTDIR/bench.log;
# (3) OUTDIR/h2_k2tree_summary.json: per graph the right and left times (ms) of each
#     configuration, their ratios to cuSPARSE and new / old.
# The host prepares the graphs in the background (3 processes, niced) while the tests run;
# the timing starts after the tests, so nothing else runs on the GPU meanwhile
# (benchmarks/results/session4_x2/k2tree_reorder_degree_prepare.log: kron:21/22/23 ready after
# 29/46/84 s with --jobs 3).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_h2_k2tree.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 150) bounds the whole call; GRAPHS="kron:21 kron:22 kron:23 kron:24"
# adds kron:24 (its preparation alone may not fit the limit); T_TESTS (default 80) bounds (1).
set -uo pipefail
OUTDIR=${1:?usage: device_h2_k2tree.sh OUTDIR [LIMIT]}; LIMIT=${2:-150}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
read -r -a GRAPHS <<< "${GRAPHS:-kron:21 kron:22 kron:23}"
CFG=(k2F k2F_pre k2F_pre_lanes k2F_k2 k2F_k2_pre)
W=/tmp/h2k2_prep; rm -rf "$W"; mkdir -p "$W"
CUDA_VISIBLE_DEVICES='' NUMBA_NUM_THREADS=5 nice -n 15 "$PY" benchmarks/gpu_k2tree_bench.py --prepare "$W" \
  --graphs "${GRAPHS[@]}" --jobs 3 > "$OUTDIR/prepare.log" 2>&1 &
prep=$!
timeout "${T_TESTS:-80}" "$PY" -m pytest -q -x tests/test_gpu_k2tree_prefetch.py -k "not 64bit" \
  --junitxml="$OUTDIR/junit-prefetch.xml" > "$OUTDIR/pytest-prefetch.log" 2>&1
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
        row = {"graph": g.get("graph"), "time_ms": {}, "ratio_vs_cusparse": {}, "new_over_old": {}}
        for c in ("cusparse", "k2F", "k2F_pre", "k2F_pre_lanes", "k2F_k2", "k2F_k2_pre"):
            for d in ("right", "left"):
                v = t.get(c, {}).get(d)
                if isinstance(v, float):
                    row["time_ms"][f"{c}_{d}"] = v
                    if c != "cusparse" and cs.get(d):
                        row["ratio_vs_cusparse"][f"{c}_{d}"] = v / cs[d]
        for new, old in (("k2F_pre", "k2F"), ("k2F_pre_lanes", "k2F"), ("k2F_pre_lanes", "k2F_pre"),
                         ("k2F_k2_pre", "k2F_k2"), ("k2F_k2_pre", "k2F")):
            for d in ("right", "left"):
                a, b = row["time_ms"].get(f"{new}_{d}"), row["time_ms"].get(f"{old}_{d}")
                if a and b:
                    row["new_over_old"][f"{new}/{old}_{d}"] = a / b
        row["errors"] = {k: v for k, v in t.items() if isinstance(v, dict) and "error" in v}
        rows.append(row)
json.dump({"benchmark": "h2_k2tree_prefetch", "commit": env["commit"], "device": env["device"], "date": env["date"],
           "source": "k2tree_gpu.json", "graphs": rows}, open(os.path.join(out, "h2_k2tree_summary.json"), "w"), indent=1)
print("summary written")
PYEOF
exit 0
