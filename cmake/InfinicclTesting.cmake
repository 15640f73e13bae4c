# infiniccl_add_mpi_test(NAME <name> COMMAND <target> [ARGS ...] RANKS <n>...
#                        [TIMEOUT <s>] [ENV VAR=VALUE ...] [LABELS ...])
# Registers one ctest test per rank count, named <name>_np<n>, that runs the
# target under the selected MPI's launcher. Flags that root and an
# oversubscribed 2-core machine need are added here, not left to the user.
# A test that does not set INFINICCL_SHM runs with INFINICCL_SHM=0: the MPI
# paths it was written for. The shared-memory transport has its own tests
# (tests/mpi/CMakeLists.txt: mpi_collectives_shm*, mpi_*_shm_*), at `1` and
# at the default, `auto`.
set(INFINICCL_MPIEXEC_FLAGS "")
if(INFINICCL_MPI STREQUAL "openmpi")
  list(APPEND INFINICCL_MPIEXEC_FLAGS --allow-run-as-root --oversubscribe
       --mca btl self,vader)
endif()

# An Open MPI with the fault-tolerance extension (ULFM, Open MPI 5: its
# ompi_info beside the launcher says "FT MPI support: yes") runs the tests
# with `--with-ft ulfm`: the MPI suite with failure tolerance on, and the
# tests that kill a rank and go on.
set(INFINICCL_ULFM_LAUNCH "")
if(INFINICCL_MPI STREQUAL "openmpi" AND MPIEXEC_EXECUTABLE)
  get_filename_component(_mpi_bin "${MPIEXEC_EXECUTABLE}" DIRECTORY)
  find_program(_ompi_info NAMES ompi_info HINTS "${_mpi_bin}" NO_DEFAULT_PATH NO_CACHE)
  if(_ompi_info)
    execute_process(COMMAND ${_ompi_info} OUTPUT_VARIABLE _ompi_info_out ERROR_QUIET)
    if(_ompi_info_out MATCHES "FT MPI support: yes")
      set(INFINICCL_ULFM_LAUNCH --with-ft ulfm)
      # Processes that infinicclCommGrow starts are another job, which
      # Open MPI 5's shared-memory transport does not reach: TCP (over the
      # loopback) carries their messages.
      list(TRANSFORM INFINICCL_MPIEXEC_FLAGS REPLACE "^self,vader$" "self,vader,tcp")
      list(APPEND INFINICCL_MPIEXEC_FLAGS ${INFINICCL_ULFM_LAUNCH})
      message(STATUS "InfiniCCL: this Open MPI tolerates failures: every MPI test runs with "
                     "--with-ft ulfm, and the ulfm tests are registered")
    endif()
  endif()
endif()
# A job that outlives its test's time limit leaves where every rank waits:
# Open MPI 4's mpirun ends it shortly before ctest would, printing each
# rank's threads' stacks (tests/tools/gstack, over gdb; without gdb it says
# so). ctest's own timeout kills the ranks with nothing said.
set(INFINICCL_MPIEXEC_STACKS OFF)
if(INFINICCL_MPI STREQUAL "openmpi" AND NOT INFINICCL_ULFM_LAUNCH)
  set(INFINICCL_MPIEXEC_STACKS ON)
endif()

# -DINFINICCL_REQUIRE_ULFM=ON (scripts/test.sh's ompi5 stage): an MPI
# without that support stops the configure instead of leaving the ulfm
# tests out.
option(INFINICCL_REQUIRE_ULFM "Stop the configure unless the MPI tolerates failures (ULFM)" OFF)
if(INFINICCL_REQUIRE_ULFM AND NOT INFINICCL_ULFM_LAUNCH)
  message(FATAL_ERROR "INFINICCL_REQUIRE_ULFM: ${MPIEXEC_EXECUTABLE} is not an Open MPI whose "
                      "ompi_info says \"FT MPI support: yes\" (Open MPI 5 with ULFM): the ulfm "
                      "tests would not be registered")
endif()

function(infiniccl_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;COMMAND;TIMEOUT" "ARGS;RANKS;ENV;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  if(NOT T_ENV MATCHES "INFINICCL_SHM=")
    list(PREPEND T_ENV INFINICCL_SHM=0)
  endif()
  # A call that hangs is named by the library's watchdog (operation,
  # communicator, what it waits for) and the job ends, at half the test's
  # timeout: ctest's own timeout kills the ranks with nothing said.
  if(NOT T_ENV MATCHES "INFINICCL_TIMEOUT_SEC=")
    math(EXPR watchdog_sec "${T_TIMEOUT} / 2")
    list(PREPEND T_ENV INFINICCL_TIMEOUT_SEC=${watchdog_sec})
  endif()
  set(stacks "")
  if(INFINICCL_MPIEXEC_STACKS)
    math(EXPR job_sec "${T_TIMEOUT} - ${T_TIMEOUT} / 10 - 5")
    set(stacks --timeout ${job_sec} --get-stack-traces)
    list(PREPEND T_ENV "PATH=${PROJECT_SOURCE_DIR}/tests/tools:$ENV{PATH}")
  endif()
  foreach(np IN LISTS T_RANKS)
    set(test_name ${T_NAME}_np${np})
    add_test(NAME ${test_name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
                     ${INFINICCL_MPIEXEC_FLAGS} ${stacks} $<TARGET_FILE:${T_COMMAND}> ${T_ARGS})
    # One rank takes one core: ctest -j2 runs two such tests side by side.
    # More ranks take both cores of the 2-core machines the suite runs on:
    # such a test runs alone.
    set(procs 2)
    if(np EQUAL 1)
      set(procs 1)
    endif()
    set_tests_properties(${test_name} PROPERTIES TIMEOUT ${T_TIMEOUT}
                         PROCESSORS ${procs} LABELS "mpi;${T_LABELS}")
    set_tests_properties(${test_name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endforeach()
endfunction()
