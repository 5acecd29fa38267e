"""``distgraph.backends.gpu.loader.get_module``: the NVRTC options it passes (no GPU needed: a
stand-in for CuPy records them)."""

import types

from distgraph.backends.gpu import loader


def _fake_cupy(seen):
    class RawModule:
        def __init__(self, code, options, backend, enable_cooperative_groups):
            seen.append(tuple(options))

    dev = types.SimpleNamespace(id=0)
    return types.SimpleNamespace(RawModule=RawModule, cuda=types.SimpleNamespace(Device=lambda: dev))


def test_environment_options_added(monkeypatch, tmp_path):
    # DISTGRAPH_NVRTC_OPTIONS (e.g. -lineinfo for Nsight Compute's source view) reaches NVRTC,
    # after the caller's options, and is part of the memo key (a module built without it is
    # not reused)
    seen = []
    monkeypatch.setattr(loader, "import_cupy", lambda: _fake_cupy(seen))
    monkeypatch.setattr(loader, "_MEMO", {})
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DISTGRAPH_NVRTC_OPTIONS", raising=False)
    loader.get_module("msbfs", {"DG_MS_WORDS": 8}, options=("-DX=1",))
    monkeypatch.setenv("DISTGRAPH_NVRTC_OPTIONS", " -lineinfo  -G0 ")
    loader.get_module("msbfs", {"DG_MS_WORDS": 8}, options=("-DX=1",))
    loader.get_module("msbfs", {"DG_MS_WORDS": 8}, options=("-DX=1",))  # memoized
    assert len(seen) == 2
    assert seen[0][-1] == "-DX=1" and "-lineinfo" not in seen[0]
    assert seen[1][-3:] == ("-DX=1", "-lineinfo", "-G0")


def test_environment_options_accepted_by_the_configuration():
    # the configuration refuses unknown DISTGRAPH_* variables: this one must not be refused, or
    # every run with it (benchmarks/ncu_msbfs.sh NCU_SOURCE=1) fails at import
    from distgraph.runtime.config import reload_config

    reload_config({"DISTGRAPH_NVRTC_OPTIONS": "-lineinfo"})
