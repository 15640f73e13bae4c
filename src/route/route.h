// Route: the one place that decides which path a collective takes.
//
//   1. host buffers                         -> MPI, zero copies
//   2. device buffers, comm with a CCL      -> NCCL/MCCL on the caller's stream
//   3. device buffers, GPU-aware MPI        -> MPI directly
//   4. device buffers otherwise             -> pooled host staging, pipelined
// INFINICCL_BACKEND=auto|mpi|ccl overrides; the decision itself is the pure
// function DecidePath (route_decision.h).
//
// Device buffers through MPI (3, 4, and the two-level path) are queued to
// the communicator's progress engine when it runs (progress/engine.h): the
// call returns at once, ordered on the caller's stream, and `*queued` is
// set; everything else that reaches MPI from the calling thread first waits
// for the queued work, so MPI sees one call order on every rank.
//
// The first call of each kind on a communicator logs its path at INFO; every
// call logs it at TRACE.
#pragma once

#include "core/coll_args.h"
#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

Status RouteCollective(Communicator &comm, const CollArgs &args, bool *queued = nullptr);

}  // namespace infiniccl
