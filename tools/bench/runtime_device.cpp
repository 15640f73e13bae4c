// Devices of the library's DeviceRegistry (cuda, metax, ..., sim): buffers,
// pinned host memory and copies through DeviceRuntime on one stream of the
// bench's own. The bench links the static library, so this registry is the
// very one the infiniccl_* calls consult.
#include <infiniccl/infiniccl_sim.h>

#include <cstdio>
#include <new>
#include <string>

#include "core/config.h"
#include "device.h"
#include "device/registry.h"
#include "errors.h"

namespace bench {
namespace {

using infiniccl::CopyKind;
using infiniccl::DeviceKind;
using infiniccl::DeviceRegistry;
using infiniccl::DeviceRuntime;
using infiniccl::Status;

bool KindFromName(const std::string &name, DeviceKind *kind) {
  const std::string n = name == "maca" ? "metax" : name == "musa" ? "moore" : name;
  for (int k = 0; k < infiniccl::kNumDeviceKinds; ++k) {
    const auto kd = static_cast<DeviceKind>(k);
    if (n == infiniccl::DeviceKindName(kd)) {
      *kind = kd;
      return true;
    }
  }
  return false;
}

class RuntimeDevice final : public Device {
 public:
  explicit RuntimeDevice(DeviceRuntime *rt) : rt_(rt) {}
  ~RuntimeDevice() override {
    if (!stream_) return;
    const Status st = rt_->StreamDestroy(stream_);
    if (!st.ok())
      std::fprintf(stderr, "infiniccl-bench: %s StreamDestroy: %s\n", Name(),
                   st.message().c_str());
  }

  const char *Name() const override { return infiniccl::DeviceKindName(rt_->kind()); }

  std::string Description() const override {
    std::string d = Name();
    if (rt_->emulated()) {
      const double gbps = infiniccl::GlobalConfig().sim_copy_gbps;
      char rate[160];
      if (gbps > 0)
        std::snprintf(rate, sizeof rate,
                      "copy engine throttled to %g GB/s via INFINICCL_SIM_COPY_GBPS",
                      gbps);
      else
        std::snprintf(rate, sizeof rate,
                      "copy engine unthrottled: INFINICCL_SIM_COPY_GBPS unset or 0");
      d += " (EMULATED device: host memory the library must stage like device "
           "memory; ";
      d += rate;
      d += ")";
    } else {
      d += " (";
      d += rt_->description();
      d += ")";
    }
    d += ", rank 0 on device " + std::to_string(ordinal_) + " of " +
         std::to_string(count_);
    return d;
  }

  bool HostAccessible() const override { return false; }
  bool IsHostMemory() const override { return false; }

  void Open() override {
    count_ = rt_->DeviceCount();
    Check(rt_->GetDevice(&ordinal_), "GetDevice");
    Check(rt_->StreamCreate(&stream_), "StreamCreate");
    // One small pinned block tells whether stage_reuse_* can use pinned memory.
    void *probe = nullptr;
    const Status st = rt_->MallocHost(&probe, 4096);
    pinned_ = st.ok();
    if (pinned_)
      Check(rt_->FreeHost(probe), "FreeHost");
    else
      no_pinned_reason_ = st.message();
  }

  void *Allocate(size_t bytes) override {
    void *p = nullptr;
    Check(rt_->Malloc(&p, bytes == 0 ? 1 : bytes), "Malloc");
    return p;
  }
  void Free(void *p) noexcept override { Report(rt_->Free(p), "Free"); }

  void *AllocatePinned(size_t bytes) override {
    if (!pinned_) return nullptr;
    void *p = nullptr;
    Check(rt_->MallocHost(&p, bytes == 0 ? 1 : bytes), "MallocHost");
    return p;
  }
  void FreePinned(void *p) noexcept override { Report(rt_->FreeHost(p), "FreeHost"); }

  std::string StagingHostMemory() const override {
    if (pinned_) return "pinned (MallocHost)";
    return "pageable (malloc; MallocHost: " + no_pinned_reason_ + ")";
  }

  void CopyToHost(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      Check(rt_->MemcpyAsync(dst, src, bytes, CopyKind::kDeviceToHost, stream_),
            "MemcpyAsync (device to host)");
  }
  void CopyFromHost(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      Check(rt_->MemcpyAsync(dst, src, bytes, CopyKind::kHostToDevice, stream_),
            "MemcpyAsync (host to device)");
  }
  void Synchronize() override {
    Check(rt_->StreamSynchronize(stream_), "StreamSynchronize");
  }
  void *Stream() override { return stream_; }

  std::string OverlapUnsupported() const override {
    if (rt_->kind() == DeviceKind::kSim) return "";
#ifdef INFINICCL_BENCH_CUDA_BUSY
    if (rt_->kind() == DeviceKind::kCuda) return "";
#endif
    return std::string("a busy kernel on ") + Name() +
           " is not built (RuntimeDevice::Kernel is the hook; NVIDIA has one, "
           "cuda_busy.cpp); the overlap mode runs on --device sim (EMULATED kernels) "
           "or cuda";
  }
  void *NewStream() override {
    void *s = nullptr;
    Check(rt_->StreamCreate(&s), "StreamCreate");
    return s;
  }
  void DeleteStream(void *s) noexcept override { Report(rt_->StreamDestroy(s), "StreamDestroy"); }
  void SynchronizeStream(void *s) override {
    Check(rt_->StreamSynchronize(s), "StreamSynchronize");
  }
  void *NewEvent() override {
    void *e = nullptr;
    Check(rt_->EventCreate(&e), "EventCreate");
    return e;
  }
  void DeleteEvent(void *e) noexcept override { Report(rt_->EventDestroy(e), "EventDestroy"); }
  void RecordEvent(void *e, void *s) override { Check(rt_->EventRecord(e, s), "EventRecord"); }
  void WaitEvent(void *s, void *e) override {
    Check(rt_->StreamWaitEvent(s, e), "StreamWaitEvent");
  }
  void Kernel(void *s, unsigned microseconds) override {
#ifdef INFINICCL_BENCH_CUDA_BUSY
    if (rt_->kind() == DeviceKind::kCuda) {
      const std::string why = CudaBusyKernel(s, microseconds);
      if (!why.empty()) throw BenchError("busy kernel: " + why);
      return;
    }
#endif
    if (rt_->kind() != DeviceKind::kSim)
      throw BenchError(OverlapUnsupported());
    // Through the public API, as a user program would.
    CheckIccl(infinicclSimKernel(s, microseconds), "infinicclSimKernel", nullptr);
  }
  void CopyFromHostOn(void *s, void *dst, const void *src, size_t bytes) override {
    if (bytes)
      Check(rt_->MemcpyAsync(dst, src, bytes, CopyKind::kHostToDevice, s),
            "MemcpyAsync (host to device)");
  }

 private:
  void Check(const Status &st, const char *what) const {
    if (!st.ok())
      throw BenchError(std::string(Name()) + " " + what + ": " + st.message());
  }
  void Report(const Status &st, const char *what) const noexcept {
    if (!st.ok())
      std::fprintf(stderr, "infiniccl-bench: %s %s: %s\n", Name(), what,
                   st.message().c_str());
  }

  DeviceRuntime *rt_;
  void *stream_ = nullptr;
  int ordinal_ = -1;
  int count_ = 0;
  bool pinned_ = false;
  std::string no_pinned_reason_;
};

}  // namespace

std::string DeviceNames() {
  std::string names;
  for (DeviceKind k : DeviceRegistry::Built()) {
    if (!names.empty()) names += '|';
    names += infiniccl::DeviceKindName(k);
  }
  return names;
}

std::unique_ptr<Device> MakeDevice(const std::string &name, std::string *error) {
  if (name.empty()) {
    // The best device present; sim only when INFINICCL_DEVICE=sim asked for it.
    for (DeviceRuntime *rt : DeviceRegistry::Active())
      if (rt->DeviceCount() > 0) return std::make_unique<RuntimeDevice>(rt);
    return MakeCpuDevice();
  }
  DeviceKind kind{};
  if (!KindFromName(name, &kind)) {
    *error = "unknown device '" + name + "' (this build: " + DeviceNames() + ")";
    return nullptr;
  }
  if (kind == DeviceKind::kCpu) return MakeCpuDevice();
  if (kind == DeviceKind::kSim) DeviceRegistry::EnableSim();
  DeviceRuntime *rt = DeviceRegistry::Get(kind);
  if (!rt) {
    *error = "device " + name +
             " is not compiled into this build (this build: " + DeviceNames() + ")";
    if (infiniccl::GlobalConfig().device == "cpu")
      *error += "; INFINICCL_DEVICE=cpu also keeps vendor runtimes unloaded";
    return nullptr;
  }
  if (rt->DeviceCount() <= 0) {
    *error = "device " + name + ": " + rt->description() +
             " reports 0 devices (driver or device missing; INFINICCL_DEBUG=INFO says "
             "why)";
    return nullptr;
  }
  return std::make_unique<RuntimeDevice>(rt);
}

}  // namespace bench
