"""Test helpers: arrays in the EMULATED device memory of libinfiniccl's
`sim` runtime, so the staging path can be exercised from Python on machines
without an accelerator.

Needs INFINICCL_DEVICE=sim. Uses the emulated device's public API
(infiniccl/infiniccl_sim.h: infinicclSimMalloc, infinicclSimFree,
infinicclSimMemcpy), which every libinfiniccl exports; sim_available() says
why when it cannot be used.
"""
import ctypes

import numpy as np

from . import _lib, init  # _lib: the loaded CDLL


def _hooks():
    try:
        m = _lib.infinicclSimMalloc
    except AttributeError:
        return None
    m.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    m.restype = ctypes.c_int
    _lib.infinicclSimFree.argtypes = [ctypes.c_void_p]
    _lib.infinicclSimFree.restype = ctypes.c_int
    _lib.infinicclSimMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_void_p]
    _lib.infinicclSimMemcpy.restype = ctypes.c_int
    return _lib


def _last_error(lib):
    return (lib.infinicclGetLastError(None) or b"").decode(errors="replace")


def sim_available():
    """(True, "") or (False, why)."""
    lib = _hooks()
    if lib is None:
        return False, "the loaded libinfiniccl predates the emulated device's API " \
                      "(infiniccl/infiniccl_sim.h)"
    init()
    p = ctypes.c_void_p()
    if lib.infinicclSimMalloc(ctypes.byref(p), 1) != 0:
        return False, _last_error(lib)  # names INFINICCL_DEVICE=sim when it is unset
    lib.infinicclSimFree(p)
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
        if lib.infinicclSimMalloc(ctypes.byref(p), max(self.nbytes, 1)) != 0:
            raise RuntimeError(sim_available()[1] or "emulated device allocation failed")
        self.ptr = p.value
        self._lib = lib

    @classmethod
    def from_numpy(cls, a):
        a = np.ascontiguousarray(a)
        s = cls(a.shape, a.dtype)
        if s._lib.infinicclSimMemcpy(s.ptr, a.ctypes.data, s.nbytes, None) != 0:
            raise RuntimeError("upload to the emulated device failed: " + _last_error(s._lib))
        return s

    def numpy(self):
        out = np.empty(self.shape, self.dtype)
        if self._lib.infinicclSimMemcpy(out.ctypes.data, self.ptr, self.nbytes, None) != 0:
            raise RuntimeError("download from the emulated device failed: " +
                               _last_error(self._lib))
        return out

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}

    def free(self):
        if self.ptr is not None:
            self._lib.infinicclSimFree(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass
