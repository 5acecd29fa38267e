"""benchmarks/partition_cut.py: the share of arcs between the ranks' vertex blocks."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import partition_cut  # noqa: E402


def test_cut_share_by_hand():
    # two triangles {0,1,2} and {3,4,5} joined by the arcs 2-3 and 3-2: 14 arcs, 7 per half
    pairs = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (2, 3)]
    s = np.array([p[0] for p in pairs] + [p[1] for p in pairs])
    d = np.array([p[1] for p in pairs] + [p[0] for p in pairs])
    o = np.lexsort((d, s))
    s, d = s[o], d[o]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(s, minlength=6))])
    assert partition_cut.cut_share(indptr, d, 2) == 2 / 14
    assert partition_cut.cut_share(indptr, d, 1) == 0.0
    assert partition_cut.cut_share(np.zeros(4, np.int64), np.zeros(0, np.int64), 2) == 0.0
