#!/bin/sh
# ctest: a small infiniccl-bench run at 2 ranks written as JSON, plotted by
# scripts/plot_bench.py, and the PNG checked (signature, non-empty).
#   plot_test.sh WORKDIR PLOT_SCRIPT PYTHON -- LAUNCHER... BENCH
# Exits 77 (ctest SKIP_RETURN_CODE) when no python3 with matplotlib exists.
set -u
workdir=$1 plot=$2 python=$3
shift 3
[ "$1" = "--" ] && shift

# The configured interpreter first, then Debian's (where python3-matplotlib
# installs) in case a pyenv or venv python3 shadows it.
py=
for candidate in "$python" python3 /usr/bin/python3; do
  [ -n "$candidate" ] || continue
  command -v "$candidate" >/dev/null 2>&1 || continue
  if "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then
    py=$candidate
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with matplotlib (Debian: apt-get install python3-matplotlib)"
  exit 77
fi

mkdir -p "$workdir" || exit 1
json=$workdir/plot_test.json
png=$workdir/plot_test.png
rm -f "$json" "$png"
json2=$workdir/plot_test_f64.json
"$@" --elements 1K,64K --modes host_allreduce,infiniccl_allreduce,host_allgather \
  --warmup 1 --iters 2 --json "$json" || { echo "FAIL: infiniccl-bench failed"; exit 1; }
"$@" --elements 256,4K --modes host_allreduce -d float64 --warmup 1 --iters 2 \
  --json "$json2" || { echo "FAIL: infiniccl-bench failed"; exit 1; }
out=$("$py" "$plot" "$json" "$json2" -o "$png" --metric both) ||
  { echo "FAIL: plot_bench.py failed"; exit 1; }
echo "$out"
# Ticks exactly on the measured sizes (float32: 1K and 64K elements = 4K and
# 256K bytes; float64: 256 and 4K elements = 2K and 32K bytes), and the two
# files' lines told apart by their dtype.
for want in "busbw: x ticks at 2K,4K,32K,256K" "line host_allreduce (float32)" \
            "line host_allreduce (float64)"; do
  case $out in
    *"$want"*) ;;
    *) echo "FAIL: plot_bench.py output lacks '$want'"; exit 1 ;;
  esac
done
"$py" - "$png" <<'PYEOF' || exit 1
import os, sys
path = sys.argv[1]
with open(path, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"FAIL: {path} is not a PNG (starts {head!r})")
size = os.path.getsize(path)
if size < 1000:
    sys.exit(f"FAIL: {path} is only {size} bytes")
print(f"OK: {path} is a PNG of {size} bytes")
PYEOF
