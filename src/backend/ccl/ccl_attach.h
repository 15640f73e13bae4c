// Gives a communicator made under MPI (infinicclCommInitAll) its CCL
// communicator when every rank is bound to its own device of one kind that
// has a CCL: rank 0 makes the unique id, MPI broadcasts it, every rank joins.
// The decision is collective (all ranks agree), so mixed nodes (some ranks
// without such a device) all stay on MPI instead of hanging in the CCL.
#pragma once

#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

// INFINICCL_BACKEND=mpi: nothing. auto: a CCL where possible, otherwise an
// INFO line saying why not (WARN under ccl). An error only when the CCL
// itself fails (unique id, init) under INFINICCL_BACKEND=ccl.
Status AttachCclUnderMpi(Communicator &comm);

// infinicclCommSplit of a communicator that has a CCL communicator; every
// rank of `parent` calls it after the MPI split, `child` null on ranks
// without a color. The CCL's own split (ncclCommSplit) where it has one and
// it succeeds on every rank; otherwise each child gets a CCL communicator of
// its own as AttachCclUnderMpi makes one.
Status SplitCclUnderMpi(Communicator &parent, int color, int key, Communicator *child);

}  // namespace infiniccl
