#!/usr/bin/env bash
# The demo: builds InfiniCCL (installing what a fresh Debian machine lacks)
# and runs one example program per collective on 4 ranks.
# usage: scripts/demo.sh [openmpi|mpich] [ranks]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
infiniccl_install_deps
flavour=${1:-openmpi}
ranks=${2:-4}
cmake -S . -B "build-demo-$flavour" -DINFINICCL_MPI="$flavour" -DBUILD_TESTING=OFF >/dev/null
cmake --build "build-demo-$flavour" -j "$(nproc)"
status=0
for exe in "build-demo-$flavour"/examples/example_*; do
  echo "==== $(basename "$exe") on $ranks ranks ($flavour)"
  infiniccl_mpirun "$flavour" -np "$ranks" "$exe" || status=1
done
exit $status
