#!/usr/bin/env bash
# Per-level profiles of the two kernels whose slowdowns are not explained yet, in one device
# call (written in session 4, not yet run), results in OUTDIR:
# - BFS (kernels/bvss_bfs.cu built with DG_BFS_LEVEL_NS): urand's GTEPS fall with scale
#   (about 290 at scale 21, 178 at 24) while Kronecker's rise -> OUTDIR/gpu_bfs_levels.json;
# - MS-BFS block schedule (kernels/msbfs.cu built with DG_MS_PROFILE): road-NY's 7.4 s, about
#   2.8 ms per level per block, and cond-mat-2005 below the BLEST rate
#   -> OUTDIR/gpu_closeness_block_profile.json;
# - closeness() on road-NY with DISTGRAPH_MSBFS_BATCH_ORDER=ball (compact source groups, opt-in
#   on GPUs) -> OUTDIR/ball/gpu_closeness.json (its gpu_end_to_end row).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/profile_levels.sh OUTDIR
# BFS_GRAPHS / MS_GRAPHS override the graphs; with two GPUs the two run side by side.
set -uo pipefail
OUTDIR=${1:?usage: profile_levels.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$ngpu" -ge 1 ] || ngpu=1
CUDA_VISIBLE_DEVICES=0 timeout "${T_BFS:-300}" "$PY" benchmarks/gpu_bfs.py --level-profile \
  "${BFS_GRAPHS:-urand:22+none,urand:24+none,kron:24}" --graphs '' --outdir "$OUTDIR" --name gpu_bfs_levels \
  > "$OUTDIR/gpu_bfs_levels.log" 2>&1 &
pb=$!
[ "$ngpu" -ge 2 ] || wait $pb
CUDA_VISIBLE_DEVICES=$(( ngpu >= 2 ? 1 : 0 )) timeout "${T_MS:-200}" "$PY" benchmarks/gpu_closeness.py \
  --block-profile "${MS_GRAPHS:-road-NY,cond-mat-2005,email-Enron}" --outdir "$OUTDIR" \
  > "$OUTDIR/gpu_closeness_block_profile.log" 2>&1
wait $pb
# closeness() on road-NY with compact source groups (opt-in on GPUs; the end-to-end row goes
# through closeness(), whose input-order time was 7.64 s in gpu_closeness_kappa_session4.json)
mkdir -p "$OUTDIR/ball"
DISTGRAPH_MSBFS_BATCH_ORDER=ball timeout "${T_BALL:-120}" "$PY" benchmarks/gpu_closeness.py --outdir "$OUTDIR/ball" \
  --graphs "${BALL_GRAPHS:-road-NY}" --time-limit 60 --cpu-graphs '' --naive-graphs '' --pes '' \
  > "$OUTDIR/ball/gpu_closeness.log" 2>&1
exit 0
