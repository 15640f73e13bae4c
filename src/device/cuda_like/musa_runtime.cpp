// Moore Threads MUSA: CudaLikeRuntime over the musa* runtime API (libmusart).
// Not yet built or run against a MUSA SDK (see vendor_musa.h).
#ifdef INFINICCL_WITH_MOORE

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/cuda_like/vendor_musa.h"
#include "device/registry.h"

namespace infiniccl {

template class cuda_like::CudaLikeRuntime<cuda_like::MusaApi>;

std::unique_ptr<DeviceRuntime> MakeMusaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<cuda_like::MusaApi>>(
      DeviceKind::kMusa, "musa");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_MOORE
