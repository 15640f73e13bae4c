// The staged path: a collective on device buffers over an MPI that cannot
// read device memory. Device inputs are copied to host buffers on the
// user's stream (after the work already queued there), MPI runs on the host
// buffers, and results are copied back on the same stream; the call returns
// when the results are in the device buffers.
#pragma once

#include "backend/backend.h"
#include "core/coll_args.h"
#include "device/device_runtime.h"

namespace infiniccl {

struct BufferPlacement {
  bool send_on_device;  // send buffer used at this rank and in device memory
  bool recv_on_device;
};

// `args` has been validated (send_bytes / recv_bytes set).
Status RunStaged(Backend &host_backend, DeviceRuntime &device, const CollArgs &args,
                 BufferPlacement placement);

}  // namespace infiniccl
