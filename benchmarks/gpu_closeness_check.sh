#!/usr/bin/env bash
# GPU closeness on the H200 in one device call, each step under a time cap: the GPU tests
# (tests/test_gpu_msbfs*.py) and the NVSHMEM tests on 1, 2 and 4 PEs
# (tests/test_nvshmem_closeness.py) side by side (correctness only: they share the GPU), then
# the benchmark (benchmarks/gpu_closeness.py) alone on the machine.  After every step the
# results so far are packed into PKG (the device tool brings back few files), so a step that
# runs out of time loses only itself.
#
#   bash benchmarks/gpu_closeness_check.sh OUTDIR PKG
#
# Env: NPS ("1 2 4"), T_GPU, T_NV, T_BENCH (seconds; T_BENCH=0: tests only), PARALLEL (1: the test
# jobs side by side; 0: one after another), BENCH_ARGS (benchmark options), DISTGRAPH_COMMIT,
# DISTGRAPH_DATA.  If the block-schedule tests fail, the benchmark runs
# with DISTGRAPH_GPU_MSBFS_GROUPS=4 (the previous default; OUTDIR/blocks_disabled says so).
set -uo pipefail
OUTDIR=${1:?usage: gpu_closeness_check.sh OUTDIR PKG}; PKG=${2:?}
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
pack() { tar czf "$PKG" -C "$OUTDIR" . ; }
timeout "${T_GPU:-150}" "$PY" -m pytest -q -rfs --junitxml="$OUTDIR/junit-gpu-msbfs.xml" tests/test_gpu_msbfs.py \
  tests/test_gpu_msbfs_blocks.py > "$OUTDIR/pytest-gpu-msbfs.log" 2>&1 &
gpid=$!
[ "${PARALLEL:-1}" = 1 ] || wait $gpid
pids=()
for np in ${NPS:-1 2 4}; do
  timeout "${T_NV:-100}" "$MPIRUN" "${MPIFLAGS[@]}" -n "$np" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_closeness.py > "$OUTDIR/pytest-nvshmem-closeness-np$np.log" 2>&1 &
  pids+=($!)
  [ "${PARALLEL:-1}" = 1 ] || wait $!
done
wait $gpid; echo "gpu tests rc=$?"; tail -n 3 "$OUTDIR/pytest-gpu-msbfs.log"
if grep -q "FAILED.*blocks\|FAILED.*test_gpu_msbfs_blocks" "$OUTDIR/pytest-gpu-msbfs.log"; then
  export DISTGRAPH_GPU_MSBFS_GROUPS=4; echo "block schedule failed its tests: benchmark ran with groups=4" > "$OUTDIR/blocks_disabled"
fi
for p in "${pids[@]}"; do wait "$p"; done
for np in ${NPS:-1 2 4}; do echo "np$np: $(tail -n 1 "$OUTDIR/pytest-nvshmem-closeness-np$np.log")"; done
pack
[ "${T_BENCH:-240}" = 0 ] && exit 0
# shellcheck disable=SC2086
timeout "${T_BENCH:-240}" "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR" ${BENCH_ARGS:-} > "$OUTDIR/gpu_closeness.log" 2>&1
echo "bench rc=$?"; tail -n 4 "$OUTDIR/gpu_closeness.log" | cut -c1-300; pack
