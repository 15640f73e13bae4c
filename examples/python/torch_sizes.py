"""dist.all_reduce of float32 CPU tensors through the "infiniccl" backend
against gloo, per size, in one run (docs/PERFORMANCE.md, "Python and
torch"):

    icclrun -np 2 python3 examples/python/torch_sizes.py [--rounds=N] [--min=64K] [--max=64M]
                                                          [--deepspeed] [--op=p2p]

Each round times every size on both groups, alternating (a change of the
machine's load falls on both sides of a ratio), at least 20 calls a size (a
few calls measure the first calls after the other groups' more than the
call itself); each cell is the median over
rounds of that round's mean time per call, and the ratio the median of the
per-round ratios infiniccl / gloo. Every result is checked: rank r
contributes r + 1 in every element, so each element of the sum is
n (n + 1) / 2, exact in float32 at these rank counts.

--op=p2p (2 ranks) times a round trip instead: rank 0 sends the tensor to
rank 1 with `dist.send`, which sends it back; both then hold rank 0's
values (1 in every element, over rank 1's 2), checked.

--deepspeed adds DeepSpeed's CPU shared-memory AllReduce (its
`inference_all_reduce_` op, csrc/cpu/comm/shm.cpp, built by DeepSpeed on
first use) with every rank on this node (LOCAL_SIZE), twice: the op called
directly ("deepspeed"), and through `deepspeed.comm.inference_all_reduce`
("deepspeed.comm", what DeepSpeed's own tensor-parallel inference calls),
set up by `deepspeed.init_distributed` over the initialised default group;
and prints infiniccl / each.
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import infiniccl.torch  # noqa: F401  (registers the backend)


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def option(name, default):
    return next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--%s=" % name)), default)


def round_trip(group):
    def call(t):
        rank = dist.get_rank()
        peer = 1 - rank
        if rank == 0:
            dist.send(t, peer, group=group)
            dist.recv(t, peer, group=group)
        else:
            dist.recv(t, peer, group=group)
            dist.send(t, peer, group=group)
    return call


def timed(tensor, reduce, rank, size, calls, expected):
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        tensor.fill_(rank + 1)
        reduce(tensor)
    t = (time.perf_counter() - t0) / calls
    wrong = int((tensor != expected).sum())
    if wrong:
        raise SystemExit("rank %d: %d elements wrong" % (rank, wrong))
    return t


def main():
    torch.set_num_threads(1)
    dist.init_process_group("infiniccl")
    gloo = dist.new_group(backend="gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    rounds = int(option("rounds", "5"))
    sizes = []
    b = parse_bytes(option("min", "64K"))
    while b <= parse_bytes(option("max", "64M")):
        sizes.append(b)
        b *= 4
    p2p = option("op", "all_reduce") == "p2p"
    if p2p and size != 2:
        raise SystemExit("--op=p2p runs at 2 ranks")
    groups = {"infiniccl": lambda t: dist.all_reduce(t),
              "gloo": lambda t: dist.all_reduce(t, group=gloo)}
    expected = size * (size + 1) / 2
    if p2p:
        groups = {"infiniccl": round_trip(None), "gloo": round_trip(gloo)}
        expected = 1
    elif "--deepspeed" in sys.argv:
        import deepspeed
        import deepspeed.comm

        os.environ.setdefault("LOCAL_SIZE", str(size))  # every rank on this node
        os.environ.setdefault("LOCAL_RANK", str(rank))
        deepspeed.init_distributed()  # builds and initialises the op
        assert deepspeed.comm.comm.cdb.shm_comm_op is not None, "DeepSpeed's shm op was not built"
        groups["deepspeed"] = torch.ops.deepspeed.inference_all_reduce_
        groups["deepspeed.comm"] = deepspeed.comm.inference_all_reduce
    times = {(g, b): [] for g in groups for b in sizes}
    for r in range(rounds + 1):  # round 0 warms up
        for b in sizes:
            t = torch.empty(b // 4)
            calls = max(20, min(200, (16 << 20) // b))
            for g, reduce in groups.items():
                elapsed = timed(t, reduce, rank, size, calls, expected)
                if r:
                    times[(g, b)].append(elapsed)
    if rank == 0:
        print("torch %s, %d ranks, float32 %s, median of %d rounds, load average "
              "%.1f; every result checked" % (torch.__version__, size,
                                               "send/recv round trip" if p2p else "all_reduce",
                                               rounds, os.getloadavg()[0]))
        others = [g for g in groups if g != "infiniccl"]
        print("| size | " + " | ".join("%s (us)" % g for g in groups) + " | " +
              " | ".join("infiniccl / %s" % g for g in others) + " |")
        print("|---:" * (len(groups) + len(others) + 1) + "|")
        for b in sizes:
            ours = times[("infiniccl", b)]
            cells = ["%.0f" % (statistics.median(times[(g, b)]) * 1e6) for g in groups]
            cells += ["%.2f" % statistics.median(o / x for o, x in zip(ours, times[(g, b)]))
                      for g in others]
            label = "%d KiB" % (b >> 10) if b < 1 << 20 else "%d MiB" % (b >> 20)
            print("| %s | %s |" % (label, " | ".join(cells)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
