"""Per-call overhead of the Python package over the C call, for a 4-byte
AllReduce (docs/PERFORMANCE.md, section "Python"):

    mpirun -np 2 /usr/bin/python3 examples/python/overhead.py [iterations]

Times, per call, the best of 5 rounds of each:
  C        infinicclAllReduce through a ctypes function pointer with every
           argument prepared (what any Python caller pays at least);
  package  comm.all_reduce(x) on a NumPy float32 array of one element (in place);
  package  comm.all_reduce(x, out, op='sum') out of place;
  torch    comm.all_reduce(t) on a CPU tensor (DLPack), when PyTorch is present;
and the local work alone (argument checks and buffer resolution, no C call).
Ranks alternate calls in lockstep, so each time includes one MPI round trip;
the difference to the C row is what the package adds.
"""
import ctypes
import sys
import time

import numpy as np

import infiniccl
from infiniccl import _buffers, _lib


def best(fn, iters, comm, rounds=5):
    out = float("inf")
    for _ in range(rounds):
        comm.all_reduce(np.zeros(1, np.float32))  # start each round together
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        out = min(out, (time.perf_counter() - t0) / iters)
    return out * 1e6


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    comm = infiniccl.Comm.world()
    x = np.zeros(1, np.float32)
    y = np.zeros(1, np.float32)
    p = x.ctypes.data
    h = ctypes.c_void_p(comm.handle)
    f = _lib.infinicclAllReduce
    rows = [("C (ctypes, arguments prepared)", best(lambda: f(p, p, 1, 10, 0, h, None),
                                                     iters, comm)),
            ("comm.all_reduce(x)", best(lambda: comm.all_reduce(x), iters, comm)),
            ("comm.all_reduce(x, out)", best(lambda: comm.all_reduce(x, y), iters, comm))]
    try:
        import torch

        t = torch.zeros(1)
        rows.append(("comm.all_reduce(torch CPU tensor)",
                     best(lambda: comm.all_reduce(t), iters, comm)))
    except ImportError:
        pass
    local = best(lambda: (_buffers.resolve(x, None, "x"), infiniccl._op("sum")), iters, comm)
    rows.append(("local work only (resolve x, op)", local))
    if comm.rank == 0:
        print("4-byte AllReduce, %d ranks, %d calls per round, best of 5 rounds:" %
              (comm.size, iters))
        for name, us in rows:
            print("  %-36s %7.2f us" % (name, us))
        print("  package overhead over the C call:    %7.2f us (in place), %.2f us (out of "
              "place)" % (rows[1][1] - rows[0][1], rows[2][1] - rows[0][1]))
    comm.destroy()


if __name__ == "__main__":
    main()
