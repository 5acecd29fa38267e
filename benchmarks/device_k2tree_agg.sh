#!/usr/bin/env bash
# k2+F single-vector products on kron:21-23 with the updates of each block combined in a
# shared-memory table (aggregate=True) beside the current leaves and cuSPARSE, one H200:
# configurations k2F (K = 4, the default), k2F_k2, k2F_agg (K = 4, right and left),
# k2F_k2_agg, k2F_k8_agg and k2F_agg_s64 (64 slots per chunk) of benchmarks/gpu_k2tree_bench.py.
# The host prepares the three graphs in the background (3 processes, niced) while the GPU
# times each as soon as it is ready, right and left products only (--products: no batch,
# whose n x 128 vectors and SpMM are not needed here). Results in OUTDIR/k2tree_gpu.json;
# merge them with gpu_k2tree_bench.py --merge OUTDIR/k2tree_gpu.json benchmarks/results/k2tree_gpu.json
# (k2F's earlier batch time then moves to the graph's 'earlier' list).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_k2tree_agg.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 160) bounds the whole call; a graph not prepared in time is skipped
# (benchmarks/results/session4_x2/k2tree_reorder_degree_prepare.log: the host had the
# degree-reordered kron:21/22/23 ready after 29/46/84 s with --jobs 3).
set -uo pipefail
OUTDIR=${1:?usage: device_k2tree_agg.sh OUTDIR [LIMIT]}; LIMIT=${2:-160}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
GRAPHS=(kron:21 kron:22 kron:23)
CFG=(k2F k2F_k2 k2F_agg k2F_k2_agg k2F_k8_agg k2F_agg_s64)
W=/tmp/k2agg_prep; rm -rf "$W"; mkdir -p "$W"
CUDA_VISIBLE_DEVICES='' NUMBA_NUM_THREADS=5 nice -n 15 "$PY" benchmarks/gpu_k2tree_bench.py --prepare "$W" \
  --graphs "${GRAPHS[@]}" --jobs 3 > "$OUTDIR/prepare.log" 2>&1 &
prep=$!
left=$(( LIMIT - $(el) ))
timeout "$left" "$PY" benchmarks/gpu_k2tree_bench.py --prepared "$W" --graphs "${GRAPHS[@]}" \
  --configs "${CFG[@]}" --big-configs "${CFG[@]}" --products right left --budget $(( left - 20 )) --outdir "$OUTDIR" \
  > "$OUTDIR/bench.log" 2>&1
echo "bench rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
kill "$prep" 2>/dev/null
exit 0
