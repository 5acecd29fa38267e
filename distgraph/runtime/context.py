"""The SPMD context: communicator, rank, size, local rank, backend, GPU binding.

The one place that knows about MPI launchers. Local rank is taken, in order, from
``OMPI_COMM_WORLD_LOCAL_RANK`` (Open MPI), ``MPI_LOCALRANKID`` (MPICH/Hydra),
``SLURM_LOCALID`` (srun), ``PMI_LOCAL_RANK``/``PALS_LOCAL_RANKID``, and otherwise from
an ``MPI_COMM_TYPE_SHARED`` split of the communicator. A rank binds to GPU
``local_rank % visible_gpus`` unless ``DISTGRAPH_DEVICE`` says otherwise. The binding is the
process's: a context on another communicator (``MPI.COMM_SELF``: a one-rank runner inside an
MPI job) keeps the GPU of the ``COMM_WORLD`` context, else the launcher's local rank, else (a
communicator of several ranks) its node split's local rank, else the current device; it never
rebinds rank 1 to GPU 0 because it is rank 0 of ``COMM_SELF``.

With the GPU backend, the context counts the ranks of its communicator on this host bound to
the same GPU (same PCI bus id; ``Context.device_share``, at least that of the ``COMM_WORLD``
context on a sub-communicator) and hands the count to
:func:`distgraph.backends.gpu.memory.set_device_share`: ranks sharing one GPU (several NVSHMEM
PEs, ``split="sources"`` ranks) then each plan with at most their part of its memory
(:func:`~distgraph.backends.gpu.memory.free_bytes`) instead of each planning with all of it;
on ``COMM_WORLD`` of several ranks it also measures what their CUDA contexts take
(:func:`~distgraph.backends.gpu.memory.measure_overhead`), which those parts leave out.

The backend is ``"gpu"`` when CuPy imports and sees a GPU, otherwise ``"cpu"``;
``DISTGRAPH_BACKEND`` or an explicit ``backend=`` overrides it. Asking for ``"gpu"``
where none is usable raises :class:`~distgraph.errors.BackendUnavailableError` with the
install command; it never silently falls back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import BackendUnavailableError, InvalidArgumentError
from .config import config

__all__ = ["Context", "device_group", "device_key", "get_context", "gpu_count", "local_rank_from_env",
           "mpi_vendor", "ranks_sharing_device"]

_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                    "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "MV2_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE",
                    "PMI_LOCAL_SIZE", "PALS_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")


def local_rank_from_env(environ=None):
    """``(local_rank, local_size)`` from launcher variables, or ``(None, None)``."""
    env = os.environ if environ is None else environ
    lr = next((int(env[v]) for v in _LOCAL_RANK_VARS if env.get(v, "").isdigit()), None)
    ls = next((int(env[v]) for v in _LOCAL_SIZE_VARS if env.get(v, "").isdigit()), None)
    return lr, ls


def gpu_count() -> int:
    """Number of GPUs CuPy can see (0 without CuPy or a driver). Never raises."""
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime

        return int(runtime.getDeviceCount())
    except Exception:
        return 0


def device_key(cupy, device: int) -> str:
    """Who GPU ``device`` is across the processes of a host: its PCI bus id (two ranks that
    each see only their own GPU both number it 0), or ``"device <index>"`` where CuPy cannot
    tell (a stand-in)."""
    try:
        return str(cupy.cuda.Device(device).pci_bus_id)
    except Exception:  # noqa: BLE001
        return f"device {device}"


def device_group(comm, key: str):
    """The ranks of ``comm`` on this host (its ``COMM_TYPE_SHARED`` split), this one included,
    with the device key ``key`` (:func:`device_key`), as a new communicator (the caller frees
    it). Collective over ``comm``."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        keys = node.allgather(key)
        return node.Split(keys.index(key), node.Get_rank())
    finally:
        node.Free()


def ranks_sharing_device(comm, key: str) -> int:
    """How many ranks of ``comm`` on this host, this one included, have the device key ``key``
    (:func:`device_group`). Collective over ``comm``."""
    if comm.Get_size() == 1:
        return 1
    grp = device_group(comm, key)
    try:
        return grp.Get_size()
    finally:
        grp.Free()


def mpi_vendor() -> str:
    from mpi4py import MPI

    name, ver = MPI.get_vendor()
    return f"{name} {'.'.join(map(str, ver))}"


@dataclass
class Context:
    comm: object
    rank: int
    size: int
    local_rank: int
    local_size: int
    backend: str
    device: int | None  # GPU index bound, None on cpu
    device_share: int = 1  # ranks of this host bound to the same GPU (this one included; 1 on cpu)

    @property
    def is_root(self) -> bool:
        return self.rank == 0


_ctx: Context | None = None
#: the most ranks of this host any GPU context of this process counted on each GPU (by index):
#: a context on a communicator that sees fewer of them (COMM_SELF) keeps that count
_shares: dict = {}


def _resolve_backend(requested: str | None) -> str:
    b = requested or config.backend
    if b not in ("auto", "cpu", "gpu"):
        raise InvalidArgumentError(f"backend must be 'auto', 'cpu' or 'gpu'; got {b!r}")
    if b == "cpu":
        return "cpu"
    ngpu = gpu_count()
    if b == "gpu" and ngpu == 0:
        raise BackendUnavailableError(
            "backend 'gpu' needs CuPy and a visible GPU; none found. "
            "Install with: pip install 'distgraph[gpu]' (CUDA 13: cupy-cuda13x, nvshmem4py-cu13; "
            "CUDA 12: cupy-cuda12x, nvshmem4py-cu12), or use --backend cpu")
    return "gpu" if ngpu > 0 else "cpu"


def get_context(comm=None, backend: str | None = None) -> Context:
    """The context of this process (created on first call; ``backend`` re-resolves it).
    Collective over ``comm``: the ranks agree on the backend and, with the GPU backend, count
    the ranks bound to each GPU (``Context.device_share``, module docstring)."""
    global _ctx
    from mpi4py import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    if _ctx is not None and _ctx.comm is comm and backend in (None, _ctx.backend):
        return _ctx
    rank, size = comm.Get_rank(), comm.Get_size()
    lr, ls = local_rank_from_env()
    if lr is None or ls is None or comm is not MPI.COMM_WORLD:
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
        lr, ls = node.Get_rank(), node.Get_size()
        node.Free()
    # All ranks must agree on the backend, or collectives would mismatch.
    be = _resolve_backend(backend)
    agreed = comm.allgather(be)
    if len(set(agreed)) != 1:
        raise BackendUnavailableError(f"ranks disagree on the backend ({agreed}); set --backend explicitly")
    device, share = None, 1
    if be == "gpu":
        import cupy

        ngpu = gpu_count()
        if config.device >= 0:
            device = config.device
        elif comm is MPI.COMM_WORLD:
            device = lr % ngpu
        elif _ctx is not None and _ctx.device is not None:
            device = _ctx.device  # a sub-communicator keeps the process's GPU
        else:
            env_lr = local_rank_from_env()[0]
            if env_lr is not None:
                device = env_lr % ngpu
            elif size > 1:
                device = lr % ngpu  # a communicator of several ranks: its node split's local rank
            else:
                device = int(cupy.cuda.runtime.getDevice())
        cupy.cuda.Device(device).use()
        # ranks bound to this GPU plan with their part of it (backends.gpu.memory.free_bytes);
        # a sub-communicator (COMM_SELF: split="sources") sees fewer ranks than the job's
        share = ranks_sharing_device(comm, device_key(cupy, device))
        if comm is not MPI.COMM_WORLD:  # the count of COMM_WORLD, or of any other communicator, kept
            share = max(share, _shares.get(device, 1),
                        _ctx.device_share if _ctx is not None and _ctx.device == device else 1)
        _shares[device] = share
        from ..backends.gpu.memory import measure_overhead, set_device_share

        set_device_share(share)
        if size > 1 and comm is MPI.COMM_WORLD:  # collective, once (the context is cached): the
            # contexts' memory, left out of the plans of ranks sharing a GPU
            measure_overhead(comm, device_key(cupy, device), "context", share=share)
    ctx = Context(comm, rank, size, lr, ls, be, device, share)
    if comm is MPI.COMM_WORLD:
        _ctx = ctx
    return ctx
