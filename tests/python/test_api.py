"""The package's surface: errors raised before any MPI call, buffers of
every kind, groups, split, abort, staging statistics, version, and the
emulated device (staged path)."""
import array
import contextlib
import os

import numpy as np
import pytest

import infiniccl
from reference import bf16_bits, bf16_value


def _agree(comm):
    """A collective every rank makes: if a rank had entered MPI in a call
    that should have been refused, this would mismatch or hang."""
    v = np.array([comm.rank + 1], np.int64)
    comm.all_reduce(v)
    assert v[0] == comm.size * (comm.size + 1) // 2


def _raises(fn, *words):
    with pytest.raises(infiniccl.Error) as e:
        fn()
    assert e.value.code == infiniccl.INVALID_ARGUMENT, e.value
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    return e.value


def test_argument_errors_before_mpi(comm):
    # Only rank 0 makes the bad calls: any of them reaching MPI would leave
    # it out of step with the other ranks at _agree().
    try:
        if comm.rank == 0:
            _bad_calls(comm)
    finally:  # every rank reaches _agree, whatever happened
        _agree(comm)


def _bad_calls(comm):
    if True:
        a = np.zeros((4, 4), np.float32)
        _raises(lambda: comm.all_reduce(a[:, 1]), "not contiguous")
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        _raises(lambda: comm.all_reduce(ro), "read-only")
        _raises(lambda: comm.all_reduce(np.zeros(4, np.float32), ro), "read-only")
        _raises(lambda: comm.all_reduce(bytes(8)), "read-only")
        _raises(lambda: comm.all_reduce(np.zeros(4, np.complex64)), "complex64", "no InfiniCCL")
        _raises(lambda: comm.all_reduce(np.zeros(4, ">i4")), "no InfiniCCL")
        _raises(lambda: comm.all_reduce(np.zeros(4, bool)), "no InfiniCCL")
        _raises(lambda: comm.all_reduce(np.zeros(4, np.float32), np.zeros(5, np.float32)),
                "5 elements")
        _raises(lambda: comm.all_reduce(np.zeros(4, np.float32), np.zeros(4, np.float64)),
                "same data type")
        _raises(lambda: comm.all_reduce(np.zeros(4, np.float32), op="mean"), "op='mean'")
        _raises(lambda: comm.all_gather(np.zeros(3, np.int32), np.zeros(3, np.int32)),
                "all_gather needs")
        _raises(lambda: comm.reduce_scatter(np.zeros(3, np.int32), np.zeros(3, np.int32)),
                "reduce_scatter needs")
        _raises(lambda: comm.broadcast(np.zeros(3), root=comm.size), "root=")
        _raises(lambda: comm.send(np.zeros(3), peer=-1), "peer=")
        _raises(lambda: comm.all_reduce(np.zeros(3, np.float32), dtype="bfloat16"),
                "2-byte")
        _raises(lambda: comm.all_reduce(np.zeros(3, np.uint16), dtype="float8"), "dtype=")
        _raises(lambda: comm.all_reduce(object()), "object", "buffer protocol")
        if comm.size > 1:
            _raises(lambda: comm.all_to_all(np.zeros(comm.size + 1, np.int8)), "multiple")


def test_library_error_carries_code_and_message(comm):
    # A call the library itself refuses (Send to itself outside a group),
    # local on every rank.
    with pytest.raises(infiniccl.Error) as e:
        comm.send(np.zeros(1, np.int32), comm.rank)
    assert e.value.code == infiniccl.INVALID_USAGE or e.value.code == \
        infiniccl.INVALID_ARGUMENT
    assert "infinicclSend" in e.value.message
    _agree(comm)


def test_buffer_kinds(comm):
    n = comm.size
    b = bytearray([comm.rank + 1] * 4)  # uint8
    comm.all_reduce(b)
    assert list(b) == [n * (n + 1) // 2] * 4
    a = array.array("i", [comm.rank] * 3)  # int32 through the buffer protocol
    out = array.array("i", [0] * 3)
    comm.all_reduce(a, out, op="max")
    assert list(out) == [n - 1] * 3
    m = memoryview(bytearray(8)).cast("d")
    m[0] = 2.0
    comm.all_reduce(m, op="prod")
    assert m[0] == 2.0 ** n
    h = np.full(3, comm.rank + 1, np.float16)
    comm.all_reduce(h, op="sum")
    assert h.tolist() == [n * (n + 1) / 2] * 3
    # bfloat16 bits in a uint16 array, reinterpreted with dtype=.
    x = bf16_bits(np.full(4, 1.5 * (comm.rank + 1)))
    comm.all_reduce(x, op="sum", dtype="bfloat16")
    assert bf16_value(x).tolist() == [1.5 * n * (n + 1) / 2] * 4
    # 2-D and larger-than-1 arrays are flat, C order.
    g = np.arange(6, dtype=np.int16).reshape(2, 3) + comm.rank
    comm.all_reduce(g, op="min")
    assert g.tolist() == [[0, 1, 2], [3, 4, 5]]
    # A NumPy integer is a rank like any int.
    r = np.full(2, comm.rank, np.int32)
    comm.broadcast(r, root=np.int64(comm.size - 1))
    assert r.tolist() == [comm.size - 1] * 2


def test_ml_dtypes_bfloat16(comm):
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    x = np.full(3, comm.rank + 1, ml.bfloat16)
    comm.all_reduce(x, op="max")
    assert x.astype(np.float32).tolist() == [float(comm.size)] * 3


def test_group_nested_and_errors(comm):
    n, me = comm.size, comm.rank
    outs = [np.zeros(2, np.int32) for _ in range(n)]
    with infiniccl.group():
        with infiniccl.group():  # nested: only the outer end completes
            for p in range(n):
                comm.send(np.array([me, p], np.int32), p)
        for p in range(n):
            comm.recv(outs[p], p)
    assert [o.tolist() for o in outs] == [[p, me] for p in range(n)]
    # A bad call inside a group raises at once and the group stays usable:
    # leaving the block by an exception still ends the group, completing the
    # Send and Recv already added.
    got = np.zeros(1, np.int64)
    with pytest.raises(infiniccl.Error):
        with infiniccl.group():
            comm.send(np.array([7 + me], np.int64), (me + 1) % n)
            with pytest.raises(infiniccl.Error):
                comm.send(np.zeros(1), peer=n)  # refused by Python, before C
            comm.recv(got, (me - 1) % n)
            comm.all_reduce(np.zeros(1, np.float32), op="bogus")  # raises out
    assert got[0] == 7 + (me - 1) % n
    _agree(comm)


def test_split(comm):
    n, me = comm.size, comm.rank
    sub = comm.split(me % 2, key=-me)  # reversed order within each parity
    members = [r for r in range(n) if r % 2 == me % 2][::-1]
    assert sub.size == len(members)
    assert sub.rank == members.index(me)
    got = np.zeros(sub.size, np.int64)
    sub.all_gather(np.array([me], np.int64), got)
    assert got.tolist() == members
    sub.destroy()
    none = comm.split(-1 if me == 0 else 0)
    assert (none is None) == (me == 0)
    if none is not None:
        assert none.size == n - 1
        none.destroy()


def test_abort_then_use(comm):
    c = comm.split(0, comm.rank)
    c.abort()
    with pytest.raises(infiniccl.Error) as e:
        c.all_reduce(np.zeros(1))
    assert e.value.code == infiniccl.INVALID_USAGE
    _agree(comm)


def test_shrink(comm):
    # The first rank leaves; the others shrink it away and keep their order.
    n, me = comm.size, comm.rank
    assert comm.failed_ranks() == []
    if me == 0:
        _agree(comm)
        return
    with pytest.raises(infiniccl.Error) as e:
        comm.shrink(exclude=[me])
    assert e.value.code == infiniccl.INVALID_ARGUMENT and "this rank" in str(e.value)
    with pytest.raises(infiniccl.Error) as e:
        comm.shrink(exclude=[n])
    assert e.value.code == infiniccl.INVALID_ARGUMENT
    sub = comm.shrink(exclude=[0])
    assert (sub.size, sub.rank) == (n - 1, me - 1)
    got = np.zeros(sub.size, np.int64)
    sub.all_gather(np.array([me * 10], np.int64), got)
    assert got.tolist() == [r * 10 for r in range(1, n)]
    sub.destroy()
    _agree(comm)


def test_revoke_then_use(comm):
    c = comm.split(0, comm.rank)
    c.revoke()
    with pytest.raises(infiniccl.Error) as e:
        c.all_reduce(np.zeros(1))
    assert e.value.code == infiniccl.REMOTE_ERROR and "revoked" in str(e.value)
    c.abort()
    _agree(comm)


def test_version_and_stats(comm):
    v = infiniccl.version()
    assert isinstance(v, tuple) and len(v) == 3 and v >= (0, 1, 0)
    before = infiniccl.staging_stats()
    fields = ("allocations", "frees", "bytes_held", "peak_bytes_held", "pinned",
              "d2h_copies", "d2h_bytes", "h2d_copies", "h2d_bytes", "staged_calls",
              "pipelined_calls", "direct_calls")
    assert sorted(before) == sorted(fields), sorted(before)
    # Host buffers are never staged: a host AllReduce leaves every counter
    # of copies and calls where it was.
    x = np.full(1000, comm.rank + 1, np.int64)
    comm.all_reduce(x)
    assert x.tolist() == [comm.size * (comm.size + 1) // 2] * 1000
    after = infiniccl.staging_stats()
    for k in ("d2h_copies", "d2h_bytes", "h2d_copies", "h2d_bytes", "staged_calls",
              "pipelined_calls", "direct_calls", "allocations"):
        assert after[k] == before[k], (k, before[k], after[k])
    assert after["frees"] <= after["allocations"], after
    assert after["peak_bytes_held"] >= after["bytes_held"], after
    assert after["pinned"] in (0, 1), after
    assert after["pipelined_calls"] <= after["staged_calls"], after
    infiniccl.mem_trim()
    trimmed = infiniccl.staging_stats()
    assert trimmed["bytes_held"] <= after["bytes_held"], (after, trimmed)
    assert trimmed["frees"] >= after["frees"], (after, trimmed)


def test_device_runtimes():
    """infinicclGetDeviceRuntimes: cpu first, sim last, each name once, the
    vendors between them from the library's known names."""
    have = infiniccl.device_runtimes()
    assert have[0] == "cpu" and have[-1] == "sim", have
    assert len(set(have)) == len(have), have
    vendors = ["cuda", "metax", "iluvatar", "moore", "hip", "ascend", "cambricon"]
    assert all(v in vendors for v in have[1:-1]), have
    assert have[1:-1] == sorted(have[1:-1], key=vendors.index), have


def test_library_path():
    # The package reports the library it loaded (ctest points it at the
    # build tree through INFINICCL_LIBRARY).
    assert os.path.isfile(infiniccl.library_path()) or "libinfiniccl" in \
        infiniccl.library_path()


# ---- the emulated device: the staged path through Python ----------------
def _sim():
    from infiniccl import testing

    ok, why = testing.sim_available()
    if not ok:
        pytest.skip(why)
    return testing.SimArray


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32",
                                   "float64"])
def test_sim_device_all_reduce_staged(comm, dtype):
    SimArray = _sim()
    n = comm.size
    before = infiniccl.staging_stats()
    host = (np.arange(1000) % 3 + comm.rank).astype(dtype)
    d = SimArray.from_numpy(host)
    out = SimArray(host.shape, dtype)
    comm.all_reduce(d, out, op="sum")
    exp = sum((np.arange(1000) % 3 + r) for r in range(n)).astype(np.float64)
    assert np.array_equal(out.numpy().astype(np.float64), exp)
    comm.all_reduce(d, op="max")  # in place on the device
    assert np.array_equal(d.numpy().astype(np.float64),
                          (np.arange(1000) % 3 + n - 1).astype(np.float64))
    after = infiniccl.staging_stats()
    delta = {k: after[k] - before[k] for k in after}
    # Each of the two device calls is counted once, staged or given to MPI
    # directly; 1000 elements fit one chunk, so neither is pipelined.
    assert delta["staged_calls"] + delta["direct_calls"] == 2, delta
    assert delta["pipelined_calls"] == 0, delta
    if delta["direct_calls"] == 0:
        # Staged: each call copies its 1000 elements to host memory and the
        # sum back, in one or more copies each way.
        nbytes = 1000 * np.dtype(dtype).itemsize
        assert delta["d2h_bytes"] == 2 * nbytes and delta["h2d_bytes"] == 2 * nbytes, delta
        assert delta["d2h_copies"] >= 2 and delta["h2d_copies"] >= 2, delta
    else:
        assert delta["d2h_copies"] == delta["h2d_copies"] == 0, delta


def test_sim_device_collectives(comm):
    SimArray = _sim()
    n, me = comm.size, comm.rank
    errors = []
    x = SimArray.from_numpy(np.full(5, me + 1, np.int32))
    out = SimArray((5 * n,), np.int32)
    comm.all_gather(x, out)
    if out.numpy().tolist() != sum(([r + 1] * 5 for r in range(n)), []):
        errors.append("all_gather %s" % out.numpy())
    b = SimArray.from_numpy(np.full(4, me, np.float64))
    comm.broadcast(b, root=n - 1)
    if b.numpy().tolist() != [n - 1.0] * 4:
        errors.append("broadcast %s" % b.numpy())
    rs_in = SimArray.from_numpy(np.arange(3 * n, dtype=np.float32))
    rs_out = SimArray((3,), np.float32)
    comm.reduce_scatter(rs_in, rs_out, op="avg")
    if rs_out.numpy().tolist() != [float(3 * me + i) for i in range(3)]:
        errors.append("reduce_scatter avg %s" % rs_out.numpy())
    # A device array and a host array in one call are refused or work the
    # same everywhere; a mismatch of kinds across ranks is not tested.
    assert not errors, errors


def test_sim_requires_writable_device_out(comm):
    SimArray = _sim()
    d = SimArray((4,), np.float32)

    class ReadOnly:
        __cuda_array_interface__ = dict(d.__cuda_array_interface__, data=(d.ptr, True))

    try:
        if comm.rank == 0:
            _raises(lambda: comm.all_reduce(ReadOnly()), "read-only")
    finally:
        _agree(comm)


# ---- tags and receives from any source (SendTagged / RecvTagged) -----------
def _pattern(sender, tag, n):
    """What `sender` sends with `tag`: distinct per sender, tag and index."""
    return np.arange(n, dtype=np.int64) * 7 + 1000 * sender + 100000 * tag


def test_send_recv_tags_reversed(comm):
    """Two messages to the right neighbour, tags 3 then 8 (different lengths),
    received from the left in the other order: inside a group at 2 MiB and
    outside one at a few bytes."""
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    for grouped, count in ((True, 1 << 18), (False, 9)):
        a, b = _pattern(me, 3, count), _pattern(me, 8, count + 5)
        ga, gb = np.zeros_like(a), np.zeros_like(b)
        sa, sb = infiniccl.Source(), infiniccl.Source()
        ctx = infiniccl.group() if grouped else contextlib.nullcontext()
        with ctx:
            comm.send(a, right, tag=3)
            comm.send(b, right, tag=8)
            comm.recv(gb, left, tag=8, source=sb)
            comm.recv(ga, left, tag=3, source=sa)
        assert np.array_equal(ga, _pattern(left, 3, count)), (grouped, ga[:4])
        assert np.array_equal(gb, _pattern(left, 8, count + 5)), (grouped, gb[:4])
        assert (sa.rank, sb.rank) == (left, left)


def test_recv_any_source(comm):
    """Each rank in turn receives one message from every other rank from any
    source; the sender is reported and the data is that sender's."""
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    n, me = comm.size, comm.rank
    for receiver in range(n):
        tag = 20 + receiver
        if me != receiver:
            comm.send(_pattern(me, tag, 6), receiver, tag=tag)
            continue
        seen = set()
        for _ in range(n - 1):
            got, src = np.zeros(6, np.int64), infiniccl.Source()
            comm.recv(got, infiniccl.ANY_SOURCE, tag=tag, source=src)
            assert src.rank not in seen and 0 <= src.rank < n and src.rank != me, src
            seen.add(src.rank)
            assert np.array_equal(got, _pattern(src.rank, tag, 6))
    # Tag 0 is plain send/recv's: a plain send to a receive from any source.
    if me == 0:
        got, src = np.zeros(6, np.int64), infiniccl.Source()
        comm.recv(got, infiniccl.ANY_SOURCE, source=src)
        assert src.rank == n - 1 and np.array_equal(got, _pattern(n - 1, 0, 6))
    elif me == n - 1:
        comm.send(_pattern(me, 0, 6), 0)
    comm.all_reduce(np.zeros(1, np.int32))  # every rank done before the next test


def test_send_recv_tag_errors(comm):
    x = np.zeros(2, np.int32)
    src = infiniccl.Source()
    for tag in (-1, infiniccl.TAG_MAX + 1, "3", 1.5):
        with pytest.raises(infiniccl.Error, match="tag"):
            comm.recv(x, 0, tag=tag)
        with pytest.raises(infiniccl.Error, match="tag"):
            comm.send(x, 0, tag=tag)
    with pytest.raises(infiniccl.Error, match="peer"):
        comm.send(x, infiniccl.ANY_SOURCE, tag=1)
    with pytest.raises(infiniccl.Error, match="source"):
        comm.recv(x, 0, tag=1, source=3)
    assert src.rank == -1


def test_sim_device_recv_any_source(comm):
    """Device arrays: the sender is in the Source once the call is done."""
    SimArray = _sim()
    if comm.size < 2:
        pytest.skip("needs 2 ranks")
    n, me = comm.size, comm.rank
    if me == 0:
        outs = [(SimArray((1000,), np.int64), infiniccl.Source()) for _ in range(n - 1)]
        for out, src in outs:
            comm.recv(out, infiniccl.ANY_SOURCE, tag=41, source=src)
        got = {}
        for out, src in outs:
            v = out.numpy()  # waits for the default stream, which the calls are on
            got[src.rank] = v
        assert sorted(got) == list(range(1, n)), sorted(got)
        for r, v in got.items():
            assert np.array_equal(v, _pattern(r, 41, 1000)), r
    else:
        comm.send(SimArray.from_numpy(_pattern(me, 41, 1000)), 0, tag=41)
    comm.all_reduce(np.zeros(1, np.int32))
