#!/usr/bin/env bash
# Block size x batch order of the MS-BFS block schedule (closeness of every vertex) in one device
# call: for each graph, GpuMSBFS(block_threads=256, 512, 1024) with the sources in vertex order
# and in compact BFS balls of 256 (msbfs.ball_sources, closeness() with
# DISTGRAPH_MSBFS_BATCH_ORDER=ball).  road-NY's 7.4 s are ~580 levels of 2.4 ms per block with
# 8 warps per batch and 16 warps per SM (gpu_closeness_block_profile.json); 1024 threads cap the
# kernel at 64 registers (32 warps per SM), 512 keeps 96 (16 warps per SM, in one block; ptxas of
# nvcc 13.0 for sm_90, the rows record the device build's registers).
# f4 (flush4) flushes a lane's four rows of a VSS together: the flush of stage 1 as built by
# default waits for up to 12 dependent device-memory round trips per VSS (each row's Vn load,
# then its dirty-bit load and atomic, row after row; PTX of nvcc 13.0), flush4 for 3.
# Each order's first row checks its first batch against the CPU backend; every row's totals
# must equal the first row's bit for bit.  Written after every row, so a cut run keeps its rows:
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/msbfs_block_sweep.sh OUTDIR
#     -> OUTDIR/gpu_closeness_block_sweep.json, OUTDIR/gpu_closeness_block_sweep.log
#
# Env: SWEEP_GRAPHS (road-NY,email-Enron,cond-mat-2005), SWEEP_VARIANTS (b1024 = the defaults, then stage 1 + 2 rows:
# b1024+nopull,b512+nopull,b256+nopull,f4+nopull; any
# --variants labels, e.g. b512+mb2,mb4 for 32 warps per SM in blocks of 512 / 256), SWEEP_ORDERS
# (input,ball), T_SWEEP (seconds, 200); TESTS=1 first runs tests/test_gpu_msbfs_block_threads.py
# (the larger blocks against the CPU backend, T_TESTS seconds, 240; OUTDIR/pytest-block-threads.log),
# TEST_FILES replaces that file list (e.g. tests/test_gpu_msbfs_pull.py); T_SWEEP=0 skips the sweep.
set -uo pipefail
OUTDIR=${1:?usage: msbfs_block_sweep.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
T0=$(date +%s)
if [ "${TESTS:-0}" = 1 ]; then
  read -r -a FILES <<< "${TEST_FILES:-tests/test_gpu_msbfs_block_threads.py}"
  timeout "${T_TESTS:-240}" "$PY" -m pytest -q -rfs --junitxml="$OUTDIR/junit-block-threads.xml" \
    "${FILES[@]}" > "$OUTDIR/pytest-block-threads.log" 2>&1
  echo "tests rc=$? after $(( $(date +%s) - T0 )) s: $(tail -n 1 "$OUTDIR/pytest-block-threads.log")"
fi
[ "${T_SWEEP:-200}" = 0 ] && exit 0
timeout "${T_SWEEP:-200}" "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR" \
  --block-sweep "${SWEEP_GRAPHS:-road-NY,email-Enron,cond-mat-2005}" \
  --sweep-variants "${SWEEP_VARIANTS:-b1024,b1024+nopull,b512+nopull,b256+nopull,f4+nopull}" --sweep-orders "${SWEEP_ORDERS:-input,ball}" \
  > "$OUTDIR/gpu_closeness_block_sweep.log" 2>&1
echo "sweep rc=$? after $(( $(date +%s) - T0 )) s"
cut -c1-240 "$OUTDIR/gpu_closeness_block_sweep.log" | tail -n 20
exit 0
