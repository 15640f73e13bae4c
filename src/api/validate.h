// Argument checks for every collective, before anything is communicated.
// Each failure names the bad argument; the API layer prefixes the call.
#pragma once

#include "core/coll_args.h"
#include "core/status.h"

namespace infiniccl {

// Checks `a` for the calling rank of a communicator of `size` ranks and sets
// a->in_place when the buffers follow NCCL's in-place layout. Count 0 passes
// with NULL buffers.
// Inside a group (in_group), Send/Recv may name the calling rank as peer:
// both sides are posted before either is waited for. A tagged Recv
// (SendTagged/RecvTagged) may name kAnySource; tags are 0..INFINICCL_TAG_MAX.
Status ValidateCollective(int rank, int size, bool in_group, CollArgs *a);
inline Status ValidateCollective(int rank, int size, CollArgs *a) {
  return ValidateCollective(rank, size, false, a);
}

}  // namespace infiniccl
