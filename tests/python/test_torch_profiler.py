"""torch.profiler on the C++ torch.distributed backend (infiniccl._c10d,
torch 2.x): every collective and point-to-point call records an
"infiniccl:<op>" event (gloo's op names; a batch of batch_isend_irecv one
"infiniccl:coalesced") with its input tensors' shapes when the profiler
records shapes, from when the call starts running until it completes, on
the caller's thread or the group's worker. Results stay exact under the
profiler. Every rank runs the same calls; results are asserted after the
last collective of a test."""
import collections
import datetime
import time

import pytest
from torch_needs import torch_backend

torch, ict = torch_backend(cpp_only=True)
import torch.distributed as dist  # noqa: E402

from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch_compat import monitored_barrier  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_pg")


def _ours(prof):
    """(name, input shapes) of the backend's events, in no particular order
    (a call on the worker records its event on the worker's thread)."""
    return [(e.name, [list(s) for s in e.input_shapes]) for e in prof.events()
            if e.name.startswith("infiniccl:")]


def _profile(record_shapes=True):
    return profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes)


def test_collective_events(comm):
    n, me = comm.size, comm.rank
    with _profile() as prof:
        # Synchronous and small: in the caller's thread.
        a = torch.full((3, 4), float(me + 1))
        dist.all_reduce(a)
        # Asynchronous and above 64 KiB: on the group's worker.
        big = torch.full((1 << 15,), float(me + 1))
        dist.all_reduce(big, async_op=True).wait()
        b = torch.arange(5, dtype=torch.int64) * (me + 1)
        dist.broadcast(b, src=0)
        r = torch.full((2, 3), me + 1, dtype=torch.int32)
        dist.reduce(r, dst=n - 1)
        gl = [torch.zeros(2) for _ in range(n)]
        dist.all_gather(gl, torch.tensor([me, 10.0 * me]))
        flat = torch.zeros(2 * n)
        dist.all_gather_into_tensor(flat, torch.tensor([me, -me], dtype=torch.float32))
        rs = torch.zeros(2)
        dist.reduce_scatter_tensor(rs, torch.arange(2 * n, dtype=torch.float32) + me)
        a2a = torch.zeros(2 * n)
        dist.all_to_all_single(a2a, torch.arange(2 * n, dtype=torch.float32) + 100 * me)
        gathered = [torch.zeros(3) for _ in range(n)] if me == 0 else None
        dist.gather(torch.full((3,), float(me)), gathered, dst=0)
        sc = torch.zeros(4)
        dist.scatter(sc, [torch.full((4,), float(j)) for j in range(n)] if me == 0 else None,
                     src=0)
        dist.barrier()
        monitored_barrier(timeout=datetime.timedelta(seconds=30))
    got = collections.Counter(repr(e) for e in _ours(prof))
    want = collections.Counter(repr(e) for e in [
        ("infiniccl:all_reduce", [[3, 4]]),
        ("infiniccl:all_reduce", [[1 << 15]]),
        ("infiniccl:broadcast", [[5]]),
        ("infiniccl:reduce", [[2, 3]]),
        ("infiniccl:all_gather", [[2]]),
        ("infiniccl:all_gather", [[2]]),
        ("infiniccl:reduce_scatter", [[2 * n]]),
        ("infiniccl:all_to_all", [[2 * n]]),
        ("infiniccl:gather", [[3]]),
        # The root's list of inputs; other ranks give none.
        ("infiniccl:scatter", [[4]] * n if me == 0 else []),
        ("infiniccl:barrier", []),
        ("infiniccl:monitored_barrier", []),
    ])
    assert got == want, (got, want)
    # key_averages groups them by name: one row per op.
    avg = {e.key: e.count for e in prof.key_averages() if e.key.startswith("infiniccl:")}
    assert avg["infiniccl:all_reduce"] == 2 and avg["infiniccl:all_gather"] == 2, avg
    by_shape = {(e.key, str(e.input_shapes))
                for e in prof.key_averages(group_by_input_shape=True)
                if e.key == "infiniccl:all_reduce"}
    assert by_shape == {("infiniccl:all_reduce", "[[3, 4]]"),
                        ("infiniccl:all_reduce", "[[32768]]")}, by_shape
    # The results, exact under the profiler.
    s = n * (n + 1) // 2
    assert a.eq(s).all() and big.eq(s).all()
    assert b.tolist() == list(range(5))
    if me == n - 1:
        assert r.eq(s).all()
    assert [t.tolist() for t in gl] == [[j, 10.0 * j] for j in range(n)]
    assert flat.tolist() == [v for j in range(n) for v in (j, -j)]
    assert rs.tolist() == [sum(2 * me + k + j for j in range(n)) for k in range(2)]
    assert a2a.tolist() == [2 * me + k + 100 * j for j in range(n) for k in range(2)]
    if me == 0:
        assert [t.tolist() for t in gathered] == [[float(j)] * 3 for j in range(n)]
    assert sc.eq(me).all()


def test_point_to_point_events(comm):
    """send, recv, isend/irecv, a receive from any source and a batch; the
    receive's event covers its wait for a sender that comes late."""
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    with _profile() as prof:
        # A ring in both orders: isend then recv.
        out = torch.zeros(6, dtype=torch.int64)
        w = dist.isend(torch.full((6,), me, dtype=torch.int64), right)
        dist.recv(out, left)
        w.wait()
        # Rank 1 sends 0.3 s late; rank 0's recv lasts until it arrives.
        late = torch.zeros(2, 2)
        if me == 0:
            dist.recv(late, 1)
        elif me == 1:
            time.sleep(0.3)
            dist.send(torch.full((2, 2), 5.0), 0)
        # A receive from any source at rank 0, from rank 1 (a tag of its
        # own: rank 2's batch below may reach rank 0 first).
        anyt = torch.zeros(3)
        sender = -1
        if me == 0:
            sender = dist.recv(anyt, tag=3)
        elif me == 1:
            dist.send(torch.full((3,), 7.0), 0, tag=3)
        # One batch.
        bsend, brecv = torch.full((4,), float(me)), torch.zeros(4)
        ops = [dist.P2POp(dist.isend, bsend, right), dist.P2POp(dist.irecv, brecv, left)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    events = _ours(prof)
    got = collections.Counter(repr(e) for e in events)
    want = [("infiniccl:send", [[6]]), ("infiniccl:recv", [[6]]),
            ("infiniccl:coalesced", [[4], [4]])]
    if me == 0:
        want += [("infiniccl:recv", [[2, 2]]), ("infiniccl:recvAnySource", [[3]])]
    elif me == 1:
        want += [("infiniccl:send", [[2, 2]]), ("infiniccl:send", [[3]])]
    want = collections.Counter(repr(e) for e in want)
    assert got == want, (got, want)
    if me == 0:
        late_us = [e.time_range.elapsed_us() for e in prof.events()
                   if e.name == "infiniccl:recv" and [list(s) for s in e.input_shapes] == [[2, 2]]]
        assert len(late_us) == 1 and late_us[0] > 200_000, late_us
    assert out.eq(left).all()
    assert brecv.eq(left).all()
    if me == 0:
        assert late.eq(5.0).all()
        assert sender == 1 and anyt.eq(7.0).all()


def test_without_shapes_and_without_profiler(comm):
    """record_shapes=False: the events, without shapes; no profiler: calls
    as usual."""
    n, me = comm.size, comm.rank
    with _profile(record_shapes=False) as prof:
        t = torch.full((8,), float(me))
        dist.all_reduce(t)
    assert _ours(prof) == [("infiniccl:all_reduce", [])], _ours(prof)
    u = torch.full((8,), 1.0)
    dist.all_reduce(u)
    assert t.eq(sum(range(n))).all() and u.eq(n).all()
