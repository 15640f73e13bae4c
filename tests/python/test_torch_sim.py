"""The EMULATED torch device "sim" (infiniccl.torch_sim) and the backend
"infiniccl" on its tensors, with NCCL's stream semantics: each call ordered
on the current sim stream, wait() making the current stream wait without
blocking the host, synchronize() blocking, tensors kept from the caching
allocator until the stream has passed the call.

Needs torch 2.15+, the C++ backend and INFINICCL_DEVICE=sim; skips without
torch 2.15. Every expected value is computed on the CPU from the ranks'
inputs; values are small integers, exact in every type used."""
import time

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import torch.distributed as dist  # noqa: E402

if tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15):
    pytest.skip("infiniccl.torch_sim needs torch 2.15 or later", allow_module_level=True)
sim = pytest.importorskip("infiniccl.torch_sim")

pytestmark = pytest.mark.usefixtures("torch_pg")

DTYPES = [torch.int32, torch.int64, torch.float32, torch.float64, torch.bfloat16, torch.uint8]
KERNEL_US = 100_000  # a 100 ms emulated kernel
# Where a check needs the stream still busy after a few host steps: long
# enough for a loaded machine.
LONG_US = 500_000


def val(rank, dt, n=12):
    """Rank r's input: 1..n plus r, small enough for uint8 sums at 3 ranks."""
    return (torch.arange(n) % 7 + 1 + rank).to(dt)


def test_device_and_copies():
    assert torch.accelerator.current_accelerator().type == "sim"
    assert torch._C._get_privateuse1_backend_name() == "sim"
    for dt in DTYPES:
        c = val(3, dt)
        x = c.to("sim")
        assert x.device.type == "sim" and x.is_sim
        assert torch.equal(x.cpu(), c)
        # Kernels run as CPU kernels on the emulated memory, views alias it.
        assert torch.equal((x + x).cpu(), c + c)
        assert torch.equal(x.view(3, 4).t().contiguous().cpu(), c.view(3, 4).t().contiguous())
        v = x[1::3]
        v.fill_(5)
        cc = c.clone()
        cc[1::3] = 5
        assert torch.equal(x.cpu(), cc)


def test_streams_and_events():
    s = torch.Stream(device="sim")
    e = torch.Event(device="sim")
    x = torch.ones(4, device="sim")
    with s:
        sim.kernel(LONG_US)
        e.record()
    t0 = time.monotonic()
    assert not e.query()
    e.synchronize()
    assert time.monotonic() - t0 > 0.05
    assert e.query()
    with s:
        y = x * 3
    assert torch.equal(y.cpu(), torch.full((4,), 3.0))
    # A stream waiting on an event recorded behind a kernel.
    s2 = torch.Stream(device="sim")
    e2 = torch.Event(device="sim")
    with s:
        sim.kernel(LONG_US)
        e.record()
    s2.wait_event(e)
    with s2:
        e2.record()
    t0 = time.monotonic()
    assert not e2.query()
    e2.synchronize()
    assert time.monotonic() - t0 > 0.05


def test_caching_allocator_record_stream():
    s = torch.Stream(device="sim")
    a = torch.ones(1024, device="sim")
    p = a.data_ptr()
    with s:
        sim.kernel(LONG_US)
    a.record_stream(s)
    del a
    b = torch.empty(1024, device="sim")  # s has not passed the free: not a's block
    assert b.data_ptr() != p
    s.synchronize()
    del b
    c = torch.empty(1024, device="sim")
    d = torch.empty(1024, device="sim")
    assert p in (c.data_ptr(), d.data_ptr())  # reused once s has passed it


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_collectives_exact(comm, dt):
    n, me = comm.size, comm.rank
    vals = [val(r, dt) for r in range(n)]
    errors = []
    x = vals[me].to("sim")
    dist.all_reduce(x)
    want = sum(v.to(torch.int64) for v in vals).to(dt)
    if not torch.equal(x.cpu(), want):
        errors.append("all_reduce %s: %s" % (dt, x.cpu()))
    x = vals[me].to("sim")
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    if not torch.equal(x.cpu(), vals[n - 1]):
        errors.append("all_reduce MAX %s" % dt)
    for root in range(n):
        x = vals[me].to("sim")
        dist.broadcast(x, src=root)
        if not torch.equal(x.cpu(), vals[root]):
            errors.append("broadcast root %d %s" % (root, dt))
    out = torch.empty(12 * n, dtype=dt, device="sim")
    dist.all_gather_into_tensor(out, vals[me].to("sim"))
    if not torch.equal(out.cpu(), torch.cat(vals)):
        errors.append("all_gather_into_tensor %s" % dt)
    outs = [torch.empty(12, dtype=dt, device="sim") for _ in range(n)]
    dist.all_gather(outs, vals[me].to("sim"))
    if not all(torch.equal(o.cpu(), v) for o, v in zip(outs, vals)):
        errors.append("all_gather %s" % dt)
    big = [torch.cat([val(r + k, dt) for k in range(n)]) for r in range(n)]
    rs = torch.empty(12, dtype=dt, device="sim")
    dist.reduce_scatter_tensor(rs, big[me].to("sim"))
    want = sum(big[r][12 * me:12 * (me + 1)].to(torch.int64) for r in range(n)).to(dt)
    if not torch.equal(rs.cpu(), want):
        errors.append("reduce_scatter_tensor %s: %s, expected %s" % (dt, rs.cpu(), want))
    a2a = torch.empty(12 * n, dtype=dt, device="sim")
    dist.all_to_all_single(a2a, big[me].to("sim"))
    want = torch.cat([big[r][12 * me:12 * (me + 1)] for r in range(n)])
    if not torch.equal(a2a.cpu(), want):
        errors.append("all_to_all_single %s" % dt)
    assert not errors, errors


@pytest.mark.parametrize("dt", [torch.int32, torch.float64, torch.bfloat16], ids=str)
def test_p2p_exact(comm, dt):
    n, me = comm.size, comm.rank
    right, left = (me + 1) % n, (me - 1) % n
    errors = []
    # A ring in one batch, then rank 0 to every other rank with send/recv.
    y = torch.zeros(12, dtype=dt, device="sim")
    ops = [dist.P2POp(dist.irecv, y, left), dist.P2POp(dist.isend, val(me, dt).to("sim"), right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    if not torch.equal(y.cpu(), val(left, dt)):
        errors.append("batch ring %s: %s" % (dt, y.cpu()))
    for peer in range(1, n):
        if me == 0:
            dist.send(val(10 + peer, dt).to("sim"), peer)
        elif me == peer:
            z = torch.zeros(12, dtype=dt, device="sim")
            dist.recv(z, 0)
            if not torch.equal(z.cpu(), val(10 + peer, dt)):
                errors.append("send/recv to %d %s: %s" % (peer, dt, z.cpu()))
    assert not errors, errors


def test_wait_orders_the_stream_without_blocking(comm):
    n, me = comm.size, comm.rank
    x = val(me, torch.int64).to("sim")
    want = sum(val(r, torch.int64) for r in range(n))
    # wait() returns while the kernel before the call still holds the
    # stream (the call not completed): a wait() that blocked for the kernel
    # would return only after it. Three tries, one of them enough: a loaded
    # machine may preempt the host past the kernel's end in one.
    busy = False
    for _ in range(3):
        x = val(me, torch.int64).to("sim")
        sim.synchronize()
        sim.kernel(LONG_US)  # on the current (default) stream, before the call
        t0 = time.monotonic()
        w = dist.all_reduce(x, async_op=True)
        w.wait()
        busy = not w.is_completed()  # the kernel still holds the stream
        if busy:
            break
        w.synchronize()
    assert busy, "wait() returned after the kernel before the call had ended, in 3 tries"
    # wait() on another stream: that stream waits for the call.
    s2 = torch.Stream(device="sim")
    e2 = torch.Event(device="sim")
    with s2:
        w.wait()
        e2.record()
    assert not e2.query()
    w.synchronize()
    assert time.monotonic() - t0 > 0.05
    assert w.is_completed()
    e2.synchronize()
    assert torch.equal(x.cpu(), want)
    # The future is device-aware: its value is read after the stream.
    sim.kernel(KERNEL_US)
    y = val(me, torch.int64).to("sim")
    fut = dist.all_reduce(y, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    assert torch.equal(doubled.wait().cpu(), want * 2)


def test_freed_tensor_not_reused_before_the_call_read_it(comm):
    """Rank 0 sends a tensor on a side stream behind a 100 ms kernel, frees
    it at once and fills a new tensor of the same size on the default
    stream: the caching allocator must not hand it the sent tensor's block
    (recordStream by the backend) before the send has read it."""
    n, me = comm.size, comm.rank
    errors = []
    want = torch.arange(1 << 14, dtype=torch.int32) + 7
    for peer in range(1, n):
        if me == 0:
            x = want.to("sim")
            side = torch.Stream(device="sim")
            side.wait_stream(torch.accelerator.current_stream())
            with side:
                sim.kernel(LONG_US)
                dist.send(x, peer)
            del x
            # Filled on the host once the default stream is idle: a reused
            # block would be overwritten before the send reads it.
            y = torch.full((1 << 14,), -1, dtype=torch.int32, device="sim")
            side.synchronize()
            del y
        elif me == peer:
            z = torch.zeros(1 << 14, dtype=torch.int32, device="sim")
            dist.recv(z, 0)
            if not torch.equal(z.cpu(), want):
                errors.append("rank %d received %s" % (me, z.cpu()[:4]))
    assert not errors, errors


def test_cpu_tensors_alongside(comm):
    n, me = comm.size, comm.rank
    x = torch.full((5,), me + 1, dtype=torch.int64)
    dist.all_reduce(x)
    assert x.tolist() == [n * (n + 1) // 2] * 5


def train(model, group, me, steps=5):
    """`steps` SGD steps of DDP over `group` on rank `me`'s batches; the
    parameters after them, on the CPU."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    device = next(model.parameters()).device
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + me)
    for _ in range(steps):
        x = torch.randn(8, 16, generator=g).to(device)
        y = torch.randn(8, 4, generator=g).to(device)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


def assert_equals_gloo(got, ref, n):
    """The parameters trained over infiniccl against gloo's: bit for bit at
    2 ranks (a sum of two values does not depend on its order); at more,
    within 1e-6 of the largest parameter (the ranks' sums in another order
    round differently)."""
    top = max(float(b.abs().max()) for b in ref)
    diffs = [float((a - b).abs().max()) for a, b in zip(got, ref)]
    limit = 0.0 if n == 2 else 1e-6 * top
    bad = [i for i, d in enumerate(diffs) if d > limit]
    assert not bad, "parameters %s differ from gloo's: max |diff| %s (limit %.3g)" % (
        bad, [diffs[i] for i in bad], limit)


def make_model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 4))


def test_ddp_equals_gloo(comm):
    """DDP on sim tensors over infiniccl ends with the parameters DDP on
    CPU tensors over gloo ends with (assert_equals_gloo: bit for bit at 2
    ranks), and they differ from the start."""
    me = comm.rank
    gloo = dist.new_group(backend="gloo")
    start = [p.detach().clone() for p in make_model().parameters()]
    ref = train(make_model(), gloo, me)
    got = train(make_model().to("sim"), dist.group.WORLD, me)
    dist.destroy_process_group(gloo)
    assert len(got) == len(ref)
    assert any(not torch.equal(a, b) for a, b in zip(ref, start))
    assert_equals_gloo(got, ref, comm.size)


def fsdp_train(mesh, device, me, steps=5):
    """FSDP2 (fully_shard per Linear and the whole) over `mesh`: `steps`
    SGD steps on rank `me`'s batches; the full parameters after them."""
    from torch.distributed.fsdp import fully_shard

    model = make_model().to(device)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(200 + me)
    for _ in range(steps):
        x = torch.randn(8, 16, generator=g).to(device)
        y = torch.randn(8, 4, generator=g).to(device)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.full_tensor().detach().cpu() for p in model.parameters()]


def test_fsdp2_equals_gloo(comm):
    """FSDP2 on sim tensors over infiniccl ends with the parameters FSDP2 on
    CPU tensors over gloo ends with (assert_equals_gloo: bit for bit at 2
    ranks). At 3 ranks the shards are uneven: 32 rows split 11, 11, 10 and 4
    rows 2, 2, 0 (FSDP2 pads them to equal sizes for its collectives)."""
    from torch.distributed.device_mesh import DeviceMesh

    me = comm.rank
    gloo = dist.new_group(backend="gloo")
    ref = fsdp_train(DeviceMesh.from_group(gloo, "cpu"), "cpu", me)
    got = fsdp_train(DeviceMesh.from_group(dist.group.WORLD, "sim"), "sim", me)
    dist.destroy_process_group(gloo)
    start = [p.detach() for p in make_model().parameters()]
    assert len(got) == len(ref)
    assert [a.shape for a in got] == [b.shape for b in ref]
    assert any(not torch.equal(a, b) for a, b in zip(ref, start))
    assert_equals_gloo(got, ref, comm.size)
