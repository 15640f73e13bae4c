#!/usr/bin/env bash
# Runs test_shrink under the launcher given and passes when exactly
# <survivors> ranks print "SHRINK PASS" and the job leaves nothing of the
# library in /dev/shm. mpirun's own status is not used (a killed rank makes
# it non-zero), except that a job still running after 150 s fails.
# With --repeat N the job runs N times, each checked so (a hang at the end
# of a job shows in some runs only).
# usage: run_shrink.sh [--repeat N] <survivors> <launcher and program...>
set -u
if [ "$1" = "--repeat" ]; then
  times=$2
  shift 2
  for i in $(seq 1 "$times"); do
    echo "run_shrink: run $i of $times"
    "$0" "$@" || exit 1
  done
  exit 0
fi
want=$1
shift
before=$(ls /dev/shm 2>/dev/null | grep '^infiniccl-' | sort)
out=$(mktemp)
timeout 150 "$@" >"$out" 2>&1
rc=$?
cat "$out"
# Counted wherever it stands: MPICH's launcher may forward one rank's
# output into the middle of another's line.
got=$(grep -o 'SHRINK PASS' "$out" | wc -l)
rm -f "$out"
status=0
if [ "$rc" -eq 124 ]; then
  echo "run_shrink: the job did not end within 150 s (a rank hung after its result)" >&2
  status=1
fi
if [ "$got" -ne "$want" ]; then
  echo "run_shrink: $got rank(s) passed, expected $want (launcher status $rc)" >&2
  status=1
fi
# Ranks unmap on exit; give the last ones a moment.
sleep 1
after=$(ls /dev/shm 2>/dev/null | grep '^infiniccl-' | sort)
left=$(comm -13 <(echo "$before") <(echo "$after") | grep . || true)
if [ -n "$left" ]; then
  echo "run_shrink: left in /dev/shm: $left" >&2
  status=1
fi
exit $status
