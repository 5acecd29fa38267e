#!/usr/bin/env bash
# GPU Bellman-Ford (issue 7) on the H200 in one device call: the GPU tests
# (tests/test_gpu_bellman_ford*.py) and the NVSHMEM tests on 1, 2 and 4 PEs
# (tests/test_nvshmem_bellman_ford*.py) run while benchmarks/gpu_sssp.py computes its CPU rows
# (graph builds, CPU backend on one rank, scipy); the benchmark's GPU rows wait for the tests
# (--wait-for), then come the N-rank CPU rows. Every step is under a time cap, and the results
# so far are packed into PKG every 15 s and at the end (the device tool brings back few files).
#
#   bash benchmarks/gpu_sssp_check.sh OUTDIR PKG [gpu_sssp.py options]
#
# Env: NV_NPS (PE counts of the NVSHMEM tests, default "1 2 4"; "" skips them), T_GPU (GPU
# tests), T_NV1/T_NV2/T_NV4 (NVSHMEM tests per PE count), T_BENCH (seconds),
# DISTGRAPH_COMMIT, DISTGRAPH_DATA (the real graphs: road-NY, bitcoin-otc, cond-mat, road-FLA).
set -uo pipefail
OUTDIR=${1:?usage: gpu_sssp_check.sh OUTDIR PKG [gpu_sssp.py options]}; PKG=${2:?}; shift 2
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-30}
pack() { tar czf "$PKG.part" -C "$OUTDIR" . && mv -f "$PKG.part" "$PKG"; }
( while sleep 15; do pack; done ) &
packer=$!
rm -f "$OUTDIR/tests.done"
timeout "${T_BENCH:-200}" "$PY" benchmarks/gpu_sssp.py --outdir "$OUTDIR" --wait-for "$OUTDIR/tests.done" "$@" \
  > "$OUTDIR/gpu_sssp.log" 2>&1 &
bench=$!
timeout "${T_GPU:-110}" "$PY" -m pytest -q -rfs --junitxml="$OUTDIR/junit-gpu-bellman_ford.xml" \
  tests/test_gpu_bellman_ford*.py > "$OUTDIR/pytest-gpu-bellman_ford.log" 2>&1 &
gtest=$!
for np in ${NV_NPS-1 2 4}; do
  t=T_NV$np
  timeout "${!t:-60}" "$MPIRUN" "${MPIFLAGS[@]}" -n "$np" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_bellman_ford*.py > "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log" 2>&1
  echo "exit status $?" >> "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log"
  tail -2 "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log"
done
wait $gtest
echo "exit status $?" >> "$OUTDIR/pytest-gpu-bellman_ford.log"
tail -2 "$OUTDIR/pytest-gpu-bellman_ford.log"
touch "$OUTDIR/tests.done"
wait $bench
echo "benchmark exit status $?"
tail -5 "$OUTDIR/gpu_sssp.log" | cut -c1-300
kill $packer 2>/dev/null
pack
