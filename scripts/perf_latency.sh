#!/usr/bin/env bash
# Latency of a staged call with the progress engine against the blocking
# path (docs/PERFORMANCE.md, "Device buffers on the emulated device"), on the EMULATED device (copies at GBPS,
# default 2 GB/s, with LATENCY_US per copy, default the device's): one
# AllReduce + stream synchronize per call (infiniccl-bench return_allreduce,
# 100 calls per size), INFINICCL_ASYNC=0 and =auto alternating PAIRS times
# in one session, so that each pair shares the machine's state. Prints, per
# size, each run's median call + synchronize and each pair's ratio engine /
# blocking. Medians, not means: on a machine with fewer cores than busy
# threads one call in 40 is switched out for 0.5-1 ms, which moves a mean
# by 10-25 us, the size of the difference measured here.
# Also each run's 90th percentile over its median (engine and blocking).
# Output: one JSON per run in OUT_DIR, and the table on stdout.
# usage: [GBPS=16] [LATENCY_US=10] [BEGIN=64K] [END=64M] [ITERS=100] \
#        scripts/perf_latency.sh BUILD_DIR [OUT_DIR] [openmpi|mpich] [RANKS] [PAIRS]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-latency}
mpi=${3:-openmpi}
np=${4:-2}
pairs=${5:-5}
gbps=${GBPS:-2}
begin=${BEGIN:-16K}
end=${END:-1M}
iters=${ITERS:-100}
latency=()
[ -z "${LATENCY_US:-}" ] || latency=(INFINICCL_SIM_COPY_LATENCY_US="$LATENCY_US")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
for i in $(seq "$pairs"); do
  for async in 0 auto; do
    # shellcheck disable=SC2016  # expanded by the inner bash
    env INFINICCL_ASYNC=$async INFINICCL_SIM_COPY_GBPS="$gbps" "${latency[@]}" \
      bash -c 'source "$0"; infiniccl_mpirun "$@"' "$here/deps.sh" "$mpi" -np "$np" \
      "$build/tools/bench/infiniccl-bench" --device sim --modes return_allreduce \
      -b "$begin" -e "$end" -f 4 -w 5 -n "$iters" -q --json "$out/${mpi}_np${np}_async${async}_${i}.json" \
      >/dev/null 2>&1
  done
done
python3 - "$out" "$mpi" "$np" "$pairs" "$gbps" "$iters" <<'EOF'
import json, sys
out, mpi, np, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
gbps, iters = sys.argv[5], sys.argv[6]
def load(async_, i, key):
    with open("%s/%s_np%s_async%s_%d.json" % (out, mpi, np, async_, i)) as f:
        return {r["bytes"]: r[key] for r in json.load(f)["rows"]}
runs = [(load("0", i, "sync_median_us"), load("auto", i, "sync_median_us"))
        for i in range(1, pairs + 1)]
p90s = [(load("0", i, "sync_p90_us"), load("auto", i, "sync_p90_us"))
        for i in range(1, pairs + 1)]
print("# %s, %s ranks, EMULATED device at %s GB/s: call + synchronize, median of %s "
      "calls (us), %d pairs" % (mpi, np, gbps, iters, pairs))
print("| size | `ASYNC=0` | engine | engine / `ASYNC=0` per pair | median ratio | median "
      "difference (us) | p90 / median, `ASYNC=0` | p90 / median, engine |")
print("|---:|---|---|---|---:|---:|---:|---:|")
for size in sorted(runs[0][0]):
    off = [r[0][size] for r in runs]
    on = [r[1][size] for r in runs]
    ratios = sorted(b / a for a, b in zip(off, on))
    diffs = sorted(b - a for a, b in zip(off, on))
    label = "%d KiB" % (size >> 10) if size < 1 << 20 else "%d MiB" % (size >> 20)
    spread = [sorted(p[k][size] / r[k][size] for p, r in zip(p90s, runs)) for k in (0, 1)]
    print("| %s | %s | %s | %s | **%.2f** | %+.1f | %.2f | %.2f |" % (
        label, " / ".join("%.1f" % v for v in off), " / ".join("%.1f" % v for v in on),
        " / ".join("%.2f" % v for v in ratios), ratios[len(ratios) // 2],
        diffs[len(diffs) // 2], spread[0][len(spread[0]) // 2],
        spread[1][len(spread[1]) // 2]))
EOF
