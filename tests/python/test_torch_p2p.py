"""Point to point on the torch.distributed backend "infiniccl" in the orders
people write it, none of which may depend on the peers' order: a ring
exchange with irecv posted first, isend first, isend then a blocking recv,
and P2P interleaved with all_reduce, from 4 KiB to 64 MiB. Every rank sends
its right neighbour integers derived from its rank and checks exactly what
its left neighbour sent (exact in every type used). Runs on the backend
infiniccl.torch picks: the C++ one on torch 2.x (TEST_TORCH_NEEDS_CPP=1
makes its absence an error), the Python one on torch 1.13."""

import pytest
from torch_needs import torch_backend

torch, ict = torch_backend()
import torch.distributed as dist  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_pg")

KIB = 1024
SIZES = [4 * KIB, 4 * KIB * KIB, 64 * KIB * KIB]  # bytes per message


def payload(rank, nbytes, dtype=torch.int32):
    """What `rank` sends: 0, 1, 2, ... plus 1000 times (rank + 1), wrapped to
    stay exact in `dtype`."""
    n = nbytes // torch.tensor([], dtype=dtype).element_size()
    base = torch.arange(n, dtype=torch.int64)
    if dtype in (torch.int8, torch.uint8, torch.float16, torch.bfloat16):
        return (base % 100 + rank + 1).to(dtype)
    return (base + 1000 * (rank + 1)).to(dtype)


def ring(comm):
    return (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size


def check(y, left, nbytes, what, dtype=torch.int32):
    want = payload(left, nbytes, dtype)
    if torch.equal(y, want):
        return []
    bad = (y != want).nonzero()
    return ["%s, %d bytes: %d elements differ, the first at %d: %s, expected %s" %
            (what, nbytes, bad.numel(), bad[0].item(), y[bad[0]].item(), want[bad[0]].item())]


@pytest.mark.parametrize("nbytes", SIZES, ids=["4KiB", "4MiB", "64MiB"])
def test_ring_irecv_first(comm, nbytes):
    right, left = ring(comm)
    x = payload(comm.rank, nbytes)
    y = torch.zeros_like(x)
    r = dist.irecv(y, left)
    s = dist.isend(x, right)
    r.wait()
    s.wait()
    assert not check(y, left, nbytes, "irecv then isend")


@pytest.mark.parametrize("nbytes", SIZES, ids=["4KiB", "4MiB", "64MiB"])
def test_ring_isend_first(comm, nbytes):
    right, left = ring(comm)
    x = payload(comm.rank, nbytes)
    y = torch.zeros_like(x)
    s = dist.isend(x, right)
    r = dist.irecv(y, left)
    s.wait()  # the send first: its peer's receive is posted after its own send
    r.wait()
    assert not check(y, left, nbytes, "isend then irecv")


@pytest.mark.parametrize("nbytes", SIZES, ids=["4KiB", "4MiB", "64MiB"])
def test_ring_isend_blocking_recv(comm, nbytes):
    right, left = ring(comm)
    x = payload(comm.rank, nbytes)
    y = torch.zeros_like(x)
    s = dist.isend(x, right)
    dist.recv(y, left)
    s.wait()
    assert not check(y, left, nbytes, "isend then recv")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.float16, torch.bfloat16,
                                   torch.float64, torch.int64], ids=str)
def test_ring_dtypes_and_strided_receive(comm, dtype):
    """Every dtype, and a receive into a non-contiguous view (copied back
    when it completes, the rest of its storage untouched)."""
    right, left = ring(comm)
    nbytes = 64 * KIB
    x = payload(comm.rank, nbytes, dtype)
    buf = torch.zeros(x.numel(), 2, dtype=dtype)
    r = dist.irecv(buf[:, 1], left)
    s = dist.isend(x, right)
    fut = r.get_future()  # waiting through the future completes it too
    fut.wait()
    s.wait()
    errors = check(buf[:, 1].contiguous(), left, nbytes, "strided %s" % dtype, dtype)
    if buf[:, 0].abs().sum().item() != 0:
        errors.append("the other column was written")
    assert not errors, errors


@pytest.mark.parametrize("nbytes", [4 * KIB, 4 * KIB * KIB], ids=["4KiB", "4MiB"])
def test_p2p_interleaved_with_all_reduce(comm, nbytes):
    """irecv, then collectives (asynchronous and blocking), then isend, then
    the waits: the collectives run while the receive is posted."""
    n, me = comm.size, comm.rank
    right, left = ring(comm)
    x = payload(me, nbytes)
    y = torch.zeros_like(x)
    a = torch.full((1000,), me + 1, dtype=torch.int64)
    b = torch.full((5,), 2 * (me + 1), dtype=torch.int32)
    r = dist.irecv(y, left)
    wa = dist.all_reduce(a, async_op=True)
    dist.all_reduce(b)
    s = dist.isend(x, right)
    wa.wait()
    r.wait()
    s.wait()
    total = n * (n + 1) // 2
    errors = check(y, left, nbytes, "interleaved")
    if not (a.eq(total).all() and b.eq(2 * total).all()):
        errors.append("all_reduce: %s %s, expected %d and %d" % (a[:3], b, total, 2 * total))
    # The other way round: isend, a collective, a blocking recv.
    y.zero_()
    s = dist.isend(x, right)
    c = torch.full((3,), me, dtype=torch.float32)
    dist.all_reduce(c, op=dist.ReduceOp.MAX)
    dist.recv(y, left)
    s.wait()
    errors += check(y, left, nbytes, "isend, all_reduce, recv")
    if not c.eq(n - 1).all():
        errors.append("all_reduce MAX: %s" % c)
    assert not errors, errors


def test_many_in_flight_keep_order(comm):
    """Eight messages to the right posted before any is received, of one tag
    and one size: received in the order they were sent."""
    right, left = ring(comm)
    sends = [dist.isend(torch.full((1 << 14,), 100 * comm.rank + k, dtype=torch.int32), right)
             for k in range(8)]
    got = [torch.zeros(1 << 14, dtype=torch.int32) for _ in range(8)]
    recvs = [dist.irecv(g, left) for g in got]
    for w in recvs + sends:
        w.wait()
    errors = ["message %d: %s" % (k, g[:2].tolist()) for k, g in enumerate(got)
              if not g.eq(100 * left + k).all()]
    assert not errors, errors
