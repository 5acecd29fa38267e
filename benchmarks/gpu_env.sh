# shellcheck shell=bash
# Sourced (not run) by the device scripts, from the repository root:
#   . benchmarks/gpu_env.sh OUTDIR || exit 1
# Sets what every GPU run needs (NVLink multicast off, one node, symmetric heap), installs the
# carried wheels of benchmarks/fetch_device_wheels.sh (.whl/: nvshmem4py-cu13, pytest-mpi),
# defines PY, MPIRUN and MPIFLAGS (Open MPI flags that pass this environment and every
# DISTGRAPH_* variable to the ranks) and writes OUTDIR/env.json (commit, device, date). The device
# copy has no .git: pass DISTGRAPH_COMMIT=$(git rev-parse HEAD) so the results record it.
export PYTHONUNBUFFERED=1 NVSHMEM_DISABLE_NVLS=1 NVSHMEM_REMOTE_TRANSPORT=none
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-4G}
# the carried data (.cache/k2data): without it the tests on the shared graphs skip (session 16,
# calls 6-7: 8 of tests/test_gpu_bellman_ford.py's tests skipped so)
[ -d .cache/k2data ] && export DISTGRAPH_DATA=${DISTGRAPH_DATA:-$PWD/.cache/k2data}
PY=$(command -v python3)
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
MPIRUN=${MPIRUN:-/usr/bin/mpirun}
MPIFLAGS=(--allow-run-as-root --oversubscribe -x PYTHONPATH -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_REMOTE_TRANSPORT
          -x NVSHMEM_SYMMETRIC_SIZE -x PYTHONUNBUFFERED)
for _v in $(env | grep -o '^DISTGRAPH_[A-Z0-9_]*'); do MPIFLAGS+=(-x "$_v"); done
mkdir -p "$1"
"$PY" - "$1/env.json" <<'PYEOF'
import datetime, json, os, platform, subprocess, sys
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e: return str(e)
json.dump({"commit": os.environ.get("DISTGRAPH_COMMIT") or sh("git rev-parse HEAD 2>/dev/null") or "unknown",
           # the device copy's .git is the session's base, not this tree: dirty is unknown there
           "dirty": None if os.environ.get("DISTGRAPH_COMMIT") else bool(sh("git status --porcelain 2>/dev/null")),
           "device": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "python": platform.python_version()}, open(sys.argv[1], "w"), indent=1)
PYEOF
