"""``distgraph scale`` and distgraph.scaling: the study's arithmetic on hand-made records,
collecting Slurm-style results, the report files, and real runs on 1 and 2 ranks."""

import json
import os
import subprocess
import sys

import pytest

from distgraph import scaling
from distgraph.errors import InvalidArgumentError
from distgraph.testing import clean_mpi_env

pytestmark = pytest.mark.skipif(int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1) > 1,
                                reason="not an MPI test (it starts its own jobs): runs in the 1-rank stage")

try:
    import matplotlib  # noqa: F401

    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False

PNG = b"\x89PNG\r\n\x1a\n"


def rec(ranks, t, algo="bfs", graph="kron:10", **kw):
    return scaling.make_record(algo, graph, ranks, dict({"time_s": t, "ranks": ranks}, **kw))


def scale_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "distgraph", "scale", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=clean_mpi_env())


def test_parse_ranks():
    assert scaling.parse_ranks("4,1,2,2") == [1, 2, 4]
    assert scaling.parse_ranks("8") == [8]
    for bad in ("", "0,1", "1,x", "-2"):
        with pytest.raises(InvalidArgumentError, match="--ranks must be"):
            scaling.parse_ranks(bad)


def test_study_arithmetic():
    st = scaling.study([rec(1, 8.0), rec(2, 4.0), rec(4, 2.5), rec(4, 3.0), rec(2, 4.5)])
    rows = {r["ranks"]: r for r in st["rows"]}
    assert sorted(rows) == [1, 2, 4] and st["base_ranks"] == 1
    assert rows[4]["time_s"] == 2.5  # best of the repeated runs
    assert [rows[n]["speedup"] for n in (1, 2, 4)] == pytest.approx([1.0, 2.0, 3.2])
    assert [rows[n]["efficiency"] for n in (1, 2, 4)] == pytest.approx([1.0, 1.0, 0.8])
    # against the smallest rank count measured when 1 is missing
    st = scaling.study([rec(2, 6.0), rec(8, 2.0)])
    assert st["base_ranks"] == 2 and st["rows"][1]["speedup"] == pytest.approx(3.0)
    assert st["rows"][1]["efficiency"] == pytest.approx(0.75)
    with pytest.raises(InvalidArgumentError, match="one algorithm and one graph"):
        scaling.study([rec(1, 1.0), rec(2, 1.0, algo="closeness")])


def test_record_time_sources():
    assert scaling.record_time({"time_s": 0.5, "times_s": [0.4]}) == (0.5, "time_s")
    assert scaling.record_time({"times_s": [0.7, 0.3, 0.9]}) == (0.3, "min(times_s)")
    assert scaling.record_time({"vertices": 3}) == (None, None)
    r = scaling.make_record("stats", "kron:4", 2, {"vertices": 3}, wall_s=1.25)
    assert (r["time_s"], r["time_source"]) == (1.25, "wall_s")
    r = scaling.make_record("bfs", "g", 1, {"time_s": 1.0, "level_times_s": [0.1, 0.5, 0.4]})
    assert r["level_times_s"] == [0.1, 0.5, 0.4]


def test_collect_slurm_outputs(tmp_path):
    d = tmp_path / "runs"
    (d / "nested").mkdir(parents=True)
    # what a Slurm job leaves: the stdout of `distgraph bfs ... --json` (other lines around it)
    (d / "bfs-r1.json").write_text("progress 100%\n" + json.dumps({"command": "bfs", "graph": "kron:10",
                                                                  "time_s": 4.0, "level_times_s": [1.0, 2.0, 1.0]}) + "\n")
    (d / "nested" / "out_n2.json").write_text(json.dumps({"command": "bfs", "graph": "kron:10", "ranks": 2,
                                                          "times_s": [2.5, 2.0]}))
    (d / "bfs-r4.json").write_text(json.dumps(rec(4, 1.25)))  # a record written by distgraph scale
    (d / "scaling.json").write_text(json.dumps({"rows": []}))  # a report: skipped
    (d / "other.json").write_text(json.dumps({"hello": 1}))  # not a run: skipped
    records = scaling.collect(str(d))
    assert sorted(r["ranks"] for r in records) == [1, 2, 4]
    st = scaling.study(records)
    assert [r["time_s"] for r in st["rows"]] == [4.0, 2.0, 1.25]
    assert st["rows"][0]["level_times_s"] == [1.0, 2.0, 1.0]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidArgumentError, match="no run records"):
        scaling.collect(str(empty))
    with pytest.raises(InvalidArgumentError, match="must be a directory"):
        scaling.collect(str(tmp_path / "missing"))


def test_report_files(tmp_path):
    records = [rec(1, 8.0, level_times_s=[1.0, 5.0, 2.0]), rec(2, 4.0, level_times_s=[0.6, 2.6, 0.8]), rec(4, 2.5)]
    st = scaling.write_report(records, str(tmp_path), plots=False)
    saved = json.loads((tmp_path / "scaling.json").read_text())
    assert [r["ranks"] for r in saved["rows"]] == [1, 2, 4] and len(saved["records"]) == 3
    assert saved["plots"] == [] and st["rows"][2]["efficiency"] == pytest.approx(0.8)
    md = (tmp_path / "summary.md").read_text()
    assert "| 4 | 2.5 | 3.2 | 0.8 | time_s |" in md and "efficiency 80%" in md
    if not HAVE_MPL:
        pytest.skip("matplotlib not installed (pip install 'distgraph[bench]'): plots not checked")
    st = scaling.write_report(records, str(tmp_path))
    assert st["plots"] == ["time.png", "speedup.png", "efficiency.png", "bfs_levels.png"]
    for p in st["plots"]:
        assert (tmp_path / p).read_bytes()[:8] == PNG and f"]({p})" in (tmp_path / "summary.md").read_text()


def test_plots_without_matplotlib_say_how_to_install(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_mpl(name, *a, **kw):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(ImportError, match=r"pip install 'distgraph\[bench\]'"):
        scaling.write_report([rec(1, 2.0), rec(2, 1.0)], str(tmp_path))
    assert (tmp_path / "scaling.json").exists()  # the numbers were kept


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_scale_cli_runs_on_1_and_2_ranks(tmp_path):
    out = tmp_path / "study"
    # the launcher is any command with {n}: here the project's own distgraph-mpirun
    launcher = f"{sys.executable} {ROOT}/launch/distgraph-mpirun -n {{n}} --gpus none --threads 1"
    args = ["stats", "kron:6", "--ranks", "1,2", "--output", out, "--timeout", 240, "--launcher", launcher]
    r = scale_cli(*args, *([] if HAVE_MPL else ["--no-plots"]))
    assert r.returncode == 0, r.stderr
    for n in (1, 2):
        run = json.loads((out / "runs" / f"stats-r{n}.json").read_text())
        assert run["ranks"] == n and run["summary"]["ranks"] == n  # the run really had n ranks
        assert run["summary"]["vertices"] == 64 and run["time_s"] > 0
        assert "distgraph-mpirun" in " ".join(run["command"])
    st = json.loads((out / "scaling.json").read_text())
    assert [row["ranks"] for row in st["rows"]] == [1, 2] and st["rows"][0]["speedup"] == 1.0
    assert "# Scaling: stats on kron:6" in (out / "summary.md").read_text()
    if HAVE_MPL:
        assert (out / "speedup.png").read_bytes()[:8] == PNG
    # --skip-existing keeps the stored runs (a requeued Slurm job continues where it stopped)
    before = (out / "runs" / "stats-r2.json").read_text()
    r = scale_cli(*args, "--skip-existing", "--no-plots")
    assert r.returncode == 0 and "kept" in r.stderr and (out / "runs" / "stats-r2.json").read_text() == before
    # and --collect rebuilds the report from the records alone
    r = scale_cli("--collect", out / "runs", "--output", tmp_path / "again", "--no-plots")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "again" / "scaling.json").read_text())["rows"] == st["rows"]


def test_scale_cli_passes_args_and_reports_failures(tmp_path):
    # --args reach the subcommand: an unknown option makes the run fail, and the error says which run
    r = scale_cli("stats", "kron:4", "--ranks", "1", "--output", tmp_path, "--no-plots", "--args", "--no-such-flag")
    assert r.returncode == 2 and "stats on 1 rank(s) failed" in r.stderr and "--no-such-flag" in r.stderr
    for args, msg in ((["--output", tmp_path], "ALGORITHM and GRAPH are required"),
                      (["stats", "kron:4", "--ranks", "0", "--output", tmp_path], "--ranks must be"),
                      (["stats", "kron:4", "--launcher", "mpiexec -n 2", "--output", tmp_path], "must contain {n}"),
                      (["stats", "kron:4", "--collect", tmp_path, "--output", tmp_path], "--collect takes no")):
        r = scale_cli(*args)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
