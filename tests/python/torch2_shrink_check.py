"""dist.shrink_group on the "infiniccl" backend, in a DDP loop:
    torch2_shrink_check.py [--pythonpath DIR] 4 <mpiexec> [flags...]
Four ranks train DDP (float64) for 3 steps; rank 3 then leaves (destroys its
process group and exits) and the other three call dist.shrink_group([3])
(SHRINK_DEFAULT), wrap the model in DDP again and train 3 more steps on the
shrunk default group. Every rank checks its weights against a reference it
computes alone from the same initial state: one full-batch step over the
4 ranks' data, then over the 3 survivors' (DDP's average of their
gradients), within 1e-12. Passes when the three survivors print SHRINK DDP
PASS. Exits 77 (ctest's skip) without torch 2.x's shrink_group.
"""
import copy
import os
import subprocess
import sys

from against_gloo import environment, parse
from torch_needs import torch_or_skip


def data(rank, step):
    import torch
    g = torch.Generator().manual_seed(1000 * step + rank)
    return (torch.randn(16, 8, generator=g, dtype=torch.float64),
            torch.randn(16, 4, generator=g, dtype=torch.float64))


def worker():
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import infiniccl.torch  # noqa: F401  (registers the backend)

    dist.init_process_group("infiniccl")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).double()
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    loss_fn = torch.nn.MSELoss()

    def ref_step(ranks, step):
        ref_opt.zero_grad()
        loss = sum(loss_fn(ref(x), y) for x, y in (data(r, step) for r in ranks)) / len(ranks)
        loss.backward()
        ref_opt.step()

    def train(ddp, ranks, steps):
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for step in steps:
            opt.zero_grad()
            x, y = data(rank, step)
            loss_fn(ddp(x), y).backward()
            opt.step()
            ref_step(ranks, step)

    train(DDP(model), range(4), range(3))
    if rank == 3:
        dist.destroy_process_group()
        print("rank 3 left", flush=True)
        return 0
    dist.shrink_group([3])
    assert (dist.get_rank(), dist.get_world_size()) == (rank, 3), \
        (dist.get_rank(), dist.get_world_size())
    train(DDP(model), range(3), range(3, 6))
    for p, q in zip(model.parameters(), ref.parameters()):
        diff = (p.detach() - q.detach()).abs().max().item()
        if diff > 1e-12:
            print("rank %d: weights differ from the reference by %g" % (rank, diff), flush=True)
            return 1
    dist.destroy_process_group()
    print("SHRINK DDP PASS rank=%d" % rank, flush=True)
    return 0


def main():
    if sys.argv[1:2] == ["--worker"]:
        return worker()
    if torch_or_skip() is None:
        return 77
    import torch.distributed as dist
    if not hasattr(dist, "shrink_group"):
        print("SKIPPED: this torch has no dist.shrink_group")
        return 77
    options, first, nps, mpiexec = parse(sys.argv[1:])
    env = environment(first)
    cmd = mpiexec[:1] + ["-n", str(nps[0])] + mpiexec[1:] + [
        sys.executable, os.path.abspath(__file__), "--worker"]
    print("+ " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=240)
    print(run.stdout)
    passed = run.stdout.count("SHRINK DDP PASS")
    if passed != nps[0] - 1 or run.returncode != 0:
        print("FAILED: %d of %d survivors passed (launcher exit %d)" %
              (passed, nps[0] - 1, run.returncode))
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
