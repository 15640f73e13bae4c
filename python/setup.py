"""Builds the package; with torch 2.1 or later importable at build time, also
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
"""
import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


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
    if version < (2, 1):
        if mode == "1":
            raise RuntimeError("the C++ backend needs torch 2.1 or later, not %s" %
                               torch.__version__)
        return [], {}
    include = _include_dir()
    if not os.path.exists(os.path.join(include, "infiniccl", "infiniccl.h")):
        raise RuntimeError("infiniccl/infiniccl.h not found under %s: set INFINICCL_INCLUDE" %
                           include)
    ext = cpp_extension.CppExtension(
        "infiniccl._c10d", [os.path.join("infiniccl", "csrc", "backend.cpp")],
        include_dirs=[include], extra_compile_args=["-O2"])

    class BuildExt(cpp_extension.BuildExtension):
        def run(self):
            try:
                super().run()
            except Exception as e:  # noqa: BLE001 - any compiler failure
                if mode == "1":
                    raise
                sys.stderr.write("infiniccl: the C++ torch backend was not built (%s); "
                                 "infiniccl.torch uses the Python one\n" % e)

    return [ext], {"build_ext": BuildExt.with_options(use_ninja=False)}


_ext, _cmd = _torch_extension()
setup(ext_modules=_ext, cmdclass=_cmd)
