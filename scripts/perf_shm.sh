#!/usr/bin/env bash
# Host-buffer collectives through shared memory against the raw MPI call
# (docs/PERFORMANCE.md, "Shared memory on a node"): infiniccl-bench's
# host_C and infiniccl_C modes side by side in one run, ROUNDS runs in one
# session, INFINICCL_SHM=$SHM (default 1: shared memory at every size, to
# find where it wins; `auto` measures what the library does by default).
# Prints, per size, the median over the runs of each mode's time and of the
# per-run ratio infiniccl / MPI.
# Output: one JSON per run in OUT_DIR, and the table on stdout.
# usage: [SHM=1] [COLL=allreduce] [BEGIN=4K] [END=64M] [ITERS=20] [DTYPE=float32] \
#        scripts/perf_shm.sh BUILD_DIR [OUT_DIR] [openmpi|mpich] [RANKS] [ROUNDS]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-shm}
mpi=${3:-openmpi}
np=${4:-2}
rounds=${5:-5}
shm=${SHM:-1}
coll=${COLL:-allreduce}
begin=${BEGIN:-4K}
end=${END:-64M}
iters=${ITERS:-20}
dtype=${DTYPE:-float32}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
for i in $(seq "$rounds"); do
  # shellcheck disable=SC2016  # expanded by the inner bash
  env INFINICCL_SHM="$shm" bash -c 'source "$0"; infiniccl_mpirun "$@"' "$here/deps.sh" \
    "$mpi" -np "$np" "$build/tools/bench/infiniccl-bench" --device cpu \
    --modes "host_$coll,infiniccl_$coll" -d "$dtype" -b "$begin" -e "$end" -f 4 -w 3 \
    -n "$iters" -c 0 -q --json "$out/${mpi}_np${np}_${coll}_shm${shm}_$i.json" >/dev/null 2>&1
done
python3 - "$out" "$mpi" "$np" "$rounds" "$coll" "$shm" "$iters" "$dtype" <<'PY'
import json, statistics, sys
out, mpi, np, rounds, coll, shm, iters, dtype = sys.argv[1:9]
runs = []
for i in range(1, int(rounds) + 1):
    with open("%s/%s_np%s_%s_shm%s_%d.json" % (out, mpi, np, coll, shm, i)) as f:
        rows = json.load(f)["rows"]
    runs.append({(r["mode"].split("_")[0], r["bytes"]): r["time_us"] for r in rows})
sizes = sorted({b for (_, b) in runs[0]})
print("# %s, %s ranks, host %s buffers, %s, INFINICCL_SHM=%s: median of %s runs "
      "(each the mean of %s calls)" % (mpi, np, dtype, coll, shm, rounds, iters))
print("| size | MPI (us) | InfiniCCL (us) | median ratio InfiniCCL / MPI | ratios |")
print("|---:|---:|---:|---:|---|")
for b in sizes:
    host = [r[("host", b)] for r in runs]
    ours = [r[("infiniccl", b)] for r in runs]
    ratios = sorted(o / h for o, h in zip(ours, host))
    label = "%d KiB" % (b >> 10) if b < 1 << 20 else "%d MiB" % (b >> 20)
    print("| %s | %.1f | %.1f | %.2f | %s |" % (label, statistics.median(host),
          statistics.median(ours), statistics.median(ratios),
          " ".join("%.2f" % x for x in ratios)))
PY
