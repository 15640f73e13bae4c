"""torchrun --max-restarts 1 with a rank killed in the middle of training
(the "infiniccl" backend without MPI, the node's shared memory):
    torchrun_restart_check.py [--pythonpath DIR] <np>
A DDP model trains 20 steps under torchrun --standalone --max-restarts 1.
On the first attempt the last rank SIGKILLs itself after step 10: the other
ranks' step fails (the peer's death, never a hang), torchrun ends the
attempt and starts every rank again, and the second attempt makes its
communicator anew and trains to the end. Checks: the run exits 0, its
weights come from the second attempt (TORCHELASTIC_RESTART_COUNT 1), and
they are bit-identical to gloo's under the same launcher without a kill (a
sum of two is order-free; 2 ranks). Exits 77 (ctest's skip) without
PyTorch. --pythonpath DIR puts DIR before the source tree's python/ (a
built copy of the package with its C++ backend)."""
import os
import signal
import subprocess
import sys
import tempfile

from against_gloo import environment, parse, report

STEPS, KILL_AFTER = 20, 10


def worker(backend, out):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    if backend == "infiniccl":
        import infiniccl.torch  # noqa: F401
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    dist.init_process_group(backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(STEPS):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)
        opt.zero_grad()
        ((ddp(x) - y) ** 2).mean().backward()
        opt.step()
        if backend == "infiniccl" and attempt == 0 and rank == n - 1 and step == KILL_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)
    if rank == 0:
        torch.save({"attempt": attempt, "weights": [p.detach() for p in model.parameters()]},
                   os.path.join(out, backend + ".pt"))
    dist.destroy_process_group()
    return 0


def main():
    if sys.argv[1:2] == ["--worker"]:
        return worker(sys.argv[2], sys.argv[3])
    try:
        import torch
    except ImportError:
        print("SKIPPED: %s cannot import torch" % sys.executable)
        return 77
    _, first, nps, _ = parse(sys.argv[1:] + ["torchrun"])
    env = environment(first)
    failures = []
    np_ = nps[0]
    with tempfile.TemporaryDirectory() as out:
        runs = {}
        for backend in ("gloo", "infiniccl"):
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", str(np_), "--max-restarts", "1",
                   os.path.abspath(__file__), "--worker", backend, out]
            print("+ " + " ".join(cmd), flush=True)
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                text = proc.communicate(timeout=120)[0].decode(errors="replace")
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # torchrun and its workers
                text = proc.communicate()[0].decode(errors="replace")
                sys.stdout.write(text[-4000:])
                failures.append("%s: still running after 120 s (a hang)" % backend)
                continue
            if proc.returncode != 0:
                sys.stdout.write(text[-4000:])
                failures.append("%s: torchrun exited %d" % (backend, proc.returncode))
                continue
            runs[backend] = torch.load(os.path.join(out, backend + ".pt"))
            if backend == "infiniccl":
                # The surviving rank's step failed naming the dead peer.
                seen = "exited" in text or "gone" in text or "died" in text
                print("first attempt's failure seen by the survivor: %s" % seen)
        if len(runs) == 2:
            got, want = runs["infiniccl"], runs["gloo"]
            print("infiniccl: weights of attempt %d" % got["attempt"])
            if got["attempt"] != 1:
                failures.append("the weights come from attempt %d, not the restart"
                                % got["attempt"])
            if not all(torch.equal(a, b) for a, b in zip(got["weights"], want["weights"])):
                failures.append("the weights after the restart differ from gloo's")
    return report("torchrun_restart_check", failures)


if __name__ == "__main__":
    sys.exit(main())
