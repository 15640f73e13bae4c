"""One rank of a 20-step training on torch 2.x, written for
torch2_train_check.py: torch2_train.py <backend> <fsdp|tp> <out-file>.
fsdp: FSDP2 (fully_shard) of a small MLP, each rank its own batch.
tp: the MLP's two layers split across the ranks with DTensor
(ColwiseParallel, RowwiseParallel), every rank the same batch.
Rank 0 writes the full weights (torch.save) and the last loss."""
import sys

import torch
import torch.distributed as dist

import infiniccl.torch  # noqa: F401  registers "infiniccl"


def main():
    backend, mode, out = sys.argv[1:4]
    dist.init_process_group(backend)
    from torch.distributed.device_mesh import init_device_mesh

    rank, size = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (size,))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8 * size), torch.nn.Tanh(),
                                torch.nn.Linear(8 * size, 4))
    if mode == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        torch.manual_seed(1 + rank)
    else:
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       parallelize_module)

        parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        torch.manual_seed(1)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    full = [p.full_tensor().detach().clone() for p in model.parameters()]
    if rank == 0:
        torch.save({"weights": full, "loss": float(loss.detach())}, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
