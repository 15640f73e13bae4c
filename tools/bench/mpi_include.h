// <mpi.h>, without the MPI C++ bindings (unused, and not warning-clean): the
// build defines OMPI_SKIP_MPICXX and MPICH_SKIP_MPICXX (CMakeLists.txt).
#ifndef INFINICCL_BENCH_MPI_INCLUDE_H_
#define INFINICCL_BENCH_MPI_INCLUDE_H_
#include <mpi.h>
#endif  // INFINICCL_BENCH_MPI_INCLUDE_H_
