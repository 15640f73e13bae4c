"""The "infiniccl" backend without MPI: each collective torch offers, with
ranks started by torch.multiprocessing.spawn (init_method tcp://), on one
node, so that the communicator is the node's shared memory made through the
library's bootstrap:
    torch_no_mpi_check.py [--pythonpath DIR] <np>[,<np>...]
Checks, in int32 and float32 on CPU tensors, against values computed here
(small integers, exact): all_reduce, broadcast, reduce, all_gather,
all_gather_into_tensor, reduce_scatter_tensor, gather, scatter,
all_to_all_single (equal splits), barrier, and an all_reduce on a new_group
of the first and last rank, a 1 MiB send/recv ring, blocking and in one
batch_isend_irecv, and all_to_all_single of unequal splits. Exits 77 (ctest's skip) without PyTorch.
--pythonpath DIR puts DIR before the source tree's python/ (a built copy of
the package with its C++ backend)."""
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(rank, n, url, failures):
    import torch
    import torch.distributed as dist

    import infiniccl.torch  # noqa: F401

    dist.init_process_group("infiniccl", init_method=url, rank=rank, world_size=n)
    bad = []

    def expect(name, got, want):
        if not torch.equal(got, want):
            bad.append("rank %d: %s: %s, want %s" % (rank, name, got.tolist(), want.tolist()))

    for dt in (torch.int32, torch.float32):
        def v(r, k=6):
            return (torch.arange(k) % 5 + 3 * r + 1).to(dt)

        total = sum(v(r) for r in range(n))
        t = v(rank)
        dist.all_reduce(t)
        expect("all_reduce %s" % dt, t, total)
        t = v(rank)
        dist.broadcast(t, src=n - 1)
        expect("broadcast %s" % dt, t, v(n - 1))
        t = v(rank)
        dist.reduce(t, dst=0)
        if rank == 0:
            expect("reduce %s" % dt, t, total)
        outs = [torch.zeros(6, dtype=dt) for _ in range(n)]
        dist.all_gather(outs, v(rank))
        expect("all_gather %s" % dt, torch.cat(outs), torch.cat([v(r) for r in range(n)]))
        out = torch.zeros(6 * n, dtype=dt)
        dist.all_gather_into_tensor(out, v(rank))
        expect("all_gather_into_tensor %s" % dt, out, torch.cat([v(r) for r in range(n)]))
        out = torch.zeros(6, dtype=dt)
        dist.reduce_scatter_tensor(out, torch.cat([v(rank + j) for j in range(n)]))
        expect("reduce_scatter_tensor %s" % dt, out, sum(v(r + rank) for r in range(n)))
        outs = [torch.zeros(6, dtype=dt) for _ in range(n)] if rank == 0 else None
        dist.gather(v(rank), gather_list=outs, dst=0)
        if rank == 0:
            expect("gather %s" % dt, torch.cat(outs), torch.cat([v(r) for r in range(n)]))
        out = torch.zeros(6, dtype=dt)
        dist.scatter(out, scatter_list=[v(10 + j) for j in range(n)] if rank == n - 1 else None,
                     src=n - 1)
        expect("scatter %s" % dt, out, v(10 + rank))
        out = torch.zeros(6 * n, dtype=dt)
        dist.all_to_all_single(out, torch.cat([v(100 * rank + j) for j in range(n)]))
        expect("all_to_all_single %s" % dt, out,
               torch.cat([v(100 * r + rank) for r in range(n)]))
    dist.barrier()
    pair = dist.new_group([0, n - 1])
    if rank in (0, n - 1):
        t = torch.tensor([rank + 1], dtype=torch.int64)
        dist.all_reduce(t, group=pair)
        expect("all_reduce on new_group([0, %d])" % (n - 1), t, torch.tensor([n + 1]))
    # A P2P ring, 1 MiB of int32: blocking send/recv (even ranks send
    # first), then the same ring in one batch_isend_irecv, receive first.
    right, left = (rank + 1) % n, (rank - 1) % n
    count = 1 << 18
    def ring_value(r):
        return torch.arange(count, dtype=torch.int32) % 97 + 1000 * r
    got = torch.zeros(count, dtype=torch.int32)
    if rank % 2 == 0:
        dist.send(ring_value(rank), dst=right)
        dist.recv(got, src=left)
    else:
        dist.recv(got, src=left)
        dist.send(ring_value(rank), dst=right)
    expect("send/recv ring", got, ring_value(left))
    got = torch.zeros(count, dtype=torch.int32)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, left),
                                     dist.P2POp(dist.isend, ring_value(rank), right)]):
        w.wait()
    expect("batch_isend_irecv ring", got, ring_value(left))
    # all_to_all_single of unequal splits (Send/Recv pairs in one group):
    # rank s sends d + 1 copies of 100 * s + d to rank d.
    send = torch.cat([torch.full((d + 1,), 100 * rank + d, dtype=torch.int32)
                      for d in range(n)])
    out = torch.zeros(n * (rank + 1), dtype=torch.int32)
    dist.all_to_all_single(out, send, output_split_sizes=[rank + 1] * n,
                           input_split_sizes=[d + 1 for d in range(n)])
    expect("all_to_all_single (unequal splits)", out,
           torch.cat([torch.full((rank + 1,), 100 * s + rank, dtype=torch.int32)
                      for s in range(n)]))
    # Every rank past new_group's barrier on rank 0's store (torch 1.13
    # polls it) before rank 0, which serves the store, can exit.
    dist.barrier()
    dist.destroy_process_group()
    if bad:
        raise RuntimeError("; ".join(bad))


def main():
    try:
        import torch  # noqa: F401
        import torch.multiprocessing as mp
    except ImportError:
        print("SKIPPED: %s cannot import torch (Debian: python3-torch)" % sys.executable)
        return 77
    argv = sys.argv[1:]
    first = None
    if argv[0] == "--pythonpath":
        first, argv = argv[1], argv[2:]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [first, os.path.join(HERE, "..", "..", "python"),
                    os.environ.get("PYTHONPATH")] if p)
    sys.path[:0] = [p for p in [first, os.path.join(HERE, "..", "..", "python")] if p]
    for k in [k for k in os.environ if k.startswith(("OMPI_", "PMIX", "PMI_", "HYDRA_"))]:
        del os.environ[k]
    failed = False
    for n in [int(x) for x in argv[0].split(",")]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            url = "tcp://127.0.0.1:%d" % s.getsockname()[1]
        try:
            mp.spawn(worker, args=(n, url, None), nprocs=n)
            print("%d ranks: every collective exact" % n, flush=True)
        except Exception as e:  # mp.spawn raises the first failed rank's error
            print("FAILED at %d ranks: %s" % (n, e), flush=True)
            failed = True
    print("torch_no_mpi_check: %s" % ("FAILED" if failed else "OK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
