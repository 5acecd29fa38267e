"""Every kernel in kernels/*.cu compiles for sm_90 with nvcc (no GPU needed).

CI has nvcc but no GPU, so this is what stops a kernel that no longer compiles from
landing. A kernel that uses device-side NVSHMEM says so with a line
``// distgraph-compile: nvshmem`` near its top; it is compiled with ``-rdc=true``
against the NVSHMEM headers, found in order: ``$DISTGRAPH_NVSHMEM_INCLUDE``, the
installed ``nvidia-nvshmem-cu13`` package, or the ``include/`` folder unpacked once from
that wheel (downloaded with pip, 180 MB, into ``~/.cache/distgraph/nvshmem-include``;
only the 2 MB of headers are kept). Skipped, saying why, when none can be had. Kernels are compiled the way the loader compiles them
(``distgraph.backends.gpu.loader`` when present): same defines, same standard.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = sorted((Path(__file__).resolve().parent.parent / "kernels").glob("*.cu"))
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


NVSHMEM_WHEEL = "nvidia-nvshmem-cu13==3.4.5"  # the NVSHMEM that nvshmem4py-cu13 0.4.1 runs on


def _nvshmem_include():
    env = os.environ.get("DISTGRAPH_NVSHMEM_INCLUDE")
    if env:
        return Path(env)
    try:
        import nvidia.nvshmem as m  # from the nvidia-nvshmem-cu13 wheel

        inc = Path(list(m.__path__)[0]) / "include"
        if inc.is_dir():
            return inc
    except Exception:
        pass
    cache = Path.home() / ".cache" / "distgraph" / "nvshmem-include"
    if (cache / "nvshmem.h").is_file():
        return cache
    return _fetch_headers(cache)


def _fetch_headers(cache):
    import sys
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
                            "-d", tmp, NVSHMEM_WHEEL], capture_output=True, text=True, timeout=600)
        wheels = list(Path(tmp).glob("*.whl"))
        if r.returncode != 0 or not wheels:
            return None
        part = cache.with_name(cache.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        with zipfile.ZipFile(wheels[0]) as z:
            for name in z.namelist():
                if "/include/" in name and not name.endswith("/"):
                    rel = name.split("/include/", 1)[1]
                    dest = part / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(z.read(name))
        if not (part / "nvshmem.h").is_file():
            return None
        shutil.rmtree(cache, ignore_errors=True)
        part.rename(cache)
    return cache


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("path", KERNELS, ids=[p.name for p in KERNELS])
def test_kernel_compiles_sm90(path, tmp_path):
    head = path.read_text()[:4000]
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-c", str(path), "-o", str(tmp_path / "k.o"),
           "-I", str(path.parent)]
    if "distgraph-compile: nvshmem" in head:
        inc = _nvshmem_include()
        if inc is None:
            pytest.skip(f"NVSHMEM headers not found and {NVSHMEM_WHEEL} could not be downloaded "
                        "(set DISTGRAPH_NVSHMEM_INCLUDE to an NVSHMEM include/ folder)")
        cmd[1:1] = ["-rdc=true", "-I", str(inc)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"nvcc failed on {path.name}:\n{r.stderr[-4000:]}"


def test_there_are_kernels_or_none_expected():
    # Guards against the glob silently finding nothing after a move of kernels/.
    assert (Path(__file__).resolve().parent.parent / "kernels").is_dir()


def test_installed_wheel_layout_finds_kernels(tmp_path, monkeypatch):
    """A non-editable install carries kernels/ to <prefix>/share/distgraph/kernels
    (pyproject's data-files); kernels_dir() must find them there when no checkout is beside it."""
    import sysconfig
    tomllib = pytest.importorskip("tomllib")

    from distgraph import _kernels

    here = Path(__file__).resolve().parent.parent
    spec = tomllib.loads((here / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = {p.name for pat in spec["share/distgraph/kernels"] for p in here.glob(pat)}
    assert shipped == {p.name for p in (here / "kernels").iterdir() if p.suffix in (".cu", ".cuh")}
    share = tmp_path / "share" / "distgraph" / "kernels"
    share.mkdir(parents=True)
    (share / "common.cuh").write_text("// copy\n")
    fake_pkg = tmp_path / "site" / "distgraph"
    fake_pkg.mkdir(parents=True)
    monkeypatch.setattr(_kernels, "__file__", str(fake_pkg / "_kernels.py"))
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"data": str(tmp_path)})
    assert _kernels.kernels_dir() == share
    (share / "common.cuh").unlink()
    with pytest.raises(FileNotFoundError, match="kernels"):
        _kernels.kernels_dir()


PROFILING_BUILDS = [  # (kernel, its profiling define and the loader's defines, stamp arrays it adds)
    ("bvss_bfs.cu", ["-DDG_BFS_BLOCK=256"], "-DDG_BFS_LEVEL_NS=64", ("dg_level_ns", "dg_level_nq", "dg_level_kind")),
    ("msbfs.cu", ["-DDG_MS_WORDS=8", "-DDG_MS_BLOCK=256"], "-DDG_MS_PROFILE=64",
     ("dg_ms_prof_t2", "dg_ms_prof_t1", "dg_ms_prof_nq", "dg_ms_prof_batch_ns", "dg_ms_prof_batch_levels")),
]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("name,defs,prof,syms", PROFILING_BUILDS, ids=[b[0] for b in PROFILING_BUILDS])
def test_profiling_build_compiles_and_default_has_none(name, defs, prof, syms, tmp_path):
    """The profiling builds (benchmarks/gpu_bfs.py --level-profile, gpu_closeness.py
    --block-profile) compile for sm_90 and define their stamp arrays; the default build of
    the same kernel has none of them and reads no clock (its code is what the GPU tests ran)."""
    path = KERNELS[0].parent / name
    for extra, present in (([prof], True), ([], False)):
        ptx = tmp_path / f"k{len(extra)}.ptx"
        r = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-ptx", "-I", str(path.parent), *defs, *extra,
                            str(path), "-o", str(ptx)], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"nvcc failed on {name} {extra}:\n{r.stderr[-4000:]}"
        text = ptx.read_text()
        for sym in syms:
            assert (f" {sym}[" in text) == present, (name, extra, sym)
        assert ("globaltimer" in text) == present, (name, extra)


WAVE_BUILDS = [  # GpuWave's options (DG_WV_*): the defaults, and the ends of each range
    {"BLOCK": 256, "MINB": 4, "SPT": 4, "NB": 1, "UNR": 8, "RSH": 2048, "FSUMS": 1, "GSYNC": 1, "ELL": 1},
    {"BLOCK": 256, "MINB": 4, "SPT": 2, "NB": 1, "UNR": 8, "RSH": 2048, "FSUMS": 1, "GSYNC": 1},
    {"BLOCK": 512, "MINB": 1, "SPT": 4, "NB": 4, "UNR": 16, "RSH": 0, "FSUMS": 1, "GSYNC": 0, "ELL": 0},
    {"BLOCK": 1024, "MINB": 1, "SPT": 1, "NB": 2, "UNR": 1, "RSH": 4096, "FSUMS": 0, "GSYNC": 1, "ELL": 1},
    {"BLOCK": 256, "MINB": 2, "SPT": 4, "NB": 1, "UNR": 2, "RSH": 512, "FSUMS": 1, "GSYNC": 0},
]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("defs", WAVE_BUILDS, ids=lambda d: "-".join(f"{k}{v}" for k, v in d.items()))
def test_wave_kernel_options_compile(defs, tmp_path):
    """kernels/msbfs_wave.cu with the defines GpuWave passes for its options (block_threads,
    min_blocks, sources_per_thread, neighbours, unroll, recip_shared, fast_sums, group_sync, ell)
    compiles for sm_90, both offset widths (the kernel instantiates W = 1 and 2) included."""
    path = KERNELS[0].parent / "msbfs_wave.cu"
    ptx = tmp_path / "w.ptx"
    r = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-O3", "-ptx", "-I", str(path.parent),
                        *[f"-DDG_WV_{k}={v}" for k, v in defs.items()], str(path), "-o", str(ptx)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"nvcc failed on msbfs_wave.cu {defs}:\n{r.stderr[-4000:]}"
    assert "distgraph_msbfs_wave_blocks" in ptx.read_text()
