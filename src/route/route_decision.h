// The route decision as a pure function of what the call is and what the
// communicator has, so it is tested without MPI, devices or a CCL.
#pragma once

#include "core/config.h"  // BackendChoice (INFINICCL_BACKEND, parsed with the config)
#include "core/status.h"

namespace infiniccl {

enum class Path { kHostMpi = 0, kDirectMpi = 1, kStagedMpi = 2, kCcl = 3 };
inline constexpr int kNumPaths = 4;
const char *PathName(Path path);

struct RouteFacts {
  bool device_buffers = false;  // either buffer is device memory
  bool has_mpi = true;          // false: made by infinicclCommInitRank
  bool has_ccl = false;         // the communicator has a CCL communicator
  const char *ccl_name = "CCL";
  // Why the CCL cannot run this call (CclUnsupportedReason); nullptr if it can.
  const char *ccl_unsupported = nullptr;
};

// Picks the path, or says why there is none. kDirectMpi is never returned:
// the caller turns kStagedMpi into it when the MPI reads device memory.
Status DecidePath(BackendChoice choice, const RouteFacts &facts, Path *out);

}  // namespace infiniccl
