#!/usr/bin/env bash
# Session 6, call 2 (nvidia-h200-x2), results in OUTDIR:
# - GPU 0, cores 0-15: the GPU tests of the commits not yet run on a GPU (3882d04 grid companion,
#   928e030 ball rule and directed alpha 0, a2bad6a/7a9e169/751ba5a/241a727 review fixes, 0064a4d
#   2**31-arc audit), one pytest process per file, then the NVSHMEM Bellman-Ford tests on 1, 2, 4 PEs;
# - GPU 1, cores 16-31: per-level times (timing build) of urand:27 without reordering, 4 GAP
#   sources, Eq. 6 alone and the edge test at alpha 1, 2 and 4: why urand:27 took 15.3 ms against
#   BLEST's 13.4 ms (device_gap27.sh) -> OUTDIR/gpu_bfs_levels27.json.
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session6a.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session6a.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  export CUDA_VISIBLE_DEVICES=1 DISTGRAPH_GEN_DEVICE=gpu NUMBA_NUM_THREADS=16
  timeout "${T_LEVELS:-420}" taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --level-profile urand:27+none --graphs '' \
    --alphas 1,4 --no-cache --outdir "$OUTDIR" --name gpu_bfs_levels27 > "$OUTDIR/gpu_bfs_levels27.log" 2>&1
  echo "levels27 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
) &
lp=$!
pids=()
for f in ${TEST_FILES:-tests/test_gpu_msbfs_blocks.py tests/test_gpu_msbfs_block_threads.py tests/test_gpu_msbfs.py \
         tests/test_gpu_bfs.py tests/test_gpu_bfs_host.py tests/test_gen_device.py tests/test_gap27_limits.py \
         tests/test_gpu_bellman_ford.py}; do
  t=$(basename "$f" .py)
  CUDA_VISIBLE_DEVICES=0 NUMBA_NUM_THREADS=4 timeout -k 10 "${T_TEST:-450}" taskset -c 0-15 "$PY" -m pytest -q -rs \
    --junitxml="$OUTDIR/junit-$t.xml" "$f" > "$OUTDIR/pytest-$t.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "pytest files done at $(el) s" >> "$OUTDIR/timeline.txt"
for np in 1 2 4; do
  CUDA_VISIBLE_DEVICES=0 timeout 120 taskset -c 0-15 "$MPIRUN" "${MPIFLAGS[@]}" -n $np "$PY" tests/mpi_pytest.py -q -rs \
    --with-mpi tests/test_nvshmem_bellman_ford.py > "$OUTDIR/pytest-nvshmem-bf-np$np.log" 2>&1
  echo "nvshmem np$np rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
done
wait $lp
for f in "$OUTDIR"/pytest-*.log; do echo "$(basename "$f"): $(tail -1 "$f")"; done
exit 0
