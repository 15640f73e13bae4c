#!/usr/bin/env bash
# Runs an MPI job with every process pinned to one CPU (taskset: the CPU this
# script may run on first), and passes when the job passes and its ranks'
# shared-memory transport saw that they share fewer usable cores than there
# are ranks ("its waits yield", at INFO): oversubscription judged by the
# affinity mask, not by the CPUs online.
# usage: run_one_core.sh <launcher and program...>
set -u
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
out=$(mktemp)
INFINICCL_DEBUG=INFO taskset -c "$cpu" "$@" >"$out" 2>&1
rc=$?
grep -v " INFO " "$out"
want="usable cores (affinity mask): its waits yield"
# On a machine of one CPU the mask changes nothing: any reason will do.
[ "$(getconf _NPROCESSORS_ONLN)" -gt 1 ] || want="its waits yield"
if ! grep -qF "$want" "$out"; then
  grep " INFO shared memory" "$out"
  echo "run_one_core: no rank said its waits yield on one CPU" >&2
  rc=1
fi
rm -f "$out"
exit $rc
