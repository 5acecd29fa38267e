"""Exact closeness centrality on GPUs: the GPU runner of the shared batch driver.

:func:`distgraph.algorithms.closeness.closeness` picks the graph ``H`` to search and the
sources, then runs :func:`distgraph.algorithms.msbfs.run_batches` (checkpoint per
batch, progress bar, MPI reduction of the integer sums).  On ``backend="gpu"`` the
driver is given the runner made here, a :class:`~distgraph.backends.gpu.msbfs.GpuMSBFS`
(BLEST Alg. 5 over BVSS, ``kernels/msbfs.cu``), so farness, reach and harmonic sums --
and the closeness computed from them -- equal the CPU backend's bit for bit.

Settings (``distgraph.runtime.config``, environment ``DISTGRAPH_<NAME>``):
``gpu_msbfs_kappa`` (concurrent BFSs per launch, 256), ``gpu_msbfs_mode`` (``auto``:
replicated when the memory plan fits one GPU, partitioned over the ranks' GPUs with
NVSHMEM otherwise; or forced), ``gpu_msbfs_bu_ratio`` (bottom-up switch, 0 = never),
``gpu_msbfs_groups`` (concurrent 256-source launches per kernel, or ``blocks``: one thread
block per batch, the ``auto`` choice on small graphs),
``gpu_msbfs_sparse`` (``auto``/``on``/``off``: stage 1 runs virtual slice sets of at most 32
slices one slice per lane on CUDA cores; ``auto`` turns it on for road-like graphs),
``gpu_msbfs_pull`` (``auto``/``on``/``off``: the block schedule runs each level as one pull
over the candidate slice sets; ``auto``: where the sparse path is on and no vertex has more
than 512 in-arcs), ``gpu_bfs_window`` (Jaccard window of the reordering).
"""

from __future__ import annotations

__all__ = ["make_runner"]


def make_runner(hptr, hidx, tptr, tidx, *, ctx, kappa=None, mode=None, bu_ratio=None, reorder="auto",
                announce=None, cache_dir=None, all_sources=False, sparse=None, pull=None):
    """The GPU batch runner for the closeness driver.

    Parameters
    ----------
    hptr, hidx, tptr, tidx : arrays
        CSR of the searched graph ``H`` and of its transpose.
    ctx : Context
    kappa, mode, bu_ratio : optional
        Override ``config.gpu_msbfs_kappa`` / ``gpu_msbfs_mode`` / ``gpu_msbfs_bu_ratio``.
    reorder : {"auto", "jaccard", "rcm", "none"}
    announce : bool or None
        Print the mode and memory plan on rank 0 (None: when progress bars are shown).
    all_sources : bool
        The caller runs every vertex of ``H`` with arcs as a source, once, and uses only the
        total of the per-vertex sums (closeness of all vertices).  When ``H`` is symmetric
        too, the block schedule adds each BFS's sums at its source instead
        (``GpuMSBFS(symmetric=True)``): same totals, less memory traffic.  Checkpoints then
        hold per-batch sums that only add up to the result over all batches.
    sparse : {"auto", "on", "off", True, False} or None
        Stage 1's sparse path (``GpuMSBFS(sparse=...)``); None: ``config.gpu_msbfs_sparse``.
    pull : {"auto", "on", "off", True, False} or None
        The pull kernel of the block schedule (``GpuMSBFS(pull=...)``); None:
        ``config.gpu_msbfs_pull``.

    Returns
    -------
    GpuMSBFS

    Raises
    ------
    BackendUnavailableError
        No CuPy / GPU, or partitioned mode without nvshmem4py.
    DeviceMemoryError
        The plan of the chosen mode does not fit this rank's share of the GPU (raised before
        allocating), with hints; or an allocation failed anyway (raised on every rank).
    """
    import numpy as np

    from ...runtime.config import config
    from .msbfs import GpuMSBFS

    kappa = config.gpu_msbfs_kappa if kappa is None else kappa
    mode = config.gpu_msbfs_mode if mode is None else mode
    bu_ratio = config.gpu_msbfs_bu_ratio if bu_ratio is None else bu_ratio
    symmetric = bool(all_sources) and np.array_equal(hptr, tptr) and np.array_equal(hidx, tidx)
    return GpuMSBFS(hptr, hidx, tptr, tidx, ctx=ctx, kappa=kappa, mode=mode, reorder=reorder, bu_ratio=bu_ratio,
                    announce=announce, cache_dir=cache_dir, symmetric=symmetric, sparse=sparse,
                    pull=pull)
