#!/usr/bin/env bash
# The device checks for a machine with an NVIDIA GPU (the lent H200, see
# ../shared/device/README.md): build with the CUDA runtime, run the unit and
# device tests, the MPI device tests at 1 and 2 ranks, NCCL on device buffers
# at 1 rank (every collective, GetUniqueId/CommInitRank, CommInitAll, the
# stream-ordered case; one GPU cannot hold two NCCL ranks), and the benchmark
# on device buffers: the infiniccl_ modes through NCCL at 1 rank next to the
# same modes staged through MPI (INFINICCL_BACKEND=mpi), and at 2 ranks
# sharing the GPU (staged). Every step runs even when an earlier one failed;
# each step's output goes to <out>/<step>.log and its exit code to
# <out>/summary.txt. The whole run stays under about 7 minutes.
#
#   tests/device/cuda_checks.sh [OUTDIR]     # OUTDIR: default $OUT, else ./cuda-checks-out
#
# That machine has CUDA, nvcc, CMake and Python but no MPI and no GoogleTest.
# Carry both from here (run in the repo root, once):
#   ../shared/device/pack-mpi.sh .devmpi        # Open MPI runtime + headers
#   tests/device/pack-gtest.sh .devgtest        # GoogleTest sources
#   echo /.devmpi/ >> .git/info/exclude; echo /.devgtest/ >> .git/info/exclude
# then run with carry [".devmpi", ".devgtest"]. Without .devgtest (and no
# system GoogleTest) the tests are not built and only the benchmark runs.
# shellcheck disable=SC2317  # the helper functions run through bash -c
set -u
cd "$(dirname "$0")/../.." || exit 2
out=${1:-${OUT:-$PWD/cuda-checks-out}}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
budget=420  # seconds for all steps together
start=$(date +%s)
build="build-gpu"
overall=0

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with a time limit (cut to
# what is left of the budget), appends its output to <out>/<NAME up to the
# first dot>.log and records the exit code; never stops the script.
step() {
  local name=$1 limit=$2 rc t0 left what
  shift 2
  left=$((budget - ($(date +%s) - start)))
  if ((left < limit)); then limit=$left; fi
  if ((limit < 5)); then
    echo "SKIP $name (time budget spent)" | tee -a "$summary"
    overall=1
    return 1
  fi
  t0=$(date +%s)
  {
    echo "+ $* (limit ${limit}s)"
    timeout -k 10 "$limit" "$@"
  } 2>&1 | tee -a "$out/${name%%.*}.log"
  rc=${PIPESTATUS[0]}
  what=$(echo "$*" | tr '\n' ' ' | cut -c1-150)
  printf '%-16s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$what" | tee -a "$summary"
  ((rc == 0)) || overall=1
  return "$rc"
}

# ---- environment ------------------------------------------------------------
if [ -f .devmpi/mpi-env.sh ]; then
  # shellcheck disable=SC1091
  source .devmpi/mpi-env.sh .devmpi
fi
# NCCL: the CUDA toolkit's when it has one, else the pip wheel's (nvidia-nccl),
# given to CMake as NCCL_HOME (its libnccl.so.2 is found by that name too).
nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
nccl_args=()
if [ -n "$nccl_home" ]; then
  export LD_LIBRARY_PATH="$nccl_home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  nccl_args=(-DNCCL_HOME="$nccl_home")
fi
export INFINICCL_ABORT_ON_ERROR=0

environment() {
  nvidia-smi -L
  nvcc --version | tail -1
  cmake --version | head -1
  c++ --version | head -1
  mpirun --version 2>&1 | head -1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}
step environment 30 bash -c "$(declare -f environment); environment"

# ---- GoogleTest from carried sources, when the machine has none ---------------
prefix_args=()
if [ -f .devgtest/CMakeLists.txt ]; then
  gtest_build() {
    cmake -S .devgtest -B /tmp/gtest-build -DBUILD_GMOCK=OFF -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest-install &&
      cmake --build /tmp/gtest-build -j16 && cmake --install /tmp/gtest-build
  }
  if step configure.gtest 150 bash -c "$(declare -f gtest_build); gtest_build"; then
    prefix_args=(-DCMAKE_PREFIX_PATH=/tmp/gtest-install)
  fi
fi

# ---- configure and build ------------------------------------------------------
configure_args=(-S . -B "$build" -DWITH_NVIDIA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
                -DINFINICCL_LARGE_COUNT_TESTS=OFF "${prefix_args[@]}" "${nccl_args[@]}")
testing=ON
if ! step configure 120 cmake "${configure_args[@]}" -DBUILD_TESTING=ON; then
  testing=OFF  # most likely no GoogleTest: still build the library and benchmark
  step configure 120 cmake "${configure_args[@]}" -DBUILD_TESTING=OFF
fi
# What the checks below run first, then everything else; keep going past a
# failure so that one broken file costs one test, not all of them.
first=(infiniccl-bench)
if [ "$testing" = ON ]; then first+=(cuda_runtime_test nccl_device_test); fi
keep_going=(-k)
if [ -f "$build/build.ninja" ]; then keep_going=(-k 0); fi
step build.first 240 cmake --build "$build" -j16 --target "${first[@]}" -- "${keep_going[@]}"
step build.rest 240 cmake --build "$build" -j16 -- "${keep_going[@]}"

# ---- tests --------------------------------------------------------------------
if [ "$testing" = ON ]; then
  grep -h 'InfiniCCL CCL' "$out/configure.log" || true
  step ctest-unit 120 ctest --test-dir "$build" -L 'unit|device' -LE mpi -E nccl_device \
    --output-on-failure --timeout 120
  # Several -L options must all match: MPI tests labelled device, 1 and 2 ranks.
  step ctest-mpi 150 ctest --test-dir "$build" -L mpi -L device -R '_np[12]$' -E nccl_device \
    --output-on-failure --timeout 120
  # NCCL at 1 rank: bootstrap (no MPI) and CommInitAll, with NCCL's own log.
  step nccl 120 env NCCL_DEBUG=WARN INFINICCL_DEBUG=INFO ctest --test-dir "$build" \
    -R nccl_device --output-on-failure --timeout 120 -V
fi

# ---- benchmark on device buffers ----------------------------------------------
mpi_flags=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  mpi_flags=(--allow-run-as-root --oversubscribe --mca btl "self,vader")
fi
bench=("$build/tools/bench/infiniccl-bench" --device cuda --elements 1048576,16777216
       --validate)
iccl_modes=infiniccl_allreduce,infiniccl_allgather,infiniccl_broadcast,infiniccl_reduce_scatter
iccl_modes+=,infiniccl_alltoall
# 1 rank: the infiniccl_ modes through NCCL (INFO names the path), then the
# same calls staged through MPI, next to the hand-staged reference.
step bench.nccl 60 env INFINICCL_DEBUG=INFO mpirun -np 1 "${mpi_flags[@]}" "${bench[@]}" \
  --modes "$iccl_modes"
step bench.mpi1 60 env INFINICCL_BACKEND=mpi mpirun -np 1 "${mpi_flags[@]}" "${bench[@]}" \
  --modes "$iccl_modes,stage_reuse"
# 2 ranks share the one GPU: no NCCL communicator, staged MPI.
step bench.np2 120 mpirun -np 2 "${mpi_flags[@]}" "${bench[@]}" \
  --modes host_allreduce,stage_reuse,infiniccl_allreduce

echo "total $(($(date +%s) - start))s, overall rc=$overall" | tee -a "$summary"
exit "$overall"
