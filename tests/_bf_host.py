"""Host stand-ins for the GPU Bellman-Ford driver's tests without a GPU (test_bellman_ford.py,
test_bellman_ford_phases.py): numpy arrays with CuPy's ``.get()``/``.set()`` and a CuPy module
with just what QueueSSSP's host logic calls."""

import numpy as np


class HostArray(np.ndarray):
    """A numpy array with CuPy's ``.get()`` and ``.set()``."""

    def get(self):
        return np.asarray(self).copy()

    def set(self, x):
        self[...] = x


class FakeCuPy:
    class cuda:
        class Device:
            def synchronize(self):
                pass


class HostBlock:
    """Stands in for the GPU driver's device block (``bellman_ford._Block``) in the finish:
    the canonical predecessors by the CPU backend's tight-arc pass, in the device kernel's
    convention (uint64, ``2**64 - 1`` where no tight arc enters)."""

    def __init__(self, lo, hi, indptr, indices, ww, wdt):
        self.lo, self.hi, self.indptr, self.indices, self.ww, self.wdt = lo, hi, indptr, indices, ww, wdt

    def tight_pred(self, d, names=None, order=None):
        from distgraph.backends.cpu.bellman_ford import INF_OF, _tight_min_pred

        d = np.asarray(d)
        best = np.full(d.shape[0], np.iinfo(np.int64).max, np.int64)
        if names is None:
            _tight_min_pred(self.lo, self.hi, self.indptr, self.indices, self.ww, d, INF_OF(self.wdt), best)
        else:  # the tails by their names: the smallest name of a tight tail
            inf = INF_OF(self.wdt)
            src = self.lo + np.repeat(np.arange(self.hi - self.lo), np.diff(self.indptr))
            dst = np.asarray(self.indices, np.int64)
            ok = (d[src] != inf) & (d[dst] != inf) & (d[src] + self.ww.astype(d.dtype) == d[dst])
            np.minimum.at(best, dst[ok], np.asarray(names, np.int64)[src[ok]])
        out = best.view(np.uint64)
        out[best == np.iinfo(np.int64).max] = np.iinfo(np.uint64).max
        return out if order is None else out[np.asarray(order)]


def host_views(q):
    """Give a stand-in QueueSSSP built with ``_setup`` the attributes the driver's host half
    reads from the upload: the default delta's host views and the finish's block."""
    q._h_indptr, q._h_w = q.indptr, q.ww
    q.block = HostBlock(q.lo, q.hi, q.indptr, q.indices, q.ww, q.wdt)
