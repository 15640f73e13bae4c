#!/usr/bin/env bash
# Prepares the GPU check on the CPU machine, so that the lent GPU machine
# (15 minutes at a time, start included; see ../shared/device/README.md)
# spends its time running, not building:
#   1. packs Debian's Open MPI runtime into .devmpi (the GPU machine has no
#      MPI), with ../shared/device/pack-mpi.sh;
#   2. copies the working tree to /tmp/iccl-gpu/src and builds the CUDA +
#      NCCL variant there (Release; CUDA 13 and NCCL are installed on the CPU
#      machine in /usr/local/cuda, the same CUDA as on the GPU machine);
#      GoogleTest links statically, so the test programs need nothing there;
#   3. copies source and build (no object files) into .gpubuild, which the
#      GPU machine links back to /tmp/iccl-gpu: the absolute path CMake and
#      ctest recorded.
# Both folders are git-ignored here (.git/info/exclude); name them in the
# device tool's carry. Then on the GPU machine, in one command:
#   bash tests/device/cuda_checks.sh
#
#   tests/device/gpu_prepare.sh            # from the repository root
set -euo pipefail
cd "$(dirname "$0")/../.."
root=/tmp/iccl-gpu
for d in .devmpi .gpubuild; do
  grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >>.git/info/exclude
done
if [ ! -x .devmpi/root/usr/bin/orterun ]; then
  pack=../shared/device/pack-mpi.sh
  [ -x "$pack" ] || { echo "no $pack: pack Open MPI's runtime into .devmpi yourself" >&2; exit 1; }
  "$pack" .devmpi
fi
rm -rf "$root/src"
mkdir -p "$root/src"
# Tracked and untracked-but-not-ignored files: what the device tool sends.
git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$root/src"
cmake -S "$root/src" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DWITH_NVIDIA=ON \
  -DWITH_NCCL=ON -DINFINICCL_MPI=openmpi -DINFINICCL_LARGE_COUNT_TESTS=OFF >/dev/null
cmake --build "$root/build" -j "$(nproc)"
rm -rf .gpubuild
mkdir -p .gpubuild
(cd "$root" && tar --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles/*.dir' -cf - src build) |
  (cd .gpubuild && tar -xf -)
du -sh .devmpi .gpubuild
echo "ready: carry [\".devmpi\", \".gpubuild\"] and run: bash tests/device/cuda_checks.sh"
