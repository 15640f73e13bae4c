// Whether the MPI library can read device memory of a given kind directly
// (GPU-aware MPI). Asked of the library after MPI_Init: Open MPI through
// MPIX_Query_cuda_support (mpi-ext.h), MPICH through MPIX_GPU_query_support.
// Only CUDA can be answered by either; other kinds report false.
#pragma once

#include "device/device_runtime.h"

namespace infiniccl {

struct GpuAwareness {
  bool supported = false;
  const char *how = "";  // what answered, for logs and infiniccl-info
};

GpuAwareness QueryMpiGpuAware(DeviceKind kind);

// INFINICCL_MPI_DEVICE_DIRECT: 1 forces, 0 forbids, auto asks the MPI once
// per device kind (and says at INFO what it answered).
bool MpiReadsDeviceMemory(DeviceKind kind);

}  // namespace infiniccl
