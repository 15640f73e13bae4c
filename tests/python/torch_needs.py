"""What the torch tests need, checked in one place.

torch_backend(), the preamble of the torch test modules (pytest): skips the
module where torch or infiniccl.torch does not import, and returns (torch,
infiniccl.torch). With TEST_TORCH_NEEDS_CPP=1 (the torch 2.x environments'
tests) a package without the C++ backend is an error, not a skip; cpp_only
skips the module without that backend otherwise.

torch_or_skip(), for the check scripts: torch, or None (the script then
exits 77, ctest's skip) after a SKIPPED line naming why."""
import os
import sys

CPP_BACKEND_TORCH = (2, 7)  # the oldest torch the C++ backend builds on


def torch_version(torch):
    return tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


def torch_or_skip(minimum=CPP_BACKEND_TORCH, why="the C++ backend needs torch 2.7 or later"):
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: %s cannot import torch (%s)" % (sys.executable, e))
        return None
    if torch_version(torch) < minimum:
        print("SKIPPED: torch %s: %s" % (torch.__version__, why))
        return None
    return torch


def torch_backend(cpp_only=False):
    import pytest

    torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
    ict = pytest.importorskip("infiniccl.torch")
    if ict.backend_kind() != "cpp" and os.environ.get("TEST_TORCH_NEEDS_CPP") == "1":
        raise ImportError("TEST_TORCH_NEEDS_CPP=1 but infiniccl.torch uses the Python backend "
                          "(infiniccl._c10d was not built or does not import)")
    if cpp_only and ict.backend_kind() != "cpp":
        pytest.skip("infiniccl._c10d (the C++ backend, torch 2.7+) is not built",
                    allow_module_level=True)
    return torch, ict
