// INFINICCL_CHECK=1: before each collective the ranks of the communicator
// compare what they are about to do (one MPI_Allgather of a 7-number record
// on the communicator itself), so a mismatch becomes infinicclInvalidUsage
// on every rank with a message naming the field and the ranks, instead of a
// hang or a wrong result.
#pragma once

#include <cstdint>

#include "core/coll_args.h"
#include "core/communicator.h"
#include "core/status.h"

namespace infiniccl {

// `args_valid`: whether this rank's own validation passed; a rank whose
// arguments were rejected still takes part, so the others learn of it
// instead of waiting for it. Point-to-point calls are not checked.
Status CrossCheck(Communicator &comm, const CollArgs &args, uint64_t seq,
                  bool args_valid);

}  // namespace infiniccl
