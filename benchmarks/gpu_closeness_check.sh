#!/usr/bin/env bash
# GPU closeness on the H200 in one device call, each step under a time cap: the GPU tests
# (tests/test_gpu_msbfs.py), the NVSHMEM tests on NPS PEs (tests/test_nvshmem_closeness.py),
# the benchmark (benchmarks/gpu_closeness.py) and a short profile of the small graphs.
# After every step the results so far are packed into PKG (the device tool brings back few
# files), so a step that runs out of time loses only itself.
#
#   bash benchmarks/gpu_closeness_check.sh OUTDIR PKG
#
# Env: NPS ("4"), T_GPU, T_NV, T_BENCH, T_PROF (seconds), BENCH_GPU_CLOSENESS_* (benchmark
# options), DISTGRAPH_COMMIT, DISTGRAPH_DATA.  If the concurrent-groups tests fail, the rest runs
# with DISTGRAPH_GPU_MSBFS_GROUPS=1 (and OUTDIR/groups_disabled says so).
set -uo pipefail
OUTDIR=${1:?usage: gpu_closeness_check.sh OUTDIR PKG}; PKG=${2:?}
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.."
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
pack() { tar czf "$PKG" -C "$OUTDIR" . ; }
timeout "${T_GPU:-90}" "$PY" -m pytest -q -rfs --junitxml="$OUTDIR/junit-gpu-msbfs.xml" tests/test_gpu_msbfs.py \
  > "$OUTDIR/pytest-gpu-msbfs.log" 2>&1
tail -3 "$OUTDIR/pytest-gpu-msbfs.log"
if grep -q "FAILED.*test_concurrent_groups" "$OUTDIR/pytest-gpu-msbfs.log"; then
  export DISTGRAPH_GPU_MSBFS_GROUPS=1; echo "concurrent groups failed their tests: ran with groups=1" > "$OUTDIR/groups_disabled"
fi
pack
for np in ${NPS:-4}; do
  timeout "${T_NV:-45}" "$MPIRUN" "${MPIFLAGS[@]}" -n "$np" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
    tests/test_nvshmem_closeness.py > "$OUTDIR/pytest-nvshmem-closeness-np$np.log" 2>&1
  tail -2 "$OUTDIR/pytest-nvshmem-closeness-np$np.log"; pack
done
timeout "${T_BENCH:-240}" "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR" > "$OUTDIR/gpu_closeness.log" 2>&1
tail -4 "$OUTDIR/gpu_closeness.log" | cut -c1-300; pack
timeout "${T_PROF:-20}" "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR" --profile email-Enron,road-NY \
  --profile-variants groups_1,groups_2,groups_4,bu_never,bu_4 --profile-launches 16 > "$OUTDIR/profile.log" 2>&1
tail -2 "$OUTDIR/profile.log" | cut -c1-300; pack
