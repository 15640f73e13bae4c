#include "backend/mpi/gpu_aware.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace infiniccl {

GpuAwareness QueryMpiGpuAware(DeviceKind kind) {
  GpuAwareness g;
  if (kind != DeviceKind::kCuda) {
    g.how = "no query exists for this device kind";
    return g;
  }
#if defined(MPIX_GPU_SUPPORT_CUDA)
  int supported = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS) {
    g.supported = supported != 0;
  }
  g.how = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)";
#elif defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  g.supported = MPIX_Query_cuda_support() != 0;
  g.how = "MPIX_Query_cuda_support()";
#else
  g.how = "this MPI has no GPU-awareness query";
#endif
  return g;
}

}  // namespace infiniccl
