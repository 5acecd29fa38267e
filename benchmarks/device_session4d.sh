#!/usr/bin/env bash
# Session 4's third call on nvidia-h200-x2, results in OUTDIR:
# 1. GPU 0 (cores 0-15): the closeness rows again with networkit beside them (carried wheel):
#    cond-mat-2005, email-Enron, road-NY, kron:18 -> OUTDIR/a/gpu_closeness.json;
# 2. then both GPUs: the NVSHMEM Bellman-Ford on 1 and 2 PEs (one per GPU) on kron:16 and kron:18,
#    uniform weights, each run under a time limit with progress lines, a hung kernel aborted by
#    DISTGRAPH_HANG_TIMEOUT (the 2-PE kron:20 run of call 2 did not finish in 150 s).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session4d.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session4d.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a" "$OUTDIR/pes16" "$OUTDIR/pes18"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
CUDA_VISIBLE_DEVICES=0 timeout "${T_CLOSENESS:-150}" taskset -c 0-15 "$PY" benchmarks/gpu_closeness.py \
  --outdir "$OUTDIR/a" --graphs cond-mat-2005,email-Enron,road-NY,kron:18 --time-limit 40 --cpu-graphs '' \
  --naive-graphs '' --pes '' > "$OUTDIR/a/gpu_closeness.log" 2>&1
echo "closeness rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-20}
for gr in 16 18; do
  timeout "${T_PES:-100}" "$PY" benchmarks/gpu_sssp.py --outdir "$OUTDIR/pes$gr" --graphs '' --pes 1,2 \
    --pes-graph "kron:$gr" --pes-weights uniform --pes-trials 1 --pes-timeout $(( ${T_PES:-100} / 2 - 5 )) \
    > "$OUTDIR/pes$gr/gpu_sssp.log" 2>&1
  echo "pes kron:$gr rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
done
exit 0
