"""What the training checks against gloo share (ddp_check.py,
torch2_train_check.py): their command line, the environment of the ranks,
one launch under mpiexec, and the closing report."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(argv):
    """[--device=D] [--pythonpath DIR] <np>[,<np>...] <mpiexec> [flags...]
    -> (options {"device": D}, DIR or None, [np...], [mpiexec, flags...])."""
    args = list(argv)
    options, first = {"device": "cpu"}, None
    while args and args[0].startswith("--"):
        if args[0].startswith("--device="):
            options["device"] = args.pop(0).split("=", 1)[1]
        elif args[0] == "--pythonpath":
            first, args = args[1], args[2:]
        else:
            break
    return options, first, [int(n) for n in args[0].split(",")], args[1:]


def environment(first):
    """The ranks' environment: DIR (a built copy of the package with its C++
    backend) before the source tree's python/; without an MPI launcher's
    variables, so that ranks started another way do not look launched by one."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX", "PMI_", "HYDRA_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [first, os.path.join(HERE, "..", "..", "python"), env.get("PYTHONPATH")] if p)
    return env


def launch(mpiexec, np_, argv, env):
    """Runs `python argv...` on np_ ranks; its exit status. `mpiexec`: the
    MPI launcher and its flags; or ["torchrun"], torch's own launcher
    (--standalone, no MPI); or ["env"], np_ plain processes with the
    environment torchrun gives each (Debian's torch 1.13 torchrun cannot
    start on Python 3.11: its Std enum); or ["spawn", "tcp"|"file"], the
    script's own torch.multiprocessing.spawn with that init method (no MPI)."""
    if mpiexec[0] == "env":
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [sys.executable] + argv
        print("+ (torchrun's environment, %d ranks) %s" % (np_, " ".join(cmd)), flush=True)
        procs = [subprocess.Popen(cmd, env=dict(
            env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(np_),
            LOCAL_WORLD_SIZE=str(np_), GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port), TORCHELASTIC_RUN_ID="check")) for r in range(np_)]
        return max(p.wait() for p in procs)
    if mpiexec[0] == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(np_)] + argv
    elif mpiexec[0] == "spawn":
        if mpiexec[1] == "tcp":
            import socket
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                url = "tcp://127.0.0.1:%d" % s.getsockname()[1]
        else:
            import tempfile
            url = "file://" + os.path.join(tempfile.mkdtemp(), "rendezvous")
        cmd = [sys.executable] + argv + ["--spawn", str(np_), "--init-method", url]
    else:
        cmd = mpiexec[:1] + ["-n", str(np_)] + mpiexec[1:] + [sys.executable] + argv
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=env)


def report(name, failures):
    for f in failures:
        print("FAILED: " + f)
    print("%s: %s" % (name, "FAILED" if failures else "OK"))
    return 1 if failures else 0
