#!/usr/bin/env python3
"""Runs an MPI job, injects a fault, and checks how the job ends.

usage: fault_harness.py --mode kill|stop|skip|group_skip [--victim R] [--bound S]
                        [--across-nodes] [--expect REGEX ...]
                        [--timeout-sec T] -- <launcher ...> <test_fault ...>

  kill  SIGKILL rank R once every rank is looping: the launcher must end
        within --bound seconds of the kill, non-zero, with a message.
  stop  SIGSTOP rank R while it pauses between two calls: the watchdog (INFINICCL_TIMEOUT_SEC=T, set here)
        must write an ERROR line naming R as not having reached the call,
        within about 2*T of the stop, and the job must end.
  skip  rank R skips one collective (the program does that itself): the
        watchdog's ERROR lines must name R, and only R.
  group_skip  rank R leaves its Send out of a grouped ring exchange: the next
        rank's watchdog must report its Recv, waiting in GroupEnd, as
        waiting on peer R (others may report their own Send or Recv waits),
        and no sequenced collective may be reported.

In every mode, no process of the job may be left once the launcher has
exited. Leftovers are killed and reported as a failure.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

READY = re.compile(r"READY rank=(\d+) pid=(\d+)")
WATCHDOG = re.compile(
    r"INFINICCL ERROR watchdog: (\w+) seq (\d+) on comm .*?ranks that have not reached it: ([0-9, .()a-z-]+?)[;]")
P2P_WATCHDOG = re.compile(
    r"INFINICCL ERROR watchdog: (\w+) \(point-to-point, not sequenced\) on comm \S+ "
    r"\(rank (\d+) of \d+\).*?waiting on peer (\d+)")


def descendants(root):
    """Pids below `root` (children of children...), from /proc."""
    parent = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            parent[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in found}
        found |= frontier
    return found


def alive(pid):
    """True unless the pid is gone or a zombie (dead, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] != "Z"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["kill", "stop", "skip", "group_skip"], required=True)
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--bound", type=float, default=30.0,
                    help="seconds from the fault to the end of the job")
    ap.add_argument("--timeout-sec", type=int, default=3)
    ap.add_argument("--across-nodes", action="store_true",
                    help="ranks on several (emulated) nodes: a line may name none as not "
                         "arrived when the victim is on another node, listed as unknown")
    ap.add_argument("--expect", action="append", default=[],
                    help="a regular expression some watchdog ERROR line must match")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd

    env = dict(os.environ)
    if args.mode in ("stop", "skip", "group_skip"):
        env["INFINICCL_TIMEOUT_SEC"] = str(args.timeout_sec)
    else:
        env.setdefault("INFINICCL_TIMEOUT_SEC", "0")  # the launcher alone must end it
    print("harness: " + " ".join(cmd), flush=True)
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           start_new_session=True, text=True, errors="replace")
    lines = []  # (time, text)

    def reader():
        for line in job.stdout:
            lines.append((time.monotonic(), line.rstrip("\n")))
            print(line, end="", flush=True)

    threading.Thread(target=reader, daemon=True).start()
    failures = []
    pids, fault_time = {}, None
    deadline = time.monotonic() + 120
    while len(pids) < args.ranks and time.monotonic() < deadline and job.poll() is None:
        for _, text in list(lines):
            m = READY.search(text)
            if m:
                pids[int(m.group(1))] = int(m.group(2))
        time.sleep(0.05)
    job_pids = descendants(job.pid) | {job.pid}
    if len(pids) < args.ranks:
        failures.append(f"only {len(pids)} of {args.ranks} ranks reported READY")
    elif args.mode in ("kill", "stop"):
        if args.mode == "stop":
            # Between two calls (the program sleeps there), so the victim
            # has not reached the call its peers wait in.
            paused = re.compile(rf"PAUSED rank={args.victim}\b")
            while (not any(paused.search(t) for _, t in list(lines))
                   and time.monotonic() < deadline and job.poll() is None):
                time.sleep(0.02)
        else:
            time.sleep(0.5)  # well inside the loop
        sig = signal.SIGKILL if args.mode == "kill" else signal.SIGSTOP
        os.kill(pids[args.victim], sig)
        fault_time = time.monotonic()
        print(f"harness: sent {sig.name} to rank {args.victim} (pid {pids[args.victim]})",
              flush=True)
    else:
        fault_time = time.monotonic()  # the skip happens right after READY

    start = fault_time if fault_time is not None else time.monotonic()
    try:
        rc = job.wait(timeout=max(1.0, start + args.bound - time.monotonic()))
        ended = time.monotonic() - start
        print(f"harness: launcher exited with {rc} {ended:.2f} s after the fault "
              f"(bound {args.bound:.0f} s)", flush=True)
        if rc == 0:
            failures.append("the job exited 0 despite the fault")
    except subprocess.TimeoutExpired:
        failures.append(f"the job did not end within {args.bound:.0f} s of the fault")
    time.sleep(0.5)  # let the reader drain

    # Nothing of the job may survive the launcher (a few seconds of grace for
    # processes the launcher has signalled but the kernel has not yet reaped).
    grace = time.monotonic() + 5
    left = [p for p in job_pids if alive(p)]
    while left and time.monotonic() < grace:
        time.sleep(0.2)
        left = [p for p in job_pids if alive(p)]
    if left:
        failures.append(f"processes left behind: {sorted(left)}")
    for p in left:
        for s in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(p, s)
            except OSError:
                pass
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()

    # Shared-memory segments (the sequence board's, the shared-memory
    # transport's) are unlinked once every rank has mapped them: none of
    # this job's may be left in /dev/shm, killed or not.
    job_pids |= set(pids.values())
    leaked = [name for name in os.listdir("/dev/shm") if name.startswith("infiniccl-")
              and any(f"-{p}-" in name for p in job_pids)]
    if leaked:
        failures.append(f"left in /dev/shm: {sorted(leaked)}")

    text = "\n".join(t for _, t in lines)
    if args.mode == "kill":
        if not re.search(r"signal 9|Killed|KILLED|failed:|exited on signal", text):
            failures.append("no message about the killed rank")
    elif args.mode == "group_skip":
        reports = [m for _, line in lines for m in [P2P_WATCHDOG.search(line)] if m]
        waiter = (args.victim + 1) % args.ranks
        if not any(int(m.group(2)) == waiter and int(m.group(3)) == args.victim
                   for m in reports):
            failures.append(f"no watchdog ERROR line of rank {waiter} waiting on peer "
                            f"{args.victim}")
        if any(WATCHDOG.search(line) for _, line in lines):
            failures.append("a sequenced collective was reported; only GroupEnd waits")
    else:
        reports = [(t, m) for t, line in lines for m in [WATCHDOG.search(line)] if m]
        if not reports:
            failures.append("no watchdog ERROR line")
        unknown = re.compile(r"on other nodes, unknown: ([0-9,]+)")
        for t, m in reports:
            behind = m.group(3).strip()
            u = unknown.search(m.string)
            elsewhere = u is not None and str(args.victim) in u.group(1).split(",")
            if args.across_nodes and behind == "none" and elsewhere:
                continue
            if behind != str(args.victim):
                failures.append(f"ERROR line names '{behind}' as not arrived, "
                                f"expected only rank {args.victim}")
        if reports and fault_time is not None:
            first = reports[0][0] - fault_time
            print(f"harness: first watchdog line {first:.2f} s after the fault "
                  f"(INFINICCL_TIMEOUT_SEC={args.timeout_sec}); {len(reports)} ERROR line(s)",
                  flush=True)
            if args.mode == "stop" and first > 2 * args.timeout_sec + 2:
                failures.append(f"watchdog fired {first:.1f} s after the stop, more than "
                                f"about twice the timeout ({args.timeout_sec} s)")
    errors = [line for _, line in lines if "INFINICCL ERROR watchdog" in line]
    for want in args.expect:
        if not any(re.search(want, line) for line in errors):
            failures.append(f"no watchdog ERROR line matches '{want}'")
    for f in failures:
        print("harness: FAIL: " + f, flush=True)
    print("harness: " + ("PASS" if not failures else "FAILED"), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
