#!/usr/bin/env bash
# Multi-GPU strong-scaling study (issue 10) on a machine with several GPUs of one host
# (device kinds nvidia-h200-x2 / -x4 / -x8), written to OUTDIR:
#
#   bash benchmarks/multi_gpu_study.sh OUTDIR [GRAPH]
#
# 1. exact closeness, `distgraph scale closeness GRAPH` (default kron:20) on 1, 2, 4, ... GPUs
#    through launch/distgraph-mpirun (one rank per GPU, NVLink multicast off), replicated mode,
#    then partitioned mode: OUTDIR/closeness-{replicated,partitioned}/scaling.json;
# 2. the queue benchmarks EnqDeq and Mixed, BQ and BWD, on 1..G PEs (one per GPU):
#    OUTDIR/queue_gpu.json;
# 3. Bellman-Ford on 1..G PEs (one per GPU), one source: the distributed rounds and the queue
#    kernel with remote atomics (BWD), on STUDY_SSSP_GRAPHS (kron:20,kron:22,road-FLA), uniform
#    and shifted weights, through benchmarks/device_sssp_pes.sh (its NVSHMEM tests on 2 PEs first):
#    OUTDIR/sssp/gpu_sssp_pes.json, and OUTDIR/sssp/bf_scaling.{md,json}: the speedups over one
#    GPU against the paper's 4-A100 bar (benchmarks/bf_scaling.py). Its own limit, STUDY_SSSP_S
#    (default 300 s: the host prepares kron:22 meanwhile).
# Rank counts are the powers of two up to the GPUs nvidia-smi lists. Plots are made afterwards
# from the JSON (`distgraph scale --collect OUTDIR/closeness-replicated/runs --output ...`), since
# the device host has no matplotlib. Each step has its own time limit (STUDY_STEP_S, default 150 s),
# so one slow step does not take the others' results with it. STUDY_PARTS picks the steps
# (default "replicated partitioned queue sssp").
set -uo pipefail
OUTDIR=${1:?usage: multi_gpu_study.sh OUTDIR [GRAPH]}; GRAPH=${2:-kron:20}
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
STEP=${STUDY_STEP_S:-150}
G=$(nvidia-smi -L | grep -c '^GPU')
ranks=1; n=2; while [ "$n" -le "$G" ]; do ranks="$ranks,$n"; n=$((n * 2)); done
read -r -a pes <<< "${ranks//,/ }"
echo "GPUs: $G; rank counts: $ranks" | tee "$OUTDIR/study.log"
nvidia-smi topo -m > "$OUTDIR/topology.txt" 2>&1
launcher="$PWD/launch/distgraph-mpirun --mpiexec $MPIRUN -n {n}"
status=0
PARTS=" ${STUDY_PARTS:-replicated partitioned queue sssp} "
if [[ $PARTS == *" replicated "* || $PARTS == *" partitioned "* ]]; then
  # Warm-up job: the first run compiles the kernels (and fills the caches) that every later job
  # finds ready; without it the 1-GPU time holds the compilation (session 3's x2 run).
  timeout "$STEP" "$PY" -m distgraph closeness "$GRAPH" --backend gpu --no-progress --json \
    > "$OUTDIR/closeness-warmup.json" 2>&1
fi
for mode in replicated partitioned; do
  [[ $PARTS == *" $mode "* ]] || continue
  DISTGRAPH_GPU_MSBFS_MODE=$mode timeout "$STEP" "$PY" -m distgraph scale closeness "$GRAPH" --ranks "$ranks" \
    --output "$OUTDIR/closeness-$mode" --no-plots --launcher "$launcher" --args --backend gpu --no-progress \
    2>&1 | tee -a "$OUTDIR/study.log" | tail -15
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
if [[ $PARTS == *" queue "* ]]; then
  QUEUE_BENCH_BUDGET=${QUEUE_BENCH_BUDGET:-40} timeout "$STEP" "$PY" benchmarks/gpu_queue_bench.py --outdir "$OUTDIR" \
    --pes "${pes[@]}" 2>&1 | tee -a "$OUTDIR/study.log" | tail -15
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [[ $PARTS == *" sssp "* ]]; then
  S=${STUDY_SSSP_S:-300}
  SSSP_PES=$ranks SSSP_GRAPHS=${STUDY_SSSP_GRAPHS:-kron:20,kron:22,road-FLA} SSSP_REMOTES=rounds,atomic \
    SSSP_TEST_K="many_sources or distributed_rounds" SSSP_TEST_S=60 SSSP_MORE_PES='' SSSP_TRIALS=3 \
    timeout $((S + 30)) bash benchmarks/device_sssp_pes.sh "$OUTDIR/sssp" "$S" 2>&1 | tee -a "$OUTDIR/study.log" | tail -15
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  cat "$OUTDIR/sssp/bf_scaling.md" 2>/dev/null | tee -a "$OUTDIR/study.log"
fi
exit $status
