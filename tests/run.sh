#!/usr/bin/env bash
# The test command of README: the whole suite on 1 rank, then the MPI tests on 2 and 4.
# Usage: bash tests/run.sh [extra pytest args]
# Uses the mpiexec and python of the active environment. Each mpiexec stage has a
# time limit (DISTGRAPH_TEST_TIMEOUT seconds, default 900), so a hung rank fails the
# run instead of stalling it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
MPIEXEC=${MPIEXEC:-mpiexec}
LIMIT=${DISTGRAPH_TEST_TIMEOUT:-900}
export OMPI_MCA_rmaps_base_oversubscribe=1 PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} NUMBA_NUM_THREADS=${NUMBA_NUM_THREADS:-1}
export DISTGRAPH_BACKEND=${DISTGRAPH_BACKEND:-auto}
status=0
for np in 1 2 4; do
  if [ "$np" = 1 ]; then sel=(--with-mpi --durations=15); else sel=(--only-mpi --durations=5); fi
  echo "=== mpiexec -n $np pytest ${sel[*]} ==="
  timeout -k 30 "$LIMIT" "$MPIEXEC" -n "$np" "$PY" tests/mpi_pytest.py "${sel[@]}" tests "$@" || status=$?
  [ "$status" = 0 ] || { echo "tests failed on $np ranks (exit $status)"; exit "$status"; }
done
echo "all stages passed on 1, 2 and 4 ranks"
