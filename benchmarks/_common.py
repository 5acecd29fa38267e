"""What every benchmark script records beside its numbers: shell output and the commit.

Imported by the scripts of this folder (``from _common import sh, commit``; a script's own
folder is first on ``sys.path``).  On the GPU machine the copy of the tree has no ``.git``,
so ``commit()`` takes ``DISTGRAPH_COMMIT`` first (benchmarks/gpu_env.sh passes it on).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ROOT", "sh", "commit", "dirty"]


def sh(cmd: str) -> str:
    """Stripped stdout of a shell command run in the repository root ('' or the error text on failure)."""
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30, cwd=ROOT).stdout.strip()
    except Exception as e:  # pragma: no cover
        return str(e)


def commit() -> str:
    """The commit measured: ``DISTGRAPH_COMMIT``, else ``git rev-parse HEAD``, else 'unknown'."""
    return os.environ.get("DISTGRAPH_COMMIT") or sh("git rev-parse HEAD") or "unknown"


def dirty():
    """Whether tracked files differ from the commit measured (None on a copy without .git,
    where ``DISTGRAPH_COMMIT`` names the commit)."""
    if os.environ.get("DISTGRAPH_COMMIT"):
        return None
    return bool(sh("git status --porcelain --untracked-files=no"))
