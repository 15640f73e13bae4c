"""Per-call overhead of the Python package over the C call, for a 4-byte
AllReduce (docs/PERFORMANCE.md, "Python and torch"):

    mpirun -np 2 /usr/bin/python3 examples/python/overhead.py [calls per round, default 5000]

Times, per call, the best of 7 interleaved rounds of each:
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


def measure(modes, iters, comm, rounds=7):
    """Per-call time of each mode in us: the best of `rounds` rounds, the
    modes interleaved round by round so that load changes on a shared
    machine hit them alike."""
    best = [float("inf")] * len(modes)
    for _ in range(rounds):
        for k, (_, fn) in enumerate(modes):
            comm.all_reduce(np.zeros(1, np.float32))  # start each round together
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / iters)
    return [(name, t * 1e6) for (name, _), t in zip(modes, best)]


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    comm = infiniccl.Comm.world()
    x = np.zeros(1, np.float32)
    y = np.zeros(1, np.float32)
    p = x.ctypes.data
    h = ctypes.c_void_p(comm.handle)
    f = _lib.infinicclAllReduce
    modes = [("C (ctypes, arguments prepared)", lambda: f(p, p, 1, 10, 0, h, None)),
             ("comm.all_reduce(x)", lambda: comm.all_reduce(x)),
             ("comm.all_reduce(x, out)", lambda: comm.all_reduce(x, y))]
    try:
        import torch

        t = torch.zeros(1)
        modes.append(("comm.all_reduce(torch CPU tensor)", lambda: comm.all_reduce(t)))
    except ImportError:
        pass
    modes.append(("local work only (resolve x, op)",
                  lambda: (_buffers.resolve(x, None, "x"), infiniccl._op("sum"))))
    rows = measure(modes, iters, comm)
    if comm.rank == 0:
        print("4-byte AllReduce, %d ranks, %d calls per round, best of 7 rounds:" %
              (comm.size, iters))
        for name, us in rows:
            print("  %-36s %7.2f us" % (name, us))
        print("  package overhead over the C call:    %7.2f us (in place), %.2f us (out of "
              "place)" % (rows[1][1] - rows[0][1], rows[2][1] - rows[0][1]))
    comm.destroy()


if __name__ == "__main__":
    main()
