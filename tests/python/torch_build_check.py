"""infiniccl.torch checks the torch the C++ backend was built against
(infiniccl/_build_info.py, written by setup.py and by the wheel's CMake):
    torch_build_check.py <folder holding the built package>
Run with a torch 2.7+ interpreter on the package build_torch_ext.py built:
  1. the recorded torch is the one imported: the C++ backend is used;
  2. torch.__version__ set to another version before the import: ImportError
     naming both versions and the pip command that rebuilds it;
  3. a copy recording no extension (what an isolated `pip install ./python`
     gives): ImportError naming the pip command, not the Python backend;
     INFINICCL_TORCH_BACKEND=python then picks the Python backend;
  4. that copy under a torch reporting 2.6: the Python backend, no error.
Exits 77 (ctest's skip) when the interpreter cannot import torch 2.7+.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from torch_needs import torch_or_skip


def run(code, pythonpath, **env):
    e = {k: v for k, v in os.environ.items() if k != "INFINICCL_TORCH_BACKEND"}
    e.update(PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1", **env)
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=e,
                       capture_output=True, text=True, timeout=120)
    print("$ %s\n  -> exit %d\n%s%s" % (code, p.returncode, p.stdout, p.stderr[-1500:]),
          flush=True)
    return p.returncode, p.stdout + p.stderr


def fail(msg):
    print("FAILED: " + msg)
    sys.exit(1)


def main():
    lib = os.path.abspath(sys.argv[1])
    torch = torch_or_skip()
    if torch is None:
        return 77
    version = str(torch.__version__)

    rc, out = run("import infiniccl.torch as t, infiniccl._build_info as b; "
                  "print(t.backend_kind(), b.TORCH_VERSION)", lib)
    if rc or out.split()[:2] != ["cpp", version]:
        fail("the matching torch did not give the C++ backend recording %s" % version)

    rc, out = run("import torch; torch.__version__ = '2.99.0'; import infiniccl.torch", lib)
    if rc == 0 or "ImportError" not in out or version not in out or "2.99.0" not in out or \
            "pip install --no-build-isolation" not in out:
        fail("another torch than the recorded one was not refused naming both versions "
             "and the pip command")

    with tempfile.TemporaryDirectory(prefix="infiniccl-build-info-") as tmp:
        copy = os.path.join(tmp, "lib")
        shutil.copytree(lib, copy)
        pkg = os.path.join(copy, "infiniccl")
        for name in os.listdir(pkg):
            if name.startswith("_c10d"):
                os.remove(os.path.join(pkg, name))
        with open(os.path.join(pkg, "_build_info.py"), "w") as f:
            f.write("TORCH_VERSION = None\nSOURCE = %r\n" % os.path.join(tmp, "python"))
        rc, out = run("import infiniccl.torch", copy)
        if rc == 0 or "no C++ torch backend" not in out or \
                "pip install --no-build-isolation" not in out or version not in out:
            fail("a package without the C++ backend under torch %s did not say how to "
                 "build it" % version)
        rc, out = run("import infiniccl.torch as t; print(t.backend_kind())", copy,
                      INFINICCL_TORCH_BACKEND="python")
        if rc or out.split()[:1] != ["python"]:
            fail("INFINICCL_TORCH_BACKEND=python did not give the Python backend")
        rc, out = run("import torch; torch.__version__ = '2.6.0'; import infiniccl.torch as t; "
                      "print(t.backend_kind())", copy)
        if rc or out.split()[:1] != ["python"]:
            fail("torch 2.6 (no C++ backend possible) did not give the Python backend")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
