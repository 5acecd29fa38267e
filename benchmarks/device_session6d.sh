#!/usr/bin/env bash
# Session 6, call 6 (nvidia-h200-x2), results in OUTDIR:
# - GPU 0, cores 0-15: k2+F prefetching leaves (GPU tests, timings vs cuSPARSE on kron 21-23)
#   -> OUTDIR/h2 (call 6 ran device_h2_k2tree.sh, since retired: the same run is now
#   benchmarks/device_k2tree.sh with the environment below, summary k2tree_summary.json), then
#   the GPU BFS auto rule test (bottom-up work lists on graphs that are not scale-free)
#   -> OUTDIR/pytest-bfs-auto.log;
# - GPU 1, cores 16-31 (started 20 s later: gpu_env.sh reinstalls the wheels): the MS-BFS sparse
#   stage 1, benchmarks/device_h1_closeness.sh -> OUTDIR/h1.
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session6d.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session6d.sh OUTDIR}
mkdir -p "$OUTDIR/h1" "$OUTDIR/h2"
cd "$(dirname "$0")/.." || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=0
  TESTS='tests/test_gpu_k2tree_prefetch.py -x -k "not 64bit"' T_TESTS=80 T_JOBS=1 \
  CONFIGS="k2F k2F_pre k2F_pre_lanes k2F_k2 k2F_k2_pre" \
    taskset -c 0-15 bash benchmarks/device_k2tree.sh "$OUTDIR/h2" "${H2_LIMIT:-150}" > "$OUTDIR/h2.log" 2>&1
  echo "h2 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
  PYTHONPATH=/tmp/site:$PWD timeout -k 5 "${T_AUTO:-45}" taskset -c 0-15 python3 -m pytest -q -rs \
    tests/test_gpu_bfs.py -k "auto_variant or public_api or errors" > "$OUTDIR/pytest-bfs-auto.log" 2>&1
  echo "bfs auto test rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
p0=$!
sleep 20
(
  export CUDA_VISIBLE_DEVICES=1
  taskset -c 16-31 bash benchmarks/device_h1_closeness.sh "$OUTDIR/h1" > "$OUTDIR/h1.log" 2>&1
  echo "h1 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
wait $p0 $!
exit 0
