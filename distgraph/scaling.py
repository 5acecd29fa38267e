"""Strong-scaling studies: run a command on 1, 2, 4, ... ranks, or collect the runs a cluster
made, and report time, speedup and efficiency against the number of ranks.

A *run record* is one JSON object per (algorithm, graph, ranks) run::

    {"algorithm": "bfs", "graph": "kron:20", "ranks": 4, "time_s": 0.0123,
     "times_s": [...], "level_times_s": [...] or null, "wall_s": 3.2, "summary": {...},
     "command": [...], "returncode": 0, "host": "...", "date": "..."}

``summary`` is the one-line JSON the subcommand printed with ``--json``; ``time_s`` is its
``time_s`` (the best trial; else the minimum of ``times_s``; else the run's wall time, which then
includes start-up and reading the graph, and ``time_source`` says so). ``level_times_s`` is the
per-level time of a BFS when the summary has one (``level_times_s``, ``time_per_level_s`` or
``levels_s``).

A *study* groups the records by rank count. With ``T(r)`` the best time on ``r`` ranks and
``r0`` the smallest rank count measured::

    speedup(r)    = T(r0) / T(r)
    efficiency(r) = speedup(r) * r0 / r        (1.0 is perfect strong scaling)

:func:`write_report` stores ``scaling.json`` (the study with every record), ``summary.md`` and,
with matplotlib, ``time.png``, ``speedup.png``, ``efficiency.png`` and, for BFS records with
per-level times, ``bfs_levels.png``. This module never imports MPI: the runs are separate jobs
started with a launcher command (``mpiexec -n {n}`` by default, ``srun -n {n}`` or
``launch/distgraph-srun -n {n}`` on a cluster).
"""

from __future__ import annotations

import datetime
import glob
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time

from .errors import DistgraphError, InvalidArgumentError

__all__ = ["RunFailedError", "parse_ranks", "default_launcher", "run_one", "run_study", "collect", "study",
           "write_report", "record_time"]

class RunFailedError(DistgraphError):
    """One run of a study failed or printed no JSON summary; the message ends with its output."""


_LEVEL_KEYS = ("level_times_s", "time_per_level_s", "levels_s")
#: Variables by which a running MPI process passes its identity to children; removed from the
#: environment of the runs so that a study started from inside a job starts fresh jobs. Slurm's
#: variables are kept: srun inside an allocation needs them.
_MPI_IDENTITY = ("PMI_", "PMIX_", "OMPI_COMM_WORLD", "OMPI_MCA_orte_ess", "HYDRA_", "MPI_LOCAL", "MPIR_", "PRTE_")


def parse_ranks(text) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (sorted, unique, each >= 1).

    >>> parse_ranks("4,1,2,2")
    [1, 2, 4]
    """
    try:
        ranks = sorted({int(t) for t in str(text).split(",") if t.strip()})
    except ValueError:
        raise InvalidArgumentError(f"--ranks must be a comma-separated list of positive integers; got {text!r}") from None
    if not ranks or ranks[0] < 1:
        raise InvalidArgumentError(f"--ranks must be a comma-separated list of positive integers; got {text!r}")
    return ranks


def default_launcher() -> list[str]:
    """``[mpiexec, "-n", "{n}"]``: ``MPIEXEC``, else the mpiexec beside this Python, else PATH's."""
    mpx = os.environ.get("MPIEXEC")
    if not mpx:
        here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        mpx = here if os.access(here, os.X_OK) else shutil.which("mpiexec") or shutil.which("mpirun")
    if not mpx:
        raise InvalidArgumentError("no mpiexec found for the runs: install an MPI (pip install 'distgraph[mpich]'), "
                                   "set MPIEXEC, or pass --launcher 'srun -n {n}'")
    return [mpx, "-n", "{n}"]


def _launcher(launcher, n: int) -> list[str]:
    words = shlex.split(launcher) if isinstance(launcher, str) else list(launcher or default_launcher())
    if not any("{n}" in w for w in words):
        raise InvalidArgumentError(f"--launcher must contain {{n}} where the number of ranks goes; got {launcher!r}")
    return [w.replace("{n}", str(n)) for w in words]


def _clean_env(extra=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_IDENTITY)}
    env.update(extra or {})
    return env


def _last_json(text: str):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def record_time(summary) -> tuple[float | None, str | None]:
    """The time a record stands for, and where it came from (``time_s``, ``min(times_s)``)."""
    if not isinstance(summary, dict):
        return None, None
    t = summary.get("time_s")
    if isinstance(t, (int, float)) and math.isfinite(t):
        return float(t), "time_s"
    ts = summary.get("times_s")
    if isinstance(ts, list) and ts and all(isinstance(x, (int, float)) for x in ts):
        return float(min(ts)), "min(times_s)"
    return None, None


def _level_times(summary):
    if not isinstance(summary, dict):
        return None
    for k in _LEVEL_KEYS:
        v = summary.get(k)
        if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
            return [float(x) for x in v]
    return None


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def make_record(algorithm, graph, ranks, summary, *, wall_s=None, command=None, returncode=0, args=()) -> dict:
    t, src = record_time(summary)
    if t is None and wall_s is not None:
        t, src = float(wall_s), "wall_s"
    return {"algorithm": algorithm, "graph": graph, "ranks": int(ranks), "time_s": t, "time_source": src,
            "times_s": summary.get("times_s") if isinstance(summary, dict) else None,
            "level_times_s": _level_times(summary), "wall_s": wall_s, "args": list(args),
            "command": command, "returncode": returncode, "summary": summary,
            "host": platform.node(), "date": _now()}


def run_one(algorithm: str, graph: str, ranks: int, args=(), *, launcher=None, timeout=None, env=None) -> dict:
    """Run ``distgraph ALGORITHM GRAPH --json ARGS`` on ``ranks`` ranks; return its record.

    Raises
    ------
    RunFailedError
        When the run fails or prints no JSON summary (the message holds the end of its output).
    """
    cmd = _launcher(launcher, ranks) + [sys.executable, "-m", "distgraph", algorithm, graph, "--json", *args]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_clean_env(env))
    except subprocess.TimeoutExpired:
        raise RunFailedError(f"{algorithm} on {ranks} rank(s) did not finish in {timeout} s: {shlex.join(cmd)}") from None
    wall = time.perf_counter() - t0
    summary = _last_json(r.stdout)
    if r.returncode != 0 or summary is None:
        tail = (r.stderr.strip() or r.stdout.strip())[-2000:]
        why = f"exit {r.returncode}" if r.returncode else "no JSON summary"
        raise RunFailedError(f"{algorithm} on {ranks} rank(s) failed ({why}): {shlex.join(cmd)}\n{tail}")
    rec = make_record(algorithm, graph, ranks, summary, wall_s=wall, command=cmd, returncode=r.returncode, args=args)
    rec["commit"] = _git_commit()
    return rec


def _record_path(outdir, algorithm, ranks) -> str:
    return os.path.join(outdir, "runs", f"{algorithm}-r{ranks}.json")


def _write_json(path, obj) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def run_study(algorithm: str, graph: str, ranks, outdir: str, args=(), *, launcher=None, timeout=None,
              skip_existing=False, log=None) -> list[dict]:
    """Run every rank count in turn, storing each record in ``OUTDIR/runs/ALGORITHM-rR.json``."""
    records = []
    for n in ranks:
        path = _record_path(outdir, algorithm, n)
        if skip_existing and os.path.exists(path):
            with open(path) as f:
                records.append(json.load(f))
            if log:
                log(f"{algorithm} on {n} rank(s): kept {path}")
            continue
        rec = run_one(algorithm, graph, n, args, launcher=launcher, timeout=timeout)
        _write_json(path, rec)
        records.append(rec)
        if log:
            log(f"{algorithm} on {n} rank(s): {rec['time_s']:.6g} s ({rec['time_source']}), wall {rec['wall_s']:.1f} s")
    return records


def collect(directory: str) -> list[dict]:
    """Records from the ``*.json`` files under DIRECTORY (recursively).

    A file holds a run record, a list of them, or the raw one-line summary a subcommand printed
    with ``--json`` (several lines allowed: the last JSON line counts); for a raw summary the
    rank count is its ``ranks`` key, else ``-rN``/``-nN``/``_nN`` in the file name. Files that are
    neither (``scaling.json`` itself, other JSON) are skipped.
    """
    if not os.path.isdir(directory):
        raise InvalidArgumentError(f"--collect must be a directory of JSON run records; got {directory!r}")
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.json"), recursive=True)):
        if os.path.basename(path) == "scaling.json":
            continue
        with open(path) as f:
            text = f.read()
        try:
            obj = json.loads(text)
        except ValueError:
            obj = _last_json(text)
        for item in obj if isinstance(obj, list) else [obj]:
            if not isinstance(item, dict):
                continue
            if "summary" in item and "ranks" in item and "algorithm" in item:
                if item.get("time_s") is None:
                    item = make_record(item["algorithm"], item.get("graph"), item["ranks"], item["summary"],
                                       wall_s=item.get("wall_s"), command=item.get("command"))
                out.append(item)
                continue
            ranks = item.get("ranks")
            if ranks is None:
                m = re.search(r"[-_][rn](\d+)(?=\D*$)", os.path.basename(path))
                ranks = int(m.group(1)) if m else None
            t, _ = record_time(item)
            if ranks is None or t is None:
                continue
            algo = item.get("command") or item.get("algorithm") or "unknown"
            rec = make_record(algo, item.get("graph"), ranks, item)
            rec["source_file"] = os.path.relpath(path, directory)
            out.append(rec)
    if not out:
        raise InvalidArgumentError(f"--collect found no run records (JSON with ranks and time_s) under {directory!r}")
    return out


def study(records: list[dict]) -> dict:
    """Best time per rank count, speedup and efficiency against the smallest rank count."""
    algos = sorted({str(r.get("algorithm")) for r in records})
    graphs = sorted({str(r.get("graph")) for r in records})
    if len(algos) > 1 or len(graphs) > 1:
        raise InvalidArgumentError(f"a study needs one algorithm and one graph; got algorithms {algos} and graphs {graphs}")
    best: dict[int, dict] = {}
    for r in records:
        if r.get("time_s") is None:
            continue
        n = int(r["ranks"])
        if n not in best or r["time_s"] < best[n]["time_s"]:
            best[n] = r
    if not best:
        raise InvalidArgumentError("no record has a time (time_s)")
    ranks = sorted(best)
    r0, t0 = ranks[0], best[ranks[0]]["time_s"]
    rows = []
    for n in ranks:
        t = best[n]["time_s"]
        sp = t0 / t if t > 0 else float("nan")
        rows.append({"ranks": n, "time_s": t, "speedup": sp, "efficiency": sp * r0 / n,
                     "time_source": best[n].get("time_source"), "wall_s": best[n].get("wall_s"),
                     "level_times_s": best[n].get("level_times_s")})
    return {"algorithm": algos[0], "graph": graphs[0], "base_ranks": r0, "rows": rows,
            "host": platform.node(), "date": _now(), "records": records}


def _git_commit() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _markdown(st: dict, pngs: list[str]) -> str:
    lines = [f"# Scaling: {st['algorithm']} on {st['graph']}", "",
             f"{len(st['records'])} run(s) on {st['host']}, {st['date']}, commit {st.get('commit') or 'unknown'}. "
             f"Speedup and efficiency are against {st['base_ranks']} rank(s).", "",
             "Command: `distgraph " + " ".join([st["algorithm"], str(st["graph"]), *map(str, st["records"][0].get("args") or [])])
             + "` (with `--json`), one MPI job per rank count.", "",
             "| ranks | time (s) | speedup | efficiency | time from |", "| ---: | ---: | ---: | ---: | --- |"]
    for r in st["rows"]:
        lines.append(f"| {r['ranks']} | {r['time_s']:.6g} | {r['speedup']:.3g} | {r['efficiency']:.3g} | {r['time_source']} |")
    last = st["rows"][-1]
    lines += ["", f"On {last['ranks']} rank(s): speedup {last['speedup']:.3g}, "
                  f"parallel efficiency {100 * last['efficiency']:.0f}%."]
    if any(r["time_source"] == "wall_s" for r in st["rows"]):
        lines += ["", "Some times are wall-clock times of the whole run (start-up and reading included): "
                      "the command printed no `time_s`."]
    if pngs:
        lines += [""] + [f"![{os.path.splitext(p)[0]}]({p})" for p in pngs]
    return "\n".join(lines) + "\n"


def _plots(st: dict, outdir: str) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'distgraph[bench]' (or pip install matplotlib), "
                          "or pass --no-plots") from None
    rows = st["rows"]
    ranks = [r["ranks"] for r in rows]
    title = f"{st['algorithm']} on {st['graph']}"
    made = []

    def fig(name, ys, ylabel, ideal=None, logy=False):
        f, ax = plt.subplots(figsize=(5, 3.6), dpi=110)
        ax.plot(ranks, ys, "o-", label="measured")
        if ideal is not None:
            ax.plot(ranks, ideal, "--", color="gray", label="ideal")
            ax.legend()
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(r) for r in ranks])
        ax.set_xlabel("ranks")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        f.tight_layout()
        f.savefig(os.path.join(outdir, name))
        plt.close(f)
        made.append(name)

    r0 = st["base_ranks"]
    fig("time.png", [r["time_s"] for r in rows], "time (s)", logy=True)
    fig("speedup.png", [r["speedup"] for r in rows], f"speedup vs {r0} rank(s)", ideal=[n / r0 for n in ranks])
    fig("efficiency.png", [r["efficiency"] for r in rows], "parallel efficiency", ideal=[1.0] * len(ranks))
    lv = [r for r in rows if r.get("level_times_s")]
    if lv:
        f, ax = plt.subplots(figsize=(5, 3.6), dpi=110)
        for r in lv:
            ax.plot(range(len(r["level_times_s"])), r["level_times_s"], "o-", ms=3, label=f"{r['ranks']} rank(s)")
        ax.set_xlabel("BFS level")
        ax.set_ylabel("time (s)")
        ax.set_yscale("log")
        ax.set_title(f"time per level: {title}", fontsize=10)
        ax.legend()
        ax.grid(True, alpha=0.3)
        f.tight_layout()
        f.savefig(os.path.join(outdir, "bfs_levels.png"))
        plt.close(f)
        made.append("bfs_levels.png")
    return made


def write_report(records: list[dict], outdir: str, plots: bool = True) -> dict:
    """Write ``scaling.json``, ``summary.md`` and the PNG plots to OUTDIR; return the study."""
    os.makedirs(outdir, exist_ok=True)
    st = study(records)
    commits = {r.get("commit") for r in records if r.get("commit")}
    st["commit"] = ", ".join(sorted(commits)) if commits else _git_commit()  # the runs' commits, if recorded
    st["plots"] = []

    def save():
        _write_json(os.path.join(outdir, "scaling.json"), st)
        with open(os.path.join(outdir, "summary.md"), "w") as f:
            f.write(_markdown(st, st["plots"]))

    save()  # the numbers are kept even when the plots cannot be made
    if plots:
        st["plots"] = _plots(st, outdir)
        save()
    return st
