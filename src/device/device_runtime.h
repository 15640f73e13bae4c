// DeviceRuntime: everything the library needs from an accelerator runtime
// (UCC calls this a memory component). One implementation per family:
//   cpu/        always present: host memory only
//   cuda_like/  CUDA, MACA, Iluvatar, MUSA, HIP: one source, vendor name mapping
//   ascend/     Huawei Ascend (ACL), cambricon/ Cambricon (CNRT): the same
//               source over an adapter from their APIs to CUDA's shape
//   sim/        an emulated device for machines without an accelerator
// The library has no device kernels: only the runtimes' C APIs are called.
//
// Streams and events are opaque `void *` (cudaStream_t, mcStream_t, ...);
// nullptr is the runtime's default (legacy) stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace infiniccl {

// New kinds go after kSim: the values of the older ones stay as they were.
enum class DeviceKind : uint8_t {
  kCpu,
  kCuda,
  kMaca,
  kIluvatar,
  kMusa,
  kSim,
  kHip,        // AMD GPUs and Hygon DCU (HIP runtime)
  kAscend,     // Huawei Ascend NPUs (CANN's ACL runtime)
  kCambricon,  // Cambricon MLUs (CNRT)
};
inline constexpr int kNumDeviceKinds = 9;
const char *DeviceKindName(DeviceKind kind);  // "cpu", "cuda", ..., "sim"

enum class MemorySpace : uint8_t {
  kHost,     // ordinary or pinned host memory: MPI reads it directly
  kDevice,   // device memory of the runtime that answered
  kManaged,  // unified/managed memory: treated like device memory
  kUnknown,
};
const char *MemorySpaceName(MemorySpace space);

struct PointerInfo {
  MemorySpace space = MemorySpace::kUnknown;
  DeviceKind kind = DeviceKind::kCpu;  // which runtime owns it (for device/managed)
  int device = -1;                     // device ordinal, -1 for host
};

// kDeviceToDevice: within one device (the direct path's local copies).
enum class CopyKind : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  virtual DeviceKind kind() const = 0;
  // Human-readable, e.g. "cuda (CUDA 13.0)" or "sim (emulated device)".
  virtual const char *description() const = 0;
  // True for the emulated device: output must say so wherever it appears.
  virtual bool emulated() const { return false; }
  // Staging pipeline chunk when INFINICCL_PIPELINE_CHUNK_BYTES is auto. 1 MiB
  // for a real GPU: on an H200 it beat 512K, 2M and 4M by 10-22% from 4 MiB
  // messages up at 2 and 4 ranks (docs/PERFORMANCE.md, "Real GPU (one NVIDIA H200)").
  virtual size_t DefaultChunkBytes() const { return size_t{1} << 20; }

  // Number of usable devices; 0 when the driver or device is missing (the
  // reason is logged once at INFO by the implementation).
  virtual int DeviceCount() = 0;
  virtual Status GetDevice(int *device) = 0;
  virtual Status SetDevice(int device) = 0;

  // What memory `ptr` is. Host memory (including pointers the runtime does not
  // know) reports kHost; it must be cheap: it runs on every call.
  virtual Status Classify(const void *ptr, PointerInfo *info) = 0;

  virtual Status Malloc(void **ptr, size_t bytes) = 0;
  virtual Status Free(void *ptr) = 0;
  // Page-locked host memory. NotSupported when the runtime cannot provide it
  // (callers then fall back to pageable memory).
  virtual Status MallocHost(void **ptr, size_t bytes) = 0;
  virtual Status FreeHost(void *ptr) = 0;
  // Page-locks host memory the caller allocated (cudaHostRegister and its
  // kin), so that copies to and from it are asynchronous DMA as from
  // MallocHost memory; HostUnregister undoes it. NotSupported where the
  // runtime has no such call: the memory then stays pageable, and copies
  // through it still work (synchronously).
  virtual Status HostRegister(void * /*ptr*/, size_t /*bytes*/) {
    return Status(infinicclNotSupported, "this device runtime cannot page-lock host memory");
  }
  virtual Status HostUnregister(void * /*ptr*/) { return Status::Ok(); }

  // Asynchronous copy ordered on `stream` after all work already queued on it.
  virtual Status MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind kind,
                             void *stream) = 0;
  virtual Status StreamSynchronize(void *stream) = 0;
  // Whether `stream` is being captured into a graph (CUDA's and HIP's
  // stream capture, the emulated device's): work queued on it then is
  // recorded, not run, and waiting for it is an error. False where the
  // runtime has no capture.
  virtual Status StreamIsCapturing(void * /*stream*/, bool *capturing) {
    *capturing = false;
    return Status::Ok();
  }
  virtual Status StreamCreate(void **stream) = 0;
  virtual Status StreamDestroy(void *stream) = 0;

  virtual Status EventCreate(void **event) = 0;
  virtual Status EventDestroy(void *event) = 0;
  virtual Status EventRecord(void *event, void *stream) = 0;
  virtual Status EventSynchronize(void *event) = 0;
  // Work queued on `stream` after this waits for `event`.
  virtual Status StreamWaitEvent(void *stream, void *event) = 0;

  // A stream for the library's own copies that never waits for the legacy
  // default stream (CUDA's cudaStreamNonBlocking): the progress engine's
  // copies must run while a user's stream 0 is held by a gate.
  virtual Status StreamCreateNonBlocking(void **stream) { return StreamCreate(stream); }

  // Gates: device-side waits that the host releases (the progress engine,
  // docs/architecture/progress-engine.md). A gate is a 32-bit counter in host memory the
  // device can watch. GateWait queues on `stream` a wait until the counter
  // has reached `target` (wrap-around safe: (int32_t)(value - target) >= 0);
  // work queued on the stream after it runs only then. GateOpen stores
  // `value` from the host (never fails, never blocks). GateMechanism names
  // how the device waits ("cuStreamWaitValue32", "cudaLaunchHostFunc",
  // "emulated stream wait"), or is nullptr when the runtime has no gates:
  // calls on its memory then stay synchronous.
  virtual const char *GateMechanism() { return nullptr; }
  // Whether a gate wait is a host function that blocks until the gate opens
  // (cudaLaunchHostFunc and its kin).
  virtual bool GateIsHostFunction() { return false; }
  // Whether the runtime runs a device's host functions one at a time (CUDA's
  // and HIP's callback thread): a closed host-function gate then holds back
  // every stream's host functions (the progress engine keeps gates of two
  // communicators from being closed on one device at once).
  virtual bool HostFunctionsSerialized() const { return true; }
  virtual Status GateCreate(void **gate) {
    *gate = nullptr;
    return Status(infinicclNotSupported, "this device runtime has no device-side waits");
  }
  virtual Status GateDestroy(void * /*gate*/) { return Status::Ok(); }
  virtual Status GateWait(void * /*stream*/, void * /*gate*/, uint32_t /*target*/) {
    return Status(infinicclNotSupported, "this device runtime has no device-side waits");
  }
  virtual void GateOpen(void * /*gate*/, uint32_t /*value*/) {}
};

// The stream for the host-to-device copies of the library's pipelined calls
// on `device`'s current device, so that they run beside the device-to-host
// copies on the caller's stream (two copy engines on a GPU, two copy threads
// on the emulated device): one per runtime and device, made once
// (non-blocking, so it never waits for a legacy default stream held by the
// progress engine's gate) and kept for the life of the process.
Status CopyOutStream(DeviceRuntime &device, void **out);

// True once a gate holding `value` satisfies a wait for `target`.
inline bool GateReached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

}  // namespace infiniccl
