#include "device/cpu/cpu_runtime.h"

#include <cstdlib>
#include <cstring>

namespace infiniccl {

Status CpuRuntime::SetDevice(int device) {
  if (device != 0) {
    return MakeStatus(infinicclInvalidArgument, "cpu has one device (0), not %d", device);
  }
  return Status::Ok();
}

Status CpuRuntime::Classify(const void *, PointerInfo *info) {
  *info = PointerInfo{MemorySpace::kHost, DeviceKind::kCpu, -1};
  return Status::Ok();
}

Status CpuRuntime::Malloc(void **ptr, size_t bytes) {
  *ptr = bytes == 0 ? nullptr : std::malloc(bytes);
  if (bytes != 0 && *ptr == nullptr) {
    return MakeStatus(infinicclSystemError, "out of host memory (%zu bytes)", bytes);
  }
  return Status::Ok();
}

Status CpuRuntime::Free(void *ptr) {
  std::free(ptr);
  return Status::Ok();
}

Status CpuRuntime::MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind, void *) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

}  // namespace infiniccl
