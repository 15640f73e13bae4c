// NCCL's names for the generic ones CclBackend calls (vendor_api.h). The
// minimum NCCL is 2.13 (cmake/Ccl.cmake).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdio>

#include "backend/ccl/vendor_api.h"

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
// Weak references: a process that loaded an older libnccl.so.2 first (the one
// in PyPI's torch wheels, 2.26 in torch 2.7) still loads this library; the
// three are then null and those calls go as grouped Send/Recv.
#pragma weak ncclAlltoAll
#pragma weak ncclGather
#pragma weak ncclScatter
#endif

namespace infiniccl::ccl {

struct NcclApi {
  static constexpr const char *kName = "NCCL";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kCuda;
  INFINICCL_CCL_API(nccl, cudaStream_t)

  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  // ncclCommSplit (2.18): shares the parent's resources; a negative color is
  // NCCL_SPLIT_NOCOLOR (takes part, gets no communicator).
  static constexpr bool kHasSplit = true;
  static Result CommSplit(Comm c, int color, int key, Comm *out) {
    return ncclCommSplit(c, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, out, nullptr);
  }
  // The child's place, for a split without MPI to say it.
  static Result CommUserRank(Comm c, int *rank) { return ncclCommUserRank(c, rank); }
  static Result CommCount(Comm c, int *count) { return ncclCommCount(c, count); }
#else
  static constexpr bool kHasSplit = false;
  static Result CommSplit(Comm, int, int, Comm *) { return ncclInvalidUsage; }
#endif

  // AlltoAll, Gather and Scatter are native from 2.28, where the loaded
  // library has them; otherwise grouped Send/Recv (CclBackend::Grouped).
  static constexpr bool kNativeAllToAllGatherScatter =
      NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  static bool NativeAllToAllGatherScatterLoaded() {
    return ncclAlltoAll != nullptr && ncclGather != nullptr && ncclScatter != nullptr;
  }
  static Result AlltoAll(const void *s, void *r, size_t n, DataType t, Comm c,
                         Stream st) {
    return ncclAlltoAll(s, r, n, t, c, st);
  }
  static Result Gather(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                       Stream st) {
    return ncclGather(s, r, n, t, root, c, st);
  }
  static Result Scatter(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                        Stream st) {
    return ncclScatter(s, r, n, t, root, c, st);
  }
#endif
};

}  // namespace infiniccl::ccl
