// Route: the one place that decides which path a collective takes.
//
//   1. host buffers                         -> MPI, zero copies
//   2. device buffers, comm with a CCL      -> NCCL/MCCL on the caller's stream
//   3. device buffers, GPU-aware MPI        -> MPI directly
//   4. device buffers otherwise             -> pooled host staging, pipelined
// INFINICCL_BACKEND=auto|mpi|ccl overrides; the decision itself is the pure
// function DecidePath (route_decision.h).
//
// The first call of each kind on a communicator logs its path at INFO; every
// call logs it at TRACE.
#pragma once

#include "core/coll_args.h"
#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

Status RouteCollective(Communicator &comm, const CollArgs &args);

}  // namespace infiniccl
