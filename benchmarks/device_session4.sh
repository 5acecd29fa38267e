#!/usr/bin/env bash
# Session 4's benchmark call on the two-GPU machine (nvidia-h200-x2): independent
# benchmarks side by side, one GPU and half the host cores each (taskset), so no timed
# CPU row shares cores with another job. Results in OUTDIR/{a,b}/.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session4.sh OUTDIR
#
# GPU 0 (cores 0-15): the NVSHMEM Bellman-Ford tests on 1 PE, then exact closeness
#   (gpu_closeness.py: kron:20 in full, end to end through closeness(), with the 16-thread
#   CPU row and networkit; cond-mat-2005 and kron:18).
# GPU 1 (cores 16-31): k2-tree SpMV on kron 21-23 (4-chunk leaves), the GPU SSSP rows of
#   road-FLA/kron:20 with mode="auto", then BFS at scale 24 (prepared in the background
#   from the start).
set -uo pipefail
OUTDIR=${1:?usage: device_session4.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a" "$OUTDIR/b"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 120 taskset -c 0-15 "$MPIRUN" "${MPIFLAGS[@]}" -x CUDA_VISIBLE_DEVICES -n 1 "$PY" tests/mpi_pytest.py -q -rs \
    --with-mpi tests/test_nvshmem_bellman_ford.py > "$OUTDIR/a/pytest-nvshmem-bf-np1.log" 2>&1
  echo "nvshmem bf rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
  timeout "${T_CLOSENESS:-330}" taskset -c 0-15 "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR/a" \
    --graphs kron:20,cond-mat-2005,kron:18 --time-limit 120 --cpu-graphs kron:20,cond-mat-2005 --cpu-limit 25 \
    --naive-graphs cond-mat-2005 --pes '' > "$OUTDIR/a/gpu_closeness.log" 2>&1
  echo "closeness rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
) &
pa=$!
(
  export CUDA_VISIBLE_DEVICES=1
  W=/tmp/gb; mkdir -p "$W"
  nice -n 15 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --prep kron:24+w16384,urand:24+none --workdir "$W" \
    > "$OUTDIR/b/bfs_prep.log" 2>&1 &
  timeout 200 taskset -c 16-31 "$PY" benchmarks/gpu_k2tree_bench.py --outdir "$OUTDIR/b" --graphs kron:21 kron:22 kron:23 \
    --configs k2F k2F_k1 --big-configs k2F k2F_k1 --budget 170 > "$OUTDIR/b/k2tree.log" 2>&1
  echo "k2tree rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  timeout 120 taskset -c 16-31 "$PY" benchmarks/gpu_sssp.py --outdir "$OUTDIR/b" --graphs road-FLA,kron:20 \
    --sweep-graphs '' --scipy-graphs '' --cpu-ranks-cases '' --rounds-trials 1 > "$OUTDIR/b/gpu_sssp.log" 2>&1
  echo "sssp rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  left=$(( ${LIMIT:-560} - $(el) ))
  timeout "$left" taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --ab '' --graphs kron:24+w16384,urand:24+none \
    --workdir "$W" --quiet-prep --outdir "$OUTDIR/b" --name gpu_bfs_scale24 --max-seconds $(( left - 15 )) \
    > "$OUTDIR/b/gpu_bfs_scale24.log" 2>&1
  echo "bfs rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  if [ -s "$W/prep.pgid" ]; then kill -CONT -- "-$(cat "$W/prep.pgid")" 2>/dev/null; kill -- "-$(cat "$W/prep.pgid")" 2>/dev/null; fi
) &
pb=$!
wait $pa $pb
exit 0
