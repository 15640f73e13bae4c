#!/usr/bin/env bash
# The GPU check, run on the lent GPU machine (one H200; ../shared/device/
# README.md). It builds nothing: tests/device/gpu_prepare.sh builds the CUDA +
# NCCL variant on the CPU machine first and leaves it in .gpubuild, with
# Open MPI's runtime in .devmpi. Then, on the GPU machine, one command with
# carry [".devmpi", ".gpubuild"]:
#
#   bash tests/device/cuda_checks.sh [OUTDIR]    # OUTDIR: default $OUT, else ./cuda-checks-out
#
# It runs, each step under a time limit and the whole under about 5 minutes:
# which NCCL was loaded (path and version, printed); the unit and device
# tests (the progress engine's gate by both mechanisms; whether cudaMallocHost
# and cudaMalloc wait for a closed gate); the programs started without MPI
# (tests/launch) beside the CUDA runtime; the MPI device tests at 1 and 2 ranks,
# again with pageable staging and with host-function gates (two communicators,
# an abort behind a long kernel); stream capture through NCCL and refused
# off it; NCCL at 1 rank (every
# collective, bootstrap, split, CommInitAll; one GPU cannot hold two NCCL
# ranks); the Python package on PyTorch CUDA tensors and CuPy arrays, and
# the torch.distributed backend on CUDA tensors (its stream semantics; skipped,
# saying why, without torch's C++ backend built for that torch); DDP on
# CUDA tensors at 1 and 2 ranks against gloo (tests/python/ddp_check.py); and the
# benchmark tables of docs/PERFORMANCE.md, "Real GPU (one NVIDIA H200)" (ranks share the GPU, so staged
# MPI): copy costs, AllReduce next to host MPI and the bare copies, the
# progress engine's return time and overlap loop (busy kernels), its small
# calls with ranks bound to cores, the chunk sweep, Broadcast/AllGather/
# AllToAll (default and 4 MiB chunks), staged calls through the shared-memory
# segment against MPI staging, and the per-call breakdown (TRACE).
# Every step runs even when an earlier one failed; each step's output goes
# to <out>/<step>.log (at most 8 files come back from the device tool, so
# steps share logs by prefix) and its exit code to <out>/summary.txt.
# shellcheck disable=SC2317  # helper functions run through bash -c
set -u
cd "$(dirname "$0")/../.." || exit 2
out=${1:-${OUT:-$PWD/cuda-checks-out}}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
budget=${CUDA_CHECKS_BUDGET:-280}  # seconds for all steps together
start=$(date +%s)
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
    timeout -k 5 "$limit" "$@"
  } >>"$out/${name%%.*}.log" 2>&1
  rc=$?
  what=$(echo "$*" | tr '\n' ' ' | cut -c1-140)
  printf '%-14s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$what" | tee -a "$summary"
  ((rc == 0)) || overall=1
  return "$rc"
}

# ---- the carried build and MPI ------------------------------------------------
if [ ! -d .gpubuild/build ] || [ ! -f .devmpi/mpi-env.sh ]; then
  echo "no .gpubuild or .devmpi: run tests/device/gpu_prepare.sh on the CPU machine and carry both" >&2
  exit 2
fi
ln -sfn "$PWD/.gpubuild" /tmp/iccl-gpu  # the absolute path CMake recorded
# shellcheck disable=SC1091
source .devmpi/mpi-env.sh .devmpi
ln -sf "$(command -v orterun)" /usr/bin/mpirun.openmpi  # the launcher ctest recorded
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export INFINICCL_ABORT_ON_ERROR=0
build=/tmp/iccl-gpu/build
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader)

# Which NCCL the library loads, by the loader's own answer, and its version
# as the loaded library reports it (not a Python module's guess).
which_nccl() {
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
  local lib
  lib=$(ldd "$build/src/libinfiniccl.so" | awk '/libnccl/ {print $3}')
  echo "libinfiniccl loads NCCL from: ${lib:-none}"
  [ -n "$lib" ] && python3 - "$lib" <<'EOF'
import ctypes, sys
v = ctypes.c_int()
ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v))
print("NCCL version: %d.%d.%d (code %d)" % (v.value // 10000, v.value // 100 % 100, v.value % 100, v.value))
EOF
  "$build/tools/info/infiniccl-info" || true
}
step env 20 bash -c "build=$build; $(declare -f which_nccl); which_nccl"

# ---- tests ----------------------------------------------------------------------
step tests.unit 40 ctest --test-dir "$build" -L 'unit|device' -LE mpi -E nccl_device \
  --output-on-failure --timeout 60
# The progress engine's gate by the host-function mechanism, forced (the
# unit run above used the default: cuStreamWaitValue32 where the driver
# allows it; both print "gate mechanism: ...").
step tests.unitgate 20 env INFINICCL_DEVICE_WAIT=host_func ctest --test-dir "$build" \
  -R cuda_runtime_test --output-on-failure --timeout 30 -V
# Several -L options must all match: MPI tests labelled device, 1 and 2 ranks.
step tests.mpi 60 ctest --test-dir "$build" -L mpi -L device -R '_np[12]$' -E 'nccl_device|python' \
  --output-on-failure --timeout 60
# Programs started without MPI (a shell loop), beside the real CUDA runtime:
# the ranks share the one GPU, so their communicator is the node's shared
# memory without NCCL (each rank needs a GPU of its own for it).
step tests.launch 90 ctest --test-dir "$build" -R '^launch_no_mpi' --output-on-failure \
  --timeout 60
step tests.nccl 40 env NCCL_DEBUG=WARN INFINICCL_DEBUG=INFO ctest --test-dir "$build" \
  -R nccl_device --output-on-failure --timeout 60 -V
# Stream capture (cudaStreamBeginCapture): through NCCL recorded and
# replayed exactly; kept off NCCL refused with nothing recorded.
step tests.capture 30 "${mpi[@]}" -np 1 "$build/tests/device/nccl_device_test" capture
step tests.capture_refused 30 "${mpi[@]}" -np 1 "$build/tests/device/nccl_device_test" \
  capture_refused
# CommRevoke aborts the NCCL communicator (ncclCommAbort): later calls and
# GetAsyncError say RemoteError "revoked", CommDestroy returns.
step tests.revoke 30 "${mpi[@]}" -np 1 "$build/tests/device/nccl_device_test" revoke
# Staged calls in pageable memory (one-chunk calls then go to the engine's
# thread whole: a pageable slot cannot be copied around the gate), and the
# engine's gates as host functions with two communicators queued at once
# and an abort behind a long kernel (test_async, test_user_next at 2 ranks:
# the emulated device's scenarios, here beside the real CUDA runtime; the
# gate rule is the same).
step tests.pageable 40 env INFINICCL_STAGING_PINNED=0 ctest --test-dir "$build" -L mpi \
  -L device -R '_np2$' -E 'nccl_device|python' --output-on-failure --timeout 60
step tests.hostfngates 90 env INFINICCL_DEVICE_WAIT=host_func ctest --test-dir "$build" \
  -R '(mpi_user_next|mpi_async).*_np2$' --output-on-failure --timeout 60
py=(env PYTHONPATH=/tmp/iccl-gpu/src/python INFINICCL_LIBRARY="$build/src/libinfiniccl.so"
    python3 /tmp/iccl-gpu/src/tests/device/python_gpu_check.py)
step tests.py1 30 "${mpi[@]}" -np 1 "${py[@]}"
step tests.py2 30 "${mpi[@]}" -np 2 "${py[@]}"
# DDP on CUDA tensors: 1 rank (NCCL) and 2 ranks sharing the GPU
# (staged through MPI), weights against gloo's on the CPU.
step tests.pyddp 45 env PYTHONPATH=/tmp/iccl-gpu/src/python \
  INFINICCL_LIBRARY="$build/src/libinfiniccl.so" \
  python3 /tmp/iccl-gpu/src/tests/python/ddp_check.py --device=cuda 1,2 "${mpi[@]}"

# ---- benchmark tables (docs/PERFORMANCE.md, "Real GPU (one NVIDIA H200)") ------------------------------------
bench=("$build/tools/bench/infiniccl-bench" --device cuda)
# Copy costs: one rank alone, four at once.
for np in 1 4; do
  step bench.copy 15 "${mpi[@]}" -np "$np" "${bench[@]}" --modes copy_d2h,copy_h2d \
    -b 4K -e 16M -f 4 --warmup 5 --iters 30
done
# AllReduce next to host MPI and the bare copies of the same size (the goal
# at <= 512 KiB: no more than host + d2h + h2d), default chunk.
for np in 4 2; do
  step bench.allreduce 40 "${mpi[@]}" -np "$np" "${bench[@]}" \
    --modes host_allreduce,stage_reuse,infiniccl_allreduce,copy_d2h,copy_h2d \
    -b 64K -e 64M -f 4 --warmup 5 --iters 20 --repeat 2 --validate
done
# The progress engine (docs/PERFORMANCE.md) on the real stream:
# return time and call + synchronize per size, and the DDP-like overlap loop
# with busy kernels on the GPU, with the engine and with ASYNC=0.
for async in auto 0; do
  step bench.async 25 env INFINICCL_ASYNC=$async "${mpi[@]}" -np 2 "${bench[@]}" \
    --modes return_allreduce,overlap -b 4K -e 64M -f 4 -w 3 -n 20 \
    --buckets 8 --bucket-bytes 4M --kernel-us 4000 -q
done
# Small calls with each rank bound to one core, Open MPI's default at 2 ranks
# (turned off above): the caller's cudaStreamSynchronize, which spins by
# default, then shares that core with the engine's thread, which must run
# MPI meanwhile; the emulated device cannot show what that costs
# (docs/PERFORMANCE.md, "Device buffers on the emulated device").
for async in auto 0; do
  step bench.bound 15 env INFINICCL_ASYNC=$async "${mpi[@]/none/core}" -np 2 "${bench[@]}" \
    --modes return_allreduce -b 16K -e 1M -f 4 -w 5 -n 40 -q
done
# Chunk sweep (the default came from this table).
for np in 2 4; do
  for c in 512K 1M 2M 4M; do
    step bench.chunk 12 env INFINICCL_PIPELINE_CHUNK_BYTES=$c "${mpi[@]}" -np "$np" \
      "${bench[@]}" --modes infiniccl_allreduce -b 1M -e 64M -f 4 --warmup 3 --iters 10
  done
done
# The other collectives the staged path lagged on, 4 ranks.
step bench.coll 40 "${mpi[@]}" -np 4 "${bench[@]}" \
  --modes host_broadcast,infiniccl_broadcast,host_allgather,infiniccl_allgather,host_alltoall,infiniccl_alltoall \
  -b 1M -e 64M -f 4 --warmup 3 --iters 10 --validate
# Staged device buffers through the shared-memory segment (page-locked with
# cudaHostRegister at the first device call: the INFO line says so) against
# MPI staging, 2 and 4 ranks, results validated.
for np in 2 4; do
  for shm in 0 1; do
    step bench.shm 30 env INFINICCL_SHM=$shm INFINICCL_DEBUG=INFO "${mpi[@]}" -np "$np" \
      "${bench[@]}" --modes infiniccl_allreduce,infiniccl_reduce_scatter,infiniccl_allgather \
      -b 64K -e 64M -f 4 --warmup 3 --iters 10 --validate
  done
done
# The progress engine's call + synchronize against blocking calls through the
# segment, 2 ranks: queued AllReduces up to 1 MiB land (copies on the
# caller's stream into and out of the segment's landing areas), larger ones
# copy on the engine's stream; the results validated.
for async in 0 auto; do
  step bench.engine_shm 20 env INFINICCL_ASYNC=$async "${mpi[@]}" -np 2 "${bench[@]}" \
    --modes return_allreduce -b 64K -e 4M -f 4 --warmup 5 --iters 20 --validate
done
# The same with 4 MiB chunks: on a GPU that four processes time-slice, fewer,
# larger copies may pay for the collectives that move no reduction (the
# 1 MiB default came from the AllReduce sweep only).
step bench.collchunk 25 env INFINICCL_PIPELINE_CHUNK_BYTES=4M "${mpi[@]}" -np 4 "${bench[@]}" \
  --modes host_broadcast,infiniccl_broadcast,host_allgather,infiniccl_allgather,host_alltoall,infiniccl_alltoall \
  -b 4M -e 64M -f 4 --warmup 2 --iters 5 --validate
# Where a staged call's time goes: one TRACE line per call, averaged. A
# blocking call (and a pipelined one, on the engine's thread) writes
# "staged ..."; a queued call writes "queued ..." (docs/PERFORMANCE.md, "Device buffers on the emulated device"):
# from the call to the engine taking it, to the caller's stream reaching it
# (a one-chunk call's copies in), MPI, and the gate opened. Each call alone
# (return_allreduce: call, synchronize), 4 ranks as in the tables above,
# then 2 ranks as in the latency target.
breakdown() {
  local np bytes
  for np in 4 2; do
    for bytes in 64K 256K 4M; do
      INFINICCL_DEBUG=TRACE "${mpi[@]}" -np "$np" "${bench[@]}" \
        --modes return_allreduce -b "$bytes" -e "$bytes" -w 5 -n 40 -q 2>&1 |
        awk -v b="$bytes" -v np="$np" '/staged AllReduce|queued AllReduce/ {
            k = /queued/ ? "q" : "s"
            for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) sum[k, kv[1]] += kv[2]
            n[k]++
          }
          END {
            if (n["s"]) printf "%s, %d ranks, %d staged calls, means: chunks %.1f, copy in %.1f us, MPI %.1f us, waits %.1f us, copy out %.1f us\n", b, np, n["s"], sum["s", "chunks"]/n["s"], sum["s", "copy_in_us"]/n["s"], sum["s", "mpi_us"]/n["s"], sum["s", "waits_us"]/n["s"], sum["s", "copy_out_us"]/n["s"]
            if (n["q"]) printf "%s, %d ranks, %d queued calls, means: picked %.1f us, stream wait %.1f us, run %.1f us, gate open at %.1f us\n", b, np, n["q"], sum["q", "picked_us"]/n["q"], sum["q", "stream_wait_us"]/n["q"], sum["q", "run_us"]/n["q"], sum["q", "gate_us"]/n["q"]
          }'
    done
  done
}
step bench.breakdown 45 bash -c "$(declare -p mpi bench); $(declare -f breakdown); breakdown"

echo "total $(($(date +%s) - start))s, overall rc=$overall" | tee -a "$summary"
exit "$overall"
