#!/usr/bin/env bash
# Session 4's final call on nvidia-h200-x2, results in OUTDIR/{check,k2r}/:
# 1. the full GPU check at this commit (gpu_check.sh, parallel mode, tests only), plus the
#    GPU test of the reordered k2-tree (tests/test_k2tree_reorder.py -k gpu), while the host
#    builds the degree-reordered trees of kron 21-23 in the background (cores 16-31, niced);
# 2. then the k2-tree SpMV of those trees against cuSPARSE on the same renumbered matrices,
#    within what is left of LIMIT seconds (default 320).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session4e.sh OUTDIR [LIMIT]
set -uo pipefail
OUTDIR=${1:?usage: device_session4e.sh OUTDIR [LIMIT]}; LIMIT=${2:-320}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p "$OUTDIR/check" "$OUTDIR/k2r"
. benchmarks/gpu_env.sh "$OUTDIR/k2r" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
CUDA_VISIBLE_DEVICES='' nice -n 15 taskset -c 16-31 "$PY" benchmarks/gpu_k2tree_bench.py --prepare /tmp/k2p \
  --graphs kron:21 kron:22 kron:23 --reorder degree --jobs 3 > "$OUTDIR/k2r/prepare.log" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 150 "$PY" -m pytest -q -rs tests/test_k2tree_reorder.py -k gpu \
  > "$OUTDIR/check/pytest-k2tree-reorder-gpu.log" 2>&1 &
GPU_CHECK_PARALLEL=1 GPU_CHECK_BENCH=0 T_TEST=${T_TEST:-220} bash benchmarks/gpu_check.sh "$OUTDIR/check" \
  > "$OUTDIR/check/check.log" 2>&1
echo "check rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
wait %2 2>/dev/null
left=$(( LIMIT - $(el) ))
if [ "$left" -gt 40 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout "$left" "$PY" benchmarks/gpu_k2tree_bench.py --prepared /tmp/k2p \
    --graphs kron:21 kron:22 kron:23 --configs k2F --reorder degree --budget $(( left - 25 )) \
    --outdir "$OUTDIR/k2r" > "$OUTDIR/k2r/bench.log" 2>&1
  echo "k2 bench rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
fi
kill %1 2>/dev/null
exit 0
