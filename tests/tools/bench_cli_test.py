#!/usr/bin/env python3
"""infiniccl-bench as nccl-tests users and their scripts run it.

usage: bench_cli_test.py BENCH CASE [LAUNCHER...]
  CASE  nccl_flags   nccl-tests spellings (-b8, -b 1K, --minbytes=, -c 1, -g 1 -t 1)
                     under the launcher at 2 ranks: the sweep, the notes, the footers
        refused      values with no meaning here are refused with the reason (exit 2)
        streaming    rows reach stdout as they are measured; progress with an ETA on
                     stderr after a few seconds; --quiet turns it off
        outputs      an unwritable --json/--csv path fails before anything is measured;
                     the JSON carries the run's metadata, the CSV the unavailable column
        misc         --version, --list-modes names only calls that exist
        overlap      the DDP-like overlap loop on the EMULATED device at 2 ranks: the
                     three times, the efficiency, exact results, JSON and CSV fields;
                     on the cpu device it is unavailable and says why
        return_time  return_allreduce at 2 ranks on the EMULATED device: the call's
                     return time next to call + synchronize, per size, table and JSON
  LAUNCHER  the launcher command line for 2 ranks, without the program (nccl_flags,
            overlap, return_time)

Singleton runs (no launcher) where one rank shows the behaviour.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from checks import expect, fail

BENCH = ""
LAUNCHER = []


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("INFINICCL_")}
    e.update(extra)
    return e


def run(args, launcher=(), timeout=300, **extra_env):
    argv = list(launcher) + [BENCH] + args
    print("running: " + " ".join(argv))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env=env(**extra_env))
    return p.returncode, p.stdout, p.stderr


def rows(out):
    """(bytes, mode) of every table row: lines that start with a number."""
    found = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            expect(len(f) == 10, "a row has size count type redop root time algbw busbw "
                   "#wrong mode: %r" % line)
            found.append((int(f[0]), f[9]))
    return found


def footers(out, checked=True):
    oob = re.search(r"^# Out of bounds values : (\d+) OK$", out, re.M)
    if checked:
        expect(oob and oob.group(1) == "0", "nccl-tests' out-of-bounds footer:\n" + out)
    else:
        expect("# Out of bounds values : N/A" in out, "unchecked footer:\n" + out)
    bw = re.search(r"^# Avg bus bandwidth    : ([0-9.e+-]+) $", out, re.M)
    expect(bw and float(bw.group(1)) > 0, "nccl-tests' Avg bus bandwidth footer:\n" + out)


def case_nccl_flags():
    # Attached values, nccl-tests' -c 1, -g 1 and -t 1, one mode.
    rc, out, err = run(["-b8", "-e", "1K", "-f", "4", "-c", "1", "-g", "1", "-t", "1",
                        "-w", "1", "-n", "2", "-d", "float", "-o", "sum",
                        "--modes", "host_allreduce"], LAUNCHER)
    expect(rc == 0, "exit %d\n%s\n%s" % (rc, out, err))
    expect(rows(out) == [(b, "host_allreduce") for b in (8, 32, 128, 512)],
           "sweep 8..1K by 4: %s" % rows(out))
    expect("# note: -t 1 ignored" in out and "# note: -g 1 ignored" in out,
           "-t 1 / -g 1 are noted:\n" + out)
    expect("ranks=2" in out, "2 ranks:\n" + out)
    footers(out)
    # Long forms with '=', -b1K attached with a suffix, checking off, -i linear.
    rc, out, err = run(["--minbytes=1K", "--maxbytes=4K", "--stepfactor=2", "--check=0",
                        "--datatype=int32", "--iters=2", "--warmup_iters=0",
                        "--modes", "host_allreduce"], LAUNCHER)
    expect(rc == 0, "exit %d\n%s" % (rc, err))
    expect([b for b, _ in rows(out)] == [1024, 2048, 4096], "sweep: %s" % rows(out))
    footers(out, checked=False)
    rc, out, err = run(["-b1K", "-e3K", "-i", "1K", "-n", "1", "-w", "0", "-m", "1",
                        "-a", "3", "--modes", "host_broadcast"], LAUNCHER)
    expect(rc == 0, "exit %d\n%s" % (rc, err))
    expect([b for b, _ in rows(out)] == [1024, 2048, 3072], "linear sweep: %s" % rows(out))
    # A bitwise op on an integer type: the raw MPI call (MPI_BXOR) and the
    # library's, results checked exactly.
    rc, out, err = run(["-b", "8", "-e", "4K", "-f", "8", "-n", "2", "-w", "1", "-d", "uint16",
                        "-o", "bxor", "--modes",
                        "host_allreduce,infiniccl_allreduce,infiniccl_reduce_scatter"],
                       LAUNCHER)
    expect(rc == 0, "bxor: exit %d\n%s\n%s" % (rc, out, err))
    expect(len(rows(out)) == 12, "bxor: 4 sizes x 3 modes: %s" % rows(out))
    footers(out)


def case_refused():
    for args, words in (
            (["-t", "2"], ["-t 2", "mpirun -np N"]),
            (["-g", "4"], ["-g 4", "one device per rank"]),
            (["-m", "4"], ["-m 4", "aggregated"]),
            (["-a", "1"], ["-a 1", "slowest rank"]),
            (["-c", "2"], ["-c", "0 (no check) or 1"]),
            (["-d", "all"], ["-d all"]),
            (["-o", "all"], ["-o all"]),
            (["-o", "band", "-d", "float32"], ["-o band", "integer dtype", "float32"]),
            (["-o", "bnot"], ["unknown op 'bnot'", "bxor"]),
            (["-r", "all"], ["all"]),
            (["-b"], ["-b needs a value"]),
            (["-z", "1"], ["unknown option '-z'"]),
            (["--bogus"], ["unknown option '--bogus'"]),
            (["-b", "1K", "--elements", "4"], ["not both"]),
            (["-f", "2", "-i", "1K"], ["not both"]),
            (["stray"], ["unexpected argument 'stray'"]),
    ):
        rc, out, err = run(args, timeout=120)
        print("  -> exit %d: %s" % (rc, err.strip().splitlines()[0] if err.strip() else ""))
        expect(rc == 2, "%s: exit %d, expected 2" % (args, rc))
        expect(rows(out) == [], "%s: nothing measured" % args)
        for w in words:
            expect(w in err, "%s: the message should say %r: %s" % (args, w, err))


def case_streaming():
    # The emulated device with a slow copy engine: copy_h2d of 2M elements
    # (8 MB at 0.06 GB/s, 0.14 s a copy, six copies a size) takes about a
    # second per size however fast the machine, while the first size (1
    # element) is immediate.
    args = ["--device", "sim", "--modes", "copy_h2d", "--elements",
            "1,2M,2M,2M,2M,2M", "-w", "1", "-n", "3"]
    extra = {"INFINICCL_SIM_COPY_GBPS": "0.06"}
    start = time.monotonic()
    p = subprocess.Popen([BENCH] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env(**extra))
    first_row_at = None
    for line in p.stdout:
        f = line.split()
        if first_row_at is None and f and f[0].isdigit():
            first_row_at = time.monotonic() - start
            print("first row after %.1f s: %s" % (first_row_at, line.rstrip()))
    err = p.stderr.read()
    rc = p.wait()
    total = time.monotonic() - start
    print("run took %.1f s; stderr:\n%s" % (total, err))
    expect(rc == 0, "exit %d: %s" % (rc, err))
    expect(first_row_at is not None, "no row")
    expect(total - first_row_at > 2.0,
           "the first row must arrive long before the end (%.1f s of %.1f s)"
           % (first_row_at, total))
    expect(re.search(r"# progress: \d+/6 \(copy_h2d, 2097152 elements\), \d+ s elapsed, "
                     r"ETA \d+ s", err), "progress with an ETA on stderr:\n" + err)
    rc, out, err = run(["-q"] + args, **extra)
    expect(rc == 0 and "progress" not in err, "--quiet: exit %d, stderr %r" % (rc, err))
    expect(len(rows(out)) == 6, "6 rows:\n" + out)


def case_outputs():
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "no-such-dir", "x")
        for flag in ("--json", "--csv"):
            start = time.monotonic()
            # A run that would take a while: refused before it starts.
            rc, out, err = run([flag, bad, "--elements", "16M", "-n", "1000"])
            took = time.monotonic() - start
            expect(rc == 2 and "cannot write %s file %s" % (flag, bad) in err,
                   "%s: exit %d: %s" % (flag, rc, err))
            expect(rows(out) == [] and "# infiniccl-bench" not in out,
                   "nothing measured or printed: %r" % out)
            print("%s refused after %.1f s" % (flag, took))
        js, cs = os.path.join(d, "r.json"), os.path.join(d, "r.csv")
        rc, out, err = run(["--elements", "4,64", "-n", "2", "-w", "0", "--modes",
                            "host_allreduce,infiniccl_sendrecv", "--json", js, "--csv", cs])
        expect(rc == 0, "exit %d: %s" % (rc, err))
        with open(js) as f:
            doc = json.load(f)
        meta = doc["metadata"]
        for key in ("version", "mpi_library", "nranks", "device", "dtype", "iters",
                    "warmup", "command_line", "date", "host"):
            expect(key in meta, "metadata lacks %s: %s" % (key, meta))
        expect(meta["nranks"] == 1 and meta["iters"] == 2 and meta["dtype"] == "float32",
               str(meta))
        expect("--json" in meta["command_line"] and js in meta["command_line"],
               meta["command_line"])
        expect(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", meta["date"]), meta["date"])
        expect(len(doc["rows"]) == 4, "4 rows: %s" % doc["rows"])
        na = [r for r in doc["rows"] if r["mode"] == "infiniccl_sendrecv"]
        expect(all(r["time_us"] is None and "2 or more ranks" in r["unavailable"]
                   for r in na), str(na))
        with open(cs, newline="") as f:
            table = list(csv.DictReader(f))
        expect(len(table) == 4 and "unavailable" in table[0], str(table[:1]))
        for r in table:
            want = "2 or more ranks" if r["mode"] == "infiniccl_sendrecv" else ""
            expect((want in r["unavailable"]) if want else r["unavailable"] == "", str(r))


def case_misc():
    rc, out, _ = run(["--version"])
    expect(rc == 0 and out.startswith("infiniccl-bench (InfiniCCL) 0.1.0") and "MPI:" in out,
           "--version: %d %r" % (rc, out))
    rc, out, _ = run(["--list-modes"])
    expect(rc == 0 and "infinicclSendRecv" not in out and
           "infinicclSend + infinicclRecv" in out, "--list-modes:\n" + out)
    rc, out, _ = run(["--help"])
    for word in ("-c, --check 0|1", "-q, --quiet", "-V, --version", "--stepbytes",
                 "--datatype", "Out of bounds values"):
        expect(word in out, "--help lacks %r" % word)


def overlap_numbers(out):
    """compute, comm, both, max, sum, both/max, efficiency, #wrong of the block."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.split()[1:3] == ["compute(us)", "comm(us)"]:
            f = lines[i + 1].split()
            expect(f[0] == "#" and len(f) == 9, "overlap numbers: %r" % lines[i + 1])
            return [float(x) for x in f[1:8]] + [f[8]]
    fail("no overlap block:\n" + out)


def case_overlap():
    buckets, bucket_bytes, kernel_us = 3, 256 * 1024, 2000
    with tempfile.TemporaryDirectory() as d:
        js, cs = os.path.join(d, "o.json"), os.path.join(d, "o.csv")
        rc, out, err = run(["--device", "sim", "--modes", "overlap", "--buckets",
                            str(buckets), "--bucket-bytes", "256K", "--kernel-us",
                            str(kernel_us), "-w", "1", "-n", "2", "--json", js, "--csv",
                            cs], LAUNCHER)
        expect(rc == 0, "exit %d\n%s\n%s" % (rc, out, err))
        expect("# overlap: 3 buckets of 262144 B (float32 sum infinicclAllReduce on a "
               "second stream), each after a 2000 us kernel on the compute stream "
               "(EMULATED kernels" in out, "overlap header:\n" + out)
        expect(rows(out) == [], "no table rows for the overlap loop:\n" + out)
        compute, comm, both, mx, total, ratio, eff, wrong = overlap_numbers(out)
        # Orderings, not speeds: the kernels of one stream run one after the other.
        floor = buckets * kernel_us
        expect(compute >= floor and both >= floor,
               "compute %.1f and both %.1f us >= %d us of kernels" % (compute, both, floor))
        expect(comm > 0 and wrong == "0", "comm %.1f us, wrong %s" % (comm, wrong))
        expect(abs(mx - max(compute, comm)) <= 0.2 and abs(total - compute - comm) <= 0.2,
               "max and sum columns: %s" % [compute, comm, mx, total])
        want = (compute + comm - both) / min(compute, comm)
        # The times are printed to 0.1 us (each off by up to 0.05), and the
        # efficiency divides their sum by the smaller: its error grows as
        # that time shrinks.
        slack = 0.002 + 3 * 0.05 / min(compute, comm)
        expect(abs(eff - want) <= slack,
               "efficiency %.3f, from the times %.3f (within %.4f)" % (eff, want, slack))
        expect(re.search(r"^# Out of bounds values : 0 OK$", out, re.M), "footer:\n" + out)
        with open(js) as f:
            doc = json.load(f)
        [row] = doc["rows"]
        expect(row["mode"] == "overlap" and row["collective"] == "allreduce" and
               row["buckets"] == buckets and row["bucket_bytes"] == bucket_bytes and
               row["kernel_us"] == kernel_us and row["wrong"] == 0 and
               row["unavailable"] is None and row["nranks"] == 2, str(row))
        for key in ("compute_us", "comm_us", "both_us", "overlap_efficiency"):
            expect(isinstance(row[key], (int, float)), "%s: %s" % (key, row))
        expect(row["time_us"] == row["both_us"] and row["busbw_gbps"] is None, str(row))
        expect(abs(row["overlap_efficiency"] -
                   (row["compute_us"] + row["comm_us"] - row["both_us"]) /
                   min(row["compute_us"], row["comm_us"])) < 1e-9, str(row))
        with open(cs, newline="") as f:
            [c] = list(csv.DictReader(f))
        expect(c["mode"] == "overlap" and float(c["compute_us"]) >= floor and
               c["overlap_efficiency"] != "" and c["return_us"] == "" and
               c["busbw_gbps"] == "", str(c))
    # The cpu device has no streams or kernels: unavailable, with the reason.
    rc, out, err = run(["--modes", "overlap", "-n", "1", "-w", "0"])
    expect(rc == 0 and "#  N/A overlap: needs device streams and kernels" in out,
           "overlap on cpu: exit %d\n%s\n%s" % (rc, out, err))


def case_return_time():
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        cs = os.path.join(d, "r.csv")
        rc, out, err = run(["--device", "sim", "--modes", "return_allreduce,overlap",
                            "-b", "4K", "-e", "64K", "-f", "4", "-w", "1", "-n", "3",
                            "--buckets", "2", "--bucket-bytes", "64K", "--kernel-us",
                            "500", "--json", js, "--csv", cs], LAUNCHER)
        expect(rc == 0, "exit %d\n%s\n%s" % (rc, out, err))
        sizes = (4096, 16384, 65536)
        expect(rows(out) == [(b, "return_allreduce") for b in sizes],
               "rows: %s" % rows(out))
        block = re.findall(r"^#\s+(\d+)" + r"\s+([0-9.]+)" * 6 +
                           r"\s+(\d+)/(\d+)\s+([0-9.]+|-)$", out, re.M)
        expect("# return time: host time of one infinicclAllReduce call" in out and
               "median(us)" in out and "unswitched(us)" in out and
               [int(b[0]) for b in block] == list(sizes), "return block:\n" + out)
        for (size, ret, median, most, total, total_median, ratio, switched, calls,
             unswitched) in block:
            # Calls switched out of 3 (Linux counts them per thread; the
            # most on any rank); the others' mean lies within the largest
            # call, and is missing only where every call was switched out.
            expect(int(calls) == 3 and int(switched) <= 3 and
                   (unswitched != "-" or int(switched) == 3) and
                   (unswitched == "-" or 0 < float(unswitched) <= float(most)),
                   "%s B: switched %s/%s, unswitched %s, max %s" %
                   (size, switched, calls, unswitched, most))
            # The call is part of call + synchronize on every rank (so is
            # its median part of that median); the mean and the median of 3
            # calls lie within the largest, and the ratio is the mean over
            # call + synchronize.
            expect(0 < float(ret) <= float(total) and 0 < float(median) <= float(most) and
                   float(ret) <= float(most) and
                   0 < float(median) <= float(total_median) and
                   abs(float(ratio) - float(ret) / float(total)) < 2e-3,
                   "%s B: return %s, median %s, max %s, call+sync %s (median %s), ratio %s" %
                   (size, ret, median, most, total, total_median, ratio))
        footers(out)
        with open(js) as f:
            doc = json.load(f)
        ret_rows = [r for r in doc["rows"] if r["mode"] == "return_allreduce"]
        expect([r["bytes"] for r in ret_rows] == list(sizes), str(ret_rows))
        for r in ret_rows:
            expect(0 < r["return_us"] <= r["time_us"] and r["wrong"] == 0 and
                   0 < r["return_median_us"] <= r["return_max_us"] and
                   r["return_us"] <= r["return_max_us"] and
                   r["return_median_us"] <= r["sync_median_us"] <= r["sync_p90_us"] and
                   r["collective"] == "allreduce", str(r))
            expect(isinstance(r["return_switched"], int) and 0 <= r["return_switched"] <= 3 and
                   (r["return_unswitched_us"] is not None or r["return_switched"] == 3) and
                   (r["return_unswitched_us"] is None or
                    0 < r["return_unswitched_us"] <= r["return_max_us"]), str(r))
        with open(cs, newline="") as f:
            crows = list(csv.DictReader(f))
        crow = [c for c in crows if c["mode"] == "return_allreduce"]
        expect([int(c["bytes"]) for c in crow] == list(sizes) and
               all(float(c["return_median_us"]) > 0 and
                   float(c["return_max_us"]) >= float(c["return_median_us"]) and
                   float(c["sync_median_us"]) >= float(c["return_median_us"]) and
                   float(c["sync_p90_us"]) >= float(c["sync_median_us"]) and
                   0 <= int(c["return_switched"]) <= 3 for c in crow) and
               all(c["return_median_us"] == "" == c["sync_median_us"] == c["return_switched"] ==
                   c["sync_p90_us"]
                   for c in crows if c["mode"] == "overlap"),
               str(crows))
        # Both kinds in one run: the overlap row comes after the sizes.
        expect(doc["rows"][-1]["mode"] == "overlap" and
               doc["rows"][-1]["wrong"] == 0, str(doc["rows"][-1]))


CASES = {n[len("case_"):]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    global BENCH, LAUNCHER
    if len(sys.argv) < 3 or sys.argv[2] not in CASES:
        print(__doc__.strip())
        return 2
    BENCH = os.path.abspath(sys.argv[1])
    LAUNCHER = sys.argv[3:]
    CASES[sys.argv[2]]()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
