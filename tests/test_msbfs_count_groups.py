"""benchmarks/msbfs_count_groups.py (host only): the atomics and loop iterations of the pull
kernel's per-source count loop per warp, with and without lanes of identical new-bit sets
combined, on hand-made sets; and one batch of a path graph against counts made by hand."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import msbfs_count_groups as cg  # noqa: E402


def test_warp_counts_by_hand():
    # 33 lanes: warp 0 = 31 lanes of set {0, 1} and one of {5}; warp 1 = one lane of {0, 1, 2}
    keys = np.array([[0b11]] * 31 + [[0b100000], [0b111]], np.uint64)
    pc = np.array([2] * 31 + [1, 3], np.int64)
    c = cg.warp_counts(keys, pc, np.arange(33))
    assert c == dict(atomics=62 + 1 + 3, iterations=2 + 3, atomics_grouped=2 + 1 + 3, iterations_grouped=2 + 3,
                     lanes_in_a_group_not_first=30)
    # another order puts the {5} lane in warp 1: warp 0 = 31 x {0, 1} + {0, 1, 2}
    order = np.array(list(range(31)) + [32, 31])
    c = cg.warp_counts(keys, pc, order)
    assert c["atomics"] == 66 and c["atomics_grouped"] == 2 + 3 + 1 and c["iterations"] == 3 + 1


def test_batch_counts_path():
    # path 0-1-2-3, sources 0 and 3: level 1 reaches 1 (from 0) and 2 (from 3); level 2 reaches
    # 2 (from 0) and 1 (from 3); level 3 reaches 3 and 0: 6 events, 6 new bits
    import scipy.sparse as sp

    r, c = np.array([0, 1, 1, 2, 2, 3]), np.array([1, 0, 2, 1, 3, 2])
    A = sp.csr_matrix((np.ones(6, np.int8), (r, c)), shape=(4, 4))
    t = cg.batch_counts(A, np.array([0, 3]), np.random.default_rng(0))
    assert t["levels"] == 3 and t["events"] == 6 and t["new_bits"] == 6
    assert t["by_id"]["atomics"] == 6 and t["by_id"]["atomics_grouped"] == 6   # no two lanes share a set
    assert t["by_id"]["iterations"] == 3
