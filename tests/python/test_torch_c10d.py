"""The C++ torch.distributed backend (infiniccl._c10d, torch 2.x): what
torch 2.x adds over test_torch_backend.py (which runs on it too): the
coalesced tensor collectives, batch_isend_irecv, the object collectives,
the functional collectives that DTensor and torch.compile use, the
DistBackendError of a failed call and the group's timeout. Expected values
are computed here from the ranks' known inputs (small integers: exact in
every type). Every rank runs the same calls; results are asserted after the
last collective of a test."""
import datetime
import time

import numpy as np
import pytest
from torch_needs import torch_backend

torch, ict = torch_backend(cpp_only=True)
import torch.distributed as dist  # noqa: E402
from infiniccl import _c10d  # noqa: E402
from torch_compat import monitored_barrier, sequence_number  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_pg")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
          torch.int64]
R = dist.ReduceOp


def test_backend_is_cpp(comm):
    b = dist.group.WORLD._get_backend(torch.device("cpu"))
    assert isinstance(b, _c10d.Backend), type(b)
    assert dist.get_backend() == "infiniccl"
    assert (dist.get_rank(), dist.get_world_size()) == (comm.rank, comm.size)
    # The default group's timeout (init_process_group's default, 30 min for
    # non-NCCL backends) reached the backend.
    assert b.timeout_ms == int(dist.default_pg_timeout.total_seconds() * 1000)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_reductions(comm, dt):
    n, me = comm.size, comm.rank
    got = {}
    for op, name in [(R.SUM, "sum"), (R.MAX, "max"), (R.MIN, "min"), (R.PRODUCT, "prod")]:
        t = torch.tensor([me + 1, 2 * (me + 1), 1], dtype=dt)
        dist.all_reduce(t, op=op)
        got[name] = t.tolist()
    t = torch.tensor([me + 1, 3], dtype=dt)
    dist.reduce(t, dst=n - 1)
    got["reduce"] = t.tolist() if me == n - 1 else None
    t = torch.tensor([me * 10 + 7] * 3, dtype=dt)
    dist.broadcast(t, src=n - 1)
    got["bcast"] = t.tolist()
    s = sum(range(1, n + 1))
    p = 1
    for r in range(1, n + 1):
        p *= r
    want = {"sum": [s, 2 * s, n], "max": [n, 2 * n, 1], "min": [1, 2, 1],
            "prod": [p, p * 2 ** n, 1], "reduce": [s, 3 * n] if me == n - 1 else None,
            "bcast": [(n - 1) * 10 + 7] * 3}
    assert got == want


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_reduce_scatter_avg(comm, dt):
    """ReduceOp.AVG in reduce_scatter_tensor, as FSDP2 reduces its
    gradients (on torch 2.7 gloo returns the sum there): rank r gives
    n * (j + r) in block j, so block me averages to me * n + n(n-1)/2."""
    n, me = comm.size, comm.rank
    inp = torch.tensor([n * (j + me) for j in range(n) for _ in range(3)], dtype=dt)
    out = torch.zeros(3, dtype=dt)
    dist.reduce_scatter_tensor(out, inp, op=R.AVG)
    assert out.tolist() == [float(me * n + n * (n - 1) // 2)] * 3, out


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_gathers_and_scatters(comm, dt):
    n, me = comm.size, comm.rank
    got, want = {}, {}
    # all_gather (list) and all_gather_into_tensor.
    outs = [torch.zeros(2, dtype=dt) for _ in range(n)]
    dist.all_gather(outs, torch.tensor([me, me + 1], dtype=dt))
    got["all_gather"] = [o.tolist() for o in outs]
    want["all_gather"] = [[r, r + 1] for r in range(n)]
    flat = torch.zeros(2 * n, dtype=dt)
    dist.all_gather_into_tensor(flat, torch.tensor([me, 2 * me], dtype=dt))
    got["into_tensor"] = flat.tolist()
    want["into_tensor"] = [v for r in range(n) for v in (r, 2 * r)]
    # reduce_scatter (list) and reduce_scatter_tensor: rank r's block j is
    # [j + r, 1].
    out = torch.zeros(2, dtype=dt)
    dist.reduce_scatter(out, [torch.tensor([j + me, 1], dtype=dt) for j in range(n)])
    got["reduce_scatter"] = out.tolist()
    want["reduce_scatter"] = [n * me + n * (n - 1) // 2, n]
    out = torch.zeros(2, dtype=dt)
    dist.reduce_scatter_tensor(
        out, torch.tensor([v for j in range(n) for v in (j + me, 1)], dtype=dt), op=R.MAX)
    got["rs_tensor"] = out.tolist()
    want["rs_tensor"] = [me + n - 1, 1]
    # all_to_all_single, even and with split sizes: rank r sends j+1 rows
    # of value 10r+j to rank j.
    inp = torch.tensor([10 * me + j for j in range(n)], dtype=dt)
    out = torch.zeros(n, dtype=dt)
    dist.all_to_all_single(out, inp)
    got["a2a"] = out.tolist()
    want["a2a"] = [10 * r + me for r in range(n)]
    ins = torch.tensor([10 * me + j for j in range(n) for _ in range(j + 1)], dtype=dt)
    out = torch.zeros(n * (me + 1), dtype=dt)
    dist.all_to_all_single(out, ins, output_split_sizes=[me + 1] * n,
                           input_split_sizes=[j + 1 for j in range(n)])
    got["a2a_splits"] = out.tolist()
    want["a2a_splits"] = [10 * r + me for r in range(n) for _ in range(me + 1)]
    # all_to_all (lists)
    outs = [torch.zeros(1, dtype=dt) for _ in range(n)]
    dist.all_to_all(outs, [torch.tensor([100 + 10 * me + j], dtype=dt) for j in range(n)])
    got["a2a_list"] = [o.item() for o in outs]
    want["a2a_list"] = [100 + 10 * r + me for r in range(n)]
    # gather and scatter at the last rank
    root = n - 1
    lst = [torch.zeros(2, dtype=dt) for _ in range(n)] if me == root else None
    dist.gather(torch.tensor([me, 5], dtype=dt), lst, dst=root)
    got["gather"] = [o.tolist() for o in lst] if me == root else None
    want["gather"] = [[r, 5] for r in range(n)] if me == root else None
    out = torch.zeros(2, dtype=dt)
    src = [torch.tensor([j, 3 * j], dtype=dt) for j in range(n)] if me == root else None
    dist.scatter(out, src, src=root)
    got["scatter"] = out.tolist()
    want["scatter"] = [me, 3 * me]
    assert got == want


def test_coalesced_collectives(comm):
    n, me = comm.size, comm.rank
    from torch.distributed.distributed_c10d import _coalescing_manager

    ts = [torch.full((k + 1,), float(me + k)) for k in range(3)]
    with _coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    got = [t.tolist() for t in ts]
    want = [[float(sum(r + k for r in range(n)))] * (k + 1) for k in range(3)]
    outs = [torch.zeros(2 * n, dtype=torch.int64) for _ in range(2)]
    with _coalescing_manager(async_ops=True) as cm:
        for k, o in enumerate(outs):
            dist.all_gather_into_tensor(o, torch.tensor([me, k], dtype=torch.int64))
    cm.wait()
    got.append([o.tolist() for o in outs])
    want.append([[v for r in range(n) for v in (r, k)] for k in range(2)])
    rs = [torch.zeros(1, dtype=torch.int32) for _ in range(2)]
    with _coalescing_manager(async_ops=True) as cm:
        for k, o in enumerate(rs):
            dist.reduce_scatter_tensor(o, torch.arange(n, dtype=torch.int32) + k)
    cm.wait()
    got.append([o.item() for o in rs])
    want.append([n * (me + k) for k in range(2)])
    assert got == want


def test_batch_isend_irecv_ring(comm):
    # 1 Mi floats each way: past any eager limit, so it needs the group.
    n, me = comm.size, comm.rank
    count = 1 << 20
    send = torch.full((count,), float(me))
    recv = torch.zeros(count)
    left, right = (me - 1) % n, (me + 1) % n
    ops = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    small = torch.zeros(3, dtype=torch.int64)
    ops = [dist.P2POp(dist.irecv, small, right),
           dist.P2POp(dist.isend, torch.tensor([me, 7, me], dtype=torch.int64), left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert (recv.min().item(), recv.max().item()) == (float(left), float(left))
    assert small.tolist() == [right, 7, right]


def test_send_recv_and_source_rank(comm):
    n, me = comm.size, comm.rank
    got = []
    if me == 0:
        for r in range(1, n):
            t = torch.zeros(2, dtype=torch.float64)
            w = dist.irecv(t, src=r)
            w.wait()
            got.append(t.tolist())
    else:
        dist.send(torch.tensor([me, me * 1.5], dtype=torch.float64), dst=0)
    dist.barrier()
    assert got == ([[r, r * 1.5] for r in range(1, n)] if me == 0 else [])


def _build(size, value):
    """torch's _build_tensor: a size x size x size tensor of `value`."""
    return torch.full((size, size, size), float(value))


def test_send_recv_with_tag(comm):
    # torch's test_send_recv_with_tag: rank r sends to every other rank with
    # tag r; each receives from src with tag src, in rank order.
    n, me = comm.size, comm.rank
    got = []
    for dst in range(n):
        if dst == me:
            for src in range(n):
                if src == me:
                    continue
                out = _build(10, -1)
                dist.recv(out, src, tag=src)
                got.append((src, bool(out.eq(src).all())))
        else:
            dist.send(_build(10, me), dst, tag=me)
    assert got == [(src, True) for src in range(n) if src != me]


def test_send_recv_tags_interleaved(comm):
    # Two messages of different tags and sizes to the right neighbour,
    # received in the other order, under the autograd profiler (torch's
    # test_send_recv_autograd_profiler times p2p under it): a backend that
    # matched them in send order would truncate or swap them.
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    big, small = torch.zeros(5, 5, 5), torch.zeros(3)
    with torch.autograd.profiler.profile():
        sends = [dist.isend(_build(3, me)[0, 0], right, tag=11),
                 dist.isend(_build(5, 100 + me), right, tag=22)]
        dist.recv(big, left, tag=22)
        dist.recv(small, left, tag=11)
        for w in sends:
            w.wait()
    assert bool(big.eq(100 + left).all()) and bool(small.eq(left).all()), (big[0, 0], small)


def test_send_recv_any_source(comm):
    # torch's test_send_recv_any_source: each rank in turn receives from
    # every other rank twice without src, by recv (its return value) and by
    # irecv (work._source_rank()); the data is the sender's rank.
    n, me = comm.size, comm.rank
    recv_ranks, irecv_ranks, bad = [], [], []
    for dst in range(n):
        if dst == me:
            for _ in range(n - 1):
                for how in ("recv", "irecv"):
                    out = _build(10, -1)
                    if how == "recv":
                        sender = dist.recv(out)
                        recv_ranks.append(sender)
                    else:
                        work = dist.irecv(out)
                        work.wait()
                        sender = work._source_rank()
                        irecv_ranks.append(sender)
                    if not out.eq(sender).all():
                        bad.append((how, sender, out.flatten()[:3].tolist()))
        else:
            dist.send(_build(10, me), dst)
            dist.send(_build(10, me), dst)
    mine = torch.tensor(recv_ranks + irecv_ranks, dtype=torch.int64)
    everyone = [torch.empty_like(mine) for _ in range(n)]
    dist.all_gather(everyone, mine)
    counts = torch.bincount(torch.cat(everyone), minlength=n).tolist()
    assert not bad, bad
    # Which receive gets which sender's message is MPI's choice; each sender
    # is received from twice.
    assert sorted(recv_ranks + irecv_ranks) == sorted([r for r in range(n) if r != me] * 2)
    assert counts == [2 * (n - 1)] * n


def test_send_recv_any_source_with_tensor_return(comm):
    # irecv without src on rank 0 from every other rank, tagged: each Work
    # names its sender, whose tensor [sender, 10 * sender] it holds.
    n, me = comm.size, comm.rank
    got = {}
    if me == 0:
        for _ in range(1, n):
            t = torch.zeros(2, dtype=torch.int64)
            w = dist.irecv(t, tag=7)
            assert w.wait()
            got[w._source_rank()] = t.tolist()
    else:
        dist.send(torch.tensor([me, 10 * me]), 0, tag=7)
    dist.barrier()
    assert got == ({r: [r, 10 * r] for r in range(1, n)} if me == 0 else {})


def test_batch_isend_irecv_tags(comm):
    # torch's test_batch_isend_irecv_gloo_tags (receive tag src, send tag
    # rank), and two messages to each peer in one batch, of different sizes
    # and tags, whose receives are listed in the other order.
    n, me = comm.size, comm.rank
    ops, recvs = [], {}
    for peer in range(n):
        if peer == me:
            continue
        recvs[peer] = _build(peer + 1, -1)
        ops.append(dist.P2POp(dist.irecv, recvs[peer], peer, tag=peer))
        ops.append(dist.P2POp(dist.isend, _build(me + 1, me), peer, tag=me))
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    bad = [p for p, t in recvs.items() if not t.eq(p).all()]
    ops, small, large = [], {}, {}
    for peer in range(n):
        if peer == me:
            continue
        ops.append(dist.P2POp(dist.isend, torch.full((4,), float(me)), peer, tag=1))
        ops.append(dist.P2POp(dist.isend, torch.full((1 << 16,), float(-me)), peer, tag=2))
        large[peer], small[peer] = torch.zeros(1 << 16), torch.zeros(4)
        ops.append(dist.P2POp(dist.irecv, large[peer], peer, tag=2))
        ops.append(dist.P2POp(dist.irecv, small[peer], peer, tag=1))
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    bad += [p for p in small if not (small[p].eq(p).all() and large[p].eq(-p).all())]
    assert not bad, bad


def test_send_recv_tag_out_of_range(comm):
    with pytest.raises(RuntimeError, match="tag -1 is not a tag"):
        dist.send(torch.zeros(1), (comm.rank + 1) % comm.size, tag=-1)


def test_object_collectives(comm):
    n, me = comm.size, comm.rank
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": me, "name": "r%d" % me})
    lst = [("x", 1), None] if me == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    out = [None]
    dist.scatter_object_list(out, [[r, "s"] for r in range(n)] if me == 0 else None, src=0)
    gathered = [None] * n if me == n - 1 else None
    dist.gather_object(me * 3, gathered, dst=n - 1)
    assert objs == [{"rank": r, "name": "r%d" % r} for r in range(n)]
    assert lst == [("x", 1), None]
    assert out == [[me, "s"]]
    assert gathered == ([3 * r for r in range(n)] if me == n - 1 else None)


def test_functional_collectives(comm):
    import torch.distributed._functional_collectives as funcol

    n, me = comm.size, comm.rank
    group = dist.group.WORLD
    a = funcol.all_reduce(torch.full((3,), float(me + 1)), "sum", group)
    g = funcol.all_gather_tensor(torch.tensor([me, -me], dtype=torch.int64), 0, group)
    rs = funcol.reduce_scatter_tensor(torch.arange(2 * n, dtype=torch.float32) + me, "sum", 0,
                                      group)
    a2a = funcol.all_to_all_single(torch.tensor([10 * me + j for j in range(n)]), None, None,
                                   group)
    got = [funcol.wait_tensor(x).tolist() for x in (a, g, rs, a2a)]
    s = n * (n + 1) / 2
    want = [[s] * 3, [v for r in range(n) for v in (r, -r)],
            [float(n * (2 * me + k) + n * (n - 1) // 2) for k in range(2)],
            [10 * r + me for r in range(n)]]
    assert got == want


def test_failed_call_raises_dist_backend_error(comm):
    # BXOR of floats has no library reduction: every rank's call fails
    # before any communication, and wait() raises.
    t = torch.ones(2)
    with pytest.raises(dist.DistBackendError, match="allreduce.*BXOR is not supported"):
        dist.all_reduce(t, op=R.BXOR)
    # The group goes on afterwards.
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [comm.size] * 2


def test_library_error_message(comm):
    # An input overlapping the output other than at this rank's block: the
    # library refuses it on every rank (infinicclInvalidArgument).
    n, me = comm.size, comm.rank
    big = torch.zeros(2 * n + 1)
    with pytest.raises(dist.DistBackendError, match="all_gather_into_tensor.*InvalidArgument|"
                                                     "all_gather_into_tensor.*overlap"):
        dist.all_gather_into_tensor(big[:2 * n], big[2 * me + 1:2 * me + 3])


def test_group_timeout(comm):
    """Rank 0 enters a barrier of a group with a 3 s timeout; the others
    join it 6 s later. Rank 0's barrier fails after about 3 s naming the op
    and the group; the late barrier then completes, so the job goes on."""
    n, me = comm.size, comm.rank
    g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=3))
    err, took = None, None
    if me == 0:
        t0 = time.monotonic()
        try:
            dist.barrier(group=g)
        except RuntimeError as e:
            err = e
        took = time.monotonic() - t0
    else:
        time.sleep(6)
        dist.barrier(group=g)
    # Once the late barrier has completed on every rank, the group works
    # (rank 0 waits past the group's timeout for it).
    t = torch.ones(1)
    dist.all_reduce(t, group=g, async_op=True).wait(timeout=datetime.timedelta(seconds=60))
    dist.destroy_process_group(g)
    assert t.item() == n
    if me == 0:
        assert isinstance(err, dist.DistBackendError), repr(err)
        assert "barrier" in str(err) and "Timed out waiting 3000ms" in str(err), str(err)
        others = ",".join(str(r) for r in range(1, n)) if n <= 3 else "1-%d" % (n - 1)
        assert "AllReduce seq " in str(err), str(err)
        assert "ranks that have not reached it: %s;" % others in str(err), str(err)
        # Not before its timeout; the upper bound fails only a hang (a
        # barrier that waited for the late ranks would have no error).
        assert 2.5 < took < 30, took


def test_timed_out_call_then_destroy(comm):
    """As torch's test_barrier_timeout_*: rank 0 enters a barrier of a group
    with a 2 s timeout that the other ranks never call. It raises in gloo's
    words naming the ranks that did not arrive; destroying the group then
    aborts its communicator (the barrier waits in shared memory, so it
    returns), and the job goes on with exact results."""
    n, me = comm.size, comm.rank
    g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=2))
    if me == 0:
        t0 = time.monotonic()
        with pytest.raises(dist.DistBackendError, match=" Timed out waiting 2000ms ") as e:
            dist.barrier(group=g)
        took = time.monotonic() - t0
        # Not before its timeout; the error names the timeout, not the peers
        # that leave 3 s in, so it came first. Only a hang fails 30 s.
        assert 1.9 < took < 30, took
        assert "ranks that have not reached it: " in str(e.value), str(e.value)
    else:
        # The others destroy the group only after rank 0 timed out: a peer
        # that leaves ends rank 0's wait at once (RemoteError naming it).
        time.sleep(3)
    t0 = time.monotonic()
    dist.destroy_process_group(g)
    assert time.monotonic() - t0 < 30
    t = torch.full((5,), me + 1, dtype=torch.int64)
    dist.all_reduce(t)
    assert t.tolist() == [n * (n + 1) // 2] * 5


def test_new_group_subset(comm):
    n, me = comm.size, comm.rank
    members = [0, n - 1]
    g = dist.new_group(members)
    t = torch.tensor([me + 1], dtype=torch.int64)
    if me in members:
        dist.all_reduce(t, group=g)
        dist.destroy_process_group(g)
    assert t.item() == (1 + n if me in members else me + 1)


def test_monitored_barrier(comm):
    """dist.monitored_barrier passes when every rank comes; when the last
    rank stays away, rank 0 raises naming it within the timeout and the
    ranks that came raise at theirs; with wait_all_ranks every absent rank
    is named. Each failing case runs on a group of its own."""
    n, me = comm.size, comm.rank
    monitored_barrier(timeout=datetime.timedelta(seconds=30))
    monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)
    if n < 2:
        return
    for wait_all in (False, True):
        g = dist.new_group(list(range(n)))
        absent = [n - 1] if not wait_all else list(range(1, n))
        err, took = None, None
        if me not in absent:
            t0 = time.monotonic()
            try:
                monitored_barrier(group=g, timeout=datetime.timedelta(seconds=2),
                                  wait_all_ranks=wait_all)
            except RuntimeError as e:
                err = e
            took = time.monotonic() - t0
        comm.all_reduce(np.zeros(1))  # every rank past its try before the group goes
        dist.destroy_process_group(g)
        if me == 0:
            assert isinstance(err, dist.DistBackendError), repr(err)
            want = ("Rank %d failed" % (n - 1) if not wait_all else
                    ("Rank" + ("s " if n > 2 else " ") + ", ".join(map(str, absent)) +
                     " failed"))
            assert want in str(err) and "2000 ms" in str(err), str(err)
            assert 1.5 < took < 30, took
        elif me not in absent:
            assert isinstance(err, dist.DistBackendError), repr(err)
            assert "did not release" in str(err), str(err)


def test_destroyed_group_refuses_calls(comm):
    """A call on a group's backend after destroy_process_group raises at
    once, naming the op, instead of waiting for a worker that has ended."""
    n = comm.size
    g = dist.new_group(list(range(n)))
    b = g._get_backend(torch.device("cpu"))
    t = torch.ones(3)
    dist.all_reduce(t, group=g)
    dist.destroy_process_group(g)
    assert t.tolist() == [float(n)] * 3
    with pytest.raises(dist.DistBackendError, match="allreduce.*destroyed"):
        b.allreduce([t])
    assert t.tolist() == [float(n)] * 3


def test_sync_calls_keep_order_with_queued_async_calls(comm):
    """A synchronous host call (which runs in the caller's thread when the
    group's queue is idle) issued while asynchronous ones are still queued
    runs after them on every rank: each result is the sum of its own
    tensor's contributions."""
    n, me = comm.size, comm.rank
    for skew in (0.0, 0.05):
        ts = [torch.full((1 << 14,), float((me + 1) * (k + 1))) for k in range(8)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        if me == 0:
            time.sleep(skew)
        s = torch.full((5,), float(me + 100))
        dist.all_reduce(s)
        for w in works:
            w.wait()
        total = n * (n + 1) // 2
        for k, t in enumerate(ts):
            assert torch.all(t == float(total * (k + 1))), (k, t[:3])
        assert torch.all(s == float(sum(r + 100 for r in range(n)))), s


def test_sequence_numbers(comm):
    """One sequence number per call of the group, from 0, the same on every
    rank of a new group (as gloo's)."""
    n, me = comm.size, comm.rank
    g = dist.new_group(list(range(n)))
    s0 = sequence_number(g)
    t = torch.full((2,), me + 1, dtype=torch.int64)
    dist.all_reduce(t, group=g)
    dist.broadcast(t, 0, group=g)
    w = dist.isend(torch.ones(1), (me + 1) % n, group=g)
    dist.recv(torch.zeros(1), (me - 1) % n, group=g)
    w.wait()
    dist.barrier(group=g)
    s1 = sequence_number(g)
    seqs = torch.zeros(2 * n, dtype=torch.int64)
    dist.all_gather_into_tensor(seqs, torch.tensor([s0, s1], dtype=torch.int64), group=g)
    dist.destroy_process_group(g)
    assert t.tolist() == [n * (n + 1) // 2] * 2
    assert seqs.tolist() == [0, 5] * n, seqs


def test_debug_detail_mode(comm):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL wraps the backend in torch's
    ProcessGroupWrapper: collectives run with exact results, and a shape
    that differs between ranks raises torch's own fingerprint error on every
    rank before the backend sees the call."""
    n, me = comm.size, comm.rank
    old = dist.get_debug_level()
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        g = dist.new_group(list(range(n)))
    finally:
        dist.set_debug_level(old)
    t = torch.full((4,), me + 1, dtype=torch.int64)
    dist.all_reduce(t, group=g)
    out = torch.zeros(n, dtype=torch.int32)
    dist.all_gather_into_tensor(out, torch.tensor([10 * me], dtype=torch.int32), group=g)
    x = torch.zeros(2 if me == 0 else 3)
    with pytest.raises(RuntimeError, match="Detected mismatch between collectives on ranks"):
        dist.all_reduce(x, group=g)
    dist.destroy_process_group(g)
    assert t.tolist() == [n * (n + 1) // 2] * 4
    assert out.tolist() == [10 * r for r in range(n)]


def test_all_to_all_single_wrong_sizes(comm):
    """Sizes gloo refuses raise before anything is written; the output's
    neighbours in memory stay untouched (the output is a view of a larger
    buffer)."""
    n, me = comm.size, comm.rank
    inp = torch.arange(2 * n, dtype=torch.int32) + 100 * me
    buf = torch.full((4 * n,), -7, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="output has %d elements and the input %d" % (n, 2 * n)):
        dist.all_to_all_single(buf[:n], inp)  # smaller, equal splits, contiguous
    with pytest.raises(RuntimeError, match="output has %d elements" % (3 * n)):
        dist.all_to_all_single(buf[:3 * n], inp)  # larger
    with pytest.raises(RuntimeError, match="split sizes"):
        dist.all_to_all_single(buf[:2 * n], inp, [2] * (n + 1), [2] * n)
    with pytest.raises(RuntimeError, match="split sizes"):
        dist.all_to_all_single(buf[:2 * n], inp, [2] * n, [3] * n)
    with pytest.raises((RuntimeError, ValueError), match="dtype|data type"):
        dist.all_to_all_single(torch.zeros(2 * n), inp)  # torch's own check or ours
    assert buf.eq(-7).all(), buf
    out = buf[:2 * n]
    dist.all_to_all_single(out, inp)
    want = [100 * r + 2 * me + k for r in range(n) for k in range(2)]
    assert out.tolist() == want and buf[2 * n:].eq(-7).all(), buf


@pytest.mark.skipif(torch.__version__ < "2.9",
                    reason="torch before 2.9 has no Backend.split: its split_group is NCCL's")
def test_split_group(comm):
    """dist.split_group over infinicclCommSplit: even and odd ranks in two
    groups, then one group of the first and last ranks that the others do
    not join; exact sums on each, the world untouched."""
    n, me = comm.size, comm.rank
    halves = [list(range(0, n, 2)), list(range(1, n, 2))]
    g = dist.split_group(split_ranks=halves)
    mine = halves[me % 2]
    assert dist.get_process_group_ranks(g) == mine
    t = torch.full((3,), me + 1, dtype=torch.int64)
    dist.all_reduce(t, group=g)
    assert t.tolist() == [sum(r + 1 for r in mine)] * 3
    ends = [0, n - 1]
    g2 = dist.split_group(split_ranks=[ends])
    if me in ends:
        x = torch.tensor([10 * me], dtype=torch.int32)
        dist.all_reduce(x, group=g2)
        assert x.item() == 10 * (n - 1)
        dist.destroy_process_group(g2)
    else:
        assert g2 is None or g2 == dist.GroupMember.NON_GROUP_MEMBER, g2
    dist.destroy_process_group(g)
    w = torch.full((2,), me + 1, dtype=torch.int64)
    dist.all_reduce(w)
    assert w.tolist() == [n * (n + 1) // 2] * 2


def test_abort_process_group(comm):
    """dist.abort_process_group ends a group whose barrier rank 0 entered
    alone; the barrier's Work raises, and so does a receive
    rank 1 posted that no rank sends; the default group still works."""
    from torch.distributed.distributed_c10d import _abort_process_group

    n, me = comm.size, comm.rank
    g = dist.new_group(list(range(n)))
    t = torch.ones(1)
    dist.all_reduce(t, group=g)
    stuck = None
    if me == 0:
        stuck = dist.barrier(group=g, async_op=True)  # the others never come
    elif me == 1:
        stuck = dist.irecv(torch.zeros(4), 0, group=g)  # rank 0 never sends
    time.sleep(0.3)
    t0 = time.monotonic()
    b = g._get_backend(torch.device("cpu"))
    _abort_process_group(g)
    took = time.monotonic() - t0
    if stuck is not None:
        # Its own abort ("aborted"), or a peer's seen first by the call
        # waiting in shared memory ("rank 1 left the communicator
        # (infinicclCommAbort)"): which comes first is a race.
        with pytest.raises(RuntimeError, match="(?i)abort"):
            stuck.wait()
    # The stuck calls raised because of the abort (above); only a hang
    # fails the bound.
    assert took < 30, took
    assert t.item() == n
    if hasattr(b, "get_error"):
        assert "COMM_ERROR" in str(b.get_error()), b.get_error()
    x = torch.full((3,), me + 1, dtype=torch.int64)
    dist.all_reduce(x)
    assert x.tolist() == [n * (n + 1) // 2] * 3


def test_coalescing_manager_collectives_with_device(comm):
    """_coalescing_manager(device=...) around collectives and sends: one
    library group (as NCCL's), exact results once its Work is waited for."""
    from torch.distributed.distributed_c10d import _coalescing_manager

    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    ts = [torch.full((k + 2,), float(me + k)) for k in range(3)]
    y = torch.zeros(1 << 16, dtype=torch.int32)
    with _coalescing_manager(device=torch.device("cpu"), async_ops=True) as cm:
        s = dist.isend(torch.full((1 << 16,), me, dtype=torch.int32), right)
        r = dist.irecv(y, left)
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    s.wait()
    r.wait()
    assert [t.tolist() for t in ts] == [[float(sum(q + k for q in range(n)))] * (k + 2)
                                        for k in range(3)]
    assert y.eq(left).all(), y[:4]
    outs = [torch.zeros(2 * n, dtype=torch.int64) for _ in range(2)]
    with _coalescing_manager(device=torch.device("cpu")):
        for k, o in enumerate(outs):
            dist.all_gather_into_tensor(o, torch.tensor([me, k], dtype=torch.int64))
    assert [o.tolist() for o in outs] == [[v for q in range(n) for v in (q, k)]
                                          for k in range(2)]


def test_premul_sum(comm):
    """ReduceOp.PREMUL_SUM (NCCL's): each rank's tensor times the factor (a
    number or a one-element tensor), then summed; the caller's input of a
    reduce_scatter stays as it was."""
    n, me = comm.size, comm.rank
    make = dist._make_nccl_premul_sum
    t = torch.full((4,), float(me + 1), dtype=torch.float64)
    dist.all_reduce(t, op=make(2.0))
    assert t.tolist() == [2.0 * n * (n + 1) / 2] * 4
    t = torch.full((3,), float(me + 1), dtype=torch.float32)
    dist.all_reduce(t, op=make(torch.tensor([0.5], dtype=torch.float32)))
    assert t.tolist() == [0.5 * n * (n + 1) / 2] * 3
    inp = torch.arange(n, dtype=torch.float32) + me
    keep = inp.clone()
    out = torch.zeros(1, dtype=torch.float32)
    dist.reduce_scatter_tensor(out, inp, op=make(4.0))
    assert out.item() == 4.0 * sum(me + q for q in range(n))
    assert torch.equal(inp, keep)


def test_device_mesh_2d(comm):
    """init_device_mesh("cpu", (n/2, 2)): each dimension's groups sum
    exactly over their ranks (row-major: rank = 2 * row + column)."""
    from torch.distributed.device_mesh import init_device_mesh

    n, me = comm.size, comm.rank
    if n % 2:
        pytest.skip("a 2-D mesh of (n/2, 2) needs an even number of ranks")
    mesh = init_device_mesh("cpu", (n // 2, 2), mesh_dim_names=("dp", "tp"))
    want = {"dp": [c for c in range(me % 2, n, 2)], "tp": [me - me % 2, me - me % 2 + 1]}
    for dim, ranks in want.items():
        g = mesh.get_group(dim)
        t = torch.tensor([me + 1], dtype=torch.int64)
        dist.all_reduce(t, group=g)
        assert dist.get_process_group_ranks(g) == ranks
        assert t.item() == sum(r + 1 for r in ranks), (dim, t)
