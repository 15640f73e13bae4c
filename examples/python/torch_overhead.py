"""The torch.distributed backend "infiniccl" against the C call and gloo
(docs/PERFORMANCE.md, "Python and torch"), in one run:

    mpirun -np 2 /usr/bin/python3 examples/python/torch_overhead.py [calls, default 3000] [--no-ddp]
        [--rounds=N]

1. Per call, a 4-byte float32 all_reduce on a CPU tensor, best of 7
   interleaved rounds:
     C            infinicclAllReduce through ctypes, arguments prepared;
     pg.allreduce the backend's method called directly (no torch wrapper);
     dist         dist.all_reduce(t) on the "infiniccl" default group;
     gloo         dist.all_reduce(t, group=<gloo group>), for reference.
   The overhead is dist - C (what a torch user pays over the C call).
   Then the median of 1000 single timed calls, dist and gloo.
   With the C++ backend (torch 2.x, infiniccl._c10d) "C" runs on a
   communicator of its own over the same ranks, and pg.allreduce waits for
   its Work.
2. DDP step time (forward, backward with the gradient allreduce, SGD step)
   with gloo, with infiniccl, and with an infiniccl group whose all_reduce
   calls all run in the caller's thread ("inline": the backend before its
   background thread), for models of 11 KiB to 2 MiB of gradients, the
   median of interleaved rounds (--rounds, default 5, of 20 steps); the
   ratios to gloo are medians of per-round ratios. The C++ backend has no
   inline mode: its column repeats the default group.
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import infiniccl.torch as ict
from infiniccl import _buffers, _lib


def per_call(modes, iters, rounds=7):
    best = {}
    for _ in range(rounds):
        for name, fn in modes:
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            t = (time.perf_counter() - t0) / iters * 1e6
            best[name] = min(best.get(name, t), t)
    return best


def model_for(kib):
    width = max(4, int((kib * 256 / 2) ** 0.5))
    return torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, 1))


def ddp_steps(groups, kib, steps=20, rounds=5):
    """Median step time per group, and per group the median over rounds of
    its round's median divided by gloo's in the same round (the rounds
    interleave the groups, so a change of the machine's load between rounds
    falls on both sides of each ratio)."""
    x = torch.randn(64, 16)
    y = torch.randn(64, 1)
    times = {name: [] for name in groups}
    per_round = {name: [] for name in groups}
    models = {}
    for name, g in groups.items():
        torch.manual_seed(0)
        m = DDP(model_for(kib), process_group=g)
        models[name] = (m, torch.optim.SGD(m.parameters(), lr=0.01))
    nbytes = sum(p.numel() * 4 for p in models[next(iter(groups))][0].parameters())
    for r in range(rounds + 1):
        for name, (m, opt) in models.items():
            dist.barrier()
            ts = []
            for _ in range(steps):
                t0 = time.perf_counter()
                opt.zero_grad()
                torch.nn.functional.mse_loss(m(x), y).backward()
                opt.step()
                ts.append(time.perf_counter() - t0)
            if r:  # round 0 warms up
                times[name] += ts
                per_round[name].append(statistics.median(ts))
    ratio = {name: statistics.median(a / b for a, b in zip(per_round[name], per_round["gloo"]))
             for name in groups}
    return nbytes, {name: statistics.median(t) * 1e6 for name, t in times.items()}, ratio


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    iters = int(args[0]) if args else 3000
    torch.set_num_threads(1)
    dist.init_process_group("infiniccl")
    gloo = dist.new_group(backend="gloo")
    pg = dist.group.WORLD
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.zeros(1)
    cpp = ict.backend_kind() == "cpp"
    h = ict._world_comm().handle if cpp else pg._comm.handle
    ptr = t.data_ptr()
    fn = _lib.infinicclAllReduce
    opts = dist.AllreduceOptions()
    modes = [("C", lambda: fn(ptr, ptr, 1, _buffers.FLOAT32, 0, h, None)),
             ("pg.allreduce", (lambda: pg.allreduce([t], opts).wait()) if cpp else
              (lambda: pg.allreduce([t], opts))),
             ("dist", lambda: dist.all_reduce(t)),
             ("gloo", lambda: dist.all_reduce(t, group=gloo))]
    best = per_call(modes, iters)
    if rank == 0:
        print("torch %s, %d ranks, load average %.1f, 4-byte all_reduce, best of 7 rounds "
              "of %d calls:" % (torch.__version__, size, os.getloadavg()[0], iters))
        for name, _ in modes:
            print("  %-13s %7.2f us" % (name, best[name]))
        print("  overhead over C: dist %.2f us, pg.allreduce %.2f us" %
              (best["dist"] - best["C"], best["pg.allreduce"] - best["C"]))
    med = {}
    for name, f in (("dist", lambda: dist.all_reduce(t)),
                    ("gloo", lambda: dist.all_reduce(t, group=gloo))):
        samples = []
        dist.barrier()
        for _ in range(1000):
            t0 = time.perf_counter()
            f()
            samples.append(time.perf_counter() - t0)
        med[name] = statistics.median(samples) * 1e6
    if rank == 0:
        print("  median of 1000 calls (%s backend): infiniccl %.2f us, gloo %.2f us" %
              (ict.backend_kind(), med["dist"], med["gloo"]), flush=True)
    if "--no-ddp" in sys.argv:
        dist.destroy_process_group()
        return
    rounds = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("--rounds=")), 5)
    inline = dist.new_group(backend="infiniccl")
    if not cpp:
        inline._inline_bytes = float("inf")
    if rank == 0:
        print("DDP step, median of %d interleaved rounds of 20 steps (us; ratios to gloo: "
              "median of the rounds' ratios), load average %.1f:" %
              (rounds, os.getloadavg()[0]))
        print("  %10s %9s %9s %9s %7s %7s" % ("gradients", "gloo", "infiniccl", "inline",
                                              "ratio", "inline"))
    for kib in (16, 256, 1024, 2048, 4096):
        nbytes, med, ratio = ddp_steps({"gloo": gloo, "infiniccl": pg, "inline": inline}, kib,
                                       rounds=rounds)
        if rank == 0:
            print("  %6.0f KiB %9.0f %9.0f %9.0f %7.2f %7.2f" % (
                nbytes / 1024, med["gloo"], med["infiniccl"], med["inline"],
                ratio["infiniccl"], ratio["inline"]), flush=True)
    if rank == 0:
        print("load average at the end %.1f" % os.getloadavg()[0])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
