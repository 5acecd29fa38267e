#!/usr/bin/env bash
# One device call for the GPU CSR build of generated graphs (issue 4: kron/urand at scales
# 26-27 could not be prepared on the host in one call): the tests of the key-sort builder
# (tests/test_gen_device.py, its gpu tests compare CuPy's result with the host builder's)
# then benchmarks/gen_device.py (CASES, in order: kron:24 with both builders, hashes compared,
# then the gpu builder at scale 26, then urand:24 with both), all within LIMIT seconds
# (default 150; a case the budget cuts is recorded as such). Results in OUTDIR: env.json,
# timeline.txt, tests.log, gen_device.json, bench.log.
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) bash benchmarks/device_gen.sh OUTDIR [LIMIT]
#
# CASES= (family:scale:builder,...; builders gpu, cpu) chooses the cases.
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
CASES=${CASES:-kron:24:gpu,kron:24:cpu,kron:26:gpu,urand:26:gpu,urand:24:gpu,urand:24:cpu}
timeout "$left" "$PY" benchmarks/gen_device.py "$OUTDIR" --cases "$CASES" --check-max-scale 24 \
  --budget $(( left - 2 )) > "$OUTDIR/bench.log" 2>&1
echo "bench rc $? at $(el) s" >> "$OUTDIR/timeline.txt"
exit 0
