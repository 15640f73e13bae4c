"""A rank SIGKILLed in a DDP loop on the "infiniccl" backend; the others
shrink the default group and go on (an MPI that tolerates failures: Open
MPI 5 under `mpirun --with-ft ulfm`):
    torch2_kill_check.py [--pythonpath DIR] 4 <mpiexec> [flags...]
Four ranks train DDP (float64, two gradient buckets, a comm hook that
all-reduces each bucket) for KILL_STEP steps. In the next step the last rank
waits for its first bucket's AllReduce (so every rank has finished the
steps before) and SIGKILLs itself instead of reducing the second bucket.
Each survivor:
  - sees the step's backward raise within 10 s (the bucket's Work fails),
    its weights untouched by the failed step;
  - checks them against a reference computed alone (full-batch steps over
    the 4 ranks' data), within 1e-12;
  - sees a broadcast on the failed group raise within 10 s as well;
  - calls dist.shrink_group([3], shrink_flags=SHRINK_ABORT) (SHRINK_ABORT
    from torch.distributed.distributed_c10d): rank and size (r, 3);
  - makes a gloo group of the three (dist.new_group(backend="gloo")) and
    trains the same weights (copies) the same AFTER steps on the same
    per-rank data twice: DDP on the shrunk infiniccl group and DDP on gloo;
    the two agree within 1e-6 of the largest weight (max |a - b| / max |b|,
    the measured difference printed), and every survivor's weights equal
    rank 0's exactly;
  - prints TORCH KILL PASS.
The driver passes when the three survivors print that line, the job ends
within 150 s (mpirun's status is not used: a killed rank may make it
non-zero) and nothing of the library is left in /dev/shm. Exits 77
(ctest's skip) without torch's shrink_group and SHRINK_ABORT.
"""
import copy
import os
import signal
import subprocess
import sys
import time

from against_gloo import environment, parse
from torch_needs import torch_or_skip

KILL_STEP = 3   # steps at 4 ranks before the one the last rank dies in
AFTER = 4       # steps at 3 ranks after the shrink
DETECT_S = 10.0  # bound from the failing step's start to its error
PASS = "TORCH KILL PASS"


def data(rank, step):
    import torch
    g = torch.Generator().manual_seed(1000 * step + rank)
    return (torch.randn(16, 8, generator=g, dtype=torch.float64),
            torch.randn(16, 4, generator=g, dtype=torch.float64))


def make_model():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 4)).double()


def flat(model):
    import torch
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def worker():
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import SHRINK_ABORT
    from torch.nn.parallel import DistributedDataParallel as DDP
    import infiniccl.torch  # noqa: F401  (registers the backend)

    dist.init_process_group("infiniccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    victim = world - 1
    loss_fn = torch.nn.MSELoss()
    model = make_model()
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)

    # The comm hook (DDP's default allreduce: divide, sum): the victim, in
    # the kill step, waits for bucket 0's AllReduce, which every rank
    # entered after finishing the steps before, then dies before bucket 1's.
    state = {"step": -1, "buckets": 0, "first": None}

    def hook(st, bucket):
        buf = bucket.buffer()
        st["buckets"] = max(st["buckets"], bucket.index() + 1)
        if rank == victim and st["step"] == KILL_STEP and bucket.index() == 1:
            st["first"].wait()
            print("rank %d: SIGKILL in step %d" % (rank, KILL_STEP), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        buf.div_(dist.get_world_size())
        fut = dist.all_reduce(buf, async_op=True).get_future()
        if bucket.index() == 0:
            st["first"] = fut
        return fut.then(lambda f: f.value()[0])

    # Two buckets: the cap (524 bytes) closes one after the last layer's
    # bias and weight (1056 bytes), the other holds the first layer's.
    ddp = DDP(model, bucket_cap_mb=0.0005)
    ddp.register_comm_hook(state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    error, elapsed = None, None
    for step in range(KILL_STEP + 1):
        state["step"], state["buckets"] = step, 0
        before = flat(model).clone()
        x, y = data(rank, step)
        opt.zero_grad()
        start = time.monotonic()
        try:
            loss_fn(ddp(x), y).backward()
        except Exception as e:  # noqa: BLE001 - the failed bucket's Work
            error, elapsed = e, time.monotonic() - start
            if not torch.equal(flat(model), before):
                print("rank %d: the failed step changed the weights" % rank, flush=True)
                return 1
            break
        opt.step()
        ref_opt.zero_grad()
        (sum(loss_fn(ref(a), b) for a, b in (data(r, step) for r in range(world)))
         / world).backward()
        ref_opt.step()
        # DDP reduces one bucket in the first step and builds its buckets
        # from what it saw there.
        if step == KILL_STEP - 1 and state["buckets"] < 2:
            print("rank %d: DDP made %d bucket(s), the kill needs 2" %
                  (rank, state["buckets"]), flush=True)
            return 1
    if error is None:
        print("rank %d: step %d did not fail" % (rank, KILL_STEP), flush=True)
        return 1
    print("rank %d: step %d failed after %.2f s: %s" %
          (rank, KILL_STEP, elapsed, str(error).splitlines()[0][:300]), flush=True)
    if elapsed > DETECT_S:
        print("rank %d: the error took %.1f s (bound %.0f s)" % (rank, elapsed, DETECT_S),
              flush=True)
        return 1
    diff = (flat(model) - flat(ref)).abs().max().item()
    if diff > 1e-12:
        print("rank %d: weights at the failure differ from the reference by %g" % (rank, diff),
              flush=True)
        return 1
    del ddp, opt
    # A later call on the failed group raises as quickly (each survivor
    # stopped at its own point of the failed step: a call that waited on a
    # live peer there would never end).
    start = time.monotonic()
    try:
        dist.broadcast(torch.zeros(512, dtype=torch.float64), 0)
        later = None
    except Exception as e:  # noqa: BLE001 - the library's RemoteError
        later = e
    later_s = time.monotonic() - start
    if later is None or later_s > DETECT_S:
        print("rank %d: a broadcast on the failed group %s after %.1f s" %
              (rank, "returned" if later is None else "raised", later_s), flush=True)
        return 1

    start = time.monotonic()
    pg = dist.shrink_group([victim], shrink_flags=SHRINK_ABORT)
    shrink_s = time.monotonic() - start
    if (pg.rank(), pg.size(), dist.get_world_size()) != (rank, world - 1, world - 1):
        print("rank %d: shrunk group rank %d size %d" % (rank, pg.rank(), pg.size()), flush=True)
        return 1
    gloo = dist.new_group(backend="gloo")
    print("rank %d: shrink_group %.2f s, infiniccl %d ranks, gloo %d ranks" %
          (rank, shrink_s, pg.size(), gloo.size()), flush=True)

    def train(m, group):
        d = DDP(m, process_group=group)
        o = torch.optim.SGD(d.parameters(), lr=0.1)
        for step in range(KILL_STEP, KILL_STEP + AFTER):
            x, y = data(rank, step)
            o.zero_grad()
            loss_fn(d(x), y).backward()
            o.step()

    ours, theirs = model, copy.deepcopy(model)
    train(ours, pg)
    train(theirs, gloo)
    a, b = flat(ours), flat(theirs)
    rel = ((a - b).abs().max() / b.abs().max()).item()
    every = [torch.empty_like(a) for _ in range(gloo.size())]
    dist.all_gather(every, a, group=gloo)
    dist.destroy_process_group()
    if rel > 1e-6:
        print("rank %d: weights beyond 1e-6 of gloo's (%.3g)" % (rank, rel), flush=True)
        return 1
    if not all(torch.equal(every[0], w) for w in every):
        print("rank %d: the survivors' weights differ" % rank, flush=True)
        return 1
    print("%s rank=%d detect=%.2fs later=%.2fs shrink=%.2fs gloo_rel_diff=%.3g exact=%s" %
          (PASS, rank, elapsed, later_s, shrink_s, rel, torch.equal(a, b)), flush=True)
    return 0


def segments():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("infiniccl-")}
    except OSError:
        return set()


def main():
    if sys.argv[1:2] == ["--worker"]:
        return worker()
    if torch_or_skip() is None:
        return 77
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    if not hasattr(dist, "shrink_group") or not hasattr(c10d, "SHRINK_ABORT"):
        print("SKIPPED: this torch has no dist.shrink_group with SHRINK_ABORT")
        return 77
    _, first, nps, mpiexec = parse(sys.argv[1:])
    env = environment(first)
    cmd = mpiexec[:1] + ["-n", str(nps[0])] + mpiexec[1:] + [
        sys.executable, os.path.abspath(__file__), "--worker"]
    print("+ " + " ".join(cmd), flush=True)
    before = segments()
    start = time.monotonic()
    job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    try:
        out, _ = job.communicate(timeout=150)
        rc = job.returncode
    except subprocess.TimeoutExpired:
        job.terminate()  # mpirun ends its ranks on SIGTERM
        out, _ = job.communicate()
        rc = None
    print(out)
    print("job: %.1f s, launcher exit %s" % (time.monotonic() - start, rc))
    failures = []
    if rc is None:
        failures.append("the job did not end within 150 s")
    passed = out.count(PASS)
    if passed != nps[0] - 1:
        failures.append("%d of %d survivors passed" % (passed, nps[0] - 1))
    time.sleep(1)  # the last ranks unmap on exit
    left = sorted(segments() - before)
    if left:
        failures.append("left in /dev/shm: " + " ".join(left))
    for f in failures:
        print("FAILED: " + f)
    if failures:
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
