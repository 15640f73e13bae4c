#!/usr/bin/env bash
# Self-test of run_on_nodes.sh and node_agent.sh (ctest: nodes_runner).
# usage: runner_selftest.sh openmpi|mpich LAUNCHER TEST_NODES_PROGRAM
#  1. the agent takes the argument forms ssh is given (options before the
#     host, with their values apart or attached, user@host, the command as
#     one word or several) and refuses hosts that are not emulated nodes;
#  2. it runs the command in a UTS namespace named after the host, with the
#     quoting of the words undone as a remote shell would, and leaves this
#     machine's host name alone;
#  3. the runner passes the job's failure on, refuses a bad layout, and
#  4. kills a job that never ends at its --timeout (exit 124) and leaves no
#     process of it behind.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 openmpi|mpich LAUNCHER TEST_NODES_PROGRAM" >&2; exit 2; }
mpi=$1
launcher=$2
program=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
agent=$here/node_agent.sh
runner=$here/run_on_nodes.sh
failures=0
# Without the privileges to emulate nodes the runner says so and exits 77;
# so does this test (ctest: skipped).
"$runner" --check --nodes 1,1 >/dev/null 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  "$runner" --check --nodes 1,1
  exit 77
fi

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect_agent DESCRIPTION EXPECTED_OUTPUT AGENT_ARGS...
expect_agent() {
  local what=$1 want=$2 got
  shift 2
  got=$(ICCL_NODE_AGENT_ECHO=1 "$agent" "$@" 2>&1)
  [ "$got" = "$want" ] || fail "agent, $what: got [$got], expected [$want]"
}

# ---- 1. argument forms ------------------------------------------------------------
# As Hydra calls it: -x, then the host, then the command in several words
# with quotes meant for the remote shell.
expect_agent "Hydra's form" $'host=iccl-node-b\ncmd="/usr/bin/hydra_pmi_proxy" --control-port vm:37009 --proxy-id 1' \
  -x iccl-node-b '"/usr/bin/hydra_pmi_proxy"' --control-port vm:37009 --proxy-id 1
# As Open MPI calls it: the host, then the command's words (the first with
# a leading space), quoted for the remote shell.
expect_agent "Open MPI's form" $'host=iccl-node-a\ncmd= orted -mca ess "env" -mca orte_hnp_uri "1.0;tcp://127.0.0.1:1"' \
  iccl-node-a ' orted' -mca ess '"env"' -mca orte_hnp_uri '"1.0;tcp://127.0.0.1:1"'
expect_agent "the command as one word" $'host=iccl-node-a\ncmd=echo a b' iccl-node-a 'echo a b'
expect_agent "options with values, attached, clustered; user@host" $'host=iccl-node-c\ncmd=true' \
  -o StrictHostKeyChecking=no -oBatchMode=yes -p 22 -p22 -l root -xT -tp 2222 -q root@iccl-node-c true
expect_agent "-- before the host" $'host=iccl-node-a\ncmd=-x' -x -- iccl-node-a -x

# Refusals: exit 255 (as ssh's own failures) with a reason.
for args in "no-such-host-iccl.invalid true" "192.0.2.1 true" "iccl-node-a" "-x" "-p"; do
  # shellcheck disable=SC2086
  out=$("$agent" $args 2>&1)
  rc=$?
  [ $rc -eq 255 ] && [[ $out == node_agent:* ]] || fail "agent $args: exit $rc, said [$out]; expected 255 and a reason"
done

# ---- 2. the namespace ----------------------------------------------------------------
before=$(hostname)
got=$("$agent" -x iccl-node-b 'echo "$(hostname)"' 2>&1)
[ "$got" = iccl-node-b ] || fail "agent: the command saw host name [$got], expected iccl-node-b"
got=$("$agent" iccl-node-a printf '"%s|"' 'a b' c 2>&1)
[ "$got" = "a|b|c|" ] || fail "agent: words not joined and reparsed as ssh does: got [$got]"
got=$("$agent" iccl-node-a 'exit 7'; echo $?)
[ "$got" = 7 ] || fail "agent: the command's exit status 7 came back as $got"
[ "$(hostname)" = "$before" ] || fail "this machine's host name changed to $(hostname)"

# ---- 3. the runner's failures ------------------------------------------------------------
"$runner" --mpi "$mpi" --launcher "$launcher" --nodes 1,1 -- false >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "runner: a failing program gave exit $rc"
out=$("$runner" --mpi "$mpi" --nodes 0,2 -- true 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ $out == *"--nodes must be"* ]] || fail "runner --nodes 0,2: exit $rc, said [$out]"

# ---- 4. a job that never ends -------------------------------------------------------------
mark="ICCL_SELFTEST_MARK=$$.$RANDOM"
start=$SECONDS
env "$mark" "$runner" --mpi "$mpi" --launcher "$launcher" --nodes 1,2 --timeout 5 -- "$program" hang
rc=$?
took=$((SECONDS - start))
[ $rc -eq 124 ] || fail "runner: a job that never ends gave exit $rc, expected 124 (timeout)"
[ $took -le 60 ] || fail "runner: the 5 s timeout took $took s to end the job"
left=$(grep -lzxF "$mark" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')
if [ -n "$left" ]; then
  fail "processes left behind by the timed-out job: $left"
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null
fi

if [ $failures -eq 0 ]; then
  echo "runner_selftest ($mpi): ok (the timed-out job ended in $took s)"
else
  echo "runner_selftest ($mpi): $failures failure(s)"
fi
[ $failures -eq 0 ]
