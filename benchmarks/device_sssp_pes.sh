#!/usr/bin/env bash
# The NVSHMEM Bellman-Ford (issue 7) on a GPU machine, best on two GPUs of one host
# (nvidia-h200-x2): GPU tests, then timings on 1 and 2 PEs, results in OUTDIR. One script for
# the device calls of benchmarks/gpu_sssp_pes.py (its one-off forerunners device_h3_sssp.sh and
# device_h6_sssp_phases.sh, retired in session 7, are these environment settings, below):
#   1. the host prepares the graphs (SSSP_GRAPHS), uniform and potential-shifted weights, and
#      the CPU backend's reference distances (gpu_sssp_pes.py --prep, background, niced) while
#      the two NVSHMEM cubins (int and float distances) are built side by side;
#   2. tests/test_nvshmem_bellman_ford.py (SSSP_TEST_K: a pytest -k expression, empty: all of
#      it) on 2 PEs -> OUTDIR/pytest-nvshmem-bf-np2.log;
#   3. the timings: each case on 1 PE (the first plain remote, and every X+phases one), then on
#      2 PEs (one per GPU when there are two) with every remote of SSSP_REMOTES side by side ->
#      OUTDIR/gpu_sssp_pes.json (commit, device, date; rows with the remote counters);
#   4. with the time left, the same tests on each PE count of SSSP_MORE_PES (1, then 4: two per
#      GPU, limited MPG), -k SSSP_MORE_K -> OUTDIR/pytest-nvshmem-bf-np{1,4}.log.
# OUTDIR/timeline.txt says when each step ended.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_sssp_pes.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 200) bounds the whole call. Env, with defaults (session 7: the remote
# atomic relaxation before and after the round-trip cuts, side by side):
#   SSSP_GRAPHS=kron:20,kron:22 (a spec may end in @deg or @dealP: gpu_sssp_pes.py)   SSSP_WEIGHTS=uniform,shifted
#   SSSP_REMOTES=atomic_fetch,atomic   SSSP_QUEUES=bwd   SSSP_TRIALS=3
#   SSSP_DELTAS=default (X+phases rows)   SSSP_FLUSHES=256,32 (batch rows)
#   SSSP_TEST_K= (all)   SSSP_TEST_S=70   SSSP_MORE_PES=1,4   SSSP_MORE_K=atomic
#   SSSP_PES=1,2 (the timings' PE counts; 1,2,4 on four GPUs)
# The retired scripts' runs (read them with git show fb3e7d4:benchmarks/device_h3_sssp.sh and
# git show b7a0678:benchmarks/device_h6_sssp_phases.sh):
#   device_h3_sssp.sh OUTDIR 200:        SSSP_GRAPHS=kron:18,kron:20,kron:22 SSSP_REMOTES=atomic,enqueue,batch
#                                        SSSP_TRIALS=2 SSSP_TEST_S=45 SSSP_MORE_K= (its 1-PE tests ran before the timings)
#   device_h6_sssp_phases.sh OUTDIR 150: SSSP_REMOTES=atomic,atomic+phases SSSP_TRIALS=2 SSSP_TEST_S=55
#                                        SSSP_MORE_K="phases or delta" (its logs: pytest-nvshmem-bf-phases-np{1,4}.log)
# Needs the carried wheels of benchmarks/fetch_device_wheels.sh (.whl/: nvshmem4py-cu13).
set -uo pipefail
OUTDIR=${1:?usage: device_sssp_pes.sh OUTDIR [LIMIT]}; LIMIT=${2:-200}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-20}
TL="$OUTDIR/timeline.txt"
GRAPHS=${SSSP_GRAPHS:-kron:20,kron:22}
TEST_K=${SSSP_TEST_K:-}
P=/tmp/sssp_pes_prep; rm -rf "$P"; mkdir -p "$P"
CUDA_VISIBLE_DEVICES='' nice -n 10 "$PY" benchmarks/gpu_sssp_pes.py --prep "$P" --graphs "$GRAPHS" \
  --weights "${SSSP_WEIGHTS:-uniform,shifted}" \
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
nvtest() {  # PEs, seconds, -k expression (empty: every test)
  local n=$1 t=$2 k=$3 args=()
  [ -n "$k" ] && args=(-k "$k")
  timeout "$t" "$MPIRUN" "${MPIFLAGS[@]}" -n "$n" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_bellman_ford.py "${args[@]}" > "$OUTDIR/pytest-nvshmem-bf-np$n.log" 2>&1
  echo "nvshmem bf tests np$n rc $? at $(el) s" >> "$TL"
}
nvtest 2 "${SSSP_TEST_S:-70}" "$TEST_K"
left=$(( LIMIT - $(el) - 25 ))  # 25 s kept for the tests on other PE counts
if [ "$left" -gt 20 ]; then
  timeout "$left" "$PY" benchmarks/gpu_sssp_pes.py --outdir "$OUTDIR" --prepared "$P" --graphs "$GRAPHS" \
    --pes "${SSSP_PES:-1,2}" --weights "${SSSP_WEIGHTS:-uniform,shifted}" --queues "${SSSP_QUEUES:-bwd}" --remotes "${SSSP_REMOTES:-atomic_fetch,atomic}" \
    --phase-deltas "${SSSP_DELTAS:-default}" --flushes "${SSSP_FLUSHES:-256,32}" \
    --trials "${SSSP_TRIALS:-3}" --budget $(( left - 5 )) > "$OUTDIR/gpu_sssp_pes.log" 2>&1
  echo "bench rc $? at $(el) s" >> "$TL"
else
  echo "bench skipped: $left s left at $(el) s" >> "$TL"
fi
kill "$prep" 2>/dev/null
[ -f "$OUTDIR/gpu_sssp_pes.json" ] && "$PY" benchmarks/bf_scaling.py "$OUTDIR/gpu_sssp_pes.json" \
  --out "$OUTDIR/bf_scaling.json" > "$OUTDIR/bf_scaling.md" 2>&1
IFS=, read -r -a more <<< "${SSSP_MORE_PES-1,4}"
for i in "${!more[@]}"; do  # each but the last at most 30 s, the last whatever is left
  left=$(( LIMIT - $(el) - 2 ))
  [ $(( i + 1 )) -lt "${#more[@]}" ] && [ "$left" -gt 30 ] && left=30
  [ "$left" -gt 10 ] && nvtest "${more[$i]}" "$left" "${SSSP_MORE_K-atomic}"
done
cat "$TL"
tail -30 "$OUTDIR/gpu_sssp_pes.log" | cut -c1-300
exit 0
