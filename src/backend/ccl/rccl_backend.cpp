// AMD RCCL: CclBackend over vendor_rccl.h (written from documentation, not
// yet built against RCCL nor run on AMD or Hygon hardware).
#ifdef INFINICCL_WITH_RCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_rccl.h"

infiniccl::CclProvider *infiniccl::RcclProvider() {
  return ccl::Provider<ccl::RcclApi>();
}

#endif  // INFINICCL_WITH_RCCL
