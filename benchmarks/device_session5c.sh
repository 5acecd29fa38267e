#!/usr/bin/env bash
# Session 5's last call on the two-GPU machine (nvidia-h200-x2), results in OUTDIR:
# Phase 1, the GPUs side by side (one GPU and 16 host cores each):
#   GPU 0: every GPU test file and tests/test_gen_device.py, one process each, at once (the
#          BFS edge test, k2-tree aggregation, MS-BFS block sizes and the device CSR builder
#          are new) -> OUTDIR/a/pytest-*.log; then the closeness A/B of block sizes and batch
#          orders -> OUTDIR/a/closeness/.
#   GPU 1: BFS at scale 24 with the edge test (64 GAP sources, kron:24 Jaccard and urand:24)
#          -> OUTDIR/b/gpu_bfs_scale24_alpha.json; then the k2+F products of kron:21-23 with
#          and without the shared-memory aggregation (trees prepared meanwhile on cores 0-15)
#          -> OUTDIR/b/k2tree/.
# Phase 2, both GPUs: the NVSHMEM Bellman-Ford tests on 1, 2 and 4 PEs (ghost keys), beside
#   them the device CSR builder against the host one (kron:24 both, kron:26 on the GPU; cores
#   16-31) -> OUTDIR/gen/; then kron:18 on 1 and 2 PEs, one per GPU, with and without ghost
#   keys -> OUTDIR/pes18/.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session5c.sh OUTDIR
set -uo pipefail
OUTDIR=${1:?usage: device_session5c.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a/closeness" "$OUTDIR/b/k2tree" "$OUTDIR/pes18"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
P1=${P1:-330}   # seconds of phase 1
(
  export CUDA_VISIBLE_DEVICES=0 NUMBA_NUM_THREADS=16
  for f in tests/test_gpu_*.py tests/test_gen_device.py; do
    t=$(basename "$f" .py)
    timeout 200 taskset -c 0-15 "$PY" -m pytest -q -rs --junitxml="$OUTDIR/a/junit-$t.xml" "$f" \
      > "$OUTDIR/a/pytest-$t.log" 2>&1 &
  done
  wait
  echo "tests done at $(el) s" >> "$OUTDIR/a/timeline.txt"
  # block size x batch order of the MS-BFS block schedule (benchmarks/msbfs_block_sweep.sh's sweep)
  timeout $(( P1 - $(el) - 5 )) taskset -c 0-15 "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR/a/closeness" \
    --block-sweep "${SWEEP_GRAPHS:-road-NY,email-Enron,cond-mat-2005}" \
    --sweep-variants "${SWEEP_VARIANTS:-b256,b512,b1024,f4}" --sweep-orders input,ball \
    > "$OUTDIR/a/closeness/gpu_closeness_block_sweep.log" 2>&1
  echo "closeness rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
) &
pa=$!
(
  export CUDA_VISIBLE_DEVICES=1 NUMBA_NUM_THREADS=16
  W=/tmp/s5cg1; rm -rf "$W"; mkdir -p "$W"
  # the k2-trees of kron:21-23 prepared on the other half of the cores meanwhile
  K=/tmp/s5ck2; rm -rf "$K"; mkdir -p "$K"
  CUDA_VISIBLE_DEVICES='' NUMBA_NUM_THREADS=5 nice -n 15 taskset -c 0-15 "$PY" benchmarks/gpu_k2tree_bench.py \
    --prepare "$K" --graphs kron:21 kron:22 kron:23 --jobs 3 > "$OUTDIR/b/k2tree/prepare.log" 2>&1 &
  kp=$!
  nice -n 15 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --prep kron:24+w16384,urand:24+none --workdir "$W" \
    > "$OUTDIR/b/bfs_prep.log" 2>&1 &
  timeout 200 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --graphs kron:24+w16384,urand:24+none \
    --workdir "$W" --quiet-prep --outdir "$OUTDIR/b" --name gpu_bfs_scale24_alpha --max-seconds 185 \
    > "$OUTDIR/b/gpu_bfs_scale24_alpha.log" 2>&1
  echo "bfs rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  if [ -s "$W/prep.pgid" ]; then kill -CONT -- "-$(cat "$W/prep.pgid")" 2>/dev/null; kill -- "-$(cat "$W/prep.pgid")" 2>/dev/null; fi
  # k2+F single-vector products with the shared-memory aggregation (as the retired device_k2tree_agg.sh;
  # now TESTS= CONFIGS="k2F k2F_k2 k2F_agg k2F_k2_agg k2F_k8_agg k2F_agg_s64" benchmarks/device_k2tree.sh)
  left=$(( P1 - $(el) - 5 ))
  cfg=(k2F k2F_k2 k2F_agg k2F_k2_agg k2F_k8_agg k2F_agg_s64)
  timeout "$left" taskset -c 16-31 "$PY" benchmarks/gpu_k2tree_bench.py --prepared "$K" \
    --graphs kron:21 kron:22 kron:23 --configs "${cfg[@]}" --big-configs "${cfg[@]}" --products right left \
    --budget $(( left - 20 )) --outdir "$OUTDIR/b/k2tree" > "$OUTDIR/b/k2tree/bench.log" 2>&1
  echo "k2tree rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  kill "$kp" 2>/dev/null
) &
pb=$!
wait $pa $pb
# ---- phase 2: the NVSHMEM Bellman-Ford (both GPUs), the device CSR builder beside it
mkdir -p "$OUTDIR/gen"
CUDA_VISIBLE_DEVICES=1 NUMBA_NUM_THREADS=16 timeout "${T_GEN:-100}" taskset -c 16-31 "$PY" benchmarks/gen_device.py \
  "$OUTDIR/gen" --cases "${GEN_CASES:-kron:24:gpu,kron:24:cpu,kron:26:gpu}" --check-max-scale 24 \
  --budget $(( ${T_GEN:-100} - 5 )) > "$OUTDIR/gen/bench.log" 2>&1 &
pg=$!
for np in 1 2 4; do
  timeout 90 "$MPIRUN" "${MPIFLAGS[@]}" -n $np "$PY" tests/mpi_pytest.py -q -rs --with-mpi \
    tests/test_nvshmem_bellman_ford.py > "$OUTDIR/pytest-nvshmem-bf-np$np.log" 2>&1
  echo "nvshmem bf np$np rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
done
wait $pg
echo "gen rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-20}
timeout "${T_PES:-110}" "$PY" benchmarks/gpu_sssp.py --outdir "$OUTDIR/pes18" --graphs '' --pes 1,2 \
  --pes-graph kron:18 --pes-weights uniform --pes-trials 2 --pes-timeout $(( ${T_PES:-110} / 2 - 5 )) \
  > "$OUTDIR/pes18/gpu_sssp.log" 2>&1
echo "pes kron:18 rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
exit 0
