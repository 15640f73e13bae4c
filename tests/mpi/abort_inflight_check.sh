#!/usr/bin/env bash
# Runs test_comm_abort's `inflight` mode at 2 ranks and checks how the job
# ended. Rank 0 aborts its communicator while its other thread is blocked in
# an AllReduce that rank 1 never joins.
#   ft=0 (MPI cannot cancel the call): the library says so once and ends the
#   job through MPI_Abort(comm, 1), so the launcher exits with 1; the blocked
#   call never returns and no rank reaches its end.
#   ft=1 (a fault-tolerant MPI): the revoke ends the blocked call with an
#   error, the abort succeeds, and the job ends with 0 and no failures.
# Either way both ranks' AllReduce before the abort gave 1 + 2 = 3.
# usage: abort_inflight_check.sh <ft: 0|1> <launcher and program...>
set -u
ft=$1
shift
out=$(mktemp)
"$@" >"$out" 2>&1
rc=$?
cat "$out"
bad=0
fail() {
  echo "abort_inflight_check: $*" >&2
  bad=1
}
count() { grep -cE -- "$1" "$out"; }
for r in 0 1; do
  [ "$(count "^\[rank $r\] before the abort: AllReduce gave 3$")" = 1 ] ||
    fail "rank $r did not print its AllReduce of 3 once"
done
[ "$(count '^\[rank 0\] calling infinicclCommAbort with a call in flight$')" = 1 ] ||
  fail "rank 0 did not reach its abort"
[ "$(count 'FAIL')" = 0 ] || fail "a rank printed FAIL"
if [ "$ft" = 0 ]; then
  [ "$rc" = 1 ] || fail "exit status $rc, expected MPI_Abort's 1"
  [ "$(count 'still has 1 call\(s\) in flight.*MPI_Abort on this communicator')" = 1 ] ||
    fail "the library did not say once why it ends the job"
  [ "$(count 'the blocked AllReduce returned|test_comm_abort inflight:')" = 0 ] ||
    fail "a call or a rank went on past the abort"
else
  [ "$rc" = 0 ] || fail "exit status $rc, expected 0"
  [ "$(count '^\[rank 0\] the blocked AllReduce returned code [1-9][0-9]*$')" = 1 ] ||
    fail "the blocked AllReduce did not return an error once"
  [ "$(count 'the blocked call returned after the revoke, the abort succeeded$')" = 1 ] ||
    fail "the abort did not succeed"
  for r in 0 1; do
    [ "$(count "^\[rank $r/2\] test_comm_abort inflight: 0 failures$")" = 1 ] ||
      fail "rank $r did not end with 0 failures"
  done
fi
rm -f "$out"
exit $bad
