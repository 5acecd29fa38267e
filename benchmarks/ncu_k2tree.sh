#!/usr/bin/env bash
# Nsight Compute on the k2+F leaves kernel of one right product (benchmarks/ncu_k2tree.py) of
# GRAPH (default kron:21), unreordered and degree-ordered: speed of light, memory workload (the
# L2 atomics among them), warp stall reasons, occupancy -> OUTDIR/ncu-k2-{none,degree}.txt.
# Why a degree-ordered tree, with 19% fewer 4 x 4 blocks on kron:20, takes 1.27x the time.
#   bash benchmarks/ncu_k2tree.sh OUTDIR [GRAPH]
set -uo pipefail
OUTDIR=${1:?usage: ncu_k2tree.sh OUTDIR [GRAPH]}; GRAPH=${2:-kron:21}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
NCU=$(command -v ncu || find /usr/local/cuda*/bin /opt/nvidia -name ncu -type f 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-none}" | tee "$OUTDIR/ncu-path.txt"
for r in ${K2_ORDERS:-none degree}; do
  if [ -n "${NCU:-}" ]; then
    timeout "${T_NCU:-150}" "$NCU" -k regex:distgraph_k2tree_leaves -c 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
      --section Occupancy --section LaunchStats --section SchedulerStats \
      -o "$OUTDIR/ncu-k2-$r" -f "$PY" benchmarks/ncu_k2tree.py "$GRAPH" --reorder "$r" > "$OUTDIR/ncu-k2-$r.log" 2>&1
    "$NCU" --import "$OUTDIR/ncu-k2-$r.ncu-rep" --page details > "$OUTDIR/ncu-k2-$r.txt" 2>&1
  else
    "$PY" benchmarks/ncu_k2tree.py "$GRAPH" --reorder "$r" > "$OUTDIR/plain-k2-$r.txt" 2>&1
  fi
done
exit 0
