"""Turning the caller's arrays into (pointer, element count, data type).

Four ways in, tried in this order:
  1. a NumPy ndarray (the common host case, kept fast: one dict lookup);
  2. __cuda_array_interface__ (CuPy, Numba, PyTorch CUDA tensors);
  3. DLPack (__dlpack__ / __dlpack_device__: PyTorch CPU tensors, JAX, ...);
  4. the buffer protocol (bytearray, array.array, memoryview, bytes).
Nothing here talks to MPI: every check that can fail runs before the C call.
"""
import ctypes

# The C API's data types (infinicclDataType_t).
INT8, INT16, INT32, INT64 = 0, 1, 2, 3
UINT8, UINT16, UINT32, UINT64 = 4, 5, 6, 7
FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = 8, 9, 10, 11

DTYPE_NAMES = {
    "int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64,
    "uint8": UINT8, "uint16": UINT16, "uint32": UINT32, "uint64": UINT64,
    "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32, "float64": FLOAT64,
}
CODE_NAMES = {v: k for k, v in DTYPE_NAMES.items()}
ITEMSIZE = {INT8: 1, INT16: 2, INT32: 4, INT64: 8, UINT8: 1, UINT16: 2, UINT32: 4,
            UINT64: 8, FLOAT16: 2, BFLOAT16: 2, FLOAT32: 4, FLOAT64: 8}

# Array-interface type strings without the byte order ('<' or '|' only:
# a big-endian array has no match and is refused).
_TYPESTR = {"i1": INT8, "i2": INT16, "i4": INT32, "i8": INT64,
            "u1": UINT8, "u2": UINT16, "u4": UINT32, "u8": UINT64,
            "f2": FLOAT16, "f4": FLOAT32, "f8": FLOAT64}

try:
    import numpy as _np
except ImportError:  # the package works without NumPy (buffer protocol, DLPack)
    _np = None

_NP_DTYPES = {}
if _np is not None:
    for _name, _code in DTYPE_NAMES.items():
        if _name != "bfloat16":
            _NP_DTYPES[_np.dtype(_name)] = _code
    try:  # NumPy has no bfloat16; ml_dtypes (used by JAX) adds one
        import ml_dtypes as _ml

        _NP_DTYPES[_np.dtype(_ml.bfloat16)] = BFLOAT16
    except ImportError:
        pass


class ArgumentError(ValueError):
    """Raised for a bad buffer; turned into infiniccl.Error by the caller."""


class Buf:
    """A resolved buffer. `keep` holds whatever must outlive the C call (a
    DLPack capsule, a Py_buffer view) so the memory stays valid."""
    __slots__ = ("ptr", "count", "code", "itemsize", "device", "readonly", "stream",
                 "keep", "what")

    def __init__(self, ptr, count, code, itemsize, device, readonly, stream, keep, what):
        self.ptr = ptr
        self.count = count
        self.code = code
        self.itemsize = itemsize
        self.device = device
        self.readonly = readonly
        self.stream = stream
        self.keep = keep
        self.what = what


def _override(code, itemsize, dtype, what):
    """dtype= reinterprets elements of the same size (a NumPy uint16 array
    holding bfloat16 bits, say)."""
    want = DTYPE_NAMES.get(str(dtype).replace("torch.", ""))
    if want is None:
        raise ArgumentError("dtype=%r is not one of %s" % (dtype, ", ".join(DTYPE_NAMES)))
    if ITEMSIZE[want] != itemsize:
        raise ArgumentError("dtype=%r has %d-byte elements but %s has %d-byte elements" %
                            (dtype, ITEMSIZE[want], what, itemsize))
    return want


def resolve(obj, dtype=None, what="buffer"):
    if _np is not None and type(obj) is _np.ndarray:
        return _from_numpy(obj, dtype, what)
    cai = None
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        pass
    except (TypeError, RuntimeError):
        # PyTorch cannot describe bfloat16 in this interface: DLPack can.
        cai = None
    if cai is not None:
        return _from_cai(obj, cai, dtype, what)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, dtype, what)
    return _from_buffer(obj, dtype, what)


def _from_numpy(a, dtype, what):
    ai = a.__array_interface__
    if ai["strides"] is not None and not a.flags.c_contiguous:
        raise ArgumentError("%s is not contiguous (strides %s); pass a contiguous array, "
                            "e.g. numpy.ascontiguousarray(x)" % (what, a.strides))
    code = _NP_DTYPES.get(a.dtype)
    if dtype is not None:
        code = _override(code, a.itemsize, dtype, what)
    elif code is None:
        raise ArgumentError("%s has dtype %s, which has no InfiniCCL data type (supported: "
                            "%s, native byte order)" % (what, a.dtype, ", ".join(DTYPE_NAMES)))
    ptr = numpy_address(a)
    ro = False
    if ptr is None:
        ptr, ro = ai["data"]
    return Buf(ptr, a.size, code, a.itemsize, False, ro, None, a, what)


def numpy_address(a):
    """The address of a writable, non-empty, C-contiguous ndarray, or None.
    ctypes' from_buffer gets it in about a third of the time
    __array_interface__ takes (the per-call overhead of small messages)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return None


def _from_cai(obj, cai, dtype, what):
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    count = 1
    for n in shape:
        count *= n
    code = _TYPESTR.get(typestr[1:]) if typestr[:1] in "<|" else None
    itemsize = int(typestr[2:]) if typestr[1:2] in "iuf" else None
    if code is None and typestr[1:] == "V2" and str(getattr(obj, "dtype", "")) == "torch.bfloat16":
        # Recent PyTorch describes bfloat16 as 2 raw bytes (older ones raise).
        code, itemsize = BFLOAT16, 2
    strides = cai.get("strides")
    if strides is not None and count > 1:
        expect, ok = itemsize, True
        for n, s in zip(reversed(shape), reversed(tuple(strides))):
            if n > 1 and s != expect:
                ok = False
            expect *= n
        if not ok:
            raise ArgumentError("%s is not contiguous (strides %s); pass a contiguous "
                                "array" % (what, tuple(strides)))
    if dtype is not None:
        code = _override(code, itemsize, dtype, what)
    elif code is None:
        raise ArgumentError("%s has typestr %s, which has no InfiniCCL data type" %
                            (what, typestr))
    ptr, ro = cai["data"]
    # CUDA Array Interface v3: the producer's stream. 1 is cudaStreamLegacy,
    # which NULL means as well; 2 (per-thread default) is passed on.
    s = cai.get("stream")
    stream = None if s in (None, 0, 1) else s
    return Buf(ptr or 0, count, code, ITEMSIZE[code], True, bool(ro), stream, obj, what)


# ---- DLPack ---------------------------------------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED, _DL_ROCM, _DL_ROCM_HOST = 1, 2, 3, 13, 10, 11
# (DLPack type code, bits) -> C API type.
_DL_TYPES = {(0, 8): INT8, (0, 16): INT16, (0, 32): INT32, (0, 64): INT64,
             (1, 8): UINT8, (1, 16): UINT16, (1, 32): UINT32, (1, 64): UINT64,
             (2, 16): FLOAT16, (2, 32): FLOAT32, (2, 64): FLOAT64, (4, 16): BFLOAT16}


def _from_dlpack(obj, dtype, what, stream=None):
    dev_type, _ = obj.__dlpack_device__()
    device = int(dev_type) not in (_DL_CPU, _DL_CUDA_HOST, _DL_ROCM_HOST)
    # Without a stream the exporter assumes the legacy default stream, which
    # NULL names in the C call.
    try:
        capsule = obj.__dlpack__(stream=stream) if device and stream is not None \
            else obj.__dlpack__()
    except (RuntimeError, TypeError, BufferError, ValueError) as e:
        # The exporter's own refusal (PyTorch: "Bool type is not supported
        # by dlpack"): a type with no match, or memory it will not share.
        raise ArgumentError("%s (%s) has no InfiniCCL data type or cannot be shared through "
                            "DLPack: %s" % (what, type(obj).__name__, e)) from None
    # The capsule is not consumed (not renamed "used_dltensor"): dropping it
    # runs the exporter's deleter, so holding it in Buf.keep keeps the memory.
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [t.shape[i] for i in range(t.ndim)]
    count = 1
    for n in shape:
        count *= n
    itemsize = t.dtype.bits // 8
    if t.strides and count > 1:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] > 1 and t.strides[i] != expect:
                raise ArgumentError("%s is not contiguous (strides %s, in elements); pass a "
                                    "contiguous tensor, e.g. x.contiguous()" %
                                    (what, [t.strides[j] for j in range(t.ndim)]))
            expect *= shape[i]
    code = _DL_TYPES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if dtype is not None:
        code = _override(code, itemsize, dtype, what)
    elif code is None:
        raise ArgumentError("%s has DLPack type (code %d, %d bits, %d lanes), which has no "
                            "InfiniCCL data type" % (what, t.dtype.code, t.dtype.bits,
                                                     t.dtype.lanes))
    ptr = (t.data or 0) + t.byte_offset
    # DLPack (before 1.0) carries no read-only flag; exporters refuse to share
    # read-only memory instead.
    return Buf(ptr, count, code, ITEMSIZE[code], device, False, None, (obj, capsule), what)


# ---- buffer protocol ------------------------------------------------------
class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.restype = ctypes.c_int
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.restype = None
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_PyBUF_C_CONTIGUOUS_FORMAT = 0x0038 | 0x0004  # PyBUF_C_CONTIGUOUS | PyBUF_FORMAT

# struct-module format characters (native size, the only kind a C-contiguous
# exporter hands out without a prefix) -> C API type, by size for the
# platform-sized integers.
_FMT_KIND = {"b": "i", "h": "i", "i": "i", "l": "i", "q": "i", "n": "i",
             "B": "u", "H": "u", "I": "u", "L": "u", "Q": "u", "N": "u",
             "e": "f", "f": "f", "d": "f"}


class _View:
    """Owns a Py_buffer; released when the call no longer needs it."""
    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view

    def __del__(self):
        _release_buffer(ctypes.byref(self.view))


def _from_buffer(obj, dtype, what):
    view = _PyBuffer()
    try:
        _get_buffer(obj, ctypes.byref(view), _PyBUF_C_CONTIGUOUS_FORMAT)
    except (BufferError, TypeError, ValueError) as e:
        if isinstance(obj, memoryview) or hasattr(obj, "__buffer__") or \
                isinstance(e, BufferError):
            raise ArgumentError("%s is not a C-contiguous buffer: %s" % (what, e)) from None
        raise ArgumentError("%s (%s) is not an array InfiniCCL can read: it offers neither "
                            "the buffer protocol, __cuda_array_interface__ nor DLPack" %
                            (what, type(obj).__name__)) from None
    keep = _View(view)
    fmt = (view.format or b"B").decode()
    if fmt[:1] in "@=<":
        fmt = fmt[1:]
    kind = _FMT_KIND.get(fmt)
    code = _TYPESTR.get("%s%d" % (kind, view.itemsize)) if kind else None
    if dtype is not None:
        code = _override(code, view.itemsize, dtype, what)
    elif code is None:
        raise ArgumentError("%s has buffer format %r, which has no InfiniCCL data type" %
                            (what, fmt))
    return Buf(view.buf or 0, view.len // view.itemsize, code, view.itemsize, False,
               bool(view.readonly), None, keep, what)
