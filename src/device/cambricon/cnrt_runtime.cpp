// Cambricon MLU: CudaLikeRuntime over CNRT (cnrt.h, libcnrt), through an
// adapter from CNRT's calls to CUDA's shape.
//
// WRITTEN FROM CAMBRICON'S PUBLIC DOCUMENTATION (the CNRT developer guide,
// CNRT 5 and later) AND OPEN CODE THAT CALLS CNRT; NOT YET VERIFIED ON
// CAMBRICON HARDWARE. Built and tested here only against the stand-in of
// tests/standin/cambricon (host memory behind the documented signatures).
//
// Where CNRT is not CUDA:
//   - queues (cnrtQueue_t) are streams and notifiers (cnrtNotifier_t) events:
//     cnrtPlaceNotifier records, cnrtWaitNotifier waits on the host,
//     cnrtQueueWaitNotifier orders a queue after one;
//   - cnrtMemcpyAsync takes the queue before the direction;
//   - pinned host memory is cnrtHostMalloc / cnrtFreeHost;
//   - the device count is unsigned; the version is cnrtGetLibVersion's
//     major.minor.patch;
//   - pointer attributes follow CUDA's (type, device), with no managed type.
//   - MLU_VISIBLE_DEVICES is applied by CNRT itself;
//   - gates (the progress engine's device-side waits) are host functions on
//     the queue, cnrtInvokeHostFunc (CNRT 5 and later: the function runs on
//     a runtime thread when the queue reaches it, and the queue waits for
//     it), the same mechanism FlagCX's and PaddlePaddle's MLU adapters use
//     for their host callbacks; where the SDK lacks it, no gates (calls on
//     MLU memory stay synchronous; cmake/Devices.cmake decides). The engine's
//     queue is a plain cnrtQueueCreate: CNRT documents no legacy default
//     queue that waits for the others -- UNVERIFIED on hardware, like the
//     rest of this file.
#ifdef INFINICCL_WITH_CAMBRICON

#include <cnrt.h>

#include <cstdio>
#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct CnrtApi {
  static constexpr const char *kPrefix = "cnrt";
  using PointerAttributes = cnrtPointerAttributes_t;
  using Error = cnrtRet_t;
  using Stream = cnrtQueue_t;
  using Event = cnrtNotifier_t;
  using MemcpyKind = cnrtMemTransDir_t;
  static constexpr Error kSuccess = cnrtSuccess;
  static constexpr auto kMemoryTypeUnregistered = cnrtMemTypeUnregistered;
  static constexpr auto kMemoryTypeHost = cnrtMemTypeHost;
  static constexpr auto kMemoryTypeDevice = cnrtMemTypeDevice;
  static constexpr auto kMemoryTypeManaged = cnrtMemTypeDevice;  // none in CNRT
  static constexpr MemcpyKind kMemcpyHostToDevice = cnrtMemcpyHostToDev;
  static constexpr MemcpyKind kMemcpyDeviceToHost = cnrtMemcpyDevToHost;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = cnrtMemcpyDevToDev;
  static constexpr unsigned kEventDisableTiming = 0;

  static const char *GetErrorString(Error e) { return cnrtGetErrorStr(e); }
  static Error GetLastError() { return cnrtGetLastError(); }
  static Error RuntimeGetVersion(int *v) {
    int major = 0, minor = 0, patch = 0;
    const Error e = cnrtGetLibVersion(&major, &minor, &patch);
    *v = major * 10000 + minor * 100 + patch;
    return e;
  }
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "CNRT %d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }
  static Error GetDeviceCount(int *n) {
    unsigned count = 0;
    const Error e = cnrtGetDeviceCount(&count);
    *n = static_cast<int>(count);
    return e;
  }
  static Error GetDevice(int *d) { return cnrtGetDevice(d); }
  static Error SetDevice(int d) { return cnrtSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *ptr) {
    return cnrtPointerGetAttributes(a, ptr);
  }
  static Error Malloc(void **ptr, size_t n) { return cnrtMalloc(ptr, n); }
  static Error Free(void *ptr) { return cnrtFree(ptr); }
  static Error MallocHost(void **ptr, size_t n) { return cnrtHostMalloc(ptr, n); }
  static Error FreeHost(void *ptr) { return cnrtFreeHost(ptr); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream q) {
    return cnrtMemcpyAsync(dst, const_cast<void *>(src), n, q, k);
  }
  static Error StreamSynchronize(Stream q) { return cnrtQueueSync(q); }
  static Error StreamCreate(Stream *q) { return cnrtQueueCreate(q); }
  static Error StreamDestroy(Stream q) { return cnrtQueueDestroy(q); }
  static Error EventCreateWithFlags(Event *e, unsigned) { return cnrtNotifierCreate(e); }
  static Error EventDestroy(Event e) { return cnrtNotifierDestroy(e); }
  static Error EventRecord(Event e, Stream q) { return cnrtPlaceNotifier(e, q); }
  static Error EventSynchronize(Event e) { return cnrtWaitNotifier(e); }
  static Error StreamWaitEvent(Stream q, Event e, unsigned) {
    return cnrtQueueWaitNotifier(e, q, 0);
  }
#ifdef INFINICCL_HAVE_cnrtInvokeHostFunc
  static constexpr const char *kLaunchHostFunc = "cnrtInvokeHostFunc";
  // Host functions not serialised across streams (the stand-in vendor
  // library's model; not verified on the vendor's hardware).
  static constexpr bool kHostFunctionThreadPerStream = true;
  static Error LaunchHostFunc(Stream q, void (*fn)(void *), void *arg) {
    return cnrtInvokeHostFunc(q, fn, arg);
  }
#endif
};

}  // namespace

std::unique_ptr<DeviceRuntime> MakeCambriconRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<CnrtApi>>(DeviceKind::kCambricon,
                                                               "cambricon");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_CAMBRICON
