"""The source lines of a kernel that hold the most warp-stall samples, from the source-counter
CSV of Nsight Compute (``benchmarks/ncu_msbfs.sh`` with NCU_SOURCE=1 writes
ncu-pull-source.csv.gz): share of the samples, top stall reasons, warp instructions executed,
and the line's text from the kernel source as it was at the measured commit.

    python benchmarks/ncu_source_top.py CSV[.gz] KERNEL.cu [--top 16] > top-lines.txt

(``git show COMMIT:kernels/msbfs.cu > /tmp/k.cu`` gives KERNEL.cu for an older commit.)
"""
from __future__ import annotations

import argparse
import collections
import csv
import gzip


def top_lines(csv_path: str, source_path: str, top: int = 16) -> list[str]:
    """Rows of the first source file's section of the CSV (``"File Path"`` starts a section;
    ncu writes one per source file of the kernel): its line numbers index ``source_path``."""
    opener = gzip.open if csv_path.endswith(".gz") else open
    with opener(csv_path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if r and r[0] == "Line No"), None)
    if head is None:
        raise SystemExit(f"{csv_path}: no 'Line No' header: not a source view exported with "
                         "--page source --csv --print-source cuda,sass (benchmarks/ncu_msbfs.sh)")
    files = [r[1] for r in rows[:head] if len(r) > 1 and r[0] == "File Path"]
    hdr = rows[head]
    i_all, i_exec = hdr.index("Warp Stall Sampling (All Samples)"), hdr.index("Instructions Executed")
    reasons = [i for i, h in enumerate(hdr) if h.startswith("stall_") and not h.endswith("(Not Issued)")]
    samples, executed = collections.Counter(), collections.Counter()
    why = collections.defaultdict(collections.Counter)
    bad = 0
    for r in rows[head + 1:]:
        if r and r[0] == "File Path":   # the next source file's section: other line numbers
            break
        if len(r) < len(hdr) or not r[0].strip().isdigit():
            continue
        ln = int(r[0])

        def num(i):
            nonlocal bad
            v = r[i].strip().replace(",", "")
            if v in ("", "-"):
                return 0.0
            try:
                return float(v)
            except ValueError:
                bad += 1
                return 0.0
        samples[ln] += num(i_all)
        executed[ln] += num(i_exec)
        for i in reasons:
            why[ln][hdr[i][len("stall_"):]] += num(i)
    if bad:
        print(f"# {bad} cells that are not numbers counted as 0")
    if files:
        print(f"# lines of {files[0]}")
    with open(source_path) as f:
        text = f.read().split("\n")
    total = sum(samples.values()) or 1.0
    out = []
    for ln, s in samples.most_common(top):
        top3 = ", ".join(f"{k} {int(v)}" for k, v in why[ln].most_common(3))
        src = text[ln - 1].strip() if 0 < ln <= len(text) else "?"
        out.append(f"{ln:5d} {100 * s / total:5.1f}%  {top3:<50s} exec {int(executed[ln]):>12d} | {src}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("source")
    ap.add_argument("--top", type=int, default=16)
    a = ap.parse_args(argv)
    print("\n".join(top_lines(a.csv, a.source, a.top)))


if __name__ == "__main__":
    main()
