"""InfiniCCL from Python: collectives on NumPy, PyTorch and CuPy arrays.

    import numpy as np, infiniccl
    comm = infiniccl.Comm.world()          # starts MPI unless already started
    x = np.full(4, comm.rank, np.float32)
    comm.all_reduce(x, op="sum")           # in place: no output given

A thin layer over libinfiniccl (ctypes): it maps arrays, data types and
errors and adds no logic of its own. Arrays come through the buffer protocol
(NumPy, bytearray), __cuda_array_interface__ (CuPy, Numba, PyTorch CUDA) or
DLPack (PyTorch, JAX). Every argument error is raised before any MPI call.
"""
__version__ = "0.1.0"  # the package version: CMake's project(VERSION), checked by ctest
import atexit as _atexit
import contextlib as _contextlib
import ctypes as _ctypes
import operator as _operator
import threading as _threading

from . import _buffers
from ._buffers import ArgumentError as _ArgumentError
from ._loader import StagingStats as _StagingStats
from ._loader import load as _load

__all__ = ["Comm", "Error", "Source", "init", "finalize", "group", "staging_stats",
           "version", "device_runtimes", "library_path", "mem_trim", "ANY_SOURCE",
           "TAG_MAX"]

_lib, _lib_path = _load()
_AllReduce = _lib.infinicclAllReduce
_addressof = _ctypes.addressof
_c_char = _ctypes.c_char
_NP_DTYPES = _buffers._NP_DTYPES
try:
    from numpy import ndarray as _ndarray
except ImportError:
    class _ndarray:  # never matches: no fast path without NumPy
        pass

# infinicclResult_t
SUCCESS, UNHANDLED_ERROR, SYSTEM_ERROR, INTERNAL_ERROR = 0, 1, 2, 3
INVALID_ARGUMENT, INVALID_USAGE, REMOTE_ERROR, IN_PROGRESS, NOT_SUPPORTED = 4, 5, 6, 7, 8
# infinicclRedOp_t; "band", "bor" and "bxor" take integer types only.
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4, "band": 5, "bor": 6, "bxor": 7}
# Comm.recv's peer for a message from any rank (INFINICCL_ANY_SOURCE), and
# the largest tag of Comm.send/Comm.recv (INFINICCL_TAG_MAX).
ANY_SOURCE = -1
TAG_MAX = 0xFFFFFF


def library_path():
    """The path of the libinfiniccl that was loaded."""
    return _lib_path


class Error(RuntimeError):
    """A failed call: `code` is the C result code (infiniccl.INVALID_ARGUMENT,
    ...), `message` the library's message (infinicclGetLastError)."""

    def __init__(self, code, message):
        self.code = code
        self.message = message
        name = _lib.infinicclGetErrorString(code).decode()
        super().__init__("%s (%s, code %d)" % (message, name, code))


def _check(rc, comm_handle=None):
    if rc != 0:
        msg = _lib.infinicclGetLastError(comm_handle) or b""
        raise Error(rc, msg.decode(errors="replace"))


def _arg_error(message):
    return Error(INVALID_ARGUMENT, message)


_state = {"initialized": False}


def init():
    """Starts MPI (MPI_Init_thread, MULTIPLE requested) unless it already runs
    (mpi4py, say). Idempotent; infiniccl.finalize() runs at exit."""
    if not _state["initialized"]:
        _check(_lib.infinicclInit(None, None))
        _state["initialized"] = True
        _atexit.register(finalize)


def finalize():
    """Finalises the library, and MPI if init() started it."""
    if _state["initialized"]:
        _state["initialized"] = False
        _check(_lib.infinicclFinalize())


def version():
    """(major, minor, patch) of the loaded library."""
    v = _ctypes.c_int()
    _check(_lib.infinicclGetVersion(_ctypes.byref(v)))
    return (v.value // 10000, v.value // 100 % 100, v.value % 100)


def device_runtimes():
    """The device runtimes the loaded library was built with
    (infinicclGetDeviceRuntimes), in its order: ["cpu", ..., "sim"]."""
    buf = _ctypes.create_string_buffer(128)  # INFINICCL_DEVICE_RUNTIMES_BYTES
    _check(_lib.infinicclGetDeviceRuntimes(buf, len(buf)))
    return buf.value.decode().split(",")


def staging_stats():
    """The host staging counters (infinicclGetStagingStats) as a dict."""
    s = _StagingStats()
    _check(_lib.infinicclGetStagingStats(_ctypes.byref(s)))
    return {name: getattr(s, name) for name, _ in _StagingStats._fields_}


def mem_trim():
    """Frees idle host staging memory now (infinicclMemTrim)."""
    _check(_lib.infinicclMemTrim())


# Buffers of Send/Recv posted inside a group are used until the outermost
# GroupEnd: their owners (and DLPack capsules) are held until then.
_tls = _threading.local()


def _group_keep():
    keep = getattr(_tls, "keep", None)
    return keep if getattr(_tls, "depth", 0) > 0 else None


@_contextlib.contextmanager
def group():
    """`with infiniccl.group():` around send/recv (and collectives): NCCL's
    group semantics; the sends and receives complete when the block ends."""
    _check(_lib.infinicclGroupStart())
    depth = getattr(_tls, "depth", 0)
    if depth == 0:
        _tls.keep = []
    _tls.depth = depth + 1
    try:
        yield
    finally:
        # GroupEnd even when the block raised: posted operations must
        # complete, or peers waiting on them would hang.
        _tls.depth = depth
        rc = _lib.infinicclGroupEnd()
        if depth == 0:
            _tls.keep = None
        if rc != 0:
            exc = Error(rc, (_lib.infinicclGetLastError(None) or b"").decode())
            import sys

            if sys.exc_info()[0] is None:
                raise exc


def _stream_handle(stream):
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, others
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h or None
    return int(stream) or None


def _torch_stream(obj):
    """The current PyTorch stream of a CUDA tensor's device (torch's own
    convention when no stream is named)."""
    if type(obj).__module__.startswith("torch") and getattr(obj, "is_cuda", False):
        import torch

        return torch.cuda.current_stream(obj.device).cuda_stream or None
    return None


def _resolve(obj, dtype, what, writable):
    try:
        b = _buffers.resolve(obj, dtype, what)
    except _ArgumentError as e:
        raise _arg_error(str(e)) from None
    if writable and b.readonly:
        raise _arg_error("%s is read-only; the result is written into it" % what)
    return b


def _pick_stream(stream, *bufs):
    if stream is not None:
        return _stream_handle(stream)
    for b in bufs:
        if b is not None and b.device:
            s = _torch_stream(b.keep if not isinstance(b.keep, tuple) else b.keep[0])
            if s is None:
                s = b.stream
            return s
    return None


def _same_type(a, b):
    if a.code != b.code:
        raise _arg_error("%s is %s but %s is %s: both must have the same data type" %
                         (a.what, _buffers.CODE_NAMES[a.code], b.what,
                          _buffers.CODE_NAMES[b.code]))


def _same_length(b, o):
    """out (o) must be like x (b): same data type and length."""
    _same_type(b, o)
    if o.count != b.count:
        raise _arg_error("out has %d elements but x has %d" % (o.count, b.count))


def _op(op):
    code = _OPS.get(op)
    if code is None:
        raise _arg_error("op=%r is not one of %s" % (op, ", ".join(repr(o) for o in _OPS)))
    return code


class Source:
    """Where Comm.recv(..., source=s) writes the sender's rank: s.rank, -1
    until the receive has completed (on return for host arrays outside a
    group, when the group block ends inside one, once the stream has passed
    the call for device arrays). Keep it until then."""

    __slots__ = ("_v",)

    def __init__(self):
        self._v = _ctypes.c_int(-1)

    @property
    def rank(self):
        return self._v.value

    def __repr__(self):
        return "<infiniccl.Source rank %d>" % self._v.value


class Comm:
    """A communicator. Comm.world() duplicates MPI_COMM_WORLD;
    Comm.from_mpi4py(c) duplicates an mpi4py communicator."""

    __slots__ = ("_h", "rank", "size", "__weakref__")

    def __init__(self, handle):
        self._h = handle
        r = _ctypes.c_int()
        n = _ctypes.c_int()
        _check(_lib.infinicclCommUserRank(handle, _ctypes.byref(r)), handle)
        _check(_lib.infinicclCommCount(handle, _ctypes.byref(n)), handle)
        self.rank = r.value
        self.size = n.value

    @classmethod
    def world(cls):
        init()
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommInitAll(_ctypes.byref(h), 0, None))
        return cls(h.value)

    @classmethod
    def from_mpi4py(cls, comm):
        """A communicator over the ranks of an mpi4py communicator (it is
        duplicated: `comm` may be freed afterwards). mpi4py must use the same
        MPI library as libinfiniccl."""
        init()
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommInitMpi(_ctypes.byref(h), comm.py2f()))
        return cls(h.value)

    @property
    def handle(self):
        """The C infinicclComm_t, as an int."""
        return self._h

    def _live(self):
        if self._h is None:
            raise Error(INVALID_USAGE, "the communicator was destroyed or aborted")
        return self._h

    def destroy(self):
        """Frees the communicator (infinicclCommDestroy)."""
        if self._h is not None:
            h, self._h = self._h, None
            _check(_lib.infinicclCommDestroy(h), h)

    def abort(self):
        """Gives the communicator up without the other ranks
        (infinicclCommAbort)."""
        if self._h is not None:
            h, self._h = self._h, None
            _check(_lib.infinicclCommAbort(h), h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def split(self, color, key=0):
        """NCCL's ncclCommSplit: a Comm of the ranks with the same color,
        ordered by key; None for a negative color."""
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommSplit(self._live(), int(color), int(key),
                                       _ctypes.byref(h)), self._h)
        return Comm(h.value) if h.value else None

    def revoke(self):
        """NCCL's ncclCommRevoke: this rank's pending and later calls on the
        communicator fail (RemoteError), and every rank's with an MPI that
        tolerates failures (infinicclCommRevoke). Good afterwards for
        shrink, failed_ranks, abort and destroy."""
        _check(_lib.infinicclCommRevoke(self._live(), 0), self._h)

    def failed_ranks(self):
        """The ranks known to have failed, ascending
        (infinicclCommGetFailedRanks): with an MPI that tolerates failures,
        collective over the survivors, which all get the same list."""
        n = _ctypes.c_int(0)
        _check(_lib.infinicclCommGetFailedRanks(self._live(), None, _ctypes.byref(n)),
               self._h)
        while True:
            cap = n.value
            buf = (_ctypes.c_int * max(cap, 1))()
            _check(_lib.infinicclCommGetFailedRanks(self._h, buf, _ctypes.byref(n)),
                   self._h)
            if n.value <= cap:
                return [buf[i] for i in range(n.value)]

    def shrink(self, exclude=(), abort=False):
        """NCCL's ncclCommShrink: a Comm of the ranks not in `exclude`, in
        their order (infinicclCommShrink). Called by every rank that stays,
        with the same list. abort=True (INFINICCL_SHRINK_ABORT, after a
        failure) aborts what is in flight first; the excluded ranks are then
        the failed ones (failed_ranks())."""
        ranks = [self._rank_arg("exclude", r) for r in exclude]
        arr = (_ctypes.c_int * max(len(ranks), 1))(*ranks)
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommShrink(self._live(), arr, len(ranks), _ctypes.byref(h),
                                        1 if abort else 0), self._h)
        return Comm(h.value)

    def grow(self, count, command, args=()):
        """NCCL's ncclCommGrow: a Comm of these ranks and `count` new
        processes of `command` with `args`, started by MPI (infinicclCommGrow;
        every rank calls it). A started process calls Comm.join_parent()."""
        if _operator.index(count) < 1:
            raise _arg_error("count=%r: at least 1" % (count,))
        argv = (_ctypes.c_char_p * (len(args) + 1))(*[str(a).encode() for a in args], None)
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommGrow(self._live(), int(count), str(command).encode(), argv,
                                      _ctypes.byref(h)), self._h)
        return Comm(h.value)

    @classmethod
    def join_parent(cls):
        """In a process that Comm.grow started: the grown Comm."""
        init()
        h = _ctypes.c_void_p()
        _check(_lib.infinicclCommGrow(None, 0, None, None, _ctypes.byref(h)))
        return cls(h.value)

    # ---- collectives: every check before the C call -------------------------
    def _call(self, rc, keep):
        if rc != 0:
            _check(rc, self._h)
        g = _group_keep()
        if g is not None:
            g.append(keep)

    def all_reduce(self, x, out=None, op="sum", stream=None, dtype=None):
        """Reduces x over all ranks into out (into x when out is None)."""
        # Fast path, the common small-message case: NumPy arrays, nothing
        # to convert. Same checks as the general path below, fewer calls
        # (docs/PERFORMANCE.md, "Python": per-call overhead).
        h = self._h
        if type(x) is _ndarray and stream is None and dtype is None and h is not None and \
                (out is None or type(out) is _ndarray):
            code = _NP_DTYPES.get(x.dtype)
            opc = _OPS.get(op)
            if code is not None and opc is not None and x.flags.c_contiguous:
                # ctypes' from_buffer is the cheapest way to a writable
                # array's address (about a third of __array_interface__);
                # it refuses read-only and empty arrays, which take the
                # slower way (or the general path's error).
                try:
                    sp = _addressof(_c_char.from_buffer(x))
                    ro = False
                except (TypeError, ValueError):
                    sp, ro = x.__array_interface__["data"]
                if out is None:
                    rp = sp if not ro else None
                elif out.flags.c_contiguous and _NP_DTYPES.get(out.dtype) == code and \
                        out.size == x.size:
                    try:
                        rp = _addressof(_c_char.from_buffer(out))
                    except (TypeError, ValueError):
                        rp = None
                else:
                    rp = None
                if rp is not None:
                    rc = _AllReduce(sp, rp, x.size, code, opc, h, None)
                    if rc != 0:
                        _check(rc, h)
                    if getattr(_tls, "depth", 0) > 0:
                        _tls.keep.append((x, out))
                    return x if out is None else out
        h = self._live()
        b = _resolve(x, dtype, "x", out is None)
        o = b if out is None else _resolve(out, dtype, "out", True)
        if o is not b:
            _same_length(b, o)
        opc = _op(op)
        self._call(_lib.infinicclAllReduce(b.ptr, o.ptr, b.count, b.code, opc, h,
                                           _pick_stream(stream, b, o)), (b, o))
        return x if out is None else out

    def broadcast(self, x, out=None, root=0, stream=None, dtype=None):
        """Root's x to every rank's out (x when out is None)."""
        h = self._live()
        root = self._rank_arg("root", root)
        b = _resolve(x, dtype, "x", out is None)
        o = b if out is None else _resolve(out, dtype, "out", True)
        if o is not b:
            _same_length(b, o)
        self._call(_lib.infinicclBroadcast(b.ptr, o.ptr, b.count, b.code, root, h,
                                           _pick_stream(stream, b, o)), (b, o))
        return x if out is None else out

    def reduce(self, x, out=None, op="sum", root=0, stream=None, dtype=None):
        """Reduces x over all ranks into the root's out (its x when out is
        None); out is not used on other ranks."""
        h = self._live()
        root = self._rank_arg("root", root)
        at_root = self.rank == root
        b = _resolve(x, dtype, "x", out is None and at_root)
        o = b
        if out is not None and at_root:
            o = _resolve(out, dtype, "out", True)
            _same_length(b, o)
        opc = _op(op)
        self._call(_lib.infinicclReduce(b.ptr, o.ptr, b.count, b.code, opc, root, h,
                                        _pick_stream(stream, b, o)), (b, o))
        return x if out is None or not at_root else out

    def all_gather(self, x, out=None, stream=None, dtype=None):
        """Every rank's x, in rank order, into out (size * len(x) elements).
        In place when out is None: x holds size blocks and this rank's is
        block `rank`."""
        h = self._live()
        if out is None:
            b = _resolve(x, dtype, "x", True)
            n, send = self._block_at(b, self.rank)
            rc = _lib.infinicclAllGather(send, b.ptr, n, b.code, h, _pick_stream(stream, b))
            self._call(rc, (b,))
            return x
        b = _resolve(x, dtype, "x", False)
        o = _resolve(out, dtype, "out", True)
        self._size_blocks(b, o, "all_gather", o)
        self._call(_lib.infinicclAllGather(b.ptr, o.ptr, b.count, b.code, h,
                                           _pick_stream(stream, b, o)), (b, o))
        return out

    def reduce_scatter(self, x, out=None, op="sum", stream=None, dtype=None):
        """Reduces x (size blocks) over all ranks; rank r gets block r in out.
        In place when out is None: the result is block `rank` of x."""
        h = self._live()
        opc = _op(op)
        if out is None:
            b = _resolve(x, dtype, "x", True)
            n, recv = self._block_at(b, self.rank)
            rc = _lib.infinicclReduceScatter(b.ptr, recv, n, b.code, opc, h,
                                             _pick_stream(stream, b))
            self._call(rc, (b,))
            return x
        b = _resolve(x, dtype, "x", False)
        o = _resolve(out, dtype, "out", True)
        self._size_blocks(b, o, "reduce_scatter", b)
        self._call(_lib.infinicclReduceScatter(b.ptr, o.ptr, o.count, b.code, opc, h,
                                               _pick_stream(stream, b, o)), (b, o))
        return out

    def all_to_all(self, x, out=None, stream=None, dtype=None):
        """Block j of x goes to rank j, landing in block `rank` of its out (of
        its x when out is None)."""
        h = self._live()
        b = _resolve(x, dtype, "x", out is None)
        n = self._blocks(b, "x")
        o = b if out is None else _resolve(out, dtype, "out", True)
        if o is not b:
            _same_length(b, o)
        self._call(_lib.infinicclAllToAll(b.ptr, o.ptr, n, b.code, h,
                                          _pick_stream(stream, b, o)), (b, o))
        return x if out is None else out

    def gather(self, x, out=None, root=0, stream=None, dtype=None):
        """Every rank's x into the root's out (size * len(x) elements). At the
        root without out, x holds size blocks and the root's own is block
        `root` (in place)."""
        h = self._live()
        root = self._rank_arg("root", root)
        at_root = self.rank == root
        if at_root and out is None:
            b = _resolve(x, dtype, "x", True)
            n, send = self._block_at(b, root)
            rc = _lib.infinicclGather(send, b.ptr, n, b.code, root, h,
                                      _pick_stream(stream, b))
            self._call(rc, (b,))
            return x
        b = _resolve(x, dtype, "x", False)
        o = None
        if at_root:
            o = _resolve(out, dtype, "out", True)
            self._size_blocks(b, o, "gather", o)
        self._call(_lib.infinicclGather(b.ptr, o.ptr if o else None, b.count, b.code, root,
                                        h, _pick_stream(stream, b, o)), (b, o))
        return out if at_root else None

    def scatter(self, x, out=None, root=0, stream=None, dtype=None):
        """Block r of the root's x (size blocks) to rank r's out. Without out,
        the root keeps its block in place and other ranks receive into x."""
        h = self._live()
        root = self._rank_arg("root", root)
        at_root = self.rank == root
        if out is None:
            b = _resolve(x, dtype, "x", True)
            if at_root:
                n, recv = self._block_at(b, root)
                rc = _lib.infinicclScatter(b.ptr, recv, n, b.code, root, h,
                                           _pick_stream(stream, b))
            else:
                rc = _lib.infinicclScatter(None, b.ptr, b.count, b.code, root, h,
                                           _pick_stream(stream, b))
            self._call(rc, (b,))
            return x
        o = _resolve(out, dtype, "out", True)
        b = None
        if at_root:
            b = _resolve(x, dtype, "x", False)
            self._size_blocks(b, o, "scatter", b)
        self._call(_lib.infinicclScatter(b.ptr if b else None, o.ptr, o.count, o.code, root,
                                         h, _pick_stream(stream, b, o)), (b, o))
        return out

    def send(self, x, peer, stream=None, dtype=None, tag=0):
        """Sends x to `peer` with tag `tag` (0..TAG_MAX; it matches only a
        recv of the same tag, tag 0 plain Send/Recv's). Completes at the end
        of a group block."""
        h = self._live()
        peer = self._rank_arg("peer", peer)
        tag = self._tag_arg(tag)
        b = _resolve(x, dtype, "x", False)
        s = _pick_stream(stream, b)
        if tag == 0:
            rc = _lib.infinicclSend(b.ptr, b.count, b.code, peer, h, s)
        else:
            rc = _lib.infinicclSendTagged(b.ptr, b.count, b.code, peer, tag, h, s)
        self._call(rc, (b,))

    def recv(self, x, peer, stream=None, dtype=None, tag=0, source=None):
        """Receives len(x) elements of tag `tag` from `peer` into x; peer
        ANY_SOURCE takes the first matching message from any rank. `source`,
        a Source, receives the sender's rank (see Source for when)."""
        h = self._live()
        try:
            any_source = _operator.index(peer) == ANY_SOURCE
        except TypeError:
            any_source = False
        peer = ANY_SOURCE if any_source else self._rank_arg("peer", peer)
        tag = self._tag_arg(tag)
        if source is not None and not isinstance(source, Source):
            raise _arg_error("source=%r is not an infiniccl.Source" % (source,))
        b = _resolve(x, dtype, "x", True)
        s = _pick_stream(stream, b)
        if tag == 0 and peer != ANY_SOURCE and source is None:
            rc = _lib.infinicclRecv(b.ptr, b.count, b.code, peer, h, s)
        else:
            where = _ctypes.byref(source._v) if source is not None else None
            rc = _lib.infinicclRecvTagged(b.ptr, b.count, b.code, peer, tag, where, h, s)
        self._call(rc, (b, source))
        return x

    # ---- argument checks ----------------------------------------------------
    @staticmethod
    def _tag_arg(tag):
        """tag as an int, checked to be 0..TAG_MAX."""
        try:
            t = _operator.index(tag)
        except TypeError:
            t = -1
        if not 0 <= t <= TAG_MAX:
            raise _arg_error("tag=%r is not a tag (0..TAG_MAX, %d)" % (tag, TAG_MAX))
        return t

    def _rank_arg(self, name, r):
        """r as an int (NumPy integers too), checked to be a rank here."""
        try:
            i = _operator.index(r)
        except TypeError:
            i = -1
        if not 0 <= i < self.size:
            raise _arg_error("%s=%r is not a rank of this communicator (size %d)" %
                             (name, r, self.size))
        return i

    def _block_at(self, b, k):
        """x (b) as size blocks: their length and where block k starts."""
        n = self._blocks(b, "x")
        return n, b.ptr + k * n * b.itemsize

    def _size_blocks(self, b, o, name, whole):
        """x (b) and out (o) of one type, `whole` of them size blocks of the other."""
        _same_type(b, o)
        if whole is o and o.count != b.count * self.size:
            raise _arg_error("out has %d elements; %s needs size (%d) x %d" %
                             (o.count, name, self.size, b.count))
        if whole is b and b.count != o.count * self.size:
            raise _arg_error("x has %d elements; %s needs size (%d) x len(out) (%d)" %
                             (b.count, name, self.size, o.count))

    def _blocks(self, b, what):
        if b.count % self.size != 0:
            raise _arg_error("%s has %d elements, not a multiple of the communicator size "
                             "(%d)" % (what, b.count, self.size))
        return b.count // self.size

    def __repr__(self):
        return "<infiniccl.Comm rank %d of %d>" % (self.rank, self.size)
