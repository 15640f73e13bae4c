#!/usr/bin/env bash
# Valgrind memcheck on one 2-rank run of every collective (host and
# emulated device buffers): tests/sanitizers/every_collective.
#   scripts/valgrind.sh [openmpi|mpich] <path to every_collective>
# Exit 0 when memcheck reports no error and no definite leak outside the
# documented suppressions (tests/sanitizers/valgrind.supp); when it fails,
# each rank's report is printed and kept as valgrind.<pid>.log in the
# current directory. ctest runs it as valgrind_every_collective_np2.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
flavour=${1:-openmpi}
program=${2:?usage: valgrind.sh [openmpi|mpich] <every_collective>}
source "$here/scripts/deps.sh"

supp=(--suppressions="$here/tests/sanitizers/valgrind.supp")
[ -f /usr/share/openmpi/openmpi-valgrind.supp ] &&
  supp+=(--suppressions=/usr/share/openmpi/openmpi-valgrind.supp)
log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT

extra=()
if [ "$flavour" = openmpi ]; then
  # Keep MPI's plugins loaded at exit so leak stacks name them (and the
  # suppressions can tell MPI's memory from ours).
  extra=(--mca mca_base_component_disable_dlclose 1)
fi
set +e
INFINICCL_PIPELINE_CHUNK_BYTES=4K infiniccl_mpirun "$flavour" "${extra[@]}" -np 2 \
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --num-callers=40 "${supp[@]}" \
  --log-file="$log_dir/valgrind.%p.log" "$program"
rc=$?
set -e
# --error-exitcode makes a rank with any memcheck error or definite leak
# exit 99, which the launcher passes on; the logs are shown then (otherwise
# they hold only notes such as "valgrind ignores shmget(SHM_HUGETLB)").
if [ "$rc" -ne 0 ]; then
  for log in "$log_dir"/valgrind.*.log; do
    cat "$log"
    cp "$log" .
  done
fi
echo "valgrind.sh: $flavour, exit $rc ($([ "$rc" = 0 ] && echo clean || echo 'memcheck errors or a failed run'))"
[ "$rc" -eq 0 ]
