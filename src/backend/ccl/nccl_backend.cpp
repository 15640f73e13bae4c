// NVIDIA NCCL: CclBackend over vendor_nccl.h.
#ifdef INFINICCL_WITH_NCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_nccl.h"

namespace infiniccl {

template class ccl::CclBackend<ccl::NcclApi>;

CclProvider *NcclProvider() {
  static auto *provider = new ccl::CclProviderImpl<ccl::NcclApi>();  // lives to exit
  return provider;
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_NCCL
