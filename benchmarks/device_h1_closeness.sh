#!/usr/bin/env bash
# Stage 1's sparse path of the GPU MS-BFS (GpuMSBFS(sparse=...), DG_MS_SPARSE in kernels/msbfs.cu:
# VSSs of at most 32 slices run one slice per lane on CUDA cores) in one device call:
#   1. closeness of every vertex, block schedule, blocks of 1024 threads: the default build
#      (b1024+off, the reference row, its first batch checked against the CPU backend) against
#      the sparse path alone (+on), with the dirty bits in shared memory (+sdb) and with the
#      software-pipelined stage 1 (+pf: in blocks of 512, 114 registers and no spills, and of
#      1024, where the 64-register cap spills 236 bytes, ptxas of nvcc 13.0); road-NY in
#      ball order, cond-mat-2005 and email-Enron in input order (what closeness() picks on
#      each); every row's totals must equal the reference row's bit for bit
#      (total_same_as_first_row); T_BENCH seconds (85).
#   2. tests/test_gpu_msbfs_sparse.py: the path forced on, every schedule, against the CPU
#      backend (road-like grids, n not a multiple of 8/128, Kronecker, directed, disconnected,
#      minnesota, power, email-Enron, cond-mat-2005, road-NY's first batches); T_TESTS (60).
# The host-side estimate (no GPU) is benchmarks/results/msbfs_sparse_share.json.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_h1_closeness.sh OUTDIR
#     -> OUTDIR/gpu_closeness_sparse.json, OUTDIR/gpu_closeness_sparse.log (+ OUTDIR/sparse_<graph>/),
#        OUTDIR/pytest-sparse.log, OUTDIR/junit-sparse.xml, OUTDIR/env.json
#
# Env: H1_GRAPHS (road-NY:ball,cond-mat-2005:input,email-Enron:input), H1_VARIANTS
# (b1024+off,b1024+on,b1024+on+sdb,b512+on+sdb+pf,b1024+on+sdb+pf), T_BENCH=0 skips the
# benchmark, T_TESTS=0 the tests.
set -uo pipefail
OUTDIR=${1:?usage: device_h1_closeness.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
T0=$(date +%s)
if [ "${T_BENCH:-85}" != 0 ]; then
  timeout "${T_BENCH:-85}" "$PY" benchmarks/msbfs_sparse_bench.py "$OUTDIR" \
    "${H1_GRAPHS:-road-NY:ball,cond-mat-2005:input,email-Enron:input}" \
    "${H1_VARIANTS:-b1024+off,b1024+on,b1024+on+sdb,b512+on+sdb+pf,b1024+on+sdb+pf}" \
    > "$OUTDIR/gpu_closeness_sparse.log" 2>&1
  echo "bench rc=$? after $(( $(date +%s) - T0 )) s"
  grep -o '^[^ ]* [^ ]* {"kappa[^}]*' "$OUTDIR/gpu_closeness_sparse.log" | \
    sed -E 's/"(kappa|schedule|slots|min_blocks|block_launches|batch_order_s|preprocess_s|sources_run|sources_total|extrapolated|edge_visits_per_s_per_gpu|device_bytes)": [^,]*, //g' | cut -c1-400
fi
if [ "${T_TESTS:-60}" != 0 ]; then
  timeout "${T_TESTS:-60}" "$PY" -m pytest -q -rfs -p no:cacheprovider --junitxml="$OUTDIR/junit-sparse.xml" \
    tests/test_gpu_msbfs_sparse.py > "$OUTDIR/pytest-sparse.log" 2>&1
  echo "tests rc=$? after $(( $(date +%s) - T0 )) s: $(tail -n 1 "$OUTDIR/pytest-sparse.log")"
fi
exit 0
