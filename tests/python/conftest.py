"""Shared fixtures for the Python tests, run on every rank by
tests/python/run.py under mpirun (one pytest process per rank).

Every rank runs the same tests in the same order, so the collectives match.
Tests gather their mismatches and assert once at the end, after all their
calls, so a failure on one rank never leaves the others waiting in a
collective.
"""
import os
import sys

import pytest

import infiniccl

_comm = None


def world():
    global _comm
    if _comm is None:
        _comm = infiniccl.Comm.world()
    return _comm


def pytest_report_header(config):
    c = world()
    return ["infiniccl: rank %d of %d, python %s (%s), library %s, MPI %s" %
            (c.rank, c.size, sys.version.split()[0], sys.executable,
             infiniccl.library_path(), os.environ.get("INFINICCL_TEST_MPI", "?"))]


@pytest.fixture(scope="session")
def comm():
    return world()


_index = [0]


@pytest.fixture(autouse=True)
def _in_step():
    """After each test, checks that every rank finished the same test: one
    MAX AllReduce of (i, -i). Ranks out of step would otherwise fail every
    later test with confusing mismatches, so the session stops instead."""
    yield
    import numpy as np

    _index[0] += 1
    i = _index[0]
    v = np.array([i, -i], np.int64)
    world().all_reduce(v, op="max")
    if v.tolist() != [i, -i]:
        pytest.exit("ranks out of step after test %d (max %d, min %d): a test made "
                    "different collective calls on different ranks" % (i, v[0], -v[1]),
                    returncode=3)


def pytest_sessionfinish(session, exitstatus):
    # Destroy before the interpreter's exit handlers finalise MPI.
    global _comm
    if _comm is not None:
        _comm.destroy()
        _comm = None


@pytest.fixture(scope="module")
def torch_pg(comm):
    """The default torch.distributed group on the backend "infiniccl" for one
    module (pytestmark = pytest.mark.usefixtures("torch_pg")), destroyed at
    its end. Its store takes a fresh port, rank 0's, broadcast through the
    library: a group of an earlier module in the same session may still
    hold the one before."""
    import socket

    import numpy as np
    import torch.distributed as dist

    port = np.zeros(1, np.int64)
    if comm.rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port[0] = s.getsockname()[1]
    comm.broadcast(port, root=0)
    os.environ["MASTER_PORT"] = str(int(port[0]))
    dist.init_process_group("infiniccl")
    yield dist.group.WORLD
    dist.destroy_process_group()
