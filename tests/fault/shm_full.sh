#!/usr/bin/env bash
# A /dev/shm too small for the shared-memory segment (a container's default
# is 64 MiB, shared by every job on the machine): the ranks must fall back
# to MPI with an INFO line naming the reason, and every result stay exact,
# instead of dying of SIGBUS at the first touch of a page past the tmpfs's
# end. Runs the command in a mount namespace of its own whose /dev/shm is a
# 1 MiB tmpfs (needs root or CAP_SYS_ADMIN: exit 77, skipped, without).
# usage: shm_full.sh COMMAND...   (the MPI launcher and the test program)
set -u
if ! unshare -m -- true 2>/dev/null; then
  echo "shm_full: cannot make a mount namespace (needs root); skipped"
  exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2016  # expanded by the inner shell
INFINICCL_DEBUG=INFO unshare -m -- sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' \
  sh "$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "shm_full: the job failed (exit $rc)"; exit 1; }
grep -q "no shared memory among the ranks (posix_fallocate" "$log" || {
  echo "shm_full: no INFO line says the segment could not be reserved"
  exit 1
}
echo "shm_full: MPI took over, results exact"
