#!/usr/bin/env bash
# Runs an MPI program with its ranks on several EMULATED nodes of this
# machine: each node is a host name in /etc/hosts (127.0.1.x), the MPI
# launcher is given the host list, and node_agent.sh (beside this script)
# stands in for ssh, starting each node's daemon in a new UTS namespace named
# after the node. The MPI then sees separate hosts: MPI_COMM_TYPE_SHARED
# splits by node, local ranks restart at 0 on each node, and traffic between
# nodes leaves shared memory (Open MPI: TCP over loopback). docs/TESTING.md
# ("Emulated nodes") explains it.
#
# usage: run_on_nodes.sh [--mpi openmpi|mpich] [--launcher PATH] [--nodes N,N,...]
#                        [--timeout SECONDS] [--round-robin] [--dry-run] -- PROGRAM [ARGS...]
#        run_on_nodes.sh --check [--nodes N,N,...]
#   --nodes   ranks per node, one number per node (default 2,2); nodes are
#             named iccl-node-a, iccl-node-b, ... (at most 8), ranks are
#             placed in order (the first N1 on iccl-node-a...).
#   --round-robin  deal the ranks one per node in turn instead (rank 0 on
#             iccl-node-a, rank 1 on iccl-node-b, ...; nodes of one size):
#             each node then holds ranks that are not consecutive.
#   --mpi     which MPI's launcher and settings (default openmpi);
#   --launcher  the launcher program (default mpirun.openmpi / mpiexec.mpich).
#   --timeout the whole job's limit (default 300 s): then it is killed and
#             the exit status is 124.
#   --check   only set up the node names and check that this machine can
#             emulate nodes (exit 0), or say why not (exit 2, or 77
#             when the reason is missing privileges).
#   --dry-run print the launcher command and exit.
# The program sees ICCL_NODES_HOSTS=iccl-node-a:2,iccl-node-b:2 (the layout)
# and the caller's environment. Needs root (or CAP_SYS_ADMIN, and the names
# already in /etc/hosts).
#
# Exit status: the launcher's (the program's failure, as the MPI reports
# it); 124 on timeout; 77 when this process lacks the privileges (root or
# CAP_SYS_ADMIN) to emulate nodes, after a line "run_on_nodes: SKIPPED: ..."
# (ctest reports the test as skipped); 2 when nodes cannot be emulated here
# for another reason or the usage is wrong; 3 when the job ended but left processes that had to be killed.
# Every process of the job carries a marker in its environment; whatever is
# still running when the launcher returns (or when this script is
# interrupted) is killed, and the run's temporary directory is removed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
agent=$here/node_agent.sh
mpi=openmpi
launcher=""
nodes=2,2
timeout_s=300
check_only=0
dry_run=0
round_robin=0

usage() {
  sed -n '/^# usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
say() { echo "run_on_nodes: $*" >&2; }
die() {
  say "$*"
  exit 2
}
# Missing privileges are not a failure of the library: the job is skipped.
skip() {
  say "SKIPPED: $*"
  exit 77
}

while [ $# -gt 0 ]; do
  case $1 in
    --mpi) mpi=${2:-}; shift 2 || usage ;;
    --mpi=*) mpi=${1#*=}; shift ;;
    --launcher) launcher=${2:-}; shift 2 || usage ;;
    --launcher=*) launcher=${1#*=}; shift ;;
    --nodes) nodes=${2:-}; shift 2 || usage ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --timeout) timeout_s=${2:-}; shift 2 || usage ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --check) check_only=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --round-robin) round_robin=1; shift ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) break ;;
  esac
done
case $mpi in
  openmpi) : "${launcher:=mpirun.openmpi}" ;;
  mpich) : "${launcher:=mpiexec.mpich}" ;;
  *) die "--mpi must be openmpi or mpich, not '$mpi'" ;;
esac
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a whole number of seconds"
[[ $nodes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--nodes must be rank counts like 2,2 or 1,2,3"
IFS=, read -r -a counts <<<"$nodes"
[ ${#counts[@]} -le 8 ] || die "at most 8 emulated nodes (iccl-node-a..h)"
if [ $check_only -eq 0 ] && [ $# -eq 0 ]; then
  usage
fi

letters=(a b c d e f g h)
names=()
hostlist=""
total=0
for i in "${!counts[@]}"; do
  names+=("iccl-node-${letters[$i]}")
  hostlist+="${hostlist:+,}${names[$i]}:${counts[$i]}"
  total=$((total + counts[i]))
done

# ---- set-up: node names and the UTS namespace ------------------------------
# 127.0.1.11 for iccl-node-a, .12 for b...: not 127.0.0.1 (both launchers
# take a host of that address for this machine and start its ranks here,
# without the agent: tried with localhost) and not 127.0.1.1 (Debian's
# address for the machine's own name), so that no address stands for both a
# node and this machine.
for tool in unshare hostname getent timeout flock awk grep mktemp nproc; do
  command -v "$tool" >/dev/null || die "'$tool' is not installed (util-linux, coreutils, libc-bin)"
done
# Appends "ADDR NAME" to /etc/hosts unless NAME is there: appended, never
# rewritten (a container's /etc/hosts is a bind mount), under a lock so that
# concurrent runs do not add a name twice.
add_host_line() {
  [ -w /etc/hosts ] || return 1
  (
    flock 9 || exit 1
    grep -qE "^[^#]*[[:space:]]$2([[:space:]]|\$)" /etc/hosts && exit 0
    [ -z "$(tail -c 1 /etc/hosts)" ] || echo >>/etc/hosts || exit 1
    printf '%s\t%s\t# InfiniCCL emulated node (tests/nodes)\n' "$1" "$2" >>/etc/hosts
  ) 2>/dev/null 9>>/etc/hosts
}
self_addr=$(getent hosts "$(hostname)" | awk '{ print $1; exit }')
for i in "${!names[@]}"; do
  name=${names[$i]}
  want=127.0.1.$((11 + i))
  addr=$(getent hosts "$name" | awk '{ print $1; exit }')
  if [ -z "$addr" ]; then
    add_host_line "$want" "$name" ||
      skip "cannot add '$want $name' to /etc/hosts (emulated nodes need root, or that line added by hand)"
    addr=$(getent hosts "$name" | awk '{ print $1; exit }')
    [ "$addr" = "$want" ] || die "added '$want $name' to /etc/hosts but '$name' resolves to '${addr:-nothing}'"
  fi
  case $addr in
    127.0.0.1 | ::1) die "$name resolves to $addr, which the MPI launchers take for this machine; give it a 127.0.1.x address in /etc/hosts" ;;
    127.*) ;;
    *) die "$name resolves to $addr, not a loopback address; fix its line in /etc/hosts" ;;
  esac
  [ "$addr" != "$self_addr" ] ||
    die "$name resolves to $addr, the address of this machine's own name ($(hostname)); give it a 127.0.1.x address of its own in /etc/hosts"
done
if ! out=$(unshare --uts -- hostname iccl-node-probe 2>&1); then
  skip "this machine cannot emulate nodes: 'unshare --uts' then 'hostname' failed (they need root, or CAP_SYS_ADMIN; in a container, one started with that capability): ${out:-no message}"
fi
if [ $check_only -eq 1 ]; then
  for name in "${names[@]}"; do say "$name -> $(getent hosts "$name" | awk '{ print $1; exit }')"; done
  say "unshare --uts: ok; emulated nodes can run here"
  exit 0
fi
command -v "$launcher" >/dev/null || die "MPI launcher '$launcher' not found"

# ---- the launcher command ----------------------------------------------------
if [ $dry_run -eq 1 ]; then
  rundir=/dev/shm  # vader's default; a real run makes its own directory
else
  rundir=$(mktemp -d /dev/shm/iccl-nodes.XXXXXX 2>/dev/null ||
    mktemp -d "${TMPDIR:-/tmp}/iccl-nodes.XXXXXX") || die "cannot make a temporary directory"
  trap 'rm -rf "$rundir"' EXIT
fi
if [ "$mpi" = openmpi ]; then
  # plm rsh: start the daemons through the agent (not a resource manager's
  # launcher, should there be one). btl tcp: the ranks of different nodes cannot use shared
  # memory (vader) any more; tcp must be allowed on the loopback addresses,
  # which Open MPI excludes by default (on a machine whose only interface is
  # lo nothing else reaches the other nodes). oob: the daemons' wiring to
  # mpirun stays on loopback too, whatever other interfaces the machine has.
  # vader's segments and the session directory go to this run's directory,
  # so a killed job leaves no files. --bind-to none: each emulated node
  # believes it owns all the cores and would bind its ranks to the same ones.
  # shellcheck disable=SC2054  # (commas inside values)
  cmd=("$launcher" --host "$hostlist" -n "$total"
       --mca plm rsh --mca plm_rsh_agent "$agent"
       --mca btl self,vader,tcp --mca btl_tcp_if_include 127.0.0.0/8
       --mca oob_tcp_if_include 127.0.0.0/8
       --mca btl_vader_backing_directory "$rundir" --bind-to none)
  # More ranks than cores: ranks must yield when idle, as Open MPI has them
  # do oversubscribed on one machine; no emulated node looks oversubscribed
  # to it, and busy-polling ranks made a one-int AllReduce 20-50 times
  # slower (2 nodes x 2 ranks on 2 cores).
  [ "$total" -le "$(nproc)" ] || cmd+=(--mca mpi_yield_when_idle 1)
  [ "$(id -u)" -ne 0 ] || cmd+=(--allow-run-as-root)
  [ $round_robin -eq 0 ] || cmd+=(--map-by node)
else
  # Hydra: the host list and the agent; nothing else is needed. (UCX, MPICH's
  # network layer here, still finds the other nodes' ranks reachable through
  # shared memory: it does not go by host name.)
  # Round robin: one slot a host, which Hydra cycles through.
  hosts=$hostlist
  [ $round_robin -eq 0 ] || hosts=$(echo "$hostlist" | sed 's/:[0-9]*//g')
  cmd=("$launcher" -hosts "$hosts" -n "$total" -launcher ssh -launcher-exec "$agent")
fi
cmd+=("$@")
if [ $dry_run -eq 1 ]; then
  printf 'ICCL_NODES_HOSTS=%s ' "$hostlist"
  printf '%q ' "${cmd[@]}"
  echo
  exit 0
fi

# ---- run, then make sure nothing of the job is left ----------------------------
marker="ICCL_NODES_RUN=$$.$(date +%s%N).$RANDOM"
launcher_pid=""

job_pids() {  # processes whose environment carries this run's marker
  grep -lzxF "$marker" /proc/[0-9]*/environ 2>/dev/null | awk -F/ -v self=$$ '$3 != self { print $3 }'
}

# Waits up to $1 tenths of a second for the job's processes to end on their
# own, then TERMs and KILLs what remains. Prints how many had to be killed.
reap() {
  local grace=$1 pids n=0 i
  for ((i = 0; i < grace; i++)); do
    [ -n "$(job_pids)" ] || { echo 0; return; }
    sleep 0.1
  done
  for sig in TERM KILL KILL KILL; do
    pids=$(job_pids)
    [ -n "$pids" ] || break
    [ $n -gt 0 ] || n=$(echo "$pids" | wc -l)
    if [ "$sig" = TERM ]; then
      say "killing what the job left running:$(for p in $pids; do printf ' %s(%s)' "$p" "$(cat /proc/$p/comm 2>/dev/null)"; done)"
    fi
    # shellcheck disable=SC2086
    kill -s $sig $pids 2>/dev/null
    sleep 1
  done
  [ -z "$(job_pids)" ] || say "could not kill: $(job_pids | tr '\n' ' ')"
  echo "$n"
}

on_signal() {
  trap - INT TERM HUP
  say "interrupted: stopping the job"
  [ -z "$launcher_pid" ] || kill -TERM "$launcher_pid" 2>/dev/null
  reap 20 >/dev/null
  exit 130
}
trap on_signal INT TERM HUP

say "$mpi: $total ranks on $hostlist (timeout ${timeout_s} s)"
# timeout signals the launcher's whole process group, then KILLs it 10 s
# later; what the launchers start elsewhere (their own sessions) is reaped
# by the marker below.
env "$marker" ICCL_NODES_HOSTS="$hostlist" TMPDIR="$rundir" \
  timeout -k 10 "$timeout_s" "${cmd[@]}" &
launcher_pid=$!
start=$SECONDS
wait "$launcher_pid"
rc=$?
launcher_pid=""
# 137: the launcher ignored timeout's TERM and was KILLed 10 s later.
# (124 before the limit is the program's own code: the watchdog's.)
if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ $((SECONDS - start)) -ge "$timeout_s" ]; then
  say "timed out after ${timeout_s} s: the job was killed"
  rc=124
fi
# 10 s for the daemons of every node to exit on their own: on a loaded
# 2-core machine they were seen to take more than 3 s.
left=$(reap 100)
if [ "$left" -gt 0 ] && [ $rc -eq 0 ]; then
  say "the job ended but left $left process(es) running (killed)"
  rc=3
fi
exit $rc
