#!/usr/bin/env bash
# GPU Bellman-Ford end to end (issue 7) in one device call: the GPU tests
# (tests/test_gpu_bellman_ford*.py), the NVSHMEM tests on NV_NPS PEs of the one GPU
# (tests/test_nvshmem_bellman_ford*.py), then benchmarks/sssp_e2e.py (bellman_ford() end to
# end against the CPU backend, scipy and, with a baseline tree, an older commit), one after
# the other (the e2e rows time host work too: nothing else runs beside them).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) BASELINE_COMMIT=OLD bash benchmarks/sssp_e2e_check.sh OUTDIR [options]
#   (device tool: carry .whl, .cache (the data in .cache/k2data, a baseline worktree in
#   .cache/base: git worktree add .cache/base COMMIT); end with tar czf $OUT/r.tgz -C OUTDIR .)
#
# Env: NV_NPS (default "2 4"; "" skips), PARTS (tests,e2e), T_GPU (150), T_NV (180 per PE
# count), T_E2E (300).
set -uo pipefail
OUTDIR=${1:?usage: sssp_e2e_check.sh OUTDIR [sssp_e2e.py options]}; shift
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
[ -d .cache/k2data ] && export DISTGRAPH_DATA=${DISTGRAPH_DATA:-$PWD/.cache/k2data}
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_HANG_TIMEOUT=${DISTGRAPH_HANG_TIMEOUT:-30}
parts=",${PARTS:-tests,e2e},"
if [[ $parts == *,tests,* ]]; then
  timeout "${T_GPU:-150}" "$PY" -m pytest -q -rfs --junitxml="$OUTDIR/junit-gpu-bellman_ford.xml" \
    tests/test_gpu_bellman_ford*.py > "$OUTDIR/pytest-gpu-bellman_ford.log" 2>&1
  echo "exit status $?" >> "$OUTDIR/pytest-gpu-bellman_ford.log"
  tail -2 "$OUTDIR/pytest-gpu-bellman_ford.log"
  for np in ${NV_NPS-2 4}; do
    timeout "${T_NV:-180}" "$MPIRUN" "${MPIFLAGS[@]}" -n "$np" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
      tests/test_nvshmem_bellman_ford*.py > "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log" 2>&1
    echo "exit status $?" >> "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log"
    tail -2 "$OUTDIR/pytest-nvshmem-bellman_ford-np$np.log"
  done
fi
if [[ $parts == *,e2e,* ]]; then
  base=()
  [ -d .cache/base/distgraph ] && base=(--baseline .cache/base)
  timeout "${T_E2E:-300}" "$PY" benchmarks/sssp_e2e.py --outdir "$OUTDIR/e2e" "${base[@]}" "$@" \
    > "$OUTDIR/e2e.log" 2>&1
  echo "e2e exit status $?"
  tail -12 "$OUTDIR/e2e.log" | cut -c1-400
fi
