// CudaLikeRuntime: the one DeviceRuntime for every runtime that copies the
// CUDA runtime API under its own prefix: NVIDIA CUDA (cuda*), Iluvatar CoreX
// (cuda*, its own libcudart), MetaX MACA (mc*) and Moore Threads MUSA (musa*).
// `Api` (vendor_cuda.h, vendor_maca.h, vendor_musa.h) maps the generic names
// used below to the vendor's; no line here depends on the vendor.
//
// Included only by the per-vendor factory files (cuda_runtime.cpp, ...), each
// compiled only when its runtime is enabled (cmake/Devices.cmake).
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/log.h"
#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl::cuda_like {

// The memory type of a pointer's attributes. CUDA >= 10 and MUSA name the
// field `type`; some MACA releases call it `memoryType` (older CUDA had both).
template <typename Attributes>
auto MemoryTypeOf(const Attributes &attr) {
  if constexpr (requires { attr.type; }) {
    return attr.type;
  } else {
    return attr.memoryType;
  }
}

template <typename Api>
class CudaLikeRuntime final : public DeviceRuntime {
 public:
  // `name` is the DeviceKindName of `kind` ("cuda", "iluvatar", ...).
  CudaLikeRuntime(DeviceKind kind, const char *name);

  DeviceKind kind() const override { return kind_; }
  const char *description() const override { return description_.c_str(); }

  int DeviceCount() override {
    int count = count_.load(std::memory_order_acquire);
    return count >= 0 ? count : Probe();
  }
  Status GetDevice(int *device) override;
  Status SetDevice(int device) override;

  Status Classify(const void *ptr, PointerInfo *info) override;

  Status Malloc(void **ptr, size_t bytes) override;
  Status Free(void *ptr) override;
  Status MallocHost(void **ptr, size_t bytes) override;
  Status FreeHost(void *ptr) override;

  Status MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind kind,
                     void *stream) override;
  Status StreamSynchronize(void *stream) override;
  Status StreamCreate(void **stream) override;
  Status StreamDestroy(void *stream) override;

  Status EventCreate(void **event) override;
  Status EventDestroy(void *event) override;
  Status EventRecord(void *event, void *stream) override;
  Status EventSynchronize(void *event) override;
  Status StreamWaitEvent(void *stream, void *event) override;

 private:
  using Error = typename Api::Error;
  using Stream = typename Api::Stream;
  using Event = typename Api::Event;

  // Asks the runtime for its device count, once; logs the outcome at INFO.
  int Probe();
  // OK, or SystemError naming the vendor call (kPrefix + `call`) and the
  // runtime's own message.
  Status Check(Error err, const char *call) const;
  // The error for `call` when the runtime has no usable device.
  Status NoDevice(infinicclResult_t code, const char *call) const;

  static Stream AsStream(void *stream) { return static_cast<Stream>(stream); }
  static Event AsEvent(void *event) { return static_cast<Event>(event); }

  const DeviceKind kind_;
  const char *const name_;
  std::string description_;

  std::mutex probe_mutex_;
  std::atomic<int> count_{-1};    // -1 until probed
  std::string no_device_reason_;  // written once before count_ is published
};

// Calls Api::<generic name>(...) and turns its result into a Status that names
// the vendor's function.
#define INFINICCL_CUDA_LIKE_CALL(name, ...) Check(Api::name(__VA_ARGS__), #name)
// Device work with no device fails here, with the reason found by Probe(),
// instead of asking the runtime again.
#define INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(name)                          \
  do {                                                                    \
    if (DeviceCount() == 0) return NoDevice(infinicclSystemError, #name); \
  } while (0)

template <typename Api>
CudaLikeRuntime<Api>::CudaLikeRuntime(DeviceKind kind, const char *name)
    : kind_(kind), name_(name) {
  // Needs no driver: the runtime library answers from its own build.
  int version = 0;
  char text[32] = "version unknown";
  if (Api::RuntimeGetVersion(&version) == Api::kSuccess) {
    Api::FormatVersion(version, text, sizeof(text));
  } else {
    Api::GetLastError();
  }
  description_ = std::string(name) + " (runtime " + text + ")";
}

template <typename Api>
int CudaLikeRuntime<Api>::Probe() {
  std::lock_guard<std::mutex> lock(probe_mutex_);
  int count = count_.load(std::memory_order_relaxed);
  if (count >= 0) return count;
  count = 0;
  Error err = Api::GetDeviceCount(&count);
  if (err != Api::kSuccess) {
    Api::GetLastError();
    count = 0;
    char reason[512];
    std::snprintf(reason, sizeof(reason), "%sGetDeviceCount: %s (error %d)", Api::kPrefix,
                  Api::GetErrorString(err), static_cast<int>(err));
    no_device_reason_ = reason;
  } else if (count <= 0) {
    count = 0;
    no_device_reason_ = "the runtime reports 0 devices";
  }
  if (count == 0) {
    INFINICCL_INFO("%s: no usable device (%s); every pointer is treated as host memory",
                   description_.c_str(), no_device_reason_.c_str());
  } else {
    INFINICCL_INFO("%s: %d device(s)", description_.c_str(), count);
  }
  count_.store(count, std::memory_order_release);
  return count;
}

template <typename Api>
Status CudaLikeRuntime<Api>::Check(Error err, const char *call) const {
  if (err == Api::kSuccess) return Status::Ok();
  // The runtime also keeps the error as its "last error"; clear it so a later
  // cudaGetLastError-style check elsewhere does not report it a second time.
  Api::GetLastError();
  return MakeStatus(infinicclSystemError, "%s%s failed: %s (%s error %d)", Api::kPrefix,
                    call, Api::GetErrorString(err), name_, static_cast<int>(err));
}

template <typename Api>
Status CudaLikeRuntime<Api>::NoDevice(infinicclResult_t code, const char *call) const {
  return MakeStatus(code, "%s%s: no usable %s device (%s)", Api::kPrefix, call, name_,
                    no_device_reason_.c_str());
}

template <typename Api>
Status CudaLikeRuntime<Api>::GetDevice(int *device) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(GetDevice);
  return INFINICCL_CUDA_LIKE_CALL(GetDevice, device);
}

template <typename Api>
Status CudaLikeRuntime<Api>::SetDevice(int device) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(SetDevice);
  return INFINICCL_CUDA_LIKE_CALL(SetDevice, device);
}

template <typename Api>
Status CudaLikeRuntime<Api>::Classify(const void *ptr, PointerInfo *info) {
  *info = PointerInfo{MemorySpace::kHost, DeviceKind::kCpu, -1};
  // No device: nothing can be device memory, and the runtime is not asked
  // again (without a driver every call would fail the same way).
  if (ptr == nullptr || DeviceCount() == 0) return Status::Ok();

  typename Api::PointerAttributes attr{};
  if (Api::PointerGetAttributes(&attr, ptr) != Api::kSuccess) {
    // Runtimes before CUDA 11 (and possibly other vendors) answer
    // "invalid value" for memory they never saw: that is host memory.
    Api::GetLastError();
    return Status::Ok();
  }
  const auto type = MemoryTypeOf(attr);
  if (type == Api::kMemoryTypeDevice) {
    *info = PointerInfo{MemorySpace::kDevice, kind_, attr.device};
  } else if (type == Api::kMemoryTypeManaged) {
    *info = PointerInfo{MemorySpace::kManaged, kind_, attr.device};
  } else if (type == Api::kMemoryTypeHost || type == Api::kMemoryTypeUnregistered) {
    // Pinned or ordinary host memory: MPI reads both directly.
  } else {
    // A type this mapping does not know (a vendor's array memory, say).
    *info = PointerInfo{MemorySpace::kUnknown, kind_, attr.device};
  }
  return Status::Ok();
}

template <typename Api>
Status CudaLikeRuntime<Api>::Malloc(void **ptr, size_t bytes) {
  *ptr = nullptr;
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(Malloc);
  Status st = INFINICCL_CUDA_LIKE_CALL(Malloc, ptr, bytes);
  if (!st.ok()) *ptr = nullptr;
  return st;
}

template <typename Api>
Status CudaLikeRuntime<Api>::Free(void *ptr) {
  if (ptr == nullptr) return Status::Ok();
  return INFINICCL_CUDA_LIKE_CALL(Free, ptr);
}

template <typename Api>
Status CudaLikeRuntime<Api>::MallocHost(void **ptr, size_t bytes) {
  *ptr = nullptr;
  // No device, no pinned memory: NotSupported tells the caller to use
  // pageable memory; a runtime failure (out of pinnable memory) is an error
  // status, which the caller handles the same way.
  if (DeviceCount() == 0) return NoDevice(infinicclNotSupported, "MallocHost");
  Status st = INFINICCL_CUDA_LIKE_CALL(MallocHost, ptr, bytes);
  if (!st.ok()) *ptr = nullptr;
  return st;
}

template <typename Api>
Status CudaLikeRuntime<Api>::FreeHost(void *ptr) {
  if (ptr == nullptr) return Status::Ok();
  return INFINICCL_CUDA_LIKE_CALL(FreeHost, ptr);
}

template <typename Api>
Status CudaLikeRuntime<Api>::MemcpyAsync(void *dst, const void *src, size_t bytes,
                                         CopyKind kind, void *stream) {
  if (bytes == 0) return Status::Ok();
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(MemcpyAsync);
  const typename Api::MemcpyKind direction =
      kind == CopyKind::kHostToDevice   ? Api::kMemcpyHostToDevice
      : kind == CopyKind::kDeviceToHost ? Api::kMemcpyDeviceToHost
                                        : Api::kMemcpyDeviceToDevice;
  return INFINICCL_CUDA_LIKE_CALL(MemcpyAsync, dst, src, bytes, direction,
                                  AsStream(stream));
}

template <typename Api>
Status CudaLikeRuntime<Api>::StreamSynchronize(void *stream) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamSynchronize);
  return INFINICCL_CUDA_LIKE_CALL(StreamSynchronize, AsStream(stream));
}

template <typename Api>
Status CudaLikeRuntime<Api>::StreamCreate(void **stream) {
  *stream = nullptr;
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamCreate);
  // A blocking stream (plain StreamCreate): it stays ordered with the legacy
  // default stream, which is what a user passing stream 0 expects.
  Stream created{};
  INFINICCL_RETURN_IF_ERROR(INFINICCL_CUDA_LIKE_CALL(StreamCreate, &created));
  *stream = created;
  return Status::Ok();
}

template <typename Api>
Status CudaLikeRuntime<Api>::StreamDestroy(void *stream) {
  if (stream == nullptr) return Status::Ok();  // the default stream is not ours
  return INFINICCL_CUDA_LIKE_CALL(StreamDestroy, AsStream(stream));
}

template <typename Api>
Status CudaLikeRuntime<Api>::EventCreate(void **event) {
  *event = nullptr;
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventCreate);
  // Ordering only, never timing: events without timing are cheaper to record
  // and to wait for.
  Event created{};
  INFINICCL_RETURN_IF_ERROR(
      INFINICCL_CUDA_LIKE_CALL(EventCreateWithFlags, &created, Api::kEventDisableTiming));
  *event = created;
  return Status::Ok();
}

template <typename Api>
Status CudaLikeRuntime<Api>::EventDestroy(void *event) {
  if (event == nullptr) return Status::Ok();
  return INFINICCL_CUDA_LIKE_CALL(EventDestroy, AsEvent(event));
}

template <typename Api>
Status CudaLikeRuntime<Api>::EventRecord(void *event, void *stream) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventRecord);
  return INFINICCL_CUDA_LIKE_CALL(EventRecord, AsEvent(event), AsStream(stream));
}

template <typename Api>
Status CudaLikeRuntime<Api>::EventSynchronize(void *event) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventSynchronize);
  return INFINICCL_CUDA_LIKE_CALL(EventSynchronize, AsEvent(event));
}

template <typename Api>
Status CudaLikeRuntime<Api>::StreamWaitEvent(void *stream, void *event) {
  INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamWaitEvent);
  return INFINICCL_CUDA_LIKE_CALL(StreamWaitEvent, AsStream(stream), AsEvent(event), 0u);
}

#undef INFINICCL_CUDA_LIKE_REQUIRE_DEVICE
#undef INFINICCL_CUDA_LIKE_CALL

}  // namespace infiniccl::cuda_like
