// A stand-in for Cambricon's libcnrt (tests only): the CNRT calls InfiniCCL
// makes, with CNRT's documented signatures, over host memory. "Device"
// memory is host memory this library allocated and tracks; copies run at
// once (queue order holds trivially); every call is counted by name
// (iccl_standin_cambricon_count). Devices: ICCL_STANDIN_DEVICES physical
// ones (default 8), seen through MLU_VISIBLE_DEVICES.
#include <cnrt.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "../common/standin.h"

namespace {

struct State {
  std::mutex mu;
  standin::Counters counts;
  std::vector<int> visible = standin::VisibleDevices("MLU_VISIBLE_DEVICES");
  int process_device = 0;  // CNRT's current device defaults to 0
  struct Alloc {
    size_t bytes;
    int device;
  };
  std::map<const char *, Alloc> device_allocs;
  std::set<void *> host_allocs;
  std::set<void *> queues, notifiers;
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

const State::Alloc *FindDevice(State &s, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  auto it = s.device_allocs.upper_bound(c);
  if (it == s.device_allocs.begin()) return nullptr;
  --it;
  if (c >= it->first && c + n <= it->first + it->second.bytes &&
      (n > 0 || c < it->first + it->second.bytes)) {
    return &it->second;
  }
  return nullptr;
}

bool ValidQueue(State &s, cnrtQueue_t q) { return q == nullptr || s.queues.count(q) > 0; }

}  // namespace

extern "C" {

long iccl_standin_cambricon_count(const char *name) { return S().counts.Get(name); }
void iccl_standin_cambricon_reset(void) { S().counts.Reset(); }
void iccl_standin_cambricon_record(const char *name) { S().counts.Add(name); }
int iccl_standin_cambricon_is_device(const void *ptr, size_t bytes) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return FindDevice(s, ptr, bytes) != nullptr ? 1 : 0;
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
  s.device_allocs[static_cast<const char *>(p)] = {bytes,
                                                   t_device >= 0 ? t_device : s.process_device};
  *ptr = p;
  return cnrtSuccess;
}

cnrtRet_t cnrtFree(void *ptr) {
  STANDIN_ENTER("cnrtFree");
  auto it = s.device_allocs.find(static_cast<const char *>(ptr));
  if (it == s.device_allocs.end()) return Fail(cnrtErrorArgsInvalid);
  s.device_allocs.erase(it);
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
  s.host_allocs.insert(p);
  *ptr = p;
  return cnrtSuccess;
}

cnrtRet_t cnrtFreeHost(void *ptr) {
  STANDIN_ENTER("cnrtFreeHost");
  if (s.host_allocs.erase(ptr) == 0) return Fail(cnrtErrorArgsInvalid);
  std::free(ptr);
  return cnrtSuccess;
}

cnrtRet_t cnrtPointerGetAttributes(cnrtPointerAttributes_t *attr, const void *ptr) {
  STANDIN_ENTER("cnrtPointerGetAttributes");
  if (attr == nullptr) return Fail(cnrtErrorArgsInvalid);
  std::memset(attr, 0, sizeof *attr);
  if (const State::Alloc *a = FindDevice(s, ptr, 0)) {
    attr->type = cnrtMemTypeDevice;
    attr->device = a->device;
    attr->devicePointer = const_cast<void *>(ptr);
  } else if (s.host_allocs.count(const_cast<void *>(ptr))) {
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
  if (dst == nullptr || src == nullptr || !ValidQueue(s, queue)) return Fail(cnrtErrorArgsInvalid);
  const bool dst_dev = FindDevice(s, dst, bytes) != nullptr;
  const bool src_dev = FindDevice(s, src, bytes) != nullptr;
  bool ok = false;
  switch (dir) {
    case cnrtMemcpyHostToDev: ok = dst_dev && !src_dev; break;
    case cnrtMemcpyDevToHost: ok = !dst_dev && src_dev; break;
    case cnrtMemcpyDevToDev: ok = dst_dev && src_dev; break;
    default: ok = false;
  }
  if (!ok) return Fail(cnrtErrorArgsInvalid);
  std::memmove(dst, src, bytes);
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueCreate(cnrtQueue_t *queue) {
  STANDIN_ENTER("cnrtQueueCreate");
  if (queue == nullptr) return Fail(cnrtErrorArgsInvalid);
  void *q = std::malloc(1);
  s.queues.insert(q);
  *queue = static_cast<cnrtQueue_t>(q);
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueDestroy(cnrtQueue_t queue) {
  STANDIN_ENTER("cnrtQueueDestroy");
  if (s.queues.erase(queue) == 0) return Fail(cnrtErrorQueue);
  std::free(queue);
  return cnrtSuccess;
}

cnrtRet_t cnrtQueueSync(cnrtQueue_t queue) {
  STANDIN_ENTER("cnrtQueueSync");
  return ValidQueue(s, queue) ? cnrtSuccess : Fail(cnrtErrorQueue);
}

cnrtRet_t cnrtNotifierCreate(cnrtNotifier_t *n) {
  STANDIN_ENTER("cnrtNotifierCreate");
  if (n == nullptr) return Fail(cnrtErrorArgsInvalid);
  void *p = std::malloc(1);
  s.notifiers.insert(p);
  *n = static_cast<cnrtNotifier_t>(p);
  return cnrtSuccess;
}

cnrtRet_t cnrtNotifierDestroy(cnrtNotifier_t n) {
  STANDIN_ENTER("cnrtNotifierDestroy");
  if (s.notifiers.erase(n) == 0) return Fail(cnrtErrorNotifier);
  std::free(n);
  return cnrtSuccess;
}

cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t n, cnrtQueue_t queue) {
  STANDIN_ENTER("cnrtPlaceNotifier");
  return s.notifiers.count(n) && ValidQueue(s, queue) ? cnrtSuccess : Fail(cnrtErrorNotifier);
}

cnrtRet_t cnrtWaitNotifier(cnrtNotifier_t n) {
  STANDIN_ENTER("cnrtWaitNotifier");
  return s.notifiers.count(n) ? cnrtSuccess : Fail(cnrtErrorNotifier);
}

cnrtRet_t cnrtQueueWaitNotifier(cnrtNotifier_t n, cnrtQueue_t queue, unsigned int) {
  STANDIN_ENTER("cnrtQueueWaitNotifier");
  return s.notifiers.count(n) && ValidQueue(s, queue) ? cnrtSuccess : Fail(cnrtErrorNotifier);
}

}  // extern "C"
