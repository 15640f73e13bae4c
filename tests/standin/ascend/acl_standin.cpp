// A stand-in for CANN's libascendcl (tests only): the ACL runtime calls
// InfiniCCL makes, with ACL's documented signatures and error codes, over
// host memory. "Device" memory is host memory this library allocated and
// tracks; streams and events run over host threads (common/standin.h:
// work on an idle stream runs at once, work behind a host function or an
// event wait runs on the stream's own thread, in order), so
// aclrtLaunchHostFunc really holds a stream; every call is counted by name
// for the tests (iccl_standin_ascend_count).
//
// Devices: ICCL_STANDIN_DEVICES physical ones (default 8), seen through
// ASCEND_RT_VISIBLE_DEVICES as ACL documents it.
#include <acl/acl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "../common/standin.h"

namespace {

struct State : standin::Registry {
  std::mutex mu;
  standin::Counters counts;
  bool initialized = false;
  std::vector<int> visible;
  int process_device = -1;
};

State &S() {
  static State *s = new State();  // lives to exit
  return *s;
}

thread_local std::string t_error;
thread_local int t_device = -1;

aclError Fail(aclError code, const std::string &message) {
  t_error = message;
  return code;
}

#define STANDIN_ENTER(name)                    \
  State &s = S();                              \
  s.counts.Add(name);                          \
  std::lock_guard<std::mutex> lock(s.mu);      \
  if (!s.initialized)                          \
    return Fail(ACL_ERROR_UNINITIALIZE, std::string(name) + ": aclInit was not called")

int CurrentDevice(State &s) { return t_device >= 0 ? t_device : s.process_device; }

}  // namespace

extern "C" {

long iccl_standin_ascend_count(const char *name) { return S().counts.Get(name); }
void iccl_standin_ascend_reset(void) { S().counts.Reset(); }
void iccl_standin_ascend_record(const char *name) { S().counts.Add(name); }
int iccl_standin_ascend_is_device(const void *ptr, size_t bytes) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.FindDevice(ptr, bytes) != nullptr ? 1 : 0;
}
void iccl_standin_ascend_set_error(const char *message) { t_error = message; }
int iccl_standin_ascend_enqueue(aclrtStream stream, void (*fn)(void *), void *arg) {
  return standin::EnqueueOn(S().mu, S(), stream, fn, arg);
}
long iccl_standin_ascend_stream_held(aclrtStream stream) {
  return standin::HeldOn(S().mu, S(), stream);
}

aclError aclInit(const char *) {
  State &s = S();
  s.counts.Add("aclInit");
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.initialized) return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  s.initialized = true;
  s.visible = standin::VisibleDevices("ASCEND_RT_VISIBLE_DEVICES");
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  STANDIN_ENTER("aclFinalize");
  s.initialized = false;
  return ACL_SUCCESS;
}

const char *aclGetRecentErrMsg(void) { return t_error.c_str(); }

aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch) {
  if (major == nullptr || minor == nullptr || patch == nullptr)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: null argument");
  *major = 0;  // a stand-in: 0.0.0
  *minor = 0;
  *patch = 0;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  STANDIN_ENTER("aclrtGetDeviceCount");
  if (count == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: null count");
  *count = static_cast<uint32_t>(s.visible.size());
  if (s.visible.empty()) return Fail(ACL_ERROR_RT_NO_DEVICE, "no visible Ascend device");
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t device) {
  STANDIN_ENTER("aclrtSetDevice");
  if (device < 0 || device >= static_cast<int>(s.visible.size())) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID,
                "aclrtSetDevice: invalid device id " + std::to_string(device));
  }
  t_device = device;
  s.process_device = device;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *device) {
  STANDIN_ENTER("aclrtGetDevice");
  if (device == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: null");
  const int d = CurrentDevice(s);
  if (d < 0) return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no device set");
  *device = d;
  return ACL_SUCCESS;
}

aclError aclrtMalloc(void **ptr, size_t size, aclrtMemMallocPolicy) {
  STANDIN_ENTER("aclrtMalloc");
  if (ptr == nullptr || size == 0)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: null pointer or size 0");
  const int d = CurrentDevice(s);
  if (d < 0) return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtMalloc: no device set");
  void *p = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (p == nullptr) return Fail(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: out of memory");
  s.AddDevice(p, size, d);
  *ptr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void *ptr) {
  STANDIN_ENTER("aclrtFree");
  if (!s.RemoveDevice(ptr))
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: not a device allocation");
  std::free(ptr);
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **ptr, size_t size) {
  STANDIN_ENTER("aclrtMallocHost");
  if (ptr == nullptr || size == 0)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: null pointer or size 0");
  // ICCL_STANDIN_NO_PINNED=1: pinned memory runs out (the pageable fallback).
  if (const char *v = std::getenv("ICCL_STANDIN_NO_PINNED"); v && *v == '1')
    return Fail(ACL_ERROR_BAD_ALLOC, "aclrtMallocHost: out of pinned memory (stand-in)");
  void *p = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (p == nullptr) return Fail(ACL_ERROR_BAD_ALLOC, "aclrtMallocHost: out of memory");
  s.AddHost(p);
  *ptr = p;
  return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *ptr) {
  STANDIN_ENTER("aclrtFreeHost");
  if (!s.RemoveHost(ptr))
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: not a pinned allocation");
  std::free(ptr);
  return ACL_SUCCESS;
}

aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attr) {
  STANDIN_ENTER("aclrtPointerGetAttributes");
  if (attr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtPointerGetAttributes: null");
  std::memset(attr, 0, sizeof *attr);
  if (const standin::Registry::Alloc *a = s.FindDevice(ptr, 0)) {
    attr->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attr->location.id = static_cast<uint32_t>(a->device);
  } else {
    attr->location.type = ACL_MEM_LOCATION_TYPE_HOST;
  }
  attr->pageSize = 4096;
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
  static const char *const kNames[] = {"aclrtMemcpyAsync:HostToHost",
                                       "aclrtMemcpyAsync:HostToDevice",
                                       "aclrtMemcpyAsync:DeviceToHost",
                                       "aclrtMemcpyAsync:DeviceToDevice"};
  STANDIN_ENTER("aclrtMemcpyAsync");
  if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: invalid kind");
  s.counts.Add(kNames[kind]);
  if (dst == nullptr || src == nullptr || count > destMax)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: null buffer or count > destMax");
  standin::Stream *q = s.FindStream(stream);
  if (q == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: bad stream");
  const bool dst_dev = s.FindDevice(dst, count) != nullptr;
  const bool src_dev = s.FindDevice(src, count) != nullptr;
  const bool want_dst = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  const bool want_src = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (dst_dev != want_dst || src_dev != want_src)
    return Fail(ACL_ERROR_INVALID_PARAM,
                "aclrtMemcpyAsync: the buffers do not match the copy kind (or overrun)");
  q->Submit([dst, src, count] { std::memmove(dst, src, count); }, true);
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) {
  STANDIN_ENTER("aclrtCreateStream");
  if (stream == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: null");
  *stream = s.AddStream();
  return ACL_SUCCESS;
}

// Finishes the stream's work first (outside the library's lock: the work
// may wait for other threads' calls).
aclError aclrtDestroyStream(aclrtStream stream) {
  std::unique_ptr<standin::Stream> q;
  {
    STANDIN_ENTER("aclrtDestroyStream");
    q = s.TakeStream(stream);
    if (q == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: unknown stream");
  }
  q->Stop();
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  standin::Stream *q;
  {
    STANDIN_ENTER("aclrtSynchronizeStream");
    q = s.FindStream(stream);
    if (q == nullptr)
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: unknown stream");
  }
  q->Synchronize();
  return ACL_SUCCESS;
}

// CANN's aclrtLaunchHostFunc (acl_rt.h, newer CANN): `fn(args)` runs on a
// thread of the runtime's when the stream gets there, and the stream runs
// nothing after it until it returns.
aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
  standin::Stream *q;
  {
    STANDIN_ENTER("aclrtLaunchHostFunc");
    if (fn == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostFunc: null fn");
    q = s.FindStream(stream);
    if (q == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostFunc: bad stream");
  }
  q->Submit([fn, args] { fn(args); }, false);
  return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
  STANDIN_ENTER("aclrtCreateEvent");
  if (event == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: null");
  *event = s.AddEvent();
  return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  STANDIN_ENTER("aclrtDestroyEvent");
  if (!s.RemoveEvent(event))
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: unknown event");
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  STANDIN_ENTER("aclrtRecordEvent");
  std::shared_ptr<standin::Event> e = s.FindEvent(event);
  standin::Stream *q = s.FindStream(stream);
  if (e == nullptr || q == nullptr)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: unknown event or stream");
  e->RecordOn(*q);
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  std::shared_ptr<standin::Event> e;
  {
    STANDIN_ENTER("aclrtSynchronizeEvent");
    e = s.FindEvent(event);
    if (e == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent: unknown event");
  }
  e->Synchronize();
  return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  STANDIN_ENTER("aclrtStreamWaitEvent");
  std::shared_ptr<standin::Event> e = s.FindEvent(event);
  standin::Stream *q = s.FindStream(stream);
  if (e == nullptr || q == nullptr)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: unknown event or stream");
  e->WaitOn(*q);
  return ACL_SUCCESS;
}

}  // extern "C"
