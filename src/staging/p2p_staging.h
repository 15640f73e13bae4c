// Grouped Send/Recv of device buffers (route/group_p2p.h) over a backend
// batch: direct when the backend reads device memory (after the work queued
// on the stream), otherwise staged through pooled host buffers. A staged
// Send is copied to the host (waited for) before it is posted; a staged Recv
// lands in a host buffer that Finish copies to the device once the batch has
// completed. The leases live here, so until the group ends.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "device/device_runtime.h"
#include "staging/staging_pool.h"

namespace infiniccl {

class P2pStaging {
 public:
  P2pStaging() = default;
  P2pStaging(const P2pStaging &) = delete;
  P2pStaging &operator=(const P2pStaging &) = delete;

  // Posts `a` (a validated Send/Recv on `device` memory) into `batch`;
  // `owner` is the communicator, for the pool's bookkeeping.
  Status Post(P2pBatch &batch, const CollArgs &a, DeviceRuntime &device, bool direct,
              const void *owner);
  // After batch.Complete: the staged Recvs whose operation completed
  // (`ok`, indexed like the batch's operations) copied to the device and
  // waited for; a Recv that failed leaves its device buffer alone.
  Status Finish(const std::vector<bool> &ok);

 private:
  struct PendingRecv {
    size_t op;  // its index in the batch
    DeviceRuntime *device;
    void *dst;
    const char *src;
    size_t bytes;
    void *stream;
  };
  std::vector<StagingLease> leases_;
  std::vector<PendingRecv> recvs_;
};

}  // namespace infiniccl
