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


def test_get_pgas_rejects_unknown_backend():
    from distgraph.pgas import get_pgas

    with pytest.raises(InvalidArgumentError, match="backend must be"):
        get_pgas(backend="tpu")
