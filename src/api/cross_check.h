// INFINICCL_CHECK=1: before each collective the ranks of the communicator
// compare what they are about to do (one MPI_Allgather of a 7-number record
// on the communicator itself), so a mismatch becomes infinicclInvalidUsage
// on every rank with a message naming the field and the ranks, instead of a
// hang or a wrong result.
#pragma once

#include <cstdint>

#include "core/coll_args.h"
#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

// `args_valid`: whether this rank's own validation passed; a rank whose
// arguments were rejected still takes part, so the others learn of it
// instead of waiting for it. Point-to-point calls are not checked.
Status CrossCheck(Communicator &comm, const CollArgs &args, uint64_t seq,
                  bool args_valid);

// infinicclCommDestroy with the check on takes part in the exchange with a
// "CommDestroy after #N" record. A rank that skipped a collective is matched
// by MPI with its peers' next calls, which look the same when the calls do
// (same operation, count, dtype; each rank's own sequence number counts the
// calls it made, so they agree too); the skip becomes visible only where the
// ranks' calls first differ, at the latest when the rank that skipped
// destroys the communicator while its peers are still in their last
// collective. Then every rank gets InvalidUsage naming the ranks and their
// operations with sequence numbers, and the communicator is marked diverged
// (Communicator::MarkDiverged) on every rank. The communicator is released
// on this rank whatever the outcome. `collectives`: how many the rank made
// on `comm` before the destroy.
Status CrossCheckDestroy(Communicator &comm, uint64_t collectives);

}  // namespace infiniccl
