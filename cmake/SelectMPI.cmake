# Chooses the MPI flavour. Debian installs Open MPI and MPICH side by side with
# suffixed wrappers (mpicxx.openmpi, mpicxx.mpich); point FindMPI at the one
# asked for unless the user already gave MPI_<LANG>_COMPILER hints.
if(INFINICCL_MPI STREQUAL "openmpi")
  set(_wrap_suffix openmpi)
  set(_launchers mpirun.openmpi mpirun mpiexec)
elseif(INFINICCL_MPI STREQUAL "mpich")
  set(_wrap_suffix mpich)
  set(_launchers mpiexec.mpich mpiexec.hydra mpirun.mpich mpiexec mpirun)
else()
  message(FATAL_ERROR "INFINICCL_MPI must be openmpi or mpich, not '${INFINICCL_MPI}'")
endif()

foreach(_lang C CXX)
  if(_lang STREQUAL "C")
    set(_wrap mpicc)
  else()
    set(_wrap mpicxx)
  endif()
  if(NOT MPI_${_lang}_COMPILER)
    find_program(_found NAMES ${_wrap}.${_wrap_suffix} NO_CACHE)
    if(_found)
      set(MPI_${_lang}_COMPILER "${_found}" CACHE FILEPATH "MPI ${_lang} wrapper")
    endif()
    unset(_found)
  endif()
endforeach()
if(NOT MPIEXEC_EXECUTABLE)
  find_program(MPIEXEC_EXECUTABLE NAMES ${_launchers})
endif()

find_package(MPI REQUIRED COMPONENTS C)
message(STATUS "InfiniCCL: MPI flavour ${INFINICCL_MPI}, C wrapper ${MPI_C_COMPILER}, "
               "launcher ${MPIEXEC_EXECUTABLE}, MPI ${MPI_C_VERSION}")
