"""Runs the Python tests under MPI:
    run.py <np> <mpiexec> [flags...] -- [pytest args]
    run.py --script FILE --needs MODULE <np> <mpiexec> [flags...]   (an example)
    run.py --tests FILE [--pythonpath DIR] <np> <mpiexec> [flags...]
--tests (repeatable) runs pytest on FILE alone instead of the whole folder; --pythonpath
puts DIR (a built copy of the package, say) before the source tree's python/.

ctest calls this with the interpreter Debian's packages were installed for
(python3-numpy, -pytest, -torch, -mpi4py: /usr/bin/python3 on Debian, which
may not be the python3 first on PATH). It prints which interpreter runs,
exits 77 (ctest's skip) naming what is missing, and otherwise launches one
mpirun of that same interpreter running pytest on every rank, so the whole
matrix costs one MPI start per rank count.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    argv = sys.argv[1:]
    script, needs, tests, paths = None, [], [], []
    while argv and argv[0] in ("--script", "--needs", "--tests", "--pythonpath"):
        if argv[0] == "--script":
            script = argv[1]
        elif argv[0] == "--tests":
            tests.append(argv[1])
        elif argv[0] == "--pythonpath":
            paths.append(argv[1])
        else:
            needs.append(argv[1])
        argv = argv[2:]
    sep = argv.index("--") if "--" in argv else len(argv)
    launcher, pytest_args = argv[:sep], argv[sep + 1:]
    np_ = launcher[0]
    mpiexec = launcher[1:]
    print("python %s: %s (Python %s), %s ranks, MPI %s" %
          (os.path.basename(script) if script else "tests", sys.executable,
           sys.version.split()[0], np_,
           os.environ.get("INFINICCL_TEST_MPI", "?")), flush=True)
    missing = []
    wanted = [("numpy", "python3-numpy")]
    wanted += [("pytest", "python3-pytest")] if script is None else []
    wanted += [(m, "python3-" + m) for m in needs]
    for mod, pkg in wanted:
        try:
            __import__(mod)
        except ImportError:
            missing.append("%s (Debian: %s)" % (mod, pkg))
    if missing:
        print("SKIPPED: %s cannot import %s" % (sys.executable, ", ".join(missing)))
        return 77
    run = [script] if script else ["-m", "pytest", "-q", "-rs", "--tb=short", "--color=no",
                                   "-p", "no:cacheprovider"] + (tests or [HERE]) + pytest_args
    cmd = mpiexec[:1] + ["-n", np_] + mpiexec[1:] + [sys.executable] + run
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the source tree
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in paths + [os.path.join(HERE, "..", "..", "python"), env.get("PYTHONPATH")]
        if p)
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
