#!/usr/bin/env bash
# Nsight Compute on the batched Bellman-Ford rounds (benchmarks/ncu_sssp_batch.py) of GRAPH
# (default road-FLA): each kernel's duration, grid and active warps over NCU_COUNT (60) launches
# after skipping NCU_SKIP (3000: past the first 16 rounds, in the queued rounds) ->
# OUTDIR/ncu-batch.csv; the plain run (CUDA graphs, as the default path) -> OUTDIR/plain.txt.
#   bash benchmarks/ncu_sssp_batch.sh OUTDIR [GRAPH]
set -uo pipefail
OUTDIR=${1:?usage: ncu_sssp_batch.sh OUTDIR [GRAPH]}; GRAPH=${2:-road-FLA}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
NCU=$(command -v ncu || find /usr/local/cuda*/bin /opt/nvidia -name ncu -type f 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-none}" | tee "$OUTDIR/ncu-path.txt"
{ "$PY" benchmarks/ncu_sssp_batch.py "$GRAPH" --graphs; "$PY" benchmarks/ncu_sssp_batch.py "$GRAPH"; } \
  > "$OUTDIR/plain.txt" 2>&1
if [ -n "${NCU:-}" ]; then
  timeout "${T_NCU:-240}" "$NCU" -k regex:distgraph_bf_batch -s "${NCU_SKIP:-3000}" -c "${NCU_COUNT:-60}" \
    --metrics gpu__time_duration.sum,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv "$PY" benchmarks/ncu_sssp_batch.py "$GRAPH" > "$OUTDIR/ncu-batch.csv" 2> "$OUTDIR/ncu-batch.log"
fi
cat "$OUTDIR/plain.txt"
exit 0
