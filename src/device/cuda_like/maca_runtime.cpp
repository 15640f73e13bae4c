// MetaX MACA: CudaLikeRuntime over the mc* runtime API (mcr/mc_runtime_api.h
// under $MACA_PATH or /opt/maca/include, libmcruntime).
//
// Written from MACA's documented API and from open-source code that calls it
// (UCC's MACA memory component, FlagCX's MetaX adaptor); not yet built or run
// against a MACA SDK or a MetaX device.
#ifdef INFINICCL_WITH_METAX

#if __has_include(<mcr/mc_runtime_api.h>)
#include <mcr/mc_runtime_api.h>
#else
#include <mc_runtime_api.h>  // include path that already ends in include/mcr
#endif

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct MacaApi {
  INFINICCL_CUDA_LIKE_API(mc, mcPointerAttribute_t)
  // No FormatVersion: MACA's version encoding is not documented where we could
  // read it, so the raw integer is printed.
};

}  // namespace

std::unique_ptr<DeviceRuntime> MakeMacaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<MacaApi>>(DeviceKind::kMaca, "maca");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_METAX
