"""The C++ torch backend's argument checks fuzzed under AddressSanitizer:
    torch2_asan_fuzz.py --pythonpath DIR [--seed S] [--cases N] <np> <mpiexec> [flags...]
DIR holds the package with its extension built with the sanitizers
(build_torch_ext.py --sanitize address,undefined); every rank runs with
their runtimes preloaded (sanitized.py), so a read or write out of bounds
in the extension ends the job with ASan's report.

Every rank draws the same N cases from the same seed (default: 1; N: 300):
an op of the backend (allreduce, broadcast, reduce, allgather,
_allgather_base, reduce_scatter, _reduce_scatter_base, alltoall,
alltoall_base with and without split sizes, gather, scatter, send/recv,
batched isend/irecv, barrier), called on the process group's backend object
itself (c10d's Backend methods, past torch.distributed's Python checks) with
arguments made wrong the same way on every rank: a wrong number of elements,
an output of another dtype, a non-contiguous tensor, a list of the wrong
length, split sizes that do not sum to the rows or are negative, a root or
peer outside the group, a meta tensor among cpu ones; and zero-size
tensors, which are right. Each case runs on a gloo group of the same ranks
first, then on the infiniccl one:
  - gloo raised and infiniccl did not: a missing check (failure);
  - a case marked wrong whatever gloo does (gloo has no such op, or takes
    it): infiniccl must raise;
  - infiniccl raised where gloo took the call, on a case not marked wrong
    (zero-size tensors included), or raised on a case marked as its own
    meaning: a failure, unless REFUSED_THOUGH_RIGHT names the case and why;
  - both took it: their outputs must be equal;
  - where gloo is wrong or means another thing (a non-contiguous
    all-to-all output, a stacked all-gather output, a list of tensors to
    allreduce), infiniccl's result is checked against the case's own
    reference; where gloo would crash or wait (a send or receive with a
    peer outside the group or a meta tensor, an all-to-all of two
    dtypes), the case runs on infiniccl alone;
  - infiniccl raised: a RuntimeError (torch's DistBackendError for the
    backend's own checks, as gloo's c10::Error), and a correct call of the
    same op on the same group right after gives the exact result (small
    integers).
The wrong argument is wrong on every rank, so each rank raises before any
library call and none waits for a peer.
Exits 77 (ctest's skip) without torch 2.7 or later.
"""
import datetime
import os
import random
import subprocess
import sys

from torch_needs import torch_or_skip
# Cases whose arguments are right (not marked `bad`) that infiniccl may
# refuse although gloo takes them, by the start of the case's label, each
# with the reason. Any other such refusal (a zero-size tensor, a
# non-contiguous one, a barrier's options) fails the run.
REFUSED_THOUGH_RIGHT = {}


def launcher(argv):
    from against_gloo import environment, parse, report
    from sanitized import sanitized_env

    torch = torch_or_skip()
    if torch is None:
        return 77
    first, passed = None, []
    while argv and argv[0] in ("--pythonpath", "--seed", "--cases"):
        if argv[0] == "--pythonpath":
            first = argv[1]
        else:
            passed += argv[:2]
        argv = argv[2:]
    _, _, nps, mpiexec = parse(argv)
    env = environment(first)
    # The runtimes are preloaded into the ranks only (through env(1), which
    # any MPI's launcher runs), not into mpiexec itself.
    ranks_env = sanitized_env({})
    preload = ["env"] + ["%s=%s" % kv for kv in sorted(ranks_env.items())]
    failures = []
    for np_ in nps:
        cmd = mpiexec[:1] + ["-n", str(np_)] + mpiexec[1:] + preload + [
            sys.executable, os.path.abspath(__file__), "--rank"] + passed
        print("+ " + " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, env=env)
        if rc != 0:
            failures.append("%d ranks: exit %d" % (np_, rc))
    return report("torch2_asan_fuzz", failures)


# ---- the ranks ----

def ranks_main(argv):
    import torch
    import torch.distributed as dist

    import infiniccl._c10d  # noqa: F401  the sanitized build, or fail here
    import infiniccl.torch  # noqa: F401  registers "infiniccl"

    seed, cases = 1, 300
    while argv:
        if argv[0] == "--seed":
            seed = int(argv[1])
        elif argv[0] == "--cases":
            cases = int(argv[1])
        argv = argv[2:]
    dist.init_process_group("infiniccl", timeout=datetime.timedelta(seconds=60))
    me, n = dist.get_rank(), dist.get_world_size()
    # A gloo call that raises on one rank only leaves the other waiting:
    # its timeout turns that into an error instead of a stuck test.
    gloo = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=20))
    cpu = torch.device("cpu")
    backends = {"gloo": gloo._get_backend(cpu),
                "infiniccl": dist.group.WORLD._get_backend(cpu)}
    C = torch._C._distributed_c10d
    R = dist.ReduceOp
    rng = random.Random(seed)

    def val(shape, dt=torch.int32, base=0):
        """This rank's small integers of `shape`: exact in any type."""
        numel = 1
        for s in shape:
            numel *= s
        v = (torch.arange(numel) % 5 + me + 1 + base).reshape(shape)
        return v.to(dt)

    def noncontig(shape, dt=torch.int32):
        """A tensor of `shape` that is not contiguous (a transposed view)."""
        if len(shape) < 2:
            return val((shape[0] * 2,), dt)[::2] if shape else val((), dt)
        return val(tuple(shape[:-2]) + (shape[-1], shape[-2]), dt).transpose(-1, -2)

    def opts(cls, **kw):
        o = cls()
        for k, v in kw.items():
            setattr(o, k, v)
        return o

    DTS = [torch.int32, torch.float32, torch.int64, torch.float64, torch.uint8]

    def numel_wrong(k):
        """A count other than k, at least 0."""
        return rng.choice([d for d in (0, 1, k - 1, k + 1, 2 * k, k + n) if d != k and d >= 0])

    def other_dt(dt):
        return rng.choice([d for d in DTS if d != dt])

    # Every maker draws its wrong arguments from rng (the same on every
    # rank) and returns (label, bad, call): call(backend) makes fresh
    # tensors, runs the op and returns the tensors to compare; bad: True
    # when wrong whatever gloo says, "own" when right for infiniccl though
    # gloo refuses it or means another thing (call checks the result
    # itself).
    def m_allreduce():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["empty list", "two types", "meta", "zero-size", "noncontig",
                           "two tensors"])
        op = rng.choice([R.SUM, R.MAX])
        odt = other_dt(dt)

        def call(b):
            ts = {"empty list": [],
                  "two types": [val((k,), dt), val((k,), odt)],
                  "meta": [val((k,), dt), torch.empty(k, dtype=dt, device="meta")],
                  "zero-size": [val((0,), dt)],
                  "noncontig": [noncontig((2, k), dt)],
                  "two tensors": [val((k,), dt), val((k,), dt, 7)]}[kind]
            b.allreduce(ts, opts(C.AllreduceOptions, reduceOp=op)).wait()
            if kind in ("two types", "two tensors"):
                # infiniccl reduces each tensor of the list on its own
                # (allreduce_coalesced's meaning); gloo refuses two types
                # and reduces two tensors into one.
                for j, t in enumerate(ts):
                    vals = [(torch.arange(k) % 5 + r + 1 + 7 * j * (kind == "two tensors"))
                            for r in range(n)]
                    ref = sum(vals) if op == R.SUM else torch.stack(vals).max(0).values
                    assert torch.equal(t, ref.to(t.dtype)), "tensor %d: %s, not %s" % (j, t, ref)
            return ts
        bad = "own" if kind in ("two types", "two tensors") else kind in ("empty list", "meta")
        return "allreduce " + kind, bad, call

    def m_broadcast():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["root", "empty list", "zero-size", "noncontig", "meta",
                           "root tensor"])
        root = rng.choice([-1, n, n + 5, -(2 ** 40), 2 ** 40]) if kind == "root" else 0
        rt = rng.choice([-1, 1, 5]) if kind == "root tensor" else 0

        def call(b):
            ts = {"root": [val((k,), dt)], "empty list": [], "zero-size": [val((0,), dt)],
                  "noncontig": [noncontig((3, k), dt)], "root tensor": [val((k,), dt)],
                  "meta": [torch.empty(k, dtype=dt, device="meta")]}[kind]
            b.broadcast(ts, opts(C.BroadcastOptions, rootRank=root, rootTensor=rt)).wait()
            return ts
        bad = kind in ("root", "empty list", "meta", "root tensor")
        return "broadcast %s %d" % (kind, root), bad, call

    def m_reduce():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["root", "empty list", "zero-size", "noncontig"])
        root = rng.choice([-1, n, 2 ** 33]) if kind == "root" else n - 1

        def call(b):
            ts = {"root": [val((k,), dt)], "empty list": [], "zero-size": [val((0,), dt)],
                  "noncontig": [noncontig((2, k), dt)]}[kind]
            b.reduce(ts, opts(C.ReduceOptions, rootRank=root, rootTensor=0,
                              reduceOp=R.SUM)).wait()
            return ts if me == root else []  # elsewhere the tensor is undefined
        return "reduce %s %d" % (kind, root), kind in ("root", "empty list"), call

    def m_allgather():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["list length", "numel", "dtype", "lists", "inputs", "noncontig",
                           "zero-size"])
        length = rng.choice([0, 1, n - 1, n + 1, n + 3]) if kind == "list length" else n
        length = length if length != n else n + 1 if kind == "list length" else n
        wrong_at = rng.randrange(n)
        wrong_k = numel_wrong(k)
        odt = other_dt(dt)
        lists = rng.choice([0, 2])

        def call(b):
            kk = 0 if kind == "zero-size" else k
            outs = [torch.full((kk,), -1, dtype=dt) for _ in range(length)]
            if kind == "numel":
                outs[wrong_at] = torch.full((wrong_k,), -1, dtype=dt)
            if kind == "dtype":
                outs[wrong_at] = torch.full((k,), -1, dtype=odt)
            if kind == "noncontig":
                outs[wrong_at] = torch.full((2 * k,), -1, dtype=dt)[::2]
            ins = [val((kk,), dt)]
            if kind == "inputs":
                ins = ins * 2 if lists else []
            out_lists = [outs] if kind != "lists" else [outs] * lists
            b.allgather(out_lists, ins).wait()
            return outs
        bad = kind in ("list length", "numel", "dtype", "lists", "inputs")
        return "allgather %s" % kind, bad, call

    def m_allgather_base():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["numel", "dtype", "noncontig", "zero-size", "2-d"])
        wrong = numel_wrong(n * k)
        odt = other_dt(dt)

        def call(b):
            inp = val((0 if kind == "zero-size" else k,), dt)
            out = torch.full((n * inp.numel(),), -1, dtype=dt)
            if kind == "numel":
                out = torch.full((wrong,), -1, dtype=dt)
            if kind == "dtype":
                out = torch.full((n * k,), -1, dtype=odt)
            if kind == "noncontig":
                out = noncontig((n, k), dt).fill_(-1)
            if kind == "2-d":
                out = torch.full((n, k), -1, dtype=dt)
            b._allgather_base(out, inp).wait()
            if kind in ("2-d", "noncontig"):
                ref = torch.stack([(torch.arange(k) % 5 + r + 1).to(dt) for r in range(n)])
                assert torch.equal(out, ref), "stacked output %s, not %s" % (out, ref)
            return [out]
        # A stacked output (group size, *input's shape), contiguous or not:
        # NCCL's form, which gloo refuses; the result is checked here.
        bad = "own" if kind in ("2-d", "noncontig") else kind in ("numel", "dtype")
        return "_allgather_base %s" % kind, bad, call

    def m_reduce_scatter():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["list length", "numel", "dtype", "lists", "outputs", "zero-size"])
        length = rng.choice([0, 1, n + 1]) if kind == "list length" else n
        length = n + 2 if kind == "list length" and length == n else length
        wrong_k, odt = numel_wrong(k), other_dt(dt)
        lists = rng.choice([0, 2])

        def call(b):
            kk = 0 if kind == "zero-size" else k
            ins = [val((kk,), dt, j) for j in range(length)]
            # Every input wrong: gloo checks only some of them on a rank,
            # and would raise on one rank and wait for its peer on another.
            if kind == "numel":
                ins = [val((wrong_k,), dt, j) for j in range(length)]
            if kind == "dtype":
                ins = [val((k,), odt, j) for j in range(length)]
            out = torch.full((kk,), -1, dtype=dt)
            outs = [out] if kind != "outputs" else [out] * (2 if lists else 0)
            in_lists = [ins] if kind != "lists" else [ins] * lists
            b.reduce_scatter(outs, in_lists, opts(C.ReduceScatterOptions,
                                                  reduceOp=R.SUM)).wait()
            return [out]
        return "reduce_scatter %s" % kind, kind != "zero-size", call

    def m_reduce_scatter_base():
        k, dt = rng.randint(1, 6), rng.choice(DTS)
        kind = rng.choice(["numel", "dtype", "noncontig", "zero-size"])
        wrong, odt = numel_wrong(n * k), other_dt(dt)

        def call(b):
            kk = 0 if kind == "zero-size" else k
            out = torch.full((kk,), -1, dtype=dt)
            inp = val((n * kk,), dt)
            if kind == "numel":
                inp = val((wrong,), dt)
            if kind == "dtype":
                inp = val((n * k,), odt)
            if kind == "noncontig":
                out = torch.full((2 * k,), -1, dtype=dt)[::2]
            b._reduce_scatter_base(out, inp, opts(C.ReduceScatterOptions,
                                                  reduceOp=R.SUM)).wait()
            return [out]
        return "_reduce_scatter_base %s" % kind, kind in ("numel", "dtype"), call

    def m_alltoall_base():
        rows, cols, dt = n * rng.randint(0, 3), rng.randint(1, 3), rng.choice(DTS)
        kind = rng.choice(["numel", "dtype", "split length", "split sum", "negative split",
                           "rows", "noncontig", "zero-size", "one split list", "0-d"])
        splits = [rows // n] * n
        ins_s, outs_s = list(splits), list(splits)
        if kind == "split length":
            ins_s = splits + [0] if rng.random() < 0.5 else splits[:-1]
        if kind == "split sum":
            outs_s = list(splits)
            outs_s[rng.randrange(n)] += rng.choice([1, 2, -1 if rows else 1])
        if kind == "negative split":
            ins_s = list(splits)
            ins_s[0], ins_s[-1] = ins_s[0] - 1 - rows, ins_s[-1] + 1 + rows
        use_splits = kind in ("split length", "split sum", "negative split", "one split list")
        wrong_rows = numel_wrong(rows) if kind == "numel" else rows
        odt = other_dt(dt)
        wrong_split_rows = rows + n

        def call(b):
            inp = val((rows, cols), dt)
            out = torch.full((rows, cols), -1, dtype=dt)
            if kind == "numel":
                out = torch.full((wrong_rows, cols), -1, dtype=dt)
            if kind == "dtype":
                out = torch.full((rows, cols), -1, dtype=odt)
            if kind == "rows":
                inp = val((wrong_split_rows, cols), dt)
            if kind == "noncontig":
                out = noncontig((rows, cols), dt).fill_(-1) if cols > 1 else out
            if kind == "zero-size":
                inp, out = val((0, cols), dt), torch.full((0, cols), -1, dtype=dt)
            if kind == "0-d":
                inp, out = val((), dt), torch.full((), -1, dtype=dt)
            i_s = ins_s if use_splits or kind == "rows" else []
            o_s = outs_s if use_splits and kind != "one split list" else []
            if kind == "rows":
                o_s = list(splits)
            b.alltoall_base(out, inp, o_s, i_s, C.AllToAllOptions()).wait()
            if kind == "noncontig":
                # Checked here: gloo writes a non-contiguous output as if it
                # were contiguous.
                c = rows // n
                ref = torch.cat([(torch.arange(rows * cols) % 5 + r + 1).reshape(rows, cols)
                                 [me * c:(me + 1) * c] for r in range(n)]).to(dt)
                assert torch.equal(out, ref), "%s, not %s" % (out, ref)
            return [out]
        bad = kind in ("numel", "dtype", "split length", "split sum", "negative split", "rows")
        bad = "own" if kind == "noncontig" else bad
        # gloo does not compare the dtypes: it reads past the smaller one.
        call.no_gloo = kind == "dtype"
        return "alltoall_base %s" % kind, bad, call

    def m_alltoall():
        k, dt = rng.randint(0, 3), rng.choice(DTS)
        kind = rng.choice(["outputs", "inputs", "dtype", "noncontig", "zero-size"])
        wrong_len = rng.choice([0, 1, n + 1]) if kind in ("outputs", "inputs") else n
        wrong_len = n + 1 if wrong_len == n else wrong_len
        at, odt = rng.randrange(n), other_dt(dt)

        def call(b):
            ins = [val((k,), dt, j) for j in range(n)]
            outs = [torch.full((k,), -1, dtype=dt) for _ in range(n)]
            if kind == "outputs":
                outs = [torch.full((k,), -1, dtype=dt) for _ in range(wrong_len)]
            if kind == "inputs":
                ins = [val((k,), dt, j) for j in range(wrong_len)]
            if kind == "dtype":
                outs[at] = torch.full((k,), -1, dtype=odt)
            if kind == "noncontig":
                outs[at] = torch.full((2 * k,), -1, dtype=dt)[::2]
            if kind == "zero-size":
                ins = [val((0,), dt) for _ in range(n)]
                outs = [torch.full((0,), -1, dtype=dt) for _ in range(n)]
            b.alltoall(outs, ins, C.AllToAllOptions()).wait()
            return outs
        return "alltoall %s" % kind, kind in ("outputs", "inputs", "dtype"), call

    def m_gather():
        k, dt = rng.randint(1, 4), rng.choice(DTS)
        kind = rng.choice(["root", "inputs", "list length", "numel", "zero-size"])
        root = rng.choice([-1, n, 2 ** 35]) if kind == "root" else rng.randrange(n)
        length = rng.choice([0, 1, n + 1]) if kind == "list length" else n
        length = n + 1 if kind == "list length" and length == n else length
        wrong_k = numel_wrong(k)

        def call(b):
            kk = 0 if kind == "zero-size" else k
            ins = [val((kk,), dt)]
            if kind == "inputs":
                ins = ins * 2
            outs = [torch.full((kk,), -1, dtype=dt) for _ in range(length)]
            if kind == "numel":
                outs[0] = torch.full((wrong_k,), -1, dtype=dt)
            # A wrong list is passed on every rank: a non-root's list must
            # be empty (gloo's check), so every rank raises.
            wrong_list = kind in ("list length", "numel")
            out_lists = [outs] if me == root or wrong_list else []
            b.gather(out_lists, ins, opts(C.GatherOptions, rootRank=root)).wait()
            return outs if me == root else []
        return "gather %s %d" % (kind, root), kind != "zero-size", call

    def m_scatter():
        k, dt = rng.randint(1, 4), rng.choice(DTS)
        kind = rng.choice(["root", "outputs", "list length", "numel", "zero-size"])
        root = rng.choice([-1, n, -7]) if kind == "root" else rng.randrange(n)
        length = rng.choice([0, 1, n + 1]) if kind == "list length" else n
        length = n + 1 if kind == "list length" and length == n else length
        wrong_k = numel_wrong(k)

        def call(b):
            kk = 0 if kind == "zero-size" else k
            out = torch.full((kk,), -1, dtype=dt)
            outs = [out] * (2 if kind == "outputs" else 1)
            ins = [val((kk,), dt, j) for j in range(length)]
            if kind == "numel":
                ins[0] = val((wrong_k,), dt)
            wrong_list = kind in ("list length", "numel")
            in_lists = [ins] if me == root or wrong_list else []
            b.scatter(outs, in_lists, opts(C.ScatterOptions, rootRank=root)).wait()
            return [out]
        return "scatter %s %d" % (kind, root), kind != "zero-size", call

    def m_p2p():
        k, dt = rng.randint(1, 5), rng.choice(DTS)
        kind = rng.choice(["peer", "tensors", "tag", "meta"])
        peer = rng.choice([-1, n, n + 100, -(2 ** 31)]) if kind == "peer" else (me + 1) % n
        tag = rng.choice([-1, -5]) if kind == "tag" else 0
        which = rng.choice(["send", "recv"])

        def call(b):
            ts = [val((k,), dt)]
            if kind == "tensors":
                ts = rng_list
            if kind == "meta":
                ts = [torch.empty(k, dtype=dt, device="meta")]
            (b.send if which == "send" else b.recv)(ts, peer, tag).wait()
            return ts
        # gloo checks neither the peer nor the device of a send or receive
        # (it crashes or waits): infiniccl alone runs these.
        call.no_gloo = kind in ("peer", "meta")
        rng_list = [] if rng.random() < 0.5 else [val((k,), dt), val((k,), dt)]
        return "%s %s %d tag %d" % (which, kind, peer, tag), True, call

    def m_batch():
        """isend/irecv in a batch (startCoalescing .. endCoalescing), one of
        them wrong: the batch raises at the wrong call, ends empty-handed
        on every rank, and the group goes on."""
        k, dt = rng.randint(1, 5), rng.choice(DTS)
        kind = rng.choice(["peer", "tensors", "meta"])
        peer = rng.choice([-1, n, 99]) if kind == "peer" else (me + 1) % n

        def call(b):
            b._start_coalescing()
            try:
                ts = ([val((k,), dt)] if kind == "peer" else [] if kind == "tensors" else
                      [torch.empty(k, dtype=dt, device="meta")])
                b.send(ts, peer, 0)
            finally:
                b._end_coalescing().wait()
            return []
        return "batch_isend_irecv %s %d" % (kind, peer), True, call

    def m_barrier():
        kind = rng.choice(["device_ids", "timeout"])

        def call(b):
            o = C.BarrierOptions()
            if kind == "device_ids":
                o.device_ids = [rng_id]
            else:
                o.timeout = datetime.timedelta(seconds=30)
            b.barrier(o).wait()
            return []
        rng_id = rng.choice([-1, 0, 7])
        return "barrier %s" % kind, False, call

    makers = [m_allreduce, m_broadcast, m_reduce, m_allgather, m_allgather_base,
              m_reduce_scatter, m_reduce_scatter_base, m_alltoall_base, m_alltoall,
              m_gather, m_scatter, m_p2p, m_batch, m_barrier]

    # A correct call of each op: its exact result, after every case.
    def correct(b, name):
        k = 3
        ref_sum = sum((torch.arange(k) % 5 + r + 1) for r in range(n)).to(torch.int32)
        if name in ("allreduce", "barrier", "batch_isend_irecv", "send", "recv"):
            t = val((k,))
            b.allreduce([t]).wait()
            ok = torch.equal(t, ref_sum)
            if name in ("send", "recv", "batch_isend_irecv") and n > 1:
                nxt, prv = (me + 1) % n, (me - 1) % n
                r = torch.zeros(k, dtype=torch.int32)
                b._start_coalescing()
                b.send([val((k,))], nxt, 0)
                b.recv([r], prv, 0)
                b._end_coalescing().wait()
                ok = ok and torch.equal(r, torch.arange(k) % 5 + prv + 1)
            return ok
        if name in ("broadcast", "reduce"):
            t = val((k,))
            b.broadcast([t], opts(C.BroadcastOptions, rootRank=n - 1)).wait()
            return torch.equal(t, (torch.arange(k) % 5 + n).to(torch.int32))
        if name in ("allgather", "_allgather_base", "gather"):
            out = torch.zeros(n * k, dtype=torch.int32)
            b._allgather_base(out, val((k,))).wait()
            ref = torch.cat([torch.arange(k) % 5 + r + 1 for r in range(n)]).to(torch.int32)
            return torch.equal(out, ref)
        if name in ("reduce_scatter", "_reduce_scatter_base", "scatter"):
            out = torch.zeros(k, dtype=torch.int32)
            b._reduce_scatter_base(out, val((n * k,)),
                                   opts(C.ReduceScatterOptions, reduceOp=R.SUM)).wait()
            full = sum(torch.arange(n * k) % 5 + r + 1 for r in range(n)).to(torch.int32)
            return torch.equal(out, full[me * k:(me + 1) * k])
        if name in ("alltoall_base", "alltoall"):
            inp = (torch.arange(n * k) + 100 * me).to(torch.int32)
            out = torch.zeros(n * k, dtype=torch.int32)
            b.alltoall_base(out, inp, [], [], C.AllToAllOptions()).wait()
            ref = torch.cat([torch.arange(me * k, (me + 1) * k) + 100 * r
                             for r in range(n)]).to(torch.int32)
            ok = torch.equal(out, ref)
            out2 = torch.zeros(n * k, dtype=torch.int32)
            b.alltoall_base(out2, inp, [k] * n, [k] * n, C.AllToAllOptions()).wait()
            return ok and torch.equal(out2, ref)
        raise AssertionError(name)

    def outcome(b, call):
        try:
            return None, call(b)
        except Exception as e:  # noqa: BLE001 - any exception is an outcome
            return e, None

    failures, raised, stricter, agreed = [], 0, [], 0
    for i in range(cases):
        label, bad, call = rng.choice(makers)()
        no_gloo = getattr(call, "no_gloo", False)
        ge, gres = (None, None) if no_gloo else outcome(backends["gloo"], call)
        ie, ires = outcome(backends["infiniccl"], call)
        name = label.split()[0]
        what = "case %d (%s)" % (i, label)
        if ie is not None:
            raised += 1
            if not isinstance(ie, (RuntimeError, ValueError, TypeError)):
                failures.append("%s: infiniccl raised %s: %s" % (what, type(ie).__name__, ie))
            if ge is None and not no_gloo:
                if bad is True:
                    # Wrong by construction (the maker's `bad`): gloo took it.
                    stricter.append(label)
                elif not any(label.startswith(k) for k in REFUSED_THOUGH_RIGHT):
                    failures.append("%s: infiniccl raised where gloo took it (%s)" % (
                        what, str(ie).splitlines()[0][:200]))
            elif bad == "own":
                failures.append("%s: infiniccl raised on an argument it takes (%s)" % (
                    what, str(ie).splitlines()[0][:200]))
        else:
            if ge is not None and bad != "own":
                failures.append("%s: gloo raised (%s) and infiniccl did not" %
                                (what, str(ge).splitlines()[0][:200]))
            elif bad is True:
                failures.append("%s: infiniccl took a wrong argument" % what)
            elif gres is not None and not all(torch.equal(a, b) for a, b in zip(ires, gres)):
                failures.append("%s: infiniccl's result %s differs from gloo's %s" %
                                (what, ires, gres))
            else:
                agreed += 1
        if os.environ.get("FUZZ_VERBOSE"):
            print("rank %d %s: gloo %s | infiniccl %s" % (
                me, what, "ok" if ge is None else str(ge).splitlines()[0][:120],
                "ok" if ie is None else str(ie).splitlines()[0][:160]), flush=True)
        if not correct(backends["infiniccl"], name):
            failures.append("%s: the correct %s after it is wrong" % (what, name))
    if me == 0:
        print("torch2_asan_fuzz: seed %d, %d cases, %d ranks: infiniccl raised in %d, took "
              "%d (results equal to gloo's); refused a wrong argument gloo took in %d (%s)" % (
                  seed, cases, n, raised, agreed, len(stricter),
                  ", ".join(sorted(set(s.split()[0] + " " + s.split()[1]
                                       for s in stricter)))), flush=True)
    for f in failures:
        print("rank %d: FAILED: %s" % (me, f), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        sys.exit(ranks_main(sys.argv[2:]))
    sys.exit(launcher(sys.argv[1:]))
