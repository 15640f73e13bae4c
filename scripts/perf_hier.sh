#!/usr/bin/env bash
# Measures the two-level (hierarchical) collectives against the flat staged
# path, as recorded in docs/PERFORMANCE.md, "Two-level collectives": 2 EMULATED nodes x 2 ranks (NODES=3,3: other sizes)
# (tests/nodes/run_on_nodes.sh; needs root for the UTS namespaces), the
# EMULATED device's copies at 16 GB/s and the EMULATED CCL's links at
# 100 GB/s inside each node. The same benchmark runs with
# INFINICCL_HIERARCHY=1 and =0, alternating, ROUNDS times; the table takes
# each side's minimum over rounds and gives flat / hierarchical (above 1:
# the two-level path is faster). SIDES="auto 0" measures the route instead:
# INFINICCL_HIERARCHY=auto with each collective's own threshold
# (INFINICCL_HIERARCHY_MIN_BYTES=auto) against the flat path; "1 0 auto" all three.
# LINK=RATE (tc's spelling, e.g. 8gbit) makes the link between the emulated
# nodes that slow: each run goes in a network namespace of its own whose
# loopback device (the only way between the emulated nodes; ranks of one
# node talk through shared memory) is shaped by a token bucket. Open MPI
# only: MPICH's UCX reaches the other nodes through shared memory.
# DEVICE=cpu measures host buffers (no emulated device, no CCL). A side
# "1-noshm" is the two-level path with INFINICCL_SHM=0 (MPI inside groups).
# usage: scripts/perf_hier.sh BUILD_DIR [OUT_DIR] [openmpi|mpich]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-hier}
mpi=${3:-openmpi}
rounds=${ROUNDS:-2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
export INFINICCL_SIM_COPY_GBPS=16 INFINICCL_SIM_CCL=1 INFINICCL_SIM_LINK_GBPS=100
modes=${MODES:-infiniccl_allreduce,infiniccl_broadcast,infiniccl_reduce,infiniccl_allgather,infiniccl_reduce_scatter}
for round in $(seq "$rounds"); do
  for side in ${SIDES:-1 0}; do
    h=${side%-noshm}
    shm=${INFINICCL_SHM:-auto}
    [ "$h" = "$side" ] || shm=0
    min=0
    [ "$h" = auto ] && min=auto
    job=(env INFINICCL_SHM="$shm" "$here/../tests/nodes/run_on_nodes.sh" --mpi "$mpi"
      --nodes "${NODES:-2,2}" --timeout 900 -- "$build/tools/bench/infiniccl-bench"
      --device "${DEVICE:-sim}" --modes "$modes"
      -b "${MINBYTES:-64K}" -e "${MAXBYTES:-64M}" -f 4 -w 1 -n "${ITERS:-4}" --validate -q
      --json "$out/h${side}_r${round}.json")
    if [ -n "${LINK:-}" ]; then
      INFINICCL_HIERARCHY=$h INFINICCL_HIERARCHY_MIN_BYTES=$min unshare -n bash -c 'ip link set lo up &&
        tc qdisc add dev lo root tbf rate "$0" burst 1mb latency 100ms && "$@"' \
        "$LINK" "${job[@]}" >/dev/null
    else
      INFINICCL_HIERARCHY=$h INFINICCL_HIERARCHY_MIN_BYTES=$min "${job[@]}" >/dev/null
    fi
  done
done
python3 - "$out" <<'PY'
import glob, json, os, re, sys
best = {}  # (side, mode, bytes) -> min time
for path in glob.glob(os.path.join(sys.argv[1], "h*_r*.json")):
    side = re.match(r"h(.*)_r\d+\.json", os.path.basename(path)).group(1)
    for r in json.load(open(path))["rows"]:
        key = (side, r["mode"], r["bytes"])
        best[key] = min(best.get(key, float("inf")), r["time_us"])
names = {"1": "hierarchical", "1-noshm": "hierarchical-noshm (INFINICCL_SHM=0)",
         "auto": "auto (the route)"}
sides = [s for s in ("1", "1-noshm", "auto") if any(k[0] == s for k in best)]
modes = sorted({m for _, m, _ in best})
sizes = sorted({b for _, _, b in best})
head = "| collective | bytes | flat (us) |"
for s in sides:
    head += f" {names[s]} (us) | flat / {names[s].split()[0]} |"
print(head)
print("|---|---:|---:|" + "---:|---:|" * len(sides))
for m in modes:
    for b in sizes:
        if ("0", m, b) not in best or not all((s, m, b) in best for s in sides):
            continue
        fl = best[("0", m, b)]
        row = f"| {m.replace('infiniccl_', '')} | {b} | {fl:.0f} |"
        for s in sides:
            t = best[(s, m, b)]
            row += f" {t:.0f} | {fl / t:.2f} |"
        print(row)
PY
