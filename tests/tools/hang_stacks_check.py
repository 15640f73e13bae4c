"""Runs an MPI job that hangs (the launcher command after --) and checks
that the launcher's time limit ended it with every rank's stacks printed,
naming where each rank waits (cmake/InfinicclTesting.cmake: a hanging MPI
test leaves its stacks, tests/tools/gstack)."""
import subprocess
import sys


def main():
    cmd = sys.argv[sys.argv.index("--") + 1:]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                          check=False)
    out = proc.stdout.decode(errors="replace")
    failures = []
    if proc.returncode == 0:
        failures.append("the hanging job exited 0")
    if out.count("STACK TRACE FOR PROC") != 2:
        failures.append("%d stack traces, not 2" % out.count("STACK TRACE FOR PROC"))
    for where in ("WaitsForTheOthersBarrier", "WaitsForRankZeroRecv"):
        if where not in out:
            failures.append("no stack names %s" % where)
    if failures:
        sys.stdout.write(out[-6000:])
        print("FAILED: " + "; ".join(failures))
        return 1
    print("the hanging job ended with rc %d and both ranks' stacks" % proc.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
