#!/usr/bin/env bash
# Copies GoogleTest's sources into a folder that can travel to a machine
# without GoogleTest (the lent GPU machine); tests/device/cuda_checks.sh builds
# them there. Uses Debian's googletest package (/usr/src/googletest), else
# the path given as the second argument.
#   tests/device/pack-gtest.sh .devgtest [SOURCE]
set -euo pipefail
dest=${1:-.devgtest}
src=${2:-/usr/src/googletest}
[ -f "$src/CMakeLists.txt" ] || { echo "no GoogleTest sources in $src (apt-get install googletest)" >&2; exit 1; }
rm -rf "$dest"
cp -r "$src" "$dest"
du -sh "$dest" | awk '{print "packed GoogleTest sources: " $1 " in '"$dest"'"}'
