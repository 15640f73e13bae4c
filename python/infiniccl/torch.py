"""torch.distributed backend "infiniccl".

    import infiniccl.torch                  # registers the backend
    torch.distributed.init_process_group("infiniccl")

Launch with mpirun or icclrun (the world comes from MPI; RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT are set when missing, so scripts
written for torchrun run unchanged). Under torchrun or mp.spawn without
MPI, the ranks of one node share a communicator of the node's shared memory
(every collective and send/recv); ranks on several nodes need a native CCL
on every rank, or else creating the group raises an error naming the fix.

CPU all_reduce (DDP's gradient buckets) runs on one background thread per
process group, in the order the calls were made, so backward goes on while
a bucket is reduced (as gloo's threads do); the returned Work completes
when the thread is done and wait() blocks until then. Small calls
(_INLINE_BYTES) and calls through torch.distributed's own functions without
async_op run in the caller's thread once the group's earlier calls are done:
same order, errors raised by the call. Every other operation, and device
tensors, run in the caller's thread after the group's queued calls (see
_drain): device tensors are ordered on the current stream (their futures
are CUDA-aware). Sends and receives of CPU tensors are posted into a
library group the caller's thread keeps open, and complete together when
one of them is waited for (see "point to point" below). Library errors are infiniccl.Error, a RuntimeError
carrying the library's message; on the background thread they fail that
call's future and every later call of the group (torch 1.13's Work.wait()
does not raise a future's error, so the next call does).
"""
import ctypes as _ctypes
import os
import queue as _queue
import socket
import sys
import threading as _threading

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as _c10d_py
from torch._C import _distributed_c10d as _c10d

import infiniccl as _ic
from infiniccl import _buffers as _b
from infiniccl import _loader

__all__ = ["BACKEND", "ProcessGroupInfiniCCL", "backend_kind", "under_mpi"]

BACKEND = "infiniccl"
_lib = _ic._lib
_check = _ic._check
_Error = _ic.Error

# torch dtype -> library type. bool travels as uint8 (its reductions are
# logical: see _BOOL_OPS), complex as pairs of its real type.
_CODES = {torch.int8: _b.INT8, torch.int16: _b.INT16, torch.int32: _b.INT32,
          torch.int64: _b.INT64, torch.uint8: _b.UINT8, torch.float16: _b.FLOAT16,
          torch.bfloat16: _b.BFLOAT16, torch.float32: _b.FLOAT32,
          torch.float64: _b.FLOAT64, torch.bool: _b.UINT8}
for _n in ("uint16", "uint32", "uint64"):  # torch 2.3+
    if isinstance(getattr(torch, _n, None), torch.dtype):
        _CODES[getattr(torch, _n)] = _b.DTYPE_NAMES[_n]
_COMPLEX = {torch.complex64: _b.FLOAT32, torch.complex128: _b.FLOAT64}

_R = _c10d.ReduceOp.RedOpType
_SUM, _AVG = 0, 4
_OPS = {_R.SUM: 0, _R.PRODUCT: 1, _R.MAX: 2, _R.MIN: 3, _R.AVG: 4}
# BAND, BOR, BXOR: the library's bitwise ops, for integer and bool tensors
# only (on other tensors _red raises before any library call).
_BITWISE = {_R.BAND: 5, _R.BOR: 6, _R.BXOR: 7}
_INT_OPS = dict(_OPS)
_INT_OPS.update(_BITWISE)
_BOOL_OPS = {_R.SUM: 2, _R.MAX: 2, _R.PRODUCT: 3, _R.MIN: 3}
_BOOL_OPS.update(_BITWISE)
_INTEGER = frozenset(d for d in _CODES if not d.is_floating_point and d is not torch.bool)

_AllReduce = _lib.infinicclAllReduce
_Future = torch._C.Future  # torch.futures.Future's base: the same object, 1.5 us less
_create_work = getattr(_c10d, "_create_work_from_future", None)
_Base = getattr(_c10d, "Backend", None) or dist.ProcessGroup  # torch 2.x: Backend

# Launchers whose processes are one MPI job (the variable is set per process).
_MPI_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
             "MV2_COMM_WORLD_SIZE", "PALS_RANKID", "FLUX_TASK_RANK", "MPT_LRANK")
_LOCAL_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
               "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "FLUX_TASK_LOCAL_ID", "MPT_LRANK",
               "SLURM_LOCALID")
_LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")


def under_mpi():
    """Whether this process was started by an MPI launcher (mpirun, icclrun)."""
    return any(v in os.environ for v in _MPI_VARS)


def _error(code, message):
    return _Error(code, "infiniccl (torch.distributed): " + message)


def _arg_error(message):
    return _error(_ic.INVALID_ARGUMENT, message)


# ---- the world --------------------------------------------------------------
_world = [None]


def _world_comm():
    if _world[0] is None:
        _world[0] = _ic.Comm.world()
    return _world[0]


def _slurm_tasks_here(env):
    """This node's task count under srun: SLURM_STEP_TASKS_PER_NODE (or
    SLURM_TASKS_PER_NODE), e.g. "2(x3),1" (nodes 0-2 run 2, node 3 runs 1),
    at SLURM_NODEID; None when they do not say."""
    spec = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
    try:
        node = int(env.get("SLURM_NODEID", "0"))
        counts = []
        for part in spec.split(","):
            n, _, times = part.partition("(x")
            counts += [int(n)] * (int(times.rstrip(")")) if times else 1)
        return str(counts[node])
    except (AttributeError, ValueError, IndexError):
        return None


def _local_from_hosts(w):
    """(rank among the ranks on this host, their number), from every rank's
    host name (all_gather of 64 bytes each)."""
    mine = bytearray(64)
    name = socket.gethostname().encode()[:64]
    mine[:len(name)] = name
    every = bytearray(64 * w.size)
    w.all_gather(mine, out=every)
    hosts = [bytes(every[i * 64:(i + 1) * 64]) for i in range(w.size)]
    return hosts[:w.rank].count(bytes(mine)), hosts.count(bytes(mine))


def _set_torchrun_env():
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
    MASTER_PORT from MPI where missing (collective over the MPI world)."""
    w = _world_comm()
    env = os.environ
    env.setdefault("RANK", str(w.rank))
    env.setdefault("WORLD_SIZE", str(w.size))
    local = next((env[v] for v in _LOCAL_VARS if v in env), None)
    local_size = next((env[v] for v in _LOCAL_SIZE_VARS if v in env), None)
    if local_size is None and "SLURM_LOCALID" in env:  # srun
        local_size = _slurm_tasks_here(env)
    if local is None or local_size is None:
        # A launcher naming neither (PMIx alone, say): the ranks on this
        # host, from every rank's host name (collective, like the rest).
        local, local_size = _local_from_hosts(w)
    env.setdefault("LOCAL_RANK", str(local))
    env.setdefault("LOCAL_WORLD_SIZE", str(local_size))
    if "MASTER_ADDR" in env and "MASTER_PORT" in env:
        return
    # Rank 0 names its host and a free port; the others use 127.0.0.1 when on
    # the same host.
    msg = bytearray(256)
    if w.rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        text = "%s %d" % (socket.gethostname(), port)
        msg[:len(text)] = text.encode()
    w.broadcast(msg, root=0)
    host, port = msg.rstrip(b"\0").decode().split()
    env.setdefault("MASTER_ADDR", "127.0.0.1" if host == socket.gethostname() else host)
    env.setdefault("MASTER_PORT", port)


# ---- tensors ----------------------------------------------------------------
# The library's runtimes that may own memory of a torch device type: each
# vendor's torch names its GPUs "cuda" (CUDA, HIP, MACA, CoreX).
_RUNTIMES_FOR = {"cpu": ("cpu",), "cuda": ("cuda", "hip", "metax", "iluvatar"),
                 "hip": ("hip",), "sim": ("sim",), "npu": ("ascend",),
                 "mlu": ("cambricon",), "musa": ("moore",)}


def _check_runtime(dev):
    """Raises for a device whose runtime the library lacks (its memory would
    reach MPI as host memory), naming the runtimes the library has."""
    want = _RUNTIMES_FOR.get(dev.type, ())
    have = _ic.device_runtimes()
    if set(want) & set(have):
        return
    msg = ("a tensor on device %s: the infiniccl library has no device runtime for %s "
           "tensors (its runtimes: %s)" % (dev, dev.type, ", ".join(have)))
    if want:
        msg += "; %s tensors need a library built with %s" % (dev.type, " or ".join(want))
    raise _arg_error(msg)


def _stream(tensors):
    """The stream handle for the call (None on CPU), all tensors on one device."""
    dev = tensors[0].device
    for t in tensors:
        if t.device != dev:
            raise _arg_error("tensors on different devices (%s and %s) in one call" %
                             (dev, t.device))
    if dev.type == "cpu":
        return None
    _check_runtime(dev)
    if dev.type == "cuda":
        return torch.cuda.current_stream(dev).cuda_stream or None
    raise _arg_error("a tensor on device %s: infiniccl takes cpu and cuda tensors" % dev)


def _desc(t, red=None):
    """(pointer, count, library type) of a contiguous tensor; red is the
    library reduction when the call reduces."""
    code = _CODES.get(t.dtype)
    if code is not None:
        return t.data_ptr(), t.numel(), code
    if t.dtype in _COMPLEX and red in (None, _SUM, _AVG):
        return t.data_ptr(), 2 * t.numel(), _COMPLEX[t.dtype]
    if red is None:  # moved, not combined: any type travels as bytes
        return t.data_ptr(), t.numel() * t.element_size(), _b.UINT8
    raise _arg_error("%s has no InfiniCCL data type for this reduction (supported: %s)" %
                     (t.dtype, ", ".join(str(d) for d in _CODES)))


def _red(opts, t):
    op = opts.reduceOp
    k = getattr(op, "op", op)
    dt = t.dtype
    code = (_BOOL_OPS if dt is torch.bool else _INT_OPS if dt in _INTEGER else _OPS).get(k)
    if code is None:
        raise _error(_ic.NOT_SUPPORTED, "reduction %s is not supported for %s" %
                     (getattr(k, "name", k), t.dtype))
    return code


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


def _tag(tag, what):
    if not 0 <= tag <= _ic.TAG_MAX:
        raise _arg_error("%s: tag %d is not a tag of the library (0..%d)" %
                         (what, tag, _ic.TAG_MAX))
    return tag


def _same(a, b, what):
    if a.dtype != b.dtype:
        raise _arg_error("%s: %s and %s differ in data type" % (what, a.dtype, b.dtype))


# CPU all_reduce calls of at most this many bytes run in the caller's thread
# when nothing of the group is queued (the 4-byte per-call overhead; a
# background thread would add a hand-off to each).
_INLINE_BYTES = 1 << 16
_C10D_GLOBALS = vars(_c10d_py)


def _sync_caller():
    """Whether the caller's caller is torch.distributed's wrapper with
    async_op False: it calls Work.wait(), which in torch 1.13 does not raise
    a future's error, so such calls run in the caller's thread."""
    f = sys._getframe(2)
    return f.f_globals is _C10D_GLOBALS and not f.f_locals.get("async_op", True)


def _unwrap(fut):
    v = fut.value()
    if isinstance(v, BaseException):
        raise v
    return v


def _work_loop(pg, q):
    """The group's background thread: runs queued jobs in order; after a
    failure the rest fail without a library call (the ranks may no longer
    agree on what runs)."""
    while True:
        item = q.get()
        if item is None:
            return
        job, fut, result = item
        if pg._failed is None:
            try:
                job()
            except BaseException as e:  # noqa: B036  every failure reaches the future
                pg._failed = e
                result = e
        if pg._failed is not None and result is not pg._failed:
            result = _later_error(pg._failed)
        pg._finished += 1  # its library calls are done: the caller's thread may call
        fut.set_result(result)


def _later_error(err):
    return _Error(getattr(err, "code", _ic.INTERNAL_ERROR),
                  "infiniccl (torch.distributed): not run: an earlier call of this process "
                  "group failed on its background thread: %s" % (err,))


def _done(result, tensors):
    dev = tensors[0].device if tensors else None
    fut = torch.futures.Future(devices=[dev]) if dev is not None and dev.type == "cuda" \
        else _Future([])
    fut.set_result(result)
    return _create_work(fut)


class _P2PWork(_c10d.Work):
    """A send or receive posted into the group's open library group (see
    ProcessGroupInfiniCCL._p2p_post): waiting for it (wait, is_completed,
    get_future) ends that group, which completes every call posted into it.
    _source_rank() is the sender of a receive (dist.recv's return value
    without src), known once it has completed."""

    def __init__(self, pg, tensors, copyback, source=None):
        super().__init__()
        self._pg = pg
        self._tensors = tensors
        self._copyback = copyback
        self._source = source
        self._done = pg is None
        self._error = None

    def _finish(self, err):
        if err is None and self._copyback is not None:
            self._copyback[1].copy_(self._copyback[0])
        self._error = err
        self._done = True

    def _complete(self):
        if not self._done:
            self._pg._p2p_flush()
        if self._error is not None:
            raise self._error

    def wait(self, timeout=None):
        self._complete()
        return True

    def is_completed(self):
        self._complete()
        return True

    def is_success(self):
        return self._done and self._error is None

    def result(self):
        return self._tensors

    def get_future(self):
        self._complete()
        return _done(self._tensors, self._tensors).get_future()

    def _source_rank(self):
        self._complete()
        return self._source.value if isinstance(self._source, _ctypes.c_int) else self._source

    source_rank = _source_rank


class ProcessGroupInfiniCCL(_Base):
    """One library communicator; made by _create (init_process_group,
    new_group)."""

    def __init__(self, comm, rank, size):
        super().__init__(rank, size)
        self._comm = comm
        self._one = torch.zeros(1, dtype=torch.int32)
        self._batch = None  # send/recv of a batch_isend_irecv, see _end_coalescing
        self._p2p = None    # Works posted into the open library group (_p2p_post)
        self._p2p_thread = None
        # Background thread (started by the first queued call): FIFO jobs.
        self._q = None
        self._thread = None
        self._submitted = 0  # written by the caller's thread only
        self._finished = 0   # written by the background thread only
        self._last = None    # future of the last queued job
        self._failed = None  # the first exception on the background thread
        self._inline_bytes = _INLINE_BYTES  # per group (a benchmark compares)

    def _submit(self, job, tensors):
        """Queues job (library calls on CPU tensors) for the background
        thread; the returned Work completes with `tensors` when it is done,
        or fails with its exception."""
        if self._failed is not None:
            raise _later_error(self._failed)
        if self._p2p is not None:
            # Sends and receives are posted in this thread's open group: the
            # call runs here, inside it, in call order.
            self._drain()
            job()
            return _done(tensors, tensors)
        if self._thread is None:
            self._q = _queue.SimpleQueue()
            self._thread = _threading.Thread(target=_work_loop, args=(self, self._q),
                                             name="infiniccl-pg", daemon=True)
            self._thread.start()
        fut = _Future([])
        work_fut = fut.then(_unwrap)
        self._last = work_fut
        self._submitted += 1
        self._q.put((job, fut, tensors))
        return _create_work(work_fut)

    def _drain(self):
        """Waits for the queued jobs (before a call in the caller's thread:
        one order on every rank); raises if one failed."""
        if self._last is not None and not self._last.done():
            try:
                self._last.wait()  # the last job's Work: completed after the count
            except RuntimeError:
                pass  # its failure is self._failed
        if self._failed is not None:
            raise _later_error(self._failed)

    def _stop(self):
        if self._thread is not None:
            try:
                self._drain()
            finally:
                self._q.put(None)
                self._thread.join()
                self._thread = None

    def _h(self):
        return self._comm._live()

    def getBackendName(self):
        return BACKEND

    def _get_backend_name(self):
        return BACKEND

    def destroy(self):
        """Frees the communicator (destroy_process_group does) once the
        queued calls are done."""
        try:
            self._p2p_flush()
        except (_Error, RuntimeError):
            pass  # reported by the calls' Works
        try:
            self._stop()
        except _Error:
            pass  # a failed call was reported by its future and later calls
        self._comm.destroy()

    # ---- reductions ---------------------------------------------------------
    def allreduce(self, tensors, opts=None, _sync=None):
        opts = opts or _c10d.AllreduceOptions()
        h = self._comm._h
        if len(tensors) == 1 and h is not None:
            # Fast path (small messages: the per-call overhead): one
            # contiguous CPU tensor of a plain type, the checks of the
            # general path below in fewer calls.
            t = tensors[0]
            code = _CODES.get(t.dtype)
            op = _OPS.get(getattr(opts.reduceOp, "op", None))
            if t.is_cpu and code is not None and op is not None and \
                    t.dtype is not torch.bool and t.is_contiguous():
                p = t.data_ptr()
                n = t.numel()
                if self._submitted == self._finished and self._failed is None and (
                        n * t.element_size() <= self._inline_bytes or
                        (_sync_caller() if _sync is None else _sync)):
                    rc = _AllReduce(p, p, n, code, op, h, None)
                    if rc != 0:
                        _check(rc, h)
                    fut = _Future([])  # devices: none (CPU)
                    fut.set_result(tensors)
                    return _create_work(fut)

                def job():
                    rc = _AllReduce(p, p, n, code, op, h, None)
                    if rc != 0:
                        _check(rc, h)
                if _sync_caller() if _sync is None else _sync:
                    self._drain()
                    job()
                    return _done(tensors, tensors)
                return self._submit(job, tensors)
        h = self._h()
        calls = []
        for t in tensors:
            c = _contig(t)
            op = _red(opts, c)
            p, n, code = _desc(c, op)
            calls.append((t, c, p, n, code, op, _stream([c])))

        def job():
            for t, c, p, n, code, op, stream in calls:
                _check(_lib.infinicclAllReduce(p, p, n, code, op, h, stream), h)
                if c is not t:
                    t.copy_(c)
        if _sync is None:
            _sync = _sync_caller()
        if _sync or not tensors or not tensors[0].is_cpu:
            self._drain()
            job()
            return _done(tensors, tensors)
        return self._submit(job, tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        o = _c10d.AllreduceOptions()
        o.reduceOp = (opts or _c10d.AllreduceCoalescedOptions()).reduceOp
        return self.allreduce(tensors, o, _sync_caller())

    def reduce(self, tensors, opts=None):
        opts = opts or _c10d.ReduceOptions()
        h = self._h()
        root = self._peer(opts.rootRank, "root")
        for t in tensors:
            c = _contig(t)
            op = _red(opts, c)
            p, n, code = _desc(c, op)
            _check(_lib.infinicclReduce(p, p, n, code, op, root, h, _stream([c])), h)
            if c is not t and self.rank() == root:
                t.copy_(c)
        return _done(tensors, tensors)

    def _reduce_scatter_flat(self, out, flat, opts):
        h = self._h()
        o = _contig(out)
        _same(o, flat, "reduce_scatter")
        if flat.numel() != o.numel() * self.size():
            raise _arg_error("reduce_scatter: input has %d elements, output %d: the input "
                             "must be size (%d) x output" % (flat.numel(), o.numel(), self.size()))
        op = _red(opts, flat)
        p, n, code = _desc(o, op)
        q, _, _ = _desc(flat, op)
        _check(_lib.infinicclReduceScatter(q, p, n, code, op, h, _stream([o, flat])), h)
        if o is not out:
            out.copy_(o)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = opts or _c10d.ReduceScatterOptions()
        for out, ins in zip(outputs, input_lists):
            self._check_list(ins, out, "reduce_scatter input list")
            flat = torch.cat([_contig(t).view(-1) for t in ins])
            self._reduce_scatter_flat(out, flat, opts)
        return _done(outputs, outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        self._reduce_scatter_flat(output, _contig(input), opts or _c10d.ReduceScatterOptions())
        return _done([output], [output])

    # ---- data movement ------------------------------------------------------
    def broadcast(self, tensors, opts=None):
        opts = opts or _c10d.BroadcastOptions()
        h = self._h()
        root = self._peer(opts.rootRank, "root")
        for t in tensors:
            c = _contig(t)
            p, n, code = _desc(c)
            _check(_lib.infinicclBroadcast(p, p, n, code, root, h, _stream([c])), h)
            if c is not t:
                t.copy_(c)
        return _done(tensors, tensors)

    def _allgather_flat(self, flat, inp):
        h = self._h()
        x = _contig(inp)
        _same(x, flat, "allgather")
        if flat.numel() != x.numel() * self.size():
            raise _arg_error("allgather: output has %d elements, input %d: the output "
                             "must be size (%d) x input" % (flat.numel(), x.numel(), self.size()))
        p, n, code = _desc(x)
        q, _, _ = _desc(flat)
        _check(_lib.infinicclAllGather(p, q, n, code, h, _stream([x, flat])), h)

    def allgather(self, output_lists, inputs, opts=None):
        for outs, inp in zip(output_lists, inputs):
            self._check_list(outs, inp, "allgather output list")
            flat = torch.empty(inp.numel() * self.size(), dtype=inp.dtype, device=inp.device)
            self._allgather_flat(flat, inp)
            for o, piece in zip(outs, flat.chunk(self.size())):
                o.copy_(piece.view(o.shape))
        return _done(output_lists, inputs)

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        """output_lists[r][i] receives rank r's inputs[i]."""
        if len(output_lists) != self.size():
            raise _arg_error("allgather_coalesced: %d output lists for a group of %d" %
                             (len(output_lists), self.size()))
        for i, inp in enumerate(inputs):
            self.allgather([[lst[i] for lst in output_lists]], [inp])
        return _done(output_lists, inputs)

    def _allgather_base(self, output, input, opts=None):
        o = _contig(output)
        self._allgather_flat(o, input)
        if o is not output:
            output.copy_(o)
        return _done([output], [output])

    def gather(self, output_lists, inputs, opts=None):
        opts = opts or _c10d.GatherOptions()
        h = self._h()
        root = self._peer(opts.rootRank, "root")
        x = _contig(inputs[0])
        p, n, code = _desc(x)
        if self.rank() == root:
            self._check_list(output_lists[0], x, "gather list")
            flat = torch.empty(x.numel() * self.size(), dtype=x.dtype, device=x.device)
            _check(_lib.infinicclGather(p, flat.data_ptr(), n, code, root, h,
                                        _stream([x, flat])), h)
            for o, piece in zip(output_lists[0], flat.chunk(self.size())):
                o.copy_(piece.view(o.shape))
        else:
            _check(_lib.infinicclGather(p, None, n, code, root, h, _stream([x])), h)
        return _done(output_lists, inputs)

    def scatter(self, outputs, input_lists, opts=None):
        opts = opts or _c10d.ScatterOptions()
        h = self._h()
        root = self._peer(opts.rootRank, "root")
        out = outputs[0]
        o = _contig(out)
        p, n, code = _desc(o)
        if self.rank() == root:
            self._check_list(input_lists[0], o, "scatter list")
            flat = torch.cat([_contig(t).view(-1) for t in input_lists[0]])
            _check(_lib.infinicclScatter(flat.data_ptr(), p, n, code, root, h,
                                         _stream([o, flat])), h)
        else:
            _check(_lib.infinicclScatter(None, p, n, code, root, h, _stream([o])), h)
        if o is not out:
            out.copy_(o)
        return _done(outputs, outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        h = self._h()
        size = self.size()
        _same(output, input, "alltoall_base")
        if not output_split_sizes and not input_split_sizes:
            o, x = _contig(output), _contig(input)
            if x.numel() % size or o.numel() != x.numel():
                raise _arg_error("alltoall_base: input has %d elements, output %d: both must "
                                 "be the same multiple of the group size (%d)" %
                                 (x.numel(), o.numel(), size))
            p, n, code = _desc(x)
            q, _, _ = _desc(o)
            _check(_lib.infinicclAllToAll(p, q, n // size, code, h, _stream([x, o])), h)
            if o is not output:
                output.copy_(o)
            return _done([output], [output])
        # Unequal splits along dim 0: Send/Recv pairs in one group.
        x = _contig(input).view(input.shape[0] if input.dim() else 1, -1)
        o = _contig(output)
        ov = o.view(output.shape[0] if output.dim() else 1, -1)
        sends = self._split(x, input_split_sizes, "input")
        recvs = self._split(ov, output_split_sizes, "output")
        self._exchange(sends, recvs, "alltoall_base")
        if o is not output:
            output.copy_(o)
        return _done([output], [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        size = self.size()
        if len(output_tensors) != size or len(input_tensors) != size:
            raise _arg_error("alltoall: %d output and %d input tensors for a group of %d" %
                             (len(output_tensors), len(input_tensors), size))
        for o, x in zip(output_tensors, input_tensors):
            _same(o, x, "alltoall")
        outs = [_contig(t) for t in output_tensors]
        self._exchange([_contig(t) for t in input_tensors], outs, "alltoall")
        for o, t in zip(outs, output_tensors):
            if o is not t:
                t.copy_(o)
        return _done(output_tensors, output_tensors)

    def barrier(self, opts=None):
        h = self._h()
        one = self._one
        _check(_lib.infinicclAllReduce(one.data_ptr(), one.data_ptr(), 1, _b.INT32, 0, h,
                                       None), h)
        return _done([], [])

    # ---- point to point -----------------------------------------------------
    # Tags are the library's (infinicclSendTagged/RecvTagged): a recv takes
    # only a send of its tag; tag 0, torch's default, is plain Send/Recv's.
    #
    # Sends and receives of CPU tensors do not depend on the peers' order:
    # the first opens a library group (infinicclGroupStart) in the caller's
    # thread and each is posted into it (inside a group the library posts
    # host Send/Recv as MPI_Isend/MPI_Irecv and returns); calls of the group
    # made meanwhile run inside it in call order. Waiting for one of them
    # ends the group (infinicclGroupEnd, which waits for every call posted
    # into it). So `irecv(left); isend(right); wait()` in a ring, and isend
    # then a blocking recv, complete at any size; posted in call order by one
    # thread, messages between two ranks keep MPI's non-overtaking order. The
    # library has no request to wait for one call of a group alone, so a
    # wait completes every call posted before it. Device tensors are queued
    # on the stream by the library (after the open group has completed).
    def _p2p_post(self, c):
        """Before posting a call on tensor c: opens the group (CPU), or
        completes it (a device tensor runs outside it)."""
        if self._batch is not None:
            return
        if not c.is_cpu:
            self._p2p_flush()
            return
        if self._p2p is None:
            _check(_lib.infinicclGroupStart())
            self._p2p = []
            self._p2p_thread = _threading.get_ident()

    def _p2p_flush(self):
        """Ends the open group: completes the Works posted into it."""
        pending = self._p2p
        if pending is None:
            return
        if _threading.get_ident() != self._p2p_thread:
            raise _Error(_ic.INVALID_USAGE,
                         "infiniccl (torch.distributed): a send or receive is waited for on "
                         "another thread than the one that posted it: the library's group "
                         "belongs to that thread")
        self._p2p = None
        rc = _lib.infinicclGroupEnd()
        err = None if rc == 0 else _Error(rc, (_lib.infinicclGetLastError(None) or b"").decode())
        for w in pending:
            w._finish(err if w._error is None else w._error)

    def _posted(self, rc, h, tensors, copyback, source=None):
        """The Work of a call posted with return code rc."""
        err = None
        if rc != 0:
            try:
                _check(rc, h)
            except _Error as e:
                err = e
        batch = self._batch
        if batch is not None:
            if err is not None:
                raise err
            fut = torch.futures.Future()
            batch.append((fut, tensors, None, copyback))
            return _create_work(fut)
        if self._p2p is None:  # a device tensor: queued on the stream
            if err is not None:
                raise err
            w = _P2PWork(None, tensors, None, source)
            if copyback:
                copyback[1].copy_(copyback[0])
            return w
        w = _P2PWork(self, tensors, copyback, source)
        w._error = err  # the library left a failed call out of the group
        self._p2p.append(w)
        return w

    def send(self, tensors, dst, tag=0):
        h = self._h()
        dst = self._peer(dst, "dst")
        tag = _tag(tag, "send")
        t = _contig(tensors[0])
        p, n, code = _desc(t)
        self._p2p_post(t)
        rc = _lib.infinicclSendTagged(p, n, code, dst, tag, h, _stream([t]))
        return self._posted(rc, h, [t], None)

    def recv(self, tensors, src, tag=0):
        h = self._h()
        src = self._peer(src, "src")
        tag = _tag(tag, "recv")
        t = tensors[0]
        c = _contig(t)
        p, n, code = _desc(c)
        self._p2p_post(c)
        rc = _lib.infinicclRecvTagged(p, n, code, src, tag, None, h, _stream([c]))
        return self._posted(rc, h, tensors, (c, t) if c is not t else None)

    def recv_anysource(self, tensors, tag=0):
        """recv without src: the first message of `tag` from any rank; the
        Work's _source_rank() is its sender. Device tensors: waits for the
        stream, so that the sender is known with the Work."""
        h = self._h()
        tag = _tag(tag, "recv")
        if self._batch is not None:
            raise _arg_error("batch_isend_irecv: a receive without a peer (from any source) "
                             "cannot be batched: the batch's Work could not report its "
                             "sender")
        t = tensors[0]
        c = _contig(t)
        p, n, code = _desc(c)
        source = _ctypes.c_int(-1)
        self._p2p_post(c)
        rc = _lib.infinicclRecvTagged(p, n, code, _ic.ANY_SOURCE, tag, _ctypes.byref(source),
                                      h, _stream([c]))
        if rc == 0 and c.is_cuda:
            torch.cuda.current_stream(c.device).synchronize()
        return self._posted(rc, h, tensors, (c, t) if c is not t else None, source)

    def _start_coalescing(self, *device):
        """batch_isend_irecv: its sends and receives are posted in one
        library group and complete together when it ends (the open group of
        earlier sends and receives completes first)."""
        self._p2p_flush()
        _check(_lib.infinicclGroupStart())
        self._batch = []

    def _end_coalescing(self, *args):
        batch, self._batch = self._batch or [], None
        rc = _lib.infinicclGroupEnd()
        err = None if rc == 0 else _Error(rc, (_lib.infinicclGetLastError(None) or b"").decode())
        for fut, tensors, keep, copyback in batch:
            if err is not None:
                fut.set_exception(err)
                continue
            if copyback:
                copyback[1].copy_(copyback[0])
            fut.set_result(tensors)
        if err is not None:
            raise err

    # ---- helpers --------------------------------------------------------------
    def _peer(self, r, name):
        if not 0 <= r < self.size():
            raise _arg_error("%s=%d is not a rank of the group (size %d)" % (name, r, self.size()))
        return r

    def _check_list(self, lst, like, what):
        if len(lst) != self.size():
            raise _arg_error("%s has %d tensors for a group of %d" %
                             (what, len(lst), self.size()))
        for t in lst:
            _same(t, like, what)
            if t.numel() != like.numel():
                raise _arg_error("%s: a tensor of %d elements where %d are expected" %
                                 (what, t.numel(), like.numel()))

    def _split(self, t2d, splits, what):
        size = self.size()
        rows = t2d.shape[0]
        if not splits:
            if rows % size:
                raise _arg_error("alltoall_base: %s has %d rows, not a multiple of the group "
                                 "size (%d), and no split sizes" % (what, rows, size))
            splits = [rows // size] * size
        if len(splits) != size or sum(splits) != rows or min(splits) < 0:
            raise _arg_error("alltoall_base: %s split sizes %s do not split its %d rows among "
                             "%d ranks" % (what, list(splits), rows, size))
        return list(t2d.split(list(splits)))

    def _exchange(self, sends, recvs, what):
        """sends[j] to rank j into its recvs[me]: element counts checked across
        ranks first (one AllToAll and one AllReduce), so a mismatch raises on
        every rank instead of truncating or hanging."""
        h = self._h()
        size, me = self.size(), self.rank()
        counts = torch.tensor([t.numel() for t in sends], dtype=torch.int64)
        got = torch.empty(size, dtype=torch.int64)
        _check(_lib.infinicclAllToAll(counts.data_ptr(), got.data_ptr(), 1, _b.INT64, h, None), h)
        want = [t.numel() for t in recvs]
        bad = torch.tensor([int(got.tolist() != want)], dtype=torch.int32)
        _check(_lib.infinicclAllReduce(bad.data_ptr(), bad.data_ptr(), 1, _b.INT32, 2, h, None), h)
        if bad.item():
            raise _arg_error("%s: the ranks' split sizes disagree (this rank receives %s "
                             "elements from ranks 0..%d, they send %s)" %
                             (what, want, size - 1, got.tolist()))
        stream = _stream(list(sends) + list(recvs))
        self._p2p_flush()  # a nested group would end with the open one
        with _ic.group():
            for j in range(size):
                if j == me:
                    recvs[j].copy_(sends[j].view(recvs[j].shape))
                    continue
                if sends[j].numel():
                    p, n, code = _desc(sends[j])
                    _check(_lib.infinicclSend(p, n, code, j, h, stream), h)
                if recvs[j].numel():
                    p, n, code = _desc(recvs[j])
                    _check(_lib.infinicclRecv(p, n, code, j, h, stream), h)


def _after_queued(method):
    """The method runs in the caller's thread after the group's queued calls."""
    def run(self, *args, **kwargs):
        if self._submitted != self._finished or self._failed is not None:
            self._drain()
        return method(self, *args, **kwargs)
    run.__name__, run.__qualname__, run.__doc__ = method.__name__, method.__qualname__, \
        method.__doc__
    return run


for _name in ("reduce", "reduce_scatter", "_reduce_scatter_base", "broadcast", "allgather",
              "allgather_coalesced", "_allgather_base", "gather", "scatter", "alltoall_base",
              "alltoall", "barrier", "send", "recv", "recv_anysource", "_start_coalescing"):
    setattr(ProcessGroupInfiniCCL, _name, _after_queued(getattr(ProcessGroupInfiniCCL, _name)))


# ---- creation -------------------------------------------------------------------
class _UniqueId(_ctypes.Structure):
    _fields_ = [("internal", _ctypes.c_char * 128)]  # INFINICCL_UNIQUE_ID_BYTES


_LAUNCH_HINT = ("%s. Launch with `icclrun -n N python SCRIPT` or `mpirun -n N python "
                "SCRIPT`: the script runs unchanged (RANK, WORLD_SIZE, LOCAL_RANK, "
                "MASTER_ADDR and MASTER_PORT are set for it)")


def _bootstrap_comm(store, rank, size):
    """Without MPI (torchrun, mp.spawn): a communicator made through the
    library's bootstrap, its unique id passed through torch's store, as
    ProcessGroupNCCL passes NCCL's. On one node its calls go through the
    node's shared memory; across nodes through the native CCL, where every
    rank has one."""
    # torchrun keeps one store across restarts, and torch names a group's
    # keys alike in every attempt: an id left by an earlier attempt (or an
    # earlier group of the same name) would send a rank to a rendezvous
    # that is gone. So the key names the attempt, and rank 0 deletes it
    # once every rank has joined (below).
    key = "infiniccl_unique_id"
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt:
        key += "_attempt_" + attempt
    uid = _UniqueId()
    if rank == 0:
        rc = _lib.infinicclGetUniqueId(_ctypes.byref(uid))
        why = (_lib.infinicclGetLastError(None) or b"").decode(errors="replace")
        store.set(key, b"ok:" + _ctypes.string_at(_ctypes.addressof(uid), 128) if rc == 0
                  else b"no:" + why.encode())
    value = bytes(store.get(key))
    if value[:3] != b"ok:":
        # Every rank reads the answer before rank 0 (the store's server)
        # raises and exits, so each raises this error, not a broken pipe.
        store.add(key + "_read", 1)
        if rank == 0:
            import time
            deadline = time.monotonic() + 60
            while store.add(key + "_read", 0) < size and time.monotonic() < deadline:
                time.sleep(0.01)
        raise _error(_ic.NOT_SUPPORTED, _LAUNCH_HINT % value[3:].decode(errors="replace"))
    _ctypes.memmove(_ctypes.addressof(uid), value[3:], 128)
    h = _ctypes.c_void_p()
    rc = _lib.infinicclCommInitRank(_ctypes.byref(h), size, uid, rank)
    if rc == _ic.INVALID_USAGE:
        # Every rank gets this verdict from the bootstrap, at once.
        raise _error(rc, _LAUNCH_HINT % (_lib.infinicclGetLastError(None) or b"").decode(
            errors="replace"))
    _check(rc)
    if rank == 0:
        # Every rank has read the id (they joined through it).
        try:
            store.delete_key(key)
        except (AttributeError, RuntimeError, NotImplementedError):
            pass  # a store without deletion (torch 1.13's FileStore)
    return _ic.Comm(h.value)


def _comm_of(opts):
    """(communicator, rank, size) for a group torch creates."""
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    ranks = list(getattr(opts, "global_ranks_in_group", None) or [])
    if not under_mpi() and size > 1:
        return _bootstrap_comm(store, rank, size), rank, size
    world = _world_comm()
    if not ranks:  # the default group: the whole MPI world
        if (rank, size) != (world.rank, world.size):
            raise _error(_ic.INVALID_ARGUMENT,
                         "init_process_group(rank=%d, world_size=%d) but MPI says rank %d of "
                         "%d: start %d processes with mpirun/icclrun -n %d, or leave rank and "
                         "world_size (and RANK, WORLD_SIZE) unset" %
                         (rank, size, world.rank, world.size, size, size))
        ranks = list(range(world.size))
    if len(ranks) != size or ranks[rank] != world.rank:
        raise _arg_error("group of ranks %s: this process (MPI rank %d) is not rank %d of it" %
                         (ranks, world.rank, rank))
    arr = (_ctypes.c_int * size)(*ranks)
    h = _ctypes.c_void_p()
    _check(_lib.infinicclCommInitRanks(world.handle, size, arr, _ctypes.byref(h)), world.handle)
    return _ic.Comm(h.value), rank, size


def _create(opts, pg_options=None):
    comm, rank, size = _comm_of(opts)
    return ProcessGroupInfiniCCL(comm, rank, size)


def _create_cpp(opts, pg_options=None):
    """torch 2.x with infiniccl._c10d: the C++ backend, which owns the
    communicator from here on and is bounded by the group's timeout."""
    comm, rank, size = _comm_of(opts)
    timeout = getattr(opts, "timeout", None)
    timeout_ms = int(timeout.total_seconds() * 1000) if timeout is not None else 0
    ranks = list(getattr(opts, "global_ranks_in_group", None) or range(size))
    name = str(getattr(opts, "group_id", "") or "default")
    return _cpp.Backend(comm.handle, rank, size, timeout_ms, name, ranks,
                        getattr(opts, "store", None))


def _declare():
    c = _ctypes
    _lib.infinicclGetUniqueId.restype = c.c_int
    _lib.infinicclGetUniqueId.argtypes = [c.c_void_p]
    _lib.infinicclCommInitRank.restype = c.c_int
    _lib.infinicclCommInitRank.argtypes = [c.POINTER(c.c_void_p), c.c_int, _UniqueId, c.c_int]


def _load_cpp():
    """infiniccl._c10d (the C++ backend) on torch 2.7+, checked against the
    torch it was built for (_loader.load_torch_backend: ImportError naming
    the pip command when it is missing or built for another torch); None on
    torch 1.x and below 2.7, or with INFINICCL_TORCH_BACKEND=python."""
    choice = os.environ.get("INFINICCL_TORCH_BACKEND", "auto")
    if getattr(_c10d, "Backend", None) is None:
        if choice == "cpp":
            raise ImportError("INFINICCL_TORCH_BACKEND=cpp but torch %s has no c10d Backend "
                              "class: the C++ backend needs torch %d.%d or later" %
                              ((torch.__version__,) + _loader.TORCH_CPP_MIN))
        return None
    return _loader.load_torch_backend(torch.__version__, choice)


_cpp = _load_cpp()


def _devices():
    devices = ["cpu", "cuda"]
    name = getattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")()
    if name != "privateuseone":  # renamed by a device plugin (npu, mlu, ...)
        devices.append(name)
    return devices


def _register():
    if _create_work is None:
        raise ImportError("infiniccl.torch needs torch._C._distributed_c10d."
                          "_create_work_from_future (torch 1.13 or later)")
    if BACKEND.upper() in dist.Backend._plugins:
        return
    creator = _create if _cpp is None else _create_cpp
    try:
        dist.Backend.register_backend(BACKEND, creator, extended_api=True,
                                      devices=_devices())
    except TypeError:  # torch < 2.1: no devices
        dist.Backend.register_backend(BACKEND, creator, extended_api=True)


def backend_kind():
    """"cpp" when init_process_group("infiniccl") makes the C++ backend
    (infiniccl._c10d), "python" for the Python ProcessGroup."""
    return "python" if _cpp is None else "cpp"


# destroy_process_group frees the communicators of the groups it drops.
_destroy = _c10d_py.destroy_process_group


def _groups():
    """torch's map of live groups (1.13: _pg_map; 2.x: _world.pg_map, whose
    keys wrap the backends, so there the communicators go with the objects)."""
    m = getattr(_c10d_py, "_pg_map", None)
    return m if m is not None else getattr(getattr(_c10d_py, "_world", None), "pg_map", {})


def destroy_process_group(group=None):
    before = [pg for pg in list(_groups()) if isinstance(pg, ProcessGroupInfiniCCL)]
    _destroy(group)
    for pg in before:
        if pg not in _groups():
            pg.destroy()


destroy_process_group.__doc__ = _destroy.__doc__


_declare()
_register()
_c10d_py.destroy_process_group = dist.destroy_process_group = destroy_process_group
if under_mpi():
    _set_torchrun_env()
