// NVIDIA CUDA: CudaLikeRuntime over the CUDA runtime API (libcudart).
#ifdef INFINICCL_WITH_NVIDIA

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/cuda_like/vendor_cuda.h"
#include "device/registry.h"

namespace infiniccl {

template class cuda_like::CudaLikeRuntime<cuda_like::CudaApi>;

std::unique_ptr<DeviceRuntime> MakeCudaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<cuda_like::CudaApi>>(
      DeviceKind::kCuda, "cuda");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_NVIDIA
