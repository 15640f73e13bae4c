"""Builds the package with its C++ torch backend (infiniccl._c10d) into a
folder, for the torch 2.x tests:
    build_torch_ext.py [--reuse DIR | --sanitize LIST] <out-dir>
runs `setup.py build` of python/ with the interpreter running this script
(a virtual environment with PyPI's torch), the build files under <out-dir>,
the package (Python files and the extension) under <out-dir>/lib, then
imports the extension from there with INFINICCL_LIBRARY's library and checks
that infiniccl.torch picks the C++ backend. Exits 77 (ctest's skip) when
the interpreter cannot import torch 2.7 or later.
--reuse DIR: another build tree's <out-dir> of this source (the extension
needs only the library's headers, not the library or its MPI): its package
is copied instead of compiled when it was built for this torch from this
python/ after the last change of any file of python/ and include/;
otherwise the package is built.
--sanitize LIST (address,undefined): the extension is built with those
sanitizers (setup.py's INFINICCL_TORCH_SANITIZE) and the import check runs
with their runtimes preloaded (sanitized.py). Either build compiles its
objects in parallel where ninja is installed (setup.py: MAX_JOBS at a time,
the CPU count unless set).
"""
import glob
import os
import shutil
import subprocess
import sys
import time

from sanitized import runtime, sanitized_env
from torch_needs import torch_or_skip

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "include"))


def newest_source():
    """The latest modification time of python/ and include/."""
    newest = 0.0
    for top in (PKG, INCLUDE):
        for root, dirs, files in os.walk(top):
            # Not what builds write there: setup.py's egg-info (each build
            # of python/, the sanitized and the oldest torch's too) is no
            # change of the source.
            dirs[:] = [d for d in dirs
                       if d not in ("build", "__pycache__") and not d.endswith(".egg-info")]
            for f in files:
                newest = max(newest, os.path.getmtime(os.path.join(root, f)))
    return newest


def reusable(other, torch_version):
    """Why DIR's package cannot be used here, or None when it can."""
    lib = os.path.join(other, "lib", "infiniccl")
    exts = glob.glob(os.path.join(lib, "_c10d*.so"))
    if not exts:
        return "no infiniccl/_c10d*.so under %s" % lib
    info = {}
    path = os.path.join(lib, "_build_info.py")
    try:
        with open(path, encoding="utf-8") as f:
            exec(f.read(), info)  # noqa: S102 - written by setup.py
    except OSError as e:
        return "no _build_info.py (%s)" % e
    if info.get("TORCH_VERSION") != torch_version:
        return "built for torch %s" % info.get("TORCH_VERSION")
    if os.path.normpath(info.get("SOURCE") or "") != PKG:
        return "built from %s" % info.get("SOURCE")
    # setup.py rewrites _build_info.py on every build (the extension itself
    # only when its sources changed): its time is the build's.
    if os.path.getmtime(path) <= newest_source():
        return "built before the last change of python/ or include/"
    return None


def main():
    args = sys.argv[1:]
    other, sanitize = None, ""
    if args[:1] == ["--reuse"]:
        other, args = os.path.abspath(args[1]), args[2:]
    elif args[:1] == ["--sanitize"]:
        sanitize, args = args[1], args[2:]
    out = os.path.abspath(args[0])
    torch = torch_or_skip()
    if torch is None:
        return 77
    print("torch %s at %s" % (torch.__version__, os.path.dirname(torch.__file__)), flush=True)
    if sanitize and runtime("libasan.so") is None:
        print("SKIPPED: the compiler has no AddressSanitizer runtime (libasan.so)")
        return 77
    why = reusable(other, str(torch.__version__)) if other else "no --reuse"
    if why is None:
        shutil.rmtree(os.path.join(out, "lib"), ignore_errors=True)
        shutil.copytree(os.path.join(other, "lib"), os.path.join(out, "lib"))
        print("copied the package built in %s" % other, flush=True)
    else:
        if other:
            print("not reusing %s: %s" % (other, why), flush=True)
        env = dict(os.environ, INFINICCL_TORCH_EXTENSION="1", PYTHONDONTWRITEBYTECODE="1")
        if sanitize:
            env["INFINICCL_TORCH_SANITIZE"] = sanitize
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
    if sanitize:
        env = sanitized_env(env)
    return subprocess.call([sys.executable, "-c", check], env=env, cwd=out)


if __name__ == "__main__":
    sys.exit(main())
