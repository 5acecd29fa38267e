#!/usr/bin/env bash
# Near-far phases on several PEs (issue 7, QueueSSSP(multi_pe_phases=True), host-driven phase
# changes) on a GPU machine, best on two GPUs of one host (nvidia-h200-x2), results in OUTDIR:
#   1. the host prepares kron:20 and kron:22, uniform and potential-shifted weights, and the CPU
#      backend's reference distances (benchmarks/gpu_sssp_pes.py --prep, background, niced)
#      while the two NVSHMEM cubins (int and float distances) are built side by side;
#   2. tests/test_nvshmem_bellman_ford.py, all of it (the kernel changed for every remote mode),
#      on 2 PEs -> OUTDIR/pytest-nvshmem-bf-np2.log;
#   3. the timings: each case on 1 PE (the kernel's own phases; and atomic+phases: the host's
#      phase changes on one PE), then on 2 PEs (one per GPU when there are two) with remote
#      atomic (FIFO, today's default) and atomic+phases (the new option, default delta: the
#      largest of the PEs' picks), BWD queue -> OUTDIR/gpu_sssp_pes.json (commit, device, date);
#   4. the phase tests (-k "phases or delta") on 1 PE, then on 4 PEs (two per GPU: limited MPG),
#      with the time left -> OUTDIR/pytest-nvshmem-bf-phases-np{1,4}.log.
# OUTDIR/timeline.txt says when each step ended.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_h6_sssp_phases.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 150) bounds the whole call. Env: H6_GRAPHS (default kron:20,kron:22),
# H6_REMOTES (atomic,atomic+phases), H6_DELTAS (default: --phase-deltas of the +phases rows),
# H6_TRIALS (2). Needs the carried wheels of benchmarks/fetch_device_wheels.sh (.whl/: nvshmem4py-cu13).
set -uo pipefail
OUTDIR=${1:?usage: device_h6_sssp_phases.sh OUTDIR [LIMIT]}; LIMIT=${2:-150}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-20}
TL="$OUTDIR/timeline.txt"
GRAPHS=${H6_GRAPHS:-kron:20,kron:22}
P=/tmp/h6_sssp_prep; rm -rf "$P"; mkdir -p "$P"
CUDA_VISIBLE_DEVICES='' nice -n 10 "$PY" benchmarks/gpu_sssp_pes.py --prep "$P" --graphs "$GRAPHS" \
  > "$OUTDIR/prep.log" 2>&1 &
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
nvtest() {  # PEs, seconds, log name, pytest args...
  local n=$1 t=$2 name=$3; shift 3
  timeout "$t" "$MPIRUN" "${MPIFLAGS[@]}" -n "$n" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_bellman_ford.py "$@" > "$OUTDIR/pytest-nvshmem-bf-$name.log" 2>&1
  echo "nvshmem bf tests $name rc $? at $(el) s" >> "$TL"
}
nvtest 2 55 np2
left=$(( LIMIT - $(el) - 30 ))  # 30 s kept for the phase tests on 1 and 4 PEs
if [ "$left" -gt 20 ]; then
  timeout "$left" "$PY" benchmarks/gpu_sssp_pes.py --outdir "$OUTDIR" --prepared "$P" --graphs "$GRAPHS" \
    --pes 1,2 --queues bwd --remotes "${H6_REMOTES:-atomic,atomic+phases}" \
    --phase-deltas "${H6_DELTAS:-default}" --trials "${H6_TRIALS:-2}" --budget $(( left - 5 )) \
    > "$OUTDIR/gpu_sssp_pes.log" 2>&1
  echo "bench rc $? at $(el) s" >> "$TL"
else
  echo "bench skipped: $left s left at $(el) s" >> "$TL"
fi
kill "$prep" 2>/dev/null
left=$(( LIMIT - $(el) - 2 ))
[ "$left" -gt 10 ] && nvtest 1 $(( left < 25 ? left : 25 )) phases-np1 -k "phases or delta"
left=$(( LIMIT - $(el) - 2 ))
[ "$left" -gt 10 ] && nvtest 4 "$left" phases-np4 -k "phases or delta"
cat "$TL"
tail -30 "$OUTDIR/gpu_sssp_pes.log" | cut -c1-240
exit 0
