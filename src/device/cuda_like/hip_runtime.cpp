// AMD GPUs and Hygon DCU: CudaLikeRuntime over the HIP runtime API
// (hip/hip_runtime_api.h, libamdhip64), which copies CUDA's under the hip
// prefix. Hygon's DTK ships the same HIP runtime, so one mapping serves both.
//
// Built for real against Debian 12's libamdhip64-dev (HIP 5.2) and run on a
// machine without an AMD device (hipGetDeviceCount fails, every pointer is
// host memory); not yet verified on AMD or Hygon hardware.
//
// Off CUDA's pattern, by HIP version:
//   - pinned host memory is hipHostMalloc/hipHostFree (hipMallocHost is
//     deprecated);
//   - before HIP 6 the pointer attributes name the memory type `memoryType`
//     (MemoryTypeOf picks it), have no "unregistered" type (unknown host
//     memory is an error answer, taken as host) and say managed memory in
//     `isManaged`; from HIP 6 they follow CUDA (`type`,
//     hipMemoryTypeUnregistered, hipMemoryTypeManaged).
#ifdef INFINICCL_WITH_HIP

#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

#include <cstdint>
#include <memory>
#include <string>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct HipApi {
  // Gates (DeviceRuntime::GateWait) by a stream memory operation where the
  // device takes them: hipStreamWaitValue32(GTE) on a word of signal memory
  // (hipExtMallocWithFlags(hipMallocSignalMemory), which the host writes),
  // checked once by hipDeviceAttributeCanUseStreamWaitValue and one real
  // wait that is already satisfied. Written from the HIP headers, not yet run
  // on an AMD device.
  static constexpr const char *kWaitValue32 = "hipStreamWaitValue32";
  static bool WaitValue32Usable(int device, std::string *why) {
    int can = 0;
    if (hipDeviceGetAttribute(&can, hipDeviceAttributeCanUseStreamWaitValue, device) !=
            hipSuccess ||
        !can) {
      (void)hipGetLastError();
      *why = "the device reports hipDeviceAttributeCanUseStreamWaitValue = 0";
      return false;
    }
    void *word = nullptr;
    uint64_t dev = 0;
    hipStream_t s = nullptr;
    const bool ok = MappedWord(&word, &dev).ok() &&
                    hipStreamCreateWithFlags(&s, hipStreamNonBlocking) == hipSuccess &&
                    WaitValue32(s, dev, 0).ok() && hipStreamSynchronize(s) == hipSuccess;
    if (s != nullptr) (void)hipStreamDestroy(s);
    if (word != nullptr) (void)FreeMappedWord(word);
    (void)hipGetLastError();
    if (!ok) *why = "a test hipStreamWaitValue32 failed";
    return ok;
  }
  static Status MappedWord(void **word, uint64_t *device_word) {
    *word = nullptr;
    if (hipExtMallocWithFlags(word, 64, hipMallocSignalMemory) != hipSuccess) {
      const hipError_t err = hipGetLastError();
      *word = nullptr;
      return MakeStatus(infinicclSystemError, "gate word in signal memory: %s",
                        hipGetErrorString(err));
    }
    *static_cast<uint32_t *>(*word) = 0;
    *device_word = reinterpret_cast<uint64_t>(*word);
    return Status::Ok();
  }
  static hipError_t FreeMappedWord(void *word) { return hipFree(word); }
  static Status WaitValue32(hipStream_t stream, uint64_t device_word, uint32_t target) {
    const hipError_t r = hipStreamWaitValue32(stream, reinterpret_cast<void *>(device_word),
                                              target, hipStreamWaitValueGte, 0xFFFFFFFFu);
    if (r == hipSuccess) return Status::Ok();
    return MakeStatus(infinicclSystemError, "hipStreamWaitValue32 failed: %s",
                      hipGetErrorString(r));
  }

  // Otherwise by a host function on the stream: hipStreamAddCallback, since
  // Debian's libamdhip64 5.2 declares hipLaunchHostFunc but does not export
  // it (found by CI's hip stage).
  static constexpr unsigned kStreamNonBlocking = hipStreamNonBlocking;
  static hipError_t StreamCreateWithFlags(hipStream_t *s, unsigned f) {
    return hipStreamCreateWithFlags(s, f);
  }
  static constexpr const char *kLaunchHostFunc = "hipStreamAddCallback";
  struct HostCall {
    void (*fn)(void *);
    void *arg;
  };
  static void RunHostCall(hipStream_t, hipError_t, void *p) {
    auto *call = static_cast<HostCall *>(p);
    call->fn(call->arg);
    delete call;
  }
  static hipError_t LaunchHostFunc(hipStream_t s, void (*fn)(void *), void *arg) {
    auto *call = new HostCall{fn, arg};
    const hipError_t err = hipStreamAddCallback(s, &RunHostCall, call, 0);
    if (err != hipSuccess) delete call;
    return err;
  }
  static constexpr const char *kPrefix = "hip";
  using PointerAttributes = hipPointerAttribute_t;
  using Error = hipError_t;
  using Stream = hipStream_t;
  using Event = hipEvent_t;
  using MemcpyKind = hipMemcpyKind;
  static constexpr Error kSuccess = hipSuccess;
#if HIP_VERSION_MAJOR >= 6
  static constexpr auto kMemoryTypeUnregistered = hipMemoryTypeUnregistered;
  static constexpr auto kMemoryTypeManaged = hipMemoryTypeManaged;
#else
  // No such types before HIP 6: host stands in for "unregistered" (the same
  // answer), and managed memory is told by IsManaged below.
  static constexpr auto kMemoryTypeUnregistered = hipMemoryTypeHost;
  static constexpr auto kMemoryTypeManaged = hipMemoryTypeUnified;
  static bool IsManaged(const PointerAttributes &a) { return a.isManaged != 0; }
#endif
  static constexpr auto kMemoryTypeHost = hipMemoryTypeHost;
  static constexpr auto kMemoryTypeDevice = hipMemoryTypeDevice;
  static constexpr MemcpyKind kMemcpyHostToDevice = hipMemcpyHostToDevice;
  static constexpr MemcpyKind kMemcpyDeviceToHost = hipMemcpyDeviceToHost;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = hipMemcpyDeviceToDevice;
  static constexpr unsigned kEventDisableTiming = hipEventDisableTiming;

  static const char *GetErrorString(Error e) { return hipGetErrorString(e); }
  static Error GetLastError() { return hipGetLastError(); }
  static Error RuntimeGetVersion(int *v) { return hipRuntimeGetVersion(v); }
  static Error GetDeviceCount(int *n) { return hipGetDeviceCount(n); }
  static Error GetDevice(int *d) { return hipGetDevice(d); }
  static Error SetDevice(int d) { return hipSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *ptr) {
    return hipPointerGetAttributes(a, ptr);
  }
  static Error Malloc(void **ptr, size_t n) { return hipMalloc(ptr, n); }
  static Error Free(void *ptr) { return hipFree(ptr); }
  static Error MallocHost(void **ptr, size_t n) {
    return hipHostMalloc(ptr, n, hipHostMallocDefault);
  }
  static Error FreeHost(void *ptr) { return hipHostFree(ptr); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream s) {
    return hipMemcpyAsync(dst, src, n, k, s);
  }
  static Error StreamSynchronize(Stream s) { return hipStreamSynchronize(s); }
  static Error StreamCreate(Stream *s) { return hipStreamCreate(s); }
  static Error StreamDestroy(Stream s) { return hipStreamDestroy(s); }
  static Error EventCreateWithFlags(Event *e, unsigned f) {
    return hipEventCreateWithFlags(e, f);
  }
  static Error EventDestroy(Event e) { return hipEventDestroy(e); }
  static Error EventRecord(Event e, Stream s) { return hipEventRecord(e, s); }
  static Error EventSynchronize(Event e) { return hipEventSynchronize(e); }
  static Error StreamWaitEvent(Stream s, Event e, unsigned f) {
    return hipStreamWaitEvent(s, e, f);
  }
  // Stream capture (hipStreamBeginCapture).
  static Error StreamIsCapturing(Stream s, bool *capturing) {
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    const Error e = hipStreamIsCapturing(s, &status);
    *capturing = status != hipStreamCaptureStatusNone;
    return e;
  }

  // hipRuntimeGetVersion answers HIP_VERSION on AMD: major * 10^7 +
  // minor * 10^5 + patch (hip_version.h).
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "HIP %d.%d.%d", version / 10000000, (version / 100000) % 100,
                  version % 100000);
  }
};

}  // namespace

std::unique_ptr<DeviceRuntime> MakeHipRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<HipApi>>(DeviceKind::kHip, "hip");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_HIP
