#!/usr/bin/env bash
# The seeded randomized interleaving test (tests/mpi/test_random_interleave.cpp)
# over many seeds: builds it in a build directory of its own
# (build-random-<mpi>, or $BUILD_DIR), then runs seeds 1..SEEDS at 2 and 3
# ranks under the chosen MPI, in batches of BATCH seeds (default 50) per
# launch, each launch under a time limit (BATCH_TIMEOUT seconds, default
# 600). Prints the wall time of each rank count; stops at the first failure
# or time-out, naming the seed (the test prints one line per seed; a seed
# that started and never ended is the one that hung).
#   scripts/random_interleave.sh [SEEDS] [openmpi|mpich]
set -euo pipefail
seeds=${1:-500}
mpi=${2:-openmpi}
case "$mpi" in
  openmpi | mpich) ;;
  *) echo "usage: $0 [SEEDS] [openmpi|mpich]" >&2; exit 2 ;;
esac
batch=${BATCH:-50}
batch_timeout=${BATCH_TIMEOUT:-600}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$here/build-random-$mpi}

cmake -S "$here" -B "$build" -DINFINICCL_MPI="$mpi" -DWITH_NVIDIA=OFF -DWITH_HIP=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target test_random_interleave >/dev/null
program="$build/tests/mpi/test_random_interleave"

if [ "$mpi" = mpich ]; then
  launcher=(mpirun.mpich)
else
  launcher=(mpirun --allow-run-as-root --oversubscribe)
  command -v mpirun.openmpi >/dev/null && launcher[0]=mpirun.openmpi
fi

export INFINICCL_STAGING_CACHE_BYTES=${INFINICCL_STAGING_CACHE_BYTES:-1M}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for np in 2 3; do
  start=$(date +%s%N)
  first=1
  while [ "$first" -le "$seeds" ]; do
    count=$((seeds - first + 1))
    [ "$count" -le "$batch" ] || count=$batch
    rc=0
    timeout -k 10 "$batch_timeout" "${launcher[@]}" -np "$np" "$program" "$first" "$count" \
      >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
      tail -n 40 "$log"
      last=$(grep -oE '^seed [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2 || true)
      if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
        failed=$(( ${last:-$((first - 1))} + 1 ))
        if [ "$failed" -gt $((first + count - 1)) ]; then
          echo "== $mpi, $np ranks: seeds $first..$((first + count - 1)) ended, but the" \
               "launch did not end within ${batch_timeout} s (Finalize or exit)"
        else
          echo "== $mpi, $np ranks: seed $failed did not finish within the limit" \
               "(seeds $first..$((first + count - 1)), ${batch_timeout} s)"
        fi
      else
        failed=$(grep -oE '^seed [0-9]+: FAILED' "$log" | head -n 1 | cut -d' ' -f2 || true)
        echo "== $mpi, $np ranks: seed ${failed:-$((${last:-$((first - 1))} + 1))} FAILED" \
             "(exit status $rc)"
      fi
      exit 1
    fi
    first=$((first + count))
  done
  ms=$((($(date +%s%N) - start) / 1000000))
  printf '== %s, %d ranks: seeds 1..%d ok, %d.%01d s wall\n' "$mpi" "$np" "$seeds" \
    $((ms / 1000)) $((ms % 1000 / 100))
done
