"""Builds the package with its C++ torch backend (infiniccl._c10d) into a
folder, for the torch 2.x tests:
    build_torch_ext.py <out-dir>
runs `setup.py build` of python/ with the interpreter running this script
(a virtual environment with PyPI's torch), the build files under <out-dir>,
the package (Python files and the extension) under <out-dir>/lib, then
imports the extension from there with INFINICCL_LIBRARY's library and checks
that infiniccl.torch picks the C++ backend. Exits 77 (ctest's skip) when
the interpreter cannot import torch 2.7 or later.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.normpath(os.path.join(HERE, "..", "..", "python"))


def main():
    out = os.path.abspath(sys.argv[1])
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: %s cannot import torch (%s)" % (sys.executable, e))
        return 77
    version = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
    if version < (2, 7):
        print("SKIPPED: torch %s: the C++ backend needs torch 2.7 or later" % torch.__version__)
        return 77
    print("torch %s at %s" % (torch.__version__, os.path.dirname(torch.__file__)), flush=True)
    env = dict(os.environ, INFINICCL_TORCH_EXTENSION="1", PYTHONDONTWRITEBYTECODE="1")
    t0 = time.monotonic()
    rc = subprocess.call([sys.executable, "setup.py", "-q", "build", "--build-base",
                          os.path.join(out, "tmp"), "--build-lib", os.path.join(out, "lib")],
                         cwd=PKG, env=env)
    print("setup.py build: rc %d, %.0f s" % (rc, time.monotonic() - t0), flush=True)
    if rc:
        return 1
    check = ("import infiniccl.torch as t, infiniccl._c10d as c; "
             "assert t.backend_kind() == 'cpp', t.backend_kind(); "
             "print('infiniccl._c10d:', c.__file__)")
    env = dict(os.environ, PYTHONPATH=os.path.join(out, "lib"), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.call([sys.executable, "-c", check], env=env, cwd=out)


if __name__ == "__main__":
    sys.exit(main())
