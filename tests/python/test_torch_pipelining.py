"""torch.distributed.pipelining (GPipe and 1F1B, one stage per rank) on the
backend "infiniccl" and on gloo in the same job: the same model, inputs
and schedule on a group of each; every rank's gradients after two steps,
and the last rank's losses, are equal bit for bit. The stages exchange
activations and gradients with batch_isend_irecv (the C++ backend's
coalesced posts), torch 2.x only."""
import inspect

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import torch.distributed as dist  # noqa: E402

pipelining = pytest.importorskip("torch.distributed.pipelining")
pytest.importorskip("infiniccl.torch")

pytestmark = pytest.mark.usefixtures("torch_pg")

# torch 2.7's schedules wait only for the last Work of each batch
# (schedules._batch_p2p: batch_isend_irecv(...).pop()): gloo's batches are
# one Work per op, and its 1F1B hangs there. On such a torch gloo's GPipe is
# the reference, whose gradients and losses equal 1F1B's bit for bit.
from torch.distributed.pipelining import schedules  # noqa: E402

GLOO_1F1B_HANGS = ".pop()" in inspect.getsource(schedules._batch_p2p)


def run(schedule_cls, group, rank, n):
    torch.manual_seed(1234 + rank)  # the stage's weights: the same for both groups
    stage_mod = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
    stage = pipelining.PipelineStage(stage_mod, rank, n, torch.device("cpu"), group=group)
    sched = schedule_cls(stage, n_microbatches=4,
                         loss_fn=lambda out, tgt: torch.nn.functional.mse_loss(out, tgt))
    gen = torch.Generator().manual_seed(7)
    losses = []
    for _ in range(2):
        x = torch.randn(8, 16, generator=gen)
        y = torch.randn(8, 16, generator=gen)
        if rank == 0:
            sched.step(x)
        elif rank == n - 1:
            sched.step(target=y, losses=losses)
        else:
            sched.step()
    grads = [p.grad.clone() for p in stage_mod.parameters()]
    return grads, [float(v) for v in losses]


@pytest.mark.parametrize("name", ["ScheduleGPipe", "Schedule1F1B"])
def test_pipeline_schedules_equal_gloo(comm, name):
    n, me = comm.size, comm.rank
    cls = getattr(pipelining, name)
    gloo = dist.new_group(list(range(n)), backend="gloo")
    ours = dist.new_group(list(range(n)))
    g_ours, l_ours = run(cls, ours, me, n)
    ref = pipelining.ScheduleGPipe if GLOO_1F1B_HANGS else cls
    g_gloo, l_gloo = run(ref, gloo, me, n)
    dist.destroy_process_group(ours)
    dist.destroy_process_group(gloo)
    assert all(torch.equal(a, b) for a, b in zip(g_ours, g_gloo)), (g_ours[0][:2], g_gloo[0][:2])
    assert l_ours == l_gloo
    if me == n - 1:
        assert len(l_ours) == 4  # the last step's, one per microbatch
