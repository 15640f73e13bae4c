// MetaX MCCL: CclBackend over vendor_mccl.h (not yet built against a MACA SDK).
#ifdef INFINICCL_WITH_MCCL

#include "backend/ccl/ccl_backend.h"
#include "backend/ccl/vendor_mccl.h"

namespace infiniccl {

template class ccl::CclBackend<ccl::McclApi>;

CclProvider *McclProvider() {
  static auto *provider = new ccl::CclProviderImpl<ccl::McclApi>();  // lives to exit
  return provider;
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_MCCL
