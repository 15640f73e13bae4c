#!/usr/bin/env bash
# A newcomer's first hour on a fresh machine: makes a minimal Debian 12 root
# (debootstrap --variant=minbase bookworm, nothing else installed), copies
# this repository into it as a clone would, and runs the README's two
# commands there under chroot, as root: scripts/demo.sh, then
# scripts/test.sh with a short stage (quick by default).
# Needs root, debootstrap and the network reach of Debian's packages (and of
# PyPI for the stages that make virtual environments). Not part of CI.
# usage: scripts/fresh_debian.sh [stage...]      (default: quick; none: the demo only)
#   FRESH_ROOT=DIR     where to make the root (default: a new folder in /var/tmp)
#   FRESH_KEEP=1       keep the root afterwards (default: removed)
#   DEBIAN_MIRROR=URL  the mirror (default: the first one of this machine's apt sources)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(quick)

[ "$(id -u)" -eq 0 ] || { echo "fresh_debian.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_debian.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -v security | head -n 1 | sed -E 's/^URIs: *//; s/^deb +(\[[^]]*\] +)?//; s/ .*//' || true)
fi
[ -n "$mirror" ] || { echo "fresh_debian.sh: no Debian mirror found; set DEBIAN_MIRROR" >&2; exit 2; }

root=${FRESH_ROOT:-$(mktemp -d /var/tmp/infiniccl-fresh.XXXXXX)}
mounts=()
cleanup() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[$i]}
    umount -l "$m" 2>/dev/null || true
  done
  if [ "${FRESH_KEEP:-0}" != 1 ] && [ -z "${FRESH_ROOT:-}" ]; then
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT

start=$SECONDS
echo "== debootstrap --variant=minbase bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -n 20 "$root.debootstrap.log" >&2; exit 1; }
rm -f "$root.debootstrap.log"
echo "debootstrap: $((SECONDS - start)) s"

# /etc/hosts as Debian's installer writes it: the machine's own name on
# 127.0.1.1. debootstrap writes none, and without it every lookup of the
# host's name goes to DNS: each mpirun took 6.4 s instead of 1.4 s to start
# a 3-rank job there, and the fault_shm_kill tests' 20 s per job ran out.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" >"$root/etc/hosts"
# The machine's own apt settings (its mirror and its sources' validity
# rules), so that apt-get inside reaches what apt-get outside reaches.
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
for f in /etc/apt/apt.conf.d/*; do
  grep -q "Acquire::" "$f" 2>/dev/null && cp "$f" "$root/etc/apt/apt.conf.d/"
done

for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev/shm) mount -t tmpfs -o size=8g shm "$root/dev/shm" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounts+=("$root/$m")
done

# The tree as a clone of the committed HEAD has it (git ls-files as CI's
# clean clone sees them), with its .git so that the checks over tracked
# files run.
mkdir -p "$root/root"
git clone -q --no-hardlinks "$repo" "$root/root/infiniccl"

run_in() {  # command...: as root in the new root, with a login shell's PATH
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${INFINICCL_TORCH:+INFINICCL_TORCH=$INFINICCL_TORCH} /bin/bash -c "$*"
}

status=0
step() {  # LOG COMMAND: runs COMMAND in the root, its output kept in LOG; status=1 on failure
  local log=$1 rc
  shift
  echo "== $*"
  set +e
  run_in "cd /root/infiniccl && $*" 2>&1 | tee "$log" | tail -n 30
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || status=1
}

t=$SECONDS
step "$root/demo.log" scripts/demo.sh
# Each example prints "Correct: YES" or "NO" for each of its checks.
examples=$(grep -c "^==== example_" "$root/demo.log" || true)
yes=$(grep -c "Correct: YES" "$root/demo.log" || true)
no=$(grep -c "Correct: NO" "$root/demo.log" || true)
echo "demo: $((SECONDS - t)) s, $examples examples, $yes checks 'Correct: YES', $no 'Correct: NO'"
[ "$examples" -gt 0 ] && [ "$yes" -ge "$examples" ] && [ "$no" -eq 0 ] || status=1

if [ "${stages[*]}" != none ]; then
  t=$SECONDS
  step "$root/test.log" scripts/test.sh "${stages[@]}"
  echo "test.sh ${stages[*]}: $((SECONDS - t)) s"
fi
echo "fresh_debian.sh: $((SECONDS - start)) s in all, exit $status"
exit $status
