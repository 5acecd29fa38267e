#!/usr/bin/env bash
# Session 5's closing call on the two-GPU machine (nvidia-h200-x2), results in OUTDIR:
# GPU 0 (cores 0-15): the GPU tests of the MS-BFS (blocks of 1024 threads now the default;
#   256/512/1024 forced) and of the k2-tree (the aggregation test, cut by the time limit in the
#   previous call), one process each -> OUTDIR/a/pytest-*.log.
# GPU 1 (cores 16-31): closeness() end to end on road-NY, cond-mat-2005 and email-Enron with the
#   new defaults (1024 threads, ball groups on the block schedule) -> OUTDIR/b/gpu_closeness.json;
#   then BFS on urand:24 with the edge test, 64 GAP sources (prepared in the background from the
#   start) -> OUTDIR/b/gpu_bfs_urand24_alpha.json.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session5d.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session5d.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a" "$OUTDIR/b"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-250}
(
  export CUDA_VISIBLE_DEVICES=0 NUMBA_NUM_THREADS=16
  for f in tests/test_gpu_msbfs.py tests/test_gpu_msbfs_blocks.py tests/test_gpu_msbfs_block_threads.py \
           tests/test_gpu_k2tree.py; do
    t=$(basename "$f" .py)
    timeout "$LIMIT" taskset -c 0-15 "$PY" -m pytest -q -rs --junitxml="$OUTDIR/a/junit-$t.xml" "$f" \
      > "$OUTDIR/a/pytest-$t.log" 2>&1 &
  done
  wait
  echo "tests done at $(el) s" >> "$OUTDIR/a/timeline.txt"
) &
pa=$!
(
  export CUDA_VISIBLE_DEVICES=1 NUMBA_NUM_THREADS=16
  W=/tmp/s5dg1; rm -rf "$W"; mkdir -p "$W"
  nice -n 15 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --prep urand:24+none --workdir "$W" \
    > "$OUTDIR/b/bfs_prep.log" 2>&1 &
  timeout 90 taskset -c 16-31 "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR/b" \
    --graphs cond-mat-2005,email-Enron,road-NY --time-limit 30 --cpu-graphs '' --naive-graphs '' --pes '' \
    --networkit-graphs '' \
    > "$OUTDIR/b/gpu_closeness.log" 2>&1
  echo "closeness rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  left=$(( LIMIT - $(el) - 5 ))
  timeout "$left" taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --graphs urand:24+none --workdir "$W" --quiet-prep \
    --outdir "$OUTDIR/b" --name gpu_bfs_urand24_alpha --max-seconds $(( left - 10 )) \
    > "$OUTDIR/b/gpu_bfs_urand24_alpha.log" 2>&1
  echo "bfs rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  if [ -s "$W/prep.pgid" ]; then kill -CONT -- "-$(cat "$W/prep.pgid")" 2>/dev/null; kill -- "-$(cat "$W/prep.pgid")" 2>/dev/null; fi
) &
pb=$!
wait $pa $pb
exit 0
