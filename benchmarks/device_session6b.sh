#!/usr/bin/env bash
# Session 6, call 3 (nvidia-h200-x2): the bottom-up scan with several in-arcs per round
# (GpuBFS bu_chunk, DG_BFS_BU_CHUNK). urand:27's level profile (gpu_bfs_levels27.json) puts
# 9.6-12.6 ms of its 13.7-16.2 ms in one bottom-up level. Results in OUTDIR:
# - GPU 0, cores 0-15: urand:27 (reorder none), then kron:21, urand:21, urand:24 (none), kron:24
#   (64 GAP sources; CuPy SpMV and 2 CPU-backend sources as the same-run references);
# - GPU 1, cores 16-31: kron:27 (Jaccard), then tests/test_gpu_bfs.py (chunks 2, 4, 16 forced).
# Variants: switch and switch-eq6 at chunks 1 (the kernel as before), 4 and 8.
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session6b.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session6b.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_GEN_DEVICE=gpu NUMBA_NUM_THREADS=16
V=${VARIANTS:-switch,switch-eq6,switch~c4,switch-eq6~c4,switch~c8,switch-eq6~c8}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 300 taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --graphs urand:27+none --outdir "$OUTDIR" \
    --name gpu_bfs_urand27_chunk --sources 64 --variants "$V" --skip-baselines scipy --cpu-sources 1 --no-cache \
    --max-seconds 300 > "$OUTDIR/gpu_bfs_urand27_chunk.log" 2>&1
  echo "urand27 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
  left=$(( ${T_ALL:-540} - $(el) ))
  timeout "$left" taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --graphs kron:21,urand:21,urand:24+none,kron:24 \
    --outdir "$OUTDIR" --name gpu_bfs_chunk --sources 64 --variants "$V" --skip-baselines scipy --cpu-sources 2 \
    --no-cache --max-seconds "$left" > "$OUTDIR/gpu_bfs_chunk.log" 2>&1
  echo "21/24 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
p0=$!
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 330 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --graphs kron:27+auto --outdir "$OUTDIR" \
    --name gpu_bfs_kron27_chunk --sources 64 --variants "$V" --skip-baselines scipy --cpu-sources 1 --no-cache \
    --max-seconds 330 > "$OUTDIR/gpu_bfs_kron27_chunk.log" 2>&1
  echo "kron27 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
  left=$(( ${T_ALL:-540} - $(el) ))
  timeout -k 5 "$left" taskset -c 16-31 "$PY" -m pytest -q -rs --junitxml="$OUTDIR/junit-test_gpu_bfs.xml" \
    tests/test_gpu_bfs.py > "$OUTDIR/pytest-test_gpu_bfs.log" 2>&1
  echo "test_gpu_bfs rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
wait $p0 $!
exit 0
