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
    backend) before the source tree's python/."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [first, os.path.join(HERE, "..", "..", "python"), env.get("PYTHONPATH")] if p)
    return env


def launch(mpiexec, np_, argv, env):
    """Runs `python argv...` on np_ ranks; its exit status."""
    cmd = mpiexec[:1] + ["-n", str(np_)] + mpiexec[1:] + [sys.executable] + argv
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=env)


def report(name, failures):
    for f in failures:
        print("FAILED: " + f)
    print("%s: %s" % (name, "FAILED" if failures else "OK"))
    return 1 if failures else 0
