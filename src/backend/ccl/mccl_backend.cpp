// MetaX MCCL: CclBackend over vendor_mccl.h (not yet built against a MACA SDK).
#ifdef INFINICCL_WITH_MCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_mccl.h"

infiniccl::CclProvider *infiniccl::McclProvider() {
  return ccl::Provider<ccl::McclApi>();
}

#endif  // INFINICCL_WITH_MCCL
