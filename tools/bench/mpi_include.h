// <mpi.h> without the MPI C++ bindings (unused, and not warning-clean).
#ifndef INFINICCL_BENCH_MPI_INCLUDE_H_
#define INFINICCL_BENCH_MPI_INCLUDE_H_
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif  // INFINICCL_BENCH_MPI_INCLUDE_H_
