"""The Python package on a GPU machine: PyTorch CUDA tensors and CuPy arrays
through every collective, checked exactly against NumPy on the host, and
the torch.distributed backend "infiniccl" on CUDA tensors (its stream
semantics: side streams, wait(), synchronize(), record_stream).

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


def torch_backend_checks():
    """The torch.distributed backend "infiniccl" (the C++ backend) on CUDA
    tensors, with NCCL's stream semantics: a call issued under
    `torch.cuda.stream(s)` is ordered after s's kernels and returns while s
    is still busy; `work.wait()` makes the current stream wait without
    blocking the host; results are exact once the stream is synchronized; a
    tensor freed while its call is queued is kept from the caching allocator
    (record_stream) until the stream has passed the call."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("torch backend: SKIPPED (%s)" % e)
        return
    if not torch.cuda.is_available():
        print("torch backend: SKIPPED (no CUDA device visible to PyTorch)")
        return
    runtimes = infiniccl.device_runtimes()
    if not {"cuda", "hip"} & set(runtimes):
        print("torch backend: SKIPPED (the library has no CUDA runtime: it has %s)" %
              ", ".join(runtimes))
        return
    try:
        import infiniccl.torch as ict
    except ImportError as e:
        print("torch backend: SKIPPED (infiniccl.torch: %s)" % e)
        return
    if ict.backend_kind() != "cpp":
        print("torch backend: SKIPPED (torch %s takes the Python backend, which blocks on "
              "device calls; the stream semantics are the C++ backend's, torch 2.7+)" %
              torch.__version__)
        return
    dist.init_process_group("infiniccl")
    n, me = dist.get_world_size(), dist.get_rank()
    dev = torch.device("cuda", me % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    total = float(n * (n + 1) // 2)
    # torch.cuda._sleep: about 0.5 s of spinning on the stream, long enough for
    # the host's checks behind it on a loaded machine.
    cycles = 1_000_000_000
    count = 1 << 20

    # Issued under a side stream: ordered after the kernel before it, and
    # the host goes on while the stream is busy.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.empty(count, device=dev)
        torch.cuda._sleep(cycles)
        x.fill_(me + 1)
        work = dist.all_reduce(x, async_op=True)
        if s.query():
            failures.append("torch backend: the side stream finished before the host went "
                            "on (the call blocked?)")
        # wait(): the current stream (s) waits for the call; the host does not.
        work.wait()
        if s.query():
            failures.append("torch backend: work.wait() blocked the host until the stream "
                            "was idle")
        y = x * 2
    s.synchronize()
    check("torch backend side stream", y[:4].cpu().numpy(), [2 * total] * 4)
    check("torch backend side stream (all)", [y.min().item(), y.max().item()],
          [2 * total] * 2)

    # wait() on another stream: the default stream waits for the side stream's call.
    with torch.cuda.stream(s):
        torch.cuda._sleep(cycles)
        z = torch.full((count,), float(me + 1), device=dev)
        work = dist.all_reduce(z, async_op=True)
    work.wait()  # the default stream now waits for s's call
    after = z + 0  # on the default stream, after the call
    torch.cuda.current_stream().synchronize()
    check("torch backend wait() on the default stream", after[:4].cpu().numpy(), [total] * 4)

    # record_stream: a tensor of the default stream used by a call queued
    # on s, freed at once, is not reused by the default stream's next
    # allocation before s has passed the call.
    t = torch.full((count,), float(me + 1), device=dev)
    out = torch.empty(count * n, device=dev)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(cycles)
        work = dist.all_gather_into_tensor(out, t, async_op=True)
    ptr = t.data_ptr()
    del t
    u = torch.full((count,), -7.0, device=dev)  # would take t's block if it were free
    if u.data_ptr() == ptr and not s.query():
        failures.append("torch backend: a freed tensor's block was reused while its call "
                        "was still queued on another stream")
    work.wait()
    torch.cuda.synchronize()
    exp = np.repeat(np.arange(1, n + 1, dtype=np.float64), count)
    check("torch backend record_stream all_gather", out.cpu().numpy(), exp)
    check("torch backend record_stream new tensor", u[:4].cpu().numpy(), [-7.0] * 4)

    # synchronize(): the host waits for the stream to pass the call.
    with torch.cuda.stream(s):
        torch.cuda._sleep(cycles)
        v = torch.full((count,), float(me + 1), device=dev)
        before = s.record_event()  # the kernel and the fill, before the call
        work = dist.all_reduce(v, async_op=True)
    work.synchronize()
    if not before.query():
        failures.append("torch backend: work.synchronize() returned before the stream "
                        "reached the call")
    check("torch backend synchronize()", v[:4].cpu().numpy(), [total] * 4)
    dist.destroy_process_group()
    print("torch backend: checked on %s" % dev)


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
    torch_backend_checks()
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
