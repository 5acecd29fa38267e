#!/usr/bin/env bash
# Download the wheels the GPU test machine lacks into .whl/ (git-ignored; name it in
# the device tool's `carry`). The machine has no registry, Python 3.12, x86-64.
#   bash benchmarks/fetch_device_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl nvshmem4py-cu13==0.4.1
# networkit: the closeness benchmark's peer row (gpu_closeness.py) on the device host
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl networkit==11.2.2
# pure-Python: the multi-PE tests run under pytest-mpi
python3 -m pip download -q --no-deps -d .whl pytest-mpi==0.6
ls -l .whl
