"""Shared by the SpMV tests (test_spmv.py, test_k2tree_reorder.py): the semirings and a
scipy reference product over a matrix's Boolean pattern."""

import numpy as np
import scipy.sparse as sp

SEMIRINGS = ["plus_times", "lor_land", "min_plus"]


def reference(A, x, sr, left):
    """y = A x (or x^T A) over ``sr`` for the Boolean pattern of ``A``; x is 1-D or 2-D."""
    P = sp.csr_array((A != 0).astype(np.int64))
    if left:
        P = sp.csr_array(P.T)
    x2 = x.reshape(x.shape[0], -1)
    if sr == "plus_times":
        y = P @ x2
    elif sr == "lor_land":
        y = (P @ (x2 != 0).astype(np.int64)) > 0
    else:
        x2 = x2.astype(np.float64) if x2.dtype.kind != "f" else x2
        y = np.full((P.shape[0], x2.shape[1]), np.inf, dtype=x2.dtype)
        rows = np.flatnonzero(np.diff(P.indptr))
        if rows.size:
            vals = x2[P.indices] + 1
            y[rows] = np.minimum.reduceat(vals, P.indptr[rows], axis=0)
    return y.reshape((P.shape[0],) + x.shape[1:])

