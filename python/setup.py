"""Builds the package; with torch 2.7 or later importable at build time, also
the C++ torch.distributed backend infiniccl._c10d (torch.utils.cpp_extension,
against that torch). Without torch, or with an older one, the package is the
pure-Python one (ctypes over libinfiniccl) and infiniccl.torch uses its
Python ProcessGroup.

The extension needs only the library's headers: include/ of this source tree,
or INFINICCL_INCLUDE (a folder holding infiniccl/infiniccl.h, e.g. an
installed prefix's include/). It is not linked against libinfiniccl: the
package loads the library (RTLD_GLOBAL) before importing the extension, so
both use the same library and communicators. INFINICCL_TORCH_EXTENSION=0
skips the extension; =1 makes a failure to build it an error (otherwise it
is a warning and the pure-Python package is installed).
INFINICCL_TORCH_SANITIZE=address,undefined (any -fsanitize= list) builds the
extension with those sanitizers (at -O0, with line tables), for an
interpreter started with their runtimes preloaded (tests/python/
torch2_asan_fuzz.py).

The package gets a generated infiniccl/_build_info.py: the torch version the
extension was built against (None without it) and this folder, which
infiniccl.torch checks at import (infiniccl/_loader.py: load_torch_backend).
"""
import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

MIN_TORCH = (2, 7)  # _loader.TORCH_CPP_MIN: c10d::Backend::shutdown() is overridden

HERE = os.path.dirname(os.path.abspath(__file__))
# The C++ backend's sources (infiniccl/csrc), compiled as the two units that
# include them (c10d_unity_1.cpp says why; cmake/Wheel.cmake compiles the same).
CSRC = ["backend.cpp", "collectives.cpp", "lifecycle.cpp", "p2p.cpp", "sim_device.cpp",
        "work.cpp", "worker.cpp"]
UNITS = ["c10d_unity_1.cpp", "c10d_unity_2.cpp"]


def _include_dir():
    env = os.environ.get("INFINICCL_INCLUDE")
    if env:
        return env
    return os.path.normpath(os.path.join(HERE, "..", "include"))


def _torch_extension():
    mode = os.environ.get("INFINICCL_TORCH_EXTENSION", "auto")
    if mode == "0":
        return [], {}
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError:
        if mode == "1":
            raise
        return [], {}
    version = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
    if version < MIN_TORCH:
        if mode == "1":
            raise RuntimeError("the C++ backend needs torch %d.%d or later, not %s" %
                               (MIN_TORCH + (torch.__version__,)))
        return [], {}
    include = _include_dir()
    if not os.path.exists(os.path.join(include, "infiniccl", "infiniccl.h")):
        raise RuntimeError("infiniccl/infiniccl.h not found under %s: set INFINICCL_INCLUDE" %
                           include)
    csrc = os.path.join("infiniccl", "csrc")
    # -g0: no debug information, whatever Python's own flags ask (Debian's
    # have -g): with torch's headers it triples each object's compile time
    # and makes objects thirty times larger.
    compile_args, link_args = ["-O2", "-g0"], []
    sanitize = os.environ.get("INFINICCL_TORCH_SANITIZE", "")
    if sanitize:
        # A checking build: every bad access or undefined behaviour of the
        # extension ends the process with a report. It loads only into an
        # interpreter started with the sanitizers' runtimes preloaded
        # (LD_PRELOAD).
        flags = ["-fsanitize=" + sanitize, "-fno-sanitize-recover=all"]
        # -O0 -g1 (line tables only): the sanitized build compiles no slower
        # than the optimised one; -g would make it three times slower.
        compile_args = ["-O0", "-g1", "-fno-omit-frame-pointer"] + flags
        link_args = flags
    # The objects compile in parallel when ninja is installed (MAX_JOBS at
    # a time, the CPU count unless set; each takes about 1 GB), one after
    # another otherwise.
    ninja = cpp_extension.is_ninja_available()
    if ninja:
        os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    ext = cpp_extension.CppExtension(
        "infiniccl._c10d", [os.path.join(csrc, f) for f in UNITS],
        include_dirs=[include], depends=[os.path.join(csrc, f) for f in CSRC + ["backend.h"]],
        extra_compile_args=compile_args, extra_link_args=link_args)

    class BuildExt(cpp_extension.BuildExtension):
        def run(self):
            try:
                super().run()
            except Exception as e:  # noqa: BLE001 - any compiler failure
                if mode == "1":
                    raise
                sys.stderr.write("infiniccl: the C++ torch backend was not built (%s); "
                                 "import infiniccl.torch will say how to build it\n" % e)
                return
            folder = (os.path.join(HERE, "infiniccl") if self.inplace else
                      os.path.join(self.build_lib, "infiniccl"))
            _write_build_info(folder, str(torch.__version__))

    return [ext], {"build_ext": BuildExt.with_options(use_ninja=ninja)}


def _write_build_info(folder, torch_version):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "_build_info.py"), "w", encoding="utf-8") as f:
        f.write("# Written by setup.py: the torch infiniccl._c10d was compiled against\n"
                "# (None: no C++ backend) and the source it was built from.\n"
                "TORCH_VERSION = %r\nSOURCE = %r\n" % (torch_version, HERE))


class BuildPy(build_py):
    """The package's files and a _build_info.py saying "no C++ backend"
    (build_ext, which runs after, rewrites it when it builds one)."""

    def run(self):
        super().run()
        _write_build_info(os.path.join(self.build_lib, "infiniccl"), None)


_ext, _cmd = _torch_extension()
_cmd.setdefault("build_py", BuildPy)
setup(ext_modules=_ext, cmdclass=_cmd)
