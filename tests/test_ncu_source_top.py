"""benchmarks/ncu_source_top.py: the source lines with the most warp-stall samples, from the
CSV of Nsight Compute's source view, read back against a small CSV written here in ncu's
layout (a "File Path" section per source file; CUDA-line rows, then SASS rows whose first
cell is not a line number)."""

import csv
import gzip
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ncu_source_top  # noqa: E402

HDR = ["Line No", "Source", "Address", "Source", "Warp Stall Sampling (All Samples)",
       "Warp Stall Sampling (Not-issued Samples)", "# Samples", "Instructions Executed", "stall_long_sb",
       "stall_long_sb (Not Issued)", "stall_short_sb"]


def _write(path, sections):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", newline="") as f:
        w = csv.writer(f)
        for name, rows in sections:
            w.writerow(["File Path", name])
            w.writerow(["Function Name", "k"])
            w.writerow(HDR)
            for r in rows:
                w.writerow(r)


def test_top_lines_share_reasons_and_text(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("int a;\nx = load(p);\ny = x + 1;\n")
    rows = [["2", "", "", "", "300", "200", "300", "1,000", "250", "150", "10"],
            ["3", "", "", "", "100", "50", "100", "4000", "0", "0", "90"],
            ["-", "", "0x10", "LDG", "300", "200", "-", "1000", "250", "150", "10"],  # SASS row
            ["1", "", "", "", "", "", "", "", "", "", ""]]
    csv_path = tmp_path / "s.csv.gz"
    # a second file's section (other line numbers) must not be merged into the first
    _write(csv_path, [("/x/k.cu", rows), ("/x/common.cuh", [["2", "", "", "", "9999", "0", "0", "0", "0", "0", "0"]])])
    out = ncu_source_top.top_lines(str(csv_path), str(src), top=2)
    assert out[0].split()[0] == "2" and "75.0%" in out[0] and "long_sb 250" in out[0]
    assert out[0].endswith("x = load(p);")
    assert "exec         1000" in out[0]   # "1,000": ncu's thousands separator
    assert out[1].split()[0] == "3" and "25.0%" in out[1] and "short_sb 90" in out[1]
    assert len(out) == 2


def test_not_a_source_view(tmp_path):
    p = tmp_path / "details.csv"
    p.write_text('"ID","Kernel Name"\n"0","k"\n')
    with pytest.raises(SystemExit, match="no 'Line No' header"):
        ncu_source_top.top_lines(str(p), str(p))
