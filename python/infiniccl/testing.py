"""Test helpers: arrays in the EMULATED device memory of libinfiniccl's
`sim` runtime, so the staging path can be exercised from Python on machines
without an accelerator.

Needs INFINICCL_DEVICE=sim and the test build of the library
(libinfiniccl_pysim, which adds the infinicclTestSim* entry points; ctest
points INFINICCL_LIBRARY at it). The installed library has no such entry
points: sim_available() then says why.
"""
import ctypes

import numpy as np

from . import _lib, init  # _lib: the loaded CDLL


def _hooks():
    try:
        m = _lib.infinicclTestSimMalloc
    except AttributeError:
        return None
    m.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    _lib.infinicclTestSimFree.argtypes = [ctypes.c_void_p]
    _lib.infinicclTestSimCopy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                          ctypes.c_int]
    return _lib


def sim_available():
    """(True, "") or (False, why)."""
    lib = _hooks()
    if lib is None:
        return False, "the loaded libinfiniccl has no emulated-device test hooks " \
                      "(use the build tree's libinfiniccl_pysim via INFINICCL_LIBRARY)"
    init()
    p = ctypes.c_void_p()
    rc = lib.infinicclTestSimMalloc(ctypes.byref(p), 1)
    if rc != 0:
        return False, "the emulated device is not enabled (set INFINICCL_DEVICE=sim)"
    lib.infinicclTestSimFree(p)
    return True, ""


class SimArray:
    """A C-contiguous array in emulated device memory, offered to infiniccl
    through __cuda_array_interface__ (as a CuPy array would be). Only the
    library can read it; .numpy() copies it back to the host."""

    def __init__(self, shape, dtype):
        lib = _hooks()
        if lib is None:
            raise RuntimeError(sim_available()[1])
        self.shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        p = ctypes.c_void_p()
        if lib.infinicclTestSimMalloc(ctypes.byref(p), max(self.nbytes, 1)) != 0:
            raise RuntimeError(sim_available()[1] or "emulated device allocation failed")
        self.ptr = p.value
        self._lib = lib

    @classmethod
    def from_numpy(cls, a):
        a = np.ascontiguousarray(a)
        s = cls(a.shape, a.dtype)
        if s._lib.infinicclTestSimCopy(s.ptr, a.ctypes.data, s.nbytes, 1) != 0:
            raise RuntimeError("upload to the emulated device failed")
        return s

    def numpy(self):
        out = np.empty(self.shape, self.dtype)
        if self._lib.infinicclTestSimCopy(out.ctypes.data, self.ptr, self.nbytes, 0) != 0:
            raise RuntimeError("download from the emulated device failed")
        return out

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}

    def free(self):
        if self.ptr is not None:
            self._lib.infinicclTestSimFree(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass
