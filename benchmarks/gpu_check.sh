#!/usr/bin/env bash
# Run the GPU tests and the GPU benchmarks on the H200 test machine and write the
# results to OUTDIR (on the device tool: $OUT).
#
#   bash benchmarks/gpu_check.sh OUTDIR [NAME ...]
#
# NAME selects parts (e.g. "bfs", "queue", "k2tree"): tests/test_gpu_NAME*.py,
# tests/test_nvshmem_NAME*.py (run on 1, 2 and 4 PEs) and benchmarks/gpu_NAME*.py.
# Without NAME everything runs; GPU_CHECK_BENCH=0 runs the tests only. Needs the wheels of benchmarks/fetch_device_wheels.sh
# in .whl/ (nvshmem4py-cu13, pytest-mpi; carried). The device copy has no .git: pass
# the commit as DISTGRAPH_COMMIT=$(git rev-parse HEAD) so the results record it.
# Writes OUTDIR/pytest-*.log, OUTDIR/junit-*.xml, OUTDIR/*.json from the benchmarks,
# and OUTDIR/env.json (commit, device, date).
# The device tool brings back at most 8 files, so on the device run e.g.
#   bash benchmarks/gpu_check.sh /tmp/res bfs; tar czf $OUT/res.tar.gz -C /tmp/res .
# and unpack the results here into benchmarks/results/<name>/.
# T_TEST (default 600): seconds one pytest run of GPU tests may take (a hung test file must
# not eat the device time). GPU_CHECK_PARALLEL=1: one pytest process per GPU test file, all at once, beside the NVSHMEM
# runs (one GPU is shared: most of a test file's time is compiling kernels and host work, so
# the whole check takes about the longest file instead of the sum); logs per file. With several
# GPUs the files are dealt over them (CUDA_VISIBLE_DEVICES); the NVSHMEM runs see every GPU.
set -uo pipefail
OUTDIR=${1:?usage: gpu_check.sh OUTDIR [NAME ...]}; shift || true
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
names=("$@"); [ ${#names[@]} -eq 0 ] && names=("")
status=0
for name in "${names[@]}"; do
  tag=${name:-all}
  gtests=$(ls tests/test_gpu_${name}*.py 2>/dev/null)
  pids=()
  if [ -n "$gtests" ] && [ "${GPU_CHECK_PARALLEL:-0}" = 1 ]; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$ngpu" -ge 1 ] || ngpu=1
    i=0
    for f in $gtests; do
      t=$(basename "$f" .py)
      CUDA_VISIBLE_DEVICES=$((i % ngpu)) timeout -k 10 "${T_TEST:-600}" "$PY" -m pytest -q -rs --junitxml="$OUTDIR/junit-$t.xml" "$f" \
        > "$OUTDIR/pytest-$t.log" 2>&1 &
      pids+=($!); i=$((i + 1))
    done
    gtests=""
  fi
  if [ -n "$gtests" ]; then
    timeout -k 10 "${T_TEST:-600}" "$PY" -m pytest -q -rs --junitxml="$OUTDIR/junit-gpu-$tag.xml" $gtests 2>&1 | tee "$OUTDIR/pytest-gpu-$tag.log" | tail -25
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  fi
  ntests=$(ls tests/test_nvshmem_${name}*.py 2>/dev/null)
  if [ -n "$ntests" ] && ! "$PY" -c "import pytest_mpi" 2>/dev/null; then
    echo "pytest-mpi missing on this machine: run benchmarks/fetch_device_wheels.sh here and carry .whl" | tee "$OUTDIR/pytest-nvshmem-$tag-missing.log"
    status=1; ntests=""
  fi
  if [ -n "$ntests" ]; then
    for np in 1 2 4; do
      timeout 300 "$MPIRUN" "${MPIFLAGS[@]}" -n $np "$PY" tests/mpi_pytest.py -q -rs --with-mpi $ntests 2>&1 | tee "$OUTDIR/pytest-nvshmem-$tag-np$np.log" | tail -8
      [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
  fi
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for f in "$OUTDIR"/pytest-test_gpu_*.log; do
    [ -e "$f" ] && echo "$(basename "$f"): $(tail -1 "$f")"
  done
  [ "${GPU_CHECK_BENCH:-1}" = 0 ] && continue   # tests only
  for b in benchmarks/gpu_"${name}"*.py; do
    [ -e "$b" ] || continue
    echo "=== $b ==="
    "$PY" "$b" --outdir "$OUTDIR" 2>&1 | tee "$OUTDIR/$(basename "$b" .py).log" | tail -30
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
done
exit $status
