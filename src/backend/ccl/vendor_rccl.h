// AMD RCCL (AMD GPUs, Hygon DCU): NCCL's API and symbols under NCCL's names
// (ncclAllReduce, ncclResult_t, ...) from librccl, on HIP streams. So this is
// NCCL's mapping (vendor_api.h) with HIP's stream type and device kind. The
// minimum is the same as NCCL's (2.13: ncclGetLastError), read from the
// header's NCCL_VERSION_CODE, which RCCL keeps in NCCL's numbering.
//
// Written from RCCL's documentation (its API is NCCL's); not yet built
// against an RCCL install (Debian 12 packages none) nor run on AMD or Hygon
// hardware. AlltoAll, Gather and Scatter go as grouped Send/Recv, which every
// RCCL has.
#pragma once

#if __has_include(<rccl/rccl.h>)
#include <rccl/rccl.h>
#else
#include <rccl.h>
#endif
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdio>

#include "backend/ccl/vendor_api.h"

namespace infiniccl::ccl {

struct RcclApi {
  static constexpr const char *kName = "RCCL";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kHip;
  INFINICCL_CCL_API(nccl, hipStream_t)

  // NCCL's encoding: major * 10000 + minor * 100 + patch.
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  static constexpr bool kHasSplit = true;
  static Result CommSplit(Comm c, int color, int key, Comm *out) {
    return ncclCommSplit(c, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, out, nullptr);
  }
  static Result CommUserRank(Comm c, int *rank) { return ncclCommUserRank(c, rank); }
  static Result CommCount(Comm c, int *count) { return ncclCommCount(c, count); }
#else
  static constexpr bool kHasSplit = false;
  static Result CommSplit(Comm, int, int, Comm *) { return ncclInvalidUsage; }
#endif
  static constexpr bool kNativeAllToAllGatherScatter = false;
};

}  // namespace infiniccl::ccl
