"""Rank-prefixed logging: ``[distgraph 1/4] WARNING: message``."""

from __future__ import annotations

import logging
import sys

__all__ = ["get_logger", "setup_logging"]

_configured = False


def setup_logging(rank: int = 0, size: int = 1, level: str | int | None = None) -> logging.Logger:
    global _configured
    from .config import config

    logger = logging.getLogger("distgraph")
    if not _configured:
        handler = logging.StreamHandler(sys.stderr)
        logger.addHandler(handler)
        logger.propagate = False
        _configured = True
    for h in logger.handlers:
        h.setFormatter(logging.Formatter(f"[distgraph {rank}/{size}] %(levelname)s: %(message)s"))
    logger.setLevel(level if level is not None else config.log_level.upper())
    return logger


def get_logger(name: str | None = None) -> logging.Logger:
    return logging.getLogger("distgraph" + ("." + name if name else ""))
