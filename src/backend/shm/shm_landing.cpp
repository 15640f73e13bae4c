#include "backend/shm/shm_landing.h"

#include "core/dtype.h"

namespace infiniccl {
namespace shm {

Landing::~Landing() {
  if (free_ == nullptr) return;
  // After the copy out of the last landed call: the caller's stream no
  // longer reads or writes the segment. For an aborted communicator this
  // runs on the thread that destroys its engine (Communicator), after the
  // engine's thread is done: the stream may still be held by a long
  // kernel, and the copies behind it use the mapping until it ends.
  (void)device_->EventSynchronize(free_);
  (void)device_->EventDestroy(free_);
}

Status Landing::In(const CollArgs &a, DeviceRuntime *device) {
  if (free_ == nullptr) {
    INFINICCL_RETURN_IF_ERROR(device->EventCreate(&free_));
    device_ = device;
  } else if (stream_ != a.stream) {
    INFINICCL_RETURN_IF_ERROR(device->StreamWaitEvent(a.stream, free_));
  }
  stream_ = a.stream;
  return device->MemcpyAsync(area_, a.sendbuff, a.count * DataTypeSize(a.dtype),
                             CopyKind::kDeviceToHost, a.stream);
}

Status Landing::Out(const CollArgs &a, DeviceRuntime *device, bool copy) {
  if (copy) {
    INFINICCL_RETURN_IF_ERROR(device->MemcpyAsync(a.recvbuff, area_,
                                                  a.count * DataTypeSize(a.dtype),
                                                  CopyKind::kHostToDevice, a.stream));
  }
  return device->EventRecord(free_, a.stream);
}

}  // namespace shm
}  // namespace infiniccl
