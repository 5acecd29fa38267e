#!/usr/bin/env bash
# BLEST Table 2's GAP graphs at full size: single-source GPU BFS on urand:27 and kron:27 (2**27
# vertices, 4.3e9 / 4.2e9 arcs after symmetrizing: over 2**31, issue 4), one device call,
# results in OUTDIR. Each graph runs in one process on its own GPU and its share of the cores:
# generated with the CSR built on the GPU (DISTGRAPH_GEN_DEVICE=gpu), preprocessed in memory
# (--no-cache: no npz of ~25 GB per ordering, no checksum of the 17 GB CSR), then timed by
# benchmarks/gpu_bfs.py: 64 GAP sources, variants lazy, switch, switch-eq6 and the auto choice,
# the parents pass. No CuPy SpMV row (cupyx holds int32 indices: gpu_bfs.py records why) and
# no scipy row; the CPU backend runs CPU_SOURCES (default 1) sources, whose levels are the
# reference every variant must match. The JSON is rewritten after each phase, so a process cut
# by the time limit leaves what it measured (in_progress).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_gap27.sh OUTDIR [GRAPH ...]
#
# GRAPH: urand:27+none (reorder none, the default) or kron:27+auto (Jaccard alone); at most one
# per GPU: nvidia-h200 takes one, nvidia-h200-x2 both side by side (16 cores and 128 GiB each).
# Outputs: OUTDIR/gpu_bfs_<graph>.json and .log, OUTDIR/timeline.txt, OUTDIR/mem.txt (every 5 s:
# seconds, host MiB used and available, MiB used on each GPU), OUTDIR/env.json.
set -uo pipefail
OUTDIR=${1:?usage: device_gap27.sh OUTDIR [urand:27+none] [kron:27+auto]}
shift
GRAPHS=("$@")
[ "${#GRAPHS[@]}" -eq 0 ] && GRAPHS=("urand:27+none")
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
export DISTGRAPH_GEN_DEVICE=gpu
LIMIT=${LIMIT:-550}
CPU_SOURCES=${CPU_SOURCES:-1}
NGPU=$(nvidia-smi -L | grep -c '^GPU')
NCPU=$(nproc)
if [ "${#GRAPHS[@]}" -gt "$NGPU" ]; then
  echo "device_gap27.sh: ${#GRAPHS[@]} graphs but $NGPU GPU(s): one graph per GPU" | tee "$OUTDIR/timeline.txt" >&2
  exit 2
fi
PER=$(( NCPU / ${#GRAPHS[@]} ))
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(
  while :; do
    echo "$(el) $(free -m | awk '/^Mem:/ {print $3, $7}') $(nvidia-smi --query-gpu=memory.used \
      --format=csv,noheader,nounits | tr '\n' ' ')"
    sleep 5
  done
) > "$OUTDIR/mem.txt" 2>&1 &
sampler=$!
pids=()
i=0
for spec in "${GRAPHS[@]}"; do
  tag=${spec%%+*}
  tag=${tag/:/}
  lo=$(( i * PER )); hi=$(( lo + PER - 1 ))
  (
    export CUDA_VISIBLE_DEVICES=$i NUMBA_NUM_THREADS=$PER
    echo "$spec on GPU $i, cores $lo-$hi, start at $(el) s" >> "$OUTDIR/timeline.txt"
    timeout "$LIMIT" taskset -c "$lo-$hi" "$PY" benchmarks/gpu_bfs.py --graphs "$spec" --outdir "$OUTDIR" \
      --name "gpu_bfs_$tag" --sources 64 --variants lazy,switch,switch-eq6 --skip-baselines scipy \
      --cpu-sources "$CPU_SOURCES" --no-cache --max-seconds "$LIMIT" > "$OUTDIR/gpu_bfs_$tag.log" 2>&1
    echo "$spec rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
  ) &
  pids+=("$!")
  i=$(( i + 1 ))
done
wait "${pids[@]}"
kill "$sampler" 2>/dev/null
exit 0
