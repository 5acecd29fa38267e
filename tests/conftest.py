"""Shared fixtures. GPU tests carry ``@pytest.mark.gpu`` and skip without a GPU;
MPI tests carry ``@pytest.mark.mpi`` (pytest-mpi) and run under ``tests/run.sh`` on
1, 2 and 4 ranks."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("DISTGRAPH_DATA", ROOT.parent / "shared" / "data"))


def _has_gpu() -> bool:
    from distgraph.runtime.context import gpu_count

    return gpu_count() > 0


def pytest_collection_modifyitems(config, items):
    if any("gpu" in it.keywords or "nvshmem" in it.keywords for it in items):
        if not _has_gpu():
            skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (none visible)")
            for it in items:
                if "gpu" in it.keywords or "nvshmem" in it.keywords:
                    it.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_measured_gpu_overhead(request, monkeypatch):
    """Tests that are neither GPU nor NVSHMEM tests (CuPy stand-ins with made-up memory
    numbers) see no device overhead measured by an earlier real GPU context or NVSHMEM heap in
    this process (``backends.gpu.memory.measure_overhead``): it would be taken from their
    numbers (ranks sharing a GPU). GPU tests keep the process's real measurements."""
    if "gpu" in request.keywords or "nvshmem" in request.keywords:
        return
    from distgraph.backends.gpu import memory

    monkeypatch.setattr(memory, "_overhead", {})
    monkeypatch.setattr(memory, "_symmetric", 0)


@pytest.fixture(scope="session")
def data_dir():
    if not DATA.is_dir():
        pytest.skip(f"shared data folder not found at {DATA} (set DISTGRAPH_DATA)")
    return DATA


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.fixture
def bench_script(monkeypatch):
    """``load(script, name)``: a script of ``benchmarks/`` run as module ``name`` (not put in
    ``sys.modules``), with ``benchmarks/`` on ``sys.path`` for the test (the scripts import
    ``_common``). Stand-ins the script imports (``cupy``) go into ``sys.modules`` before."""
    import importlib.util

    bench = ROOT / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))

    def load(script: str, name: str):
        spec = importlib.util.spec_from_file_location(name, bench / script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
