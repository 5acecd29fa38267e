"""Every kernel in kernels/*.cu compiles for sm_90 with nvcc (no GPU needed).

CI has nvcc but no GPU, so this is what stops a kernel that no longer compiles from
landing. A kernel that uses device-side NVSHMEM says so with a line
``// distgraph-compile: nvshmem`` near its top; it is compiled with ``-rdc=true``
against the NVSHMEM headers of the ``nvidia-nvshmem-cu13`` wheel (skipped when that
wheel is not installed). Kernels are compiled the way the loader compiles them
(``distgraph.backends.gpu.loader`` when present): same defines, same standard.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = sorted((Path(__file__).resolve().parent.parent / "kernels").glob("*.cu"))
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def _nvshmem_include():
    try:
        import nvidia.nvshmem as m  # from the nvidia-nvshmem-cu13 wheel

        inc = Path(list(m.__path__)[0]) / "include"
        return inc if inc.is_dir() else None
    except Exception:
        return None


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("path", KERNELS, ids=[p.name for p in KERNELS])
def test_kernel_compiles_sm90(path, tmp_path):
    head = path.read_text()[:4000]
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-c", str(path), "-o", str(tmp_path / "k.o"),
           "-I", str(path.parent)]
    if "distgraph-compile: nvshmem" in head:
        inc = _nvshmem_include()
        if inc is None:
            pytest.skip("NVSHMEM headers not installed (pip install nvidia-nvshmem-cu13)")
        cmd[1:1] = ["-rdc=true", "-I", str(inc)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"nvcc failed on {path.name}:\n{r.stderr[-4000:]}"


def test_there_are_kernels_or_none_expected():
    # Guards against the glob silently finding nothing after a move of kernels/.
    assert (Path(__file__).resolve().parent.parent / "kernels").is_dir()
