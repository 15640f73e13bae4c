#!/bin/sh
# Launcher agent for EMULATED nodes: stands in for ssh in an MPI launcher
# (Open MPI's `--mca plm_rsh_agent`, Hydra's `-launcher ssh -launcher-exec`)
# and runs the command on this machine, in a new UTS namespace whose host
# name is the node's, so that the launched daemon (orted, hydra_pmi_proxy)
# and the ranks it starts see that host name. Everything else (file systems,
# network, PIDs, shared memory) stays this machine's. See docs/TESTING.md.
#
# usage, as ssh:  node_agent.sh [ssh options] [user@]HOST COMMAND [WORDS...]
#   Options (-x, -o X=Y, -p 22, -l user...) are accepted and ignored. As ssh
#   does, COMMAND and WORDS are joined with spaces and run by a shell, so the
#   quoting the launchers write for a remote shell is undone the same way.
#   HOST must resolve to a loopback address (127.x, an emulated node's
#   /etc/hosts line): the agent never pretends to reach a real machine.
# Exit status: the command's; 255 when it cannot be started (as ssh).
# Needs CAP_SYS_ADMIN (root) for unshare --uts.
set -u

die() {
  echo "node_agent: $*" >&2
  exit 255
}

# ssh's options that take an argument (separately or attached: -p 22, -p22).
with_arg=BbcDEeFIiJLlmOopQRSWw
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    -?*) ;;
    *) break ;;
  esac
  opt=${1#-}
  shift
  # A cluster of flags (-xT), possibly ending in one with an argument (-xp 22)
  # or holding it (-xp22).
  while [ -n "$opt" ]; do
    c=${opt%"${opt#?}"}
    opt=${opt#?}
    case $with_arg in
      *"$c"*)
        if [ -z "$opt" ]; then
          [ $# -gt 0 ] || die "option -$c needs an argument"
          shift
        fi
        opt=""
        ;;
    esac
  done
done
[ $# -ge 1 ] || die "no host given (usage: node_agent.sh [ssh options] HOST COMMAND...)"
host=${1##*@}
shift
[ $# -ge 1 ] || die "no command for $host (an interactive login is not emulated)"
# All the words, joined by spaces as ssh does.
cmd=$*

addr=$(getent hosts "$host" | awk '{ print $1; exit }')
case $addr in
  127.*) ;;
  "") die "$host does not resolve; emulated nodes are named in /etc/hosts (tests/nodes/run_on_nodes.sh adds them)" ;;
  *) die "$host resolves to $addr, not a loopback address: not an emulated node" ;;
esac

if [ -n "${ICCL_NODE_AGENT_ECHO:-}" ]; then
  # Self-test hook (tests/nodes/runner_selftest.sh): show what would run.
  printf 'host=%s\ncmd=%s\n' "$host" "$cmd"
  exit 0
fi

exec unshare --uts -- /bin/sh -c \
  'hostname "$1" || { echo "node_agent: cannot set the host name to $1" >&2; exit 255; }
   exec /bin/sh -c "$2"' node_agent "$host" "$cmd"
