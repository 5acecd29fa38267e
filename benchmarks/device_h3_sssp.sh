#!/usr/bin/env bash
# The NVSHMEM Bellman-Ford with batched remote relaxations (issue 7, remote="batch") on a GPU
# machine, best on two GPUs of one host (nvidia-h200-x2), results in OUTDIR:
#   1. the host prepares kron:18, kron:20 and kron:22, uniform and potential-shifted weights, and
#      the CPU backend's reference distances (benchmarks/gpu_sssp_pes.py --prep, background,
#      niced) while the two NVSHMEM cubins (int and float distances) are built side by side;
#   2. tests/test_nvshmem_bellman_ford.py (every remote mode, batch forced, its counters, scipy)
#      on 2 then 1 PEs -> OUTDIR/pytest-nvshmem-bf-np{2,1}.log;
#   3. the timings: each prepared case on 1 PE, then on 2 PEs (one per GPU when there are two,
#      else both on the one GPU) with remote atomic / enqueue (the old modes, ghost keys on) and
#      batch (the new one), BWD queue -> OUTDIR/gpu_sssp_pes.json (commit, device, date);
#   4. the same tests on 4 PEs (two per GPU: limited MPG) with the time left -> ...-np4.log.
# OUTDIR/timeline.txt says when each step ended.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_h3_sssp.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 195) bounds the whole call. Env: H3_GRAPHS (default
# kron:18,kron:20,kron:22), H3_QUEUES (bwd), H3_REMOTES (atomic,enqueue,batch), H3_FLUSHES
# (256,32: QueueSSSP.flush of the batch rows), H3_TRIALS (2). Needs the carried wheels of
# benchmarks/fetch_device_wheels.sh (.whl/: nvshmem4py-cu13).
set -uo pipefail
OUTDIR=${1:?usage: device_h3_sssp.sh OUTDIR [LIMIT]}; LIMIT=${2:-195}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-20}
TL="$OUTDIR/timeline.txt"
P=/tmp/h3_sssp_prep; rm -rf "$P"; mkdir -p "$P"
CUDA_VISIBLE_DEVICES='' nice -n 10 "$PY" benchmarks/gpu_sssp_pes.py --prep "$P" \
  --graphs "${H3_GRAPHS:-kron:18,kron:20,kron:22}" > "$OUTDIR/prep.log" 2>&1 &
prep=$!
builds=()
for f in 0 1; do
  timeout 120 "$PY" -c "from distgraph.backends.gpu.nvshmem_build import build_cubin
print(build_cubin('bellman_ford_nvshmem', {'DG_BF_FLOAT': $f, 'DG_BF_BLOCK': 128, 'DG_BF_BATCH': 1024}))" \
    > "$OUTDIR/build-float$f.log" 2>&1 &
  builds+=($!)
done
wait "${builds[@]}"
echo "cubins built at $(el) s" >> "$TL"
nvtest() {  # PEs, seconds
  timeout "$2" "$MPIRUN" "${MPIFLAGS[@]}" -n "$1" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_bellman_ford.py > "$OUTDIR/pytest-nvshmem-bf-np$1.log" 2>&1
  echo "nvshmem bf tests np$1 rc $? at $(el) s" >> "$TL"
}
nvtest 2 45
nvtest 1 40
left=$(( LIMIT - $(el) - 40 ))  # 40 s kept for the 4-PE tests
if [ "$left" -gt 20 ]; then
  timeout "$left" "$PY" benchmarks/gpu_sssp_pes.py --outdir "$OUTDIR" --prepared "$P" \
    --graphs "${H3_GRAPHS:-kron:18,kron:20,kron:22}" --queues "${H3_QUEUES:-bwd}" \
    --remotes "${H3_REMOTES:-atomic,enqueue,batch}" --flushes "${H3_FLUSHES:-256,32}" \
    --trials "${H3_TRIALS:-2}" --budget $(( left - 5 )) > "$OUTDIR/gpu_sssp_pes.log" 2>&1
  echo "bench rc $? at $(el) s" >> "$TL"
else
  echo "bench skipped: $left s left at $(el) s" >> "$TL"
fi
kill "$prep" 2>/dev/null
left=$(( LIMIT - $(el) - 2 ))
[ "$left" -gt 10 ] && nvtest 4 "$left"
cat "$TL"
tail -40 "$OUTDIR/gpu_sssp_pes.log" | cut -c1-220
exit 0
