"""Data-parallel training with InfiniCCL from PyTorch: every rank trains the
same small model on its own shard of the data, and the gradients are averaged
with all_reduce(op='avg') before each step, so every rank takes the same step
and ends with identical weights.

    mpirun -np 2 python3 examples/python/data_parallel.py

CPU tensors by default; with CUDA each rank uses the GPU of its local rank
(the all_reduce then runs on the current PyTorch stream, through NCCL or
staged MPI). Exits non-zero if the loss did not fall or the ranks' weights
differ.
"""
import sys

import torch

import infiniccl


def main():
    comm = infiniccl.Comm.world()
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", comm.rank % torch.cuda.device_count())
        torch.cuda.set_device(device)

    # One target function for everyone; each rank draws its own samples.
    torch.manual_seed(0)
    true_w = torch.randn(8, 1)
    gen = torch.Generator().manual_seed(1000 + comm.rank)
    x = torch.randn(256, 8, generator=gen)
    y = x @ true_w + 0.01 * torch.randn(256, 1, generator=gen)
    x, y = x.to(device), y.to(device)

    torch.manual_seed(42)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            comm.all_reduce(p.grad, op="avg")  # in place, every rank the same
        opt.step()
        # The global loss, for printing: the mean of the ranks' losses.
        l_all = loss.detach().reshape(1).clone()
        comm.all_reduce(l_all, op="avg")
        losses.append(float(l_all))

    # Identical weights: the max and the min over the ranks equal our own.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    hi, lo = flat.clone(), flat.clone()
    comm.all_reduce(hi, op="max")
    comm.all_reduce(lo, op="min")
    same = bool(torch.equal(hi, flat) and torch.equal(lo, flat))
    fell = losses[-1] < 0.5 * losses[0]
    if comm.rank == 0:
        print("data_parallel: %d ranks on %s, loss %.4f -> %.4f (%s), weights identical on "
              "all ranks: %s" % (comm.size, device, losses[0], losses[-1],
                                 "falls" if fell else "DID NOT FALL", "YES" if same else "NO"))
    comm.destroy()
    return 0 if same and fell else 1


if __name__ == "__main__":
    sys.exit(main())
