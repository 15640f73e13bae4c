"""Under torchrun (no MPI: two processes with its environment) on a machine
without a native CCL for CPU tensors, init_process_group("infiniccl") must
raise an error that names the fix (icclrun/mpirun) on every rank, not hang:
    torchrun_check.py            (starts itself twice as torchrun would)
Exits 77 (ctest's skip) without PyTorch."""
import os
import socket
import subprocess
import sys


def child():
    import torch.distributed as dist

    import infiniccl.torch  # noqa: F401

    try:
        dist.init_process_group("infiniccl")
    except RuntimeError as e:
        ok = "icclrun" in str(e) and "mpirun" in str(e)
        print("rank %s: %s: %s" % (os.environ["RANK"], "expected error" if ok else "WRONG", e))
        return 0 if ok else 1
    print("rank %s: init_process_group succeeded without MPI or a CCL" % os.environ["RANK"])
    return 1


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: %s cannot import torch (Debian: python3-torch)" % sys.executable)
        return 77
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.join(here, "..", "..", "python"), env.get("PYTHONPATH")] if p)
    # What torchrun gives each process (its own launcher cannot run here:
    # Debian's torch 1.13 torchrun fails on Python 3.11 in its Std enum).
    procs = []
    for r in range(2):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCHELASTIC_RUN_ID="check")
        procs.append(subprocess.Popen([sys.executable, __file__, "--child"], env=e))
    rc = max(p.wait(timeout=120) for p in procs)
    print("torchrun_check: %s" % ("OK" if rc == 0 else "FAILED (exit %d)" % rc))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(child() if "--child" in sys.argv else main())
