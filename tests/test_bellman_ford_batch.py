"""remote="batch" (the GPU Bellman-Ford's batched remote relaxations) at the boundaries that
run without a GPU: the public API refuses it for the CPU backend's async mode on every rank
(the CPU rounds mode batches already, and ignores ``remote``), and the GPU runner checks its
arguments before touching the device. The batch mode itself runs in
tests/test_nvshmem_bellman_ford.py (GPU, 1/2/4 PEs).

    python -m pytest -q tests/test_bellman_ford_batch.py
    mpirun -n 2 python tests/mpi_pytest.py --with-mpi -q tests/test_bellman_ford_batch.py
"""

import numpy as np
import pytest
from mpi4py import MPI

from distgraph.algorithms.bellman_ford import REMOTES, bellman_ford
from distgraph.errors import InvalidArgumentError
from distgraph.generators import kronecker, potential_shift, uniform_weights


def _graph():
    return potential_shift(uniform_weights(kronecker(7, seed=3), seed=3), seed=4)


def test_batch_is_a_remote_choice():
    assert REMOTES == ("atomic", "enqueue", "batch")


@pytest.mark.mpi
def test_cpu_async_refuses_batch_on_every_rank():
    comm = MPI.COMM_WORLD
    with pytest.raises(InvalidArgumentError, match="GPU-only"):
        bellman_ford(_graph(), 0, mode="async", remote="batch", backend="cpu", comm=comm)


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["rounds", "auto"])
def test_cpu_rounds_ignore_remote(mode):
    comm = MPI.COMM_WORLD
    g = _graph()
    a = bellman_ford(g, 0, mode=mode, remote="batch", backend="cpu", comm=comm, predecessors=True)
    b = bellman_ford(g, 0, mode=mode, backend="cpu", comm=comm, predecessors=True)
    assert np.array_equal(a.distance, b.distance) and np.array_equal(a.predecessor, b.predecessor)


@pytest.mark.parametrize("kw", [{"remote": "bulk"}, {"remote": "batch", "flush": 0},
                                {"remote": "batch", "flush": 1025}, {"remote": "batch", "flush": True},
                                {"remote": "batch", "flush": 2.0}],
                         ids=["remote", "flush0", "flush1025", "flush_bool", "flush_float"])
def test_gpu_runner_checks_batch_arguments_before_the_device(kw):
    from distgraph.backends.gpu.bellman_ford import BATCH, QueueSSSP

    assert BATCH == 1024  # DG_BF_BATCH's default in kernels/bellman_ford.cuh, passed as a define
    g = _graph()
    with pytest.raises(InvalidArgumentError, match="remote|flush"):
        QueueSSSP(g, g.weights, MPI.COMM_SELF, **kw)


def test_pes_benchmark_worker_rows(tmp_path, monkeypatch, capsys):
    """benchmarks/gpu_sssp_pes.py without a GPU (stand-in runner, one rank): --prep writes the
    cases with the CPU reference; the worker prints one row per variant, one per flush value
    for batch, checks distances against the reference, and skips a variant in later cases
    once it failed (a hang costs the hang timeout once); ``atomic+phases`` rows (host-driven
    near-far phases, one per --phase-deltas value, also on one PE) build their runner with
    multi_pe_phases=True and set each delta."""
    import importlib.util
    import json
    from pathlib import Path

    from distgraph.backends.gpu import bellman_ford as gbf
    from distgraph.errors import DistgraphError

    root = Path(__file__).resolve().parent.parent
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gpu_sssp_pes_t", root / "benchmarks" / "gpu_sssp_pes.py")
    b = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(b)
    b.prep(tmp_path, ["kron:8", "kron:9"])
    made = []

    class Runner:
        def __init__(self, graph, w, comm, queue, remote, use_nvshmem, multi_pe_phases=False):
            self.remote, self.batch, self.flush, self.case = remote, remote == "batch", 256, graph.n
            self.phases, self.delta = multi_pe_phases, None
            made.append((graph.n, remote, multi_pe_phases))

        def set_delta(self, d):
            assert self.phases
            self.delta = d

        def run(self, s, confirm):
            if self.remote == "enqueue":
                raise DistgraphError("the GPU Bellman-Ford kernel did not finish within 20 s")
            ref = np.load(tmp_path / f"kron{8 if self.case == 256 else 9}_uniform.npz")["ref"]
            return ref.copy(), None, {"time_run_s": 0.001, "flush": self.flush if self.batch else None,
                                      "coalesced": 3, "shipped": 5, "multi_pe_phases": self.phases,
                                      "delta": self.delta}, None

        def close(self):
            pass

    monkeypatch.setattr(gbf, "QueueSSSP", Runner)
    failed = set()
    for name in ("kron:8_uniform", "kron:9_uniform"):
        p = tmp_path / (name.replace(":", "") + ".npz")
        b._run_case(MPI.COMM_SELF, name, p, ["bwd"], ["atomic", "enqueue", "batch", "atomic+phases"], 1, failed,
                    [256, 32], [None, 50])
    rows = [json.loads(x[12:]) for x in capsys.readouterr().out.splitlines() if x.startswith("RESULT-JSON ")]
    # one PE: the first remote only (no remote arcs), and the host-driven phases per delta
    assert [(r["case"], r["remote"], r.get("phase_delta_arg"), r.get("delta"), r.get("multi_pe_phases"))
            for r in rows] == [("kron:8_uniform", None, None, None, False),
                               ("kron:8_uniform", "atomic+phases", "default", None, True),
                               ("kron:8_uniform", "atomic+phases", 50, 50, True),
                               ("kron:9_uniform", None, None, None, False),
                               ("kron:9_uniform", "atomic+phases", "default", None, True),
                               ("kron:9_uniform", "atomic+phases", 50, 50, True)]
    assert all(r["same_as_cpu"] for r in rows)
    b.summarize(rows)  # the 1-PE reference is the plain row only
    assert not any("speedup_vs_1pe" in r for r in rows)
    class Two:  # the variants of several PEs, on one rank
        def __getattr__(self, k):
            return getattr(MPI.COMM_SELF, k)

        def Get_size(self):
            return 2

    capsys.readouterr()
    for name in ("kron:8_uniform", "kron:9_uniform"):
        p = tmp_path / (name.replace(":", "") + ".npz")
        b._run_case(Two(), name, p, ["bwd"], ["atomic", "enqueue", "batch", "atomic+phases"], 1, failed, [256, 32])
    rows = [json.loads(x[12:]) for x in capsys.readouterr().out.splitlines() if x.startswith("RESULT-JSON ")]
    got = [(r["case"][:6], r["remote"], r.get("flush"), "error" in r, "skipped" in r) for r in rows]
    assert got == [("kron:8", "atomic", None, False, False), ("kron:8", "enqueue", None, True, False),
                   ("kron:8", "batch", 256, False, False), ("kron:8", "batch", 32, False, False),
                   ("kron:8", "atomic+phases", None, False, False),
                   ("kron:9", "atomic", None, False, False), ("kron:9", "enqueue", None, False, True),
                   ("kron:9", "batch", 256, False, False), ("kron:9", "batch", 32, False, False),
                   ("kron:9", "atomic+phases", None, False, False)]
    assert [m for m in made if m[2]] == [(256, "atomic", True), (512, "atomic", True)] * 2
    assert all(r["same_as_cpu"] for r in rows if "time_s" in r)
    one = {"case": "kron:8_uniform", "pes": 1, "time_s": 0.004, "run_s": 0.003}
    b.summarize(rows + [one])
    assert rows[0]["speedup_vs_1pe"] == pytest.approx(one["time_s"] / rows[0]["time_s"])
    # the 1-PE reference is the faster of the queue and the rounds on one GPU
    rounds1 = {"case": "kron:8_uniform", "pes": 1, "remote": "rounds", "time_s": 0.002, "run_s": 0.001}
    b.summarize(rows + [one, rounds1])
    assert rows[0]["speedup_vs_1pe"] == pytest.approx(rounds1["time_s"] / rows[0]["time_s"])
    assert rows[0]["run_speedup_vs_1pe"] == pytest.approx(rounds1["run_s"] / rows[0]["run_s"])
    # a 1-PE row with wrong distances is no reference, and a wrong row of several PEs no speedup
    wrong1 = dict(rounds1, time_s=1e-6, run_s=1e-6, same_as_cpu=False)
    for r in rows:
        r.pop("speedup_vs_1pe", None)
    b.summarize(rows + [one, rounds1, wrong1])
    assert rows[0]["speedup_vs_1pe"] == pytest.approx(rounds1["time_s"] / rows[0]["time_s"])
    bad = {k: v for k, v in rows[0].items() if not k.endswith("speedup_vs_1pe")}
    bad["same_as_cpu"] = False
    b.summarize([bad, one])
    assert "speedup_vs_1pe" not in bad and "run_speedup_vs_1pe" not in bad


def test_pes_benchmark_prep_renames_by_degree(tmp_path, monkeypatch):
    """benchmarks/gpu_sssp_pes.py --prep with ``kron:8@deal2`` and ``@degu``: the same graph
    renamed (dealt degree order; rows sorted, or not with ``u``), the source renamed, and the
    stored reference equal to the CPU backend's distances on the renamed graph; --weights
    picks the weightings, a bad order or weighting is refused."""
    import importlib.util
    from pathlib import Path

    from distgraph.algorithms.bellman_ford import _arc_weights
    from distgraph.backends.cpu.bellman_ford import run_rounds
    from distgraph.formats.reorder import degree_order
    from distgraph.graph import Graph

    root = Path(__file__).resolve().parent.parent
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gpu_sssp_pes_r", root / "benchmarks" / "gpu_sssp_pes.py")
    b = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(b)
    monkeypatch.setattr(b, "WEIGHTS", ("shifted",))
    b.prep(tmp_path, ["kron:8", "kron:8@deal2", "kron:8@degu"])
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["kron8@deal2_shifted.npz", "kron8@degu_shifted.npz",
                                                               "kron8_shifted.npz"]
    z0 = np.load(tmp_path / "kron8_shifted.npz")
    g0 = Graph(z0["indptr"], z0["indices"], z0["weights"], directed=bool(z0["directed"]))
    for tag, runs, rows_sorted in (("deal2", 2, True), ("degu", 1, False)):
        z = np.load(tmp_path / f"kron8@{tag}_shifted.npz")
        g = Graph(z["indptr"], z["indices"], z["weights"], directed=bool(z["directed"]))
        new_id = degree_order(g0, runs=runs)
        assert int(z["source"]) == new_id[int(z0["source"])] and g.m == g0.m
        w = _arc_weights(g, None)
        ref = run_rounds(g, w, int(z["source"]), MPI.COMM_SELF, lambda c: False)[0]
        np.testing.assert_array_equal(z["ref"], ref)
        np.testing.assert_array_equal(z["ref"][new_id], z0["ref"])
        first = g.indices[g.indptr[0]:g.indptr[1]]
        assert bool((np.diff(first) >= 0).all()) == rows_sorted or first.shape[0] < 2
    with pytest.raises(SystemExit, match="unknown vertex order"):
        b.prep(tmp_path, ["kron:8@bad"])
    with pytest.raises(SystemExit, match="--weights"):
        b.main(["--prep", str(tmp_path), "--weights", "heavy"])
