"""Where the CUDA sources of ``kernels/`` are, in a checkout and in an installed wheel.

The sources live at the top of the repository (``kernels/``, beside ``distgraph/``), so an
editable install or a checkout on ``PYTHONPATH`` compiles them in place.  A regular
(non-editable) install ships them as data files under ``<prefix>/share/distgraph/kernels``
(``[tool.setuptools.data-files]`` in pyproject.toml).  The first of these that exists wins.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

__all__ = ["kernels_dir"]


def kernels_dir() -> Path:
    """The folder holding ``*.cu``/``*.cuh``; raises ``FileNotFoundError`` naming the places looked at."""
    candidates = [Path(__file__).resolve().parent.parent / "kernels"]
    for prefix in dict.fromkeys([sysconfig.get_paths()["data"], sys.prefix, sys.base_prefix]):
        candidates.append(Path(prefix) / "share" / "distgraph" / "kernels")
    for c in candidates:
        if (c / "common.cuh").is_file():
            return c
    raise FileNotFoundError("distgraph's CUDA sources (kernels/*.cu) were not found; looked in "
                            + ", ".join(map(str, candidates))
                            + ". Reinstall distgraph (pip install distgraph[gpu]) or run from a checkout.")
