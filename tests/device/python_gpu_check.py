"""The Python package on a GPU machine: PyTorch CUDA tensors and CuPy arrays
through every collective, checked exactly against NumPy on the host.

How it is run (on the GPU machine, from the repository root, after
tests/device/cuda_checks.sh or any CUDA build has made build-gpu/):

    export PYTHONPATH=python INFINICCL_LIBRARY=build-gpu/src/libinfiniccl.so
    mpirun -np 1 python3 tests/device/python_gpu_check.py   # one rank: NCCL path
    mpirun -np 2 python3 tests/device/python_gpu_check.py   # two ranks sharing
                                                            # the GPU: staged MPI

(with the carried Open MPI: source .devmpi/mpi-env.sh first and add
--allow-run-as-root --oversubscribe). Each run takes seconds; it prints the
interpreter, the path the calls took (staging counters) and `python_gpu_check:
OK`, and exits non-zero on any mismatch. A framework that is not installed
is skipped with the reason.
"""
import sys

import numpy as np

import infiniccl

failures = []


def check(label, got, exp):
    got = np.asarray(got, np.float64).ravel()
    exp = np.asarray(exp, np.float64).ravel()
    if got.shape != exp.shape or not np.array_equal(got, exp):
        failures.append("%s: got %s, expected %s" % (label, got[:6], exp[:6]))


def run_matrix(comm, lib, make, host, dtypes):
    """make(np_values, dtype) -> device array; host(array) -> NumPy."""
    n, me = comm.size, comm.rank
    c = 5
    vals = [np.arange(c) % 3 + r + 1 for r in range(n)]  # exact small integers
    for dt in dtypes:
        tag = "%s %s" % (lib, dt)
        x = make(vals[me], dt)
        out = make(np.zeros(c), dt)
        comm.all_reduce(x, out, op="sum")
        check(tag + " all_reduce", host(out), sum(vals))
        comm.all_reduce(x, op="max")
        check(tag + " all_reduce in place", host(x), np.max(vals, 0))
        b = make(vals[me], dt)
        comm.broadcast(b, root=n - 1)
        check(tag + " broadcast", host(b), vals[n - 1])
        r = make(vals[me], dt)
        comm.reduce(r, op="min", root=0)
        if me == 0:
            check(tag + " reduce", host(r), np.min(vals, 0))
        g = make(np.zeros(c * n), dt)
        comm.all_gather(make(vals[me], dt), g)
        check(tag + " all_gather", host(g), np.concatenate(vals))
        rs = make(np.zeros(c), dt)
        comm.reduce_scatter(make(np.concatenate([vals[me]] * n), dt), rs, op="sum")
        check(tag + " reduce_scatter", host(rs), sum(vals))
        a2a = make(np.concatenate([vals[me]] * n), dt)
        comm.all_to_all(a2a)
        check(tag + " all_to_all", host(a2a), np.concatenate(vals))
        ga = make(np.zeros(c * n), dt) if me == 0 else None
        comm.gather(make(vals[me], dt), ga, root=0)
        if me == 0:
            check(tag + " gather", host(ga), np.concatenate(vals))
        sc = make(np.zeros(c), dt)
        comm.scatter(make(np.concatenate(vals), dt) if me == 0 else None, sc, root=0)
        check(tag + " scatter", host(sc), vals[me])
        if n > 1:
            rv = make(np.zeros(c), dt)
            with infiniccl.group():
                comm.send(make(vals[me], dt), (me + 1) % n)
                comm.recv(rv, (me - 1) % n)
            check(tag + " send/recv ring", host(rv), vals[(me - 1) % n])


def torch_checks(comm):
    try:
        import torch
    except ImportError as e:
        print("torch: SKIPPED (%s)" % e)
        return
    if not torch.cuda.is_available():
        print("torch: SKIPPED (no CUDA device visible to PyTorch)")
        return
    dev = torch.device("cuda", comm.rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    types = {"int32": torch.int32, "float16": torch.float16, "bfloat16": torch.bfloat16,
             "float32": torch.float32, "int64": torch.int64}

    def make(v, dt):
        return torch.tensor(np.asarray(v, np.float64), dtype=types[dt], device=dev)

    def host(t):
        torch.cuda.synchronize()
        return t.float().cpu().numpy()

    run_matrix(comm, "torch", make, host, list(types))
    # No stream given: the current PyTorch stream orders the call after the
    # kernel that produced x on a side stream.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((1 << 20,), 1.0, device=dev) * (comm.rank + 1)
        comm.all_reduce(x, op="sum")
        y = x * 2
    s.synchronize()
    check("torch side stream", y[:4].cpu().numpy(), [comm.size * (comm.size + 1)] * 4)
    try:
        comm.all_reduce(torch.zeros(4, 4, device=dev)[:, 0])
        failures.append("torch non-contiguous CUDA tensor was accepted")
    except infiniccl.Error as e:
        if "contiguous" not in str(e):
            failures.append("torch non-contiguous: unexpected message %s" % e)
    print("torch: checked on %s" % dev)


def cupy_checks(comm):
    try:
        import cupy
    except ImportError as e:
        print("cupy: SKIPPED (%s)" % e)
        return
    cupy.cuda.Device(comm.rank % cupy.cuda.runtime.getDeviceCount()).use()

    def make(v, dt):
        return cupy.asarray(np.asarray(v, np.float64).astype(dt))

    def host(a):
        cupy.cuda.Device().synchronize()
        return cupy.asnumpy(a).astype(np.float64)

    run_matrix(comm, "cupy", make, host, ["int8", "int32", "float16", "float32", "float64"])
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.full(1 << 20, comm.rank + 1, cupy.float32)
    comm.all_reduce(x, stream=s)  # an explicit CuPy stream
    s.synchronize()
    check("cupy explicit stream", cupy.asnumpy(x[:4]), [comm.size * (comm.size + 1) / 2] * 4)
    print("cupy: checked")


def main():
    comm = infiniccl.Comm.world()
    before = infiniccl.staging_stats()
    if comm.rank == 0:
        print("python_gpu_check: %s (Python %s), %d rank(s), library %s" %
              (sys.executable, sys.version.split()[0], comm.size, infiniccl.library_path()))
    torch_checks(comm)
    cupy_checks(comm)
    after = infiniccl.staging_stats()
    staged = after["staged_calls"] - before["staged_calls"]
    direct = after["direct_calls"] - before["direct_calls"]
    print("rank %d: %d staged and %d direct MPI device calls (the rest went to the native "
          "CCL)" % (comm.rank, staged, direct))
    ok = np.array([len(failures)], np.int64)
    comm.all_reduce(ok, op="max")
    for f in failures[:20]:
        print("rank %d FAIL %s" % (comm.rank, f))
    if comm.rank == 0:
        print("python_gpu_check: %s" % ("OK" if ok[0] == 0 else "FAILED"))
    comm.destroy()
    return 0 if ok[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
