"""PyTorch CPU tensors through DLPack (Debian's python3-torch), every data
type torch has a match for, bfloat16 included."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")

TYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.float16,
         torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dt", TYPES, ids=str)
def test_all_reduce_torch(comm, dt):
    n, me = comm.size, comm.rank
    errors = []
    vals = [torch.arange(6) % 3 + r + 1 for r in range(n)]  # 1..n+2: exact
    for op, ref in (("sum", sum(vals)), ("max", vals[-1]), ("min", vals[0])):
        x = vals[me].to(dt).clone()  # .to() of the same type is no copy
        out = torch.zeros(6, dtype=dt)
        comm.all_reduce(x, out, op=op)
        if not torch.equal(out, ref.to(dt)):
            errors.append("%s out of place: %s" % (op, out))
        comm.all_reduce(x, op=op)
        if not torch.equal(x, ref.to(dt)):
            errors.append("%s in place: %s" % (op, x))
    assert not errors, errors


def test_torch_collectives(comm):
    n, me = comm.size, comm.rank
    x = torch.full((2, 3), float(me), dtype=torch.bfloat16)
    out = torch.empty((n, 2, 3), dtype=torch.bfloat16)
    comm.all_gather(x, out)
    assert torch.equal(out, torch.arange(n, dtype=torch.bfloat16).view(n, 1, 1).expand(n, 2, 3))
    b = torch.full((4,), float(me), dtype=torch.float16)
    comm.broadcast(b, root=n - 1)
    assert b.tolist() == [float(n - 1)] * 4
    # A view with an offset (byte_offset/data pointer past the start) works.
    big = torch.zeros(10, dtype=torch.int32)
    big[4:8] = me + 1
    comm.all_reduce(big[4:8])
    assert big.tolist() == [0] * 4 + [n * (n + 1) // 2] * 4 + [0] * 2


def test_torch_errors(comm):
    import infiniccl

    try:
        if comm.rank == 0:
            _bad_calls(comm, infiniccl)
    finally:  # every rank reaches the next collective, whatever happened
        v = np.array([1], np.int32)
        comm.all_reduce(v)
    assert v[0] == comm.size


def _bad_calls(comm, infiniccl):
    if True:
        t = torch.zeros(4, 4)
        with pytest.raises(infiniccl.Error, match="not contiguous"):
            comm.all_reduce(t[:, 0])
        with pytest.raises(infiniccl.Error, match="no InfiniCCL"):
            comm.all_reduce(torch.zeros(3, dtype=torch.complex64))
        with pytest.raises(infiniccl.Error, match="no InfiniCCL"):
            comm.all_reduce(torch.zeros(3, dtype=torch.bool))
        with pytest.raises(infiniccl.Error, match="same data type"):
            comm.all_reduce(torch.zeros(3), torch.zeros(3, dtype=torch.float64))


def test_torch_avg_gradients(comm):
    """What data_parallel.py relies on: avg of float32 gradients."""
    g = torch.full((5,), float(2 * comm.rank))
    comm.all_reduce(g, op="avg")
    assert torch.allclose(g, torch.full((5,), float(comm.size - 1)))
