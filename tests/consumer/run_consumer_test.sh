#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a consumer
# program against it twice (find_package and pkg-config) and runs both
# under mpirun at 2 ranks.
# usage: run_consumer_test.sh BUILD_DIR SOURCE_DIR MPIEXEC [MPIEXEC FLAGS...]
set -euo pipefail
build=$1 src=$2 mpiexec=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/infiniccl/infiniccl.h"
ls "$prefix"/lib*/libinfiniccl.so.0 >/dev/null

echo "== find_package(InfiniCCL)"
cmake -S "$src/project" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
"$mpiexec" -n 2 "$@" "$work/cm/consumer"

echo "== pkg-config infiniccl"
pcdir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/infiniccl.pc)")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs infiniccl)
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir infiniccl)
# shellcheck disable=SC2086
cc -std=c99 -Wall -Werror "$src/project/main.c" $flags -Wl,-rpath,"$libdir" -o "$work/pc_consumer"
"$mpiexec" -n 2 "$@" "$work/pc_consumer"

echo "== installed icclrun"
# It knows the MPI the library was built with and launches with that
# flavour by default, whatever launcher comes first in PATH.
"$prefix/bin/icclrun" --version | grep -E "^library MPI: (openmpi|mpich) "
"$prefix/bin/icclrun" -np 2 "$work/cm/consumer"
echo "consumer test: both builds ran correctly"
