#!/usr/bin/env bash
# Bellman-Ford from many sources on the GPU machine (issue 7), one call:
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_sssp_many.sh OUTDIR
#   1. tests/test_gpu_bellman_ford.py, the whole file (or -k MANY_GPU_K; MANY_TEST_S seconds at most,
#      420) -> OUTDIR/gt/pytest-gpu-bf.log;
#   2. tests/test_nvshmem_bellman_ford.py -k MANY_TEST_K (default "many_sources or distributed_rounds")
#      on 2 and 4 PEs (MANY_NVSHMEM=0: not) (several PEs share a GPU when there are fewer) -> OUTDIR/gt/pytest-nvshmem-bf-np{2,4}.log;
#   3. benchmarks/sssp_many.py (MANY_GRAPHS, MANY_WEIGHTS, MANY_ARGS) -> OUTDIR/sssp_many.json
#      (MANY_TESTS=0 skips 1-2, MANY_BENCH=0 skips 3);
#      with MANY_BASE=TREE (an older checkout) also its "many" rows -> OUTDIR/sssp_many_base.json.
# Needs the wheels of benchmarks/fetch_device_wheels.sh (.whl/) and, for the tests on the shared
# graphs, .cache/k2data (carry both).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUTDIR=${1:?usage: device_sssp_many.sh OUTDIR}
. benchmarks/gpu_env.sh "$OUTDIR/gt" || exit 1
K=${MANY_TEST_K:-"many_sources or distributed_rounds"}
GRAPHS=${MANY_GRAPHS:-kron:20=512,kron:22=300,road-FLA=64}
WEIGHTS=${MANY_WEIGHTS:-uniform,shifted}
nvidia-smi > "$OUTDIR/nvidia-smi.txt" 2>&1
if [ "${MANY_TESTS:-1}" = 1 ]; then
  timeout "${MANY_TEST_S:-420}" "$PY" -m pytest -q -rs tests/test_gpu_bellman_ford.py ${MANY_GPU_K:+-k "$MANY_GPU_K"} \
    > "$OUTDIR/gt/pytest-gpu-bf.log" 2>&1
  echo "gpu tests: $(tail -1 "$OUTDIR/gt/pytest-gpu-bf.log")"
  for n in 2 4; do
    [ "${MANY_NVSHMEM:-1}" = 1 ] || break
    timeout 300 "$MPIRUN" "${MPIFLAGS[@]}" -n "$n" "$PY" tests/mpi_pytest.py -q -rfs --with-mpi \
      tests/test_nvshmem_bellman_ford.py -k "$K" > "$OUTDIR/gt/pytest-nvshmem-bf-np$n.log" 2>&1
    echo "nvshmem tests on $n PEs: $(tail -1 "$OUTDIR/gt/pytest-nvshmem-bf-np$n.log")"
  done
fi
if [ "${MANY_BENCH:-1}" = 1 ]; then
  # shellcheck disable=SC2086
  timeout "${MANY_BENCH_S:-900}" "$PY" benchmarks/sssp_many.py --outdir "$OUTDIR" --graphs "$GRAPHS" --weights "$WEIGHTS" \
    ${MANY_ARGS:-} > "$OUTDIR/sssp_many.out" 2>&1
  echo "benchmark: $(tail -1 "$OUTDIR/sssp_many.out")"
fi
if [ -n "${MANY_BASE:-}" ]; then
  # shellcheck disable=SC2086
  timeout "${MANY_BENCH_S:-900}" "$PY" benchmarks/sssp_many.py --outdir "$OUTDIR" --graphs "$GRAPHS" \
    --weights "$WEIGHTS" --rows many --tree "$MANY_BASE" --label base ${MANY_ARGS:-} > "$OUTDIR/sssp_many_base.out" 2>&1
  echo "baseline: $(tail -1 "$OUTDIR/sssp_many_base.out")"
fi
