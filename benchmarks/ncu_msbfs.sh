#!/usr/bin/env bash
# Nsight Compute on one wave of the MS-BFS block schedule (benchmarks/ncu_msbfs.py) of GRAPH
# (default road-NY), the stage 1 + stage 2 kernel and the pull kernel: speed of light (DRAM,
# L2, L1 throughput), memory workload, warp stall reasons, occupancy -> OUTDIR/ncu-{push,pull}.txt
# (and .ncu-rep). Without ncu: the plain timings only. NCU_SOURCE=1 also builds the kernels with
# -lineinfo (DISTGRAPH_NVRTC_OPTIONS) and collects the source counters (warp stalls per SASS / source
# line) -> OUTDIR/ncu-{push,pull}-source.csv: where a level's time waits.
#   bash benchmarks/ncu_msbfs.sh OUTDIR [GRAPH]   (NCU_ARGS: more ncu_msbfs.py arguments, e.g. --nosym)
set -uo pipefail
OUTDIR=${1:?usage: ncu_msbfs.sh OUTDIR [GRAPH]}; GRAPH=${2:-road-NY}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
NCU=$(command -v ncu || find /usr/local/cuda*/bin /opt/nvidia -name ncu -type f 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-none}" | tee "$OUTDIR/ncu-path.txt"
read -r -a XARGS <<< "${NCU_ARGS:-}"  # more ncu_msbfs.py arguments, e.g. NCU_ARGS=--nosym
for p in ${NCU_MODES:-off on}; do  # NCU_MODES=on: the pull kernel only
  name=$([ "$p" = on ] && echo pull || echo push)
  "$PY" benchmarks/ncu_msbfs.py "$GRAPH" --pull "$p" ${XARGS[@]+"${XARGS[@]}"} > "$OUTDIR/plain-$name.txt" 2>&1
  if [ -n "${NCU:-}" ]; then
    timeout "${T_NCU:-120}" "$NCU" -k regex:distgraph_msbfs_.*blocks -c 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
      -o "$OUTDIR/ncu-$name" -f "$PY" benchmarks/ncu_msbfs.py "$GRAPH" --pull "$p" ${XARGS[@]+"${XARGS[@]}"} > "$OUTDIR/ncu-$name.log" 2>&1
    "$NCU" --import "$OUTDIR/ncu-$name.ncu-rep" --page details > "$OUTDIR/ncu-$name.txt" 2>&1
    if [ "${NCU_SOURCE:-0}" = 1 ]; then
      DISTGRAPH_NVRTC_OPTIONS=-lineinfo timeout "${T_NCU:-120}" "$NCU" -k regex:distgraph_msbfs_.*blocks -c 1 \
        --section SourceCounters --section WarpStateStats --import-source yes -o "$OUTDIR/ncu-$name-source" -f \
        "$PY" benchmarks/ncu_msbfs.py "$GRAPH" --pull "$p" ${XARGS[@]+"${XARGS[@]}"} > "$OUTDIR/ncu-$name-source.log" 2>&1
      "$NCU" --import "$OUTDIR/ncu-$name-source.ncu-rep" --page source --csv --print-source cuda,sass \
        > "$OUTDIR/ncu-$name-source.csv" 2>&1 ||
        "$NCU" --import "$OUTDIR/ncu-$name-source.ncu-rep" --page source --csv > "$OUTDIR/ncu-$name-source.csv" 2>&1
      "$NCU" --import "$OUTDIR/ncu-$name-source.ncu-rep" --page details > "$OUTDIR/ncu-$name-source.txt" 2>&1
      rm -f "$OUTDIR/ncu-$name-source.ncu-rep"
    fi
    rm -f "$OUTDIR/ncu-$name.ncu-rep"
  fi
done
cat "$OUTDIR"/plain-*.txt
exit 0
