"""Bellman-Ford's multi-GPU speedups against the paper's bar (issue 7), from the rows of
``benchmarks/gpu_sssp_pes.py`` (``OUT/gpu_sssp_pes.json``, one or several files):

    python benchmarks/bf_scaling.py OUT/gpu_sssp_pes.json [MORE.json ...] [--out scaling.json]

For each case (graph and weighting) and PE count, the best speedup over the case's best 1-PE
row (``speedup_vs_1pe``: wall time of ``run()`` with the gather; ``run_speedup_vs_1pe``: the
slowest rank's run, no gather), over every remote variant whose distances equal the CPU
backend's; then, per PE count, the mean and the best over the cases, beside the paper's 4-A100
figures (3.03x best, 2.65x mean over 1 GPU). Rows whose PEs shared GPUs (``limited_mpg``) do
not measure scaling and are left out, as are rows without a 1-PE reference. Prints a markdown
table; ``--out`` writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PAPER = {"best": 3.03, "mean": 2.65, "gpus": 4}


def summarize(docs):
    """``{pes: {"cases": {case: {"speedup", "run_speedup", "remote"}}, "mean", "best",
    "run_mean", "run_best"}}`` from the loaded JSON documents."""
    best = {}
    for d in docs:  # a file's own jobs say whether its PEs shared GPUs (another host's may not have)
        limited = {j.get("pes") for j in d.get("jobs", []) if j.get("limited_mpg")}
        for r in d.get("rows", []):
            p, sp = r.get("pes"), r.get("speedup_vs_1pe")
            if r.get("kind", "row") != "row" or p in limited or not p or p < 2 or sp is None:
                continue
            if r.get("same_as_cpu") is not True:
                continue
            cur = best.setdefault(p, {}).get(r["case"])
            if cur is None or sp > cur["speedup"]:
                best[p][r["case"]] = {"speedup": sp, "run_speedup": r.get("run_speedup_vs_1pe"),
                                      "remote": r.get("remote"), "queue": r.get("queue")}
    out = {}
    for p, cases in sorted(best.items()):
        sps = [c["speedup"] for c in cases.values()]
        runs = [c["run_speedup"] for c in cases.values() if c["run_speedup"] is not None]
        out[p] = {"cases": cases, "mean": sum(sps) / len(sps), "best": max(sps),
                  "run_mean": sum(runs) / len(runs) if runs else None, "run_best": max(runs) if runs else None}
    return out


def table(summary) -> str:
    lines = [f"| PEs | cases | mean speedup | best | mean, run only | best, run only | paper ({PAPER['gpus']} A100s) |",
             "|---|---|---|---|---|---|---|"]
    fmt = lambda x: "-" if x is None else f"{x:.2f}x"  # noqa: E731
    for p, s in summary.items():
        paper = f"mean {PAPER['mean']}x, best {PAPER['best']}x" if p == PAPER["gpus"] else "-"
        lines.append(f"| {p} | {len(s['cases'])} | {fmt(s['mean'])} | {fmt(s['best'])} | {fmt(s['run_mean'])} | "
                     f"{fmt(s['run_best'])} | {paper} |")
    lines.append("")
    lines.append("| PEs | case | speedup | run only | variant |")
    lines.append("|---|---|---|---|---|")
    for p, s in summary.items():
        for case, c in sorted(s["cases"].items()):
            lines.append(f"| {p} | {case} | {fmt(c['speedup'])} | {fmt(c['run_speedup'])} | {c['remote']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    docs = [json.loads(Path(f).read_text()) for f in a.files]
    s = summarize(docs)
    if not s:
        print("no rows of several PEs with a 1-PE reference (and PEs on GPUs of their own)", file=sys.stderr)
        return 1
    print(table(s))
    if a.out:
        Path(a.out).write_text(json.dumps({"paper": PAPER, "files": a.files, "by_pes": s}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
