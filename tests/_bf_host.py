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
