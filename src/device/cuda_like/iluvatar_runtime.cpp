// Iluvatar CoreX: its runtime implements the CUDA runtime API under the CUDA
// names (cuda_runtime_api.h and libcudart from /usr/local/corex), so it is
// CudaLikeRuntime over the CUDA mapping, reporting itself as "iluvatar".
// cmake/Devices.cmake never enables it together with NVIDIA: both libraries
// define the same cuda* symbols.
#ifdef INFINICCL_WITH_ILUVATAR

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/cuda_like/vendor_cuda.h"
#include "device/registry.h"

namespace infiniccl {

std::unique_ptr<DeviceRuntime> MakeIluvatarRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<cuda_like::CudaApi>>(
      DeviceKind::kIluvatar, "iluvatar");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_ILUVATAR
