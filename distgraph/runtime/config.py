"""One runtime configuration object with typed defaults and ``DISTGRAPH_*`` overrides.

Precedence, highest first: an explicit argument (CLI flag or keyword), then the
environment variable ``DISTGRAPH_<NAME>`` (upper case), then the default below.
Unknown ``DISTGRAPH_*`` variables are rejected so that a typo never goes unnoticed.

>>> from distgraph.runtime.config import config
>>> config.bfs_alpha
15
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, fields

from ..errors import InvalidArgumentError

__all__ = ["Config", "config", "reload_config"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
# Variables that are read elsewhere and are not config keys.
_NOT_KEYS = {"DISTGRAPH_TEST_TIMEOUT", "DISTGRAPH_TEST_LOGDIR",  # tests/run.sh, tests/mpi_pytest.py
             "DISTGRAPH_DATA",  # tests/conftest.py and benchmarks/: the shared data folder
             "DISTGRAPH_NVSHMEM_INCLUDE", "DISTGRAPH_COMMIT",  # tests/test_kernels_compile.py, gpu_check.sh
             "DISTGRAPH_NVRTC_OPTIONS",  # backends/gpu/loader.py reads it when it compiles a module
             # launch/dglaunch.py (LAUNCH_VARS): read by the launchers, removed before the command runs
             "DISTGRAPH_LAUNCH_THREADS", "DISTGRAPH_LAUNCH_GPUS", "DISTGRAPH_LAUNCH_BIND",
             "DISTGRAPH_LAUNCH_SYMMETRIC_SIZE", "DISTGRAPH_LAUNCH_MEMORY_PLAN", "DISTGRAPH_LAUNCH_NVLS",
             "DISTGRAPH_LAUNCH_MPIEXEC", "DISTGRAPH_LAUNCH_SRUN_MPI"}


@dataclass
class Config:
    #: "auto" (gpu when CuPy sees a GPU, else cpu), "cpu" or "gpu".
    backend: str = "auto"
    #: Python logging level name for the "distgraph" logger.
    log_level: str = "WARNING"
    #: "auto" (rank 0, when stderr is a terminal), "on" or "off".
    progress: str = "auto"
    #: Where compiled kernels, BVSS and k2-tree caches go.
    cache_dir: str = os.path.join(os.path.expanduser("~"), ".cache", "distgraph")
    #: Direction-optimizing BFS switch parameters (Beamer et al.; gapbs defaults).
    bfs_alpha: int = 15
    bfs_beta: int = 18
    #: Sources per multi-source BFS batch on the CPU (multiple of 64, <= 512).
    msbfs_batch: int = 512
    #: How closeness groups sources into batches (per-vertex sums): "degree" (consecutive
    #: in decreasing-degree order), "ball" (compact groups: BFS balls, so a batch's searches
    #: reach each vertex at nearly the same level: 1.9-3x faster on roads, grids and geometric
    #: graphs, benchmarks/results/cpu_batch_order.json) or "auto" (ball on graphs of high
    #: diameter that are not scale-free, degree otherwise, see msbfs.cpu_batch_order; on GPUs
    #: "degree" keeps the input order). GPU, block schedule, kernel time at 1024 threads:
    #: road-NY 2.69 s in balls vs 5.09 s in input order, the grouping 0.23 s on the host; on
    #: cond-mat-2005 and email-Enron ("auto": input order) balls saved 6 and 2 ms of kernel
    #: for 0.12 and 0.10 s of grouping (benchmarks/results/gpu_closeness_block_sweep.json).
    msbfs_batch_order: str = "auto"
    #: GPU index override (-1: local rank modulo visible GPUs).
    device: int = -1
    #: Checkpointed runs (closeness --checkpoint): seconds between a rank's durable saves; a run also
    #: saves at its end, on an error and after SIGTERM/SIGUSR1. 0: after every batch (kron:20 on a GPU:
    #: 2048 writes of 40 MB, more than the computation).
    checkpoint_interval: float = 60.0
    #: Seconds a test or a run may wait on a peer before declaring a hang (0: forever).
    hang_timeout: float = 0.0
    #: GPU BFS (BLEST): update divergence above which lazy updates (Alg. 3) are used.
    gpu_bfs_udiv_threshold: float = 25000.0
    #: GPU BFS (BLEST Eq. 6): run a level bottom-up when #unvisited < eta * |queue|.
    gpu_bfs_eta: int = 10
    #: GPU BFS: edge test that must also hold for a bottom-up level (not in BLEST): the in-arcs
    #: the pass is expected to scan, min(mu, unvisited * m / mf), at most alpha * mf (mf: in-arcs
    #: of the frontier; mu: of the unvisited vertices). 0: Eq. 6 alone, as the paper.
    gpu_bfs_alpha: float = 2.0
    #: GPU BFS: in-arcs per round of the bottom-up scan (BLEST Alg. 4; DG_BFS_BU_CHUNK in
    #: kernels/bvss_bfs.cu): the loads of a round are issued together. 1: one arc per round, as
    #: BLEST. 4 on the H200 (64 GAP sources, switch-eq6, chunk 1 / 4 / 8): urand:27 15.18 / 13.52 /
    #: 15.59 ms, kron:27 7.42 / 7.16 / 7.40, urand:21 0.241 / 0.222 / 0.225, kron:24 (Jaccard)
    #: 0.948 / 0.941 / 0.940 (benchmarks/results/session6_x2/call3/).
    gpu_bfs_bu_chunk: int = 4
    #: GPU BFS: bottom-up levels hand unvisited vertices to idle lanes from a work list per warp
    #: (DG_BFS_BU_LIST) instead of one vertex per lane until the warp's longest scan ends.
    #: "auto": on for graphs that are not scale-free-like (BLEST's footnote-2 test). H200, 64 GAP
    #: sources, chunk 4, without / with lists: urand:27 switch-eq6 13.51 / 13.18 ms, urand:24 switch
    #: 1.594 / 1.485, urand:21 0.228 / 0.224, but kron:21 (Jaccard) 0.199 / 0.232
    #: (benchmarks/results/session6_x2/call4/).
    gpu_bfs_bu_list: object = "auto"
    #: GPU BFS: window width W of the Jaccard-with-windows reordering (BLEST Alg. 1).
    #: 16384, not the paper's 2**16: on kron:22 (H200, both kernels) BFS after W=16384 is
    #: 19% faster than after 2**16 and the reordering cheaper (gpu_bfs_session3.json).
    gpu_bfs_window: int = 16384
    #: GPU closeness (BLEST Alg. 5): concurrent BFSs per launch, 32, 64, 128 or 256.
    gpu_msbfs_kappa: int = 256
    #: GPU closeness mode: auto (by the memory plan), replicated, partitioned or stepwise.
    gpu_msbfs_mode: str = "auto"
    #: GPU closeness: bottom-up level when frontier out-arcs * ratio > unfinished in-arcs (0: never;
    #: 1 measured fastest on the H200, benchmarks/results/gpu_closeness_profile.json).
    gpu_msbfs_bu_ratio: int = 1
    #: GPU closeness: 256-source launches one persistent kernel runs at once, or "blocks" (one thread
    #: block per batch; "auto": blocks up to 2^22 arcs, then 1; 4 or 2 only in the grid-schedule companion
    #: that takes the block schedule's small runs wanted at once: checkpoint, per-source sums).
    gpu_msbfs_groups: str = "auto"
    #: GPU closeness, block schedule: threads of the block that runs one batch, 256, 512 or 1024.
    #: 1024 (64 registers, 32 warps per SM): road-NY 5.09 vs 7.61 s, cond-mat-2005 31 vs 46 ms,
    #: email-Enron 15 vs 27 ms at 256 (H200, benchmarks/results/gpu_closeness_block_sweep.json).
    gpu_msbfs_block_threads: int = 1024
    #: GPU closeness: stage 1 runs virtual slice sets of at most 32 slices one slice per lane on CUDA
    #: cores (kernels/msbfs.cu, DG_MS_SPARSE): "on", "off" or "auto" (on when at least
    #: msbfs.SPARSE_SHARE = 60% of the VSSs are that sparse: all of road-NY's, 69% of cond-mat-2005's
    #: and email-Enron's; H200: 2.67 -> 1.71 s, 29.2 -> 25.2 ms, 13.3 -> 11.0 ms,
    #: benchmarks/results/session6_x2/call6/h1/gpu_closeness_sparse.json; Kronecker and urand graphs
    #: hold 12-23% at scales 16-18, off: benchmarks/results/msbfs_sparse_share_synthetic.json).
    gpu_msbfs_sparse: str = "auto"
    #: GPU closeness, block schedule: each level as one pull over the candidate slice sets
    #: (kernels/msbfs.cu, distgraph_msbfs_pull_blocks) instead of stage 1 + stage 2: "auto" (where
    #: gpu_msbfs_sparse is on and no vertex has more than msbfs.PULL_MAX_IN_DEGREE = 512 in-arcs:
    #: road-NY 1.73 -> 1.60 s, cond-mat-2005 18.7 -> 16.3 ms; not email-Enron, 9.0 -> 11.7 ms with
    #: it; H200, benchmarks/results/session7_x2/call6/), "on" or "off".
    gpu_msbfs_pull: str = "auto"
    #: GPU closeness, pull kernel: the vertices a level evaluates, "sets" (every vertex of a
    #: candidate slice set, distgraph_msbfs_pull_blocks), "vertices" (the out-neighbours of the
    #: previous frontier, each once: distgraph_msbfs_pull_vertex_blocks) or "auto" (vertices on
    #: graphs of at most 4 arcs per vertex whose bit per vertex fits in shared memory: road-NY
    #: 1.535 -> 1.345 s, 1.20-1.22 s since the pull marks the next candidates; cond-mat-2005,
    #: 17.1 -> 18.0 ms then, is left to "sets", msbfs.PULL_CANDIDATES).
    gpu_msbfs_pull_candidates: str = "auto"
    #: GPU closeness of every vertex of an undirected graph (block schedule, symmetric sums): a
    #: vertex whose only neighbour is p is not searched; p's BFS adds its sums too, at one level
    #: more (distgraph.algorithms.closeness.leaf_folds; exact; not in checkpointed runs). Folded:
    #: road-NY 15.6% of the vertices, email-Enron 28.6%, cond-mat-2005 8.2%; kernel time 1.208 ->
    #: 1.14 s, 18.9 -> 18.0 ms, 17.4 -> 13.8 ms (benchmarks/results/session11_x2/call3/).
    gpu_closeness_fold_leaves: bool = True
    #: GPU closeness of every vertex of an undirected graph of high diameter: the distance-profile
    #: wave (distgraph.backends.gpu.msbfs_wave.GpuWave: each vertex visited once per batch of 256
    #: sources, their distances kept as byte offsets from its base level) instead of the
    #: bit-parallel MS-BFS. "auto": on one rank, without a checkpoint, on graphs whose degrees are
    #: not heavy-tailed and whose BFS from the largest-degree vertex goes WAVE_MIN_DEPTH (128)
    #: levels deep or more (road-NY with folding: 0.385-0.391 s against 1.14 s for the bit kernel,
    #: closeness() end to end 0.602 against 1.286 s, benchmarks/results/session13_x2/call7/; on
    #: cond-mat-2005 and email-Enron, of low diameter, it was 8x and 6x slower:
    #: benchmarks/results/session12_x2/);
    #: "on" (any undirected graph, any rank count, no checkpoint) or "off".
    gpu_closeness_wave: str = "auto"
    #: Where the Kronecker and urand generators build the CSR of their edges: "cpu" (numba counting
    #: sort on the host) or "gpu" (chunks copied to the current CUDA device, one sort of 64-bit keys
    #: there: distgraph/generators/_csr_device.py; the same graph). Generating and preprocessing
    #: kron:26 / urand:26 with the host builder did not finish in 510 s on the H200 host (issue 4).
    gen_device: str = "cpu"
    #: Bellman-Ford ``mode="auto"`` on GPUs: round-based for at most this many rounds, then the
    #: queue-driven kernel from scratch (Kronecker 20-22 need 11-12 rounds, road-FLA 1973).
    gpu_sssp_auto_rounds: int = 64
    #: ... and sooner when this round still reaches vertices for the first time (the source
    #: has vertices this many arcs away or more: road-FLA reaches 171 of its 1.07M vertices in
    #: 16 rounds, Kronecker 18-20 their whole component in 4, benchmarks/results/hop_balls.json);
    #: 0: off.
    gpu_sssp_auto_probe: int = 16
    #: The GPU Bellman-Ford's rounds: threads that fault in the distances' host array while the
    #: GPU works (backends/gpu/bellman_ford.py, _Prefault; a thread per 16 MB at most); 0: none;
    #: -1: 4 on one rank, none on several (on two H200s, in 3 of 12 cases, the faulting ranks'
    #: rounds ran 1.2-1.7x slower in 4 to 7 of 9 trials; their copy to the host was 1.2-1.4x
    #: faster: benchmarks/results/session18/).
    gpu_sssp_prefault_threads: int = -1
    #: The GPU Bellman-Ford from many sources (``bellman_ford(graph, sources)``, ``BellmanFord``):
    #: the rounds run on the graph renamed by degree once they settled a source and at least this
    #: many runs are left (on one H200 the renaming's set-up was 245-423 sources' gain on
    #: Kronecker 20-22, benchmarks/results/session19/); 0: never.
    gpu_sssp_relabel_runs: int = 512
    #: The GPU Bellman-Ford from many sources (``bellman_ford(graph, sources)`` without
    #: predecessors or verify, rounds or auto mode, each source on one rank: one rank, or
    #: ``split="sources"``): this many sources' rounds run together, each arc read relaxing all
    #: of them (``RoundsSSSP.run_batch``, at most 32; on a deep graph, after its first batch, up
    #: to 4 such groups in step: ``BATCH_GROUPS``); 0 or 1: one source at a time. On one H200
    #: with 1024 sources, 32 took 3.7-4.7x less time per source than one at a time on Kronecker
    #: 20, 2.2-2.3x on Kronecker 22 and, with 256 sources, 13.8-21x on road-FLA
    #: (benchmarks/results/session22/, call 6; session 20's call 2: 16 and 8 were 1.1-1.3x and
    #: 1.4-1.7x slower than 32 on Kronecker).
    gpu_sssp_batch: int = 32
    #: ... and a batch's rounds stop after this many (at most max(4n, 1024)), its unsettled
    #: sources then running alone (a negative cycle, or a graph deeper than this: the later
    #: sources run alone too). Past round 16 the rounds run in persistent launches of up to 512
    #: (or are queued as CUDA graphs, read back every 30), in near-far order, so a deep graph's
    #: batch costs little per round: road-FLA's batches of 32 need about 3800-4100
    #: (benchmarks/results/session22/).
    gpu_sssp_batch_rounds: int = 16384
    #: The CPU backend from many sources (one rank per source, no predecessors or verifier,
    #: rounds or auto mode): this many sources' rounds together (at most 32; one read of an arc
    #: relaxes all of them: ``backends/cpu/bellman_ford.py``, ``run_batch``); 0 or 1: one at a
    #: time. On one core a source of Kronecker 16-18 cost 1.5-2.1x less than alone
    #: (benchmarks/results/session21/cpu/).
    cpu_sssp_batch: int = 32
    #: ... for at most this many rounds: a batch not settled by then (a road network, whose rounds
    #: relax far more than the single-source worklist; a negative cycle) runs its
    #: unsettled sources alone, and the later ones too. Kronecker graphs settle in about 15.
    cpu_sssp_batch_rounds: int = 32
    #: The CPU rounds scan only vertices below a threshold that rises this many mean arc weights
    #: at a time (near-far order across the ranks; 0: off, every round works its block to a
    #: fixpoint). 16 was the fastest or within 8% of it on road-NY and road-FLA on 1, 2 and 4
    #: ranks, and Kronecker graphs do not care (benchmarks/results/session24/).
    cpu_sssp_delta: float = 16.0


def _convert(name: str, typ, raw: str):
    try:
        if typ is bool or typ == "bool":
            low = raw.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError
        if typ in (int, "int"):
            return int(raw)
        if typ in (float, "float"):
            return float(raw)
        return raw
    except ValueError:
        raise InvalidArgumentError(
            f"environment variable DISTGRAPH_{name.upper()} must be a {getattr(typ, '__name__', typ)}; got {raw!r}") from None


def reload_config(environ=None) -> Config:
    """Build a :class:`Config` from defaults and ``DISTGRAPH_*`` variables."""
    environ = os.environ if environ is None else environ
    cfg = Config()
    known = {f.name: f for f in fields(Config)}
    for key, raw in environ.items():
        if not key.startswith("DISTGRAPH_") or key in _NOT_KEYS:
            continue
        name = key[len("DISTGRAPH_"):].lower()
        if name not in known:
            raise InvalidArgumentError(
                f"unknown configuration variable {key}; known: "
                + ", ".join("DISTGRAPH_" + k.upper() for k in sorted(known)))
        setattr(cfg, name, _convert(name, known[name].type, raw))
    if cfg.backend not in ("auto", "cpu", "gpu"):
        raise InvalidArgumentError(f"DISTGRAPH_BACKEND must be auto, cpu or gpu; got {cfg.backend!r}")
    if cfg.msbfs_batch_order not in ("auto", "degree", "ball"):
        raise InvalidArgumentError(f"DISTGRAPH_MSBFS_BATCH_ORDER must be auto, degree or ball; "
                                   f"got {cfg.msbfs_batch_order!r}")
    if str(cfg.gpu_msbfs_sparse).lower() not in ("auto", "on", "off"):
        raise InvalidArgumentError(f"DISTGRAPH_GPU_MSBFS_SPARSE must be auto, on or off; got {cfg.gpu_msbfs_sparse!r}")
    if str(cfg.gpu_msbfs_pull).lower() not in ("auto", "on", "off"):
        raise InvalidArgumentError(f"DISTGRAPH_GPU_MSBFS_PULL must be auto, on or off; got {cfg.gpu_msbfs_pull!r}")
    if str(cfg.gpu_msbfs_pull_candidates).strip().lower() not in ("auto", "sets", "vertices"):
        raise InvalidArgumentError(f"DISTGRAPH_GPU_MSBFS_PULL_CANDIDATES must be auto, sets or vertices; "
                                   f"got {cfg.gpu_msbfs_pull_candidates!r}")
    if isinstance(cfg.gpu_bfs_bu_list, str):  # from the environment: auto, or a boolean word
        low = cfg.gpu_bfs_bu_list.strip().lower()
        if low not in ("auto",) + tuple(_TRUE) + tuple(_FALSE):
            raise InvalidArgumentError(f"DISTGRAPH_GPU_BFS_BU_LIST must be auto, true or false; "
                                       f"got {cfg.gpu_bfs_bu_list!r}")
        cfg.gpu_bfs_bu_list = "auto" if low == "auto" else low in _TRUE
    if str(cfg.gpu_closeness_wave).strip().lower() not in ("auto", "on", "off"):
        raise InvalidArgumentError(f"DISTGRAPH_GPU_CLOSENESS_WAVE must be auto, on or off; "
                                   f"got {cfg.gpu_closeness_wave!r}")
    if cfg.gen_device not in ("cpu", "gpu"):
        raise InvalidArgumentError(f"DISTGRAPH_GEN_DEVICE must be cpu or gpu; got {cfg.gen_device!r}")
    return cfg


config = reload_config()


def override(**kw) -> Config:
    """Set config keys from explicit arguments (None means: keep)."""
    known = {f.name for f in fields(Config)}
    for k, v in kw.items():
        if k not in known:
            raise InvalidArgumentError(f"unknown configuration key {k!r}")
        if v is not None:
            setattr(config, k, v)
    return config


def as_dict() -> dict:
    return dataclasses.asdict(config)
