#include "staging/p2p_staging.h"

#include <set>
#include <utility>

#include "core/dtype.h"
#include "staging/pipeline.h"

namespace infiniccl {

Status P2pStaging::Post(P2pBatch &batch, const CollArgs &a, DeviceRuntime &device,
                        bool direct, const void *owner) {
  const bool send = a.kind == CollKind::kSend;
  if (direct) {
    INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
    StagingPool::Global().CountDirect();
    return batch.Post(a, send ? a.sendbuff : a.recvbuff);
  }
  StagingPool &pool = StagingPool::Global();
  const size_t bytes = a.count * DataTypeSize(a.dtype);
  StagingLease lease;
  INFINICCL_RETURN_IF_ERROR(pool.Lease(bytes, device, owner, &lease));
  // Kept until the group is cleared whatever fails below, so that no copy
  // still in flight writes into a buffer back in the pool.
  char *host = lease.data();
  leases_.push_back(std::move(lease));
  pool.CountCall(false);
  if (send) {
    // The data must be on the host before the backend may read it.
    INFINICCL_RETURN_IF_ERROR(
        StageCopy(device, host, a.sendbuff, bytes, CopyKind::kDeviceToHost, a.stream));
    INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
    return batch.Post(a, host);
  }
  const size_t op = batch.ops();
  const Status st = batch.Post(a, host);
  if (batch.ops() > op) recvs_.push_back({op, &device, a.recvbuff, host, bytes, a.stream});
  return st;
}

Status P2pStaging::Finish(const std::vector<bool> &ok) {
  Status first;
  std::set<std::pair<DeviceRuntime *, void *>> streams;
  for (const PendingRecv &r : recvs_) {
    if (r.op >= ok.size() || !ok[r.op]) continue;  // nothing valid arrived
    Status st = StageCopy(*r.device, r.dst, r.src, r.bytes, CopyKind::kHostToDevice,
                          r.stream);
    if (st.ok()) {
      streams.insert({r.device, r.stream});
    } else if (first.ok()) {
      first = st;
    }
  }
  recvs_.clear();
  // The leases go back to the pool when the group is cleared, so the copies
  // out of them must be done by then; GroupEnd returns with recvbuff filled.
  for (const auto &[device, stream] : streams) {
    Status st = device->StreamSynchronize(stream);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace infiniccl
