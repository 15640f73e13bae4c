"""Every collective x every data type x every op against a NumPy reference,
in place and out of place, at every root (NumPy arrays; bfloat16 as uint16
bits with dtype='bfloat16')."""
import numpy as np
import pytest

from reference import ALL_TYPES, OPS, compare, decode, encode, np_type, reduce_ref, values

COUNT = 7  # per rank: odd, so no block lines up with a power of two


def _check(errors):
    assert not errors, "\n".join(errors[:10])


@pytest.mark.parametrize("name", ALL_TYPES)
def test_all_reduce(comm, name):
    _, dt = np_type(name)
    errors = []
    rows = [values(name, r, COUNT) for r in range(comm.size)]
    for op in OPS:
        exp = reduce_ref(name, op, rows)
        x = encode(name, rows[comm.rank])
        out = np.zeros_like(x)
        r = comm.all_reduce(x, out, op=op, dtype=dt)
        assert r is out
        compare(name, op, out, exp, "out of place %s" % op, errors)
        compare(name, op, x, rows[comm.rank], "input untouched %s" % op, errors)
        y = encode(name, rows[comm.rank])
        comm.all_reduce(y, op=op, dtype=dt)
        compare(name, op, y, exp, "in place %s" % op, errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_reduce(comm, name):
    _, dt = np_type(name)
    errors = []
    rows = [values(name, r, COUNT) for r in range(comm.size)]
    for root in range(comm.size):
        for op in OPS:
            exp = reduce_ref(name, op, rows)
            mine = rows[comm.rank]
            x = encode(name, mine)
            out = encode(name, np.full(COUNT, 9.0))
            comm.reduce(x, out, op=op, root=root, dtype=dt)
            if comm.rank == root:
                compare(name, op, out, exp, "root %d %s out" % (root, op), errors)
            else:
                compare(name, op, out, np.full(COUNT, 9.0), "non-root out untouched", errors)
            y = encode(name, mine)
            comm.reduce(y, op=op, root=root, dtype=dt)
            if comm.rank == root:
                compare(name, op, y, exp, "root %d %s in place" % (root, op), errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_reduce_scatter(comm, name):
    _, dt = np_type(name)
    errors = []
    n = comm.size
    rows = [values(name, r, COUNT * n) for r in range(n)]
    mine = slice(comm.rank * COUNT, (comm.rank + 1) * COUNT)
    for op in OPS:
        exp = reduce_ref(name, op, rows)[mine]
        x = encode(name, rows[comm.rank])
        out = encode(name, np.zeros(COUNT))
        comm.reduce_scatter(x, out, op=op, dtype=dt)
        compare(name, op, out, exp, "out of place %s" % op, errors)
        y = encode(name, rows[comm.rank])
        comm.reduce_scatter(y, op=op, dtype=dt)
        compare(name, op, y[mine], exp, "in place %s" % op, errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_broadcast(comm, name):
    _, dt = np_type(name)
    errors = []
    for root in range(comm.size):
        src = values(name, root, COUNT, salt=1)
        x = encode(name, values(name, comm.rank, COUNT, salt=1))
        out = encode(name, np.zeros(COUNT))
        comm.broadcast(x, out, root=root, dtype=dt)
        compare(name, "sum", out, src, "root %d out of place" % root, errors)
        comm.broadcast(x, root=root, dtype=dt)
        compare(name, "sum", x, src, "root %d in place" % root, errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_all_gather(comm, name):
    _, dt = np_type(name)
    errors = []
    n = comm.size
    exp = np.concatenate([values(name, r, COUNT) for r in range(n)])
    x = encode(name, values(name, comm.rank, COUNT))
    out = encode(name, np.zeros(COUNT * n))
    comm.all_gather(x, out, dtype=dt)
    compare(name, "sum", out, exp, "out of place", errors)
    y = encode(name, np.zeros(COUNT * n))
    y[comm.rank * COUNT:(comm.rank + 1) * COUNT] = x
    comm.all_gather(y, dtype=dt)
    compare(name, "sum", y, exp, "in place", errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_gather(comm, name):
    _, dt = np_type(name)
    errors = []
    n = comm.size
    exp = np.concatenate([values(name, r, COUNT) for r in range(n)])
    for root in range(n):
        x = encode(name, values(name, comm.rank, COUNT))
        out = encode(name, np.zeros(COUNT * n)) if comm.rank == root else None
        r = comm.gather(x, out, root=root, dtype=dt)
        if comm.rank == root:
            compare(name, "sum", out, exp, "root %d out of place" % root, errors)
            assert r is out
            y = encode(name, np.zeros(COUNT * n))
            y[root * COUNT:(root + 1) * COUNT] = x
            comm.gather(y, root=root, dtype=dt)
            compare(name, "sum", y, exp, "root %d in place" % root, errors)
        else:
            assert r is None
            comm.gather(x, root=root, dtype=dt)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_scatter(comm, name):
    _, dt = np_type(name)
    errors = []
    n = comm.size
    mine = slice(comm.rank * COUNT, (comm.rank + 1) * COUNT)
    for root in range(n):
        full = values(name, root, COUNT * n, salt=2)
        x = encode(name, full) if comm.rank == root else None
        out = encode(name, np.zeros(COUNT))
        comm.scatter(x, out, root=root, dtype=dt)
        compare(name, "sum", out, full[mine], "root %d out of place" % root, errors)
        # In place: the root keeps its block inside x, others receive into x.
        y = encode(name, full) if comm.rank == root else encode(name, np.zeros(COUNT))
        comm.scatter(y, root=root, dtype=dt)
        got = y[mine] if comm.rank == root else y
        compare(name, "sum", got, full[mine], "root %d in place" % root, errors)
    _check(errors)


@pytest.mark.parametrize("name", ALL_TYPES)
def test_all_to_all(comm, name):
    _, dt = np_type(name)
    errors = []
    n = comm.size
    # Block j of rank r's input: values(.., salt = r * n + j); rank r receives
    # block r of every rank, in rank order.
    def block(r, j):
        return values(name, r, COUNT, salt=r * n + j)
    exp = np.concatenate([block(r, comm.rank) for r in range(n)])
    src = np.concatenate([block(comm.rank, j) for j in range(n)])
    x = encode(name, src)
    out = encode(name, np.zeros(COUNT * n))
    comm.all_to_all(x, out, dtype=dt)
    compare(name, "sum", out, exp, "out of place", errors)
    comm.all_to_all(x, dtype=dt)
    compare(name, "sum", x, exp, "in place", errors)
    _check(errors)


@pytest.mark.parametrize("name", ["int32", "float16", "bfloat16", "float64"])
def test_send_recv_ring_in_group(comm, name):
    """Each rank sends to the next and receives from the previous inside a
    group, with a message far above any eager limit: without the group this
    would deadlock."""
    _, dt = np_type(name)
    n, me = comm.size, comm.rank
    big = 1 << 17
    x = encode(name, values(name, me, big))
    y = encode(name, np.zeros(big))
    import infiniccl

    with infiniccl.group():
        comm.send(x, (me + 1) % n, dtype=dt)
        comm.recv(y, (me - 1) % n, dtype=dt)
    errors = []
    compare(name, "sum", y, values(name, (me - 1) % n, big), "ring", errors)
    _check(errors)


def test_send_recv_pairs(comm):
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    x = np.arange(5, dtype=np.int64) + 100 * comm.rank
    y = np.zeros(5, np.int64)
    # Rank 0 and 1 swap, ordered so that it works without a group.
    if comm.rank == 0:
        comm.send(x, 1)
        comm.recv(y, 1)
    elif comm.rank == 1:
        comm.recv(y, 0)
        comm.send(x, 0)
    if comm.rank < 2:
        assert decode("int64", y).tolist() == (np.arange(5) + 100 * (1 - comm.rank)).tolist()


def test_count_zero(comm):
    x = np.zeros(0, np.float32)
    assert comm.all_reduce(x) is x
    comm.broadcast(x)
    comm.all_gather(x, np.zeros(0, np.float32))
