#!/usr/bin/env bash
# The profile wave's device check in one call, as session 13 ran it (benchmarks/results/session13_x2/):
#   OUTDIR/sweep/  benchmarks/msbfs_block_sweep.sh on road-NY, sources in balls, leaves folded: the
#                  bit kernel first, then the wave rows (totals equal bit for bit, timelines)
#   OUTDIR/tests/  tests/test_gpu_msbfs_wave.py + test_gpu_closeness_fold.py
#   OUTDIR/e2e/    benchmarks/closeness_wave_e2e.py (closeness() with the wave "auto" and "off")
# With two GPUs the sweep runs on GPU 0 (host cores 0-15) beside the tests and e2e on GPU 1
# (cores 16-31); with one GPU one after the other.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/wave_check.sh OUTDIR
#   (device tool: carry .whl and .cache/k2data; end with tar czf $OUT/r.tgz -C OUTDIR .)
#
# Env: WAVE_VARIANTS (default fold,wave+fold,wave+fold+r1,wave+fold+r2: see gpu_closeness.py
# --sweep-variants), WAVE_GRAPHS (road-NY), T_SWEEP (420), T_TESTS (400), T_E2E (240),
# WAVE_PARTS (sweep,tests,e2e).
set -uo pipefail
OUTDIR=${1:?usage: wave_check.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
[ -d .cache/k2data ] && export DISTGRAPH_DATA=${DISTGRAPH_DATA:-$PWD/.cache/k2data}
parts=",${WAVE_PARTS:-sweep,tests,e2e},"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$ngpu" -ge 1 ] || ngpu=1
g1=$(( ngpu > 1 ? 1 : 0 ))
c0="0-$(( $(nproc) / (ngpu > 1 ? 2 : 1) - 1 ))"
c1=$([ "$ngpu" -gt 1 ] && echo "$(( $(nproc) / 2 ))-$(( $(nproc) - 1 ))" || echo "$c0")

sweep() {
  CUDA_VISIBLE_DEVICES=0 taskset -c "$c0" env SWEEP_GRAPHS="${WAVE_GRAPHS:-road-NY}" SWEEP_ORDERS=ball \
    SWEEP_VARIANTS="${WAVE_VARIANTS:-fold,wave+fold,wave+fold+r1,wave+fold+r2}" T_SWEEP="${T_SWEEP:-420}" \
    bash benchmarks/msbfs_block_sweep.sh "$OUTDIR/sweep" > "$OUTDIR/sweep.out" 2>&1
}

tests_e2e() {
  if [[ $parts == *,tests,* ]]; then
    CUDA_VISIBLE_DEVICES=$g1 taskset -c "$c1" env TESTS=1 T_SWEEP=0 T_TESTS="${T_TESTS:-400}" \
      TEST_FILES="tests/test_gpu_msbfs_wave.py tests/test_gpu_closeness_fold.py" \
      bash benchmarks/msbfs_block_sweep.sh "$OUTDIR/tests" > "$OUTDIR/tests.out" 2>&1
  fi
  if [[ $parts == *,e2e,* ]]; then
    (
      export CUDA_VISIBLE_DEVICES=$g1
      . benchmarks/gpu_env.sh "$OUTDIR/e2e" || exit 1
      taskset -c "$c1" timeout "${T_E2E:-240}" "$PY" benchmarks/closeness_wave_e2e.py --outdir "$OUTDIR/e2e" \
        --profile > "$OUTDIR/e2e/log" 2>&1
      echo "e2e rc=$?"
    )
  fi
}

if [[ $parts == *,sweep,* ]]; then
  if [ "$ngpu" -gt 1 ]; then
    sweep &
    sleep 10   # the first part's gpu_env.sh installs the carried wheels before the second reads them
    tests_e2e
    wait
  else
    sweep
    tests_e2e
  fi
else
  tests_e2e
fi
for f in "$OUTDIR/sweep.out" "$OUTDIR/tests.out"; do [ -f "$f" ] && cut -c1-160 "$f"; done
[ -f "$OUTDIR/tests/pytest-block-threads.log" ] && tail -n 3 "$OUTDIR/tests/pytest-block-threads.log"
[ -f "$OUTDIR/e2e/log" ] && cut -c1-200 "$OUTDIR/e2e/log" | tail -n 8
exit 0
