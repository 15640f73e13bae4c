// Huawei HCCL: CclBackend over vendor_hccl.h (written from documentation, not yet
// verified on hardware).
#ifdef INFINICCL_WITH_HCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_hccl.h"

infiniccl::CclProvider *infiniccl::HcclProvider() {
  return ccl::Provider<ccl::HcclApi>();
}

#endif  // INFINICCL_WITH_HCCL
