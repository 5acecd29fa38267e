"""Every script in examples/ runs, on 1 and 2 ranks, and prints what it promises."""

import subprocess
import sys
from pathlib import Path

import pytest

from distgraph.testing import clean_mpi_env, mpiexec_path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECT = {
    "closeness_of_a_generated_graph.py": "closeness",
    "shortest_paths_with_negative_weights.py": "negative cycle found",
    "bfs_from_a_file.py": "reached 2640 of 2642 vertices",
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECT)


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_example_runs(name, ranks, data_dir):
    cmd = [mpiexec_path(), "-n", str(ranks), sys.executable, str(EXAMPLES / name)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=clean_mpi_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert EXPECT[name] in r.stdout
    if ranks > 1:
        assert "rank(s)" not in r.stdout or f"on {ranks} rank(s)" in r.stdout
