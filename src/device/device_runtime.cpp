#include "device/device_runtime.h"

#include <map>
#include <mutex>
#include <utility>

namespace infiniccl {

Status CopyOutStream(DeviceRuntime &device, void **out) {
  static std::mutex mutex;
  static std::map<std::pair<DeviceRuntime *, int>, void *> streams;
  int id = 0;
  INFINICCL_RETURN_IF_ERROR(device.GetDevice(&id));
  std::lock_guard<std::mutex> lock(mutex);
  void *&s = streams[{&device, id}];
  if (s == nullptr) INFINICCL_RETURN_IF_ERROR(device.StreamCreateNonBlocking(&s));
  *out = s;
  return Status::Ok();
}

const char *DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kMaca: return "metax";
    case DeviceKind::kIluvatar: return "iluvatar";
    case DeviceKind::kMusa: return "moore";
    case DeviceKind::kSim: return "sim";
    case DeviceKind::kHip: return "hip";
    case DeviceKind::kAscend: return "ascend";
    case DeviceKind::kCambricon: return "cambricon";
  }
  return "?";
}

const char *MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::kHost: return "host";
    case MemorySpace::kDevice: return "device";
    case MemorySpace::kManaged: return "managed";
    case MemorySpace::kUnknown: return "unknown";
  }
  return "?";
}

}  // namespace infiniccl
