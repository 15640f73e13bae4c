// The two-level (hierarchical) collectives: the group's CCL (or MPI, staged
// for device buffers, where the group has none) inside each group of a
// communicator's Topology, MPI (staged, or direct when the MPI reads device
// memory) between groups. Every rank of the communicator takes this path
// for a call or none does: the route decides from what all ranks share
// (the topology, the kind, the size), never from where this rank's buffers
// are, so host-only ranks take part with host buffers.
#pragma once

#include "core/coll_args.h"
#include "core/status.h"
#include "device/device_runtime.h"
#include "hier/topology.h"
#include "staging/pipeline.h"

namespace infiniccl {

// `a` validated, count > 0; `device` the runtime of its device buffers
// (nullptr: host buffers); `nranks` the communicator's size; `owner` the
// communicator (staging pool bookkeeping).
Status RunHierarchical(Topology &t, DeviceRuntime *device, const CollArgs &a,
                       BufferPlacement placement, int nranks, const void *owner);

}  // namespace infiniccl
