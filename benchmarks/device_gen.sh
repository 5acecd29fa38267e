#!/usr/bin/env bash
# One device call for the GPU CSR build of generated graphs (issue 4: kron/urand at scales
# 26-27 could not be prepared on the host in one call): the tests of the key-sort builder
# (tests/test_gen_device.py, its gpu tests compare CuPy's result with the host builder's)
# then benchmarks/gen_device.py (gpu builder at SCALES, host builder up to scale 24, hashes
# compared at 24), all within LIMIT seconds (default 150). Results in OUTDIR: env.json,
# tests.log, gen_device.json, bench.log.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_gen.sh OUTDIR [LIMIT]
#
# SCALES= (default 24,26) and FAMILIES= (default kron,urand) choose the cases.
set -uo pipefail
OUTDIR=${1:?usage: device_gen.sh OUTDIR [LIMIT]}
LIMIT=${2:-150}
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
cd "$(dirname "$0")/.." || exit 1
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
timeout 45 "$PY" -m pytest -q -p no:cacheprovider tests/test_gen_device.py > "$OUTDIR/tests.log" 2>&1
echo "tests rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
left=$(( LIMIT - $(el) - 3 ))
timeout "$left" "$PY" benchmarks/gen_device.py "$OUTDIR" --scales "${SCALES:-24,26}" \
  --families "${FAMILIES:-kron,urand}" --cpu-max-scale 24 --check-max-scale 24 --budget $(( left - 2 )) \
  > "$OUTDIR/bench.log" 2>&1
echo "bench rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
exit 0
