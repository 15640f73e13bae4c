#!/usr/bin/env bash
# Starts a program once per rank with a shell loop, as a user without any
# MPI launcher would, and passes each its rank:
#   run_ranks.sh <nranks> <seconds> <program> <args before the rank...> -- <args after>
# runs `<program> <args before> <nranks> <rank> <args after>` for rank
# 0..nranks-1 at once, with MPI's and the launchers' variables removed.
# Exits 0 when every rank exited 0, 77 (ctest's skip) when every rank
# exited 77, else 1; a rank still running after <seconds> is killed and
# fails the run (a hang).
set -u
n=$1 limit=$2 prog=$3
shift 3
before=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do before+=("$1"); shift; done
[ $# -gt 0 ] && shift
unset $(env | sed -nE 's/^((OMPI|PMIX|PMI|MPI|HYDRA|SLURM)[A-Za-z0-9_]*)=.*/\1/p') 2>/dev/null
pids=()
for ((r = 0; r < n; r++)); do
  timeout -k 5 "$limit" "$prog" "${before[@]}" "$n" "$r" "$@" &
  pids+=($!)
done
rc=0
skipped=0
for r in "${!pids[@]}"; do
  wait "${pids[$r]}"
  code=$?
  [ "$code" -eq 77 ] && skipped=$((skipped + 1))
  if [ "$code" -ne 0 ]; then
    [ "$code" -eq 124 ] && echo "run_ranks: rank $r still running after $limit s: killed" >&2
    echo "run_ranks: rank $r exited $code" >&2
    rc=1
  fi
done
[ "$skipped" -eq "$n" ] && exit 77
exit $rc
