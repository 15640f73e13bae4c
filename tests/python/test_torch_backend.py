"""The torch.distributed backend "infiniccl" (python/infiniccl/torch.py):
every operation in every data type, in and out of place, subgroups (one
leaving a rank out), get_future chains and the error paths. Expected values
are computed here from the ranks' known inputs (small integers: exact in
every type). Every rank runs the same calls; mismatches are gathered and
asserted after the last collective of a test."""
import re
import types
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
import torch.distributed as dist  # noqa: E402

import infiniccl  # noqa: E402

ict = pytest.importorskip("infiniccl.torch")

NUM = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.float16,
       torch.bfloat16, torch.float32, torch.float64]
ALL = NUM + [torch.bool, torch.complex64]
R = dist.ReduceOp


@pytest.fixture(scope="module", autouse=True)
def pg(comm):
    dist.init_process_group("infiniccl")  # env:// from the variables import set
    yield dist.group.WORLD
    dist.destroy_process_group()


def val(r, dt, n=6):
    """Rank r's input: small integers 1..3+r, 0/1 for bool."""
    v = torch.arange(n) % 3 + r + 1
    if dt is torch.bool:
        return (torch.arange(n) + r) % 2 == 0
    return v.to(dt)


def test_world_and_env(comm):
    import os

    assert (dist.get_rank(), dist.get_world_size()) == (comm.rank, comm.size)
    assert dist.get_backend() == "infiniccl"
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"]) == (str(comm.rank), str(comm.size))
    assert os.environ["MASTER_ADDR"] and int(os.environ["MASTER_PORT"]) > 0


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_all_reduce(comm, dt):
    n, me = comm.size, comm.rank
    vals = [val(r, dt) for r in range(n)]
    if dt is torch.bool:
        cases = [(R.SUM, vals[0] | vals[1]), (R.MAX, vals[0] | vals[1]),
                 (R.PRODUCT, vals[0] & vals[1]), (R.MIN, vals[0] & vals[1])]
        if n == 3:
            cases = [(op, ref | vals[2] if op in (R.SUM, R.MAX) else ref & vals[2])
                     for op, ref in cases]
    elif dt.is_complex:
        c = [v + 1j * (v + 1) for v in vals]
        vals = c
        cases = [(R.SUM, sum(c))]
    else:
        w = [v.to(torch.int64) for v in vals]
        prod = w[0]
        for x in w[1:]:
            prod = prod * x
        cases = [(R.SUM, sum(w)), (R.PRODUCT, prod), (R.MAX, w[-1]), (R.MIN, w[0])]
    errors = []
    for op, ref in cases:
        x = vals[me].clone()
        work = dist.all_reduce(x, op=op, async_op=True)
        work.wait()
        if not torch.equal(x, ref.to(dt)):
            errors.append("%s: %s, expected %s" % (op, x, ref))
    assert not errors, errors


def bits(r, dt, n=64):
    """Rank r's bit patterns: bool element i is bit r of i (every
    combination of the ranks' values appears); integers are arbitrary over
    the type's width with bit r set and bit r + 1 clear."""
    if dt is torch.bool:
        return (torch.arange(n) >> r) % 2 == 1
    g = torch.Generator().manual_seed(1234 + r)
    v = torch.randint(-2 ** 62, 2 ** 62, (n,), generator=g, dtype=torch.int64)
    v = (v | (1 << r)) & ~(1 << (r + 1))
    return v.to(dt)


@pytest.mark.parametrize("dt", [torch.int32, torch.bool, torch.uint8, torch.int64], ids=str)
def test_all_reduce_bitwise(comm, dt):
    """BAND, BOR, BXOR: the library's bitwise ops, against the folds of every
    rank's bits (all_reduce in place, and reduce_scatter_tensor)."""
    n, me = comm.size, comm.rank
    vals = [bits(r, dt) for r in range(n)]
    folds = {R.BAND: torch.bitwise_and, R.BOR: torch.bitwise_or, R.BXOR: torch.bitwise_xor}
    names = {R.BAND: "BAND", R.BOR: "BOR", R.BXOR: "BXOR"}
    errors = []
    for op, fold in folds.items():
        ref = vals[0]
        for v in vals[1:]:
            ref = fold(ref, v)
        x = vals[me].clone()
        dist.all_reduce(x, op=op)
        if not torch.equal(x, ref):
            errors.append("all_reduce %s: %s, expected %s" % (names[op], x, ref))
        out = torch.empty(64 // n if 64 % n == 0 else 0, dtype=dt)
        if 64 % n == 0:
            dist.reduce_scatter_tensor(out, vals[me], op=op)
            mine = ref[me * (64 // n):(me + 1) * (64 // n)]
            if not torch.equal(out, mine):
                errors.append("reduce_scatter_tensor %s: %s, expected %s" %
                              (names[op], out, mine))
    assert not errors, errors
    # Floating tensors: refused before any library call, on every rank.
    for op in folds:
        with pytest.raises(RuntimeError, match=names[op]):
            dist.all_reduce(torch.ones(2), op=op)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
def test_all_reduce_avg_noncontiguous(comm, dt):
    n, me = comm.size, comm.rank
    base = torch.zeros(4, 6, dtype=dt)
    base[:, 0] = float(2 * me)  # a column: not contiguous, copied back
    col = base[:, 0]
    assert not col.is_contiguous()
    dist.all_reduce(col, op=R.AVG)
    assert base[:, 0].tolist() == [float(n - 1)] * 4  # mean of 0, 2, .., 2(n-1)
    assert base[:, 1:].abs().sum().item() == 0


def test_all_reduce_coalesced_and_future_chain(comm):
    n, me = comm.size, comm.rank
    ts = [torch.full((3,), me + 1, dtype=torch.float64),
          torch.full((2, 2), me, dtype=torch.float64)]
    with pytest.warns((UserWarning, FutureWarning)):  # "will be deprecated"
        dist.all_reduce_coalesced(ts)
    assert ts[0].tolist() == [float(n * (n + 1) // 2)] * 3
    assert ts[1].flatten().tolist() == [float(n * (n - 1) // 2)] * 4
    x = torch.ones(4, dtype=torch.int64) * (me + 1)
    work = dist.all_reduce(x, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 10).then(lambda f: f.value() + 1)
    assert fut.wait().tolist() == [10 * n * (n + 1) // 2 + 1] * 4
    assert work.is_completed()
    assert work.wait()


@pytest.mark.parametrize("dt", ALL + [torch.complex128], ids=str)
def test_broadcast_reduce(comm, dt):
    n, me = comm.size, comm.rank
    errors = []
    for root in range(n):
        x = val(me, dt)
        dist.broadcast(x, src=root)
        if not torch.equal(x, val(root, dt)):
            errors.append("broadcast root %d: %s" % (root, x))
    if not dt.is_complex:
        x = val(me, dt)
        dist.reduce(x, dst=n - 1, op=R.MAX)
        if me == n - 1 and not torch.equal(x, val(n - 1, dt) if dt is not torch.bool
                                           else val(0, dt) | val(1, dt)):
            errors.append("reduce max: %s" % x)
        x = val(me, dt)
        dist.reduce(x, dst=0, op=R.SUM)
        if dt is not torch.bool:
            ref = sum(val(r, torch.int64) for r in range(n)).to(dt)
            if me == 0 and not torch.equal(x, ref):
                errors.append("reduce sum: %s" % x)
    assert not errors, errors


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_all_gather(comm, dt):
    n, me = comm.size, comm.rank
    outs = [torch.empty(6, dtype=dt) for _ in range(n)]
    dist.all_gather(outs, val(me, dt).reshape(2, 3).reshape(6))
    flat = torch.empty(n * 6, dtype=dt)
    dist.all_gather_into_tensor(flat, val(me, dt)) if hasattr(dist, "all_gather_into_tensor") \
        else dist._all_gather_base(flat, val(me, dt))
    ref = [val(r, dt) for r in range(n)]
    assert all(torch.equal(o, r) for o, r in zip(outs, ref)), outs
    assert torch.equal(flat, torch.cat(ref)), flat


def test_all_gather_coalesced(comm):
    n, me = comm.size, comm.rank
    ins = [torch.full((2,), me, dtype=torch.int32), torch.full((3,), 10 + me, dtype=torch.int32)]
    outs = [[torch.empty(2, dtype=torch.int32), torch.empty(3, dtype=torch.int32)]
            for _ in range(n)]
    with warnings.catch_warnings():  # some torch versions: "will be deprecated"
        warnings.simplefilter("ignore")
        dist.all_gather_coalesced(outs, ins)
    got = [[o.tolist() for o in lst] for lst in outs]
    assert got == [[[r] * 2, [10 + r] * 3] for r in range(n)], got


@pytest.mark.parametrize("dt", NUM, ids=str)
def test_reduce_scatter(comm, dt):
    n, me = comm.size, comm.rank
    # Rank r's block j is j + r + 1 (x2 elements): block me sums to n*me + n(n+1)/2.
    ins = [torch.full((2,), j + r + 1, dtype=dt) for r in [me] for j in range(n)]
    out = torch.empty(2, dtype=dt)
    dist.reduce_scatter(out, ins)
    flat_out = torch.empty(2, dtype=dt)
    fn = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    fn(flat_out, torch.cat(ins))
    want = n * me + n * (n + 1) // 2
    assert out.tolist() == flat_out.tolist() == [want] * 2, (out, flat_out)


@pytest.mark.parametrize("dt", [torch.int8, torch.bfloat16, torch.float64, torch.bool], ids=str)
def test_all_to_all(comm, dt):
    n, me = comm.size, comm.rank
    # Equal splits: block j of rank r holds 10r + j.
    x = torch.tensor([10 * me + j for j in range(n) for _ in range(2)]).to(dt)
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    ref = torch.tensor([10 * r + me for r in range(n) for _ in range(2)]).to(dt)
    errors = [] if torch.equal(out, ref) else ["equal: %s" % out]
    # Unequal splits: rank r sends r + j + 1 rows of width 2 to rank j.
    ins = [r + j + 1 for r in [me] for j in range(n)]
    outs = [r + me + 1 for r in range(n)]
    x = torch.cat([torch.full((k, 2), 10 * me + j) for j, k in enumerate(ins)]).to(dt)
    out = torch.empty(sum(outs), 2, dtype=dt)
    dist.all_to_all_single(out, x, outs, ins)
    ref = torch.cat([torch.full((k, 2), 10 * r + me) for r, k in enumerate(outs)]).to(dt)
    if not torch.equal(out, ref):
        errors.append("unequal: %s" % out)
    # The list form, tensors of different sizes.
    xs = [torch.full((me + j + 1,), 10 * me + j).to(dt) for j in range(n)]
    outs_t = [torch.empty(r + me + 1, dtype=dt) for r in range(n)]
    dist.all_to_all(outs_t, xs)
    for r, o in enumerate(outs_t):
        if not torch.equal(o, torch.full((r + me + 1,), 10 * r + me).to(dt)):
            errors.append("list from %d: %s" % (r, o))
    assert not errors, errors


def test_all_to_all_mismatched_splits(comm):
    n, me = comm.size, comm.rank
    # Every rank receives one row more from rank 0 than rank 0 sends: refused
    # on every rank, nothing written.
    ins = [1] * n
    outs = [2] + [1] * (n - 1)
    x = torch.ones(n, 2)
    out = torch.full((n + 1, 2), -1.0)
    with pytest.raises(RuntimeError, match="split sizes disagree"):
        dist.all_to_all_single(out, x, outs, ins)
    assert out.eq(-1).all()


@pytest.mark.parametrize("dt", [torch.int16, torch.float16, torch.bool, torch.complex64],
                         ids=str)
def test_gather_scatter(comm, dt):
    n, me = comm.size, comm.rank
    root = n - 1
    gl = [torch.empty(6, dtype=dt) for _ in range(n)] if me == root else None
    dist.gather(val(me, dt), gl, dst=root)
    errors = []
    if me == root and not all(torch.equal(g, val(r, dt)) for r, g in enumerate(gl)):
        errors.append("gather: %s" % gl)
    out = torch.empty(6, dtype=dt)
    sl = [val(10 + r, dt) for r in range(n)] if me == 0 else None
    dist.scatter(out, sl, src=0)
    if not torch.equal(out, val(10 + me, dt)):
        errors.append("scatter: %s" % out)
    dist.barrier()
    assert not errors, errors


def test_send_recv(comm):
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    # A ring exchange of 1 MiB per rank in one batch (would deadlock if the
    # sends completed one by one before the receives were posted).
    x = torch.full((1 << 18,), me, dtype=torch.float32)
    y = torch.empty_like(x)
    ops = [dist.P2POp(dist.isend, x, right), dist.P2POp(dist.irecv, y, left)]
    works = dist.batch_isend_irecv(ops)
    for w in works:
        w.wait()
    errors = [] if y.eq(left).all() else ["ring: %s" % y[:4]]
    # Plain send/recv: rank 0 to the last rank, bfloat16, a strided receive.
    if me == 0:
        dist.send(torch.arange(8, dtype=torch.bfloat16), dst=n - 1)
    elif me == n - 1:
        buf = torch.zeros(8, 2, dtype=torch.bfloat16)
        dist.recv(buf[:, 1], src=0)
        if buf[:, 1].tolist() != list(range(8)) or buf[:, 0].abs().sum() != 0:
            errors.append("send/recv: %s" % buf)
    assert not errors, errors


def test_send_recv_tags_and_any_source(comm):
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    errors = []
    # Tags: two messages to the right of different sizes, tags 4 then 9,
    # received in the other order (isend: the second send is posted before
    # the first is received).
    works = [dist.isend(torch.full((3,), float(me)), right, tag=4),
             dist.isend(torch.full((70,), float(10 + me)), right, tag=9)]
    b, a = torch.zeros(70), torch.zeros(3)
    dist.recv(b, left, tag=9)
    dist.recv(a, left, tag=4)
    for w in works:
        w.wait()
    if not (a.eq(left).all() and b.eq(10 + left).all()):
        errors.append("tags: %s %s" % (a, b[:3]))
    # From any source: rank 0 takes one message from every other rank, by
    # recv (its return value) and irecv (work._source_rank()); each tensor
    # is [sender, 2 * sender].
    if me == 0:
        senders = []
        for k in range(1, n):
            t = torch.zeros(2, dtype=torch.int64)
            if k % 2:
                src = dist.recv(t, tag=5)
            else:
                w = dist.irecv(t, tag=5)
                w.wait()
                src = w._source_rank()
            senders.append(src)
            if t.tolist() != [src, 2 * src]:
                errors.append("any source: %s from %s" % (t.tolist(), src))
        if sorted(senders) != list(range(1, n)):
            errors.append("senders %s" % senders)
    else:
        dist.send(torch.tensor([me, 2 * me]), 0, tag=5)
    # batch_isend_irecv with tags: the receives listed in the other order.
    small, large = torch.zeros(2), torch.zeros(1 << 16)
    ops = [dist.P2POp(dist.isend, torch.full((2,), float(me)), right, tag=1),
           dist.P2POp(dist.isend, torch.full((1 << 16,), float(-me)), right, tag=2),
           dist.P2POp(dist.irecv, large, left, tag=2),
           dist.P2POp(dist.irecv, small, left, tag=1)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    if not (small.eq(left).all() and large.eq(-left).all()):
        errors.append("batch tags: %s %s" % (small, large[:3]))
    with pytest.raises(RuntimeError, match="tag"):
        dist.send(torch.zeros(1), right, tag=-1)
    dist.barrier()
    assert not errors, errors


def test_subgroups(comm):
    n, me = comm.size, comm.rank
    members = [0, n - 1] if n > 2 else [1]  # leaves rank 1 (and at 2 ranks rank 0) out
    g = dist.new_group(members)
    full = dist.new_group(list(range(n)))
    x = torch.full((3,), 100 + me, dtype=torch.int64)
    dist.all_reduce(x, group=g)
    ref = sum(100 + r for r in members) if me in members else 100 + me
    errors = [] if x.tolist() == [ref] * 3 else ["group %s: %s" % (members, x)]
    if me in members:
        gr = dist.get_rank(g)
        if gr != members.index(me) or dist.get_world_size(g) != len(members):
            errors.append("group rank %d of %d" % (gr, dist.get_world_size(g)))
        b = torch.full((2,), me, dtype=torch.int32)
        dist.broadcast(b, src=members[-1], group=g)  # src: a global rank
        if b.tolist() != [members[-1]] * 2:
            errors.append("group broadcast: %s" % b)
    y = torch.ones(2)
    dist.all_reduce(y, group=full)
    if y.tolist() != [float(n)] * 2:
        errors.append("full group: %s" % y)
    dist.destroy_process_group(g)
    dist.destroy_process_group(full)
    # The communicator is gone: the library says so (the Python backend;
    # torch 2.x keeps the C++ backend object of a destroyed group alive).
    if me in members and ict.backend_kind() == "python":
        with pytest.raises(RuntimeError, match="destroyed"):
            g.allreduce([x])
    assert not errors, errors


def test_errors(comm):
    n, me = comm.size, comm.rank
    # Local argument errors: raised before any library call, on every rank.
    with pytest.raises(RuntimeError, match="data type"):
        dist.all_gather_into_tensor(torch.empty(2 * n, dtype=torch.int32),
                                    torch.ones(2, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="size"):
        dist.all_gather_into_tensor(torch.empty(2 * n + 1), torch.ones(2))
    with pytest.raises(RuntimeError, match="tensors for a group"):
        dist.all_gather([torch.empty(2)] * (n + 1), torch.ones(2))
    if ict.backend_kind() == "python":  # torch 2.x's dispatcher keeps meta tensors
        with pytest.raises(RuntimeError, match="device meta"):
            dist.all_reduce(torch.empty(2, device="meta"))
    with pytest.raises(RuntimeError, match="BXOR"):
        dist.all_reduce(torch.ones(2), op=R.BXOR)
    with pytest.raises(RuntimeError, match="split sizes"):
        dist.all_to_all_single(torch.empty(3), torch.empty(3), [1] * n, [3] * n)
    # World-size mismatch: the creator checks against MPI before any call.
    opts = types.SimpleNamespace(store=None, group_rank=me, group_size=n + 1,
                                 global_ranks_in_group=[])
    with pytest.raises(RuntimeError, match="MPI says rank %d of %d" % (me, n)):
        ict._create(opts)
    # The library's own error after a local call: a root out of range.
    pgw = dist.group.WORLD
    o = dist.BroadcastOptions()
    o.rootRank = n
    with pytest.raises(RuntimeError, match="not a rank of the group"):
        pgw.broadcast([torch.ones(1)], o)
    # Everything still works afterwards.
    x = torch.ones(1)
    dist.all_reduce(x)
    assert x.item() == n


# ---- CPU all_reduce on the group's background thread -------------------------
BIG = (ict._INLINE_BYTES // 8) + 1  # float64 elements: queued, not run inline


def test_device_without_runtime(pg):
    """A tensor on a device whose runtime the library lacks is refused before
    its pointer reaches the library (MPI would read it as host memory), the
    message naming the device and the runtimes the library has."""
    have = infiniccl.device_runtimes()
    assert have[0] == "cpu" and have[-1] == "sim", have
    listed = re.escape("(its runtimes: %s)" % ", ".join(have))
    # The backend object itself: torch 2.x's dispatcher ends dist.* calls on
    # meta tensors before any backend sees them.
    backend = pg._get_backend(torch.device("cpu")) if hasattr(pg, "_get_backend") else pg
    meta = torch.empty(4, device="meta")
    for name, call in (("allreduce", lambda: backend.allreduce([meta])),
                       ("broadcast", lambda: backend.broadcast([meta]))):
        with pytest.raises(RuntimeError,
                           match="device meta: the infiniccl library has no device runtime "
                                 "for meta tensors " + listed):
            call().wait()
    # cuda and hip: devices this torch may lack, so the check itself, the
    # one every call makes, on the device's name.
    if ict.backend_kind() == "cpp":
        assert ict._cpp.library_runtimes() == have
        check = ict._cpp.check_device
    else:
        def check(device):
            ict._check_runtime(torch.device(device))
    check("cpu")
    if "hip" not in have:  # torch's own device type hip (AMD's torch calls it cuda)
        with pytest.raises(RuntimeError,
                           match="device hip:0: the infiniccl library has no device runtime "
                                 "for hip tensors " + listed + "; hip tensors need a library "
                                 "built with hip"):
            check("hip:0")
    if not {"cuda", "hip", "metax", "iluvatar"} & set(have):
        with pytest.raises(RuntimeError,
                           match="device cuda:0: the infiniccl library has no device runtime "
                                 "for cuda tensors " + listed + "; cuda tensors need a library "
                                 "built with cuda or hip or metax or iluvatar"):
            check("cuda:0")
    else:
        check("cuda:0")


def test_async_allreduce_order_and_results(comm):
    n, me = comm.size, comm.rank
    s = n * (n + 1) // 2          # sum of r + 1 over the ranks
    p = 1
    for r in range(n):
        p *= r + 1                # product of r + 1
    x = torch.full((BIG,), me + 1, dtype=torch.float64)
    y = torch.full((BIG,), me + 1, dtype=torch.float64)
    small = torch.full((3,), me, dtype=torch.int32)
    w1 = dist.all_reduce(x, async_op=True)
    w2 = dist.all_reduce(x, op=R.PRODUCT, async_op=True)       # after w1: (s)^n
    w3 = dist.all_reduce(y, op=R.PRODUCT, async_op=True)       # n!
    w4 = dist.all_reduce(small, async_op=True)                 # small: queued behind w3
    f5 = dist.all_reduce(y, async_op=True).get_future()        # after w3: n * n!
    b = torch.full((2,), me, dtype=torch.int64)
    dist.broadcast(b, src=n - 1)                               # waits for the queue
    for w in (w1, w2, w3, w4):
        w.wait()
    got = f5.wait()
    errors = []
    if not (w1.is_completed() and w4.is_completed()):
        errors.append("not completed after wait")
    if not x.eq(float(s) ** n).all():
        errors.append("sum then product: %s" % x[:3])
    if not (y.eq(float(n * p)).all() and got[0] is y):
        errors.append("product then sum: %s" % y[:3])
    if small.tolist() != [n * (n - 1) // 2] * 3:
        errors.append("small: %s" % small)
    if b.tolist() != [n - 1] * 2:
        errors.append("broadcast: %s" % b)
    # A plain (synchronous) call after queued ones: in order, done on return.
    z = torch.full((BIG,), me + 1, dtype=torch.float64)
    w6 = dist.all_reduce(z, async_op=True)
    dist.all_reduce(z, op=R.MAX)
    if not (w6.is_completed() and z.eq(float(s)).all()):
        errors.append("sync after queued: %s" % z[:3])
    assert not errors, errors


def test_async_allreduce_not_complete_before_peers(comm):
    n, me = comm.size, comm.rank
    x = torch.full((BIG,), 1.0, dtype=torch.float64)
    flag = torch.zeros(1, dtype=torch.int32).numpy()
    if me == 0:
        w = dist.all_reduce(x, async_op=True)
        seen = w.is_completed()  # the others have not called yet: cannot be done
        comm.all_reduce(flag)    # lets them call
    else:
        comm.all_reduce(flag)
        w = dist.all_reduce(x, async_op=True)
        seen = False
    w.wait()
    assert not seen and x.eq(float(n)).all(), (seen, x[:3])


@pytest.mark.skipif(ict.backend_kind() != "python",
                    reason="replaces a call of the Python backend (infiniccl.torch._AllReduce)")
def test_async_allreduce_error(comm, monkeypatch):
    """A library error on the background thread fails that call's future with
    the library's message, and every later call of the group raises instead
    of hanging; other groups are unaffected."""
    n = comm.size
    g = dist.new_group(list(range(n)))
    real = ict._AllReduce
    # An invalid data type code: the library refuses it on every rank before
    # any communication.
    monkeypatch.setattr(ict, "_AllReduce", lambda p, q, c, t, o, h, s: real(p, q, c, 99, o, h, s))
    x = torch.ones(BIG, dtype=torch.float64)
    fut = dist.all_reduce(x, group=g, async_op=True).get_future()
    with pytest.raises(RuntimeError, match="type"):
        fut.wait()
    monkeypatch.setattr(ict, "_AllReduce", real)
    with pytest.raises(RuntimeError, match="earlier call of this process group failed"):
        dist.all_reduce(torch.ones(2), group=g)
    with pytest.raises(RuntimeError, match="earlier call of this process group failed"):
        dist.broadcast(torch.ones(2), src=0, group=g)
    dist.destroy_process_group(g)
    y = torch.ones(BIG, dtype=torch.float64)
    dist.all_reduce(y, async_op=True).wait()
    assert x.eq(1).all() and y.eq(float(n)).all()
