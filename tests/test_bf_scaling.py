"""benchmarks/bf_scaling.py: the multi-GPU Bellman-Ford speedups against the paper's bar."""

import json

import pytest

from conftest import ROOT


def _row(case, pes, remote, sp, same=True, run=None):
    return {"kind": "row", "case": case, "pes": pes, "remote": remote, "queue": "bwd", "speedup_vs_1pe": sp,
            "run_speedup_vs_1pe": run, "same_as_cpu": same}


def test_best_variant_per_case_and_the_paper_bar(bench_script, tmp_path, capsys):
    bf = bench_script("bf_scaling.py", "bf_scaling")
    doc = {"jobs": [{"kind": "job", "pes": 4, "limited_mpg": False}, {"kind": "job", "pes": 8, "limited_mpg": True}],
           "rows": [_row("a", 1, "rounds", None),
                    _row("a", 4, "rounds", 2.0, run=2.5), _row("a", 4, "atomic", 3.0, run=2.0),
                    _row("a", 4, "enqueue", 9.0, same=False),  # wrong distances: not a speedup
                    _row("b", 4, "rounds", 1.0, run=1.5),
                    _row("b", 2, "rounds", 1.5),
                    _row("b", 8, "rounds", 7.0)]}  # PEs sharing GPUs: not scaling
    s = bf.summarize([doc])
    assert sorted(s) == [2, 4]
    assert s[4]["cases"]["a"] == {"speedup": 3.0, "run_speedup": 2.0, "remote": "atomic", "queue": "bwd"}
    assert s[4]["mean"] == pytest.approx(2.0) and s[4]["best"] == 3.0
    assert s[4]["run_mean"] == pytest.approx(1.75) and s[2]["run_mean"] is None
    f = tmp_path / "pes.json"
    f.write_text(json.dumps(doc))
    assert bf.main([str(f), "--out", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "| 4 | 2 | 2.00x | 3.00x | 1.75x | 2.00x | mean 2.65x, best 3.03x |" in out
    assert json.loads((tmp_path / "s.json").read_text())["by_pes"]["4"]["best"] == 3.0
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"rows": [_row("a", 1, "rounds", None)]}))
    assert bf.main([str(empty)]) == 1


def test_shared_gpus_left_out_per_file(bench_script):
    """A PE count whose PEs shared GPUs in one file (two GPUs) still counts in another file's
    job on GPUs of its own (four GPUs)."""
    bf = bench_script("bf_scaling.py", "bf_scaling")
    two = {"jobs": [{"pes": 4, "limited_mpg": True}], "rows": [_row("a", 4, "rounds", 0.9)]}
    four = {"jobs": [{"pes": 4, "limited_mpg": False}], "rows": [_row("a", 4, "rounds", 2.5)]}
    for docs in ([two, four], [four, two]):
        s = bf.summarize(docs)
        assert list(s) == [4] and s[4]["cases"]["a"]["speedup"] == 2.5 and s[4]["mean"] == 2.5


def test_two_h200s_of_session17(bench_script):
    """The committed 2-GPU rows of session 17 (call 6): every case's best is the rounds."""
    bf = bench_script("bf_scaling.py", "bf_scaling")
    doc = json.loads((ROOT / "benchmarks/results/session17/call6/pes/gpu_sssp_pes.json").read_text())
    s = bf.summarize([doc])
    assert list(s) == [2] and len(s[2]["cases"]) == 6
    assert {c["remote"] for c in s[2]["cases"].values()} == {"rounds"}
    assert 1.0 < s[2]["mean"] < 1.2 and 1.2 < s[2]["run_mean"] < 1.3
