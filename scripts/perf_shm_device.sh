#!/usr/bin/env bash
# Staged device-buffer collectives through shared memory against the same
# calls staged through MPI (docs/PERFORMANCE.md, "Shared memory on a node"),
# on the EMULATED device at GBPS (default 16) with LATENCY_US per copy
# (default 10): infiniccl-bench's infiniccl_C mode with INFINICCL_SHM=0 and
# =auto alternating ROUNDS times in one session, so that each pair shares
# the machine's state. Prints, per size, the median of each and of the
# per-pair ratio shared memory / MPI.
# Output: one JSON per run in OUT_DIR, and the table on stdout.
# usage: [GBPS=16] [LATENCY_US=10] [COLL=allreduce] [BEGIN=1M] [END=64M] [ITERS=10] \
#        scripts/perf_shm_device.sh BUILD_DIR [OUT_DIR] [openmpi|mpich] [RANKS] [ROUNDS]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-shm-device}
mpi=${3:-openmpi}
np=${4:-2}
rounds=${5:-3}
gbps=${GBPS:-16}
latency=${LATENCY_US:-10}
coll=${COLL:-allreduce}
begin=${BEGIN:-1M}
end=${END:-64M}
iters=${ITERS:-10}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
for i in $(seq "$rounds"); do
  for shm in 0 auto; do
    # shellcheck disable=SC2016  # expanded by the inner bash
    env INFINICCL_SHM=$shm INFINICCL_DEVICE=sim INFINICCL_SIM_COPY_GBPS="$gbps" \
      INFINICCL_SIM_COPY_LATENCY_US="$latency" \
      bash -c 'source "$0"; infiniccl_mpirun "$@"' "$here/deps.sh" "$mpi" -np "$np" \
      "$build/tools/bench/infiniccl-bench" --device sim --modes "infiniccl_$coll" \
      -b "$begin" -e "$end" -f 4 -w 3 -n "$iters" -c 0 -q \
      --json "$out/${mpi}_np${np}_${coll}_shm${shm}_$i.json" >/dev/null 2>&1
  done
done
python3 - "$out" "$mpi" "$np" "$rounds" "$coll" "$gbps" "$latency" "$iters" <<'PY'
import json, statistics, sys
out, mpi, np, rounds, coll, gbps, latency, iters = sys.argv[1:9]
def load(shm, i):
    with open("%s/%s_np%s_%s_shm%s_%d.json" % (out, mpi, np, coll, shm, i)) as f:
        return {r["bytes"]: r["time_us"] for r in json.load(f)["rows"]}
runs = [(load("0", i), load("auto", i)) for i in range(1, int(rounds) + 1)]
print("# %s, %s ranks, EMULATED device at %s GB/s + %s us per copy, %s, float32: median "
      "of %s pairs (each the mean of %s calls)" % (mpi, np, gbps, latency, coll, rounds, iters))
print("| size | staged through MPI (us) | shared memory (us) | median ratio | ratios |")
print("|---:|---:|---:|---:|---|")
for b in sorted(runs[0][0]):
    off = [r[0][b] for r in runs]
    on = [r[1][b] for r in runs]
    ratios = sorted(y / x for x, y in zip(off, on))
    label = "%d KiB" % (b >> 10) if b < 1 << 20 else "%d MiB" % (b >> 20)
    print("| %s | %.0f | %.0f | %.2f | %s |" % (label, statistics.median(off),
          statistics.median(on), statistics.median(ratios),
          " ".join("%.2f" % x for x in ratios)))
PY
