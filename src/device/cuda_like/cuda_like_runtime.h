// CudaLikeRuntime: the one DeviceRuntime for every runtime that copies the
// CUDA runtime API under its own prefix: NVIDIA CUDA (cuda*), Iluvatar CoreX
// (cuda*, its own libcudart), MetaX MACA (mc*), Moore Threads MUSA (musa*)
// and HIP (hip*: AMD, Hygon DCU). `Api` maps the generic names used below to
// the vendor's; no line here depends on the vendor. Runtimes of another
// shape (Ascend's ACL, Cambricon's CNRT) use it too, through an `Api` that
// adapts their calls to CUDA's signatures (device/ascend/, device/cambricon/).
//
// Optional members of `Api`, used when present:
//   Error Init()                       called once before anything else (ACL's
//                                      aclInit); a failure means no device;
//   bool IsManaged(const attributes&)  managed memory told apart by a flag
//                                      rather than by the memory type (HIP 5);
//   FormatVersion(int, char*, size_t)  how the version number is written.
//
// Included only by the per-vendor files (cuda_runtime.cpp, maca_runtime.cpp,
// musa_runtime.cpp, hip_runtime.cpp, ascend/, cambricon/), each compiled only
// when its runtime is enabled (cmake/Devices.cmake); each holds its vendor's
// `Api` and factory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/config.h"
#include "core/log.h"
#include "core/status.h"
#include "device/device_runtime.h"
#include "device/host_gate.h"

// The generic names for a runtime API that is CUDA's under the prefix `p`
// (cuda, mc, musa): each type, constant and function is p + the generic name
// (cudaError_t, cudaSuccess, cudaMalloc, ...), and kPrefix ("cuda") is how
// error messages name the vendor's call. One-line wrappers rather than
// function pointers, so that C++ overloads a vendor header may add next to
// the C function never make a name ambiguous. `attributes` is the one type
// off the pattern (MACA: mcPointerAttribute_t). Used inside a vendor's `Api`
// struct, which adds FormatVersion(int version, char *buf, size_t size)
// where the vendor documents how its version number is encoded.
// clang-format off
#define INFINICCL_CUDA_LIKE_API(p, attributes)                                         \
  static constexpr const char *kPrefix = #p;                                           \
  using PointerAttributes = attributes;                                                \
  using Error = p##Error_t;                                                            \
  using Stream = p##Stream_t;                                                          \
  using Event = p##Event_t;                                                            \
  using MemcpyKind = p##MemcpyKind;                                                    \
  static constexpr Error kSuccess = p##Success;                                        \
  static constexpr auto kMemoryTypeUnregistered = p##MemoryTypeUnregistered;           \
  static constexpr auto kMemoryTypeHost = p##MemoryTypeHost;                           \
  static constexpr auto kMemoryTypeDevice = p##MemoryTypeDevice;                       \
  static constexpr auto kMemoryTypeManaged = p##MemoryTypeManaged;                     \
  static constexpr MemcpyKind kMemcpyHostToDevice = p##MemcpyHostToDevice;             \
  static constexpr MemcpyKind kMemcpyDeviceToHost = p##MemcpyDeviceToHost;             \
  static constexpr MemcpyKind kMemcpyDeviceToDevice = p##MemcpyDeviceToDevice;         \
  static constexpr unsigned kEventDisableTiming = p##EventDisableTiming;               \
  static const char *GetErrorString(Error e) { return p##GetErrorString(e); }          \
  static Error GetLastError() { return p##GetLastError(); }                            \
  static Error RuntimeGetVersion(int *v) { return p##RuntimeGetVersion(v); }           \
  static Error GetDeviceCount(int *n) { return p##GetDeviceCount(n); }                 \
  static Error GetDevice(int *d) { return p##GetDevice(d); }                           \
  static Error SetDevice(int d) { return p##SetDevice(d); }                            \
  static Error PointerGetAttributes(PointerAttributes *a, const void *ptr) {           \
    return p##PointerGetAttributes(a, ptr);                                            \
  }                                                                                    \
  static Error Malloc(void **ptr, size_t n) { return p##Malloc(ptr, n); }              \
  static Error Free(void *ptr) { return p##Free(ptr); }                                \
  static Error MallocHost(void **ptr, size_t n) { return p##MallocHost(ptr, n); }      \
  static Error FreeHost(void *ptr) { return p##FreeHost(ptr); }                        \
  /* flags 1: the vendors' HostRegisterPortable, pinned for every device */           \
  static Error HostRegister(void *ptr, size_t n) { return p##HostRegister(ptr, n, 1); }  \
  static Error HostUnregister(void *ptr) { return p##HostUnregister(ptr); }            \
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k,         \
                           Stream s) {                                                 \
    return p##MemcpyAsync(dst, src, n, k, s);                                          \
  }                                                                                    \
  static Error StreamSynchronize(Stream s) { return p##StreamSynchronize(s); }         \
  static Error StreamCreate(Stream *s) { return p##StreamCreate(s); }                  \
  static Error StreamDestroy(Stream s) { return p##StreamDestroy(s); }                 \
  static Error EventCreateWithFlags(Event *e, unsigned f) {                            \
    return p##EventCreateWithFlags(e, f);                                              \
  }                                                                                    \
  static Error EventDestroy(Event e) { return p##EventDestroy(e); }                    \
  static Error EventRecord(Event e, Stream s) { return p##EventRecord(e, s); }         \
  static Error EventSynchronize(Event e) { return p##EventSynchronize(e); }            \
  static Error StreamWaitEvent(Stream s, Event e, unsigned f) {                        \
    return p##StreamWaitEvent(s, e, f);                                                \
  }                                                                                    \
  static constexpr unsigned kStreamNonBlocking = p##StreamNonBlocking;                 \
  static Error StreamCreateWithFlags(Stream *s, unsigned f) {                          \
    return p##StreamCreateWithFlags(s, f);                                             \
  }                                                                                    \
  static constexpr const char *kLaunchHostFunc = #p "LaunchHostFunc";                  \
  static Error LaunchHostFunc(Stream s, void (*fn)(void *), void *arg) {               \
    return p##LaunchHostFunc(s, fn, arg);                                              \
  }
// clang-format on

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
class CudaLikeRuntime final : public DeviceRuntime {
 public:
  // `name` names the runtime in messages ("cuda", "iluvatar", "maca", ...).
  CudaLikeRuntime(DeviceKind kind, const char *name) : kind_(kind), name_(name) {
    if constexpr (requires { Api::Init(); }) {
      const Error err = Api::Init();
      if (err != Api::kSuccess) {
        char reason[512];
        std::snprintf(reason, sizeof(reason), "%sInit: %s (error %d)", Api::kPrefix,
                      Api::GetErrorString(err), static_cast<int>(err));
        init_failed_ = reason;
      }
    }
    // Needs no driver: the runtime library answers from its own build.
    int version = 0;
    char text[32] = "version unknown";
    if (Api::RuntimeGetVersion(&version) != Api::kSuccess) {
      (void)Api::GetLastError();
    } else if constexpr (requires { Api::FormatVersion(version, text, sizeof(text)); }) {
      Api::FormatVersion(version, text, sizeof(text));
    } else {
      // An encoding we could not read documented: the raw integer, not a guess.
      std::snprintf(text, sizeof(text), "%d", version);
    }
    description_ = std::string(name) + " (runtime " + text + ")";
  }

  DeviceKind kind() const override { return kind_; }
  const char *description() const override { return description_.c_str(); }

  int DeviceCount() override {
    int count = count_.load(std::memory_order_acquire);
    return count >= 0 ? count : Probe();
  }
  Status GetDevice(int *device) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(GetDevice);
    return INFINICCL_CUDA_LIKE_CALL(GetDevice, device);
  }
  Status SetDevice(int device) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(SetDevice);
    return INFINICCL_CUDA_LIKE_CALL(SetDevice, device);
  }

  Status Classify(const void *ptr, PointerInfo *info) override {
    *info = PointerInfo{MemorySpace::kHost, DeviceKind::kCpu, -1};
    // No device: nothing can be device memory, and the runtime is not asked
    // again (without a driver every call would fail the same way).
    if (ptr == nullptr || DeviceCount() == 0) return Status::Ok();

    typename Api::PointerAttributes attr{};
    if (Api::PointerGetAttributes(&attr, ptr) != Api::kSuccess) {
      // Runtimes before CUDA 11 (and possibly other vendors) answer
      // "invalid value" for memory they never saw: that is host memory.
      (void)Api::GetLastError();
      return Status::Ok();
    }
    const auto type = MemoryTypeOf(attr);
    if constexpr (requires { Api::IsManaged(attr); }) {
      if (Api::IsManaged(attr)) {
        *info = PointerInfo{MemorySpace::kManaged, kind_, attr.device};
        return Status::Ok();
      }
    }
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

  Status Malloc(void **ptr, size_t bytes) override {
    return Allocate(Api::Malloc, "Malloc", infinicclSystemError, ptr, bytes);
  }
  Status Free(void *ptr) override {
    if (ptr == nullptr) return Status::Ok();
    return INFINICCL_CUDA_LIKE_CALL(Free, ptr);
  }
  // No device, no pinned memory: NotSupported tells the caller to use
  // pageable memory; a runtime failure (out of pinnable memory) is an error
  // status, which the caller handles the same way.
  Status MallocHost(void **ptr, size_t bytes) override {
    return Allocate(Api::MallocHost, "MallocHost", infinicclNotSupported, ptr, bytes);
  }
  Status FreeHost(void *ptr) override {
    if (ptr == nullptr) return Status::Ok();
    return INFINICCL_CUDA_LIKE_CALL(FreeHost, ptr);
  }

  // Runtimes whose Api has no HostRegister (the ACL and CNRT adapters):
  // NotSupported, the memory stays pageable.
  Status HostRegister(void *ptr, size_t bytes) override {
    if constexpr (requires { Api::HostRegister(ptr, bytes); }) {
      if (DeviceCount() == 0) return NoDevice(infinicclNotSupported, "HostRegister");
      return INFINICCL_CUDA_LIKE_CALL(HostRegister, ptr, bytes);
    } else {
      return DeviceRuntime::HostRegister(ptr, bytes);
    }
  }
  Status HostUnregister(void *ptr) override {
    if constexpr (requires { Api::HostUnregister(ptr); }) {
      if (ptr == nullptr || DeviceCount() == 0) return Status::Ok();
      return INFINICCL_CUDA_LIKE_CALL(HostUnregister, ptr);
    } else {
      (void)ptr;
      return Status::Ok();
    }
  }

  Status MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind kind,
                     void *stream) override {
    if (bytes == 0) return Status::Ok();
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(MemcpyAsync);
    const typename Api::MemcpyKind direction =
        kind == CopyKind::kHostToDevice   ? Api::kMemcpyHostToDevice
        : kind == CopyKind::kDeviceToHost ? Api::kMemcpyDeviceToHost
                                          : Api::kMemcpyDeviceToDevice;
    return INFINICCL_CUDA_LIKE_CALL(MemcpyAsync, dst, src, bytes, direction,
                                    AsStream(stream));
  }
  Status StreamSynchronize(void *stream) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamSynchronize);
    return INFINICCL_CUDA_LIKE_CALL(StreamSynchronize, AsStream(stream));
  }
  // Through Api::StreamIsCapturing where the vendor's mapping has one
  // (CUDA, HIP); false otherwise.
  Status StreamIsCapturing(void *stream, bool *capturing) override {
    *capturing = false;
    if constexpr (requires(typename Api::Stream s, bool *b) { Api::StreamIsCapturing(s, b); }) {
      if (DeviceCount() == 0) return Status::Ok();
      return INFINICCL_CUDA_LIKE_CALL(StreamIsCapturing, AsStream(stream), capturing);
    } else {
      return Status::Ok();
    }
  }
  Status StreamCreate(void **stream) override {
    *stream = nullptr;
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamCreate);
    // A blocking stream (plain StreamCreate): it stays ordered with the legacy
    // default stream, which is what a user passing stream 0 expects.
    Stream created{};
    INFINICCL_RETURN_IF_ERROR(INFINICCL_CUDA_LIKE_CALL(StreamCreate, &created));
    *stream = created;
    return Status::Ok();
  }
  Status StreamDestroy(void *stream) override {
    if (stream == nullptr) return Status::Ok();  // the default stream is not ours
    return INFINICCL_CUDA_LIKE_CALL(StreamDestroy, AsStream(stream));
  }

  Status EventCreate(void **event) override {
    *event = nullptr;
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventCreate);
    // Ordering only, never timing: events without timing are cheaper to record
    // and to wait for.
    Event created{};
    INFINICCL_RETURN_IF_ERROR(INFINICCL_CUDA_LIKE_CALL(EventCreateWithFlags, &created,
                                                       Api::kEventDisableTiming));
    *event = created;
    return Status::Ok();
  }
  Status EventDestroy(void *event) override {
    if (event == nullptr) return Status::Ok();
    return INFINICCL_CUDA_LIKE_CALL(EventDestroy, AsEvent(event));
  }
  Status EventRecord(void *event, void *stream) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventRecord);
    return INFINICCL_CUDA_LIKE_CALL(EventRecord, AsEvent(event), AsStream(stream));
  }
  Status EventSynchronize(void *event) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(EventSynchronize);
    return INFINICCL_CUDA_LIKE_CALL(EventSynchronize, AsEvent(event));
  }
  Status StreamWaitEvent(void *stream, void *event) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamWaitEvent);
    return INFINICCL_CUDA_LIKE_CALL(StreamWaitEvent, AsStream(stream), AsEvent(event),
                                    0u);
  }

  Status StreamCreateNonBlocking(void **stream) override {
    if constexpr (requires { Api::kStreamNonBlocking; }) {
      *stream = nullptr;
      INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(StreamCreateWithFlags);
      Stream created{};
      INFINICCL_RETURN_IF_ERROR(
          INFINICCL_CUDA_LIKE_CALL(StreamCreateWithFlags, &created, Api::kStreamNonBlocking));
      *stream = created;
      return Status::Ok();
    } else {
      return StreamCreate(stream);
    }
  }

  // Gates: the vendor's stream memory operation where the Api has one and
  // the driver allows it (Api::WaitValue32, CUDA's cuStreamWaitValue32),
  // else a host function on the stream that blocks until the gate opens
  // (cudaLaunchHostFunc: it holds the runtime's callback thread meanwhile;
  // ACL's aclrtLaunchHostFunc and CNRT's cnrtInvokeHostFunc through their
  // adapters). A vendor mapping with neither has no gates: calls on its
  // memory stay synchronous.
  const char *GateMechanism() override {
    if constexpr (requires { Api::kLaunchHostFunc; }) {
      if (DeviceCount() == 0) return nullptr;
      if constexpr (requires { Api::kWaitValue32; }) {
        if (UseWaitValue()) return Api::kWaitValue32;
      }
      return Api::kLaunchHostFunc;
    } else {
      return nullptr;
    }
  }
  bool GateIsHostFunction() override {
    if constexpr (requires { Api::kLaunchHostFunc; }) {
      if constexpr (requires { Api::kWaitValue32; }) {
        if (UseWaitValue()) return false;
      }
      return true;
    } else {
      return false;
    }
  }
  bool HostFunctionsSerialized() const override {
    return !requires { Api::kHostFunctionThreadPerStream; };
  }
  Status GateCreate(void **gate) override {
    *gate = nullptr;
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(GateCreate);
    auto g = std::make_unique<Gate>();
    if (UseWaitValue()) {
      if constexpr (requires { Api::kWaitValue32; }) {
        INFINICCL_RETURN_IF_ERROR(Api::MappedWord(&g->word, &g->device_word));
        g->host = std::make_shared<HostGate>(static_cast<uint32_t *>(g->word));
      }
    } else {
      g->host = std::make_shared<HostGate>();
    }
    *gate = g.release();
    return Status::Ok();
  }
  Status GateDestroy(void *gate) override {
    auto *g = static_cast<Gate *>(gate);
    if (g == nullptr) return Status::Ok();
    Status st = Status::Ok();
    if (g->word != nullptr) {
      if constexpr (requires { Api::FreeMappedWord(g->word); }) {
        st = Check(Api::FreeMappedWord(g->word), "FreeMappedWord");
      } else {
        st = INFINICCL_CUDA_LIKE_CALL(FreeHost, g->word);
      }
    }
    delete g;
    return st;
  }
  Status GateWait(void *stream, void *gate, uint32_t target) override {
    INFINICCL_CUDA_LIKE_REQUIRE_DEVICE(GateWait);
    auto *g = static_cast<Gate *>(gate);
    if constexpr (requires { Api::kWaitValue32; }) {
      if (g->word != nullptr) {
        return Api::WaitValue32(AsStream(stream), g->device_word, target);
      }
    }
    if constexpr (requires { Api::kLaunchHostFunc; }) {
      auto *arg = new HostWait{g->host, target};
      // Errors name the vendor's call (hipStreamAddCallback,
      // cnrtInvokeHostFunc), not the generic name.
      const char *call = Api::kLaunchHostFunc;
      const size_t prefix = std::strlen(Api::kPrefix);
      if (std::strncmp(call, Api::kPrefix, prefix) == 0) call += prefix;
      Status st = Check(Api::LaunchHostFunc(AsStream(stream), &HostWaitFn, arg), call);
      if (!st.ok()) delete arg;
      return st;
    } else {
      return Status(infinicclNotSupported, "this device runtime has no device-side waits");
    }
  }
  void GateOpen(void *gate, uint32_t value) override {
    static_cast<Gate *>(gate)->host->Open(value);
  }

 private:
  using Error = typename Api::Error;
  using Stream = typename Api::Stream;
  using Event = typename Api::Event;

  static Stream AsStream(void *stream) { return static_cast<Stream>(stream); }
  static Event AsEvent(void *event) { return static_cast<Event>(event); }

  // Asks the runtime for its device count, once; logs the outcome at INFO.
  int Probe() {
    std::lock_guard<std::mutex> lock(probe_mutex_);
    int count = count_.load(std::memory_order_relaxed);
    if (count >= 0) return count;
    count = 0;
    Error err = Api::kSuccess;
    if (!init_failed_.empty()) {
      no_device_reason_ = init_failed_;
    } else if ((err = Api::GetDeviceCount(&count)) != Api::kSuccess) {
      (void)Api::GetLastError();
      count = 0;
      char reason[512];
      std::snprintf(reason, sizeof(reason), "%sGetDeviceCount: %s (error %d)",
                    Api::kPrefix, Api::GetErrorString(err), static_cast<int>(err));
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

  // OK, or SystemError naming the vendor call (kPrefix + `call`) and the
  // runtime's own message.
  Status Check(Error err, const char *call) const {
    if (err == Api::kSuccess) return Status::Ok();
    // The runtime also keeps the error as its "last error"; clear it so a
    // later cudaGetLastError-style check elsewhere does not report it again.
    (void)Api::GetLastError();
    return MakeStatus(infinicclSystemError, "%s%s failed: %s (%s error %d)", Api::kPrefix,
                      call, Api::GetErrorString(err), name_, static_cast<int>(err));
  }

  // The error for `call` when the runtime has no usable device.
  Status NoDevice(infinicclResult_t code, const char *call) const {
    return MakeStatus(code, "%s%s: no usable %s device (%s)", Api::kPrefix, call, name_,
                      no_device_reason_.c_str());
  }

  // Malloc and MallocHost: *ptr is nullptr unless the allocation succeeded;
  // with no device the result is `no_device`.
  Status Allocate(Error (*alloc)(void **, size_t), const char *call,
                  infinicclResult_t no_device, void **ptr, size_t bytes) {
    *ptr = nullptr;
    if (DeviceCount() == 0) return NoDevice(no_device, call);
    Status st = Check(alloc(ptr, bytes), call);
    if (!st.ok()) *ptr = nullptr;
    return st;
  }

  struct Gate {
    std::shared_ptr<HostGate> host;  // shared with host-function waits still inside it
    void *word = nullptr;          // mapped page-locked counter (WaitValue32 only)
    uint64_t device_word = 0;      // its device address
  };
  struct HostWait {
    std::shared_ptr<HostGate> gate;
    uint32_t target;
  };
  static void HostWaitFn(void *arg) {
    auto *w = static_cast<HostWait *>(arg);
    w->gate->Wait(w->target);
    delete w;
  }

  // Stream memory operations: compiled in for this vendor, not forced off
  // (INFINICCL_DEVICE_WAIT=host_func), and usable on this driver (probed
  // once: drivers loaded without NVreg_EnableStreamMemOPs refuse them).
  bool UseWaitValue() {
    if constexpr (requires { Api::kWaitValue32; }) {
      if (GlobalConfig().device_wait_host_func) return false;
      std::call_once(wait_value_once_, [&] {
        int device = 0;
        (void)Api::GetDevice(&device);
        std::string why;
        wait_value_ = Api::WaitValue32Usable(device, &why);
        INFINICCL_INFO("%s: device-side waits by %s%s%s", description_.c_str(),
                       wait_value_ ? Api::kWaitValue32 : "a host function",
                       wait_value_ ? "" : " (", wait_value_ ? "" : (why + ")").c_str());
      });
      return wait_value_;
    } else {
      return false;
    }
  }

  const DeviceKind kind_;
  const char *const name_;
  std::once_flag wait_value_once_;
  bool wait_value_ = false;
  std::string description_;

  std::mutex probe_mutex_;
  std::atomic<int> count_{-1};    // -1 until probed
  std::string no_device_reason_;  // written once before count_ is published
  std::string init_failed_;       // Api::Init's failure, if any
};

#undef INFINICCL_CUDA_LIKE_REQUIRE_DEVICE
#undef INFINICCL_CUDA_LIKE_CALL

}  // namespace infiniccl::cuda_like
