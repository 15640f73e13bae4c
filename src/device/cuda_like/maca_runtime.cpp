// MetaX MACA: CudaLikeRuntime over the mc* runtime API (libmcruntime).
// Not yet built or run against a MACA SDK (see vendor_maca.h).
#ifdef INFINICCL_WITH_METAX

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/cuda_like/vendor_maca.h"
#include "device/registry.h"

namespace infiniccl {

template class cuda_like::CudaLikeRuntime<cuda_like::MacaApi>;

std::unique_ptr<DeviceRuntime> MakeMacaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<cuda_like::MacaApi>>(
      DeviceKind::kMaca, "maca");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_METAX
