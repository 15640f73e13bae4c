#!/usr/bin/env bash
# on_own_host.sh PROGRAM ID_FILE NRANKS RANK ARGS...: runs PROGRAM in a UTS
# namespace of its own whose host name is iccl-launch-RANK, so every rank
# that run_ranks.sh starts is on a node of its own as the bootstrap sees
# nodes (host name and boot id, comm/comm_unique_id.cpp). Needs root or
# CAP_SYS_ADMIN; without, it says so and exits 77 (ctest's skip).
prog=$1 rank=$4
if ! unshare --uts true 2>/dev/null; then
  echo "on_own_host: SKIPPED: unshare --uts needs root or CAP_SYS_ADMIN"
  exit 77
fi
exec unshare --uts bash -c 'hostname "iccl-launch-$0" && exec "$@"' "$rank" "$@"
