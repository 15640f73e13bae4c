# Sourced by test.sh and demo.sh: installs the Debian packages a fresh
# machine lacks (apt-get update first, only when something is missing), and
# defines the mpirun wrapper flags root and a small machine need.
# clang: the libFuzzer stage; valgrind: memcheck of every collective;
# nlohmann-json3-dev: the tools' JSON output (never a dependency of the library).
# doxygen: the API reference, checked with warnings as errors (docs_doxygen).
# python3-*: the Python package's tests (tests/python), run by Debian's own
# /usr/bin/python3; pip and setuptools install it offline. python3-venv: the
# torch and Open MPI 5 environments of test.sh (python3 -m venv);
# python3-dev: Python.h, which the C++ torch backend compiles against;
# ninja-build: its objects compile in parallel (torch's cpp_extension).
# gdb: the stacks of an MPI test that outlives its time limit (tests/tools/gstack).
INFINICCL_PACKAGES=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libmpich-dev mpich
                    libgtest-dev python3-matplotlib clang valgrind nlohmann-json3-dev
                    python3-numpy python3-pytest python3-mpi4py python3-torch
                    python3-setuptools python3-pip python3-venv python3-dev ninja-build doxygen
                    gdb)

infiniccl_install_deps() {
  local missing=()
  for p in "${INFINICCL_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

# Launcher of a flavour, with the flags root and an oversubscribed machine
# need (the same ones cmake/InfinicclTesting.cmake gives ctest).
infiniccl_mpirun() {
  local flavour=$1
  shift
  if [ "$flavour" = mpich ]; then
    mpiexec.mpich "$@"
  else
    mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl self,vader "$@"
  fi
}
