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



def _bits(name, rank, count, salt):
    """Rank `rank`'s bit patterns: arbitrary over the type's width (the sign
    bit included), with bit rank set and bit rank + 1 clear."""
    dt = np.dtype(name)
    width = dt.itemsize * 8
    rng = np.random.default_rng(1000 * salt + rank)
    raw = rng.integers(0, 2 ** 64, size=count, dtype=np.uint64)
    raw |= np.uint64(1 << (rank % width))
    raw &= ~np.uint64(1 << ((rank + 1) % width))
    return raw.astype(np.dtype("u%d" % dt.itemsize)).view(dt)


BITWISE = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


@pytest.mark.parametrize("name", [t for t in ALL_TYPES if t.startswith(("int", "uint"))])
def test_bitwise(comm, name):
    """op='band', 'bor', 'bxor' on integer arrays: AllReduce (in and out of
    place), Reduce at the last rank and ReduceScatter against NumPy's folds
    of every rank's bits."""
    n, me = comm.size, comm.rank
    errors = []
    for salt, (op, fold) in enumerate(BITWISE.items()):
        rows = [_bits(name, r, COUNT * n, salt) for r in range(n)]
        exp = fold.reduce(np.stack(rows), axis=0)
        out = np.zeros_like(rows[me])
        comm.all_reduce(rows[me], out, op=op)
        if not np.array_equal(out, exp):
            errors.append("all_reduce %s: %s, expected %s" % (op, out, exp))
        y = rows[me].copy()
        comm.all_reduce(y, op=op)
        if not np.array_equal(y, exp):
            errors.append("all_reduce in place %s: %s" % (op, y))
        r = np.zeros_like(rows[me])
        comm.reduce(rows[me], r, op=op, root=n - 1)
        if me == n - 1 and not np.array_equal(r, exp):
            errors.append("reduce %s: %s" % (op, r))
        s = np.zeros(COUNT, rows[me].dtype)
        comm.reduce_scatter(rows[me], s, op=op)
        if not np.array_equal(s, exp[me * COUNT:(me + 1) * COUNT]):
            errors.append("reduce_scatter %s: %s" % (op, s))
    _check(errors)


def test_bitwise_sim_device(comm):
    """The same on emulated-device arrays (staged): int32 and uint8."""
    from infiniccl import testing

    ok, why = testing.sim_available()
    if not ok:
        pytest.skip(why)
    n, me = comm.size, comm.rank
    errors = []
    for name in ("int32", "uint8"):
        for salt, (op, fold) in enumerate(BITWISE.items()):
            rows = [_bits(name, r, 1000, salt) for r in range(n)]
            d = testing.SimArray.from_numpy(rows[me])
            comm.all_reduce(d, op=op)
            got = d.numpy()
            if not np.array_equal(got, fold.reduce(np.stack(rows), axis=0)):
                errors.append("%s %s: %s" % (name, op, got[:8]))
    _check(errors)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_bitwise_floating_refused(comm, name):
    """A bitwise op on a floating type: INVALID_ARGUMENT naming the op and
    the type, on every rank, nothing written; the communicator still works."""
    import infiniccl

    _, dt = np_type(name)
    x = encode(name, np.arange(COUNT, dtype=np.float64))
    out = encode(name, np.full(COUNT, 9.0))
    for op in BITWISE:
        with pytest.raises(infiniccl.Error) as e:
            comm.all_reduce(x, out, op=op, dtype=dt)
        assert e.value.code == infiniccl.INVALID_ARGUMENT, e.value
        assert op in str(e.value) and name in str(e.value), str(e.value)
        assert np.array_equal(decode(name, out), np.full(COUNT, 9.0)), decode(name, out)
    v = np.array([comm.rank + 1], np.int64)
    comm.all_reduce(v)
    assert v[0] == comm.size * (comm.size + 1) // 2
