"""The PGAS layer on the CPU (MPI-3 RMA windows): put/get, nbi + quiet, put-with-signal and
signal wait, atomics, barrier, validation. Identical on 1, 2 and 4 ranks:
    mpiexec -n 4 python tests/mpi_pytest.py --with-mpi --only-mpi tests/test_pgas.py
"""

import numpy as np
import pytest

from distgraph.errors import InvalidArgumentError


@pytest.fixture(scope="module")
def pg():
    from distgraph.pgas import get_pgas

    return get_pgas(backend="cpu")


def _all(comm, ok):
    return all(comm.allgather(bool(ok)))


@pytest.mark.mpi
def test_put_get_neighbours(pg, comm):
    me, n = pg.my_pe, pg.n_pes
    right, left = (me + 1) % n, (me - 1) % n
    a = pg.array((2, 4), "int64")
    pg.put(a, [me * 10 + 1, me * 10 + 2], right, offset=2)
    pg.barrier()
    ok = a.local.tolist() == [[0, 0, left * 10 + 1, left * 10 + 2], [0, 0, 0, 0]]
    ok &= pg.get(a, right, 2, 2).tolist() == [me * 10 + 1, me * 10 + 2]
    f = pg.array(3, "float64")
    pg.put_nbi(f, [0.5 + me], right, offset=1)
    out = np.empty(2)
    pg.quiet()
    pg.barrier()
    pg.get_nbi(f, left, 0, 2, out)
    pg.quiet()
    ok &= f.local[1] == 0.5 + left and out[1] == 0.5 + (left - 1) % n
    pg.free(a)
    pg.free(f)
    assert _all(comm, ok)


@pytest.mark.mpi
def test_put_signal_and_wait(pg, comm):
    me, n = pg.my_pe, pg.n_pes
    right, left = (me + 1) % n, (me - 1) % n
    data = pg.array(5, "int32")
    sig = pg.array(2, "int64")
    pg.put_signal(data, np.arange(5) * (me + 1), right, sig, 1, "add", sig_index=1)
    got = pg.signal_wait(sig, "ge", 1, sig_index=1)
    ok = got == 1 and data.local.tolist() == (np.arange(5) * (left + 1)).tolist()
    pg.barrier()
    # a second round with "set": the data of round 2 is there once the signal says 2
    pg.put_signal(data, np.full(5, 100 + me), right, sig, 2, "set", sig_index=1)
    ok &= pg.signal_wait(sig, "eq", 2, sig_index=1) == 2 and data.local.tolist() == [100 + left] * 5
    pg.free(data)
    pg.free(sig)
    assert _all(comm, ok)


@pytest.mark.mpi
def test_atomics_counter_and_cas(pg, comm):
    """The one-sided counter of mpi4py's nxtval demo: every ticket handed out exactly once."""
    me, n = pg.my_pe, pg.n_pes
    c = pg.array(3, "int64")
    mine = [pg.atomic_fetch_add(c, 1, 0) for _ in range(25)]
    old = pg.atomic_compare_swap(c, 0, me + 1, 0, index=1)
    pg.barrier()
    allt = sorted(sum(comm.allgather(mine), []))
    olds = comm.allgather(old)
    ok = allt == list(range(25 * n)) and pg.atomic_fetch(c, n - 1 - me, 0) in (0, 25 * n)
    ok &= pg.atomic_fetch(c, 0, 0) == 25 * n
    ok &= olds.count(0) == 1 and pg.atomic_fetch(c, 0, 1) == olds.index(0) + 1
    pg.atomic_set(c, -3, (me + 1) % n, index=2)
    pg.barrier()
    ok &= pg.atomic_fetch(c, me, 2) == -3
    pg.atomic_set_range(c, [7, 8], me, 0)
    ok &= pg.atomic_fetch_range(c, me, 0, 3).tolist() == [7, 8, -3]
    pg.free(c)
    assert _all(comm, ok)


@pytest.mark.mpi
def test_validation(pg, comm):
    a = pg.array(4, "int64")
    errs = 0
    for call in (lambda: pg.put(a, [1, 2], pg.n_pes), lambda: pg.put(a, [1, 2], 0, offset=3),
                 lambda: pg.get(a, 0, 2, 5), lambda: pg.signal_wait(a, "approx", 1),
                 lambda: pg.put_signal(a, [1], 0, a, 1, "xor"), lambda: pg.array((2, -1))):
        try:
            call()
        except InvalidArgumentError:
            errs += 1
    pg.free(a)
    try:
        pg.free(a)
    except InvalidArgumentError as e:
        errs += "live symmetric array" in str(e)
    assert _all(comm, errs == 7)


@pytest.mark.mpi
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "float32", "float64"])
def test_atomic_min_every_dtype(pg, comm, dtype):
    """atomic_min / atomic_min_many (the remote relaxation of the async Bellman-Ford): every
    rank lowers elements of every PE; the minimum wins, floats ordered as numbers (negative
    values, -inf), each call returns the element's value from before it (so exactly one call
    per element sees the initial value), a repeated index gets one old value, an equal or
    larger value leaves the element alone."""
    from distgraph.pgas import PGAS

    me, n = pg.my_pe, pg.n_pes
    dt = np.dtype(dtype)
    isf = dt.kind == "f"
    init = np.inf if isf else 1000
    low = -np.inf if isf else np.iinfo(dt).min

    def v0(r):  # rank r's value for element 0 (exact in every dtype; unsigned stays >= 0)
        return 500 - 3 * r if dt.kind == "u" else (-(r + 1) * 1.5 if isf else -(r + 1) * 3)

    a = pg.array(6, dtype)
    a.local[:] = [init, init, 50, 50, 50, init]
    pg.barrier()
    old0, olds2, ok = [], [], True
    for pe in range(n):
        o = pg.atomic_min(a, v0(me), pe, 0)
        ok &= isinstance(o, float if isf else int)
        old0.append(o)
        if dt.kind == "i":  # the base class's compare-and-swap loop (integer arrays)
            ok &= PGAS.atomic_min(pg, a, v0(me), pe, 1) in (init, *map(v0, range(n)))
        olds = pg.atomic_min_many(a, [2, 3, 2, 4], [40 - me, 60, 30 + me, 50], pe)
        ok &= olds.dtype == dt and olds[0] == olds[2] and olds[1] == 50 and olds[3] == 50
        olds2.append(float(olds[0]))
        pg.atomic_min(a, low if me == 0 else v0(me), pe, 5)
    pg.barrier()
    every0 = comm.allgather(old0)
    every2 = comm.allgather(olds2)
    for pe in range(n):
        seen0 = [float(every0[r][pe]) for r in range(n)]
        seen2 = [every2[r][pe] for r in range(n)]
        ok &= seen0.count(float(init)) == 1 and set(seen0) <= {float(init), *(float(v0(r)) for r in range(n))}
        ok &= seen2.count(50.0) == 1 and set(seen2) <= {50.0, *(30.0 + r for r in range(n))}
    ok &= a.local[0] == v0(n - 1) and a.local[2] == 30 and a.local[3] == 50 and a.local[4] == 50
    ok &= a.local[5] == low
    if dt.kind == "i":
        ok &= a.local[1] == v0(n - 1)
    pg.free(a)
    assert _all(comm, ok)


@pytest.mark.mpi
def test_atomic_min_validation_and_repeated_indices(pg, comm):
    """Values that an integer array cannot hold exactly are refused (they used to be truncated
    to a smaller minimum: 2.5 stored 2), NaN is refused, the compare-and-swap default refuses
    float arrays (MPI's CAS has no float types), and the default atomic_min_many agrees with
    MPI-RMA's on repeated indices (every occurrence gets the value from before the batch)."""
    from distgraph.pgas import PGAS

    me = pg.my_pe
    a = pg.array(4, "int64")
    f = pg.array(2, "float64")
    b = pg.array(2, "bool")
    a.local[:] = 7
    errs, calls = [], (
        (lambda: pg.atomic_min(a, 2.5, me, 0), "value must be integers in"),
        (lambda: pg.atomic_min(a, 2 ** 63, me, 0), "got 9223372036854775808"),
        (lambda: pg.atomic_min(a, float("inf"), me, 0), "got inf"),
        (lambda: pg.atomic_min_many(a, [0, 1], [1, 0.5], me), "got 0.5"),
        (lambda: pg.atomic_min_many(a, [0.0], [1], me), "indices must be integers"),
        (lambda: pg.atomic_min_many(a, [0, 4], [1, 1], me), "indices must lie in [0, 4)"),
        (lambda: pg.atomic_min_many(a, [0, 1], [1], me), "one entry per index"),
        (lambda: pg.atomic_min(f, float("nan"), me, 0), "NaN"),
        (lambda: PGAS.atomic_min(pg, f, -1.0, me, 0), "integer symmetric array"),
        (lambda: pg.atomic_min(b, 0, me, 0), "integer or float symmetric array"),
    )
    for call, msg in calls:
        try:
            call()
            errs.append(f"no error ({msg})")
        except InvalidArgumentError as e:
            if msg not in str(e):
                errs.append(str(e))
    ok = not errs and a.local.tolist() == [7, 7, 7, 7]
    ok &= pg.atomic_min(a, 3.0, me, 0) == 7 and a.local[0] == 3  # an integral float is fine
    got = pg.atomic_min_many(a, [1, 1, 2], [5, 4, 9], me).tolist()
    a.local[1:3] = 7
    base = PGAS.atomic_min_many(pg, a, [1, 1, 2], [5, 4, 9], me).tolist()
    ok &= got == base == [7, 7, 7] and a.local.tolist() == [3, 4, 7, 7]
    for x in (a, f, b):
        pg.free(x)
    assert _all(comm, ok), errs


def test_get_pgas_rejects_unknown_backend():
    from distgraph.pgas import get_pgas

    with pytest.raises(InvalidArgumentError, match="backend must be"):
        get_pgas(backend="tpu")
