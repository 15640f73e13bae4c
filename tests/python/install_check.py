"""The package installed both ways, used from outside the source tree:
  1. `cmake --install` into a temporary prefix: the package finds the
     library it was installed with (its generated _install.py), with no
     INFINICCL_LIBRARY and no LD_LIBRARY_PATH;
  2. `pip install --no-build-isolation` (Debian's setuptools, offline) into a
     temporary --target, finding the library through INFINICCL_LIBRARY;
  3. a wrong INFINICCL_LIBRARY: `import infiniccl` fails naming what it tried.
usage: install_check.py <cmake> <build dir> <library> <np> <mpiexec> [flags...]
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SNIPPET = ("import infiniccl, numpy as np; c = infiniccl.Comm.world(); "
           "x = np.full(4, c.rank + 1, np.int32); c.all_reduce(x); "
           "assert x.tolist() == [c.size * (c.size + 1) // 2] * 4, x; "
           "print('OK', c.size, infiniccl.library_path())")


def run(cmd, env, check=True):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    print(p.stdout, end="", flush=True)
    if check and p.returncode != 0:
        raise SystemExit("FAILED (exit %d): %s" % (p.returncode, " ".join(cmd)))
    return p


def main():
    cmake, build, library, np_ = sys.argv[1:5]
    mpiexec = sys.argv[5:]
    print("install check: %s (Python %s)" % (sys.executable, sys.version.split()[0]))
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("SKIPPED: %s cannot import numpy (Debian: python3-numpy)" % sys.executable)
        return 77
    base = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for k in ("INFINICCL_LIBRARY", "PYTHONPATH"):
        base.pop(k, None)
    launch = mpiexec[:1] + ["-n", np_] + mpiexec[1:] + [sys.executable, "-c", SNIPPET]
    tmp = tempfile.mkdtemp(prefix="infiniccl-py-")
    try:
        prefix = os.path.join(tmp, "prefix")
        run([cmake, "--install", build, "--prefix", prefix], base)
        pkg = [d for d, _, files in os.walk(prefix)
               if os.path.basename(d) == "infiniccl" and "__init__.py" in files]
        if len(pkg) != 1:
            raise SystemExit("FAILED: expected one infiniccl/ under %s, found %s" % (prefix, pkg))
        env = dict(base, PYTHONPATH=os.path.dirname(pkg[0]))
        out = run(launch, env).stdout
        if os.path.realpath(prefix) not in out and prefix not in out:
            raise SystemExit("FAILED: the cmake-installed package did not load the library "
                             "installed with it")

        try:
            import pip  # noqa: F401
            have_pip = True
        except ImportError:
            have_pip = False
            print("pip part SKIPPED: %s has no pip (Debian: python3-pip)" % sys.executable)
        if have_pip:
            # pip builds in the source folder (build/, *.egg-info): a copy
            # keeps the source tree clean.
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.join(HERE, "..", "..", "python"), src)
            target = os.path.join(tmp, "pip")
            run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                 "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--target", target,
                 src], base)
            env = dict(base, PYTHONPATH=target, INFINICCL_LIBRARY=library)
            run(launch, env)

        bogus = os.path.join(tmp, "nowhere", "libinfiniccl.so")
        env = dict(base, PYTHONPATH=os.path.join(HERE, "..", "..", "python"),
                   INFINICCL_LIBRARY=bogus)
        p = run([sys.executable, "-c", "import infiniccl"], env, check=False)
        if p.returncode == 0 or "Tried:" not in p.stdout or bogus not in p.stdout:
            raise SystemExit("FAILED: a wrong INFINICCL_LIBRARY did not give an error "
                             "naming it")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("install check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
