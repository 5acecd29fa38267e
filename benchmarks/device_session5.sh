#!/usr/bin/env bash
# Session 5's BFS call on the two-GPU machine (nvidia-h200-x2): the GPU BFS tests after the
# edge test that guards Eq. 6 (gpu_bfs_alpha), its per-level A/B at scale 24, and the
# largest Kronecker and urand graphs that keep under 2^31 arcs (scale 26, one scale short
# of the paper's Table 2 graphs), each prepared in the background from the start.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_session5.sh OUTDIR
#
# GPU 0 (cores 0-15): tests/test_gpu_bfs.py, then the level profile of urand:24 and kron:24
#   (switch, switch-eq6 and alpha 1/4/8; OUTDIR/a/gpu_bfs_levels24.json), then kron:26
#   (none and Jaccard orderings; OUTDIR/a/gpu_bfs_scale26_kron.json with its level profile).
# GPU 1 (cores 16-31): urand:26 (OUTDIR/b/gpu_bfs_scale26_urand.json, level profile with
#   alpha 1/4/8 first).
set -uo pipefail
OUTDIR=${1:?usage: device_session5.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
mkdir -p "$OUTDIR/a" "$OUTDIR/b"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-560}
(
  export CUDA_VISIBLE_DEVICES=0 NUMBA_NUM_THREADS=16
  W=/tmp/s5g0; rm -rf "$W"; mkdir -p "$W"
  nice -n 15 taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --prep kron:26+w16384 --workdir "$W" \
    > "$OUTDIR/a/bfs_prep.log" 2>&1 &
  timeout 200 taskset -c 0-15 "$PY" -m pytest -q -rs --junitxml="$OUTDIR/a/junit-test_gpu_bfs.xml" \
    tests/test_gpu_bfs.py > "$OUTDIR/a/pytest-test_gpu_bfs.log" 2>&1
  echo "bfs tests rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
  timeout 150 taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --level-profile urand:24+none,kron:24 --alphas 1,4,8 \
    --graphs '' --outdir "$OUTDIR/a" --name gpu_bfs_levels24 > "$OUTDIR/a/gpu_bfs_levels24.log" 2>&1
  echo "levels24 rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
  left=$(( LIMIT - $(el) ))
  timeout "$left" taskset -c 0-15 "$PY" benchmarks/gpu_bfs.py --ab '' --level-profile kron:26+w16384 --alphas 1,4 \
    --graphs kron:26+w16384 --workdir "$W" --quiet-prep --outdir "$OUTDIR/a" --name gpu_bfs_scale26_kron \
    --max-seconds $(( left - 15 )) > "$OUTDIR/a/gpu_bfs_scale26_kron.log" 2>&1
  echo "kron26 rc $? at $(el) s" >> "$OUTDIR/a/timeline.txt"
  if [ -s "$W/prep.pgid" ]; then kill -CONT -- "-$(cat "$W/prep.pgid")" 2>/dev/null; kill -- "-$(cat "$W/prep.pgid")" 2>/dev/null; fi
) &
pa=$!
(
  export CUDA_VISIBLE_DEVICES=1 NUMBA_NUM_THREADS=16
  W=/tmp/s5g1; rm -rf "$W"; mkdir -p "$W"
  nice -n 15 taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --prep urand:26+none --workdir "$W" \
    > "$OUTDIR/b/bfs_prep.log" 2>&1 &
  left=$(( LIMIT - $(el) ))
  timeout "$left" taskset -c 16-31 "$PY" benchmarks/gpu_bfs.py --ab '' --level-profile urand:26+none --alphas 1,4,8 \
    --graphs urand:26+none --workdir "$W" --quiet-prep --outdir "$OUTDIR/b" --name gpu_bfs_scale26_urand \
    --max-seconds $(( left - 15 )) > "$OUTDIR/b/gpu_bfs_scale26_urand.log" 2>&1
  echo "urand26 rc $? at $(el) s" >> "$OUTDIR/b/timeline.txt"
  if [ -s "$W/prep.pgid" ]; then kill -CONT -- "-$(cat "$W/prep.pgid")" 2>/dev/null; kill -- "-$(cat "$W/prep.pgid")" 2>/dev/null; fi
) &
pb=$!
wait $pa $pb
exit 0
