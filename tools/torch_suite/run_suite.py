"""Runs torch's own collective tests (torch/testing/_internal/distributed/
distributed_test.py, the class torch's test_distributed_spawn.py runs) against
the "infiniccl" backend, each MPI rank playing one of the suite's ranks in
place of the processes the suite would spawn:

    mpirun -np 3 PYTHON tools/torch_suite/run_suite.py [REGEX] [--list] [--after=TEST]
                                                    [--backend=gloo] [--timeouts]

REGEX picks test names (default: every test_). Each test runs on all ranks
in the same order: a fresh file:// rendezvous and TEMP_DIR, torch's own
_run (init_process_group, its file barrier, the test, destroy); after it the
ranks agree on the result (MAX of their exit codes through the library).
Rank 0 prints one line per test and a summary. "infiniccl" is added to the
suite's plugin, ddp and subgroup feature sets. --backend=gloo runs the same
tests on gloo under the same runner (MPI only agrees on the results), the
baseline the counts are compared with. --timeouts also runs the tests the
suite keeps to gloo as "Only gloo backend supports timeouts" (the
test_barrier_timeout_* tests; at 3 ranks or more, since the unwrapped test
no longer skips small worlds). Not in CI (python/README.md gives the counts
per torch version).
"""
import logging
import os
import re
import shutil
import sys
import tempfile

import numpy as np

import infiniccl.torch as ict  # noqa: E402  sets RANK, WORLD_SIZE under MPI

BACKEND = ([a.split("=", 1)[1] for a in sys.argv if a.startswith("--backend=")]
           or ["infiniccl"])[0]
os.environ["BACKEND"] = BACKEND
world = ict._world_comm()
rank, size = world.rank, world.size
# One shared TEMP_DIR: rank 0 makes it, the others learn its name.
name = bytearray(512)
if rank == 0:
    base = tempfile.mkdtemp(prefix="iccl-suite-")
    for sub in ("barrier", "test_dir", "init_dir"):
        os.mkdir(os.path.join(base, sub))
    name[:len(base)] = base.encode()
world.broadcast(name, root=0)
TEMP = name.rstrip(b"\0").decode()
os.environ.update(TEMP_DIR=TEMP, WORLD_SIZE=str(size),
                  INIT_METHOD="file://" + os.path.join(TEMP, "init_dir", "shared"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

try:
    import expecttest  # noqa: F401  (torch's test utilities import it)
except ImportError:  # not packaged in Debian 12: only its TestCase is used here
    import types
    import unittest

    sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase, ACCEPT=False)
from torch.testing._internal import common_distributed as cd  # noqa: E402

for feature in ("plugin", "ddp", "subgroup"):
    cd.DistTestCases.backend_feature[feature].add("infiniccl")
from torch.testing._internal.distributed import distributed_test as dt  # noqa: E402


# torch 1.13's _run turns on DDP's ReplicatedTensor mode, which imports
# torch.distributed._shard: that fails on Python 3.11 (a dataclass with a
# mutable default), whatever the backend. Left off here (torch 2.x has no
# such mode).
try:
    import torch.nn.parallel._replicated_tensor_ddp_utils as _rt  # noqa: E402

    _rt._set_ddp_with_replicated_tensor = lambda value: None
except ImportError:
    pass
logging.getLogger().setLevel(logging.WARNING)  # torch's INFO per test and rank


class Suite(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
    pass


GLOO_TIMEOUTS = "Only gloo backend supports timeouts"
if "--timeouts" in sys.argv:
    for _name in dir(Suite):
        _f = getattr(Suite, _name)
        # The mark is on the test function and on the decorators' copies of
        # its attributes over it (functools.wraps).
        while _name.startswith("test_") and _f is not None and \
                getattr(_f, "__unittest_skip_why__", "") == GLOO_TIMEOUTS:
            _f.__unittest_skip__ = False
            _f = getattr(_f, "__wrapped__", None)


SKIP_CODES = {v.exit_code: k for k, v in cd.TEST_SKIPS.items()}


def agree(code):
    v = np.array([code, -code], np.int64)
    world.all_reduce(v, op="max")
    return int(v[0]), int(-v[1])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    pattern = re.compile(args[0] if args else "^test_")
    names = sorted(n for n in dir(Suite) if n.startswith("test_") and pattern.search(n))
    after = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--after=")]
    if after:  # resume after a test (by name)
        names = [n for n in names if n > after[0]]
    if "--list" in sys.argv:
        if rank == 0:
            print("\n".join(names))
        return 0
    results = {}
    for i, test in enumerate(names):
        why = getattr(getattr(Suite, test), "__unittest_skip_why__", None)
        if getattr(getattr(Suite, test), "__unittest_skip__", False):
            results[test] = "skipped (%s)" % why  # what unittest's runner would do
            if rank == 0:
                print("%-70s %s" % (test, results[test]), flush=True)
            continue
        if rank == 0:
            dt.Barrier.init()
        agree(0)
        dt.Barrier.barrier_id = 0
        recv_end, send_end = torch.multiprocessing.Pipe(duplex=False)
        init_file = os.path.join(TEMP, "init_dir", "t%d" % i)
        try:
            Suite._run(rank, test, init_file, send_end)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException as e:  # noqa: BLE001  (init errors and the like)
            print("rank %d %s: %s: %s" % (rank, test, type(e).__name__, e), flush=True)
            code = cd.MultiProcessTestCase.TEST_ERROR_EXIT_CODE
        try:
            if code and recv_end.poll():
                print("rank %d %s:\n%s" % (rank, test, recv_end.recv()), flush=True)
        except (EOFError, OSError):
            pass
        if dist.is_initialized():
            dist.destroy_process_group()
        hi, lo = agree(code)
        if hi == 0:
            status = "passed"
        elif hi in SKIP_CODES and lo == hi:
            status = "skipped (%s)" % SKIP_CODES[hi]
        else:
            status = "FAILED (exit codes %d..%d)" % (lo, hi)
        results[test] = status
        if rank == 0:
            print("%-70s %s" % (test, status), flush=True)
    if rank == 0:
        shutil.rmtree(TEMP, ignore_errors=True)
        counts = {}
        for s in results.values():
            k = s.split(" ")[0]
            counts[k] = counts.get(k, 0) + 1
        print("summary: %s of %d tests at %d ranks" %
              (", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())), len(results), size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
