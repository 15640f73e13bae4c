// Cambricon CNCL: CclBackend over vendor_cncl.h (written from documentation, not yet
// verified on hardware).
#ifdef INFINICCL_WITH_CNCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_cncl.h"

infiniccl::CclProvider *infiniccl::CnclProvider() {
  return ccl::Provider<ccl::CnclApi>();
}

#endif  // INFINICCL_WITH_CNCL
