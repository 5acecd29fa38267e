"""A progress bar with ETA, drawn on rank 0 only.

On a terminal it redraws one line; elsewhere (batch jobs, CI logs) it prints a line
at most every ``interval`` seconds, so that a Slurm output file shows progress
without megabytes of carriage returns.

>>> with Progress(total=3, desc="batches", enabled=False) as p:
...     for _ in range(3):
...         p.update()
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "format_seconds"]


def format_seconds(s: float) -> str:
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class Progress:
    def __init__(self, total: int, desc: str = "", *, rank: int = 0, enabled=None,
                 initial: int = 0, interval: float | None = None, stream=None):
        from .config import config

        self.total = max(int(total), 0)
        self.desc = desc
        self.n = int(initial)
        self._start_n = self.n
        self.stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if enabled is None:
            mode = config.progress
            enabled = mode == "on" or (mode == "auto" and tty)
        self.enabled = bool(enabled) and rank == 0
        self.tty = tty
        self.interval = interval if interval is not None else (0.2 if tty else 30.0)
        self.t0 = time.perf_counter()
        self._last = 0.0

    def __enter__(self):
        self._draw(force=True)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, k: int = 1) -> None:
        self.n += k
        self._draw()

    def eta(self) -> float | None:
        done = self.n - self._start_n
        if done <= 0:
            return None
        el = time.perf_counter() - self.t0
        return el / done * max(self.total - self.n, 0)

    def line(self) -> str:
        el = time.perf_counter() - self.t0
        frac = self.n / self.total if self.total else 1.0
        width = 24
        fill = int(frac * width)
        bar = "#" * fill + "-" * (width - fill)
        eta = self.eta()
        eta_s = "?" if eta is None else format_seconds(eta)
        return f"{self.desc} [{bar}] {self.n}/{self.total} {100 * frac:5.1f}% elapsed {format_seconds(el)} eta {eta_s}"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval and self.n < self.total:
            return
        self._last = now
        if self.tty:
            self.stream.write("\r" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(force=True)
            if self.tty:
                self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
