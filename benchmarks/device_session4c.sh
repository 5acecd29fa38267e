#!/usr/bin/env bash
# Session 4's second benchmark call on nvidia-h200-x2, results in OUTDIR/{a,b,study}/:
# GPU 0 (cores 0-15): closeness per-batch width (kappa 32/64/128 against the default 256) on
#   cond-mat-2005, email-Enron and road-NY (gpu_closeness.py --variants);
# GPU 1 (cores 16-31): the SSSP rows of road-FLA and kron:20 again with the fixed gpu_auto_api
#   comparison; then, on both GPUs, the Bellman-Ford step of multi_gpu_study.sh (1 and 2 PEs).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session4c.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session4c.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a" "$OUTDIR/b"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=0
  timeout "${T_CLOSENESS:-200}" taskset -c 0-15 "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR/a" \
    --graphs cond-mat-2005,email-Enron,road-NY --time-limit 30 --cpu-graphs '' --naive-graphs '' --pes '' \
    --variants k32,k64,k128 --variant-limit 8 > "$OUTDIR/a/gpu_closeness.log" 2>&1
  echo "closeness rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
) &
pa=$!
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 taskset -c 16-31 "$PY" benchmarks/gpu_sssp.py --outdir "$OUTDIR/b" --graphs road-FLA,kron:20 \
    --sweep-graphs '' --scipy-graphs '' --cpu-ranks-cases '' --rounds-trials 1 > "$OUTDIR/b/gpu_sssp.log" 2>&1
  echo "sssp rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
) &
pb=$!
wait $pa $pb
STUDY_PARTS=sssp STUDY_STEP_S=${STUDY_STEP_S:-150} bash benchmarks/multi_gpu_study.sh "$OUTDIR/study" kron:20 \
  > "$OUTDIR/study.log" 2>&1
echo "study rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
exit 0
