#!/usr/bin/env bash
# The progress engine's figures (docs/PERFORMANCE.md, "Device buffers on the emulated device"), on the EMULATED
# device, side by side in one run per MPI and rank count:
#   return time and latency: infiniccl-bench return_allreduce with the engine
#     (INFINICCL_ASYNC=auto) and without (=0), copies at 2 GB/s, and again
#     with copies as fast as the H200's (the calibration in docs/PERFORMANCE.md: 13 GB/s and
#     4 us each; on two cores the emulated copies then take the cores'
#     time, which a GPU's copy engines do not);
#   overlap: the DDP-like loop (8 buckets of 4 MiB, each after a 4 ms
#     emulated kernel), both ways;
#   the pipeline against hand-written staging: infiniccl_allreduce and
#     stage_reuse at 16 and 64 MiB, 2 GB/s, 2 ranks, both ways;
#   host buffers: host_allreduce (the MPI call) and infiniccl_allreduce on
#     host buffers (--device cpu) at 4 KiB, 1 rank.
# Output: one log and one JSON per run in OUT_DIR.
# usage: scripts/perf_async.sh BUILD_DIR [OUT_DIR] [openmpi|mpich] [RANKS...]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-async}
mpi=${3:-openmpi}
shift $(($# < 3 ? $# : 3))
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(2 4)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/deps.sh
source "$here/deps.sh"
bench=("$build/tools/bench/infiniccl-bench")
mkdir -p "$out"
run() {  # NAME NP ENV... -- BENCH ARGS...
  local name=$1 np=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" bash -c 'source "$0"; infiniccl_mpirun "$@"' "$here/deps.sh" "$mpi" \
    -np "$np" "${bench[@]}" "$@" --json "$out/${name}.json" >"$out/${name}.log" 2>&1
  echo "== $name" && grep -A12 -E "^# return time|^# overlap" "$out/${name}.log" || true
}
for np in "${ranks[@]}"; do
  for async in auto 0; do
    run "${mpi}_np${np}_async${async}" "$np" INFINICCL_ASYNC=$async INFINICCL_SIM_COPY_GBPS=2 -- \
      --device sim --modes return_allreduce,overlap -b 4K -e 64M -f 4 -w 2 -n 10 \
      --buckets 8 --bucket-bytes 4M --kernel-us 4000 -q
  done
done
for np in "${ranks[@]}"; do
  for async in auto 0; do
    run "${mpi}_np${np}_h200_async${async}" "$np" INFINICCL_ASYNC=$async INFINICCL_SIM_COPY_GBPS=13 \
      INFINICCL_SIM_COPY_LATENCY_US=4 -- \
      --device sim --modes return_allreduce -b 4K -e 64M -f 4 -w 3 -n 20 -q
  done
done
for async in auto 0; do
  run "${mpi}_np2_pipeline_async${async}" 2 INFINICCL_ASYNC=$async INFINICCL_SIM_COPY_GBPS=2 -- \
    --device sim --modes stage_reuse,infiniccl_allreduce -b 16M -e 64M -f 4 -w 2 -n 6
  grep -E "^ +[0-9]+ " "$out/${mpi}_np2_pipeline_async${async}.log" || true
done
run "${mpi}_np1_host" 1 -- --device cpu --modes host_allreduce,infiniccl_allreduce \
  --elements 1024 --warmup 100 --iters 5000 --repeat 7
grep -E "^ +[0-9]+ " "$out/${mpi}_np1_host.log" || true
