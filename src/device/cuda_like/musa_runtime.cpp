// Moore Threads MUSA: CudaLikeRuntime over the musa* runtime API
// (musa_runtime_api.h under $MUSA_PATH or /usr/local/musa/include, libmusart).
//
// Written from MUSA's documented API and from open-source code that calls it
// (torch_musa, FlagCX's MUSA adaptor); not yet built or run against a MUSA
// SDK or a Moore Threads device.
#ifdef INFINICCL_WITH_MOORE

#include <musa_runtime_api.h>

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct MusaApi {
  INFINICCL_CUDA_LIKE_API(musa, musaPointerAttributes)
  // No FormatVersion: MUSA's version encoding is not documented where we
  // could read it, so the raw integer is printed.
};

}  // namespace

std::unique_ptr<DeviceRuntime> MakeMusaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<MusaApi>>(DeviceKind::kMusa, "musa");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_MOORE
