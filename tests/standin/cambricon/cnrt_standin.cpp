// A stand-in for Cambricon's libcnrt (tests only): the CNRT calls InfiniCCL
// makes, with CNRT's documented signatures, over host memory. "Device"
// memory is host memory this library allocated and tracks; queues and
// notifiers run over host threads (common/standin.h: work on an idle queue
// runs at once, work behind a host function or a notifier wait on the
// queue's own thread, in order), so cnrtInvokeHostFunc really holds a queue;
// every call is counted by name (iccl_standin_cambricon_count). Devices:
// ICCL_STANDIN_DEVICES physical ones (default 8), seen through
// MLU_VISIBLE_DEVICES.
#include <cnrt.h>

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
  std::vector<int> visible = standin::VisibleDevices("MLU_VISIBLE_DEVICES");
  int process_device = 0;  // CNRT's current device defaults to 0
};

State &S() {
  static State *s = new State();
  return *s;
}

thread_local cnrtRet_t t_last = cnrtSuccess;
thread_local int t_device = -1;

cnrtRet_t Fail(cnrtRet_t code) {
  t_last = code;
  return code;
}

#define STANDIN_ENTER(name)  \
  State &s = S();            \
  s.counts.Add(name);        \
  std::lock_guard<std::mutex> lock(s.mu)

}  // namespace

extern "C" {

long iccl_standin_cambricon_count(const char *name) { return S().counts.Get(name); }
void iccl_standin_cambricon_reset(void) { S().counts.Reset(); }
void iccl_standin_cambricon_record(const char *name) { S().counts.Add(name); }
int iccl_standin_cambricon_is_device(const void *ptr, size_t bytes) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.FindDevice(ptr, bytes) != nullptr ? 1 : 0;
}
int iccl_standin_cambricon_enqueue(cnrtQueue_t queue, void (*fn)(void *), void *arg) {
  return standin::EnqueueOn(S().mu, S(), queue, fn, arg);
}
long iccl_standin_cambricon_queue_held(cnrtQueue_t queue) {
  return standin::HeldOn(S().mu, S(), queue);
}

const char *cnrtGetErrorStr(cnrtRet_t e) {
  switch (e) {
    case cnrtSuccess: return "success";
    case cnrtErrorNotReady: return "not ready";
    case cnrtErrorArgsInvalid: return "invalid argument (stand-in)";
    case cnrtErrorNoDevice: return "no MLU device (stand-in)";
    case cnrtErrorNoMem: return "out of memory (stand-in)";
    case cnrtErrorDeviceInvalid: return "invalid device (stand-in)";
    case cnrtErrorQueue: return "invalid queue (stand-in)";
    case cnrtErrorNotifier: return "invalid notifier (stand-in)";
  }
  return "unknown CNRT error (stand-in)";
}

cnrtRet_t cnrtGetLastError(void) {
  const cnrtRet_t e = t_last;
  t_last = cnrtSuccess;
  return e;
}

cnrtRet_t cnrtGetLibVersion(int *major, int *minor, int *patch) {
  if (!major || !minor || !patch) return Fail(cnrtErrorArgsInvalid);
  *major = *minor = *patch = 0;  // a stand-in: 0.0.0
  return cnrtSuccess;
}

cnrtRet_t cnrtGetDeviceCount(unsigned int *count) {
  STANDIN_ENTER("cnrtGetDeviceCount");
  if (count == nullptr) return Fail(cnrtErrorArgsInvalid);
  *count = static_cast<unsigned>(s.visible.size());
  return s.visible.empty() ? Fail(cnrtErrorNoDevice) : cnrtSuccess;
}

cnrtRet_t cnrtSetDevice(int device) {
  STANDIN_ENTER("cnrtSetDevice");
  if (device < 0 || device >= static_cast<int>(s.visible.size()))
    return Fail(cnrtErrorDeviceInvalid);
  t_device = device;
  s.process_device = device;
  return cnrtSuccess;
}

cnrtRet_t cnrtGetDevice(int *device) {
  STANDIN_ENTER("cnrtGetDevice");
  if (device == nullptr) return Fail(cnrtErrorArgsInvalid);
  if (s.visible.empty()) return Fail(cnrtErrorNoDevice);
  *device = t_device >= 0 ? t_device : s.process_device;
  return cnrtSuccess;
}

cnrtRet_t cnrtMalloc(void **ptr, size_t bytes) {
  STANDIN_ENTER("cnrtMalloc");
  if (ptr == nullptr || bytes == 0) return Fail(cnrtErrorArgsInvalid);
  if (s.visible.empty()) return Fail(cnrtErrorNoDevice);
  void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) return Fail(cnrtErrorNoMem);
  s.AddDevice(p, bytes, t_device >= 0 ? t_device : s.process_device);
  *ptr = p;
  return cnrtSuccess;
}

cnrtRet_t cnrtFree(void *ptr) {
  STANDIN_ENTER("cnrtFree");
  if (!s.RemoveDevice(ptr)) return Fail(cnrtErrorArgsInvalid);
  std::free(ptr);
  return cnrtSuccess;
}

cnrtRet_t cnrtHostMalloc(void **ptr, size_t bytes) {
  STANDIN_ENTER("cnrtHostMalloc");
  if (ptr == nullptr || bytes == 0) return Fail(cnrtErrorArgsInvalid);
  if (const char *v = std::getenv("ICCL_STANDIN_NO_PINNED"); v && *v == '1')
    return Fail(cnrtErrorNoMem);
  void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) return Fail(cnrtErrorNoMem);
  s.AddHost(p);
  *ptr = p;
  return cnrtSuccess;
}

cnrtRet_t cnrtFreeHost(void *ptr) {
  STANDIN_ENTER("cnrtFreeHost");
  if (!s.RemoveHost(ptr)) return Fail(cnrtErrorArgsInvalid);
  std::free(ptr);
  return cnrtSuccess;
}

cnrtRet_t cnrtPointerGetAttributes(cnrtPointerAttributes_t *attr, const void *ptr) {
  STANDIN_ENTER("cnrtPointerGetAttributes");
  if (attr == nullptr) return Fail(cnrtErrorArgsInvalid);
  std::memset(attr, 0, sizeof *attr);
  if (const standin::Registry::Alloc *a = s.FindDevice(ptr, 0)) {
    attr->type = cnrtMemTypeDevice;
    attr->device = a->device;
    attr->devicePointer = const_cast<void *>(ptr);
  } else if (s.IsHost(ptr)) {
    attr->type = cnrtMemTypeHost;
    attr->device = -1;
    attr->hostPointer = const_cast<void *>(ptr);
  } else {
    attr->type = cnrtMemTypeUnregistered;
    attr->device = -1;
  }
  return cnrtSuccess;
}

cnrtRet_t cnrtMemcpyAsync(void *dst, void *src, size_t bytes, cnrtQueue_t queue,
                          cnrtMemTransDir_t dir) {
  STANDIN_ENTER("cnrtMemcpyAsync");
  const char *name = dir == cnrtMemcpyHostToDev   ? "cnrtMemcpyAsync:HostToDev"
                     : dir == cnrtMemcpyDevToHost ? "cnrtMemcpyAsync:DevToHost"
                     : dir == cnrtMemcpyDevToDev  ? "cnrtMemcpyAsync:DevToDev"
                                                  : "cnrtMemcpyAsync:other";
  s.counts.Add(name);
  standin::Stream *q = s.FindStream(queue);
  if (dst == nullptr || src == nullptr || q == nullptr) return Fail(cnrtErrorArgsInvalid);
  const bool dst_dev = s.FindDevice(dst, bytes) != nullptr;
  const bool src_dev = s.FindDevice(src, bytes) != nullptr;
  bool ok = false;
  switch (dir) {
    case cnrtMemcpyHostToDev: ok = dst_dev && !src_dev; break;
    case cnrtMemcpyDevToHost: ok = !dst_dev && src_dev; break;
    case cnrtMemcpyDevToDev: ok = dst_dev && src_dev; break;
    default: ok = false;
  }
  if (!ok) return Fail(cnrtErrorArgsInvalid);
  q->Submit([dst, src, bytes] { std::memmove(dst, src, bytes); }, true);
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueCreate(cnrtQueue_t *queue) {
  STANDIN_ENTER("cnrtQueueCreate");
  if (queue == nullptr) return Fail(cnrtErrorArgsInvalid);
  *queue = static_cast<cnrtQueue_t>(s.AddStream());
  return cnrtSuccess;
}

// Finishes the queue's work first, outside the library's lock.
cnrtRet_t cnrtQueueDestroy(cnrtQueue_t queue) {
  std::unique_ptr<standin::Stream> q;
  {
    STANDIN_ENTER("cnrtQueueDestroy");
    q = s.TakeStream(queue);
    if (q == nullptr) return Fail(cnrtErrorQueue);
  }
  q->Stop();
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueSync(cnrtQueue_t queue) {
  standin::Stream *q;
  {
    STANDIN_ENTER("cnrtQueueSync");
    q = s.FindStream(queue);
    if (q == nullptr) return Fail(cnrtErrorQueue);
  }
  q->Synchronize();
  return cnrtSuccess;
}

// CNRT's cnrtInvokeHostFunc (CNRT 5 and later): `fn(userData)` runs on a
// thread of the runtime's when the queue reaches it; later work on the
// queue waits for it to return.
cnrtRet_t cnrtInvokeHostFunc(cnrtQueue_t queue, cnrtHostFn_t fn, void *userData) {
  standin::Stream *q;
  {
    STANDIN_ENTER("cnrtInvokeHostFunc");
    q = s.FindStream(queue);
    if (q == nullptr) return Fail(cnrtErrorQueue);
    if (fn == nullptr) return Fail(cnrtErrorArgsInvalid);
  }
  q->Submit([fn, userData] { fn(userData); }, false);
  return cnrtSuccess;
}

cnrtRet_t cnrtNotifierCreate(cnrtNotifier_t *n) {
  STANDIN_ENTER("cnrtNotifierCreate");
  if (n == nullptr) return Fail(cnrtErrorArgsInvalid);
  *n = static_cast<cnrtNotifier_t>(s.AddEvent());
  return cnrtSuccess;
}

cnrtRet_t cnrtNotifierDestroy(cnrtNotifier_t n) {
  STANDIN_ENTER("cnrtNotifierDestroy");
  if (!s.RemoveEvent(n)) return Fail(cnrtErrorNotifier);
  return cnrtSuccess;
}

cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t n, cnrtQueue_t queue) {
  STANDIN_ENTER("cnrtPlaceNotifier");
  std::shared_ptr<standin::Event> e = s.FindEvent(n);
  standin::Stream *q = s.FindStream(queue);
  if (e == nullptr || q == nullptr) return Fail(cnrtErrorNotifier);
  e->RecordOn(*q);
  return cnrtSuccess;
}

cnrtRet_t cnrtWaitNotifier(cnrtNotifier_t n) {
  std::shared_ptr<standin::Event> e;
  {
    STANDIN_ENTER("cnrtWaitNotifier");
    e = s.FindEvent(n);
    if (e == nullptr) return Fail(cnrtErrorNotifier);
  }
  e->Synchronize();
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueWaitNotifier(cnrtNotifier_t n, cnrtQueue_t queue, unsigned int) {
  STANDIN_ENTER("cnrtQueueWaitNotifier");
  std::shared_ptr<standin::Event> e = s.FindEvent(n);
  standin::Stream *q = s.FindStream(queue);
  if (e == nullptr || q == nullptr) return Fail(cnrtErrorNotifier);
  e->WaitOn(*q);
  return cnrtSuccess;
}

}  // extern "C"
