// MetaX MCCL's names for the generic ones CclBackend calls (vendor_api.h;
// mccl.h and libmccl from the MACA SDK). MCCL follows NCCL's API with the
// mccl prefix; the names here come from MACA's documentation and open-source
// code that calls MCCL (FlagCX's MetaX adaptor, InfiniCore, PyTorch's MCCL
// process group). Not yet built against a MACA SDK or run on a MetaX device.
// AlltoAll, Gather and Scatter go as grouped Send/Recv (MCCL's native ones,
// if any, are not documented where we could read).
#pragma once

#if __has_include(<mccl/mccl.h>)
#include <mccl/mccl.h>
#else
#include <mccl.h>
#endif
#if __has_include(<mcr/mc_runtime_api.h>)
#include <mcr/mc_runtime_api.h>
#else
#include <mc_runtime_api.h>
#endif

#include "backend/ccl/vendor_api.h"

namespace infiniccl::ccl {

struct McclApi {
  static constexpr const char *kName = "MCCL";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kMaca;
  INFINICCL_CCL_API(mccl, mcStream_t)
  // No FormatVersion: MCCL's version encoding is not documented where we
  // could read it, so the raw integer is printed.

  // No split used on MCCL (its API is not verified): a child communicator
  // gets a CCL communicator of its own instead (comm/comm_split.cpp: SplitCcl).
  static constexpr bool kHasSplit = false;
  static Result CommSplit(Comm, int, int, Comm *) { return Result{}; }
  static constexpr bool kNativeAllToAllGatherScatter = false;
};

}  // namespace infiniccl::ccl
