#!/usr/bin/env bash
# First device call of session 7 (nvidia-h200-x2), the GPU checks session 6 could not run
# (benchmarks/results/gpu_tests/README.md, end), results in OUTDIR:
# - GPU 0, cores 0-15: the k2-tree "auto" leaves (GPU tests, k2F / k2F_pre_lanes / k2F_auto and
#   tree-only rows on kron 21-23) -> OUTDIR/h5; call 1 ran them with device_h5_k2tree_auto.sh,
#   since retired: the same run is now benchmarks/device_k2tree.sh with the environment below
#   (summary k2tree_summary.json, was h5_k2tree_auto_summary.json; prepare-none.log, was prepare.log);
# - GPU 1, cores 16-31 (20 s later: gpu_env.sh reinstalls the wheels): tests/test_gpu_bfs.py,
#   tests/test_gpu_msbfs.py, tests/test_gpu_msbfs_sparse.py and tests/test_gpu_bellman_ford.py
#   with the current defaults -> OUTDIR/pytest-*.log.
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session7.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session7.sh OUTDIR}
mkdir -p "$OUTDIR/h5"
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=0
  TESTS='-m gpu tests/test_gpu_k2tree_prefetch.py tests/test_gpu_k2tree.py -k "not 64bit and not aggregated and not real_graphs"' \
  T_TESTS=95 T_JOBS=1 CONFIGS="k2F k2F_pre_lanes k2F_auto k2 k2_pre k2_pre_lanes" \
    taskset -c 0-15 bash benchmarks/device_k2tree.sh "$OUTDIR/h5" "${H5_LIMIT:-180}" > "$OUTDIR/h5.log" 2>&1
  echo "h5 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
p0=$!
sleep 20
(
  . benchmarks/gpu_env.sh "$OUTDIR" || exit 1
  [ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
  export CUDA_VISIBLE_DEVICES=1
  for f in tests/test_gpu_bfs.py tests/test_gpu_msbfs.py tests/test_gpu_msbfs_sparse.py tests/test_gpu_bellman_ford.py; do
    t=$(basename "$f" .py)
    timeout -k 5 "${T_TEST:-150}" taskset -c 16-31 "$PY" -m pytest -q -rs -p no:cacheprovider \
      --junitxml="$OUTDIR/junit-$t.xml" "$f" > "$OUTDIR/pytest-$t.log" 2>&1 &
  done
  wait
  echo "tests done at $(el) s" >> "$OUTDIR/timeline.txt"
) &
wait $p0 $!
for f in "$OUTDIR"/pytest-*.log; do echo "$(basename "$f"): $(tail -1 "$f")"; done
exit 0
