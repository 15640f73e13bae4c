// Argument checks for every collective, before anything is communicated.
// Each failure names the bad argument; the API layer prefixes the call.
#pragma once

#include "core/coll_args.h"
#include "core/status.h"

namespace infiniccl {

// Checks `a` for the calling rank of a communicator of `size` ranks and sets
// a->in_place when the buffers follow NCCL's in-place layout. Count 0 passes
// with NULL buffers.
Status ValidateCollective(int rank, int size, CollArgs *a);

}  // namespace infiniccl
