// Huawei Ascend: CudaLikeRuntime over CANN's ACL runtime (acl/acl.h,
// libascendcl), through an adapter from ACL's calls to CUDA's shape.
//
// WRITTEN FROM CANN'S PUBLIC DOCUMENTATION (the ACL runtime API reference)
// AND OPEN CODE THAT CALLS ACL; NOT YET VERIFIED ON ASCEND HARDWARE. Built and
// tested here only against the stand-in of tests/standin/ascend (host memory
// behind the documented signatures).
//
// Where ACL is not CUDA:
//   - aclInit must come first (Init below); a process that already called it
//     gets ACL_ERROR_REPEAT_INITIALIZE, which is success here. aclFinalize is
//     never called: the runtime lives to the end of the process, like the
//     other runtimes, and the application may still use ACL;
//   - aclrtMemcpyAsync takes the destination's capacity (destMax) before the
//     source;
//   - the device count is a uint32_t, device ids int32_t;
//   - pointer attributes (aclrtPointerGetAttributes, CANN 8) give a location
//     (host or device, and the device id), read here into CUDA's
//     type/device pair; memory ACL does not know is host;
//   - events: plain aclrtCreateEvent (ACL's flags are not CUDA's; ordering
//     is all that is used); errors carry no string per code, so messages
//     quote aclGetRecentErrMsg(). There is no "last error" to clear.
//   - ASCEND_RT_VISIBLE_DEVICES is applied by ACL itself: the count and the
//     ids are those of the visible devices.
#ifdef INFINICCL_WITH_ASCEND

#include <acl/acl.h>

#include <cstdint>
#include <cstdio>
#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct AclApi {
  static constexpr const char *kPrefix = "aclrt";
  // ACL's location read into CUDA's shape (see PointerGetAttributes).
  struct PointerAttributes {
    int type;
    int device;
  };
  using Error = aclError;
  using Stream = aclrtStream;
  using Event = aclrtEvent;
  using MemcpyKind = aclrtMemcpyKind;
  static constexpr Error kSuccess = ACL_SUCCESS;
  static constexpr int kMemoryTypeUnregistered = 0;
  static constexpr int kMemoryTypeHost = 0;
  static constexpr int kMemoryTypeDevice = 1;
  static constexpr int kMemoryTypeManaged = 2;  // ACL reports none
  static constexpr MemcpyKind kMemcpyHostToDevice = ACL_MEMCPY_HOST_TO_DEVICE;
  static constexpr MemcpyKind kMemcpyDeviceToHost = ACL_MEMCPY_DEVICE_TO_HOST;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = ACL_MEMCPY_DEVICE_TO_DEVICE;
  static constexpr unsigned kEventDisableTiming = 0;

  static Error Init() {
    const Error e = aclInit(nullptr);
    return e == ACL_ERROR_REPEAT_INITIALIZE ? ACL_SUCCESS : e;
  }
  static const char *GetErrorString(Error) {
    const char *m = aclGetRecentErrMsg();
    return m != nullptr && *m != '\0' ? m : "ACL error (see CANN's error code list)";
  }
  static Error GetLastError() { return ACL_SUCCESS; }
  // major * 10000 + minor * 100 + patch, from aclrtGetVersion.
  static Error RuntimeGetVersion(int *v) {
    int32_t major = 0, minor = 0, patch = 0;
    const Error e = aclrtGetVersion(&major, &minor, &patch);
    *v = major * 10000 + minor * 100 + patch;
    return e;
  }
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "ACL %d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }
  static Error GetDeviceCount(int *n) {
    uint32_t count = 0;
    const Error e = aclrtGetDeviceCount(&count);
    *n = static_cast<int>(count);
    return e;
  }
  static Error GetDevice(int *d) {
    int32_t device = -1;
    const Error e = aclrtGetDevice(&device);
    *d = device;
    return e;
  }
  static Error SetDevice(int d) { return aclrtSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *ptr) {
    aclrtPtrAttributes attr{};
    const Error e = aclrtPointerGetAttributes(ptr, &attr);
    a->type = attr.location.type == ACL_MEM_LOCATION_TYPE_DEVICE ? kMemoryTypeDevice
                                                                 : kMemoryTypeHost;
    a->device = static_cast<int>(attr.location.id);
    return e;
  }
  static Error Malloc(void **ptr, size_t n) {
    return aclrtMalloc(ptr, n, ACL_MEM_MALLOC_HUGE_FIRST);
  }
  static Error Free(void *ptr) { return aclrtFree(ptr); }
  static Error MallocHost(void **ptr, size_t n) { return aclrtMallocHost(ptr, n); }
  static Error FreeHost(void *ptr) { return aclrtFreeHost(ptr); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream s) {
    return aclrtMemcpyAsync(dst, n, src, n, k, s);
  }
  static Error StreamSynchronize(Stream s) { return aclrtSynchronizeStream(s); }
  static Error StreamCreate(Stream *s) { return aclrtCreateStream(s); }
  static Error StreamDestroy(Stream s) { return aclrtDestroyStream(s); }
  static Error EventCreateWithFlags(Event *e, unsigned) { return aclrtCreateEvent(e); }
  static Error EventDestroy(Event e) { return aclrtDestroyEvent(e); }
  static Error EventRecord(Event e, Stream s) { return aclrtRecordEvent(e, s); }
  static Error EventSynchronize(Event e) { return aclrtSynchronizeEvent(e); }
  static Error StreamWaitEvent(Stream s, Event e, unsigned) {
    return aclrtStreamWaitEvent(s, e);
  }
#ifdef INFINICCL_HAVE_aclrtLaunchHostFunc
  static constexpr const char *kLaunchHostFunc = "aclrtLaunchHostFunc";
  // Host functions not serialised across streams (the stand-in vendor
  // library's model; not verified on the vendor's hardware).
  static constexpr bool kHostFunctionThreadPerStream = true;
  static Error LaunchHostFunc(Stream s, void (*fn)(void *), void *arg) {
    return aclrtLaunchHostFunc(s, fn, arg);
  }
#endif
};

}  // namespace

std::unique_ptr<DeviceRuntime> MakeAscendRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<AclApi>>(DeviceKind::kAscend,
                                                              "ascend");
}

}  // namespace infiniccl

#endif  // INFINICCL_WITH_ASCEND
