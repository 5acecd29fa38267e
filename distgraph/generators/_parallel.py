"""Chunks of a generator computed by a pool of threads, handed out in order.

The generators draw each chunk from its own seeded stream (``PCG64(SeedSequence([seed,
k]))``), so chunks are independent and a chunk is the same whoever computes it.  Their
work -- ``random_raw`` and the ``nogil`` numba kernels -- runs without the GIL, so
threads overlap it; :func:`ordered_map` keeps at most ``2 * threads`` chunks in flight
and yields results in input order, which keeps the generated graph exactly the one a
single thread makes.  The thread count is numba's (``NUMBA_NUM_THREADS``, or what the
launchers set per rank).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numba as nb

__all__ = ["ordered_map"]


def ordered_map(fn, items, threads: int | None = None):
    """Yield ``fn(item)`` for every item, in order, computed by up to ``threads`` threads."""
    items = list(items)
    threads = nb.get_num_threads() if threads is None else int(threads)
    if threads <= 1 or len(items) <= 1:
        for x in items:
            yield fn(x)
        return
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="distgraph-gen") as pool:
        todo = iter(items)
        pending = deque(pool.submit(fn, x) for _, x in zip(range(2 * threads), todo))
        while pending:
            result = pending.popleft().result()
            for x in todo:
                pending.append(pool.submit(fn, x))
                break
            yield result
