#!/usr/bin/env bash
# A /dev/shm too small for the shared-memory segment (a container's default
# is 64 MiB, shared by every job on the machine). Runs the command in a
# mount namespace of its own whose /dev/shm is a 1 MiB tmpfs (needs root or
# CAP_SYS_ADMIN: exit 77, skipped, without); the job must succeed (its
# results exact) and its log match PATTERN (grep -E):
#   - segments without a name (memfd_create) do not live in /dev/shm: the
#     ranks use shared memory whatever its size;
#   - on the named path (where pidfd_getfd is refused) the ranks must fall
#     back to MPI with an INFO line naming the reason, instead of dying of
#     SIGBUS at the first touch of a page past the tmpfs's end.
# usage: shm_full.sh PATTERN COMMAND...   (the MPI launcher and the test program)
set -u
if ! unshare -m -- true 2>/dev/null; then
  echo "shm_full: cannot make a mount namespace (needs root); skipped"
  exit 77
fi
pattern=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2016  # expanded by the inner shell
INFINICCL_DEBUG=INFO unshare -m -- sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' \
  sh "$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "shm_full: the job failed (exit $rc)"; exit 1; }
grep -qE "$pattern" "$log" || {
  echo "shm_full: no line matches '$pattern'"
  exit 1
}
echo "shm_full: '$pattern' said, results exact"
