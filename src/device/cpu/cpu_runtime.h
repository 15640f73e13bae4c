// CpuRuntime: the always-present runtime of host memory. "Device" memory is
// malloc'd host memory, copies are synchronous memcpy, streams and events
// are no-ops. The benchmark's --device cpu uses it.
#pragma once

#include "device/device_runtime.h"

namespace infiniccl {

class CpuRuntime final : public DeviceRuntime {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  const char *description() const override { return "cpu (host memory)"; }
  int DeviceCount() override { return 1; }
  Status GetDevice(int *device) override { return *device = 0, Status::Ok(); }
  Status SetDevice(int device) override;
  Status Classify(const void *, PointerInfo *info) override;
  Status Malloc(void **ptr, size_t bytes) override;
  Status Free(void *ptr) override;
  Status MallocHost(void **ptr, size_t bytes) override { return Malloc(ptr, bytes); }
  Status FreeHost(void *ptr) override { return Free(ptr); }
  Status MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind, void *) override;
  Status StreamSynchronize(void *) override { return Status::Ok(); }
  Status StreamCreate(void **stream) override { return *stream = nullptr, Status::Ok(); }
  Status StreamDestroy(void *) override { return Status::Ok(); }
  Status EventCreate(void **event) override { return *event = nullptr, Status::Ok(); }
  Status EventDestroy(void *) override { return Status::Ok(); }
  Status EventRecord(void *, void *) override { return Status::Ok(); }
  Status EventSynchronize(void *) override { return Status::Ok(); }
  Status StreamWaitEvent(void *, void *) override { return Status::Ok(); }
};

}  // namespace infiniccl
