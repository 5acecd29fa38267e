"""benchmarks/msbfs_profile_model.py (host only): the distance-profile wave ends with the exact
distances (checked against scipy inside the model) and counts the fixes that paths coming around
need; the bit kernel's events against a count made by hand."""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import msbfs_profile_model as pm  # noqa: E402


def _sym(edges, n):
    r = np.array([a for a, b in edges] + [b for a, b in edges])
    c = np.array([b for a, b in edges] + [a for a, b in edges])
    return sp.csr_matrix((np.ones(r.size, np.int8), (r, c)), shape=(n, n))


def test_cycle_needs_fixes():
    # a 10-cycle, sources 0 and 5: vertex 2's distance from 5 (3, via 3 and 4) comes from 3, a
    # vertex of the same base level visited after 2: a fix
    A = _sym([(i, (i + 1) % 10) for i in range(10)], 10)
    row = pm.batch_model(A, np.array([0, 5]))
    assert row["wave_exact"] and row["fixes"] > 0
    assert row["levels"] == 2 and row["spread_max"] == 5
    # events: every vertex but the sources gets its two distances at two levels, 0 and 5 at 0
    # and 5 (two each as well): 20
    assert row["bit_events"] == 20


def test_path_from_one_end_needs_one_fix():
    # a path with the sources 0, 1, 2 at one end: beyond them every distance comes from below;
    # vertex 0, visited first, learns its distance from 2 only when 1 is visited (one fix)
    A = _sym([(i, i + 1) for i in range(30)], 31)
    row = pm.batch_model(A, np.array([0, 1, 2]))
    assert row["wave_exact"] and row["fixes"] == 1
    assert row["spread_max"] == 2 and row["wave_arcs"] == 60


def test_disconnected_and_grid():
    from distgraph import generators as gen

    g = gen.grid(17, 13)
    n = g.n + 5   # five isolated vertices
    A = sp.csr_matrix((np.ones(g.indices.size, np.int8), g.indices, np.r_[g.indptr, [g.indptr[-1]] * 5]),
                      shape=(n, n))
    row = pm.batch_model(A, np.array([0, 1, 17, 18, 100]))
    assert row["wave_exact"] and row["vertices_reached"] == g.n


def test_batch_spread_path():
    # path 0-...-9, sources at both ends: base min(v, 9 - v), largest at 4 and 5 (4); the spread
    # |v - (9 - v)| is largest at the ends (9)
    import msbfs_batch_spread as bs

    A = _sym([(i, i + 1) for i in range(9)], 10)
    row = bs.batch_spread(A, np.array([0, 9]))
    assert row == {"sources": 2, "levels": 4, "spread_max": 9, "spread_mean": 5.0, "over_254": False}
    far = _sym([(i, i + 1) for i in range(299)], 300)
    assert bs.batch_spread(far, np.array([0, 299]))["over_254"]
