#include "device/registry.h"

#include <atomic>
#include <mutex>

#include "core/config.h"
#include "core/log.h"
#include "device/cpu/cpu_runtime.h"
#include "device/sim/sim_runtime.h"

namespace infiniccl {

namespace {

struct Registry {
  CpuRuntime cpu;
  std::unique_ptr<SimRuntime> sim;
  std::atomic<bool> sim_enabled{false};
  // Vendor runtimes compiled in; those without a device are dropped from
  // `active` but stay here so Get() can still describe them.
  std::vector<std::unique_ptr<DeviceRuntime>> vendors;
  std::vector<DeviceRuntime *> active_vendors;
};

Registry &R() {
  // Built once; never destroyed, so pointers stay valid through exit.
  static Registry *r = [] {
    auto *reg = new Registry();
    const Config &c = GlobalConfig();
    SimStrict strict;
    strict.hostfn_serial = c.sim_hostfn_serial;
    strict.pageable_sync = c.sim_pageable_sync;
    strict.implicit_sync = c.sim_implicit_sync;
    strict.stream_memops = c.sim_stream_memops;
    reg->sim = std::make_unique<SimRuntime>(c.sim_device_count, c.sim_copy_gbps,
                                            c.sim_pinned, c.sim_copy_latency_us, strict);
    if (c.device != "cpu") {
#ifdef INFINICCL_WITH_NVIDIA
      reg->vendors.push_back(MakeCudaRuntime());
#endif
#ifdef INFINICCL_WITH_METAX
      reg->vendors.push_back(MakeMacaRuntime());
#endif
#ifdef INFINICCL_WITH_ILUVATAR
      reg->vendors.push_back(MakeIluvatarRuntime());
#endif
#ifdef INFINICCL_WITH_MOORE
      reg->vendors.push_back(MakeMusaRuntime());
#endif
#ifdef INFINICCL_WITH_HIP
      reg->vendors.push_back(MakeHipRuntime());
#endif
#ifdef INFINICCL_WITH_ASCEND
      reg->vendors.push_back(MakeAscendRuntime());
#endif
#ifdef INFINICCL_WITH_CAMBRICON
      reg->vendors.push_back(MakeCambriconRuntime());
#endif
    }
    for (auto &v : reg->vendors) {
      if (v && v->DeviceCount() > 0) reg->active_vendors.push_back(v.get());
    }
    if (c.device == "sim") {
      reg->sim_enabled.store(true);
      INFINICCL_INFO("INFINICCL_DEVICE=sim: the EMULATED device is enabled (%d devices)",
                     c.sim_device_count);
    }
    return reg;
  }();
  return *r;
}

}  // namespace

DeviceRuntime *DeviceRegistry::Get(DeviceKind kind) {
  Registry &r = R();
  if (kind == DeviceKind::kCpu) return &r.cpu;
  if (kind == DeviceKind::kSim) return r.sim_enabled.load() ? r.sim.get() : nullptr;
  for (auto &v : r.vendors) {
    if (v && v->kind() == kind) return v.get();
  }
  return nullptr;
}

std::vector<DeviceRuntime *> DeviceRegistry::Active() {
  Registry &r = R();
  std::vector<DeviceRuntime *> out = r.active_vendors;
  if (r.sim_enabled.load()) out.push_back(r.sim.get());
  return out;
}

std::vector<DeviceKind> DeviceRegistry::Built() {
  std::vector<DeviceKind> out{DeviceKind::kCpu};
  for (auto &v : R().vendors) {
    if (v) out.push_back(v->kind());
  }
  out.push_back(DeviceKind::kSim);
  return out;
}

Status DeviceRegistry::Classify(const void *ptr, PointerInfo *info) {
  Registry &r = R();
  *info = PointerInfo{MemorySpace::kHost, DeviceKind::kCpu, -1};
  for (DeviceRuntime *v : r.active_vendors) {
    INFINICCL_RETURN_IF_ERROR(v->Classify(ptr, info));
    if (info->space != MemorySpace::kHost) return Status::Ok();
  }
  // Emulated-device memory is tracked whether or not sim is enabled, so that
  // using it without enabling sim is an error rather than silently "host".
  if (r.sim->HasAllocations()) {
    INFINICCL_RETURN_IF_ERROR(r.sim->Classify(ptr, info));
    if (info->space != MemorySpace::kHost && !r.sim_enabled.load()) {
      return MakeStatus(infinicclInvalidArgument,
                        "%p is emulated-device memory but the emulated device is not "
                        "enabled (INFINICCL_DEVICE=sim)",
                        ptr);
    }
  }
  return Status::Ok();
}

DeviceRuntime &DeviceRegistry::EnableSim() {
  Registry &r = R();
  if (!r.sim_enabled.exchange(true)) {
    INFINICCL_INFO("the EMULATED device (sim) is enabled by the program");
  }
  return *r.sim;
}

bool DeviceRegistry::SimEnabled() { return R().sim_enabled.load(); }

void DeviceRegistry::DisableSim() { R().sim_enabled.store(false); }

}  // namespace infiniccl
