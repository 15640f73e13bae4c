#!/usr/bin/env python3
"""A rank killed at a random moment of shared-memory segment creation, many
times: none of the job's segment names may be left in /dev/shm.

Each run launches test_shm_kill (tests/fault/test_shm_kill.cpp) with a fresh
random seed, which picks the victim rank, the creation step at which it
kills itself and a delay of 0-400 us after that step. The job must end
(the launcher ends the other ranks), each rank must have written its pid,
the victim must have died of the kill (no "no kill came" line), and no name
"infiniccl-<tag>-<pid>-..." of one of the job's pids may be in /dev/shm
afterwards. A name found is removed (so a failing run leaves nothing) and
counted as a failure. --expect-leak inverts the last check for the named
path (the program's `named` argument, a kill in a step, always while the
name exists): every run must leave a name, which shows that the check
finds what a kill leaves. --jobs runs that many jobs at once.

usage: shm_kill.py --runs N --budget S [--jobs J] [--expect-leak] -- LAUNCH... PROGRAM [named]
The seed and the pid directory are inserted after PROGRAM.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def alive(pid):
    """Whether process `pid` still runs: a zombie (exited, not yet reaped by
    whoever inherited it) holds no mapping or descriptor any more."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--budget", type=float, default=60.0,
                    help="stop starting runs after this many seconds (at least 10 runs)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--expect-leak", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    # LAUNCH... PROGRAM [named]: PROGRAM is the last argument or the one
    # before "named".
    at = len(cmd) - (2 if cmd and cmd[-1] == "named" else 1)
    rng = random.Random(args.seed)
    failures = []
    leaks = 0
    runs = 0
    start = time.monotonic()
    running = []  # (job, seed, piddir, started, output, session folder)

    def finish(job, seed, piddir, out, timed_out):
        nonlocal leaks, runs
        runs += 1
        if timed_out:
            failures.append(f"seed {seed}: the job did not end within {args.timeout} s")
        pids = []
        for name in os.listdir(piddir):
            with open(os.path.join(piddir, name)) as f:
                text = f.read().strip()
            if text:
                pids.append(int(text))
        shutil.rmtree(piddir, ignore_errors=True)
        if len(pids) < 2:
            failures.append(f"seed {seed}: only {len(pids)} rank(s) wrote a pid:\n{out[-2000:]}")
        if "no kill came" in out:
            failures.append(f"seed {seed}: the victim was not killed:\n{out[-2000:]}")
        if job.returncode == 0:
            failures.append(f"seed {seed}: the job exited 0")
        # A run's processes may outlive the launcher for a moment; one still
        # running after 2 s is a failure, and killed.
        for p in pids:
            for _ in range(100):
                if not alive(p):
                    break
                time.sleep(0.02)
            else:
                failures.append(f"seed {seed}: process {p} left behind")
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        left = sorted(n for n in os.listdir("/dev/shm") if n.startswith("infiniccl-")
                      and any(f"-{p}-" in n for p in pids))
        for n in left:
            try:
                os.unlink(os.path.join("/dev/shm", n))
            except OSError:
                pass
        if left:
            leaks += 1
            if not args.expect_leak:
                failures.append(f"seed {seed}: left in /dev/shm: {left}")
        elif args.expect_leak:
            failures.append(f"seed {seed}: the named path's run left no name")

    started = 0
    while running or started < args.runs:
        over = started >= 10 and time.monotonic() - start > args.budget
        while len(running) < args.jobs and started < args.runs and not over:
            seed = rng.randrange(1 << 30)
            piddir = tempfile.mkdtemp(prefix="iccl-shm-kill-")
            # Each job's launcher keeps its session files in a folder of its
            # own: Open MPI 4.1's mpirun fails at start ("mkdir
            # /tmp/ompi.<host>.0: File exists") when another job removes the
            # shared one at that moment.
            session = tempfile.mkdtemp(prefix="iccl-shm-kill-session-")
            env = dict(os.environ, OMPI_MCA_orte_tmpdir_base=session)
            full = cmd[:at + 1] + [str(seed), piddir] + cmd[at + 1:]
            out = tempfile.TemporaryFile(mode="w+")
            job = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, text=True, env=env)
            running.append((job, seed, piddir, time.monotonic(), out, session))
            started += 1
        if not running:
            break
        time.sleep(0.01)
        for entry in list(running):
            job, seed, piddir, t0, out, session = entry
            timed_out = False
            if job.poll() is None:
                if time.monotonic() - t0 < args.timeout:
                    continue
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
                timed_out = True
            running.remove(entry)
            out.seek(0)
            finish(job, seed, piddir, out.read(), timed_out)
            out.close()
            shutil.rmtree(session, ignore_errors=True)
    took = time.monotonic() - start
    print(f"shm_kill: {runs} runs in {took:.1f} s, {leaks} left a name in /dev/shm")
    for f in failures[:20]:
        print("FAIL " + f)
    if failures:
        print(f"shm_kill: {len(failures)} failures")
        return 1
    print("shm_kill: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
