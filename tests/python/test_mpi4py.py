"""Comm.from_mpi4py over an mpi4py communicator (infinicclCommInitMpi).
Debian's python3-mpi4py is built against Open MPI: under an MPICH build of
the library it would load a second MPI into the process, so it is skipped."""
import os

import numpy as np
import pytest

import infiniccl

if os.environ.get("INFINICCL_TEST_MPI", "openmpi") != "openmpi":
    pytest.skip("Debian's python3-mpi4py is built against Open MPI; this library uses %s "
                "(loading both MPIs in one process would crash)" %
                os.environ.get("INFINICCL_TEST_MPI"), allow_module_level=True)

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py (python3-mpi4py) is not installed")


def test_from_mpi4py_split(comm):
    w = MPI.COMM_WORLD
    assert w.Get_rank() == comm.rank and w.Get_size() == comm.size
    sub = w.Split(w.Get_rank() % 2, -w.Get_rank())
    c = infiniccl.Comm.from_mpi4py(sub)
    members = sub.allgather(w.Get_rank())  # MPI's own view of the order
    sub.Free()  # the library holds a duplicate
    assert (c.rank, c.size) == (members.index(w.Get_rank()), len(members))
    got = np.zeros(c.size, np.int64)
    c.all_gather(np.array([w.Get_rank()], np.int64), got)
    assert got.tolist() == members
    x = np.array([10 * w.Get_rank() + 1], np.int64)
    c.all_reduce(x)
    assert x[0] == sum(10 * m + 1 for m in members)
    c.destroy()


def test_from_mpi4py_world_and_null(comm):
    c = infiniccl.Comm.from_mpi4py(MPI.COMM_WORLD)
    assert (c.rank, c.size) == (comm.rank, comm.size)
    c.destroy()
    with pytest.raises(infiniccl.Error) as e:
        infiniccl.Comm.from_mpi4py(MPI.COMM_NULL)
    assert e.value.code == infiniccl.INVALID_ARGUMENT
    assert "infinicclCommInitMpi" in e.value.message
