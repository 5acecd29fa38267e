#!/usr/bin/env bash
# Session 6, call 4 (nvidia-h200-x2), results in OUTDIR:
# 1. OUTDIR/h3: benchmarks/device_h3_sssp.sh (NVSHMEM Bellman-Ford with batched remote
#    relaxations: tests on 2, 1, 4 PEs; kron 18/20/22 on 1 and 2 GPUs), alone on the machine;
# 2. then side by side: GPU 0 urand:27 with the bottom-up work lists (switch / switch-eq6 at
#    chunk 4 with and without bu_list, 64 GAP sources); GPU 1 tests/test_gpu_bfs.py (chunks and
#    work lists forced, real graphs included), then kron:21, urand:21, urand:24 with the same
#    variants.
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session6c.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session6c.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUTDIR"  # (call 4 ran without it: the redirect below failed and H3 never ran)
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
[ "${SKIP_H3:-0}" = 1 ] || bash benchmarks/device_h3_sssp.sh "$OUTDIR/h3" "${H3_LIMIT:-200}" > "$OUTDIR/h3.log" 2>&1
echo "h3 done at $(el) s" >> "$OUTDIR/timeline.txt"
[ "${H3_ONLY:-0}" = 1 ] && exit 0
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
export DISTGRAPH_GEN_DEVICE=gpu NUMBA_NUM_THREADS=16
V=${VARIANTS:-switch,switch-eq6,switch~c4l,switch-eq6~c4l}
(
  export CUDA_VISIBLE_DEVICES=0
  timeout "${T_27:-200}" taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --graphs urand:27+none --outdir "$OUTDIR" \
    --name gpu_bfs_urand27_list --sources 64 --variants "$V" --skip-baselines scipy --cpu-sources 1 --no-cache \
    --max-seconds 200 > "$OUTDIR/gpu_bfs_urand27_list.log" 2>&1
  echo "urand27 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
p0=$!
(
  export CUDA_VISIBLE_DEVICES=1
  timeout -k 5 "${T_TEST:-130}" taskset -c 16-31 "$PY" -m pytest -q -rs --junitxml="$OUTDIR/junit-test_gpu_bfs.xml" \
    tests/test_gpu_bfs.py > "$OUTDIR/pytest-test_gpu_bfs.log" 2>&1
  echo "test_gpu_bfs rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
  timeout "${T_21:-90}" taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --graphs kron:21,urand:21,urand:24+none \
    --outdir "$OUTDIR" --name gpu_bfs_list --sources 64 --variants "$V" --skip-baselines scipy --cpu-sources 2 \
    --no-cache --max-seconds 90 > "$OUTDIR/gpu_bfs_list.log" 2>&1
  echo "21/24 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
wait $p0 $!
exit 0
