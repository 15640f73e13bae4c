// NVIDIA NCCL: CclBackend over vendor_nccl.h.
#ifdef INFINICCL_WITH_NCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_nccl.h"

infiniccl::CclProvider *infiniccl::NcclProvider() {
  return ccl::Provider<ccl::NcclApi>();
}

#endif  // INFINICCL_WITH_NCCL
