"""DistributedDataParallel over torch.distributed with --backend infiniccl
(or gloo, to compare): the same script, launched by mpirun, icclrun or
torchrun, or started by itself with torch.multiprocessing.spawn (--spawn N,
with --init-method tcp://... or file://...; no MPI on one node).
--device cuda puts each rank on its local rank's GPU (NCCL at one rank per
GPU, staged through MPI otherwise; not yet run on a GPU).

    mpirun -np 2 python3 examples/python/ddp.py --backend infiniccl
    mpirun -np 2 python3 examples/python/ddp.py --backend gloo
    torchrun --standalone --nproc-per-node 2 examples/python/ddp.py
    python3 examples/python/ddp.py --spawn 2 --init-method tcp://127.0.0.1:29511

Each rank trains the same small model on its own data for --steps steps
(SGD with momentum) and, with --out DIR, writes its final weights to
DIR/weights_<backend>_<rank>.pt. --time N instead times N steps of a model
with about --grad-kib KiB of gradients and prints the median step time.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import infiniccl.torch  # noqa: F401  registers "infiniccl", sets RANK etc. under MPI


def model_for(grad_kib):
    """Three linear layers with about grad_kib KiB of float32 parameters."""
    width = max(4, int((grad_kib * 256 / 2) ** 0.5))
    return torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, 1))


def main():
    args = parse()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args,), nprocs=args.spawn)  # raises if a rank fails
        return 0
    return worker(None, args)


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="infiniccl", choices=["infiniccl", "gloo"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", help="directory for the final weights")
    ap.add_argument("--time", type=int, default=0, help="time this many steps instead")
    ap.add_argument("--grad-kib", type=float, default=16)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: each rank on the GPU of its local rank")
    ap.add_argument("--spawn", type=int, default=0,
                    help="start this many ranks with torch.multiprocessing.spawn")
    ap.add_argument("--init-method", default="env://",
                    help="with --spawn: tcp://HOST:PORT or file://PATH")
    return ap.parse_args()


def worker(spawned_rank, args):
    if spawned_rank is None:
        dist.init_process_group(args.backend)  # env://: RANK, WORLD_SIZE, MASTER_*
    else:
        os.environ["LOCAL_RANK"] = str(spawned_rank)
        dist.init_process_group(args.backend, init_method=args.init_method,
                                rank=spawned_rank, world_size=args.spawn)
    rank, size = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) %
                              torch.cuda.device_count())
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    x = torch.randn(64, 16, generator=gen)
    y = torch.tanh(x @ true_w) + 0.01 * torch.randn(64, 1, generator=gen)
    x, y = x.to(device), y.to(device)

    torch.manual_seed(42)
    model = DDP(model_for(args.grad_kib).to(device))  # DDP broadcasts rank 0's weights
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DDP averages the gradients (allreduce, sum / size)
        opt.step()
        return loss.item()

    if args.time:
        for _ in range(3):
            step()
        times = []
        for _ in range(args.time):
            dist.barrier()
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        grads = sum(p.numel() * 4 for p in model.parameters())
        if rank == 0:
            print("ddp %s: %d ranks, %.1f KiB of gradients, median step %.1f us" %
                  (args.backend, size, grads / 1024, statistics.median(times) * 1e6))
        dist.destroy_process_group()
        return 0

    first = step()
    for _ in range(args.steps - 1):
        last = step()
    if rank == 0:
        print("ddp %s: %d ranks, loss %.5f -> %.5f after %d steps" %
              (args.backend, size, first, last, args.steps))
    if args.out:
        w = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
        torch.save(w, os.path.join(args.out, "weights_%s_%d.pt" % (args.backend, rank)))
    dist.destroy_process_group()
    if spawned_rank is not None and not last < first:
        raise RuntimeError("rank %d: the loss did not fall" % rank)
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
