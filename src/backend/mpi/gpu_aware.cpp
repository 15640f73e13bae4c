#include "backend/mpi/gpu_aware.h"

#include <mpi.h>

#include <atomic>

#include "core/config.h"
#include "core/log.h"
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

bool MpiReadsDeviceMemory(DeviceKind kind) {
  const Tristate mode = GlobalConfig().mpi_device_direct;
  if (mode != Tristate::kAuto) return mode == Tristate::kOn;
  static std::atomic<int> answers[kNumDeviceKinds];  // 0 unknown, 1 no, 2 yes
  std::atomic<int> &answer = answers[static_cast<int>(kind)];
  if (answer.load() == 0) {
    const GpuAwareness g = QueryMpiGpuAware(kind);
    INFINICCL_INFO("MPI GPU-aware for %s memory: %s (%s)", DeviceKindName(kind),
                   g.supported ? "yes" : "no", g.how);
    answer.store(g.supported ? 2 : 1);
  }
  return answer.load() == 2;
}

}  // namespace infiniccl
