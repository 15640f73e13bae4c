#!/usr/bin/env bash
# Measures the staging engine on the EMULATED device (sim) with its copy
# engine throttled to a PCIe-like bandwidth, as recorded in
# docs/PERFORMANCE.md: pipelined infinicclAllReduce next to manual staging
# (stage_reuse, stage_alloc) and raw MPI on host buffers, then a chunk-size
# sweep. usage: scripts/perf_staging.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
build=${1:?build dir}
out=${2:-perf-staging}
mkdir -p "$out"
bench=$build/tools/bench/infiniccl-bench
run() { mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl self,vader "$@"; }
export INFINICCL_SIM_COPY_GBPS=${INFINICCL_SIM_COPY_GBPS:-8}
for np in 2 4; do
  run -np "$np" "$bench" --device sim -b 256K -e 64M -f 4 \
    --modes host_allreduce,stage_alloc,stage_reuse,infiniccl_allreduce \
    --warmup 3 --iters 10 --repeat 3 --validate --json "$out/sim_np$np.json" \
    | grep -E "^# (AllReduce|staging|device|Wrong)|Wrong" || true
done
for chunk in 1M 2M 4M 8M; do
  INFINICCL_PIPELINE_CHUNK_BYTES=$chunk run -np 2 "$bench" --device sim --elements 1M,4M,16M \
    --modes stage_reuse,infiniccl_allreduce --warmup 3 --iters 10 --repeat 3 \
    --json "$out/chunk_$chunk.json" >/dev/null
done
# Markdown rows: time per mode and infiniccl / stage_reuse.
python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    rows = {}
    for r in json.load(open(path))["rows"]:
        rows.setdefault(r["bytes"], {})[r["mode"]] = r["time_us"]
    print(f"\n{os.path.basename(path)}\n| bytes | " + " | ".join(sorted(next(iter(rows.values())))) + " | infiniccl/stage_reuse |")
    for b in sorted(rows):
        x = rows[b]
        ratio = x["infiniccl_allreduce"] / x["stage_reuse_allreduce"]
        print(f"| {b} | " + " | ".join(f"{x[m]:.0f}" for m in sorted(x)) + f" | {ratio:.3f} |")
PY
