// A CUDA driver function reached through the CUDA runtime's entry-point
// query, so that nothing links libcuda itself: the library's gate
// (cuStreamWaitValue32) and the bench's busy kernel (cuModuleLoadData,
// cuLaunchKernel) both look their functions up here. Include after
// <cuda_runtime_api.h>, only where the CUDA runtime is built in.
#pragma once

#include <cuda_runtime_api.h>

namespace infiniccl {

// The driver's `symbol` (its CUDA 12 version where the runtime asks by
// version), or nullptr when the driver lacks it; clears the runtime's error.
inline void *CudaDriverEntry(const char *symbol) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) !=
      cudaSuccess) {
#else
  if (cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault, &found) != cudaSuccess) {
#endif
    cudaGetLastError();
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? fn : nullptr;
}

}  // namespace infiniccl
